"""Studies whose edits or decoding rules lower to plain data, on the loopback NDIF
(tests/remote/conftest.py): occlusion maps and the decoding study equal local runs, and what
cannot run there is refused before any request."""

from __future__ import annotations

import pytest
import torch

import interp
from interp.datasets import demo_world
from interp.testing import make_samples
from interp.testing.tolerance import assert_close


@pytest.fixture(scope="module")
def demo() -> tuple[interp.VLM, interp.VLM]:
    return interp.load("demo"), interp.load("demo", remote=True)


@pytest.mark.parametrize("hide", ["ablate", "swap"])
def test_occlusion_runs_on_the_loopback_and_equals_local(ndif, demo, hide):
    """Region edits as writes: one scoring request per batch (a swap reads its source first)."""
    from interp.studies.attribute import occlusion

    local, remote = demo
    samples = make_samples()[:2]
    run = interp.RunOptions(batch_size=5, progress_bar=False)
    before = ndif.requests()
    got = occlusion(remote, samples, grid=(2, 2), hide=hide, mode="mean", run=run, remote=ndif.url)
    assert ndif.requests() - before == 2 * (2 if hide == "swap" else 1)  # 10 rows: 2 batches
    want = occlusion(local, samples, grid=(2, 2), hide=hide, mode="mean", run=run)
    assert_close(got.scores, want.scores, dtype=torch.float32)  # fp32 sums, tabled in float64
    assert not remote.dispatched


@pytest.mark.parametrize("resume", [True, False])
def test_information_flow_runs_on_the_loopback_and_equals_local(ndif, demo, resume):
    """Attention knockout per window and edge: the greedy answers under both conditions, then
    with layer resume one request per batch for the whole sweep (a session that keeps the states
    on the server), without it the base scores and one request per (edge, window) and batch; Δ
    equals a local run with eager attention and every forward in full."""
    from interp.studies.flow import information_flow

    remote = demo[1]
    eager = interp.load("demo", attn_implementation="eager")
    samples = [s for s in make_samples() if s.has_image and s.answer][:6]
    kw = dict(edges=["image>last", "question>last"], window=4, stride=4, batch_size=4)
    before = ndif.requests()
    got = information_flow(
        remote, samples, remote=ndif.url, progress_bar=False, resume_layers=resume, **kw
    )
    n_windows = len(got.windows)
    assert n_windows == 3
    sweep = 2 if resume else 2 * (1 + 2 * n_windows)  # 2 batches: one session each, or per pass
    assert ndif.requests() - before == 2 * 2 + sweep  # greedy answers ×2 conditions ×2 batches
    want = information_flow(eager, samples, progress_bar=False, resume_layers=False, **kw)
    assert got.groups.tolist() == want.groups.tolist()
    for edge in want.edges:
        assert_close(got.delta[edge], want.delta[edge], dtype=torch.float32)
    assert abs(want.delta["image>last"]).max() > 1e-3  # the knockouts act
    assert abs(want.delta["question>last"][:, 1:]).max() > 1e-3  # and the resumed windows too


def test_the_decoding_study_runs_on_the_loopback_and_equals_local(ndif, demo):
    """Greedy and sampled runs: each row draws with its own CPU generator on the server too."""
    from interp.studies.decoding import evaluate_decoding

    local, remote = demo
    samples = demo_world("test", n=8, seed=5, qtypes=["exist"])
    methods = ["greedy", "vcd", "m3id"]
    run = interp.RunOptions(batch_size=4, progress_bar=False)
    before = ndif.requests()
    got = evaluate_decoding(remote, samples, methods, seeds=(1,), run=run, remote=ndif.url)
    assert ndif.requests() - before == 3 * 2 * 2  # per method and mode, one request per batch
    want = evaluate_decoding(local, samples, methods, seeds=(1,), run=run)
    assert got.answers.equals(want.answers)


