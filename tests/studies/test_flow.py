"""The information-flow study (attention knockout per window of layers): equal to plain HF forwards
whose attention mask blocks the edge in the window's layers, batch invariant, the integration-layer
rule equal to scipy's tests with Holm's correction, the command end to end and its refusals."""

from __future__ import annotations

import re
from importlib.metadata import EntryPoint

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats

import interp
import interp.cli
from interp.cli import main
from interp.encoding import encode, question_mask, target_ids
from interp.errors import InterventionError, PositionError
from interp.studies.flow import information_flow, integration_layer, plot_flow, windows
from interp.testing import build_tiny, hf_target_logprobs, one_error_line, refused, shared_tiny_vlm
from interp.testing.tolerance import assert_close
from probes.multiple import holm
from probes.split import normalize_answer

# -- the reference: plain HF forwards with a hand-built 4-D additive mask per layer ----------------


def _image_token_id(vlm: interp.VLM) -> int:
    cfg = vlm.hf.config
    for name in ("image_token_id", "image_token_index"):
        if getattr(cfg, name, None) is not None:
            return int(getattr(cfg, name))
    raise AssertionError("no image token id in the config")


class _BlockInLayers:
    """Forward pre-hooks on the self-attention of ``layers`` (1..L) that add −inf at
    [target, source] to the 4-D additive attention mask the layer receives."""

    def __init__(self, vlm: interp.VLM, layers, targets, sources) -> None:
        self.modules = [
            getattr(vlm.adapter.layers(vlm.hf)[i - 1], vlm.adapter.attention_module) for i in layers
        ]
        self.targets, self.sources = targets, sources

    def hook(self, module, args, kwargs):
        mask = kwargs.get("attention_mask")
        seq = kwargs["hidden_states"].shape[1]
        if mask is None:  # plain causal
            mask = torch.full((1, 1, seq, seq), float("-inf")).triu(1)
        block = torch.zeros(seq, seq)
        for t in self.targets:
            for s in self.sources:
                block[t, s] = float("-inf")
        kwargs["attention_mask"] = mask + block.to(mask.dtype)
        return args, kwargs

    def __enter__(self) -> None:
        self.handles = [
            m.register_forward_pre_hook(self.hook, with_kwargs=True) for m in self.modules
        ]

    def __exit__(self, *exc) -> None:
        for h in self.handles:
            h.remove()


def _reference_delta(vlm, sample, edge_positions, window) -> float:
    """Δ of one sample by hand: log p(answer) summed over its tokens with the mask hooks minus
    without, one row (no padding)."""
    enc = encode(vlm, [sample])
    tgt = target_ids(vlm, [sample.answer])[0]
    n = enc.input_ids.shape[1]
    sources, targets = edge_positions(vlm, enc, n, len(tgt), sample.question)
    base = hf_target_logprobs(vlm, enc, tgt).sum()
    with _BlockInLayers(vlm, window, targets, sources):
        knocked = hf_target_logprobs(vlm, enc, tgt).sum()
    return float(knocked - base)


def _image(vlm, enc, n, t, q):
    return torch.nonzero(enc.input_ids[0] == _image_token_id(vlm)).flatten().tolist()


def _question(vlm, enc, n, t, q):
    where = torch.nonzero(question_mask(vlm, enc)[0]).flatten().tolist()
    text = vlm.tokenizer.decode(enc.input_ids[0, where])
    assert "".join(q.split()) in "".join(text.split())  # the positions hold the question
    return where


def _last_and_answer(vlm, enc, n, t, q):
    return list(range(n - 1, n + t))  # every position that predicts an answer token


EDGE_POSITIONS = {
    "image>question": lambda *a: (_image(*a), _question(*a)),
    "image>last": lambda *a: (_image(*a), _last_and_answer(*a)),
    "question>last": lambda *a: (_question(*a), _last_and_answer(*a)),
    "image>-2+-1": lambda v, e, n, t, q: (_image(v, e, n, t, q), [n - 2, n - 1]),
}


@pytest.mark.parametrize("arch", ["llava", "qwen2_vl", "idefics3"])
def test_flow_equals_plain_forwards_with_a_hand_built_mask(arch, samples):
    vlm = shared_tiny_vlm(arch)
    batch = samples[:3]
    flow = information_flow(
        vlm, batch, edges=list(EDGE_POSITIONS), window=2, split=None, progress_bar=False
    )
    assert flow.windows == [(1, 2), (2, 3)]
    for edge, positions in EDGE_POSITIONS.items():
        want = np.array(
            [[_reference_delta(vlm, s, positions, w) for w in flow.windows] for s in batch]
        )
        assert_close(flow.delta[edge], want, msg=edge, dtype=torch.float32)
    assert np.abs(flow.delta["image>last"]).max() > 1e-3  # the knockout does something


