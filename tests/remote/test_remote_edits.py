"""Interventions on the loopback NDIF (tests/remote/conftest.py): the built-in edits lower to plain
writes (interp.plain), which the measurement's own block applies on the server; every result equals
the same run in this process, and the requests are counted."""

from __future__ import annotations

import pytest
import torch

import interp
from interp.plain import residual_site, write
from interp.testing import make_samples
from interp.testing.tolerance import assert_close
from interventions import (
    AblateImage,
    AblateImageTokens,
    Knockout,
    Patch,
    Steer,
    SwapImage,
    SwapImageTokens,
)


@pytest.fixture(scope="module")
def demo() -> tuple[interp.VLM, interp.VLM]:
    return interp.load("demo"), interp.load("demo", remote=True)


def _vector(vlm: interp.VLM, seed: int = 0) -> torch.Tensor:
    return torch.randn(vlm.d_model, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize(
    "make",
    [
        lambda vlm: [Steer([2, 5], _vector(vlm), positions="all", scale=4.0)],
        lambda vlm: [AblateImage("mean")],
        lambda vlm: [Patch("blind", layers=[3, 7], positions="last")],
        lambda vlm: [AblateImage("zero"), Steer(0, _vector(vlm, 1), positions="question")],
    ],
    ids=["steer", "ablate-mean", "patch-from-blind", "ablate-then-steer"],
)
def test_edited_residual_reads_run_on_the_loopback_and_equal_local(ndif, demo, make):
    local, remote = demo
    samples = make_samples()[:4]
    edits = make(local)
    before = ndif.requests()
    got = interp.residual_stream(
        remote, samples, layers=[1, 6, 12], edits=edits, batch_size=2, remote=ndif.url
    )
    sources = sum(isinstance(e, Patch) for e in edits)  # a patch reads its source first
    assert ndif.requests() - before == 2 * (1 + sources)  # per batch
    want = interp.residual_stream(local, samples, layers=[1, 6, 12], edits=edits, batch_size=2)
    assert_close(got, want)
    plain = interp.residual_stream(local, samples, layers=[1, 6, 12], batch_size=2)
    assert not torch.allclose(got, plain)  # the edit did act
    assert not remote.dispatched


def test_a_swapped_image_is_scored_on_the_loopback_as_a_real_null_image_run(ndif, demo):
    """SwapImage reads the black image's tokens in a request of its own, then the scoring
    request writes them: the result equals a local real null-image run (no edit at all)."""
    local, remote = demo
    samples = make_samples()[:4]
    targets = ["red", "blue", "two", "a circle"]
    before = ndif.requests()
    got = interp.score(
        remote, samples, targets, edits=[SwapImage("null:black")], batch_size=4, remote=ndif.url
    )
    assert ndif.requests() - before == 2  # the source's read, then the scoring forward
    want = interp.score(local, samples, targets, "null:black", batch_size=4)
    assert_close(got.logprobs, want.logprobs)


def test_steered_generation_edits_every_step_on_the_loopback(ndif, demo):
    """steps='all': the edit's invoke loops over the generated steps on the server."""
    local, remote = demo
    samples = make_samples()[:4]
    edits = [Steer(4, _vector(local, 2), positions="all", scale=8.0)]
    before = ndif.requests()
    got = interp.generate(
        remote, samples, max_new_tokens=6, edits=edits, batch_size=2, remote=ndif.url
    )
    assert ndif.requests() - before == 2
    want = interp.generate(local, samples, max_new_tokens=6, edits=edits, batch_size=2)
    assert got.token_ids == want.token_ids
    assert want.token_ids != interp.generate(local, samples, max_new_tokens=6).token_ids


def test_attention_knockouts_run_on_the_loopback_and_equal_local(ndif, demo):
    """A knockout lowers to cuts of the attention mask (interp.plain.cut): the server's own
    attention (its deployment's choice, here SDPA) takes the edited mask. Scored with two
    knockouts on the same layers (the flow study's image > last edge), and in generation with
    every generated token cut from the image at every step; both equal local eager runs."""
    samples = make_samples()[:4]
    targets = ["red", "blue", "two", "a circle"]
    eager, remote = interp.load("demo", attn_implementation="eager"), demo[1]
    edits = [
        Knockout(keys="image", queries="last", layers=[2, 3, 4, 5]),
        Knockout(keys="image", queries="answer", layers=[2, 3, 4, 5]),
    ]
    before = ndif.requests()
    got = interp.score(remote, samples, targets, edits=edits, batch_size=2, remote=ndif.url)
    assert ndif.requests() - before == 2  # one request per batch
    want = interp.score(eager, samples, targets, edits=edits, batch_size=2)
    assert_close(got.logprobs, want.logprobs)
    plain = interp.score(eager, samples, targets, batch_size=2)
    assert (plain.logprobs - want.logprobs).abs().max() > 1e-3  # the cut is in effect
    cut = [Knockout(keys="image", queries="all", layers=[1, 2, 3])]
    kw = dict(max_new_tokens=5, output_scores=True, batch_size=2)
    got = interp.generate(remote, samples, edits=cut, remote=ndif.url, **kw)
    want = interp.generate(eager, samples, edits=cut, **kw)
    assert got.token_ids == want.token_ids
    assert got.scores is not None and want.scores is not None
    for a, b in zip(got.scores, want.scores):
        assert_close(a, b)


def test_region_edits_run_on_the_loopback(ndif, demo):
    local, remote = demo
    samples = make_samples()[:2]
    tokens = {str(samples[0].id): [0, 1, 2, 7], str(samples[1].id): [5]}
    for edit in (AblateImageTokens(tokens, "mean"), SwapImageTokens(tokens, "null:white")):
        got = interp.residual_stream(remote, samples, layers=[12], edits=[edit], remote=ndif.url)
        want = interp.residual_stream(local, samples, layers=[12], edits=[edit])
        assert_close(got, want)


def test_a_users_lowered_edit_runs_on_the_loopback(ndif, demo):
    """The edits module's own example: an edit that defines lower() instead of apply()."""
    local, remote = demo
    vector = _vector(local, 3)

    class Steer5(interp.Intervention):
        steps = "all"

        def lower(self, ctx):
            site = residual_site(ctx.vlm, 5)
            return [write(site, ctx.positions("all"), keep=1.0, value=vector)]

    samples = make_samples()[:2]
    got = interp.residual_stream(remote, samples, layers=[5, 9], edits=[Steer5()], remote=ndif.url)
    want = interp.residual_stream(local, samples, layers=[5, 9], edits=[Steer(5, vector)])
    assert_close(got, want)


def test_sampled_generation_runs_on_the_loopback_and_equals_local(ndif, demo):
    """Temperature, top-k and top-p in the block, a draw per row with its own CPU generator."""
    local, remote = demo
    samples = make_samples()[:4]
    kw = dict(max_new_tokens=6, do_sample=True, temperature=1.4, top_k=20, top_p=0.9, seed=7)
    got = interp.generate(remote, samples, batch_size=2, remote=ndif.url, **kw)
    want = interp.generate(local, samples, batch_size=4, **kw)
    assert got.token_ids == want.token_ids
    assert got.token_ids != interp.generate(local, samples, max_new_tokens=6).token_ids


@pytest.mark.parametrize("name", ["vcd", "m3id", "vdd"])
def test_contrastive_decoding_runs_on_the_loopback_and_equals_local(ndif, demo, name):
    """The rule lowers to plain data (log-probabilities or not, α_t per token, log β) and the
    generation block applies it on the server; expert and amateur rows share each request."""
    from interventions.decoding import method

    local, remote = demo
    samples = make_samples()[:4]
    decoding = method(name)
    before = ndif.requests()
    got = interp.generate(
        remote,
        samples,
        max_new_tokens=5,
        decoding=decoding,
        output_scores=True,
        batch_size=2,
        remote=ndif.url,
    )
    assert ndif.requests() - before == 2
    want = interp.generate(
        local, samples, max_new_tokens=5, decoding=decoding, output_scores=True, batch_size=2
    )
    assert got.token_ids == want.token_ids
    for g, w in zip(got.scores, want.scores):
        assert_close(g, w, equal_nan=True)
