"""How far an image token reads beyond its own cell: the receptive field of a convolutional merge.

A merge of overlapping convolutions (GOT-OCR 2.0's SAM neck, a 3 × 3 convolution, then two 3 × 3
stride-2 convolutions) makes each token read past the cell its layout gives it. The layout check
(:mod:`interp.layout_check`) allows for that reach, computed here from the modules that really
run, not declared per type.

Each step maps an output unit ``i`` of one axis to the input units it reads, ``[a·i − L,
a·(i + 1) + R)``: ``a`` input units per output unit, ``L`` and ``R`` how far it reads before and
after its own cell ``[a·i, a·(i + 1))``.

- ``Conv2d`` (kernel ``k``, dilation ``d``, stride ``s``, padding ``p``): ``a = s``, ``L = p``,
  ``R = d·(k − 1) + 1 − p − s``; a patch embedding (``k = s``, ``p = 0``) reads exactly its cell.
- ``F.interpolate`` of a 4-d feature map (``n`` input units to ``n'``): ``a = n / n'``; ``L`` and
  ``R`` are the largest distances, over the output units, from the unit's cell to the input
  samples it gives a non-zero weight (nearest, linear / bilinear, bicubic, align_corners either).

Steps compose along a chain: each step's input is the latest feature map of its shape that an
earlier step gave and no step read yet (a second reader of a map starts a chain of its own, which
leaves out the reach before it: the check is then stricter, not looser). With ``J`` the chain
start's units per unit before the step, ``J' = J·a``, ``L' = L_chain + L·J``,
``R' = R_chain + R·J``. At a chain's end (an output no later step reads) the reach in token cells
is ``L / J`` before and ``R / J`` after, per axis (GOT-OCR 2.0: 4 patches before and 1 after a
4-patch cell, 1 and 0.25 tokens). A chain whose end has more cells than the prompt has image
tokens is not at the tokens' scale and is not counted; the reach is the largest over the chains
(DeepSeek-VL hybrid's SigLIP patches and its SAM branch). A resample whose support is not modelled
(antialias, area) makes the reach unknown, and the check allows none.

What it does not see: pooling with overlapping windows, a convolution run inside a bypassed block
(its output is discarded), a resample of a tensor that no recorded step gave (a position-embedding
grid): such a step starts a chain and adds nothing beyond its own cells.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

# one axis of one step or chain: input units per output unit, reach before, reach after
Axis = tuple[float, float, float]


@dataclass(frozen=True)
class Reach:
    """How far each token reads beyond its cell, in token cells: before (left, top) and after
    (right, bottom) along x and y."""

    left: float = 0.0
    top: float = 0.0
    right: float = 0.0
    bottom: float = 0.0

    def __bool__(self) -> bool:
        return any(v > 0 for v in (self.left, self.top, self.right, self.bottom))

    def boxes(self, boxes: np.ndarray) -> np.ndarray:
        """``boxes`` (``[n, 4]``, x0 y0 x1 y1) grown by the reach, each by its own box's width
        and height: the pixels each token reads."""
        w, h = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
        grow = np.stack([-self.left * w, -self.top * h, self.right * w, self.bottom * h], 1)
        return boxes + grow

    def __str__(self) -> str:
        return (
            f"each token reading up to {self.left:g} x {self.top:g} of its cell before it and "
            f"{self.right:g} x {self.bottom:g} after it (left x top, right x bottom: its "
            "convolutions' receptive field)"
        )


def conv_axis(kernel: int, stride: int, padding: int, dilation: int = 1) -> Axis:
    """One axis of a convolution: ``(s, p, d·(k − 1) + 1 − p − s)``."""
    span = dilation * (kernel - 1) + 1
    return float(stride), float(padding), float(span - padding - stride)


def resample_axis(n_in: int, n_out: int, mode: str, align_corners: bool | None) -> Axis | None:
    """One axis of ``F.interpolate`` from ``n_in`` to ``n_out`` samples (None: a mode whose
    support is not modelled): the input samples each output sample weights, against its cell."""
    a = n_in / n_out
    before = after = 0.0
    for i in range(n_out):
        if mode in ("nearest", "nearest-exact"):
            at = math.floor((i + (0.5 if mode == "nearest-exact" else 0.0)) * a)
            lo = hi = at
        elif mode in ("linear", "bilinear", "bicubic"):
            if align_corners:
                c = i * (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
            else:
                c = (i + 0.5) * a - 0.5
                c = max(c, 0.0) if mode != "bicubic" else c
            base = math.floor(c)
            exact = c == base  # at a sample: the neighbours' weights are zero
            wide = mode == "bicubic"
            lo = base if exact else base - (1 if wide else 0)
            hi = base if exact else base + (2 if wide else 1)
        else:
            return None
        lo, hi = max(min(lo, n_in - 1), 0), max(min(hi, n_in - 1), 0)
        before = max(before, i * a - lo)
        after = max(after, hi + 1 - (i + 1) * a)
    return a, before, after


@dataclass
class _Step:
    x: Axis
    y: Axis
    shape: tuple[int, ...]  # the input's [C, H, W]
    out: tuple[int, ...]  # the output's [N, C, H, W]
    chain: tuple[Axis, Axis] = ((1.0, 0.0, 0.0), (1.0, 0.0, 0.0))
    read: bool = False  # a later step reads this one's output


def _compose(chain: Axis, step: Axis) -> Axis:
    j, left, right = chain
    a, l_step, r_step = step
    return j * a, left + l_step * j, right + r_step * j


class Recorder:
    """Records the ``Conv2d`` and ``F.interpolate`` steps of a forward in their order (within
    :meth:`recording`), then :meth:`reach` composes them (see the module docstring)."""

    def __init__(self, model: torch.nn.Module, skip: list[torch.nn.Module]) -> None:
        inside = {id(m) for block in skip for m in block.modules()}
        self.convs = [
            m for m in model.modules() if isinstance(m, torch.nn.Conv2d) and id(m) not in inside
        ]
        self.steps: list[_Step] = []
        self.unknown = ""

    def _add(self, x: torch.Tensor, out: torch.Tensor, ax: Axis, ay: Axis) -> None:
        step = _Step(ax, ay, tuple(x.shape[-3:]), tuple(out.shape))
        for prev in reversed(self.steps):  # the latest unread feature map of this shape feeds it
            if prev.out[-3:] == step.shape and not prev.read:
                prev.read = True
                step.chain = prev.chain
                break
        step.chain = (_compose(step.chain[0], ax), _compose(step.chain[1], ay))
        self.steps.append(step)

    def _conv(self, module: torch.nn.Conv2d, args: tuple[Any, ...], out: Any) -> None:
        x = args[0] if args else None
        if not isinstance(x, torch.Tensor) or not isinstance(out, torch.Tensor) or x.dim() != 4:
            return
        k, s, d = module.kernel_size, module.stride, module.dilation
        pad = module.padding
        if isinstance(pad, str):  # "valid" or "same"
            pad = (0, 0) if pad == "valid" else tuple((d[i] * (k[i] - 1)) // 2 for i in (0, 1))
        self._add(x, out, conv_axis(k[1], s[1], pad[1], d[1]), conv_axis(k[0], s[0], pad[0], d[0]))

    @contextmanager
    def recording(self) -> Iterator[Recorder]:
        hooks = [m.register_forward_hook(lambda m, a, o: self._conv(m, a, o)) for m in self.convs]
        original = F.interpolate

        def interpolate(x: Any, *args: Any, **kwargs: Any) -> Any:
            out = original(x, *args, **kwargs)
            if isinstance(x, torch.Tensor) and x.dim() == 4 and isinstance(out, torch.Tensor):
                mode = kwargs.get("mode", args[2] if len(args) > 2 else "nearest")
                corners = kwargs.get("align_corners", args[3] if len(args) > 3 else None)
                ax = resample_axis(x.shape[-1], out.shape[-1], mode, corners)
                ay = resample_axis(x.shape[-2], out.shape[-2], mode, corners)
                if kwargs.get("antialias") or ax is None or ay is None:
                    self.unknown = self.unknown or f"a {mode} resample"
                else:
                    self._add(x, out, ax, ay)
            return out

        F.interpolate = interpolate  # the modules look it up at call time
        try:
            yield self
        finally:
            F.interpolate = original
            for hook in hooks:
                hook.remove()

    def reach(self, tokens: int) -> Reach:
        """The largest reach over the chains whose end has at most ``tokens`` cells."""
        best = [0.0, 0.0, 0.0, 0.0]
        for step in self.steps:
            n, _, h, w = step.out
            if step.read or n * h * w > tokens:
                continue
            (jx, lx, rx), (jy, ly, ry) = step.chain
            for k, v in enumerate((lx / jx, ly / jy, rx / jx, ry / jy)):
                best[k] = max(best[k], v)
        return Reach(*best)


__all__ = ["Reach", "Recorder", "conv_axis", "resample_axis"]
