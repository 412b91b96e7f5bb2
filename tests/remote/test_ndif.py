"""Measurements on the loopback NDIF (tests/remote/conftest.py): the request names a model key the
server serves, carries no object of this library, and the results equal a local run."""

from __future__ import annotations

import pytest
import torch

import interp
from interp.testing import make_samples
from interp.testing.tolerance import assert_close


@pytest.fixture(scope="module")
def demo() -> tuple[interp.VLM, interp.VLM]:
    """The demo model loaded twice: locally, and for NDIF (on the meta device, no weights)."""
    return interp.load("demo"), interp.load("demo", remote=True)


def test_residual_stream_runs_on_the_loopback_and_equals_local(ndif, demo):
    local, remote = demo
    samples = make_samples()[:4]
    before = ndif.requests()
    got = interp.residual_stream(
        remote, samples, layers=[0, 3, 12], batch_size=2, remote=ndif.url, progress_bar=False
    )
    assert ndif.requests() - before == 2  # one request per batch
    assert not remote.dispatched  # nothing local touched the weights
    want = interp.residual_stream(local, samples, layers=[0, 3, 12], progress_bar=False)
    assert_close(got, want)
    keys = set(ndif.stats()["model_keys"])
    assert all(k.startswith("nnsight.modeling.transformers.TransformersModel:") for k in keys)


def test_score_runs_on_the_loopback_and_equals_local(ndif, demo):
    local, remote = demo
    samples = make_samples()[:4]
    targets = ["a red square", "blue", "two", "a circle"]
    before = ndif.requests()
    got = interp.score(remote, samples, targets, batch_size=2, remote=ndif.url, progress_bar=False)
    assert ndif.requests() - before == 2
    want = interp.score(local, samples, targets, progress_bar=False)
    assert_close(got.logprobs, want.logprobs)
    assert torch.equal(got.mask, want.mask)


def test_generate_runs_on_the_loopback_and_equals_local(ndif, demo):
    """A model loaded with remote=<host> traces there by default: no run option needed."""
    local, _ = demo
    remote = interp.load("demo", remote=ndif.url)
    samples = make_samples()[:4]
    before = ndif.requests()
    got = interp.generate(remote, samples, max_new_tokens=5, batch_size=2, progress_bar=False)
    assert ndif.requests() - before == 2
    want = interp.generate(local, samples, max_new_tokens=5, progress_bar=False)
    assert got.token_ids == want.token_ids
    assert not remote.dispatched


def test_generate_states_reads_the_prompt_and_the_answer_on_the_loopback(ndif, demo):
    """With the visual attention (Eq. 10): the server (SDPA) recomputes eager's weights from its
    attention call's inputs; they equal the weights a local eager model returns."""
    remote = demo[1]
    eager = interp.load("demo", attn_implementation="eager")
    samples = make_samples()[:3]
    kw = dict(layers=[1, 6], max_new_tokens=4, visual_attention=True, progress_bar=False)
    for read_at in ("prompt", "generated"):
        before = ndif.requests()
        got = interp.generate_states(
            remote, samples, ["full", "blind"], read_at=read_at, remote=ndif.url, **kw
        )
        assert ndif.requests() - before == (2 if read_at == "prompt" else 4)
        want = interp.generate_states(eager, samples, ["full", "blind"], read_at=read_at, **kw)
        assert got.token_ids == want.token_ids
        for name in want.conditions:
            assert_close(got.states[name], want.states[name])
        assert want.visual_attention is not None and got.visual_attention is not None
        assert_close(got.visual_attention, want.visual_attention)


@pytest.fixture(scope="module")
def qwen(saved_tiny) -> tuple[interp.VLM, interp.VLM]:
    """A tiny Qwen2-VL checkpoint in a folder (M-RoPE positions), loaded locally and for NDIF."""
    return saved_tiny("qwen2_vl")


