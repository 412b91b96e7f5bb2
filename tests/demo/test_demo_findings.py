"""The chain-of-embedding findings on the shipped demo model (numbers in the README and notebook 01).

Each assertion is a claim of the paper checked on the demo world's language-prior benchmark, with the
world's ground truth (counterfactual items, the prior colour) standing in for the paper's curated data.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from scipy.stats import norm, spearmanr, ttest_ind

import interp
from interp.datasets import demo_world
from interp.studies.coe import chain_of_embedding, diagnose, vip_rules_table


@pytest.fixture(scope="module")
def diag():
    vlm = interp.load("demo")
    samples = demo_world("test", n=600, qtypes=["color"])
    return diagnose(chain_of_embedding(vlm, samples, batch_size=32, progress_bar=False))


def test_automatic_rule_finds_a_vip(diag):
    assert diag.vip_method == "automatic" and diag.vip_rule == "changepoint"
    assert 1 < diag.vip < diag.n_layers
    assert diag.detector.p_values_[diag.vip] < 1e-6


def test_default_rule_is_the_change_point_of_the_gap_at_layer_8(diag):
    """The default rule recomputed here: the two-segment constant fit of the gap with the least
    squared error splits before layer 8, the gap rises there, and the Welch statistic (scipy)
    passes the floor z(1 - 0.05 / (L - 2))."""
    d, in_vt = diag.distances, diag.in_vt
    gap = d[in_vt].mean(0) - d[~in_vt].mean(0)
    n_layers = d.shape[1] - 1
    sse = {
        k: ((gap[1:k] - gap[1:k].mean()) ** 2).sum() + ((gap[k:] - gap[k:].mean()) ** 2).sum()
        for k in range(2, n_layers)
    }
    split = min(sse, key=sse.__getitem__)
    assert split == 8 and gap[8:].mean() > gap[1:8].mean()
    welch = ttest_ind(d[in_vt, 8], d[~in_vt, 8], equal_var=False).statistic
    assert welch >= norm.isf(0.05 / (n_layers - 2))
    assert diag.vip == 8
    np.testing.assert_allclose(diag.tvi, d[:, 8:].mean(1), rtol=1e-12)
    scored = ~np.isnan(diag.correct)
    rho = spearmanr(d[scored, 8:].mean(1), diag.correct[scored]).statistic
    post = diag.correlations().set_index("score").loc["TVI (post-VIP)", "rho"]
    assert post == pytest.approx(rho)


def test_every_vip_rule_finds_the_rise_at_layers_7_to_8(diag):
    """Eq. 9 (the paper's rule) takes layer 7, where the gap first rises (a fifth of its largest
    value); the effect, jump and change-point rules take layer 8, where it jumps
    (docs/vip_rules.md)."""
    table = vip_rules_table(diag).set_index("rule")
    gap = diag.distances[diag.in_vt].mean(0) - diag.distances[~diag.in_vt].mean(0)
    assert gap[1:7].max() < 0.2 * gap.max() < gap[8]
    assert table.loc["eq9", "vip"] == 7
    assert table.loc["changepoint", "vip"] == diag.vip
    assert list(table.loc[["effect", "jump", "changepoint"], "vip"]) == [8, 8, 8]


def test_post_vip_tvi_tracks_correctness_better_than_pre_vip(diag):
    table = diag.correlations().set_index("score")
    post, pre = table.loc["TVI (post-VIP)", "rho"], table.loc["TVI (pre-VIP)", "rho"]
    assert post > 0.2 and table.loc["TVI (post-VIP)", "p_value"] < 1e-6
    assert post > pre + 0.1  # 0.416 vs 0.265 on the shipped checkpoint
    # At Eq. 9's VIP (layer 7), one layer earlier, the pre-VIP aggregate tracks it less still.
    eq9 = diagnose(diag.coe, rule="eq9").correlations().set_index("score")
    assert eq9.loc["TVI (post-VIP)", "rho"] > eq9.loc["TVI (pre-VIP)", "rho"] + 0.2


def test_tvi_is_lower_where_the_model_answers_from_the_prior(diag):
    frame = diag.to_frame()
    cf = frame[frame["counterfactual"] == True]  # noqa: E712
    prior_driven = cf["answer_full"] == cf["prior_answer"]
    from_image = cf["correct"] == 1
    assert prior_driven.sum() >= 10 and from_image.sum() >= 10
    assert cf.loc[prior_driven, "tvi"].mean() < 0.7 * cf.loc[from_image, "tvi"].mean()


def test_the_audit_section_names_the_vip_rule_it_used(tmp_path):
    """The coe section of ``interp audit`` says which rule gave its VIP and where Eq. 9 puts it,
    and marks the rule in its table; both layers recomputed here with numpy / scipy from the
    section's own (stored) chain of embedding."""
    from interp.studies.audit.registry import AuditOptions
    from interp.studies.coe.audit import STUDY

    vlm = interp.load("demo")
    chosen = list(STUDY.select(demo_world("test", n=120, qtypes=["color"])).samples)
    opts = AuditOptions(batch_size=32, store=tmp_path)
    sec = STUDY.section(vlm, chosen, opts)
    coe = chain_of_embedding(
        vlm, chosen, max_new_tokens=opts.max_new_tokens, store=tmp_path / "coe", progress_bar=False
    )  # resumed from the section's store
    d, in_vt = coe.distance("cosine"), coe.agreement()
    vt, t = d[in_vt], d[~in_vt]
    gap = vt.mean(0) - t.mean(0)
    welch = np.r_[0.0, ttest_ind(vt[:, 1:], t[:, 1:], equal_var=False).statistic]
    n_layers = d.shape[1] - 1
    z = norm.isf(0.05 / (n_layers - 2))
    candidates = range(2, n_layers)
    sse = {
        k: ((gap[1:k] - gap[1:k].mean()) ** 2).sum() + ((gap[k:] - gap[k:].mean()) ** 2).sum()
        for k in candidates
    }
    changepoint = min(sse, key=sse.__getitem__)
    assert welch[changepoint] >= z and gap[changepoint:].mean() > gap[1:changepoint].mean()
    eq9 = next(k for k in candidates if welch[k] >= 2 * welch[1:k].mean() and welch[k] >= z)
    assert (changepoint, eq9) == (8, 7)  # as on the 600 items
    assert sec.numbers["vip"] == changepoint
    assert (
        f"The image is integrated from layer {changepoint} of {n_layers} on (the Visual "
        "Integration Point by rule 'changepoint', the first layer of the second segment"
    ) in sec.verdict
    assert f"Eq. 9, the paper's rule, gives layer {eq9})" in sec.verdict
    caption, html = sec.tables[-1]
    assert caption.startswith("The VIP under each automatic rule (used here: 'changepoint'")
    rows = re.findall(r"<tr>\s*<td>(\w+)</td>\s*<td>(\w*)</td>\s*<td>(\w+)</td>", html)
    assert rows == [("eq9", "", str(eq9))] + [
        (r, "yes" if r == "changepoint" else "", str(changepoint))
        for r in ("effect", "jump", "changepoint")
    ]
