"""Wilson and Newcombe intervals against published values and scipy."""

from __future__ import annotations

import math

import pytest
from scipy.stats import binomtest

from interp.testing.tolerance import EPS, approx_close
from probes import Difference, newcombe, wilson

# Newcombe (1998), Statistics in Medicine 17:873-890, Table II, method 10 (the hybrid score
# interval): the worked examples (a)-(g) as published, to 4 decimals. A printed value is the true
# one to half a unit in its last place, 5e-5; ours adds float64 rounding, ε·S with S = 1.
PRINTED = 0.5e-4 + EPS["float64"]
PUBLISHED = [
    ((56, 70, 48, 80), (0.0524, 0.3339)),
    ((9, 10, 3, 10), (0.1705, 0.8090)),
    ((6, 7, 2, 7), (0.0582, 0.8062)),
    ((5, 56, 0, 29), (-0.0381, 0.1926)),
    ((0, 10, 0, 20), (-0.1611, 0.2775)),
    ((10, 10, 0, 20), (0.6791, 1.0000)),
    ((10, 10, 0, 10), (0.6075, 1.0000)),
]


@pytest.mark.parametrize(("counts", "interval"), PUBLISHED)
def test_newcombe_equals_the_published_examples(counts, interval):
    d = newcombe(*counts)
    k1, n1, k2, n2 = counts
    assert d.value == pytest.approx(k1 / n1 - k2 / n2)
    approx_close(
        [d.low, d.high], interval, PRINTED, why="Newcombe (1998) Table II is printed to 4 decimals"
    )


def test_newcombe_is_built_from_scipys_wilson_intervals():
    k1, n1, k2, n2 = 17, 40, 31, 45
    ci1 = binomtest(k1, n1).proportion_ci(0.9, method="wilson")
    ci2 = binomtest(k2, n2).proportion_ci(0.9, method="wilson")
    p1, p2 = k1 / n1, k2 / n2
    d = newcombe(k1, n1, k2, n2, confidence=0.9)
    assert d.low == pytest.approx(p1 - p2 - math.hypot(p1 - ci1.low, ci2.high - p2))
    assert d.high == pytest.approx(p1 - p2 + math.hypot(ci1.high - p1, p2 - ci2.low))
    assert not d.excludes_zero if d.low < 0 < d.high else d.excludes_zero


def test_an_empty_group_gives_nan_and_reports_nothing():
    d = newcombe(0, 0, 3, 10)
    assert math.isnan(d.value) and math.isnan(d.low) and not d.excludes_zero
    assert math.isnan(wilson(0, 0)[0])


def test_a_clear_difference_excludes_zero_both_ways():
    assert newcombe(40, 50, 10, 50).excludes_zero
    assert newcombe(10, 50, 40, 50).excludes_zero
    assert isinstance(newcombe(10, 50, 40, 50), Difference)
