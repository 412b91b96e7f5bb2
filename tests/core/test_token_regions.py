"""interp.token_regions: positions decode to the image placeholders, batches map per row, grids
partition the image's tokens, and families without a spatial layout raise typed errors."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from PIL import Image
from transformers import (
    LlavaNextConfig,
    LlavaNextImageProcessorPil,
    LlavaNextProcessor,
    Qwen2VLImageProcessorPil,
)

import interp
from interp.region_layouts import anyres_layout, gemma3_layout, qwen_layout
from interp.testing.samples import make_samples, random_image
from interp.testing.tiny import shared_tiny_vlm, tiny_vlm

MAPPED = (
    "llava",
    "llava_siglip",
    "llava_next",
    "llava_onevision",
    "llava_next_video",
    "qwen2_vl",
    "qwen2_5_vl",
    "qwen3_vl",
    "qwen2_5_omni_thinker",
    "qwen3_omni_moe_thinker",
    "idefics3",
    "smolvlm",
    "gemma3",
    "gemma4",
    "paligemma",
    "internvl",
)


def _image_token(vlm: interp.VLM) -> str:
    return vlm.tokenizer.convert_ids_to_tokens(vlm.image_token_id)


@pytest.mark.parametrize("arch", MAPPED)
def test_positions_are_the_image_tokens_of_each_row(arch: str) -> None:
    vlm = shared_tiny_vlm(arch)
    samples = make_samples(5)
    enc = interp.encode(vlm, samples)
    regions = interp.token_regions(vlm, samples, enc=enc)
    ids = enc.input_ids.cpu()
    for row, reg in enumerate(regions):
        image_rows = np.array([v != "separator" for v in reg.views])
        tokens = vlm.tokenizer.convert_ids_to_tokens(ids[row, reg.positions[image_rows]].tolist())
        assert set(tokens) == {_image_token(vlm)}
        # every image-token position of the row is mapped, once
        expected = np.flatnonzero(enc.image_mask[row].cpu().numpy())
        assert reg.positions[image_rows].tolist() == expected.tolist()
        assert reg.image_sizes == (samples[row].image.size,)
        # boxes lie inside the image and have positive area
        w, h = reg.image_sizes[0]
        b = reg.boxes[reg.spatial]
        assert (b[:, 0] >= 0).all() and (b[:, 2] <= w).all() and (b[:, 3] <= h).all()
        assert ((b[:, 2] > b[:, 0]) & (b[:, 3] > b[:, 1])).all()
        # a row of one sample maps as that sample alone (positions shift by the padding)
        alone = interp.token_regions(vlm, samples[row])
        assert alone.views == reg.views
        np.testing.assert_array_equal(alone.boxes, reg.boxes)
        shift = reg.positions - alone.positions
        assert (shift == shift[0]).all()
    with pytest.raises(interp.RegionError, match="not the samples given"):
        interp.token_regions(vlm, samples[::-1], enc=enc)


def test_demo_model_maps_its_8_pixel_patches() -> None:
    vlm = interp.load("demo")  # LLaVA + SigLIP, 32 px, patch 8
    image = random_image(64, 96, seed=0)  # width 96, height 64: squashed to 32 x 32
    reg = interp.token_regions(vlm, interp.Sample(question="what is it?", image=image, id="d"))
    assert len(reg) == 16 and set(reg.views) == {"image"}
    # token (r, c) covers columns 24c..24c+24 and rows 16r..16r+16 of the original image
    r, c = np.divmod(np.arange(16), 4)
    expected = np.stack([24 * c, 16 * r, 24 * (c + 1), 16 * (r + 1)], 1)
    np.testing.assert_allclose(reg.boxes, expected)


def test_to_pixels_paints_token_values_onto_the_image() -> None:
    vlm = shared_tiny_vlm("llava_siglip")  # 32 px square, patch 8: a 4 x 4 grid
    image = random_image(64, 96, seed=8)  # squashed: token (r, c) covers 24 x 16 pixels
    reg = interp.token_regions(vlm, interp.Sample(question="q", image=image, id="p"))
    pixels = reg.to_pixels(np.arange(16.0))
    y, x = np.mgrid[0:64, 0:96]
    np.testing.assert_array_equal(pixels, (y // 16) * 4 + x // 24)
    # any-res: a pixel seen by a base token and a tile token gets their mean
    vlm = shared_tiny_vlm("llava_next")
    reg = interp.token_regions(
        vlm, interp.Sample(question="q", image=random_image(32, 64, 9), id="n")
    )
    base = np.array([v == "base" for v in reg.views], dtype=float)
    np.testing.assert_allclose(reg.to_pixels(base), 0.5)  # every pixel: one base, one tile token
    assert np.isnan(reg.to_pixels(base, views=["newline"])).all()
    with pytest.raises(interp.RegionError, match="one per token"):
        reg.to_pixels(np.zeros(3))


def test_grid_partitions_the_spatial_tokens_and_in_box_finds_them() -> None:
    vlm = shared_tiny_vlm("llava_next")
    sample = interp.Sample(question="what?", image=random_image(40, 60, seed=2), id="g")
    reg = interp.token_regions(vlm, sample)
    spatial = set(reg.positions[reg.spatial].tolist())
    cells = reg.grid(3, 2)
    assert len(cells) == 6
    flat = [p for cell in cells for p in cell.tolist()]
    assert len(flat) == len(set(flat)) and set(flat) == spatial
    assert set(reg.in_box((0, 0, 60, 40)).tolist()) == spatial
    # the top-left pixel lies in one base token and one tile token (the tiles' first row and
    # column may be padding, so it is the first spatial tile token)
    corner = reg.in_box((0, 0, 1, 1))
    views = [reg.views[list(reg.positions).index(p)] for p in corner]
    assert sorted(v.split()[0] for v in views) == ["base", "tile"]
    assert reg.in_box((0, 0, 60, 40), views=["base"]).size == 16
    masks = reg.masks(cells, 200)
    assert masks.shape == (6, 200) and masks.sum() == len(spatial)
    assert set(np.flatnonzero(masks.any(0)).tolist()) == spatial
    frame = reg.to_frame()
    assert len(frame) == len(reg) and frame["spatial"].sum() == len(spatial)
    assert (frame["view"] == "newline").sum() == int((~reg.spatial).sum())
    boxes = reg.cell_boxes(3, 2)
    assert boxes.shape == (6, 4)
    np.testing.assert_allclose(boxes[-1], [30, 80 / 3, 60, 40])


def test_split_images_mark_their_separators_and_views() -> None:
    vlm = tiny_vlm("idefics3")
    ip = vlm.processor.image_processor
    ip.do_image_splitting = True
    ip.size = {"longest_edge": 2 * ip.max_image_size["longest_edge"]}
    sample = interp.Sample(question="what?", image=random_image(50, 90, seed=3), id="s")
    enc = interp.encode(vlm, [sample])
    reg = interp.token_regions(vlm, sample, enc=enc)
    # 90 x 50 -> longest edge 96 -> 96 x 96 (multiples of 48): 2 x 2 tiles + the global view
    assert sorted(set(reg.views)) == ["global", "separator", *(f"tile {k}" for k in range(4))]
    seps = reg.positions[np.array(reg.views) == "separator"]
    text = vlm.tokenizer.convert_ids_to_tokens(enc.input_ids[0, seps].tolist())
    assert "<global-img>" in text and "<row_2_col_2>" in text
    assert _image_token(vlm) not in text


def test_several_images_in_one_row() -> None:
    vlm = shared_tiny_vlm("qwen2_vl")
    images = [random_image(32, 64, seed=4), random_image(48, 48, seed=5)]
    sample = interp.Sample(question="{image} left, {image} right: same?", image=images, id="m")
    reg = interp.token_regions(vlm, sample)
    assert reg.image_sizes == ((64, 32), (48, 48))
    assert (reg.images == 0).sum() == 8 and (reg.images == 1).sum() == 9
    assert reg.positions[reg.images == 0].max() < reg.positions[reg.images == 1].min()
    assert reg.in_box((0, 0, 48, 48), image=1).size == 9


def test_rows_without_an_image_map_to_nothing() -> None:
    vlm = shared_tiny_vlm("llava")
    regions = interp.token_regions(vlm, make_samples(2), "blind")
    assert [len(r) for r in regions] == [0, 0] and regions[0].image_sizes == ()
    with pytest.raises(interp.RegionError, match="0 image"):
        regions[0].grid(2, 2)


def test_onevision_downsampled_grid_matches_the_processor_count() -> None:
    # anyres_max_1 makes the model (and the processor's count) shrink the tile grid bilinearly
    vlm = tiny_vlm("llava_onevision")
    vlm.hf.config.vision_aspect_ratio = vlm.processor.vision_aspect_ratio = "anyres_max_1"
    sample = interp.Sample(question="what?", image=random_image(40, 60, seed=6), id="o")
    reg = interp.token_regions(vlm, sample)  # the count check would raise on a mismatch
    # 16 base tokens, then the 4 x 6 unpadded grid shrunk to 3 x 4, a newline after each row
    assert len(reg) == 16 + 3 * (4 + 1)
    tiles = reg.boxes[[v.startswith("tile") for v in reg.views]]
    assert tiles[:, 0].min() == 0 and tiles[:, 2].max() == 60 and tiles[:, 3].max() == 40


@pytest.mark.parametrize("arch", ["instructblip", "mllama"])
def test_families_without_a_spatial_layout_raise(arch: str) -> None:
    vlm = shared_tiny_vlm(arch)
    with pytest.raises(interp.NoSpatialLayoutError, match=arch):
        interp.token_regions(vlm, make_samples(1)[0])


def test_settings_are_the_ones_a_processor_call_uses() -> None:
    # InternVLProcessor passes crop_to_patches=True whatever its image processor's attribute says
    vlm = tiny_vlm("internvl")
    vlm.processor.image_processor.crop_to_patches = False
    sample = interp.Sample(question="what?", image=random_image(32, 64, seed=7), id="t")
    reg = interp.token_regions(vlm, sample)
    assert {"tile 0", "tile 1", "thumbnail"} <= set(reg.views)
    # a setting not mapped yet (Gemma 3's pan-and-scan crops) is refused with a typed error
    processor = SimpleNamespace(do_pan_and_scan=True)
    with pytest.raises(interp.LayoutNotMappedError, match="pan_and_scan"):
        gemma3_layout(processor, shared_tiny_vlm("gemma3").hf.config, (64, 64))
    assert issubclass(interp.LayoutNotMappedError, interp.InterpError)


def test_an_adapter_without_a_layout_says_so() -> None:
    vlm = tiny_vlm("llava")
    vlm.adapter = dataclasses.replace(vlm.adapter, token_layout=None)
    with pytest.raises(interp.LayoutNotMappedError, match="not mapped yet.*qwen2_vl"):
        interp.token_regions(vlm, make_samples(1)[0])


SIZES = [(1000, 700), (333, 1500), (50, 40), (640, 480), (4000, 3000)]
CHECKPOINTS = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.mark.parametrize(
    "checkpoint", ["Qwen2-VL-7B-Instruct", "Qwen2.5-VL-7B-Instruct", "Qwen3-VL-8B-Instruct"]
)
def test_qwen_layouts_at_published_settings_count_as_the_processor(checkpoint: str) -> None:
    path = CHECKPOINTS / "checkpoints" / checkpoint / "preprocessor_config.json"
    settings = json.loads(path.read_text())
    for key in ("image_processor_type", "processor_class"):
        settings.pop(key, None)
    ip = Qwen2VLImageProcessorPil(**settings)
    for w, h in SIZES:
        layout = qwen_layout(ip, None, (w, h))
        assert len(layout) == ip.get_number_of_image_patches(h, w, {}) // ip.merge_size**2
        # the tokens tile the whole image, without overlap
        area = np.prod(layout.boxes[:, 2:] - layout.boxes[:, :2], axis=1).sum()
        assert area == pytest.approx(w * h)


def test_llava_next_layout_at_published_settings_counts_as_the_processor() -> None:
    folder = CHECKPOINTS / "checkpoints" / "llava-v1.6-mistral-7b-hf"
    facts = json.loads((folder / "preprocessor_facts.json").read_text())
    config_json = CHECKPOINTS / "configs" / "llava-hf--llava-v1.6-vicuna-7b-hf.json"
    config = LlavaNextConfig(**json.loads(config_json.read_text()))
    config.image_token_id = shared_tiny_vlm("llava_next").image_token_id
    processor = LlavaNextProcessor(
        image_processor=LlavaNextImageProcessorPil(**facts),
        tokenizer=shared_tiny_vlm("llava_next").tokenizer,
        patch_size=14,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
    )
    token = processor.tokenizer.convert_ids_to_tokens(config.image_token_id)
    for w, h in SIZES[:-1]:  # the largest costs seconds of resizing
        layout = anyres_layout(processor, config, (w, h))
        ids = processor(text=[token], images=[Image.new("RGB", (w, h))], return_tensors="pt")[
            "input_ids"
        ]
        assert len(layout) == int((ids == config.image_token_id).sum())
        base = layout.boxes[[v == "base" for v in layout.views]]
        assert len(base) == 576 and base[:, 2].max() == pytest.approx(w)