def test_pai_runs_on_the_loopback_and_equals_local_eager(ndif, demo):
    """PAI's boost lowers (interp.plain.boost): the server (SDPA) recomputes each boosted layer's
    attention from its attention call's inputs; the answers and the scores they were chosen from
    equal a local eager run's, and the study's PAI answers a local eager study's."""
    from interp.studies.decoding import evaluate_decoding
    from interventions.decoding import pai

    remote = demo[1]
    eager = interp.load("demo", attn_implementation="eager")
    samples = make_samples()[:4]
    kw = dict(max_new_tokens=4, decoding=pai(alpha=0.5), output_scores=True, batch_size=2)
    before = ndif.requests()
    got = interp.generate(remote, samples, remote=ndif.url, **kw)
    assert ndif.requests() - before == 2
    want = interp.generate(eager, samples, **kw)
    assert got.token_ids == want.token_ids
    assert got.scores is not None and want.scores is not None
    for a, b in zip(got.scores, want.scores):
        assert_close(a, b)
    pope = demo_world("test", n=4, seed=5, qtypes=["exist"])
    run = interp.RunOptions(batch_size=4, progress_bar=False)
    got = evaluate_decoding(remote, pope, ["pai"], seeds=(), run=run, remote=ndif.url)
    assert got.answers.equals(evaluate_decoding(eager, pope, ["pai"], seeds=(), run=run).answers)


def test_a_decoding_rule_that_does_not_lower_is_refused_before_any_request(ndif, demo):
    """A user's method with its own combine() (library code) cannot run on the server."""
    from interventions.decoding import ContrastiveDecoding

    class Mine(ContrastiveDecoding):
        def lower(self, max_new_tokens):
            return None

    _, remote = demo
    samples = make_samples()[:2]
    before = ndif.requests()
    with pytest.raises(interp.RemoteError, match=r"^generate cannot run remotely.*combine"):
        interp.generate(remote, samples, decoding=Mine("blind", 1.0, 0.1), remote=ndif.url)
    assert ndif.requests() == before


def test_the_logit_lens_runs_on_the_loopback_and_equals_local(ndif, demo):
    """vlm.unembed on a model loaded for NDIF: one request, the server's norm and head."""
    local, remote = demo
    states = interp.residual_stream(local, make_samples()[:3], progress_bar=False)
    before = ndif.requests()
    got = remote.unembed(states, remote=ndif.url)
    assert ndif.requests() - before == 1
    assert_close(got, local.unembed(states))
    assert not remote.dispatched


def test_the_recall_study_runs_on_the_loopback_and_equals_local(ndif, demo):
    """Every pass greedy on the server, the lens of the first token through vlm.unembed."""
    from interp.studies.recall import RecallItem, run_recall

    local, remote = demo
    images = [s.image for s in make_samples(4)]
    items = [
        RecallItem(
            id=f"it{i}",
            image=images[i],
            textual=f"what colour is thing number {i}?",
            visual="what colour is the object in the image?",
            answer=["red", "blue"][i % 2],
            family=["alpha", "beta"][i % 2],
            entity=["circle", "square"][i % 2],
            identify="which object is in the image?",
        )
        for i in range(4)
    ]
    run = interp.RunOptions(batch_size=4, progress_bar=False)
    got = run_recall(remote, items, max_new_tokens=3, run=run, remote=ndif.url)
    want = run_recall(local, items, max_new_tokens=3, run=run)
    assert got.answers == want.answers
    assert_close(got.lens, want.lens, dtype=torch.float32)  # fp32 probabilities, in float64
    for name in ("visual", "full_info"):
        assert_close(got.states[name], want.states[name])


def test_conflict_responses_with_a_lowered_method_run_on_the_loopback(ndif, demo):
    from interp.studies.conflict import conflict_responses
    from interventions.decoding import vcd

    local, remote = demo
    items = demo_world("test", n=8, seed=4, qtypes=["conflict"])
    kw = {"configurations": {"both": "full"}, "decodings": {"greedy": None, "vcd": vcd()}}
    kw |= {"max_new_tokens": 3, "progress_bar": False}
    got = conflict_responses(remote, items, **kw, remote=ndif.url)
    want = conflict_responses(local, items, **kw)
    assert got.frame.equals(want.frame)


