"""Grounded vs prior answers and the rank agreement of two attribution maps: answer groups follow
the demo world's own labels; the per-sample rank agreement equals scipy's Spearman correlation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

import interp
from interp.datasets import demo_world
from interp.errors import RegionError
from interp.studies.attribute import Attribution, answer_group, rank_agreement
from interp.testing.tolerance import assert_close


def test_answer_groups_follow_the_worlds_truth_and_prior_labels():
    items = demo_world("test", n=40, qtypes=["color"])
    flipped = [s for s in items if s.meta["counterfactual"]]
    plain = [s for s in items if not s.meta["counterfactual"]]
    assert flipped and plain
    for s in items:
        assert answer_group(s, s.answer) == "grounded"
        assert answer_group(s, f" {s.answer.upper()} .") == "grounded"  # first word, any case
        assert answer_group(s, "") == "other"
    for s in flipped:
        assert s.meta["prior_answer"] != s.answer
        assert answer_group(s, s.meta["prior_answer"]) == "prior"
        assert answer_group(s, "nothing") == "other"
    wrong = next(c for c in ("red", "blue") if c != plain[0].answer)
    assert answer_group(plain[0], wrong) == "other"  # no prior to follow: just wrong
    outside = interp.Sample(question="what colour is it?", answer="red")
    assert answer_group(outside, "red") == "unlabelled"  # no counterfactual flag
    assert answer_group(interp.Sample(question="q", meta={"counterfactual": True}), "x") == (
        "unlabelled"
    )


def _result(method: str, scores: np.ndarray, ids: list[str]) -> Attribution:
    n = len(ids)
    return Attribution(
        method=method,
        scores=scores,
        base=np.zeros(n),
        region_boxes=[],
        regions=[],
        groups=[],
        sample_ids=ids,
        questions=[""] * n,
        answers=[""] * n,
        settings={},
    )


def test_rank_agreement_is_scipys_spearman_per_sample():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(6, 16))
    b = a + rng.normal(scale=1.0, size=a.shape)
    b[1] = np.round(b[1])  # ties
    a[2] = -b[2]  # perfectly reversed
    b[3] = 1.0  # constant: undefined
    ids = [f"s{i}" for i in range(6)]
    got = rank_agreement(_result("gradient", a, ids), _result("occlusion", b, ids))
    assert list(got["sample_id"]) == ids and set(got["method"]) == {"gradient"}
    for i in range(6):
        if i == 3:
            assert np.isnan(got["spearman"][i])
            continue
        want = spearmanr(a[i], b[i]).statistic
        # float64 rounding, ε·S with S = 1 (a correlation): 1e-10, 100x the old bare 1e-12, the
        # rule's one float64 bound rather than one tuned to this machine's order of sums
        assert_close(got["spearman"][i], want)
    assert got["spearman"][2] == pytest.approx(-1.0)
    with pytest.raises(RegionError, match="same samples"):
        rank_agreement(_result("gradient", a[:5], ids[:5]), _result("occlusion", b, ids))
