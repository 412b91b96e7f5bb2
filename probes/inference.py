"""Inference at the level of the independent unit: paired comparisons with their intervals.

- :func:`paired_comparison`: ``mean(a) − mean(b)`` over the same items (two decoding methods'
  correctness on the same questions) with a paired bootstrap interval — items resampled with
  ``scipy.stats.bootstrap(..., paired=True)``, or whole clusters (the questions of one image)
  with :func:`probes.bootstrap.block_bootstrap` — and the words a report uses for it
  (:meth:`Comparison.words`: an interval that holds 0 is "no difference").
- :func:`clustered_mean`: a mean (an accuracy, a yes-ratio) with the same kind of interval.
- :func:`clustered_auroc`: an AUROC with an interval from resampling whole clusters.

Policies as in :mod:`probes.stats`: NaN refused, a fixed ``seed`` gives identical intervals,
percentile intervals.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from jaxtyping import Shaped
from scipy import stats as _sps

from .distances import ArrayLike, as_float64
from .errors import TooFewSamplesError
from .stats import block_bootstrap


@dataclass(frozen=True)
class Comparison:
    """A paired difference ``value = mean(a) − mean(b)`` (:func:`paired_comparison`), or a mean
    (:func:`clustered_mean`), with its interval ``[low, high]``.

    Attributes:
        value: the difference (or mean) over all ``n`` items.
        low, high: the percentile bootstrap interval at level ``ci`` (items, or whole clusters,
            resampled with ``a_i`` and ``b_i`` kept together).
        n: items (pairs); n_clusters: the independent units resampled (``n`` without clusters).
        ci: the interval's level.
    """

    value: float
    low: float
    high: float
    n: int
    n_clusters: int
    ci: float = 0.95

    @property
    def conclusive(self) -> bool:
        """Whether the interval excludes 0 (no difference); False for a NaN interval."""
        return bool(self.low > 0 or self.high < 0)

    def words(self, scale: float = 1.0, unit: str = "", digits: int = 1) -> str:
        """``"+1.7 [−5.0, +8.3]"`` (times ``scale``, ``unit`` after each number) followed by
        ``"; no difference"`` when the interval holds 0."""

        def num(x: float) -> str:
            return f"{x * scale:+.{digits}f}{unit}"

        text = f"{num(self.value)} [{num(self.low)}, {num(self.high)}]"
        return text if self.conclusive else text + "; no difference"

    def __float__(self) -> float:
        return float(self.value)


def _mean_of_difference(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x, axis=axis) - np.mean(y, axis=axis)


def _paired_vectors(a: Any, b: Any) -> tuple[np.ndarray, np.ndarray]:
    xa, xb = as_float64(a, "a").reshape(-1), as_float64(b, "b").reshape(-1)
    if xa.shape != xb.shape:
        raise ValueError(
            f"a and b must hold one value per item each, got {len(xa)} and {len(xb)}; pair them"
        )
    for name, x in (("a", xa), ("b", xb)):
        if np.isnan(x).any():
            raise ValueError(f"{name} holds NaN; drop missing items from both sides first")
    if len(xa) < 2:
        raise TooFewSamplesError(f"a paired comparison needs at least 2 items, got {len(xa)}")
    return xa, xb


def paired_comparison(
    a: Shaped[ArrayLike, " n"] | Sequence[float],
    b: Shaped[ArrayLike, " n"] | Sequence[float],
    clusters: Sequence[Any] | np.ndarray | None = None,
    *,
    n_boot: int = 2000,
    ci: float = 0.95,
    seed: int = 0,
) -> Comparison:
    """``mean(a) − mean(b)`` over the same items with a paired percentile-bootstrap interval.

    ``a_i`` and ``b_i`` belong to item ``i`` (e.g. whether method A and method B answered
    question ``i`` right: their mean is the accuracy), so a resample draws items and keeps both
    values of each: ``value = (1/n) Σ_i (a_i − b_i)``, and each resample's difference is that
    mean over the drawn items. ``a`` and ``b`` hold numbers or bools (True = 1).

    - ``clusters=None``: items are independent; ``scipy.stats.bootstrap((a, b), paired=True,
      method="percentile", rng=default_rng(seed))``.
    - ``clusters`` (one label per item, e.g. the image a question is about): whole clusters are
      drawn with replacement, as many as there are (:func:`~probes.bootstrap.block_bootstrap`), so
      items that share a cluster move together.

    Where every item has ``a_i − b_i`` equal (e.g. two methods with the same answers), every
    resample gives that value and the interval collapses onto it.

    Raises:
        TooFewSamplesError: fewer than 2 items, or fewer than 2 clusters.
        ValueError: lengths differ, NaN present, ``ci`` outside (0, 1), ``n_boot < 1``.
    """
    xa, xb = _paired_vectors(a, b)
    return _mean_interval(xa - xb, clusters, n_boot, ci, seed, paired=(xa, xb))


def clustered_mean(
    x: Shaped[ArrayLike, " n"] | Sequence[float],
    clusters: Sequence[Any] | np.ndarray | None = None,
    *,
    n_boot: int = 2000,
    ci: float = 0.95,
    seed: int = 0,
) -> Comparison:
    """``mean(x)`` (e.g. an accuracy: the mean of per-question correctness) with a percentile
    interval from resampling items (``scipy.stats.bootstrap``) or whole clusters
    (:func:`~probes.bootstrap.block_bootstrap`), as :func:`paired_comparison` does for a difference;
    ``conclusive`` then says whether the interval excludes 0.

    Raises:
        TooFewSamplesError: fewer than 2 items, or fewer than 2 clusters.
        ValueError: NaN present, ``ci`` outside (0, 1), ``n_boot < 1``.
    """
    xa, _ = _paired_vectors(x, np.zeros(np.size(x)))
    return _mean_interval(xa, clusters, n_boot, ci, seed, paired=None)


def _mean_interval(
    values: np.ndarray,
    clusters: Sequence[Any] | np.ndarray | None,
    n_boot: int,
    ci: float,
    seed: int,
    paired: tuple[np.ndarray, np.ndarray] | None,
) -> Comparison:
    """The mean of ``values`` with its percentile interval; ``paired``: the two sides whose
    difference ``values`` is, handed to scipy's paired bootstrap as they are."""
    if not 0 < ci < 1:
        raise ValueError(f"ci must be in (0, 1), got {ci}")
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    n = len(values)
    value = float(values.mean())
    labels = None if clusters is None else np.asarray(clusters, dtype=object)
    if labels is not None and len(labels) != n:
        raise ValueError(f"clusters has {len(labels)} labels for {n} items")
    n_clusters = n if labels is None else len(set(labels.tolist()))
    if labels is not None and n_clusters < 2:
        raise TooFewSamplesError(f"a cluster bootstrap needs at least 2 clusters, got {n_clusters}")
    if np.ptp(values) == 0:
        return Comparison(value, value, value, n, n_clusters, ci)
    if labels is None:
        data = paired if paired is not None else (values,)
        res = _sps.bootstrap(
            data,
            _mean_of_difference if paired is not None else np.mean,
            paired=paired is not None,
            vectorized=True,
            method="percentile",
            n_resamples=n_boot,
            confidence_level=ci,
            rng=np.random.default_rng(seed),
        )
        low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            lo, hi = block_bootstrap(
                lambda rows: np.array([values[rows].mean()]),
                n,
                labels,
                n_boot=n_boot,
                ci=ci,
                seed=seed,
            )
        low, high = float(lo[0]), float(hi[0])
    return Comparison(value, low, high, n, n_clusters, ci)


