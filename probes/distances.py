"""Row-wise distances between two stacks of states (Section 3.1 and Table 4 of the VIP/TVI paper).

Every function takes two arrays of the same shape ``[..., d]`` (numpy or torch, any float dtype),
compares them along the last axis and returns a float64 numpy array of the leading shape ``[...]``.
Computation is in float64 whatever the input dtype, so bf16/fp16 states lose nothing further.

Invariant shared by all of them: ``f(x, x) == 0`` exactly, row by row. This matters for the
VIP test, where the embedding layer (index 0) is identical with and without the image and must
give a zero-variance, zero-statistic layer rather than rounding noise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from jaxtyping import Float

ArrayLike = Any
"""What the probes accept: a numpy array, a sequence, or a torch tensor (any device, any float dtype;
recognised by duck typing, so this package never imports torch)."""


def to_numpy(x: Any) -> np.ndarray:
    """``x`` as a numpy array; torch tensors (found by their ``detach`` method, without importing
    torch) are detached, moved to the CPU and converted, bfloat16 through float32."""
    if hasattr(x, "detach") and hasattr(x, "cpu"):
        t = x.detach().cpu()
        if not t.dtype.is_floating_point or t.element_size() > 2:
            return t.numpy()
        return t.float().numpy()
    return np.asarray(x)


LOG2 = float(np.log(2.0))
# A log-probability row whose logsumexp is further than this from 0 is taken for logits.
# Loose enough for bf16-rounded log-probabilities over a large vocabulary.
_LOGPROB_ATOL = 1e-2


def as_float64(x: ArrayLike | float | list, name: str = "input") -> np.ndarray:
    """Return ``x`` as a float64 numpy array (torch tensors are detached and moved to the CPU)."""
    if hasattr(x, "detach") and hasattr(x, "cpu"):
        return to_numpy(x).astype(np.float64)
    arr = np.asarray(x)
    if arr.dtype == object:
        raise TypeError(f"{name}: expected a numeric array, got an object array")
    return arr.astype(np.float64, copy=False)


def _pair(a: ArrayLike, b: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    x, y = as_float64(a, "a"), as_float64(b, "b")
    if x.shape != y.shape:
        raise ValueError(f"shape mismatch: a has shape {x.shape}, b has shape {y.shape}")
    if x.ndim == 0:
        raise ValueError("expected arrays of shape [..., d]; got scalars")
    return x, y


def _exact_zero_where_equal(
    out: np.ndarray | np.floating, x: np.ndarray, y: np.ndarray
) -> np.ndarray | np.floating:
    """Force ``f(x, x) = 0`` where two rows are bitwise equal (rounding would leave ~1e-16)."""
    same = np.all(x == y, axis=-1)
    return np.where(same, 0.0, out)


def as_distance_matrix(
    distances: Float[ArrayLike, "n layer"], name: str = "distances"
) -> np.ndarray:
    """Validate a ``[N, L+1]`` per-layer distance matrix and return it as float64 numpy."""
    d = as_float64(distances, name)
    if d.ndim != 2:
        raise ValueError(
            f"{name} must have shape [N, L+1] (samples x layers incl. embeddings), got {d.shape}"
        )
    if d.shape[1] < 2:
        raise ValueError(f"{name} has {d.shape[1]} layer column(s); expected L+1 >= 2")
    if np.any(np.isnan(d)):
        rows, cols = np.nonzero(np.isnan(d))
        raise ValueError(
            f"{name} contains NaN (first at sample {rows[0]}, layer {cols[0]}; {len(rows)} in all)"
        )
    return d


def cosine_distance(
    a: Float[ArrayLike, "*batch d"], b: Float[ArrayLike, "*batch d"]
) -> Float[np.ndarray, "*batch"]:
    """Cosine distance ``1 - <a, b> / (|a| |b|)`` row by row, in ``[0, 2]``.

    Zero vectors: the cosine of a zero vector with anything is taken as 0 (distance 1), except
    that two equal rows, zero or not, are at distance exactly 0.
    """
    x, y = _pair(a, b)
    dot = np.sum(x * y, axis=-1)
    norms = np.linalg.norm(x, axis=-1) * np.linalg.norm(y, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.where(norms > 0, dot / np.where(norms > 0, norms, 1.0), 0.0)
    out = 1.0 - np.clip(cos, -1.0, 1.0)
    return _exact_zero_where_equal(out, x, y)


def l2_distance(
    a: Float[ArrayLike, "*batch d"], b: Float[ArrayLike, "*batch d"]
) -> Float[np.ndarray, "*batch"]:
    """Euclidean distance ``|a - b|_2`` row by row."""
    x, y = _pair(a, b)
    return np.linalg.norm(x - y, axis=-1)


def _check_log_probs(logp: np.ndarray, name: str) -> None:
    if np.any(np.isnan(logp)):
        raise ValueError(f"{name} contains NaN")
    with np.errstate(divide="ignore"):
        lse = np.log(np.sum(np.exp(logp), axis=-1))
    if np.any(np.abs(lse) > _LOGPROB_ATOL):
        worst = float(np.max(np.abs(lse)))
        raise ValueError(
            f"{name} rows are not normalised (|logsumexp| up to {worst:.3g}); these look like "
            "logits: apply log_softmax over the vocabulary first"
        )


def _kl_terms(logp: np.ndarray, logq: np.ndarray) -> np.ndarray | np.floating:
    """Sum over the last axis of ``p (log p - log q)``, with ``0 log 0 = 0``."""
    p = np.exp(logp)
    with np.errstate(invalid="ignore"):
        terms = np.where(p > 0, p * (logp - logq), 0.0)
    return np.sum(terms, axis=-1)


def kl_divergence(
    logp: Float[ArrayLike, "*batch vocab"], logq: Float[ArrayLike, "*batch vocab"]
) -> Float[np.ndarray, "*batch"]:
    """``KL(p || q) = sum_v p_v (log p_v - log q_v)`` in nats, from log-probabilities.

    Inputs are log-probabilities over the last axis (e.g. ``log_softmax`` of the logit lens);
    ``-inf`` entries are allowed (``0 log 0 = 0``); ``q_v = 0`` where ``p_v > 0`` gives ``inf``.

    Raises:
        ValueError: a row is not normalised (logits were passed) or holds NaN.
    """
    x, y = _pair(logp, logq)
    _check_log_probs(x, "logp")
    _check_log_probs(y, "logq")
    out = np.maximum(_kl_terms(x, y), 0.0)  # clip rounding below zero; KL >= 0
    return _exact_zero_where_equal(out, x, y)


def js_divergence(
    logp: Float[ArrayLike, "*batch vocab"], logq: Float[ArrayLike, "*batch vocab"]
) -> Float[np.ndarray, "*batch"]:
    """Jensen-Shannon divergence ``(KL(p || m) + KL(q || m)) / 2``, ``m = (p + q) / 2``, in nats.

    Symmetric, finite and in ``[0, log 2]``. Inputs as for :func:`kl_divergence`.
    """
    x, y = _pair(logp, logq)
    _check_log_probs(x, "logp")
    _check_log_probs(y, "logq")
    logm = np.logaddexp(x, y) - LOG2
    out = 0.5 * (_kl_terms(x, logm) + _kl_terms(y, logm))
    out = np.clip(out, 0.0, LOG2)
    return _exact_zero_where_equal(out, x, y)


DistanceFn = Callable[[ArrayLike, ArrayLike], np.ndarray]

DISTANCES: dict[str, DistanceFn] = {
    "cosine": cosine_distance,
    "l2": l2_distance,
    "kl": kl_divergence,
    "js": js_divergence,
}
"""Distances by name. ``kl`` and ``js`` take log-probabilities (logit lens), the others states."""


def get_distance(name: str) -> DistanceFn:
    """Look a distance up by name, with an error that lists the known names."""
    try:
        return DISTANCES[name]
    except KeyError:
        raise ValueError(f"unknown distance {name!r}; choose one of {sorted(DISTANCES)}") from None


__all__ = [
    "DISTANCES",
    "ArrayLike",
    "as_distance_matrix",
    "DistanceFn",
    "cosine_distance",
    "get_distance",
    "js_divergence",
    "kl_divergence",
    "l2_distance",
]
