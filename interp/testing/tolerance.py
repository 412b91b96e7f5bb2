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
from typing import Any

import numpy as np
import torch

EPS: dict[torch.dtype, float] = {
    torch.float64: 1e-10,
    torch.float32: 1e-5,
    torch.bfloat16: 5e-2,
    torch.float16: 5e-2,
}


def _tensor(x: Any) -> torch.Tensor:
    """A tensor for ``x`` (numpy arrays and scalars keep their dtype: float64 stays float64)."""
    if isinstance(x, torch.Tensor):
        return x.detach()
    return torch.as_tensor(np.asarray(x))


def magnitude(*tensors: Any) -> float:
    """``max |x|`` over the finite entries of every tensor (or array), at least 1."""
    top = 1.0
    for t in tensors:
        t = _tensor(t).double()
        finite = t[torch.isfinite(t)]
        if finite.numel():
            top = max(top, float(finite.abs().max()))
    return top


def combination_scale(terms: Iterable[tuple[float, Any]]) -> float:
    """``Σ |c| · max |x|`` for the terms ``(c, x)`` of a linear combination (each at least 1)."""
    return sum(abs(c) * magnitude(x) for c, x in terms)


def logprob_scale(logits: Any) -> float:
    """``S`` of log-probabilities ``log p = z − logsumexp(z)`` (last axis): the two operands'
    magnitudes, ``max |z| + max |logsumexp(z)|``."""
    z = _tensor(logits).double()
    return combination_scale([(1.0, z), (1.0, torch.logsumexp(z, -1))])


def tolerance(want: Any, scale: float | None = None, dtype: torch.dtype | None = None) -> float:
    """``ε · S``: ``S`` is ``scale`` when given, else :func:`magnitude` of ``want``; ``ε`` of
    ``dtype`` when given, else of ``want``'s dtype (a numpy array's: float64 → 1e-10)."""
    want = _tensor(want)
    eps = EPS.get(dtype or want.dtype, EPS[torch.float32])
    return eps * (magnitude(want) if scale is None else scale)


def assert_close(
    got: Any,
    want: Any,
    *,
    scale: float | None = None,
    dtype: torch.dtype | None = None,
    equal_nan: bool = False,
    msg: str = "",
) -> None:
    """``|got − want| <= ε · S`` elementwise (:func:`tolerance`), infinities equal (NaNs too with
    ``equal_nan``, as ``numpy.testing.assert_allclose`` has them).
    Tensors or numpy arrays; compared in float64 so the comparison adds no rounding of its own."""
    got, want = _tensor(got), _tensor(want)
    atol = tolerance(want, scale, dtype)
    torch.testing.assert_close(
        got.double(),
        want.double(),
        atol=atol,
        rtol=0,
        equal_nan=equal_nan,
        msg=lambda m: f"{msg}{': ' if msg else ''}{m}\n(tolerance ε·S = {atol:.3g})",
    )


__all__ = [
    "EPS",
    "assert_close",
    "combination_scale",
    "logprob_scale",
    "magnitude",
    "tolerance",
]
