"""Prefix sharing in generation (:mod:`interp.prefix_generation`): prompts with equal media run
their common prefix once, and every row then generates from that cache.

The reference is the path that shares nothing (``share_prefix=False``: one generate trace per
batch, checked against plain HF elsewhere) and, for LLaVA, HF's own ``generate`` of each row alone
written out here. Every family of the tiny suite generates the same rows both ways: the same
tokens, and the scores each token was chosen from equal within fp32 rounding; on the families
where sharing applies (M-RoPE ones included: their suffixes continue from the prefix's rope delta)
a spy sees the prefixes run, on the others (PaliGemma's prefix-LM, InstructBLIP's cacheless
forward, a sliding window narrower than the rows) it sees none.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

import interp
from interp import prefix_generation as pg
from interp.encoding import encode
from interp.generation import plain_generation_config
from interp.testing.samples import shared_media_samples
from interp.testing.tiny import ARCHITECTURES, shared_tiny_vlm, tiny_vlm
from interp.testing.tolerance import assert_close, assert_same_generation
from interventions import Steer
from interventions.decoding import vcd

# fp32 logits through every layer of a tiny model: rounding of a few ε·64
SCALE = 64.0
NEW = 4


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> list[list[int]]:
    """The prefix lengths of every prefix batch run."""
    calls: list[list[int]] = []
    real = pg._prefix_cache

    def counted(vlm, reps, lengths, *rest):  # type: ignore[no-untyped-def]
        calls.append(list(lengths))
        return real(vlm, reps, lengths, *rest)

    monkeypatch.setattr(pg, "_prefix_cache", counted)
    return calls


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_shared_equals_full_generation(arch: str, spy: list[list[int]]) -> None:
    vlm = shared_tiny_vlm(arch)
    samples = shared_media_samples()
    kw = {"max_new_tokens": NEW, "output_scores": True, "batch_size": 4, "progress_bar": False}
    got = interp.generate(vlm, samples, "full", **kw)
    ran = list(spy)
    want = interp.generate(vlm, samples, "full", share_prefix=False, **kw)
    assert spy == ran  # share_prefix=False runs no prefix
    assert_same_generation(got, want, scale=SCALE, msg=arch)
    if pg.applies(vlm, [], None, {}) and pg.sliding_window(vlm) is None:
        # batches [a a a b] (two prefixes: the three a rows', and b's alone) and [b c] (each
        # alone: nothing shared, run in full)
        assert [len(r) for r in ran] == [2]
    else:
        assert ran == []


def test_shared_equals_hf_generate(spy: list[list[int]]) -> None:
    """Each row's tokens and scores against HF's ``generate`` of that row alone."""
    vlm = shared_tiny_vlm("llava")
    samples = shared_media_samples()
    got = interp.generate(
        vlm, samples, "null:black", max_new_tokens=NEW, output_scores=True, batch_size=8
    )
    assert spy and len(spy[0]) == 1  # one image in every row: one prefix
    config = plain_generation_config(vlm, NEW)
    config.return_dict_in_generate, config.output_scores = True, True
    for i, s in enumerate(samples):
        enc = encode(vlm, [s], "null:black")
        with torch.no_grad():
            out = vlm.hf.generate(**enc.inputs, generation_config=config)
        new = out.sequences[0, enc.input_ids.shape[1] :].tolist()
        assert got.token_ids[i] == new[: len(got.token_ids[i])]
        want = torch.stack(out.scores)[: len(got.scores[i]), 0].float()
        assert_close(got.scores[i], want, scale=SCALE, dtype=torch.float32, msg=f"row {i}")


def test_sliding_window_wider_than_the_rows_shares() -> None:
    """Gemma 3 (sliding layers, bidirectional attention over the image) shares once its window
    holds every row with its new tokens, and its values are still the full generation's."""
    vlm = tiny_vlm("gemma3")
    vlm.hf.config.get_text_config().sliding_window = 4096
    assert pg.sliding_window(vlm) == 4096
    samples = shared_media_samples()
    kw = {"max_new_tokens": NEW, "output_scores": True, "batch_size": 4, "progress_bar": False}
    calls: list[int] = []
    real = pg._prefix_cache
    pg._prefix_cache = lambda *a: (calls.append(1), real(*a))[1]  # type: ignore[assignment]
    try:
        got = interp.generate(vlm, samples, "full", **kw)
    finally:
        pg._prefix_cache = real  # type: ignore[assignment]
    assert calls
    assert_same_generation(
        got,
        interp.generate(vlm, samples, "full", share_prefix=False, **kw),
        scale=SCALE,
        msg="gemma3",
    )


def test_sampling_edits_decoding_and_distort(spy: list[list[int]]) -> None:
    """Seeded sampling shares and draws the same tokens; an edit, a decoding method and a
    condition that edits pixels (``distort``) share nothing."""
    vlm = shared_tiny_vlm("llava")
    samples = shared_media_samples()
    kw = {"max_new_tokens": NEW, "batch_size": 4, "progress_bar": False}
    sampled = {"do_sample": True, "temperature": 1.5, "seed": 3}
    got = interp.generate(vlm, samples, "full", **sampled, **kw)
    assert spy
    want = interp.generate(vlm, samples, "full", share_prefix=False, **sampled, **kw)
    assert got.token_ids == want.token_ids
    spy.clear()
    steer = [Steer(1, torch.ones(vlm.d_model) * 0.5, positions="all")]
    interp.generate(vlm, samples, "full", edits=steer, **kw)
    interp.generate(vlm, samples, "full", decoding=vcd(), **kw)
    interp.generate(vlm, samples, "distort:500", **kw)
    assert spy == []


def test_run_options_turn_it_off(spy: list[list[int]]) -> None:
    vlm = shared_tiny_vlm("llava")
    run = interp.RunOptions(batch_size=4, share_prefix=False)
    interp.generate(vlm, shared_media_samples(), "full", max_new_tokens=2, run=run)
    assert spy == []
    interp.generate(
        vlm,
        shared_media_samples(),
        "full",
        max_new_tokens=2,
        run=dataclasses.replace(run, share_prefix=True),
    )
    assert spy
