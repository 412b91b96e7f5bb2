"""The clustered VIP two-sample test (probes.vip_clustered.clustered_two_sample_test): on distances
whose samples come in clusters (the wordings of one image, whose group mostly follows the image),
resampling whole clusters keeps the level where the paper's test (probes.vip.two_sample_test,
samples taken as independent) does not, and the interval covers a planted gap. No expected value
comes from the code under test: the planted gap is the generating process's own, and the interval
and p-values are checked against a brute-force cluster bootstrap written here."""

from __future__ import annotations

import numpy as np
import pytest

from probes import clustered_two_sample_test, two_sample_test
from probes.errors import EmptyGroupError, TooFewSamplesError, VIPParameterError
from probes.multiple import holm


def _draw(rng: np.random.Generator, clusters: int, size: int, gap: np.ndarray):
    """Distances ``[clusters × size, L+1]``: an image effect shared by the image's wordings (mostly
    shared across layers too), per-wording noise; each image leans to D_VT or D_T and each wording
    follows its image with probability 0.85 (so groups vary within an image). Membership does not
    depend on the image effect, so the expected gap D_VT − D_T is ``gap`` exactly."""
    width = len(gap)
    c = np.repeat(np.arange(clusters), size)
    n = clusters * size
    lean = rng.random(clusters) < 0.5
    in_vt = np.where(rng.random(n) < 0.85, lean[c], ~lean[c])
    effect = rng.normal(size=(clusters, 1)) + 0.5 * rng.normal(size=(clusters, width))
    d = 1.0 + effect[c] + 0.3 * rng.normal(size=(n, width)) + gap * in_vt[:, None]
    return d, in_vt, c


REPS, N_BOOT = 200, 1000
NULL = np.zeros(6)
PLANTED = np.array([0.0, 0.0, 0.2, 0.5, 1.5, 1.5])


def test_under_the_null_resampling_images_keeps_the_level_and_the_papers_test_does_not():
    rng = np.random.default_rng(31)
    clustered = family = paper = paper_family = 0
    for rep in range(REPS):
        d, vt, c = _draw(rng, clusters=40, size=4, gap=NULL)
        r = clustered_two_sample_test(d, vt, c, n_boot=N_BOOT, seed=rep)
        t = two_sample_test(d, vt)
        clustered += r.conclusive[3]
        family += r.significant.any()
        paper += t.p_value[3] < 0.05
        paper_family += (holm(t.p_value) < 0.05).any()
    rates = {
        "clustered, one layer": clustered / REPS,
        "clustered, any layer after Holm": family / REPS,
        "paper's, one layer": paper / REPS,
        "paper's, any layer after Holm": paper_family / REPS,
    }
    print(rates)
    assert rates["clustered, one layer"] <= 0.10, rates
    assert rates["clustered, any layer after Holm"] <= 0.10, rates
    assert rates["paper's, one layer"] > 0.10, rates
    assert rates["paper's, any layer after Holm"] > 0.10, rates


def test_the_interval_covers_a_planted_gap_and_holm_finds_the_large_ones():
    rng = np.random.default_rng(32)
    covered = np.zeros(len(PLANTED))
    found = np.zeros(len(PLANTED))
    for rep in range(REPS):
        d, vt, c = _draw(rng, clusters=40, size=4, gap=PLANTED)
        r = clustered_two_sample_test(d, vt, c, n_boot=N_BOOT, seed=rep)
        covered += (r.low <= PLANTED) & (PLANTED <= r.high)
        found += r.significant
        assert (r.n, r.n_clusters) == (160, 40)
        assert r.n_vt == vt.sum() and r.n_t == (~vt).sum()
        np.testing.assert_allclose(r.difference, d[vt].mean(axis=0) - d[~vt].mean(axis=0))
    print("coverage per layer", covered / REPS, "found", found / REPS)
    assert (covered / REPS >= 0.90).all(), covered / REPS
    assert (found[4:] / REPS >= 0.8).all(), "a gap of 1.3 sds of the image effect should be found"
    assert (found[:2] / REPS <= 0.10).all()


