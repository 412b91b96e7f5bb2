"""Paired comparisons (probes.inference.paired_comparison): two methods' correctness on the same
questions, where questions come in clusters (the questions about one image). Planted effects and
nulls; no expected value comes from the code under test (the planted difference is the mean of a
very large sample of the same process; the item-level interval is checked against a brute-force
percentile bootstrap)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from probes.errors import TooFewSamplesError
from probes.inference import clustered_auroc, clustered_mean, paired_comparison


def _draw(rng: np.random.Generator, clusters: int, size: int, gap: float):
    """Correctness of methods A and B on ``clusters × size`` questions: each cluster (image) has a
    difficulty shared by both methods and an image-level preference ``u`` for A over B (so the
    paired differences are correlated within a cluster); ``gap`` raises A's log-odds (0: the
    methods are equally accurate, by symmetry)."""
    c = np.repeat(np.arange(clusters), size)
    u = rng.normal(scale=1.5, size=clusters)[c]
    base = rng.normal(size=clusters)[c]
    p_a = 1 / (1 + np.exp(-(base + gap + u)))
    p_b = 1 / (1 + np.exp(-(base - u)))
    n = clusters * size
    return (rng.random(n) < p_a).astype(float), (rng.random(n) < p_b).astype(float), c


REPS, N_BOOT = 120, 300


def test_under_the_null_resampling_whole_clusters_keeps_the_level_and_items_do_not():
    rng = np.random.default_rng(21)
    clustered = itemwise = 0
    for rep in range(REPS):
        a, b, c = _draw(rng, clusters=30, size=4, gap=0.0)
        clustered += paired_comparison(a, b, c, n_boot=N_BOOT, seed=rep).conclusive
        itemwise += paired_comparison(a, b, n_boot=N_BOOT, seed=rep).conclusive
    assert clustered / REPS <= 0.10, "the clustered interval excludes a true 0 too often"
    assert itemwise / REPS > 0.10, "the null should defeat the item-level bootstrap here"


def test_the_clustered_interval_covers_a_planted_difference_and_detects_it():
    truth_a, truth_b, _ = _draw(np.random.default_rng(0), clusters=400_000, size=4, gap=1.5)
    truth = truth_a.mean() - truth_b.mean()  # the process's accuracy gap, by plain averaging
    rng = np.random.default_rng(22)
    covered = detected = 0
    for rep in range(REPS):
        a, b, c = _draw(rng, clusters=40, size=4, gap=1.5)
        r = paired_comparison(a, b, c, n_boot=N_BOOT, seed=rep)
        covered += r.low <= truth <= r.high
        detected += r.low > 0
        assert r.n == 160 and r.n_clusters == 40
        assert r.value == pytest.approx(a.mean() - b.mean())
    assert covered / REPS >= 0.90
    assert detected / REPS >= 0.7, "a 23-point gap on 40 images should mostly be found"


def test_the_item_level_interval_is_a_paired_percentile_bootstrap():
    rng = np.random.default_rng(3)
    a, b = rng.random(80) < 0.7, rng.random(80) < 0.5
    r = paired_comparison(a, b, n_boot=4000, seed=1)
    d = a.astype(float) - b.astype(float)
    draws = rng.integers(0, 80, size=(4000, 80))  # brute force: resample items, keep pairs
    low, high = np.percentile(d[draws].mean(axis=1), [2.5, 97.5])
    assert r.low == pytest.approx(low, abs=0.02) and r.high == pytest.approx(high, abs=0.02)
    assert (r.n, r.n_clusters) == (80, 80)
    assert paired_comparison(a, b, n_boot=500, seed=5) == paired_comparison(
        a, b, n_boot=500, seed=5
    )


def test_identical_answers_are_no_difference_and_bad_input_is_refused():
    same = paired_comparison([1, 0, 1, 1], [1, 0, 1, 1], ["x", "x", "y", "y"])
    assert (same.value, same.low, same.high) == (0.0, 0.0, 0.0) and not same.conclusive
    assert same.words(scale=100) == "+0.0 [+0.0, +0.0]; no difference"
    assert same.n_clusters == 2
    with pytest.raises(ValueError, match="one value per item"):
        paired_comparison([1, 0, 1], [1, 0])
    with pytest.raises(ValueError, match="NaN"):
        paired_comparison([1.0, np.nan], [1.0, 0.0])
    with pytest.raises(TooFewSamplesError):
        paired_comparison([1.0, 0.0], [0.0, 0.0], ["x", "x"])
    with pytest.raises(TooFewSamplesError):
        paired_comparison([1.0], [0.0])


def test_a_clustered_mean_covers_the_planted_accuracy():
    big, _, _ = _draw(np.random.default_rng(0), clusters=400_000, size=4, gap=0.0)
    truth = big.mean()
    rng = np.random.default_rng(23)
    covered = 0
    for rep in range(REPS):
        a, _, c = _draw(rng, clusters=30, size=4, gap=0.0)
        r = clustered_mean(a, c, n_boot=N_BOOT, seed=rep)
        covered += r.low <= truth <= r.high
        assert r.value == pytest.approx(a.mean()) and r.n_clusters == 30
    assert covered / REPS >= 0.90


def _scored(rng: np.random.Generator, clusters: int, size: int, shift: float):
    """Answers in clusters whose label is the cluster's (an image's wordings share it) and
    whose score carries a cluster effect; positives' scores are raised by ``shift``."""
    c = np.repeat(np.arange(clusters), size)
    y = np.repeat(np.arange(clusters) % 2 == 0, size)
    s = rng.normal(size=clusters)[c] + 0.3 * rng.normal(size=clusters * size) + shift * y
    return s, y, c


def test_a_clustered_auroc_keeps_its_level_and_covers_a_planted_auroc():
    rng = np.random.default_rng(24)
    clustered = itemwise = 0
    for rep in range(REPS):
        s, y, c = _scored(rng, clusters=12, size=4, shift=0.0)
        r = clustered_auroc(s, y, c, n_boot=N_BOOT, seed=rep)
        clustered += not r.low <= 0.5 <= r.high
        itemwise += not (lambda q: q.low <= 0.5 <= q.high)(
            clustered_auroc(s, y, n_boot=N_BOOT, seed=rep)
        )
        assert r.value == pytest.approx(roc_auc_score(y, s))
    assert clustered / REPS <= 0.10, "the clustered AUROC interval excludes chance too often"
    assert itemwise / REPS > 0.10, "the null should defeat the answer-level bootstrap here"
    big_s, big_y, _ = _scored(np.random.default_rng(0), clusters=4000, size=4, shift=1.0)
    truth = roc_auc_score(big_y, big_s)  # the process's AUROC, by scikit-learn
    covered = 0
    for rep in range(REPS):
        s, y, c = _scored(rng, clusters=40, size=4, shift=1.0)
        r = clustered_auroc(s, y, c, n_boot=N_BOOT, seed=rep)
        covered += r.low <= truth <= r.high
    assert covered / REPS >= 0.90
