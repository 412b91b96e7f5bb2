"""Correlation, effect sizes and binary ranking metrics with their bootstrap confidence intervals
(numpy in, floats out; the resampling is :mod:`probes.bootstrap`'s, re-exported here).

Used to validate TVI against correctness (Spearman, Tables 1, 3, 4, 6, 9 of the VIP/TVI paper)
and to score a per-sample measure against a binary label (AUROC/AUPRC with bootstrap 95% CIs,
Cohen's d, Cliff's delta, as in the causal-drive paper's Table 4 and Supplementary Sec. 12).

Policies shared by every function here:

- Inputs are 1-D numpy arrays, torch tensors or sequences; NaN anywhere raises ``ValueError``
  (drop missing samples explicitly rather than have them silently ignored).
- Too few samples raises :class:`~interp.errors.TooFewSamplesError`; a binary statistic whose
  labels hold one class only raises :class:`~interp.errors.EmptyGroupError`.
- Bootstrap intervals are percentile intervals (:func:`probes.bootstrap.bootstrap_ci`); a fixed
  ``seed`` gives identical intervals.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, overload

import numpy as np
from jaxtyping import Bool, Float
from scipy import stats as _sps

from .bootstrap import Estimate as Estimate
from .bootstrap import block_bootstrap as block_bootstrap
from .bootstrap import bootstrap_ci as bootstrap_ci
from .bootstrap import estimate as estimate
from .bootstrap import mean_ci as mean_ci
from .bootstrap import paired_difference as paired_difference
from .distances import ArrayLike, as_float64, to_numpy
from .errors import ConstantInputWarning as ConstantInputWarning
from .errors import EmptyGroupError, TooFewSamplesError
from .proportions import wilson


@dataclass(frozen=True)
class CorrelationResult:
    """A rank correlation: coefficient, two-sided p-value and number of pairs used."""

    rho: float
    p_value: float
    n: int


def _vector(x: ArrayLike | Sequence[float], name: str) -> np.ndarray:
    arr = as_float64(x, name)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if np.any(np.isnan(arr)):
        raise ValueError(f"{name} contains NaN at positions {np.flatnonzero(np.isnan(arr))[:10]}")
    return arr


def as_binary_labels(y: ArrayLike | Sequence[Any], n: int, name: str = "labels") -> np.ndarray:
    """Binary labels as a bool array; accepts bool or numbers in {0, 1}."""
    arr = to_numpy(y)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"{name} must be 1-D of length {n}, got shape {arr.shape}")
    if arr.dtype == bool:
        return arr
    if not np.issubdtype(arr.dtype, np.number) or not np.all(np.isin(arr, (0, 1))):
        raise ValueError(f"{name} must be binary (bool or 0/1), got values {np.unique(arr)[:10]}")
    return arr.astype(bool)


def _rank_pearson(x: np.ndarray, y: np.ndarray) -> float:
    rx = _sps.rankdata(x) - (len(x) + 1) / 2.0
    ry = _sps.rankdata(y) - (len(y) + 1) / 2.0
    rho = float(np.dot(rx, ry) / np.sqrt(np.dot(rx, rx) * np.dot(ry, ry)))
    return float(np.clip(rho, -1.0, 1.0))


def spearman(
    x: Float[ArrayLike, " n"] | Sequence[float], y: Float[ArrayLike, " n"] | Sequence[float]
) -> CorrelationResult:
    """Spearman's rank correlation: Pearson's r of the (average-tie) ranks of ``x`` and ``y``.

    p-value: two-sided, from ``t = rho sqrt((n - 2) / (1 - rho^2))`` with ``n - 2`` degrees of
    freedom (the usual large-sample approximation); ``|rho| = 1`` gives ``p = 0``.

    Constant input (all ``x`` or all ``y`` equal): the correlation is undefined, so ``rho`` and
    ``p_value`` are NaN and a :class:`ConstantInputWarning` is emitted (no exception, so one
    degenerate cell does not abort a table of correlations).

    Raises:
        TooFewSamplesError: fewer than 3 pairs.
        ValueError: different lengths, not 1-D, or NaN present.
    """
    xa, ya = _vector(x, "x"), _vector(y, "y")
    if xa.shape != ya.shape:
        raise ValueError(f"x and y differ in length: {xa.shape[0]} vs {ya.shape[0]}")
    n = int(xa.shape[0])
    if n < 3:
        raise TooFewSamplesError(f"Spearman correlation needs at least 3 pairs, got {n}")
    constant = [name for name, a in (("x", xa), ("y", ya)) if np.all(a == a[0])]
    if constant:
        warnings.warn(
            f"Spearman correlation of a constant input ({' and '.join(constant)}): rho is NaN",
            ConstantInputWarning,
            stacklevel=2,
        )
        return CorrelationResult(rho=float("nan"), p_value=float("nan"), n=n)
    rho = _rank_pearson(xa, ya)
    if abs(rho) >= 1.0:
        return CorrelationResult(rho=rho, p_value=0.0, n=n)
    t = rho * np.sqrt((n - 2) / (1.0 - rho * rho))
    p = float(2.0 * _sps.t.sf(abs(t), n - 2))
    return CorrelationResult(rho=rho, p_value=p, n=n)


@dataclass(frozen=True)
class ClusteredCorrelation:
    """Spearman's ρ with its interval at the level of the independent unit.

    Attributes:
        rho: Spearman's ρ over all pairs.
        low, high: the percentile interval of ρ over resamples of whole clusters (a cluster's
            pairs move together: the wordings of one image are not independent).
        n: pairs; n_clusters: clusters (the independent units).
        ci: the interval's level.
    """

    rho: float
    low: float
    high: float
    n: int
    n_clusters: int
    ci: float = 0.95

    @property
    def conclusive(self) -> bool:
        """Whether the interval excludes 0 (no correlation)."""
        return bool(self.low > 0 or self.high < 0)


def clustered_spearman(
    x: Float[ArrayLike, " n"] | Sequence[float],
    y: Float[ArrayLike, " n"] | Sequence[float],
    clusters: Sequence[Any] | np.ndarray | None = None,
    *,
    n_boot: int = 1000,
    ci: float = 0.95,
    seed: int = 0,
) -> ClusteredCorrelation:
    """Spearman's ρ of ``x`` and ``y`` with a cluster-bootstrap interval: each resample draws as
    many clusters as there are, with replacement, and takes all of each drawn cluster's pairs
    (:func:`block_bootstrap`); a resample where ρ is undefined (constant ranks) is left out.
    ``clusters=None``: every pair its own cluster (the ordinary bootstrap).

    Raises:
        TooFewSamplesError: fewer than 3 pairs or 2 clusters.
        ValueError: lengths differ, NaN present.
    """
    xa, ya = _vector(x, "x"), _vector(y, "y")
    if xa.shape != ya.shape:
        raise ValueError(f"x and y differ in length: {xa.shape[0]} vs {ya.shape[0]}")
    rho = spearman(xa, ya).rho
    labels = np.arange(len(xa)) if clusters is None else np.asarray(clusters, dtype=object)

    def resampled(rows: np.ndarray) -> np.ndarray:
        a, b = xa[rows], ya[rows]
        if np.all(a == a[0]) or np.all(b == b[0]):
            return np.array([np.nan])
        return np.array([_rank_pearson(a, b)])

    low, high = block_bootstrap(resampled, len(xa), labels, n_boot=n_boot, ci=ci, seed=seed)
    return ClusteredCorrelation(
        rho=rho,
        low=float(low[0]),
        high=float(high[0]),
        n=len(xa),
        n_clusters=len(set(labels.tolist())),
        ci=ci,
    )


# --- two-group effect sizes ---------------------------------------------------------------


def _two_groups(
    a: ArrayLike | Sequence[float], b: ArrayLike | Sequence[float], need: int
) -> tuple[np.ndarray, np.ndarray]:
    xa, xb = _vector(a, "a"), _vector(b, "b")
    for name, arr in (("a", xa), ("b", xb)):
        if len(arr) == 0:
            raise EmptyGroupError(f"group {name} is empty")
        if len(arr) < need:
            raise TooFewSamplesError(f"group {name} has {len(arr)} value(s); need at least {need}")
    return xa, xb


def _stacked(xa: np.ndarray, xb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both groups as one column plus a membership mask, for a stratified bootstrap."""
    in_a = np.r_[np.ones(len(xa), bool), np.zeros(len(xb), bool)]
    return np.r_[xa, xb], in_a


