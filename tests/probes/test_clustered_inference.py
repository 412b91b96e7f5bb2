"""Clustered inference for rank correlations (probes.stats.clustered_spearman): on data whose
pairs come in clusters (the wordings of one image), the cluster bootstrap keeps its level where
the pair-level bootstrap does not. Planted effects and nulls; no expected value comes from the
code under test (the planted ρ is scipy's on a very large sample of the same process)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from probes import clustered_spearman


def _draw(rng: np.random.Generator, clusters: int, size: int, beta: float):
    """Pairs in clusters: a cluster effect on x and on y (shared within a cluster) plus
    per-pair noise; y depends on x through ``beta`` (0: independent)."""
    c = np.repeat(np.arange(clusters), size)
    x = rng.normal(size=clusters)[c] + 0.5 * rng.normal(size=clusters * size)
    y = beta * x + rng.normal(size=clusters)[c] + 0.5 * rng.normal(size=clusters * size)
    return x, y, c


REPS, N_BOOT = 120, 300


def test_under_the_null_the_cluster_bootstrap_keeps_its_level_and_the_pair_bootstrap_does_not():
    rng = np.random.default_rng(11)
    clustered = pairwise = 0
    for rep in range(REPS):
        x, y, c = _draw(rng, clusters=30, size=4, beta=0.0)
        clustered += clustered_spearman(x, y, c, n_boot=N_BOOT, seed=rep).conclusive
        pairwise += clustered_spearman(x, y, n_boot=N_BOOT, seed=rep).conclusive
    assert clustered / REPS <= 0.10, "the clustered interval excludes a true 0 too often"
    assert pairwise / REPS > 0.10, "the null should defeat the pair-level bootstrap here"


def test_the_cluster_bootstrap_covers_a_planted_correlation():
    rng = np.random.default_rng(12)
    big_x, big_y, _ = _draw(np.random.default_rng(0), clusters=200_000, size=4, beta=0.6)
    truth = stats.spearmanr(big_x, big_y).statistic  # the process's ρ, by scipy
    covered = 0
    for rep in range(REPS):
        x, y, c = _draw(rng, clusters=40, size=4, beta=0.6)
        r = clustered_spearman(x, y, c, n_boot=N_BOOT, seed=rep)
        covered += r.low <= truth <= r.high
        assert r.n == 160 and r.n_clusters == 40
    assert covered / REPS >= 0.90


def test_clustered_spearman_checks_its_input():
    with pytest.raises(ValueError, match="differ in length"):
        clustered_spearman([1.0, 2.0, 3.0], [1.0, 2.0])
    r = clustered_spearman([1.0, 2.0, 3.0, 4.0], [1.0, 3.0, 2.0, 4.0], ["a", "a", "b", "b"])
    assert r.rho == pytest.approx(stats.spearmanr([1, 2, 3, 4], [1, 3, 2, 4]).statistic)
