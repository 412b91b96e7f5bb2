"""Percentile-bootstrap intervals (numpy in, floats or arrays out), the resampling every
statistic of :mod:`probes.stats` and the studies' summaries shares.

- :func:`bootstrap_ci` / :func:`estimate`: a statistic of rows resampled with replacement, paired
  across arrays, optionally within strata (two-group statistics keep their group sizes);
- :func:`block_bootstrap`: a vector statistic with whole blocks (images, clusters) resampled;
- :func:`mean_ci` / :func:`paired_difference`: a mean (of paired differences) under one
  small-sample rule (no value → NaN, one value → NaN bounds, constant → a collapsed interval).

Intervals are percentile intervals (Efron & Tibshirani 1993, ch. 13): the ``(1 - ci) / 2`` and
``(1 + ci) / 2`` quantiles of the resampled statistic; a fixed ``seed`` gives identical intervals.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from jaxtyping import Float, Shaped

from .distances import ArrayLike, to_numpy
from .errors import ConstantInputWarning, InterpError, TooFewSamplesError


@dataclass(frozen=True)
class Estimate:
    """A point estimate with a percentile-bootstrap interval ``[low, high]`` at level ``ci``."""

    value: float
    low: float
    high: float
    ci: float = 0.95

    def __float__(self) -> float:
        return float(self.value)


def _as_rows(a: ArrayLike | Sequence[Any]) -> np.ndarray:
    return to_numpy(a)


def bootstrap_ci(
    statistic: Callable[..., float],
    *arrays: Shaped[ArrayLike, "n ..."] | Sequence[Any],
    n_boot: int = 1000,
    ci: float = 0.95,
    seed: int = 0,
    strata: Shaped[ArrayLike, " n"] | Sequence[Any] | None = None,
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``statistic(*arrays)``.

    Each resample draws ``n`` row indices with replacement and applies them to every array
    (paired resampling: row ``i`` of each array stays together). With ``strata`` (one label
    per row), rows are drawn with replacement within each stratum, so group sizes are fixed;
    use it for two-group statistics (AUROC, effect sizes), whose value is undefined when a
    resample loses a group.

    Resamples where ``statistic`` returns NaN or raises an :class:`~interp.errors.InterpError`
    (an empty group, too few samples) are skipped; the interval is taken over the others.

    Returns:
        ``(low, high)``: the ``(1 - ci) / 2`` and ``(1 + ci) / 2`` quantiles.

    Raises:
        TooFewSamplesError: fewer than 2 rows, or fewer than half the resamples gave a value.
        ValueError: arrays of different lengths, ``ci`` outside (0, 1), ``n_boot < 1``.
    """
    if not arrays:
        raise ValueError("bootstrap_ci needs at least one array")
    if not 0.0 < ci < 1.0:
        raise ValueError(f"ci must lie in (0, 1), got {ci}")
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    rows = [_as_rows(a) for a in arrays]
    n = len(rows[0])
    if any(len(r) != n for r in rows):
        raise ValueError(f"arrays differ in length: {[len(r) for r in rows]}")
    if n < 2:
        raise TooFewSamplesError(f"bootstrap needs at least 2 rows, got {n}")
    groups: list[np.ndarray] | None = None
    if strata is not None:
        s = _as_rows(strata)
        if len(s) != n:
            raise ValueError(f"strata has length {len(s)}, arrays have length {n}")
        groups = [np.flatnonzero(s == u) for u in np.unique(s)]

    rng = np.random.default_rng(seed)
    values = np.empty(n_boot)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstantInputWarning)
        for b in range(n_boot):
            if groups is None:
                idx = rng.integers(0, n, size=n)
            else:
                idx = np.concatenate([rng.choice(g, size=len(g)) for g in groups])
            try:
                values[b] = float(statistic(*(r[idx] for r in rows)))
            except InterpError:
                values[b] = np.nan
    ok = values[~np.isnan(values)]
    if len(ok) < n_boot / 2:
        raise TooFewSamplesError(
            f"only {len(ok)} of {n_boot} bootstrap resamples gave a value (the others lost a "
            "group or were constant); pass strata= or use more samples"
        )
    low, high = np.percentile(ok, [100 * (1 - ci) / 2, 100 * (1 + ci) / 2])
    return float(low), float(high)