def _with_ci(
    stat: Callable[[np.ndarray, np.ndarray], float],
    xa: np.ndarray,
    xb: np.ndarray,
    ci: float | None,
    n_boot: int,
    seed: int,
) -> float | Estimate:
    value = float(stat(xa, xb))
    if ci is None:
        return value
    v, in_a = _stacked(xa, xb)
    low, high = bootstrap_ci(
        lambda vv, mm: stat(vv[mm], vv[~mm]), v, in_a, n_boot=n_boot, ci=ci, seed=seed, strata=in_a
    )
    return Estimate(value=value, low=low, high=high, ci=ci)


def _mean_difference(xa: np.ndarray, xb: np.ndarray) -> float:
    return float(np.mean(xa) - np.mean(xb))


def _sample_var(x: np.ndarray) -> float:
    # A constant group has zero variance exactly; rounding of its mean would leave ~1e-33.
    return 0.0 if np.ptp(x) == 0 else float(np.var(x, ddof=1))


def _cohens_d(xa: np.ndarray, xb: np.ndarray) -> float:
    na, nb = len(xa), len(xb)
    pooled = ((na - 1) * _sample_var(xa) + (nb - 1) * _sample_var(xb)) / (na + nb - 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.float64(np.mean(xa) - np.mean(xb)) / np.sqrt(pooled))