def test_batch_one_equals_batch_n(samples):
    vlm = shared_tiny_vlm("qwen2_vl")  # images of varied sizes: rows of different lengths
    one = information_flow(vlm, samples[:5], split=None, batch_size=1, progress_bar=False)
    many = information_flow(vlm, samples[:5], split=None, batch_size=5, progress_bar=False)
    for edge in one.delta:
        assert_close(one.delta[edge], many.delta[edge], dtype=torch.float32)


def test_greedy_answers_groups_and_the_outputs(samples):
    vlm = shared_tiny_vlm("llava")
    flow = information_flow(vlm, samples[:4], answer="greedy", progress_bar=False)
    gen = interp.generate(vlm, samples[:4], max_new_tokens=8, progress_bar=False)
    blind = interp.generate(vlm, samples[:4], "blind", max_new_tokens=8, progress_bar=False)
    assert flow.answers == gen.texts
    changed = [normalize_answer(a) != normalize_answer(b) for a, b in zip(gen.texts, blind.texts)]
    assert flow.groups.tolist() == ["D_VT" if c else "D_T" for c in changed]
    frame = flow.to_frame()
    assert len(frame) == 4 * 3 * vlm.n_layers
    curves = flow.curves()
    row = curves[(curves.group == "all") & (curves.edge == "image>last") & (curves.start == 1)]
    assert float(row["mean"].iloc[0]) == pytest.approx(flow.delta["image>last"][:, 0].mean())
    fig = plot_flow(flow)
    assert len(fig.axes) == 1 + len(set(flow.groups.tolist()))


# -- refusals before compute ---------------------------------------------------------------------


def test_bad_input_is_refused_before_compute(samples, monkeypatch):
    def no_compute(*args, **kwargs):
        raise AssertionError("computed before the check")

    monkeypatch.setattr(interp, "score", no_compute)
    monkeypatch.setattr(interp, "generate", no_compute)
    flash = interp.load(*build_tiny("llava", attn_implementation="sdpa"))
    flash.hf.config._attn_implementation = "flash_attention_2"  # a 2-D mask: nothing to cut
    with refused(InterventionError, match="attn_implementation='sdpa'"):
        information_flow(flash, samples[:2], progress_bar=False)
    vlm = shared_tiny_vlm("llava")
    with refused(InterventionError, match=r"window of 4 layers.*1\.\.3"):
        information_flow(vlm, samples[:2], window=4, progress_bar=False)
    with refused(PositionError, match="unknown edge 'imagequestion'"):
        information_flow(vlm, samples[:2], edges=["imagequestion"], progress_bar=False)
    with refused(PositionError, match="unknown position 'nowhere'"):
        information_flow(vlm, samples[:2], edges=["image>nowhere"], progress_bar=False)
    with refused(InterventionError, match="stride"):
        windows(3, 1, 0)


# -- the integration-layer rule against scipy ----------------------------------------------------


def _holm_by_hand(p: np.ndarray) -> np.ndarray:
    m = len(p)
    order = np.argsort(p)
    adj = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adj
    return out


def test_the_integration_layer_is_holm_over_scipy_t_tests():
    rng = np.random.default_rng(0)
    n, w = 40, 8
    wins = windows(w + 1, 2)  # 8 windows of 2 layers
    effect = np.array([-1.0, -0.8, -0.6, -0.5, -0.35, 0.0, 0.0, 0.0])
    delta = {
        "image>question": rng.normal(effect * 0.5, 1.0, (n, w)),
        "image>last": rng.normal(effect, 1.0, (n, w)),
        "question>last": rng.normal(-2.0, 1.0, (n, w)),  # not an image edge: ignored
    }
    found = integration_layer(delta, wins, alpha=0.05)
    p = np.concatenate(
        [stats.ttest_1samp(delta[e], 0.0, axis=0).pvalue for e in ("image>question", "image>last")]
    )
    adjusted = _holm_by_hand(p)
    np.testing.assert_allclose(found.tests["p"], p, rtol=1e-12)
    np.testing.assert_allclose(found.tests["p_holm"], adjusted, rtol=1e-12)
    starts = np.tile([s[0] for s in wins], 2)
    means = np.concatenate([delta[e].mean(axis=0) for e in ("image>question", "image>last")])
    counts = (adjusted < 0.05) & (means < 0) & (-means >= 0.1 * max(0.0, -means.min()))
    expected = int(starts[counts].max())
    assert found.layer == expected and found.window == (expected, expected + 1)
    assert 3 <= expected <= 5
    quiet = integration_layer({"image>last": rng.normal(0, 1, (n, w))}, wins, alpha=1e-6)
    assert quiet.layer is None and "none" in str(quiet)
    zero = integration_layer({"image>last": np.zeros((n, 2))}, wins[:2])
    assert zero.tests["p"].tolist() == [1.0, 1.0] and zero.layer is None
    np.testing.assert_allclose(holm([0.01, np.nan, 0.04]), [0.02, np.nan, 0.04])
    with pytest.raises(ValueError, match="image → text edge"):
        integration_layer({"question>last": delta["question>last"]}, wins)


