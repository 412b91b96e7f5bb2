"""Statistics against scipy / sklearn / brute-force references."""

from __future__ import annotations

import statistics
import warnings

import numpy as np
import pytest
import torch
from jaxtyping import TypeCheckError
from scipy import stats as sps
from sklearn.metrics import average_precision_score, roc_auc_score

from interp.errors import EmptyGroupError, TooFewSamplesError
from interp.testing import refused
from interp.testing.tolerance import approx_close, assert_close
from probes import (
    ConstantInputWarning,
    Estimate,
    auprc,
    auroc,
    bootstrap_ci,
    cliffs_delta,
    cohens_d,
    estimate,
    mean_difference,
    spearman,
)

# Against scipy / sklearn / a hand formula, all in float64: rounding, ε·S = 1e-10 · max(|want|, 1)
# (the statistics here are at most 1 in size, so 1e-10). That is 100x the old bare 1e-12 (1e5x a
# bare 1e-15): the rule's one float64 bound, not one tuned to this machine's order of sums.

# --- Spearman -----------------------------------------------------------------------------


@pytest.mark.parametrize("n", [3, 7, 50, 400])
def test_spearman_matches_scipy_with_ties(n: int) -> None:
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n)
    y = (x + rng.standard_normal(n) > 0).astype(float)  # binary, like correctness: many ties
    if y.min() == y.max():
        y[0] = 1 - y[0]
    ref = sps.spearmanr(x, y)
    got = spearman(x, y)
    assert got.n == n
    assert_close(got.rho, ref.statistic)
    # a relative bound: the p-value spans hundreds of orders of magnitude (abs=0: one that
    # underflows to 0 must be 0 in both)
    assert got.p_value == pytest.approx(ref.pvalue, rel=1e-9, abs=0)


def test_spearman_no_ties_matches_textbook_formula() -> None:
    x = np.array([3.1, 0.2, 5.5, 4.0, 1.7, 9.9])
    y = np.array([2.0, 1.0, 6.0, 3.0, 5.0, 4.0])
    rank = lambda v: np.argsort(np.argsort(v)) + 1  # noqa: E731 (no ties here)
    d = rank(x) - rank(y)
    n = len(x)
    assert spearman(x, y).rho == pytest.approx(1 - 6 * np.sum(d**2) / (n * (n**2 - 1)))
    assert spearman(torch.tensor(x), list(y)).rho == pytest.approx(spearman(x, y).rho)


def test_spearman_perfect_monotone() -> None:
    x = np.arange(10.0)
    assert spearman(x, x**3).rho == 1.0 and spearman(x, x**3).p_value == 0.0
    assert spearman(x, -np.exp(x)).rho == -1.0


def test_spearman_errors_and_constant_policy() -> None:
    with pytest.raises(TooFewSamplesError, match="at least 3"):
        spearman([1.0, 2.0], [2.0, 1.0])
    with refused(ValueError, match="length"):
        spearman([1.0, 2.0, 3.0], [1.0, 2.0, 3.0, 4.0])
    with pytest.raises(ValueError, match="NaN"):
        spearman([1.0, np.nan, 3.0], [1.0, 2.0, 3.0])
    with pytest.warns(ConstantInputWarning, match="constant input"):
        res = spearman([1.0, 2.0, 3.0, 4.0], [1.0, 1.0, 1.0, 1.0])
    assert np.isnan(res.rho) and np.isnan(res.p_value) and res.n == 4


# --- bootstrap ----------------------------------------------------------------------------


def test_bootstrap_is_reproducible_by_seed() -> None:
    x = np.random.default_rng(0).standard_normal(50)
    a = bootstrap_ci(np.mean, x, n_boot=200, seed=7)
    assert a == bootstrap_ci(np.mean, x, n_boot=200, seed=7)
    assert a != bootstrap_ci(np.mean, x, n_boot=200, seed=8)
    assert a[0] < np.mean(x) < a[1]


def test_bootstrap_ci_covers_the_true_mean() -> None:
    rng = np.random.default_rng(11)
    true_mean, sims, hits = 2.0, 100, 0
    widths = []
    for s in range(sims):
        x = true_mean + rng.standard_normal(60)
        lo, hi = bootstrap_ci(np.mean, x, n_boot=300, ci=0.95, seed=s)
        hits += lo <= true_mean <= hi
        widths.append(hi - lo)
    # Nominal 95%; percentile intervals under-cover slightly at n = 60. Binomial sd ~ 2.2%.
    assert 0.86 <= hits / sims <= 1.0
    # Width close to the normal-theory 2 * 1.96 / sqrt(60).
    assert np.mean(widths) == pytest.approx(2 * 1.96 / np.sqrt(60), rel=0.1)


def test_bootstrap_resamples_rows_paired() -> None:
    x = np.random.default_rng(1).standard_normal(40)
    y = 3 * x + 1  # any paired resample keeps the exact linear relation
    lo, hi = bootstrap_ci(lambda a, b: np.corrcoef(a, b)[0, 1], x, y, n_boot=100)
    assert lo == pytest.approx(1.0) and hi == pytest.approx(1.0)


