"""The decoding study's ranking of methods (compare_methods, DecodingRuns.comparisons): accuracy
with paired bootstrap intervals of each difference, questions about one image resampled together.
Planted effects and nulls on simulated answers (the truth: plain averages of a very large sample of
the same process), the columns against scikit-learn and a brute-force cluster bootstrap, and the
runs of the demo model grouped by image."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import accuracy_score

import interp
from interp.datasets import demo_world
from interp.errors import EmptyInputError
from interp.studies.decoding import evaluate_decoding
from interp.studies.decoding.analysis import compare_methods


def _answers(rng: np.random.Generator, images: int, per_image: int, gap: float):
    """Correctness of greedy, a method ``same`` (greedy's accuracy, by symmetry of its image-level
    preference ``u``) and a method ``better`` (log-odds raised by ``gap``), on ``images ×
    per_image`` questions; every image has a difficulty all methods share."""
    c = np.repeat(np.arange(images), per_image)
    base = rng.normal(size=images)[c]
    u = rng.normal(scale=1.5, size=images)[c]
    n = images * per_image

    def answered(logit: np.ndarray) -> np.ndarray:
        return rng.random(n) < 1 / (1 + np.exp(-logit))

    return {
        "greedy": answered(base - u),
        "same": answered(base + u),
        "better": answered(base + gap),
    }, c


REPS, N_BOOT = 100, 300


def test_a_null_is_no_difference_at_the_level_and_a_planted_gain_is_covered_and_found():
    big, _ = _answers(np.random.default_rng(0), images=400_000, per_image=2, gap=1.5)
    truth = big["better"].mean() - big["greedy"].mean()  # the planted gain, by plain averaging
    rng = np.random.default_rng(31)
    false_positive = covered = found = 0
    for rep in range(REPS):
        correct, c = _answers(rng, images=60, per_image=2, gap=1.5)
        ranked = compare_methods(correct, c, n_boot=N_BOOT, seed=rep).set_index("method")
        false_positive += ranked.loc["same", "verdict"] != "no difference"
        better = ranked.loc["better"]
        covered += better["vs_baseline_low"] <= truth <= better["vs_baseline_high"]
        found += better["verdict"] == "higher"
    assert false_positive / REPS <= 0.10, "a method equal to greedy is called different too often"
    assert covered / REPS >= 0.90
    assert found / REPS >= 0.70


def test_the_columns_are_accuracies_and_paired_differences():
    rng = np.random.default_rng(4)
    correct, c = _answers(rng, images=40, per_image=2, gap=0.8)
    correct["copy"] = correct["greedy"].copy()
    ranked = compare_methods(correct, c, n_boot=4000, seed=2)
    truth = np.ones(80, bool)  # correctness as predictions of an all-true truth
    acc = {m: accuracy_score(truth, v) for m, v in correct.items()}
    assert ranked["accuracy"].tolist() == sorted(acc.values(), reverse=True)
    row = ranked.set_index("method")
    for m in correct:
        assert row.loc[m, "accuracy"] == pytest.approx(acc[m])
        assert row.loc[m, "vs_baseline"] == pytest.approx(acc[m] - acc["greedy"])
    assert (row.loc["greedy", "verdict"], row.loc["copy", "verdict"]) == (
        "baseline",
        "no difference",
    )
    assert row.loc["copy", ["vs_baseline_low", "vs_baseline_high"]].tolist() == [0.0, 0.0]
    assert ranked["rank"].iloc[0] == "top" and set(ranked["n_clusters"]) == {40}
    # the interval of better - greedy against a brute-force cluster bootstrap (numpy, own stream)
    d = correct["better"].astype(float) - correct["greedy"].astype(float)
    per_image = np.array([d[c == k].sum() for k in range(40)])
    picks = np.random.default_rng(9).integers(0, 40, size=(4000, 40))
    brute = np.percentile(per_image[picks].sum(axis=1) / 80, [2.5, 97.5])
    got = row.loc["better", ["vs_baseline_low", "vs_baseline_high"]].to_numpy(float)
    np.testing.assert_allclose(got, brute, atol=0.02)
    with pytest.raises(EmptyInputError, match="same questions"):
        compare_methods({"greedy": [True, False], "vcd": [True]})


def test_the_runs_rank_each_setting_resampling_whole_images():
    vlm = interp.load("demo")
    pope = demo_world("test", n=24, seed=5, qtypes=["exist"])
    runs = evaluate_decoding(vlm, pope, ["greedy", "vcd"], seeds=(), max_new_tokens=3)
    assert runs.groups == [s.meta["group"] for s in pope]
    metrics = runs.metrics().set_index(["setting", "method"])
    for setting, rows in runs.settings.items():
        ranked = runs.comparisons(setting, n_boot=200)
        assert set(ranked["n"]) == {len(rows)}
        assert set(ranked["n_clusters"]) == {len({pope[i].meta["group"] for i in rows})}
        for r in ranked.itertuples():
            assert r.accuracy == pytest.approx(metrics.loc[(setting, r.method), "accuracy"])
    with pytest.raises(EmptyInputError, match="no sampled run"):
        runs.comparisons("adversarial", mode="sampled")
