"""How close two float computations of the same quantity must be (the rule is argued in
docs/conventions.md, Tolerances). Two categories, each with its one helper:

**Rounding** (:func:`assert_close`). Two computations that differ only in the order of their
floating-point sums (another batch size, left padding, another kernel, another CPU, a library
against a hand-written reference) agree to ``ε · S``:

- ``ε`` is the dtype's relative bound, :data:`EPS`: 1e-5 for fp32 (a few ulps of 1.2e-7 per
  operation, accumulated over a deep model), 5e-2 for bf16 / fp16 (every operation rounds to
  ~4e-3), 1e-10 for float64;
- ``S`` is the magnitude of what the compared values are computed from: for states and logits,
  ``max(max |reference|, 1)``; for a combination ``Σ c_i · x_i`` of such values,
  ``Σ |c_i| · max |x_i|`` (a contrast ``(1 + α)·z − α·z′``: ``(1 + α)·max|z| + α·max|z′|``),
  since each operand brings its own rounding, scaled by its coefficient.

**Approximation** (:func:`approx_close`). A method that is not exact by design — a quantised
format (16-bit PCM: :data:`PCM16_STEP`), a grid, an iterative solver stopped at its own
convergence tolerance — differs from the exact reference by what the method allows, not by
rounding; the bound is that allowance, passed with ``why=`` naming it.

A bare absolute bound holds on the machine it was tuned on and fails on another whose kernels
round differently; ``interp doctor`` applies the same rule to a user's checkpoint. The module
imports no torch: tensors are read when given (the tests of ``probes`` compare numpy arrays).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

EPS: dict[str, float] = {
    "float64": 1e-10,
    "float32": 1e-5,
    "bfloat16": 5e-2,
    "float16": 5e-2,
}

# one step of 16-bit PCM in [-1, 1) (int16 / 32768): a 16-bit file holds a float waveform to
# half a step, plus up to max|x| steps where a writer scales by 32767 and the reader by 32768
PCM16_STEP = 2.0**-15


def _dtype_name(dtype: Any) -> str:
    """``"float32"`` for ``torch.float32``, ``np.float32`` or ``np.dtype("float32")``."""
    name = str(dtype)
    return name[len("torch.") :] if name.startswith("torch.") else np.dtype(dtype).name


def _values(x: Any) -> tuple[np.ndarray, str]:
    """``x`` in float64 and the name of its own dtype (a tensor is read without importing torch
    here: whoever passes one has it)."""
    if type(x).__module__.split(".")[0] == "torch":
        return x.detach().cpu().double().numpy(), _dtype_name(x.dtype)
    arr = np.asarray(x)
    return arr.astype(np.float64), arr.dtype.name


def magnitude(*values: Any) -> float:
    """``max |x|`` over the finite entries of every tensor (or array), at least 1."""
    top = 1.0
    for x in values:
        arr = _values(x)[0]
        finite = arr[np.isfinite(arr)]
        if finite.size:
            top = max(top, float(np.abs(finite).max()))
    return top


def combination_scale(terms: Iterable[tuple[float, Any]]) -> float:
    """``Σ |c| · max |x|`` for the terms ``(c, x)`` of a linear combination (each at least 1)."""
    return sum(abs(c) * magnitude(x) for c, x in terms)


def logprob_scale(logits: Any) -> float:
    """``S`` of log-probabilities ``log p = z − logsumexp(z)`` (last axis): the two operands'
    magnitudes, ``max |z| + max |logsumexp(z)|``."""
    z = _values(logits)[0]
    top = z.max(axis=-1, keepdims=True)
    lse = np.log(np.exp(z - top).sum(axis=-1)) + top[..., 0]
    return combination_scale([(1.0, z), (1.0, lse)])


def tolerance(want: Any, scale: float | None = None, dtype: Any = None) -> float:
    """``ε · S``: ``S`` is ``scale`` when given, else :func:`magnitude` of ``want``; ``ε`` of
    ``dtype`` when given (a torch or numpy dtype), else of ``want``'s dtype (float64 → 1e-10;
    a dtype without an entry, an integer one, takes fp32's)."""
    arr, name = _values(want)
    eps = EPS.get(_dtype_name(dtype) if dtype is not None else name, EPS["float32"])
    return eps * (magnitude(arr) if scale is None else scale)


