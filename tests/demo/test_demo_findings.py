"""The chain-of-embedding findings on the shipped demo model (numbers in the README and notebook 01).

Each assertion is a claim of the paper checked on the demo world's language-prior benchmark, with the
world's ground truth (counterfactual items, the prior colour) standing in for the paper's curated data.
"""

from __future__ import annotations

import pytest

import interp
from interp.datasets import demo_world
from interp.studies.coe import chain_of_embedding, diagnose, vip_rules_table


@pytest.fixture(scope="module")
def diag():
    vlm = interp.load("demo")
    samples = demo_world("test", n=600, qtypes=["color"])
    return diagnose(chain_of_embedding(vlm, samples, batch_size=32, progress_bar=False))


def test_automatic_rule_finds_a_vip(diag):
    assert diag.vip_method == "automatic"
    assert 1 < diag.vip < diag.n_layers
    assert diag.detector.p_values_[diag.vip] < 1e-6


def test_every_vip_rule_finds_the_rise_at_layers_7_to_8(diag):
    """Eq. 9 takes layer 7, where the gap first rises (a fifth of its largest value); the
    effect, jump and change-point rules take layer 8, where it jumps (docs/vip_rules.md)."""
    table = vip_rules_table(diag).set_index("rule")
    gap = diag.distances[diag.in_vt].mean(0) - diag.distances[~diag.in_vt].mean(0)
    assert gap[1:7].max() < 0.2 * gap.max() < gap[8]
    assert table.loc["eq9", "vip"] == diag.vip
    assert set(table["vip"]) <= {7, 8}
    assert list(table.loc[["effect", "jump", "changepoint"], "vip"]) == [8, 8, 8]


def test_post_vip_tvi_tracks_correctness_better_than_pre_vip(diag):
    table = diag.correlations().set_index("score")
    post, pre = table.loc["TVI (post-VIP)", "rho"], table.loc["TVI (pre-VIP)", "rho"]
    assert post > 0.2 and table.loc["TVI (post-VIP)", "p_value"] < 1e-6
    assert post > pre + 0.15


def test_tvi_is_lower_where_the_model_answers_from_the_prior(diag):
    frame = diag.to_frame()
    cf = frame[frame["counterfactual"] == True]  # noqa: E712
    prior_driven = cf["answer_full"] == cf["prior_answer"]
    from_image = cf["correct"] == 1
    assert prior_driven.sum() >= 10 and from_image.sum() >= 10
    assert cf.loc[prior_driven, "tvi"].mean() < 0.7 * cf.loc[from_image, "tvi"].mean()
