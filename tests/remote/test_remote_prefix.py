"""Prefix sharing on the loopback NDIF: each request is one nnsight session (the prefix's trace,
its cache expanded on the server, the suffixes' trace), equal to the full forwards run here."""

from __future__ import annotations

import pytest
import torch

import interp
from interp import prefix
from interp.testing import make_samples
from interp.testing.tolerance import assert_close

CONDITIONS = ["full", "no_question", "instruct:Answer in one word.", "full+no_prefix"]


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of rows of every shared group sent to the server."""
    seen: list[int] = []
    real = prefix.remote_logprobs

    def counted(vlm, units, p, shared, options):  # type: ignore[no-untyped-def]
        seen.append(len(units))
        return real(vlm, units, p, shared, options)

    monkeypatch.setattr(prefix, "remote_logprobs", counted)
    return seen


@pytest.fixture(scope="module")
def demo() -> tuple[interp.VLM, interp.VLM]:
    return interp.load("demo"), interp.load("demo", remote=True)


def test_shared_contexts_on_the_loopback_equal_local_full_forwards(ndif, demo, calls):
    local, remote = demo
    samples = make_samples()[:3]
    targets = [s.answer for s in samples]
    before = ndif.requests()
    got = interp.score_contexts(
        remote,
        samples,
        targets,
        lambda i, s: [(s, c) for c in CONDITIONS],
        batch_size=8,
        remote=ndif.url,
        progress_bar=False,
    )
    # every sample's four contexts share its image prefix: one session request each
    assert calls == [len(CONDITIONS)] * len(samples)
    assert ndif.requests() - before == len(samples)
    want = interp.score_contexts(
        local,
        samples,
        targets,
        lambda i, s: [(s, c) for c in CONDITIONS],
        batch_size=8,
        share_prefix=False,
        progress_bar=False,
    )
    for g, w in zip(got, want):
        assert g.shape == w.shape
        assert_close(g, w, scale=64.0, dtype=torch.float32)


@pytest.mark.parametrize("arch", ["qwen2_vl", "qwen2_5_vl", "qwen3_vl"])
def test_m_rope_families_share_on_the_loopback(ndif, saved_tiny, calls, monkeypatch, arch):
    """The suffixes' positions continue the prefix's with its rope delta, which the prefix's
    forward leaves on the server's module: read there between the traces, the shared scores equal
    the full forwards run here; with the delta zeroed (plain ``P + k``) they do not."""
    local, remote = saved_tiny(arch)
    assert prefix.applies(remote, (), {"remote": ndif.url})
    samples = make_samples()[:2]
    targets = [s.answer or "a cat" for s in samples]
    contexts = lambda i, s: [(s, c) for c in CONDITIONS]  # noqa: E731
    before = ndif.requests()
    kw = dict(batch_size=8, progress_bar=False)
    got = interp.score_contexts(remote, samples, targets, contexts, remote=ndif.url, **kw)
    assert calls == [len(CONDITIONS)] * len(samples)
    assert ndif.requests() - before == len(samples)
    want = interp.score_contexts(local, samples, targets, contexts, share_prefix=False, **kw)
    for g, w in zip(got, want):
        assert_close(g, w, scale=64.0, dtype=torch.float32)
    # the check can fail: with the delta zeroed (positions P + k) the shared scores move
    run_prefix = prefix.run_prefix

    def zeroed(*args):  # type: ignore[no-untyped-def]
        cache, delta = run_prefix(*args)
        return cache, torch.zeros_like(delta)

    monkeypatch.setattr(prefix, "run_prefix", zeroed)
    off = interp.score_contexts(local, samples, targets, contexts, **kw)
    assert max(float((o - w).abs().max()) for o, w in zip(off, want)) > 1e-3
