"""Families whose processor stacks a forward's videos into one tensor (LLaVA-NeXT-Video,
LLaVA-OneVision, InternVL): rows whose videos differ in frame count run in separate forwards,
and a contrastive amateur that changes the frame count is refused before compute."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import interp
from interp.encoding import batch_indices, encode
from interp.errors import DecodingError
from interp.testing import shared_tiny_vlm
from interp.testing.reference import hf_forward, hf_hidden_states
from interp.testing.tolerance import assert_close
from interventions.decoding import contrast

STACKED = ["llava_next_video", "llava_onevision", "internvl"]


def clip(frames: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (frames, 32, 32, 3), dtype=np.uint8)


def samples() -> list[interp.Sample]:
    return [
        interp.Sample("{video} what moves ?", video=clip(2, 0), id="two"),
        interp.Sample("{video} what moves ?", video=clip(4, 1), id="four"),
        interp.Sample("what is a video ?", id="none"),
        interp.Sample("{video} which way ?", video=clip(2, 2), id="two-again"),
    ]


@pytest.mark.parametrize("arch", STACKED)
def test_the_adapter_says_it_stacks_videos(arch):
    assert shared_tiny_vlm(arch).adapter.stacked_videos
    assert not shared_tiny_vlm("qwen2_vl").adapter.stacked_videos


@pytest.mark.parametrize("arch", STACKED)
def test_batches_group_rows_by_frame_count(arch):
    vlm = shared_tiny_vlm(arch)
    rows = samples()
    groups = list(batch_indices(vlm, rows, "full", 8))
    # every batch's videos have one frame count; rows without a video form their own batch
    for group in groups:
        counts = {len(rows[i].load_videos()[0]) for i in group if rows[i].has_video}
        assert len(counts) <= 1, (group, counts)
    assert sorted(i for g in groups for i in g) == [0, 1, 2, 3]
    assert sorted(map(sorted, groups)) == [[0, 3], [1], [2]]
    # frames:2 gives every video two frames: one batch (where rows may mix)
    together = list(batch_indices(vlm, rows[:2] + rows[3:], "frames:2", 8))
    assert len(together) == 1


@pytest.mark.parametrize("arch", STACKED)
def test_mixed_frame_counts_equal_plain_hf_one_sample_at_a_time(arch):
    vlm = shared_tiny_vlm(arch)
    rows = samples()
    got = interp.residual_stream(vlm, rows, batch_size=len(rows), progress_bar=False)
    for i, s in enumerate(rows):
        enc = encode(vlm, [s], "full")
        with torch.no_grad():
            hs = hf_hidden_states(hf_forward(vlm, enc, output_hidden_states=True))
        n = vlm.n_layers  # HF's last entry is after the final norm; layers 0..L-1 compare raw
        want = torch.stack([h[0, -1] for h in hs[:n]]).float()
        assert_close(got[i, :n].float(), want)


@pytest.mark.parametrize("arch", STACKED)
def test_an_amateur_that_changes_the_frame_count_is_refused_before_compute(arch):
    vlm = shared_tiny_vlm(arch)
    rows = [s for s in samples() if s.has_video]
    with pytest.raises(DecodingError, match="frame count"):
        interp.generate(vlm, rows, decoding=contrast("frames:1"), max_new_tokens=1)
    # an amateur that keeps the frame count runs, with mixed counts in the input
    gen = interp.generate(
        vlm, rows, decoding=contrast("still:0"), max_new_tokens=1, progress_bar=False
    )
    assert gen.sample_ids == [s.id for s in rows]


def test_a_batch_whose_first_row_expands_nothing_still_finds_internvl_video_tokens():
    """InternVL's video positions come from the processor's replacement offsets; transformers
    cannot batch those when the first row has no placeholder, so they are asked row by row."""
    vlm = shared_tiny_vlm("internvl")
    text = interp.Sample("what is a video ?", id="text")
    image = np.random.default_rng(3).integers(0, 256, (32, 32, 3), dtype=np.uint8)
    both = interp.Sample("compare {image} with {video}", image=image, video=clip(2, 4), id="both")
    batch = encode(vlm, [text, both])
    alone = encode(vlm, [both])
    for kind in ("image", "video"):
        want = alone.input_ids[0][alone.mask(kind)[0]]
        got = batch.input_ids[1][batch.mask(kind)[1]]
        assert want.numel() > 0 and torch.equal(got, want)
        assert not batch.mask(kind)[0].any()
    # the split differs from the token id alone: some image-token positions are the video's
    assert batch.mask("video")[1].sum() > 0 and batch.mask("image")[1].sum() > 0