def clustered_auroc(
    scores: Shaped[ArrayLike, " n"] | Sequence[float],
    labels: Shaped[ArrayLike, " n"] | Sequence[Any],
    clusters: Sequence[Any] | np.ndarray | None = None,
    *,
    n_boot: int = 2000,
    ci: float = 0.95,
    seed: int = 0,
) -> Comparison:
    """AUROC of ``scores`` for the binary ``labels`` (:func:`probes.stats.auroc`:
    ``P(s_pos > s_neg) + P(s_pos = s_neg) / 2``) with a percentile interval from resampling whole
    clusters (the answers about one image together; :func:`~probes.bootstrap.block_bootstrap`); a
    resample that loses a class is left out. ``clusters=None``: each answer its own cluster.
    ``conclusive`` is about 0 (use ``low > 0.5 or high < 0.5`` for chance).

    Raises:
        EmptyGroupError: one class absent. TooFewSamplesError: fewer than 2 clusters.
        ValueError: lengths differ, NaN present.
    """
    from .stats import _auroc, _scores_labels

    s, y = _scores_labels(scores, labels)
    labels_ = np.arange(len(s)) if clusters is None else np.asarray(clusters, dtype=object)
    if len(labels_) != len(s):
        raise ValueError(f"clusters has {len(labels_)} labels for {len(s)} answers")

    def resampled(rows: np.ndarray) -> np.ndarray:
        yy = y[rows]
        return np.array([_auroc(s[rows], yy) if 0 < yy.sum() < len(yy) else np.nan])

    lo, hi = block_bootstrap(resampled, len(s), labels_, n_boot=n_boot, ci=ci, seed=seed)
    k = len(set(labels_.tolist()))
    return Comparison(float(_auroc(s, y)), float(lo[0]), float(hi[0]), len(s), k, ci)


__all__ = ["Comparison", "clustered_auroc", "clustered_mean", "paired_comparison"]
