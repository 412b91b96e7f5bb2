"""AblateImageTokens / SwapImageTokens: naming every image token of a row equals the whole-image
edit (DeepStack features included), rows of samples not named are left alone, and a partial edit
changes the answer's score by an amount the whole-image edit does not predict."""

from __future__ import annotations

import pytest

import interp
from interp.encoding import encode
from interp.testing.samples import make_samples
from interp.testing.tiny import shared_tiny_vlm
from interp.testing.tolerance import assert_close
from interventions import AblateImage, AblateImageTokens, SwapImage, SwapImageTokens

KW = {"progress_bar": False, "batch_size": 3}


def _all_ranks(vlm: interp.VLM, samples: list[interp.Sample]) -> dict[str, list[int]]:
    enc = encode(vlm, samples)
    return {str(s.id): list(range(int(enc.image_mask[i].sum()))) for i, s in enumerate(samples)}


@pytest.mark.parametrize("arch", ["llava", "qwen2_vl", "qwen3_vl"])
@pytest.mark.parametrize("kind", ["zero", "mean", "swap"])
def test_every_token_named_equals_the_whole_image_edit(arch, kind):
    vlm = shared_tiny_vlm(arch)
    samples = make_samples(3)
    ranks = _all_ranks(vlm, samples)
    if kind == "swap":
        ours, whole = SwapImageTokens(ranks), SwapImage()
    else:
        ours, whole = AblateImageTokens(ranks, kind), AblateImage(kind)
    got = interp.score(vlm, samples, edits=[ours], **KW).total
    want = interp.score(vlm, samples, edits=[whole], **KW).total
    assert_close(got, want)


def test_rows_not_named_are_left_alone_and_named_ones_change():
    vlm = shared_tiny_vlm("llava")
    samples = make_samples(3)
    plain = interp.score(vlm, samples, **KW).total
    edit = AblateImageTokens({"s1": [0, 1, 2, 3]})
    got = interp.score(vlm, samples, edits=[edit], **KW).total
    assert got[0] == plain[0] and got[2] == plain[2]
    assert abs(float(got[1] - plain[1])) > 1e-4
