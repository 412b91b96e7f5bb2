"""Prefix sharing in generation on the loopback NDIF (:mod:`interp.prefix_generation`): each
shared batch is one nnsight session (the prefixes' forward, each row's group selected from the
cache it leaves on the server, then the generation block from that cache), and its tokens and
scores equal a local run that shares nothing."""

from __future__ import annotations

import pytest

import interp
from interp import prefix_generation as pg
from interp.testing.samples import shared_media_samples
from interp.testing.tolerance import assert_same_generation

NEW = 4
# fp32 logits through every layer of a tiny model: rounding of a few ε·64
SCALE = 64.0


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


def _run(vlm: interp.VLM, **kw: object) -> interp.Generation:
    return interp.generate(
        vlm, shared_media_samples(), max_new_tokens=NEW, output_scores=True, batch_size=4, **kw
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
    assert_same_generation(got, want, scale=SCALE, msg=how)


def test_remote_generation_without_sharing_lowers_no_prefix(ndif, want, spy):
    remote = interp.load("demo", remote=True)
    got = _run(remote, share_prefix=False, remote=ndif.url, progress_bar=False)
    assert spy == []
    assert_same_generation(got, want, scale=SCALE, msg="unshared")


def test_a_llava_checkpoint_shares_on_the_loopback(ndif, saved_tiny, spy):
    local, remote = saved_tiny("llava")
    before = ndif.requests()
    got = _run(remote, remote=ndif.url, progress_bar=False)
    assert ndif.requests() - before == 2
    assert len(spy) == 1
    assert_same_generation(
        got, _run(local, share_prefix=False, progress_bar=False), scale=SCALE, msg="llava"
    )


@pytest.mark.parametrize("arch", ["qwen2_vl", "qwen2_5_vl", "qwen3_vl"])
def test_m_rope_families_share_on_the_loopback(ndif, saved_tiny, spy, monkeypatch, arch):
    """The rows continue from their group's rope delta, which the prefixes' forward leaves on the
    server's module and the session reads there: one request per batch, the first shared, tokens
    and scores as a local run that shares nothing; with the positions left without the delta the
    scores move."""
    local, remote = saved_tiny(arch)
    assert pg.refusal(remote, [], None, {}) is None
    before = ndif.requests()
    got = _run(remote, remote=ndif.url, progress_bar=False)
    assert ndif.requests() - before == 2
    assert len(spy) == 1 and len(spy[0]) == 2
    want = _run(local, share_prefix=False, progress_bar=False)
    assert_same_generation(got, want, scale=SCALE, msg=arch)
    # the check can fail: the session sees no rope envoy, so the rows keep plain cumsum positions
    real = pg._server_prefix

    def blind(*args):  # type: ignore[no-untyped-def]
        lowered, heads = real(*args)
        lowered.rope = None
        return lowered, heads

    monkeypatch.setattr(pg, "_server_prefix", blind)
    off = _run(remote, remote=ndif.url, progress_bar=False)
    first = [float((a[0] - b[0]).abs().max()) for a, b in zip(off.scores, want.scores)]
    assert max(first) > 1e-3  # the first generated step's scores already move