def test_a_tiny_significant_change_after_the_real_drop_does_not_count():
    """A -1 nat drop at window 2, then tiny but (with N = 400 and little spread) significant
    changes: +0.02 at window 4 (a rise) and -0.02 at window 6 (a drop under a tenth of the
    largest). Significance alone would report 6; the floor reports 2; min_fraction=0 keeps only
    the sign condition."""
    rng = np.random.default_rng(1)
    n = 400
    wins = windows(7)  # 7 windows of 1 layer
    effect = np.array([0.0, -1.0, 0.0, 0.02, 0.0, -0.02, 0.0])
    delta = {"image>last": rng.normal(effect, [0.01, 1, 0.01, 0.01, 0.01, 0.01, 0.01], (n, 7))}
    p = stats.ttest_1samp(delta["image>last"], 0.0, axis=0).pvalue
    adjusted = _holm_by_hand(p)
    assert adjusted[3] < 0.05 and adjusted[5] < 0.05  # the tiny changes are significant
    assert integration_layer(delta, wins).layer == 2
    assert integration_layer(delta, wins, min_fraction=0).layer == 6
    with pytest.raises(ValueError, match="min_fraction"):
        integration_layer(delta, wins, min_fraction=1.5)


# -- the command ---------------------------------------------------------------------------------


@pytest.fixture
def flow_command(monkeypatch):
    """``interp flow`` whether or not the installed package declares its entry point yet."""
    real = interp.cli._studies()
    if not any(ep.name == "flow" for ep in real):
        ep = EntryPoint("flow", "interp.studies.flow.cli:register", "interp.studies")
        monkeypatch.setattr(
            interp.cli, "_studies", lambda: sorted([*real, ep], key=lambda e: e.name)
        )


def test_the_command_writes_its_table_and_figure(flow_command, tmp_path):
    out = tmp_path / "run"
    argv = ["flow", "--model", "demo", "--data", "demo", "--n", "8", "--window", "4"]
    assert main([*argv, "--stride", "4", "--out", str(out), "--no-progress"]) == 0
    for name in ("flow_curves.csv", "flow_samples.csv", "integration_tests.csv", "flow.png"):
        assert (out / name).exists(), name
    frame = pd.read_csv(out / "flow_samples.csv")
    assert sorted(set(frame["start"])) == [1, 5, 9]
    assert set(frame["edge"]) == {"image>question", "image>last", "question>last"}
    assert len(frame) == 8 * 3 * 3
    assert "causal integration layer" in (out / "summary.txt").read_text()


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--edges", "imagequestion"], "unknown edge 'imagequestion'"),
        (["--edges", "image>nowhere"], "unknown position 'nowhere'"),
        (["--window", "13"], "--window 13 is larger than the model's 12 decoder layers"),
        (["--window", "0"], "--window must be >= 1"),
        (["--alpha", "1.5"], "--alpha must be in"),
        (["--split", "nolabel"], "--split 'nolabel': no sample has this label"),
    ],
)
def test_bad_options_are_one_line_before_the_model_loads(
    extra, message, flow_command, tmp_path, capsys, no_model
):
    out = tmp_path / "out"
    code = main(
        ["flow", "--model", "demo", "--data", "demo", "--n", "4", "--out", str(out), *extra]
    )
    assert code == 2
    assert re.search(re.escape(message), one_error_line(capsys.readouterr().err))
    assert not out.exists()


def test_the_audit_section_skips_a_cross_attention_family_before_compute():
    """Mllama's text reads the image through cross-attention layers: there are no image tokens
    to cut the text off from, so the audit's flow section says so instead of failing."""
    from interp.studies.audit.registry import AuditOptions
    from interp.studies.flow.audit import STUDY

    vlm = shared_tiny_vlm("mllama")
    image = np.zeros((16, 16, 3), dtype=np.uint8)
    samples = [interp.Sample("{image} what color ?", image=image, answer="red") for _ in range(4)]
    sec = STUDY.section(vlm, samples, AuditOptions())
    assert sec.summary()["status"] == "skipped"
    assert "cross-attention" in sec.reason
