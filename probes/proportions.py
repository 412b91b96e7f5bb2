"""Intervals for proportions and for the difference of two independent proportions.

- :func:`wilson`: the Wilson score interval of ``k / n`` (scipy's ``binomtest``).
- :func:`newcombe`: the difference ``k1/n1 − k2/n2`` with Newcombe's hybrid score interval
  (Newcombe 1998, *Interval estimation for the difference between independent proportions*,
  method 10), built from the two Wilson intervals ``(l1, u1)``, ``(l2, u2)``:

  .. math::

     L = d - \\sqrt{(p_1 - l_1)^2 + (u_2 - p_2)^2}, \\qquad
     U = d + \\sqrt{(u_1 - p_1)^2 + (p_2 - l_2)^2}, \\qquad d = p_1 - p_2.

  It stays inside [−1, 1] and behaves at ``k = 0`` or ``k = n``, where the Wald interval
  collapses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy import stats as _sps


def wilson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of the proportion ``k / n`` (scipy's ``binomtest``); NaN bounds for
    ``n = 0``. It stays inside [0, 1] and is sensible at k = 0 or k = n, unlike the normal
    approximation."""
    if n == 0:
        return float("nan"), float("nan")
    if not 0 <= k <= n:
        raise ValueError(f"wilson: k must lie in 0..n, got k={k}, n={n}")
    interval = _sps.binomtest(int(k), int(n)).proportion_ci(confidence, method="wilson")
    return float(interval.low), float(interval.high)


@dataclass(frozen=True)
class Difference:
    """A difference of two proportions ``value = k1/n1 − k2/n2`` with its interval
    ``[low, high]`` at level ``confidence``; NaN throughout when either ``n`` is 0."""

    value: float
    low: float
    high: float
    confidence: float = 0.95

    @property
    def excludes_zero(self) -> bool:
        """The interval lies wholly above or wholly below 0 (False for a NaN interval)."""
        return bool(self.low > 0 or self.high < 0)

    def __float__(self) -> float:
        return float(self.value)


def newcombe(k1: int, n1: int, k2: int, n2: int, confidence: float = 0.95) -> Difference:
    """``k1/n1 − k2/n2`` with Newcombe's hybrid score interval (method 10; module docstring)
    for two independent samples."""
    if n1 == 0 or n2 == 0:
        nan = float("nan")
        return Difference(nan, nan, nan, confidence)
    p1, p2 = k1 / n1, k2 / n2
    l1, u1 = wilson(k1, n1, confidence)
    l2, u2 = wilson(k2, n2, confidence)
    d = p1 - p2
    low = d - math.hypot(p1 - l1, u2 - p2)
    high = d + math.hypot(u1 - p1, p2 - l2)
    return Difference(d, low, high, confidence)


__all__ = ["Difference", "newcombe", "wilson"]