def test_interp_coe_metric_kl_remote_writes_what_a_local_run_writes(
    ndif, tmp_path, monkeypatch, capsys
):
    """The logit-lens metric remotely: the lens through vlm.unembed, one request per batch."""
    import pandas as pd
    from nnsight import CONFIG

    from interp.cli import main

    monkeypatch.setattr(CONFIG.API, "HOST", ndif.url)
    argv = ["coe", "--model", "demo", "--data", "demo", "--n", "6", "--max-new-tokens", "3"]
    argv += ["--no-progress", "--metric", "kl", "--vip", "6"]
    assert main([*argv, "--out", str(tmp_path / "remote"), "--remote"]) == 0
    assert main([*argv, "--out", str(tmp_path / "local")]) == 0
    capsys.readouterr()
    got, want = (pd.read_csv(tmp_path / side / "per_sample.csv") for side in ("remote", "local"))
    pd.testing.assert_frame_equal(
        got.select_dtypes(exclude="number"), want.select_dtypes(exclude="number")
    )
    numbers = [t.select_dtypes("number").to_numpy() for t in (got, want)]
    assert_close(*numbers, dtype=torch.float32, equal_nan=True)


def test_interp_audit_remote_runs_what_can_run_and_skips_the_rest(
    ndif, tmp_path, monkeypatch, capsys
):
    """One command on NDIF: the chain of embedding and the decoding study (PAI included) give the
    numbers a local audit (eager attention) gives. (The attribution section's occlusion maps: the
    occlusion test; the flow study: the information-flow test.)"""
    import json

    from nnsight import CONFIG

    from interp.cli import main

    monkeypatch.setattr(CONFIG.API, "HOST", ndif.url)
    argv = ["audit", "--model", "demo", "--data", "demo", "--n", "6", "--seeds", ""]
    argv += ["--studies", "coe,decoding", "--no-progress"]
    assert main([*argv, "--out", str(tmp_path / "remote"), "--remote"]) == 0
    assert main([*argv, "--out", str(tmp_path / "local")]) == 0
    capsys.readouterr()
    got, want = (
        json.loads((tmp_path / side / "summary.json").read_text())["studies"]
        for side in ("remote", "local")
    )
    assert "pai_f1" in want["decoding"]["numbers"] and "pai_f1" in got["decoding"]["numbers"]
    for key in ("coe", "decoding"):
        assert got[key]["ran"] and got[key]["numbers"].keys() == want[key]["numbers"].keys()
        for name, value in got[key]["numbers"].items():
            if isinstance(value, float):
                assert_close(value, want[key]["numbers"][name], dtype=torch.float32)
            else:
                assert value == want[key]["numbers"][name]


def test_interp_reproduce_remote_gives_the_local_table(ndif, tmp_path, monkeypatch, capsys):
    """A paper's recipe on NDIF: every study command with --remote, the chain of embedding's
    visual attention included (eager's weights recomputed from the server's attention inputs:
    the server runs SDPA, the local run eager attention)."""
    import pandas as pd
    from nnsight import CONFIG

    from interp.cli import main

    monkeypatch.setattr(CONFIG.API, "HOST", ndif.url)
    argv = ["reproduce", "coe", "--model", "demo", "--n", "8", "--no-progress"]
    before = ndif.requests()
    assert main([*argv, "--out", str(tmp_path / "remote"), "--remote"]) == 0
    assert ndif.requests() > before
    assert main([*argv, "--out", str(tmp_path / "local")]) == 0
    assert "run on NDIF" in (tmp_path / "remote" / "table.md").read_text()
    capsys.readouterr()
    got, want = (pd.read_csv(tmp_path / side / "table.csv") for side in ("remote", "local"))
    assert "Visual Attention" in set(want["metric"])
    pd.testing.assert_frame_equal(
        got.select_dtypes(exclude="number"), want.select_dtypes(exclude="number")
    )
    numbers = [t.select_dtypes("number").to_numpy() for t in (got, want)]
    assert_close(*numbers, dtype=torch.float32, equal_nan=True)