@pytest.mark.parametrize("condition", ["full", "blind"])
def test_a_qwen_vl_family_runs_on_the_loopback_and_equals_local(ndif, qwen, condition):
    local, remote = qwen
    samples = make_samples()[:3]
    run = interp.RunOptions(batch_size=3, progress_bar=False)
    got = interp.residual_stream(remote, samples, condition, run=run, remote=ndif.url)
    want = interp.residual_stream(local, samples, condition, run=run)
    assert_close(got, want)
    targets = ["a cat", "blue", "two"]
    got_scores = interp.score(remote, samples, targets, condition, run=run, remote=ndif.url)
    want_scores = interp.score(local, samples, targets, condition, run=run)
    assert_close(got_scores.logprobs, want_scores.logprobs)
    g = interp.generate(remote, samples, condition, max_new_tokens=4, run=run, remote=ndif.url)
    assert (
        g.token_ids
        == interp.generate(local, samples, condition, max_new_tokens=4, run=run).token_ids
    )


def test_a_resumed_flow_sweep_on_a_qwen_vl_family_equals_local_full_forwards(ndif, qwen):
    """Layer resume on the server with M-RoPE positions (the resumed traces leave out the pixels;
    the positions still come from the grids): one request for the sweep, Δ as a local run with
    every forward in full."""
    from interp.studies.flow import information_flow

    local, remote = qwen
    samples = [s for s in make_samples() if s.has_image and s.answer][:3]
    kw = dict(edges=["image>last"], window=1, split=None, batch_size=3, progress_bar=False)
    before = ndif.requests()
    got = information_flow(remote, samples, remote=ndif.url, **kw)
    assert ndif.requests() - before == 1
    want = information_flow(local, samples, resume_layers=False, **kw)
    assert_close(got.base, want.base, dtype=torch.float32)
    assert_close(got.delta["image>last"], want.delta["image>last"], dtype=torch.float32)
    assert abs(want.delta["image>last"][:, 1:]).max() > 1e-4  # a resumed window acts


def test_image_edits_on_a_qwen_vl_family_run_on_the_loopback(ndif, qwen):
    """The swap's source read and the writes at the decoder input, with M-RoPE positions."""
    from interventions import AblateImage, SwapImage

    local, remote = qwen
    samples = make_samples()[:3]
    run = interp.RunOptions(batch_size=3, progress_bar=False)
    for edit in (SwapImage("null:white"), AblateImage("mean")):
        got = interp.residual_stream(remote, samples, edits=[edit], run=run, remote=ndif.url)
        want = interp.residual_stream(local, samples, edits=[edit], run=run)
        assert_close(got, want)
    real = interp.residual_stream(local, samples, "null:white", run=run)
    assert_close(
        interp.residual_stream(
            remote, samples, edits=[SwapImage("null:white")], run=run, remote=ndif.url
        ),
        real,
    )


def test_what_cannot_run_remotely_is_refused_before_any_request(ndif, demo):
    """Edits that do not lower to plain writes, decoding methods and sampling are library
    objects or local state: a remote run holding one raises RemoteError naming the step, and the
    server never hears of it — also where the model itself was loaded for NDIF and the call names
    no remote option."""
    from interventions.decoding import ContrastiveDecoding

    class Mine(ContrastiveDecoding):  # its own rule: combine() is library code
        def __init__(self):
            super().__init__("blind", 1.0, 0.1)

        def lower(self, max_new_tokens):
            return None

    class Zero3(interp.Intervention):  # defines apply only: it runs in this process
        def apply(self, ctx):
            ctx.vlm.residual[3][:] = 0

    _, remote = demo
    samples = make_samples()[:2]
    before = ndif.requests()
    steer = Zero3()
    home = interp.load("demo", remote=ndif.url)  # traces remotely by default
    calls = {
        "residual_stream": lambda: interp.residual_stream(
            remote, samples, edits=[steer], remote=ndif.url
        ),
        "score": lambda: interp.score(remote, samples, ["a", "b"], edits=[steer], remote=ndif.url),
        "generate": lambda: interp.generate(remote, samples, decoding=Mine(), remote=ndif.url),
        "residual_stream ": lambda: interp.residual_stream(home, samples, edits=[steer]),
    }
    for step, call in calls.items():
        with pytest.raises(interp.RemoteError, match=f"^{step.strip()}.* cannot run remotely"):
            call()
    assert ndif.requests() == before