def _cliffs_delta(xa: np.ndarray, xb: np.ndarray) -> float:
    sb = np.sort(xb)
    below = np.searchsorted(sb, xa, side="left")  # b_j < a_i
    above = len(sb) - np.searchsorted(sb, xa, side="right")  # b_j > a_i
    return float((below.sum() - above.sum()) / (len(xa) * len(xb)))


@overload
def mean_difference(
    a: Float[ArrayLike, " n_a"] | Sequence[float],
    b: Float[ArrayLike, " n_b"] | Sequence[float],
    *,
    ci: None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> float: ...
@overload
def mean_difference(
    a: Float[ArrayLike, " n_a"] | Sequence[float],
    b: Float[ArrayLike, " n_b"] | Sequence[float],
    *,
    ci: float,
    n_boot: int = 1000,
    seed: int = 0,
) -> Estimate: ...
def mean_difference(
    a: ArrayLike | Sequence[float],
    b: ArrayLike | Sequence[float],
    *,
    ci: float | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> float | Estimate:
    """``mean(a) - mean(b)``; with ``ci``, a bootstrap interval resampling each group apart."""
    xa, xb = _two_groups(a, b, need=1)
    return _with_ci(_mean_difference, xa, xb, ci, n_boot, seed)


@overload
def cohens_d(
    a: Float[ArrayLike, " n_a"] | Sequence[float],
    b: Float[ArrayLike, " n_b"] | Sequence[float],
    *,
    ci: None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> float: ...
@overload
def cohens_d(
    a: Float[ArrayLike, " n_a"] | Sequence[float],
    b: Float[ArrayLike, " n_b"] | Sequence[float],
    *,
    ci: float,
    n_boot: int = 1000,
    seed: int = 0,
) -> Estimate: ...
def cohens_d(
    a: ArrayLike | Sequence[float],
    b: ArrayLike | Sequence[float],
    *,
    ci: float | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> float | Estimate:
    """Cohen's d = ``(mean(a) - mean(b)) / s_p`` with the pooled standard deviation.

    ``s_p^2 = ((n_a - 1) s_a^2 + (n_b - 1) s_b^2) / (n_a + n_b - 2)``, sample variances (ddof=1).

    Both groups constant: ``s_p = 0``, so d is ``±inf`` (means differ) or NaN (means equal).
    With ``ci``, a percentile-bootstrap interval resampling each group separately.

    Raises:
        EmptyGroupError / TooFewSamplesError: a group is empty / has fewer than 2 values.
    """
    xa, xb = _two_groups(a, b, need=2)
    return _with_ci(_cohens_d, xa, xb, ci, n_boot, seed)


@overload
def cliffs_delta(
    a: Float[ArrayLike, " n_a"] | Sequence[float],
    b: Float[ArrayLike, " n_b"] | Sequence[float],
    *,
    ci: None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> float: ...
@overload
def cliffs_delta(
    a: Float[ArrayLike, " n_a"] | Sequence[float],
    b: Float[ArrayLike, " n_b"] | Sequence[float],
    *,
    ci: float,
    n_boot: int = 1000,
    seed: int = 0,
) -> Estimate: ...
def cliffs_delta(
    a: ArrayLike | Sequence[float],
    b: ArrayLike | Sequence[float],
    *,
    ci: float | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> float | Estimate:
    """Cliff's delta = ``P(a > b) - P(a < b)`` over all ``n_a n_b`` pairs, in ``[-1, 1]``.

    Equals ``2 AUROC - 1`` when ``a`` are the positives' scores. With ``ci``, a
    percentile-bootstrap interval resampling each group separately.

    Raises:
        EmptyGroupError: a group is empty.
    """
    xa, xb = _two_groups(a, b, need=1)
    return _with_ci(_cliffs_delta, xa, xb, ci, n_boot, seed)


# --- binary classification scores ---------------------------------------------------------


def _scores_labels(scores: Any, labels: Any) -> tuple[np.ndarray, np.ndarray]:
    s = _vector(scores, "scores")
    y = as_binary_labels(labels, len(s))
    n_pos = int(y.sum())
    if n_pos == 0 or n_pos == len(y):
        which = "positive" if n_pos == 0 else "negative"
        raise EmptyGroupError(
            f"labels hold no {which} sample (n={len(y)}); AUROC/AUPRC need both classes"
        )
    return s, y


def _auroc(s: np.ndarray, y: np.ndarray) -> float:
    n_pos = int(y.sum())
    n_neg = len(y) - n_pos
    ranks = _sps.rankdata(s)  # average ranks: a tie counts one half
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def _auprc(s: np.ndarray, y: np.ndarray) -> float:
    order = np.argsort(-s, kind="mergesort")
    s_sorted, y_sorted = s[order], y[order]
    # One operating point per distinct score: tied samples enter together.
    last_of_tie = np.r_[np.flatnonzero(np.diff(s_sorted)), len(s_sorted) - 1]
    tp = np.cumsum(y_sorted)[last_of_tie]
    predicted = last_of_tie + 1
    precision = tp / predicted
    recall = tp / tp[-1]
    return float(np.sum(np.diff(np.r_[0.0, recall]) * precision))


def _binary_with_ci(
    stat: Callable[[np.ndarray, np.ndarray], float],
    s: np.ndarray,
    y: np.ndarray,
    ci: float | None,
    n_boot: int,
    seed: int,
) -> float | Estimate:
    value = stat(s, y)
    if ci is None:
        return value
    low, high = bootstrap_ci(stat, s, y, n_boot=n_boot, ci=ci, seed=seed, strata=y)
    return Estimate(value=value, low=low, high=high, ci=ci)


@overload
def auroc(
    scores: Float[ArrayLike, " n"] | Sequence[float],
    labels: Bool[ArrayLike, " n"] | Sequence[Any],
    *,
    ci: None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> float: ...
@overload
def auroc(
    scores: Float[ArrayLike, " n"] | Sequence[float],
    labels: Bool[ArrayLike, " n"] | Sequence[Any],
    *,
    ci: float,
    n_boot: int = 1000,
    seed: int = 0,
) -> Estimate: ...
def auroc(
    scores: ArrayLike | Sequence[float],
    labels: ArrayLike | Sequence[Any],
    *,
    ci: float | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> float | Estimate:
    """Area under the ROC curve = ``P(s_pos > s_neg) + P(s_pos = s_neg) / 2``.

    Computed from the Mann-Whitney U statistic of average ranks. ``labels`` are bool or 0/1,
    True/1 the positive class. With ``ci``, a bootstrap stratified by label (class sizes fixed).

    Raises:
        EmptyGroupError: one class is absent.
    """
    s, y = _scores_labels(scores, labels)
    return _binary_with_ci(_auroc, s, y, ci, n_boot, seed)


@overload
def auprc(
    scores: Float[ArrayLike, " n"] | Sequence[float],
    labels: Bool[ArrayLike, " n"] | Sequence[Any],
    *,
    ci: None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> float: ...
@overload
def auprc(
    scores: Float[ArrayLike, " n"] | Sequence[float],
    labels: Bool[ArrayLike, " n"] | Sequence[Any],
    *,
    ci: float,
    n_boot: int = 1000,
    seed: int = 0,
) -> Estimate: ...
def auprc(
    scores: ArrayLike | Sequence[float],
    labels: ArrayLike | Sequence[Any],
    *,
    ci: float | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> float | Estimate:
    """Area under the precision-recall curve, as average precision (no interpolation).

    ``AP = sum_k (R_k - R_{k-1}) P_k`` over the distinct score thresholds, highest first.

    Its chance level is the positive rate. With ``ci``, a bootstrap stratified by label.

    Raises:
        EmptyGroupError: one class is absent.
    """
    s, y = _scores_labels(scores, labels)
    return _binary_with_ci(_auprc, s, y, ci, n_boot, seed)


def pearson(
    a: Float[ArrayLike, " n"] | Sequence[float], b: Float[ArrayLike, " n"] | Sequence[float]
) -> float:
    """Pearson's r of paired values; NaN (not an error) for fewer than two pairs or a constant
    side, where r is undefined — for descriptive tables; use :func:`spearman` for a test."""
    xa = np.asarray(to_numpy(a), dtype=np.float64).reshape(-1)
    xb = np.asarray(to_numpy(b), dtype=np.float64).reshape(-1)
    if len(xa) != len(xb):
        raise ValueError(f"pearson: {len(xa)} vs {len(xb)} values")
    if len(xa) < 2 or np.ptp(xa) == 0 or np.ptp(xb) == 0:
        return float("nan")
    return float(np.corrcoef(xa, xb)[0, 1])


__all__ = [
    "ClusteredCorrelation",
    "clustered_spearman",
    "CorrelationResult",
    "auprc",
    "auroc",
    "cliffs_delta",
    "cohens_d",
    "mean_difference",
    "pearson",
    "spearman",
    "wilson",
]