def _check(got: Any, want: Any, bound: float, equal_nan: bool, what: str) -> None:
    """``|got − want| <= bound`` elementwise in float64, infinities equal (NaNs too with
    ``equal_nan``); the error names the worst element and ``what`` the bound is."""
    g, w = _values(got)[0], _values(want)[0]
    if g.shape != w.shape:
        raise AssertionError(f"shapes differ: {g.shape} != {w.shape}\n({what})")
    both_nan = np.isnan(g) & np.isnan(w)
    finite = np.isfinite(g) & np.isfinite(w)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.where(finite, np.abs(g - w), np.inf)
    ok = (finite & (diff <= bound)) | (~finite & (g == w)) | (both_nan & equal_nan)
    if ok.all():
        return
    bad = np.flatnonzero(~ok.reshape(-1))
    worst = int(bad[np.argmax(diff.reshape(-1)[bad])])
    at = np.unravel_index(worst, g.shape) if g.ndim else ()
    raise AssertionError(
        f"{bad.size} of {g.size} elements differ by more than {bound:.3g}; the largest "
        f"difference, {diff.reshape(-1)[worst]:.3g}, at index {tuple(int(i) for i in at)}: "
        f"got {float(g.reshape(-1)[worst])!r}, want {float(w.reshape(-1)[worst])!r}\n({what})"
    )


def assert_close(
    got: Any,
    want: Any,
    *,
    scale: float | None = None,
    dtype: Any = None,
    equal_nan: bool = False,
    msg: str = "",
) -> None:
    """Rounding: ``|got − want| <= ε · S`` elementwise (:func:`tolerance`), infinities equal
    (NaNs too with ``equal_nan``, as ``numpy.testing.assert_allclose`` has them).
    Tensors or numpy arrays; compared in float64 so the comparison adds no rounding of its own."""
    atol = tolerance(want, scale, dtype)
    prefix = f"{msg}: " if msg else ""
    try:
        _check(got, want, atol, equal_nan, f"tolerance ε·S = {atol:.3g}")
    except AssertionError as err:
        raise AssertionError(f"{prefix}{err}") from None


def assert_same_generation(got: Any, want: Any, *, scale: float, msg: str = "") -> None:
    """Two :class:`~interp.Generation` results of the same rows: the same tokens, and the scores
    each token was chosen from equal within rounding (:func:`assert_close`, fp32, ``scale``)."""
    import torch

    assert got.token_ids == want.token_ids, msg
    assert got.scores is not None and want.scores is not None, msg
    for i, (g, w) in enumerate(zip(got.scores, want.scores)):
        assert_close(g, w, scale=scale, dtype=torch.float32, msg=f"{msg} row {i}")


def approx_close(
    got: Any, want: Any, bound: float, *, why: str, equal_nan: bool = False, msg: str = ""
) -> None:
    """Approximation: ``|got − want| <= bound`` elementwise, where ``bound`` is what a method
    that is not exact by design allows (a quantisation step, a grid's spacing, a solver's
    convergence tolerance) and ``why`` names it; not for rounding (use :func:`assert_close`)."""
    if not why.strip():
        raise ValueError("approx_close needs why=: the approximation the bound comes from")
    if not bound > 0:
        raise ValueError(f"approx_close's bound must be positive, got {bound!r}")
    prefix = f"{msg}: " if msg else ""
    try:
        _check(got, want, bound, equal_nan, f"approximation bound {bound:.3g}: {why}")
    except AssertionError as err:
        raise AssertionError(f"{prefix}{err}") from None


__all__ = [
    "EPS",
    "PCM16_STEP",
    "approx_close",
    "assert_close",
    "assert_same_generation",
    "combination_scale",
    "logprob_scale",
    "magnitude",
    "tolerance",
]