def test_bootstrap_strata_keep_group_sizes() -> None:
    g = np.r_[np.ones(7, bool), np.zeros(23, bool)]
    lo, hi = bootstrap_ci(lambda m: float(m.sum()), g, n_boot=100, strata=g)
    assert lo == hi == 7.0
    lo, hi = bootstrap_ci(lambda m: float(m.sum()), g, n_boot=300)  # unstratified: varies
    assert lo < 7.0 < hi


def test_bootstrap_errors() -> None:
    x = np.arange(10.0)
    with pytest.raises(ValueError, match="ci"):
        bootstrap_ci(np.mean, x, ci=95)
    with refused(ValueError, match="length"):
        bootstrap_ci(lambda a, b: 0.0, x, x[:5])
    with pytest.raises(TooFewSamplesError, match="at least 2"):
        bootstrap_ci(np.mean, x[:1])

    def always_degenerate(a: np.ndarray) -> float:
        raise TooFewSamplesError("degenerate")

    with pytest.raises(TooFewSamplesError, match="resamples"):
        bootstrap_ci(always_degenerate, x, n_boot=20)


# --- effect sizes -------------------------------------------------------------------------


def test_cohens_d_matches_hand_computation() -> None:
    a = [2.1, 3.4, 1.9, 5.0, 4.2]
    b = [1.0, 0.5, 2.2, 1.8]
    na, nb = len(a), len(b)
    pooled = ((na - 1) * statistics.variance(a) + (nb - 1) * statistics.variance(b)) / (na + nb - 2)
    expected = (statistics.fmean(a) - statistics.fmean(b)) / pooled**0.5
    assert cohens_d(a, b) == pytest.approx(expected, rel=1e-12)
    assert cohens_d(b, a) == pytest.approx(-expected, rel=1e-12)


def test_cliffs_delta_matches_brute_force_with_ties() -> None:
    rng = np.random.default_rng(5)
    a = rng.integers(0, 6, 37).astype(float)
    b = rng.integers(1, 7, 23).astype(float)
    greater = sum(1 for x in a for y in b if x > y)
    less = sum(1 for x in a for y in b if x < y)
    assert_close(cliffs_delta(a, b), (greater - less) / (len(a) * len(b)))
    # Cliff's delta = 2 AUROC - 1 with a as the positives (sklearn as the reference).
    labels = np.r_[np.ones(len(a)), np.zeros(len(b))]
    assert cliffs_delta(a, b) == pytest.approx(2 * roc_auc_score(labels, np.r_[a, b]) - 1)


def test_effect_size_cis_cover_the_population_value() -> None:
    rng = np.random.default_rng(2)
    a, b = 0.5 + rng.standard_normal(400), rng.standard_normal(400)
    d = cohens_d(a, b, ci=0.95, n_boot=300)
    assert isinstance(d, Estimate) and d.low < d.value < d.high
    assert d.low < 0.5 < d.high  # population d = 0.5
    diff = mean_difference(a, b, ci=0.95, n_boot=300)
    assert diff.value == pytest.approx(a.mean() - b.mean())
    assert diff.low < 0.5 < diff.high
    delta = cliffs_delta(a, b, ci=0.9, n_boot=300)
    true_delta = 2 * sps.norm.cdf(0.5 / np.sqrt(2)) - 1  # P(a > b) - P(a < b) for normals
    assert delta.low < true_delta < delta.high and delta.ci == 0.9
    assert float(delta) == delta.value


def test_cohens_d_constant_groups() -> None:
    assert cohens_d([0.7, 0.7, 0.7], [0.2, 0.2]) == np.inf
    assert cohens_d([0.2, 0.2], [0.7, 0.7, 0.7]) == -np.inf
    assert np.isnan(cohens_d([0.7, 0.7], [0.7, 0.7]))


def test_effect_size_errors() -> None:
    with pytest.raises(EmptyGroupError, match="group b is empty"):
        cliffs_delta([1.0, 2.0], [])
    with pytest.raises(TooFewSamplesError, match="group a has 1"):
        cohens_d([1.0], [1.0, 2.0, 3.0])


# --- AUROC / AUPRC ------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_auroc_auprc_match_sklearn_with_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    y = rng.random(120) < 0.3
    scores = np.round(y * 0.8 + rng.standard_normal(120), 1)  # rounding creates ties
    assert_close(auroc(scores, y), roc_auc_score(y, scores))
    assert_close(auprc(scores, y), average_precision_score(y, scores))
    assert_close(auroc(torch.tensor(scores), torch.tensor(y.astype(int))), roc_auc_score(y, scores))


def test_auprc_without_ties_matches_sklearn() -> None:
    rng = np.random.default_rng(9)
    y = rng.random(57) < 0.5
    s = rng.standard_normal(57) + y
    assert_close(auprc(s, y), average_precision_score(y, s))


