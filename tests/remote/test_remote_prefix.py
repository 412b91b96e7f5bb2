"""Prefix sharing on the loopback NDIF: each request is one nnsight session (the prefix's trace,
its cache expanded on the server, the suffixes' trace), equal to the full forwards run here."""

from __future__ import annotations

import pytest
import torch

import interp
from interp import prefix
from interp.testing import make_samples
from interp.testing.tiny import shared_tiny_vlm
from interp.testing.tolerance import assert_close

CONDITIONS = ["full", "no_question", "instruct:Answer in one word.", "full+no_prefix"]


@pytest.fixture(scope="module")
def demo() -> tuple[interp.VLM, interp.VLM]:
    return interp.load("demo"), interp.load("demo", remote=True)


def test_shared_contexts_on_the_loopback_equal_local_full_forwards(ndif, demo, monkeypatch):
    local, remote = demo
    samples = make_samples()[:3]
    targets = [s.answer for s in samples]
    calls: list[int] = []
    real = prefix.remote_logprobs

    def counted(vlm, units, p, shared, options):  # type: ignore[no-untyped-def]
        calls.append(len(units))
        return real(vlm, units, p, shared, options)

    monkeypatch.setattr(prefix, "remote_logprobs", counted)
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


def test_m_rope_families_do_not_share_remotely() -> None:
    """Their suffix positions need the prefix's rope delta, which the forward keeps on the
    server's module: the rows run in full there (here they share)."""
    vlm = shared_tiny_vlm("qwen2_vl")
    assert prefix.applies(vlm, (), {})
    assert not prefix.applies(vlm, (), {"remote": "http://localhost:1"})
    llava = shared_tiny_vlm("llava")
    assert prefix.applies(llava, (), {"remote": "http://localhost:1"})
