"""Headline numbers as reports state them: a value with its n and 95% interval, rounded to 3
significant digits, ``"value [low, high]"`` in the text, "inconclusive" where the interval holds
no effect, resampling whole clusters (a sample's ``meta["group"]``) where the data have them.

Used by the audit's sections (:mod:`interp.studies.audit.report` re-exports these names) and by
the study commands' summaries, so that both state a headline the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from interp.samples import Sample

if TYPE_CHECKING:
    from probes.inference import Comparison

Number = int | float | str | None


def headline(value: Any) -> Number:
    """A headline number as it appears in ``summary.json`` and the page: ints as they are, floats
    to 3 significant digits, NaN as None."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    x = float(value)
    if not np.isfinite(x):
        return None
    return float(f"{x:.3g}")


def show(value: Number) -> str:
    """How the page writes a headline number (the same text ``summary.json`` holds)."""
    return "n/a" if value is None else str(value)


def with_interval(numbers: dict[str, Number], key: str, value: Any, low: Any, high: Any) -> None:
    """Set ``numbers[key]`` and its 95% interval ``numbers[key + "_low"]`` / ``[key + "_high"]``
    (each :func:`headline`-rounded)."""
    numbers[key] = headline(value)
    numbers[f"{key}_low"] = headline(low)
    numbers[f"{key}_high"] = headline(high)


def bracket(numbers: Mapping[str, Number], key: str) -> str:
    """``"value [low, high]"`` of a number set by :func:`with_interval`, as the page writes it."""
    return f"{show(numbers[key])} [{show(numbers[f'{key}_low'])}, {show(numbers[f'{key}_high'])}]"


def holds(low: Any, high: Any, null: float) -> bool:
    """Whether the interval ``[low, high]`` holds the no-effect value ``null`` (a NaN interval
    holds it: nothing was shown)."""
    return not (float(low) > null or float(high) < null)


def unit_words(count: str, images: int | None) -> str:
    """The unit of inference in words: ``"12 answers on 5 images, resampling whole images"``, or
    the count alone (``images`` None: the answers are resampled)."""
    return count + (f" on {images} images, resampling whole images" if images is not None else "")


def clusters(samples: Sequence[Sample]) -> list[Any] | None:
    """Each sample's ``meta["group"]`` (the independent unit: the demo world's image with its
    wordings) where every sample has one and some samples share one; None otherwise (each sample
    is its own unit)."""
    groups = [s.meta.get("group") for s in samples]
    if any(g is None for g in groups) or len(set(groups)) == len(groups):
        return None
    return groups


def mean_interval(
    values: Sequence[float] | np.ndarray | pd.Series,
    groups: Sequence[Any] | None = None,
    paired_with: Sequence[float] | np.ndarray | pd.Series | None = None,
) -> Comparison:
    """The mean of ``values`` (or, with ``paired_with``, of ``values − paired_with`` item by
    item) with its 95% bootstrap interval, resampling whole ``groups`` where given
    (:func:`probes.inference.clustered_mean` / :func:`~probes.inference.paired_comparison`).
    Items with a NaN on either side are left out; fewer than 2 items (or clusters) left give NaN
    bounds."""
    from probes.inference import Comparison, clustered_mean, paired_comparison

    a = np.asarray(values, dtype=float).reshape(-1)
    b = None if paired_with is None else np.asarray(paired_with, dtype=float).reshape(-1)
    keep = ~np.isnan(a) if b is None else ~(np.isnan(a) | np.isnan(b))
    g = None if groups is None else [x for x, k in zip(groups, keep) if k]
    a = a[keep]
    b = None if b is None else b[keep]
    n = len(a)
    units = n if g is None else len(set(g))
    if n < 2 or units < 2:
        value = float(np.mean(a - (0 if b is None else b))) if n else float("nan")
        return Comparison(value, float("nan"), float("nan"), n, units)
    if b is None:
        return clustered_mean(a, g)
    return paired_comparison(a, b, g)


@dataclass
class Headlines:
    """A study's headline numbers (``numbers``: each estimate with ``_low`` / ``_high``, and the
    counts) and the sentences that state them (``text``), computed once for the audit's section
    and the study command's summary."""

    numbers: dict[str, Number] = field(default_factory=dict)
    text: str = ""


__all__ = [
    "Headlines",
    "Number",
    "bracket",
    "clusters",
    "headline",
    "holds",
    "mean_interval",
    "show",
    "unit_words",
    "with_interval",
]
