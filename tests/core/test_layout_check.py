"""The generic layout check at load (:mod:`interp.layout_check`) against the layouts the
family-specific perturbation tests verify (``tests/families/test_regions.py``): on each tiny family
whose written layout a test checks, an entry with the layout left out gets a layout by the generic
check whose boxes equal the written layout's; a wrong layout, a merge that mixes the tokens and a
wrong pixel layout are refused, with the reason in the error a layout-dependent feature raises."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

import interp
import interp.layout_check as lc
from interp import region_layouts as rl
from interp.adapters.pixels import PIXEL_ROWS
from interp.testing.builders.inferred import tiny_inferred
from interp.testing.samples import make_samples
from interp.testing.tiny import build_tiny


def _unchecked(arch: str, **fields: object) -> interp.VLM:
    """``arch``'s tiny model loaded under its entry with the layout left to the check at load."""
    model, processor = build_tiny(arch)
    adapter = interp.adapter_for(model).replace(
        name=f"my_{arch}", layout_verified=False, **{"token_layout": None, **fields}
    )
    return interp.load(model, processor, adapter=adapter)


@pytest.mark.parametrize("arch", ["llava", "qwen2_vl", "gemma3", "llava_next", "internvl"])
def test_the_check_finds_the_layout_the_family_tests_verify(arch: str) -> None:
    written = interp.adapter_for(build_tiny(arch)[0]).token_layout
    vlm = _unchecked(arch)
    adapter = vlm.adapter
    assert adapter.layout_verified, adapter.layout_refusal
    assert "checked on the loaded model" in adapter.layout_checked
    for size in [lc.PROBE, (50, 90), (128, 128)]:
        got = adapter.token_layout(vlm.processor, vlm.hf.config, size)
        want = written(vlm.processor, vlm.hf.config, size)
        np.testing.assert_array_equal(got.boxes, want.boxes)
    # the layout-dependent features now run: regions of a prompt, a distorted image
    regions = interp.token_regions(vlm, make_samples(1)[0])
    assert np.isfinite(regions.boxes).any()
    full = interp.residual_stream(vlm, make_samples(2), progress_bar=False)
    noisy = interp.residual_stream(vlm, make_samples(2), "distort:500", progress_bar=False)
    assert (full - noisy).abs().amax() > 1e-4


def _transposed(processor: object, config: object, size: tuple[int, int]) -> rl.ImageLayout:
    """LLaVA's grid read column by column: right count, wrong places."""
    grid = rl.llava_layout(processor, config, size)
    side = int(round(len(grid) ** 0.5))
    order = np.arange(len(grid)).reshape(side, side).T.ravel()
    return rl.ImageLayout(grid.boxes[order], grid.views)


def test_a_wrong_layout_is_refused_and_the_right_one_found() -> None:
    vlm = _unchecked("llava", token_layout=_transposed)
    assert vlm.adapter.token_layout is rl.llava_layout  # the check at load replaced it
    vlm.adapter = dataclasses.replace(vlm.adapter, token_layout=_transposed, layout_verified=False)
    verdict = lc.check_layout(vlm)  # the entry's own layout is tried first
    name, why = verdict.tried[0]
    assert name == "_transposed" and "mapped" in why
    assert verdict.layout == "llava_layout" and verdict.ok


def test_a_merge_that_moves_the_tokens_passes_no_layout() -> None:
    """Each image token also reads its predecessor's patch: a local map, but not the grid's."""
    model, processor = build_tiny("llava")
    projector = model.model.multi_modal_projector
    projector.register_forward_hook(lambda _m, _a, out: out + out.roll(1, dims=-2))
    adapter = interp.adapter_for(model).replace(name="mixing", layout_verified=False)
    vlm = interp.load(model, processor, adapter=adapter)
    assert not vlm.adapter.layout_verified
    assert "mapped elsewhere" in vlm.adapter.layout_refusal
    with pytest.raises(interp.LayoutNotMappedError, match="mixing.*mapped elsewhere"):
        interp.residual_stream(vlm, make_samples(2), "distort:500", progress_bar=False)