def estimate(
    statistic: Callable[..., float],
    *arrays: Shaped[ArrayLike, "n ..."] | Sequence[Any],
    ci: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
    strata: Shaped[ArrayLike, " n"] | Sequence[Any] | None = None,
) -> Estimate:
    """``statistic(*arrays)`` with its :func:`bootstrap_ci` interval, as an :class:`Estimate`."""
    value = float(statistic(*arrays))
    low, high = bootstrap_ci(statistic, *arrays, n_boot=n_boot, ci=ci, seed=seed, strata=strata)
    return Estimate(value=value, low=low, high=high, ci=ci)


def mean_ci(
    x: Float[ArrayLike, " n"] | Sequence[float],
    *,
    ci: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
) -> Estimate:
    """The mean of ``x`` with its percentile-bootstrap interval, under one small-sample rule that
    every study shares: no values → NaN estimate and bounds; one value → the value with NaN
    bounds (an interval needs two); constant values → the interval collapses onto the value.
    NaN values are refused, as everywhere in this module."""
    v = np.asarray(to_numpy(x), dtype=np.float64).reshape(-1)
    if np.isnan(v).any():
        raise ValueError("mean_ci: the input holds NaN; drop missing values first")
    if len(v) == 0:
        return Estimate(np.nan, np.nan, np.nan, ci)
    value = float(v.mean())
    if len(v) == 1:
        return Estimate(value, np.nan, np.nan, ci)
    if np.ptp(v) == 0:
        return Estimate(value, value, value, ci)
    low, high = bootstrap_ci(np.mean, v, n_boot=n_boot, ci=ci, seed=seed)
    return Estimate(value, low, high, ci)


def paired_difference(
    a: Float[ArrayLike, " n"] | Sequence[float],
    b: Float[ArrayLike, " n"] | Sequence[float],
    *,
    ci: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
) -> Estimate:
    """``mean(a) − mean(b)`` over the same items, with a paired bootstrap interval (a resample
    keeps ``a_i`` and ``b_i`` together): :func:`mean_ci` of ``a − b``, same small-sample rule."""
    xa = np.asarray(to_numpy(a), dtype=np.float64).reshape(-1)
    xb = np.asarray(to_numpy(b), dtype=np.float64).reshape(-1)
    if len(xa) != len(xb):
        raise ValueError(f"paired_difference: {len(xa)} vs {len(xb)} values; pair them first")
    return mean_ci(xa - xb, ci=ci, n_boot=n_boot, seed=seed)


def block_bootstrap(
    statistic: Callable[[np.ndarray], np.ndarray],
    n: int,
    blocks: Sequence[Any] | np.ndarray | None = None,
    n_boot: int = 1000,
    ci: float = 0.95,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile block-bootstrap interval of a vector statistic of ``n`` units.

    ``statistic(rows)`` takes an index array into the ``n`` units (rows may repeat) and returns
    an array (e.g. a curve over positions). Each resample draws as many blocks as there are,
    uniformly with replacement (``numpy.random.default_rng(seed).integers``, one call per
    resample), and takes every unit of each drawn block; with ``blocks=None`` each unit is its
    own block (a unit's whole trajectory still moves as one). NaN entries of a resample's
    statistic are ignored per entry.

    Returns:
        ``(low, high)`` arrays shaped like the statistic.

    Raises:
        TooFewSamplesError: fewer than 2 blocks.
        ValueError: ``blocks`` of another length than ``n``, ``ci`` outside (0, 1), ``n_boot < 1``.
    """
    if not 0 < ci < 1:
        raise ValueError(f"ci must be in (0, 1), got {ci}")
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    labels = np.arange(n) if blocks is None else np.asarray(blocks)
    if len(labels) != n:
        raise ValueError(f"blocks has {len(labels)} labels for {n} units")
    members = [np.flatnonzero(labels == b) for b in dict.fromkeys(labels.tolist())]
    if len(members) < 2:
        raise TooFewSamplesError(f"a block bootstrap needs at least 2 blocks, got {len(members)}")
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(n_boot):
        pick = rng.integers(0, len(members), len(members))
        draws.append(np.asarray(statistic(np.concatenate([members[j] for j in pick])), float))
    stacked = np.stack(draws)
    alpha = (1 - ci) / 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN entry stays NaN
        low = np.nanquantile(stacked, alpha, axis=0)
        high = np.nanquantile(stacked, 1 - alpha, axis=0)
    return low, high


__all__ = [
    "Estimate",
    "block_bootstrap",
    "bootstrap_ci",
    "estimate",
    "mean_ci",
    "paired_difference",
]
