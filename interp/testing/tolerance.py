"""How close two float computations of the same quantity must be (the rule is argued in
docs/conventions.md, Tolerances).

Two computations that differ only in the order of their floating-point sums (another batch size,
left padding, another kernel, another CPU) agree to ``ε · S``:

- ``ε`` is the dtype's relative bound, :data:`EPS`: 1e-5 for fp32 (a few ulps of 1.2e-7 per
  operation, accumulated over a deep model), 5e-2 for bf16 / fp16 (every operation rounds to
  ~4e-3);
- ``S`` is the magnitude of what the compared values are computed from: for states and logits,
  ``max(max |reference|, 1)``; for a combination ``Σ c_i · x_i`` of such values,
  ``Σ |c_i| · max |x_i|`` (a contrast ``(1 + α)·z − α·z′``: ``(1 + α)·max|z| + α·max|z′|``),
  since each operand brings its own rounding, scaled by its coefficient.

A bare absolute bound holds on the machine it was tuned on and fails on another whose kernels
round differently; ``interp doctor`` applies the same rule to a user's checkpoint.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

EPS: dict[torch.dtype, float] = {
    torch.float64: 1e-10,
    torch.float32: 1e-5,
    torch.bfloat16: 5e-2,
    torch.float16: 5e-2,
}


def magnitude(*tensors: torch.Tensor) -> float:
    """``max |x|`` over the finite entries of every tensor, at least 1."""
    top = 1.0
    for t in tensors:
        t = t.detach().float()
        finite = t[torch.isfinite(t)]
        if finite.numel():
            top = max(top, float(finite.abs().max()))
    return top


def combination_scale(terms: Iterable[tuple[float, torch.Tensor]]) -> float:
    """``Σ |c| · max |x|`` for the terms ``(c, x)`` of a linear combination (each at least 1)."""
    return sum(abs(c) * magnitude(x) for c, x in terms)


def tolerance(
    want: torch.Tensor, scale: float | None = None, dtype: torch.dtype | None = None
) -> float:
    """``ε · S``: ``S`` is ``scale`` when given, else :func:`magnitude` of ``want``."""
    eps = EPS.get(dtype or want.dtype, EPS[torch.float32])
    return eps * (magnitude(want) if scale is None else scale)


def assert_close(
    got: torch.Tensor,
    want: torch.Tensor,
    *,
    scale: float | None = None,
    dtype: torch.dtype | None = None,
    msg: str = "",
) -> None:
    """``|got − want| <= ε · S`` elementwise (:func:`tolerance`), infinities equal."""
    atol = tolerance(want, scale, dtype)
    torch.testing.assert_close(
        got.float(),
        want.float(),
        atol=atol,
        rtol=0,
        msg=lambda m: f"{msg}{': ' if msg else ''}{m}\n(tolerance ε·S = {atol:.3g})",
    )


__all__ = ["EPS", "assert_close", "combination_scale", "magnitude", "tolerance"]