def _brute_force(d, vt, c, n_boot, seed, ci=0.95):
    """The cluster bootstrap written out: draw clusters (in order of first appearance) with
    replacement, take their samples, recompute both group means."""
    order = list(dict.fromkeys(c.tolist()))
    members = [np.flatnonzero(c == k) for k in order]
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(n_boot):
        pick = rng.integers(0, len(members), len(members))
        rows = np.concatenate([members[j] for j in pick])
        dv, g = d[rows], vt[rows]
        if g.all() or not g.any():
            continue
        draws.append(dv[g].mean(axis=0) - dv[~g].mean(axis=0))
    draws = np.array(draws)
    low, high = np.quantile(draws, [(1 - ci) / 2, (1 + ci) / 2], axis=0)
    below, above = (draws <= 0).sum(axis=0), (draws >= 0).sum(axis=0)
    p = np.minimum(1, 2 * (1 + np.minimum(below, above)) / (len(draws) + 1))
    return low, high, p, len(draws)


def test_the_interval_and_p_values_are_a_cluster_bootstrap_by_brute_force():
    rng = np.random.default_rng(5)
    d, vt, c = _draw(rng, clusters=12, size=4, gap=np.array([0.0, 0.2, 1.0]))
    labels = np.array([f"image-{k}" for k in c], dtype=object)[::-1]  # labels, not integers
    d, vt = d[::-1], vt[::-1]
    r = clustered_two_sample_test(d, vt, labels, n_boot=600, seed=9)
    low, high, p, used = _brute_force(d, vt, labels, 600, 9)
    np.testing.assert_allclose(r.low, low, rtol=1e-10)
    np.testing.assert_allclose(r.high, high, rtol=1e-10)
    np.testing.assert_allclose(r.p_value, p)
    assert r.n_used == used
    p_holm = holm(p)
    np.testing.assert_allclose(r.p_adjusted, p_holm)
    bh = clustered_two_sample_test(d, vt, labels, n_boot=600, seed=9, correction="bh")
    np.testing.assert_allclose(bh.p_value, p)
    assert "p_bh" in bh.to_frame().columns
    frame = r.to_frame()
    assert list(frame.columns[:4]) == ["mean_vt", "mean_t", "gap", "gap_low"]
    assert (frame["n_clusters"] == 12).all()
    again = clustered_two_sample_test(d, vt, labels, n_boot=600, seed=9)
    assert np.array_equal(r.low, again.low) and np.array_equal(r.p_value, again.p_value)


def test_without_clusters_every_sample_is_its_own_and_a_flat_layer_has_p_one():
    rng = np.random.default_rng(6)
    d, vt, _ = _draw(rng, clusters=10, size=3, gap=np.array([0.0, 0.5, 0.5]))
    d[:, 0] = 0.0  # index 0: identical embeddings with and without the image
    r = clustered_two_sample_test(d, vt, n_boot=500)
    assert (r.n, r.n_clusters) == (30, 30)
    assert (r.low[0], r.high[0], r.p_value[0]) == (0.0, 0.0, 1.0)
    assert "30 samples taken as independent" in r.unit
    assert r.words(1).count("[") == 1 and "Holm p " in r.words(1)
    far = clustered_two_sample_test(d + 5.0 * vt[:, None], vt, n_boot=500)  # no resample near 0
    assert f"Holm p ≤ {3 * 2 / 501:.2g}" in far.words(2)


def test_bad_input_is_refused_with_typed_errors():
    d = np.abs(np.random.default_rng(0).normal(size=(8, 4)))
    vt = np.array([1, 1, 0, 0, 1, 0, 1, 0], dtype=bool)
    with pytest.raises(EmptyGroupError):
        clustered_two_sample_test(d, np.ones(8, dtype=bool))
    with pytest.raises(TooFewSamplesError, match="2 clusters"):
        clustered_two_sample_test(d, vt, ["a"] * 8)
    with pytest.raises(ValueError, match="7 labels for 8"):
        clustered_two_sample_test(d, vt, list("abcdabc"))
    with pytest.raises(VIPParameterError, match="n_boot >= 160"):
        clustered_two_sample_test(d, vt, n_boot=100)
    with pytest.raises(VIPParameterError, match="unknown correction"):
        clustered_two_sample_test(d, vt, correction="bonferroni")  # type: ignore[arg-type]
    with pytest.raises(VIPParameterError, match="ci"):
        clustered_two_sample_test(d, vt, ci=95)
    # one image holds every D_VT sample: resamples without it are left out, not errors
    r = clustered_two_sample_test(d, vt, ["x" if v else f"y{i}" for i, v in enumerate(vt)])
    assert r.n_clusters_vt == 1 and r.n_clusters_t == 4 and r.n_used < r.n_boot