def test_a_users_own_plain_trace_runs_on_the_loopback(ndif, demo):
    """docs/remote.md's own-trace example: envoys bound before the block, plain=True."""
    local, remote = demo
    enc = interp.encode(remote, make_samples()[:2], "full")
    layer, head = remote.layers[6], remote.lm_head
    with remote.trace_encoding(enc, plain=True, remote=ndif.url):
        h = layer.output[:, -1].save()
        logits = head.output[:, -1].save()
    want = interp.testing.hf_forward(
        local, interp.encode(local, make_samples()[:2], "full"), output_hidden_states=True
    )
    assert_close(logits, want.logits[:, -1])
    assert_close(h, want.hidden_states[7][:, -1])
    with pytest.raises(interp.RemoteError, match="cannot run remotely"):
        remote.trace_encoding(enc, remote=ndif.url)  # not declared plain


def test_causal_drives_run_on_the_loopback_and_equal_local(ndif, demo):
    """The drives study: greedy answers, then 2K + 2 teacher-forced contexts per sample (null
    image and removed question encoded here), every model run a plain request."""
    from interp.studies.drives import causal_drives, source_removal

    local, remote = demo
    samples = make_samples()[:3]
    run = interp.RunOptions(batch_size=4, progress_bar=False)
    got = causal_drives(remote, samples, k=2, max_new_tokens=3, run=run, remote=ndif.url)
    want = causal_drives(local, samples, k=2, max_new_tokens=3, run=run)
    assert got.token_ids == want.token_ids
    for name in ("p0", "visual_drive", "question_drive", "prefix_drive"):
        # fp32 log-probabilities, combined in float64
        assert_close(getattr(got, name), getattr(want, name), dtype=torch.float32)
    got_r = source_removal(remote, samples, targets=want.token_ids, run=run, remote=ndif.url)
    want_r = source_removal(local, samples, targets=want.token_ids, run=run)
    numbers = [f.to_frame().select_dtypes("number").to_numpy() for f in (got_r, want_r)]
    assert_close(*numbers, dtype=torch.float32)  # fp32 probabilities, tabled in float64


def test_interp_drives_remote_writes_what_a_local_run_writes(ndif, tmp_path, monkeypatch, capsys):
    """The command line: --remote loads the demo for NDIF (the configured host, here the
    loopback) and every trace of the drives study goes there; its tables equal a local run's."""
    import pandas as pd
    from nnsight import CONFIG

    from interp.cli import main

    monkeypatch.setattr(CONFIG.API, "HOST", ndif.url)
    argv = ["drives", "--model", "demo", "--data", "demo", "--n", "4", "--k", "2", "--m", "0"]
    argv += ["--max-new-tokens", "3", "--no-progress"]
    before = ndif.requests()
    assert main([*argv, "--out", str(tmp_path / "remote"), "--remote"]) == 0
    assert ndif.requests() > before
    assert main([*argv, "--out", str(tmp_path / "local")]) == 0
    capsys.readouterr()
    for table in ("tokens.csv", "source_removal.csv"):
        got, want = (pd.read_csv(tmp_path / side / table) for side in ("remote", "local"))
        assert list(got.columns) == list(want.columns)
        numbers = [t.select_dtypes("number").to_numpy() for t in (got, want)]
        assert_close(*numbers, dtype=torch.float32)
        text = [t.select_dtypes(exclude="number") for t in (got, want)]
        pd.testing.assert_frame_equal(*text)


def test_interp_coe_remote_writes_what_a_local_run_writes(ndif, tmp_path, monkeypatch, capsys):
    """The main job on NDIF: greedy answers and residual reads under full and blind in each
    request, the final norm read in the trace; the per-sample table and the summary equal a local
    run's."""
    import pandas as pd
    from nnsight import CONFIG

    from interp.cli import main

    monkeypatch.setattr(CONFIG.API, "HOST", ndif.url)
    argv = ["coe", "--model", "demo", "--data", "demo", "--n", "8", "--max-new-tokens", "4"]
    argv += ["--no-progress", "--group-by", "counterfactual"]
    before = ndif.requests()
    assert main([*argv, "--out", str(tmp_path / "remote"), "--remote"]) == 0
    assert ndif.requests() > before
    assert main([*argv, "--out", str(tmp_path / "local")]) == 0
    got, want = (pd.read_csv(tmp_path / side / "per_sample.csv") for side in ("remote", "local"))
    pd.testing.assert_frame_equal(
        got.select_dtypes(exclude="number"), want.select_dtypes(exclude="number")
    )
    numbers = [t.select_dtypes("number").to_numpy() for t in (got, want)]
    assert_close(*numbers, dtype=torch.float32, equal_nan=True)