def test_interp_conflict_remote_writes_what_a_local_run_writes(ndif, tmp_path, monkeypatch, capsys):
    """Greedy answers per configuration, the contrastive diagnostic (its methods lower) and the
    layer-wise probe's residual reads, all on the server."""
    import pandas as pd
    from nnsight import CONFIG

    from interp.cli import main

    monkeypatch.setattr(CONFIG.API, "HOST", ndif.url)
    argv = ["conflict", "--model", "demo", "--data", "demo", "--n", "24", "--max-new-tokens", "3"]
    argv += ["--no-progress"]
    assert main([*argv, "--out", str(tmp_path / "remote"), "--remote"]) == 0
    assert main([*argv, "--out", str(tmp_path / "local")]) == 0
    capsys.readouterr()
    got, want = (pd.read_csv(tmp_path / side / "responses.csv") for side in ("remote", "local"))
    pd.testing.assert_frame_equal(got, want)


def test_image_gradients_run_on_the_loopback_and_equal_local(ndif, demo):
    """The backward runs in the scoring request (the server's weights frozen, as NDIF's are):
    the states, the gradient at the image tokens and log p equal a local run; without
    gradients, the states alone in one read request per batch."""
    local, remote = demo
    samples = make_samples()[:3]
    for layer in (0, 5):
        before = ndif.requests()
        got = interp.image_gradients(remote, samples, layer=layer, batch_size=2, remote=ndif.url)
        assert ndif.requests() - before == 2
        want = interp.image_gradients(local, samples, layer=layer, batch_size=2)
        assert got.grads is not None and want.grads is not None
        for a, b in zip(got.grads + got.states, want.grads + want.states):
            assert_close(a, b)
        assert_close(got.logprobs, want.logprobs)
        assert max(float(g.abs().max()) for g in want.grads) > 0
    got = interp.image_gradients(remote, samples, layer=3, gradients=False, remote=ndif.url)
    want = interp.image_gradients(local, samples, layer=3, gradients=False)
    for a, b in zip(got.states, want.states):
        assert_close(a, b)


def test_attention_weights_run_on_the_loopback_and_equal_local_eager(ndif, demo):
    """Every layer's weights of the last prompt position, recomputed from the server's attention
    inputs (SDPA there), equal those a local eager model returns."""
    remote = demo[1]
    eager = interp.load("demo", attn_implementation="eager")
    samples = make_samples()[:3]
    before = ndif.requests()
    got = interp.attention_weights(remote, samples, batch_size=3, remote=ndif.url)
    assert ndif.requests() - before == 1
    want = interp.attention_weights(eager, samples, batch_size=3)
    for a, b in zip(got.weights, want.weights):
        assert_close(a, b)


def test_the_audits_attribution_section_runs_every_method_on_ndif(ndif, demo, monkeypatch):
    """Occlusion, gradient and attention maps of a remote audit equal the local ones (the local
    model under eager attention, the server under SDPA)."""
    from nnsight import CONFIG

    from interp.studies.attribute.audit import _methods
    from interp.studies.audit.registry import AuditOptions

    monkeypatch.setattr(CONFIG.API, "HOST", ndif.url)  # where a model loaded for NDIF goes
    remote = demo[1]
    eager = interp.load("demo", attn_implementation="eager")
    samples = make_samples()[:1]
    got = _methods(remote, samples, AuditOptions(batch_size=17))
    want = _methods(eager, samples, AuditOptions(batch_size=17))
    assert list(got) == list(want) == ["occlusion", "gradient", "attention"]
    for name in want:
        assert_close(got[name].scores, want[name].scores, dtype=torch.float32)
