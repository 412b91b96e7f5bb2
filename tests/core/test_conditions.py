"""Conditions produce the inputs they promise."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import interp
from interp.conditions import Condition, condition_inputs
from interp.encoding import encode
from interp.testing import shared_tiny_vlm


@pytest.fixture(scope="module")
def llava():
    return shared_tiny_vlm("llava_siglip")


def test_parse_round_trip():
    for text in (
        "full",
        "blind",
        "null:black",
        "null:noise",
        "null_question",
        "swap:next",
        "swap:s3",
    ):
        assert str(Condition.parse(text)) == text.replace("null_question", "full+no_question")


def test_null_images_take_the_sample_size_and_are_reproducible(llava, samples):
    pairs = condition_inputs(samples[:3], "null:noise", llava.processor)
    again = condition_inputs(samples[:3], "null:noise", llava.processor)
    for s, (q, img), (_, img2) in zip(samples[:3], pairs, again):
        assert q == s.question and img.size == s.load_image().size
        assert np.array_equal(np.asarray(img), np.asarray(img2))
    # samples 0 and 3 have images of the same size: only the seed (their ids) can tell them apart
    (_, a), (_, b) = condition_inputs([samples[0], samples[3]], "null:noise", llava.processor)
    assert a.size == b.size and not np.array_equal(np.asarray(a), np.asarray(b))
    black = condition_inputs(samples[:1], "null:black", llava.processor)[0][1]
    assert np.asarray(black).max() == 0


def test_null_mean_gives_zero_pixel_values(llava, samples):
    enc = encode(llava, samples[:2], "null:mean")
    assert enc.inputs["pixel_values"].abs().max() < 0.01  # within one 8-bit level of the mean


def test_null_question_and_swap(llava, samples):
    ((q, img),) = condition_inputs(samples[:1], "null_question", llava.processor)
    assert q == "" and np.array_equal(np.asarray(img), np.asarray(samples[0].load_image()))
    swapped = condition_inputs(samples[:3], "swap:next", llava.processor)
    for i, (_, img) in enumerate(swapped):
        assert np.array_equal(np.asarray(img), np.asarray(samples[(i + 1) % 3].load_image()))
    fixed = condition_inputs(samples[:3], "swap:s2", llava.processor)
    assert all(
        np.array_equal(np.asarray(img), np.asarray(samples[2].load_image())) for _, img in fixed
    )


def test_swap_condition_equals_a_real_run_with_the_other_image(llava, samples):
    swapped = interp.residual_stream(llava, samples[:3], "swap:next", progress_bar=False)
    moved = [
        interp.Sample(s.question, samples[(i + 1) % 3].image, id=s.id)
        for i, s in enumerate(samples[:3])
    ]
    torch.testing.assert_close(swapped, interp.residual_stream(llava, moved, progress_bar=False))


def test_samples_without_images_default_ids_and_mixed_rows(llava):
    rows = [interp.Sample("what color is the sky?"), interp.Sample("what is it?")]
    rows = interp.ensure_samples(rows)
    assert [s.id for s in rows] == ["0", "1"]
    enc = encode(llava, rows, "full")  # no image at all: a text-only batch
    assert enc.has_image == [False, False] and not enc.image_mask.any()
