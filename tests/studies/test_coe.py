"""Chain of embedding, the result store and the diagnosis, on tiny models."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from matplotlib.figure import Figure
from scipy.spatial.distance import cosine as scipy_cosine
from scipy.stats import spearmanr

import interp
import interp.generation
from interp.errors import NoVIPError, UnknownVIPRuleError
from interp.store import ResultStore
from interp.studies.coe import (
    chain_of_embedding,
    compare_vip_rules,
    diagnose,
    distance_ablation,
    plot_distance_curves,
    plot_tvi_distributions,
    plot_vip_comparison,
    vip_methods,
    vip_rules_table,
)
from interp.testing import make_samples, shared_tiny_vlm
from interp.testing.tolerance import assert_close
from probes.vip import NoVIPWarning, VIPDetector


@pytest.fixture(scope="module")
def eager_llava():
    model, processor = interp.testing.build_tiny("llava", attn_implementation="eager")
    return interp.load(model, processor)


@pytest.fixture(scope="module")
def batch():
    return make_samples(9)


@pytest.mark.parametrize("arch", ["llava", "qwen2_vl", "mllama", "instructblip"])
def test_states_and_answers_match_separate_reads(arch, batch):
    vlm = shared_tiny_vlm(arch)
    coe = chain_of_embedding(
        vlm, batch, read_at="prompt", max_new_tokens=3, batch_size=4, progress_bar=False
    )
    for condition in ("full", "blind"):
        ref = interp.residual_stream(vlm, batch, condition, batch_size=9, progress_bar=False)
        assert_close(coe.states[condition], ref)
        gen = interp.generate(
            vlm, batch, condition, max_new_tokens=3, batch_size=9, progress_bar=False
        )
        assert coe.answer_ids[condition] == gen.token_ids
    # cosine distance per layer equals scipy's on the raw vectors
    d = coe.distance("cosine")
    i, layer = 2, vlm.n_layers
    expected = scipy_cosine(
        coe.states["full"][i, layer].double().numpy(),
        coe.states["blind"][i, layer].double().numpy(),
    )
    # the same fp32 states in float64 on both sides: float64 rounding, ε·S with S = 1 (1 − cos)
    assert_close(d[i, layer], expected)
    assert np.all(d[:, 0] == 0)  # layer 0 holds the same last-token embedding with and without


def test_logit_lens_distances(eager_llava, batch):
    coe = chain_of_embedding(eager_llava, batch[:4], max_new_tokens=2, progress_bar=False)
    js = coe.distance("js")
    kl = coe.distance("kl")
    # brute force: softmax(lm_head(norm(h))) through the HF modules directly
    norm = eager_llava.adapter.final_norm(eager_llava.hf)
    head = eager_llava.hf.get_output_embeddings()
    with torch.no_grad():
        p = torch.log_softmax(head(norm(coe.states["full"][1, 2])).double(), -1)
        q = torch.log_softmax(head(norm(coe.states["blind"][1, 2])).double(), -1)
    assert kl[1, 2] == pytest.approx(float((p.exp() * (p - q)).sum()), rel=1e-4)
    m = torch.logsumexp(torch.stack([p, q]), 0) - np.log(2)
    expected_js = 0.5 * float((p.exp() * (p - m)).sum() + (q.exp() * (q - m)).sum())
    assert js[1, 2] == pytest.approx(expected_js, rel=1e-4)


def test_visual_attention_against_hf_attentions(eager_llava, batch):
    coe = chain_of_embedding(
        eager_llava,
        batch[:3],
        read_at="prompt",
        max_new_tokens=2,
        visual_attention=True,
        progress_bar=False,
    )
    enc = interp.encode(eager_llava, batch[:3], "full")
    with torch.no_grad():
        out = eager_llava.hf(**enc.inputs, output_attentions=True)
    rows = torch.arange(3)
    masses = []
    for att in out.attentions:  # [batch, head, query, key]
        w = att[rows, :, enc.last_index]
        masses.append((w * enc.image_mask[:, None, :]).sum(-1).mean(-1))
    expected = torch.stack(masses, 1).mean(1).numpy()
    # attention shares are <= 1, so S is the rule's floor 1: 1e-5, 10x the old bare 1e-6
    assert_close(coe.visual_attention, expected, dtype=torch.float32)
    # SDPA returns no weights: they are recomputed from its attention call's inputs
    # (interp.plain.attention_kind), its boolean mask (left padding) and its causal shortcut
    sdpa = interp.load(*interp.testing.build_tiny("llava", attn_implementation="sdpa"))
    for rows in (slice(0, 3), slice(1, 2)):
        got = chain_of_embedding(
            sdpa, batch[rows], max_new_tokens=2, visual_attention=True, progress_bar=False
        )
        assert_close(got.visual_attention, expected[rows], dtype=torch.float32)
    sdpa.hf.config._attn_implementation = "flash_attention_2"  # no 4-D mask to recompute with
    with pytest.raises(interp.InterpError, match="attn_implementation='sdpa'"):
        chain_of_embedding(sdpa, batch[:2], visual_attention=True, progress_bar=False)


def test_store_resumes_after_a_crash_without_recomputing(eager_llava, batch, tmp_path, monkeypatch):
    reference = chain_of_embedding(
        eager_llava, batch, max_new_tokens=3, batch_size=2, progress_bar=False
    )
    calls = {"n": 0, "crash_at": 5}  # two batches (x two conditions) done, crash in the third
    original = interp.generation.generate_batch

    def counting(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == calls["crash_at"]:
            raise KeyboardInterrupt
        return original(*args, **kwargs)

    monkeypatch.setattr(interp.generation, "generate_batch", counting)
    with pytest.raises(KeyboardInterrupt):
        chain_of_embedding(
            eager_llava, batch, max_new_tokens=3, batch_size=2, store=tmp_path, progress_bar=False
        )
    with ResultStore(tmp_path, _config_of(tmp_path)) as store:
        assert len(store) == 4
    calls.update(n=0, crash_at=-1)
    resumed = chain_of_embedding(
        eager_llava, batch, max_new_tokens=3, batch_size=2, store=tmp_path, progress_bar=False
    )
    assert calls["n"] == 2 * 3  # only the 5 missing samples: 3 batches x 2 conditions
    for c in reference.conditions:
        assert torch.equal(resumed.states[c], reference.states[c])
        assert resumed.answers[c] == reference.answers[c]
    assert not list(tmp_path.glob(".*.tmp"))


def _config_of(path) -> dict:
    import json

    return json.loads((path / "manifest.json").read_text())["config"]


def test_store_refuses_other_settings(eager_llava, batch, tmp_path):
    chain_of_embedding(eager_llava, batch[:2], max_new_tokens=2, store=tmp_path, progress_bar=False)
    with pytest.raises(interp.StoreError, match="max_new_tokens"):
        chain_of_embedding(
            eager_llava, batch[:2], max_new_tokens=3, store=tmp_path, progress_bar=False
        )


def test_diagnosis_against_manual_computation(eager_llava):
    samples = make_samples(12, seed=1)
    coe = chain_of_embedding(
        eager_llava, samples, max_new_tokens=2, visual_attention=True, progress_bar=False
    )
    labels = np.array([i % 2 == 0 for i in range(12)])
    # references that the model's own answer matches for every third sample: correctness is
    # mixed by construction, so the Spearman check below always runs
    for i, (s, a) in enumerate(zip(samples, coe.answers["full"])):
        s.answer = a if i % 3 == 0 else a + " not"
    diag = diagnose(coe, split=labels, vip=2)
    d = coe.distance("cosine")
    np.testing.assert_allclose(diag.tvi, d[:, 2:].mean(1))
    np.testing.assert_allclose(diag.pre_tvi, d[:, 1:2].mean(1))
    # Eq. 10 on the final states: the HF final norm applied to layer L by hand
    norm = eager_llava.adapter.final_norm(eager_llava.hf)
    with torch.no_grad():
        za, zb = (norm(coe.states[c][:, -1]).double().numpy() for c in ("full", "blind"))
    expected = [scipy_cosine(za[i], zb[i]) for i in range(12)]
    assert_close(diag.output_divergence, expected)
    sigma = d.std(0, ddof=1)
    np.testing.assert_allclose(diag.weighted_tvi, (d[:, 2:] * sigma[2:]).mean(1))
    correct = np.array([i % 3 == 0 for i in range(12)], dtype=float)
    np.testing.assert_array_equal(diag.correct, correct)
    table = diag.correlations()
    assert set(table["score"]) >= {
        "TVI (post-VIP)",
        "TVI (pre-VIP)",
        "visual attention",
        "output divergence",
    }
    rho = table.set_index("score").loc["TVI (post-VIP)", "rho"]
    assert rho == pytest.approx(spearmanr(diag.tvi, correct).statistic)
    frame = diag.to_frame()
    assert list(frame["group"]) == ["D_VT" if x else "D_T" for x in labels]
    assert len(distance_ablation(diag, ("cosine", "l2"))) == 2
    assert set(vip_methods(diag, manual=2)["method"]) == {"manual", "automatic"}
    for fig in (
        plot_distance_curves(diag),
        plot_tvi_distributions({"a": diag.tvi, "b": diag.pre_tvi}),
        plot_vip_comparison(diag, 2, None),
    ):
        assert isinstance(fig, Figure)
    assert "VIP: layer 2 (manual)" in diag.summary()


def test_diagnosis_takes_the_vip_rule_by_name(eager_llava):
    samples = make_samples(12, seed=1)
    coe = chain_of_embedding(eager_llava, samples, max_new_tokens=2, progress_bar=False)
    labels = np.array([i % 2 == 0 for i in range(12)])
    diag = diagnose(coe, split=labels, vip=2, rule="jump")
    assert diag.vip_rule == "jump" and diag.detector.rule == "jump"
    assert "VIP rule: none (a manual VIP; the automatic rule would be 'jump')" in diag.summary()
    default = diagnose(coe, split=labels, vip=2)  # the default rule: changepoint
    assert default.vip_rule == default.detector.rule == "changepoint"
    assert "the automatic rule would be 'changepoint'" in default.summary()
    table = vip_rules_table(diag)
    assert list(table["rule"]) == ["eq9", "effect", "jump", "changepoint"]
    with pytest.raises(UnknownVIPRuleError, match="unknown VIP rule 'nope': use one of 'eq9'"):
        diagnose(coe, split=labels, rule="nope")
    try:
        auto = diagnose(coe, split=labels, rule="changepoint")
    except NoVIPError as err:  # tiny random models: a VIP may or may not exist
        assert err.rule == "changepoint" and "'changepoint' found no VIP" in str(err)
    else:
        assert f"VIP: layer {auto.vip} (automatic)" in auto.summary()
        assert "VIP rule: changepoint — the first layer of the second segment" in auto.summary()


def test_the_gap_per_layer_resamples_the_images_in_meta_group(eager_llava):
    samples = make_samples(12, seed=1)
    for i, s in enumerate(samples):
        s.meta["group"] = f"image{i // 3}"  # 4 images of 3 wordings
    coe = chain_of_embedding(eager_llava, samples, max_new_tokens=2, progress_bar=False)
    labels = np.array([i % 2 == 0 for i in range(12)])
    diag = diagnose(coe, split=labels, vip=2)
    g = diag.gap_test
    assert g is not None and (g.n, g.n_clusters, g.n_vt, g.n_t) == (12, 4, 6, 6)
    d = coe.distance("cosine")
    np.testing.assert_allclose(g.difference, d[labels].mean(0) - d[~labels].mean(0))
    frame = diag.layer_frame()
    assert {"gap_low", "gap_high", "p_cluster", "p_holm", "n_clusters"} <= set(frame.columns)
    assert (frame["n_clusters"] == 4).all() and (frame["gap_low"] <= frame["gap_high"]).all()
    text = diag.summary()
    assert (
        "the paper's two-sample statistic there (Lemma F.1, samples taken as independent)" in text
    )
    assert "95% CI over 4 clusters of 12 samples resampled whole; Holm over" in text
    assert "layers whose gap is significant after Holm" in text
    for s in samples:
        del s.meta["group"]
    alone = diagnose(coe, split=labels, vip=2).gap_test
    assert alone is not None and alone.n_clusters == 12


def test_compare_vip_rules_on_an_abrupt_late_change():
    """12 layers, 400 samples, a tiny significant gap from layer 2 and an abrupt
    one at layer 9: eq9 fires early, the other rules at 9; TVI and ρ against numpy / scipy."""
    rng = np.random.default_rng(0)
    n = 400
    d = 0.01 + np.r_[0.0, np.full(8, 0.001), np.full(4, 0.02)] * rng.random((n, 13))
    d[:, 0] = 0.0
    in_vt = np.arange(n) < n // 2
    d[in_vt, 2:] += 0.0005
    d[in_vt, 9:] += 0.05
    correct = (rng.random(n) < 0.3 + in_vt * 0.4).astype(float)
    correct[:5] = np.nan
    table = compare_vip_rules(d, in_vt, correct).set_index("rule")
    assert table.loc["eq9", "vip"] == 2
    assert list(table.loc[["effect", "jump", "changepoint"], "vip"]) == [9, 9, 9]
    gap = d[in_vt].mean(0) - d[~in_vt].mean(0)
    assert table.loc["jump", "gap"] == pytest.approx(gap[9])
    assert table.loc["jump", "gap_share"] == pytest.approx(gap[9] / gap[1:].max())
    keep = ~np.isnan(correct)
    rho = spearmanr(d[keep, 9:].mean(1), correct[keep]).statistic
    assert table.loc["changepoint", "rho"] == pytest.approx(rho)


def test_swap_next_rotates_over_the_whole_sample_list(eager_llava, batch):
    coe = chain_of_embedding(
        eager_llava,
        batch[:5],
        ("full", "swap:next"),
        read_at="prompt",
        batch_size=2,
        max_new_tokens=2,
        progress_bar=False,
    )
    ref = interp.residual_stream(
        eager_llava, batch[:5], "swap:next", batch_size=5, progress_bar=False
    )
    assert_close(coe.states["swap:next"], ref)


def test_store_refuses_other_weights(batch, tmp_path):
    a = interp.load(*interp.testing.build_tiny("llava", seed=0))
    b = interp.load(*interp.testing.build_tiny("llava", seed=1))
    chain_of_embedding(a, batch[:2], max_new_tokens=2, store=tmp_path, progress_bar=False)
    with pytest.raises(interp.StoreError, match="weights"):
        chain_of_embedding(b, batch[:2], max_new_tokens=2, store=tmp_path, progress_bar=False)


@pytest.mark.parametrize(
    ("rule", "cause", "reason"),
    [
        ("effect", "alpha", "Eq. 9 is met at layer 5, but no layer meeting it passes"),
        ("jump", "alpha", "the gap grows most at layer 5"),
        ("changepoint", "alpha", "the best two-segment fit of the gap starts its second segment"),
    ],
)
def test_no_vip_error_names_the_rule(rule, cause, reason):
    """Two-sample statistics exactly 0, 0.1 (layers 1-4) and 1.0 (5-12): every rule picks layer 5,
    whose t = 1 misses the floor z(1 - 0.05/10) = 2.58."""
    from interp.studies.coe.diagnosis import _no_vip_error

    n = 20
    z = np.linspace(-1.0, 1.0, n)
    z = (z - z.mean()) / z.std(ddof=1)
    shift = np.array([0.0] + [0.1] * 4 + [1.0] * 8) * np.sqrt(2.0 / n)
    d_t = np.repeat((1.0 + z)[:, None], 13, axis=1)
    distances = np.vstack([d_t + shift, d_t])
    in_vt = np.r_[np.ones(n, bool), np.zeros(n, bool)]
    with pytest.warns(NoVIPWarning, match=f"no layer qualifies as the VIP by rule '{rule}'"):
        detector = VIPDetector(rule=rule).fit(distances, in_vt)
    err = _no_vip_error(detector, 2.0, 0.05)
    assert isinstance(err, NoVIPError) and (err.rule, err.cause) == (rule, cause)
    assert str(err).startswith(f"the automatic rule '{rule}' found no VIP: {reason}"), str(err)
    assert "--vip-rule" in str(err) and "--fallback-vip" in str(err)
