"""Multiple-comparison corrections (probes.multiple): Holm against closed testing with Bonferroni
local tests enumerated over every subset (the definition Holm's step-down shortcut computes), and
Benjamini–Hochberg against its step-up formula written out."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from probes.multiple import adjust, benjamini_hochberg, holm


def _closed_testing(p: list[float]) -> list[float]:
    """Adjusted p-value of hypothesis i: the largest, over every subset S holding i, of the
    Bonferroni test of the intersection of S, ``min(1, |S| · min_{j in S} p_j)``."""
    m = len(p)
    out = []
    for i in range(m):
        worst = 0.0
        for size in range(1, m + 1):
            for subset in itertools.combinations(range(m), size):
                if i in subset:
                    worst = max(worst, min(1.0, size * min(p[j] for j in subset)))
        out.append(worst)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_holm_is_closed_testing_with_bonferroni(seed: int):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 8))
    p = rng.choice([0.001, 0.01, 0.02, 0.04, 0.2, 0.5], size=m) * rng.uniform(0.5, 1.5, m)
    if m > 2:
        p[1] = p[0]  # a tie
    np.testing.assert_allclose(holm(p), _closed_testing(p.tolist()), rtol=1e-12)


def test_holm_leaves_nan_out_of_the_family():
    p = np.array([0.01, np.nan, 0.04, 0.03])
    out = holm(p)
    assert np.isnan(out[1])
    np.testing.assert_allclose(out[[0, 2, 3]], _closed_testing([0.01, 0.04, 0.03]))
    assert holm([]).shape == (0,)


def test_benjamini_hochberg_is_the_step_up_formula():
    rng = np.random.default_rng(3)
    p = rng.uniform(0, 0.1, 9)
    m = len(p)
    order = np.argsort(p)
    ranked = p[order] * m / np.arange(1, m + 1)
    step_up = np.minimum(1, np.minimum.accumulate(ranked[::-1])[::-1])
    expected = np.empty(m)
    expected[order] = step_up
    np.testing.assert_allclose(benjamini_hochberg(p), expected, rtol=1e-12)
    with_nan = benjamini_hochberg(np.r_[p, np.nan])
    np.testing.assert_allclose(with_nan[:-1], expected, rtol=1e-12)
    assert np.isnan(with_nan[-1])


def test_adjust_by_name_and_refusals():
    p = [0.01, 0.02, 0.5]
    np.testing.assert_allclose(adjust(p, "holm"), _closed_testing(p))
    np.testing.assert_allclose(adjust(p, "none"), p)
    with pytest.raises(ValueError, match="unknown correction"):
        adjust(p, "bonferroni")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        holm([0.2, 1.5])
