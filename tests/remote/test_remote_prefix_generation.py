"""Prefix sharing in generation on the loopback NDIF (:mod:`interp.prefix_generation`): each
shared batch is one nnsight session (the prefixes' forward, each row's group selected from the
cache it leaves on the server, then the generation block from that cache), and its tokens and
scores equal a local run that shares nothing."""

from __future__ import annotations

import pytest
import torch

import interp
from interp import prefix_generation as pg
from interp.samples import Sample
from interp.testing.tiny import shared_tiny_vlm
from interp.testing.tolerance import assert_close
from tools.conformance import image

QUESTIONS = ["What color is the car?", "How many dogs are there in the picture?", "Is it day?"]
NEW = 4
# fp32 logits through every layer of a tiny model: rounding of a few ε·64
SCALE = 64.0


def _samples() -> list[Sample]:
    """Three questions on one image, two on a second, one image alone: with batches of 4 the
    first batch shares (two groups, suffixes of several lengths: pads in the middle), the second
    holds rows alone in their groups and runs in full."""
    a, b, c = image(3), image(4), image(5)
    out = [Sample(question=q, image=a, id=f"a{i}") for i, q in enumerate(QUESTIONS)]
    out += [Sample(question=q, image=b, id=f"b{i}") for i, q in enumerate(QUESTIONS[1:])]
    out.append(Sample(question=QUESTIONS[0], image=c, id="c"))
    return out


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> list[list[int]]:
    """The prefix lengths of every shared batch lowered for the server."""
    calls: list[list[int]] = []
    real = pg._server_prefix

    def counted(vlm, reps, lengths, *rest):  # type: ignore[no-untyped-def]
        calls.append(list(lengths))
        return real(vlm, reps, lengths, *rest)

    monkeypatch.setattr(pg, "_server_prefix", counted)
    return calls


def _same(got: interp.Generation, want: interp.Generation, msg: str) -> None:
    assert got.token_ids == want.token_ids, msg
    assert got.scores is not None and want.scores is not None
    for i, (g, w) in enumerate(zip(got.scores, want.scores)):
        assert_close(g, w, scale=SCALE, dtype=torch.float32, msg=f"{msg} row {i}")


def _run(vlm: interp.VLM, **kw: object) -> interp.Generation:
    return interp.generate(
        vlm, _samples(), max_new_tokens=NEW, output_scores=True, batch_size=4, **kw
    )


@pytest.fixture(scope="module")
def want() -> interp.Generation:
    """The demo model run here, sharing nothing."""
    return _run(interp.load("demo"), share_prefix=False, progress_bar=False)


@pytest.mark.parametrize("how", ["option", "load"])
def test_shared_generation_on_the_loopback_equals_local_full(ndif, want, spy, how):
    """``remote=`` as a run option, or a model loaded with ``remote=<host>``: one request per
    batch, the first shared (its two groups' prefixes lowered once)."""
    if how == "option":
        got_vlm, kw = interp.load("demo", remote=True), {"remote": ndif.url}
    else:
        got_vlm, kw = interp.load("demo", remote=ndif.url), {}
    before = ndif.requests()
    got = _run(got_vlm, progress_bar=False, **kw)
    assert ndif.requests() - before == 2
    assert len(spy) == 1 and len(spy[0]) == 2
    assert not got_vlm.dispatched  # nothing local touched the weights
    _same(got, want, how)


def test_remote_generation_without_sharing_lowers_no_prefix(ndif, want, spy):
    remote = interp.load("demo", remote=True)
    got = _run(remote, share_prefix=False, remote=ndif.url, progress_bar=False)
    assert spy == []
    _same(got, want, "unshared")


def test_a_llava_checkpoint_shares_on_the_loopback(ndif, saved_tiny, spy):
    local, remote = saved_tiny("llava")
    before = ndif.requests()
    got = _run(remote, remote=ndif.url, progress_bar=False)
    assert ndif.requests() - before == 2
    assert len(spy) == 1
    _same(got, _run(local, share_prefix=False, progress_bar=False), "llava")


def test_m_rope_families_fall_back_remotely(ndif, saved_tiny, spy):
    """Their rows would need the prefix's rope delta set on the server's module: the reason
    comes from the function that gives the local ones, and the rows run in full."""
    vlm = shared_tiny_vlm("qwen2_vl")
    assert pg.refusal(vlm, [], None, {}) is None
    assert "M-RoPE" in str(pg.refusal(vlm, [], None, {"remote": "http://localhost:1"}))
    assert pg.refusal(shared_tiny_vlm("llava"), [], None, {"remote": "http://localhost:1"}) is None
    local, remote = saved_tiny("qwen2_vl")
    assert "M-RoPE" in str(pg.refusal(remote, [], None, {}))
    got = _run(remote, remote=ndif.url, progress_bar=False)
    assert spy == []
    _same(got, _run(local, share_prefix=False, progress_bar=False), "qwen2_vl")