def test_no_candidate_is_refused_with_the_reason(monkeypatch) -> None:
    monkeypatch.setattr(lc, "CANDIDATES", ())
    vlm = _unchecked("llava")
    assert not vlm.adapter.layout_verified
    calls: list[int] = []
    hook = vlm.hf.register_forward_hook(lambda *a: calls.append(1))
    try:
        with pytest.raises(interp.LayoutNotMappedError, match="my_llava.*image-token count"):
            interp.residual_stream(vlm, make_samples(2), "distort:500", progress_bar=False)
        with pytest.raises(interp.LayoutNotMappedError, match="my_llava"):
            interp.token_regions(vlm, make_samples(1)[0])
    finally:
        hook.remove()
    assert not calls  # refused before any forward


def test_a_wrong_pixel_layout_is_replaced_or_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Video-LLaMA 3's processor flattens its images' patches into one tensor: the ``images``
    pixel layout its inferred entry assumes would distort the wrong rows, and ``patches`` is
    found instead; Inkling's flattens one patch per image token over the batch, found as
    ``token_patches``; without that layout no pixel layout passes, and the layout is refused."""
    model, processor, _ = tiny_inferred("video_llama_3")
    assert interp.adapter_for(model).pixel_layout == "images"
    vlm = interp.load(model, processor)
    assert vlm.adapter.layout_verified and vlm.adapter.pixel_layout == "patches"
    model, processor, _ = tiny_inferred("inkling_mm_model")
    vlm = interp.load(model, processor)
    assert vlm.adapter.layout_verified and vlm.adapter.pixel_layout == "token_patches"
    monkeypatch.delitem(PIXEL_ROWS, "token_patches")
    model, processor, _ = tiny_inferred("inkling_mm_model")
    vlm = interp.load(model, processor)
    assert not vlm.adapter.layout_verified
    assert "pixel_layout 'images'" in vlm.adapter.layout_refusal


def test_tokens_that_mix_the_whole_image_have_no_place() -> None:
    """Idefics2's perceiver resampler (kept: it is the connector, after the tower) gives 64
    latent tokens that each read the whole image: no spatial layout, and ``distort`` runs."""
    model, processor, _ = tiny_inferred("idefics2")
    vlm = interp.load(model, processor)
    assert vlm.adapter.layout_verified and vlm.adapter.token_layout is None
    assert "no place in the image" in vlm.adapter.no_layout
    assert not any(
        "connector" in n for n, m in vlm.hf.named_modules() if m in lc.vision_blocks(vlm)
    )
    with pytest.raises(interp.NoSpatialLayoutError, match="no place in the image"):
        interp.token_regions(vlm, make_samples(1)[0])
    full = interp.residual_stream(vlm, make_samples(2), progress_bar=False)
    noisy = interp.residual_stream(vlm, make_samples(2), "distort:500", progress_bar=False)
    assert (full - noisy).abs().amax() > 1e-4


def test_the_check_leaves_the_model_as_it_was() -> None:
    vlm = interp.load(*build_tiny("llava"))  # a verified entry: no check at load
    tower = vlm.hf.model.vision_tower
    blocks = [m for m in tower.modules() if type(m).__name__ == "CLIPEncoderLayer"]
    assert [id(b) for b in lc.vision_blocks(vlm)] == [id(b) for b in blocks] != []
    before = [b.__dict__.get("forward") for b in blocks]  # nnsight's own wrapper, if any
    samples = make_samples(2)
    want = interp.residual_stream(vlm, samples, progress_bar=False)
    vlm.adapter = dataclasses.replace(vlm.adapter, layout_verified=False, token_layout=None)
    assert lc.check_at_load(vlm).ok and vlm.adapter.layout_verified
    assert [b.__dict__.get("forward") for b in blocks] == before
    got = interp.residual_stream(vlm, samples, progress_bar=False)
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_what_is_not_checked_says_why() -> None:
    vlm = _unchecked("llava")
    assert lc.needs_check(vlm) == "nothing to check"  # verified by the check just run
    vlm.adapter = dataclasses.replace(vlm.adapter, layout_verified=False)
    assert lc.needs_check(vlm) == ""
    vlm.remote = "ndif"
    assert "not loaded here" in lc.needs_check(vlm)
    mllama = interp.load(*build_tiny("mllama"))
    assert "cross-attention" in lc.needs_check(mllama) or mllama.adapter.no_layout