def test_auroc_ci_and_errors() -> None:
    rng = np.random.default_rng(4)
    y = np.r_[np.ones(40, bool), np.zeros(60, bool)]
    s = y + rng.standard_normal(100)
    e = auroc(s, y, ci=0.95, n_boot=300, seed=3)
    assert e.value == pytest.approx(roc_auc_score(y, s))
    assert e.low < e.value < e.high <= 1.0
    assert e == auroc(s, y, ci=0.95, n_boot=300, seed=3)
    p = auprc(s, y, ci=0.95, n_boot=300)
    assert p.low < p.value < p.high
    with pytest.raises(EmptyGroupError, match="no positive"):
        auroc(s, np.zeros(100, bool))
    with pytest.raises(EmptyGroupError, match="no negative"):
        auprc(s, np.ones(100, bool))
    with pytest.raises(ValueError, match="binary"):
        auroc(s, np.arange(100) % 3)


def test_estimate_wraps_any_statistic() -> None:
    x = np.random.default_rng(6).standard_normal(80)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no stray warnings from the bootstrap loop
        e = estimate(np.median, x, n_boot=200, seed=1)
    assert e.value == np.median(x) and e.low <= e.value <= e.high


# --- means and rates with one small-sample rule (mean_ci, paired_difference, wilson, pearson) -----


def test_mean_ci_small_sample_rule():
    from probes.stats import mean_ci

    empty = mean_ci([])
    assert np.isnan(empty.value) and np.isnan(empty.low) and np.isnan(empty.high)
    one = mean_ci([0.7])
    assert one.value == 0.7 and np.isnan(one.low) and np.isnan(one.high)
    flat = mean_ci([1.0, 1.0, 1.0])
    assert flat.value == flat.low == flat.high == 1.0
    with pytest.raises(ValueError, match="NaN"):
        mean_ci([1.0, np.nan])


def test_mean_ci_matches_scipy_bootstrap():
    """The percentile interval agrees with scipy.stats.bootstrap to the Monte Carlo error of two
    independent sets of B resamples (another RNG)."""
    from scipy.stats import bootstrap, norm

    from probes.stats import mean_ci

    x = np.random.default_rng(3).normal(0.4, 1.0, 300)
    got = mean_ci(x, n_boot=4000, seed=1)
    ref = bootstrap((x,), np.mean, n_resamples=4000, method="percentile", random_state=1)
    assert got.value == pytest.approx(x.mean())
    # the q-quantile of B resamples has standard error sqrt(q(1−q)/B) / f(x_q), f the bootstrap
    # distribution's density, ≈ normal with sd s/√n; two independent ones differ by √2 of it.
    # 5 standard errors: ≈ 0.017 here (the old bare bound was 0.02)
    b, q = 4000, 0.025
    se = np.sqrt(q * (1 - q) / b) / norm.pdf(norm.ppf(q)) * x.std(ddof=1) / np.sqrt(len(x))
    why = f"percentile bootstrap, B={b} resamples each, other RNGs: 5·√2 Monte Carlo errors"
    approx_close(
        [got.low, got.high],
        [ref.confidence_interval.low, ref.confidence_interval.high],
        5 * np.sqrt(2) * se,
        why=why,
    )


def test_paired_difference_is_the_mean_of_differences():
    from probes.stats import mean_ci, paired_difference

    rng = np.random.default_rng(4)
    a, b = rng.normal(size=50), rng.normal(size=50)
    got = paired_difference(a, b, seed=2)
    assert got.value == pytest.approx(a.mean() - b.mean())
    assert (got.low, got.high) == (mean_ci(a - b, seed=2).low, mean_ci(a - b, seed=2).high)
    # refused by the function, or first by the suite's run-time shape check (" n" twice)
    with pytest.raises((ValueError, TypeCheckError)):
        paired_difference(a, b[:-1])


@pytest.mark.parametrize("k, n", [(0, 10), (3, 10), (10, 10), (57, 120)])
def test_wilson_against_the_closed_form(k, n):
    """Wilson's interval: (p + z²/2n ± z·sqrt(p(1−p)/n + z²/4n²)) / (1 + z²/n)."""
    from scipy.stats import norm

    from probes.stats import wilson

    z = norm.ppf(0.975)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    low, high = wilson(k, n)
    assert_close([low, high], [centre - half, centre + half])
    assert 0.0 <= low <= high <= 1.0
    assert all(np.isnan(v) for v in wilson(0, 0))


def test_pearson_against_scipy_and_its_nan_rule():
    from scipy.stats import pearsonr

    from probes.stats import pearson

    rng = np.random.default_rng(5)
    a = rng.normal(size=40)
    b = a + rng.normal(size=40)
    assert_close(pearson(a, b), pearsonr(a, b).statistic)
    assert np.isnan(pearson([1.0], [2.0])) and np.isnan(pearson([1.0, 1.0], [1.0, 2.0]))
