"""Multiple-comparison corrections for a family of p-values (the layers of a model, the edges ×
windows of a knockout study).

- :func:`holm`: Holm's step-down adjustment (family-wise error rate ≤ α).
- :func:`benjamini_hochberg`: the Benjamini–Hochberg adjustment (false discovery rate ≤ α for
  independent or positively dependent tests), by ``scipy.stats.false_discovery_control``.
- :func:`adjust`: either by name, or none.

NaN p-values (a test that could not be run) stay NaN and do not count towards the family size.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from jaxtyping import Float
from scipy import stats as _sps

from .distances import ArrayLike

Correction = Literal["holm", "bh", "none"]
CORRECTIONS: dict[str, str] = {
    "holm": "Holm's step-down method (family-wise error rate)",
    "bh": "Benjamini-Hochberg (false discovery rate)",
    "none": "no correction",
}
"""The corrections :func:`adjust` knows, with the name a report gives them."""


def _pvalues(pvalues: Float[ArrayLike, " m"] | Sequence[float]) -> np.ndarray:
    p = np.asarray(pvalues, dtype=np.float64).reshape(-1)
    finite = p[~np.isnan(p)]
    if ((finite < 0) | (finite > 1)).any():
        raise ValueError("p-values must lie in [0, 1] (or be NaN for a test not run)")
    return p


def holm(pvalues: Float[ArrayLike, " m"] | Sequence[float]) -> Float[np.ndarray, " m"]:
    """Holm-adjusted p-values: with the ``m`` non-NaN p-values sorted,
    ``p_(1) ≤ … ≤ p_(m)``, ``p̃_(k) = min(1, max_{j ≤ k} (m − j + 1) p_(j))`` (step-down,
    monotone, capped at 1). Rejecting where ``p̃ < α`` keeps the family-wise error rate ≤ α under
    any dependence. NaN stays NaN and does not count in ``m``; ties keep their input order.

    Raises:
        ValueError: a p-value outside [0, 1].
    """
    p = _pvalues(pvalues)
    out = np.full_like(p, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    m = len(ok)
    order = ok[np.argsort(p[ok], kind="stable")]
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


def benjamini_hochberg(
    pvalues: Float[ArrayLike, " m"] | Sequence[float],
) -> Float[np.ndarray, " m"]:
    """Benjamini–Hochberg adjusted p-values, ``p̃_(k) = min(1, min_{j ≥ k} m p_(j) / j)`` over the
    ``m`` non-NaN p-values (``scipy.stats.false_discovery_control(method="bh")``); rejecting
    where ``p̃ < α`` keeps the false discovery rate ≤ α for independent or positively dependent
    tests. NaN stays NaN and does not count in ``m``.

    Raises:
        ValueError: a p-value outside [0, 1].
    """
    p = _pvalues(pvalues)
    out = np.full_like(p, np.nan)
    ok = ~np.isnan(p)
    if ok.any():
        out[ok] = _sps.false_discovery_control(p[ok], method="bh")
    return out


def adjust(
    pvalues: Float[ArrayLike, " m"] | Sequence[float], method: Correction | str = "holm"
) -> Float[np.ndarray, " m"]:
    """The p-values adjusted by ``method``: ``"holm"`` (:func:`holm`), ``"bh"``
    (:func:`benjamini_hochberg`) or ``"none"`` (returned as they are).

    Raises:
        ValueError: an unknown method, or a p-value outside [0, 1].
    """
    if method == "holm":
        return holm(pvalues)
    if method == "bh":
        return benjamini_hochberg(pvalues)
    if method == "none":
        return _pvalues(pvalues).copy()
    raise ValueError(
        f"unknown correction {method!r}: use one of " + ", ".join(repr(c) for c in CORRECTIONS)
    )


__all__ = ["CORRECTIONS", "Correction", "adjust", "benjamini_hochberg", "holm"]
