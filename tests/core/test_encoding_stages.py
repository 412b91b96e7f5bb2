"""The encoding stages' promises: a row's condition is applied once (a video the batching reads
frame counts from is not decoded again for the processor), and :func:`select` is where every
position name is resolved (edits, trace reads and ``question_mask`` agree with it)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

import interp
from interp.edits import Batch, EditContext
from interp.encoding import batches, encode, question_mask, select
from interp.encoding.codec import Codec, codec_of
from interp.testing.tiny import shared_tiny_vlm
from interp.tracing import resolve_positions


def _clip(frames: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (frames, 32, 32, 3), dtype=np.uint8)


@pytest.mark.parametrize("condition", ["full", "null_video:black"])
def test_batches_decode_each_video_once(monkeypatch, condition):
    # llava_next_video stacks a forward's videos: batching groups rows by frame count
    vlm = shared_tiny_vlm("llava_next_video")
    assert vlm.adapter.stacked_videos
    rows = [
        interp.Sample("{video} what moves ?", video=_clip(2, 0), id="a"),
        interp.Sample("{video} which way ?", video=_clip(4, 1), id="b"),
        interp.Sample("what is a video ?", id="c"),
    ]
    calls: dict[str, int] = {}
    load = interp.Sample.load_videos

    def counted(self):
        calls[str(self.id)] = calls.get(str(self.id), 0) + 1
        return load(self)

    monkeypatch.setattr(interp.Sample, "load_videos", counted)
    seen = sorted(i for idx, _ in batches(vlm, rows, condition, 8) for i in idx)
    assert seen == [0, 1, 2]
    # once per row (a row without a video asks once too, and gets none)
    assert {"a", "b"} <= set(calls) and set(calls.values()) == {1}, calls


@pytest.fixture(scope="module")
def encoded():
    vlm = shared_tiny_vlm("llava")
    samples = [
        interp.Sample("what color is the banana ?", image=np.zeros((32, 40, 3), np.uint8), id="x"),
        interp.Sample("how many ?", image=np.zeros((40, 32, 3), np.uint8), id="y"),
    ]
    return vlm, samples, encode(vlm, samples, "full")


@pytest.mark.parametrize(
    "spec", ["all", "prompt", "last", "image", "image:0", "text", "question", 0, -1, [1, -2]]
)
def test_edit_positions_are_select(encoded, spec):
    vlm, samples, enc = encoded
    ctx = EditContext(vlm, Batch(vlm, enc, samples, interp.Condition.parse("full")), None)
    assert torch.equal(ctx.positions(spec), select(enc, spec))


def test_trace_reads_and_question_mask_are_select(encoded):
    vlm, _, enc = encoded
    # "last" is each row's last attended position, read off the attention mask by hand
    last = [max(i for i, a in enumerate(row) if a) for row in enc.attention_mask.tolist()]
    assert resolve_positions(enc, "last").tolist() == last
    assert resolve_positions(enc, -2).tolist() == [i - 1 for i in last]
    assert torch.equal(question_mask(enc), select(enc, "question"))
    assert torch.equal(question_mask(vlm, enc), select(enc, "question"))
    with pytest.raises(ValueError, match="before the start"):
        resolve_positions(enc, -1000)


def test_a_question_that_cannot_be_located_is_reported_without_changing_the_encoding(encoded):
    _, _, enc = encoded
    blind = dataclasses.replace(enc, offsets=None)  # as a slow tokenizer leaves it
    for _ in range(2):
        with pytest.raises(interp.PositionError, match="no character offsets"):
            select(blind, "question")
    assert all(spans.problem is None for spans in blind.spans)


def test_the_codec_carries_what_the_stages_read(encoded):
    vlm, samples, enc = encoded
    codec = codec_of(vlm)
    assert isinstance(codec, Codec)
    assert codec.image_token_id == vlm.image_token_id and codec.tokenizer is vlm.tokenizer
    again = encode(codec, samples, "full")
    assert torch.equal(again.input_ids, enc.input_ids)
    assert torch.equal(again.image_mask, enc.image_mask)
