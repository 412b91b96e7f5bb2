"""What a model's forward does to its head's output before it returns the logits.

The library reads logits at the head (``vlm.lm_head.output``: the trace can stop there, and edits
of the logits act there), but some forwards transform that output first:

- a scale: Cohere's ``logit_scale`` and Muse's ``output_multiplier`` multiply it, Granite's
  ``logits_scaling`` divides it;
- then soft-capping (Gemma 2-style ``final_logit_softcapping``, Mistral Large 4, Muse):
  ``cap · tanh(z / cap)``.

So ``logits = cap · tanh(scale · z / cap)`` (cap unset: ``scale · z``). The rule that finds them
(:func:`head_transform`): a config field (on the config or its text config) with a non-trivial
value counts only when the forward of the module that owns the head names it — transformers'
Cohere 2 Vision keeps ``logit_scale`` in its config, but its forward does not apply it. A forward
may also apply the cap through a child module it calls (Inkling 2's ``self.logit_softcap(logits)``,
built from ``final_logit_softcapping``): a child whose name holds ``softcap`` and that the forward
calls counts as naming it. The forward's source is read, never run, so the rule holds on the meta device too; the zoo's score
check (``interp.testing.zoo_parity``) compares the result with the forward's own logits.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import torch

from .infer import _text

# field -> how the forward applies it to the head's output (before any soft-capping)
SCALES = {"logit_scale": "multiply", "output_multiplier": "multiply", "logits_scaling": "divide"}
SOFTCAP = "final_logit_softcapping"


@dataclass(frozen=True)
class HeadTransform:
    """``logits = cap · tanh(scale · z / cap)`` on the head's output ``z`` (no cap: ``scale · z``)."""

    scale: float = 1.0
    softcap: float | None = None

    def __call__(self, z: torch.Tensor) -> torch.Tensor:
        if self.scale != 1.0:
            z = z * self.scale
        if self.softcap:
            z = torch.tanh(z / self.softcap) * self.softcap
        return z

    def floats(self) -> tuple[float, float]:
        """``(scale, cap)`` as plain floats (cap 0: none), what a remote trace block may hold."""
        return float(self.scale), float(self.softcap or 0.0)

    def __str__(self) -> str:
        inner = f"{self.scale:g} · z" if self.scale != 1.0 else "z"
        return f"{self.softcap:g} · tanh({inner} / {self.softcap:g})" if self.softcap else inner


def _field(config: Any, name: str) -> Any:
    for cfg in (config, _text(config)):
        value = getattr(cfg, name, None)
        if value is not None:
            return value
    return None


def head_transform(model: torch.nn.Module, head_path: str) -> HeadTransform | None:
    """The transform the forward of the module owning the head (``head_path``'s parent) applies
    to the head's output, or None where it returns it unchanged (see the module docstring)."""
    scales = {n: float(v) for n in SCALES if (v := _field(model.config, n)) is not None}
    scales = {n: v for n, v in scales.items() if v != 1.0}
    cap = _field(model.config, SOFTCAP)
    if not scales and not cap:  # nothing to apply: the forward's source is not read
        return None
    owner_path = head_path.rpartition(".")[0]
    owner = model.get_submodule(owner_path) if owner_path else model
    try:
        source = inspect.getsource(type(owner).forward)
    except (OSError, TypeError):  # no source to read (a compiled or dynamic class)
        return None
    scale = 1.0
    for name, value in scales.items():
        if name in source:
            scale = scale * value if SCALES[name] == "multiply" else scale / value
    # the cap applied by name, or by a child module the forward calls (self.logit_softcap(...))
    by_module = any(
        "softcap" in name and f"self.{name}(" in source for name, _ in owner.named_children()
    )
    softcap = float(cap) if cap and (SOFTCAP in source or by_module) else None
    if scale == 1.0 and softcap is None:
        return None
    return HeadTransform(scale, softcap)


__all__ = ["SCALES", "SOFTCAP", "HeadTransform", "head_transform"]
