"""Token → pixel-region maps (interp.token_regions) against the model's own first, local layer.

For every family with a spatial layout: perturb the pixels of one region of the original image,
run the stock processor and the vision tower's patch embedding (its first, local layer) on both
images, follow the family's merge / pooling / tiling through to the image tokens with the model's
own code (projector, pooling, pixel shuffle, LLaVA-NeXT's pack_image_features), and compare the
image tokens that changed with the tokens the map assigns to boxes overlapping the region.
Resizing spreads a pixel change over the filter's support, so the comparison is two inclusions
with a margin ``m`` (original pixels): every token whose box overlaps the region grown by ``m`` may
change, and every token whose box overlaps the region shrunk by ``m`` must change.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from PIL import Image

import interp
from interp.adapters import get_path
from interp.testing.tiny import shared_tiny_vlm, tiny_vlm
from tools.real import RealTokenizerMissing
from tools.real_models import real_vlm

Box = tuple[float, float, float, float]


def _noise(w: int, h: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)


def _perturbed(pixels: np.ndarray, box: tuple[int, int, int, int], seed: int) -> np.ndarray:
    x0, y0, x1, y1 = box
    out = pixels.copy()
    out[y0:y1, x0:x1] = _noise(x1 - x0, y1 - y0, seed + 1000)
    return out


def _inputs(vlm: interp.VLM, pixels: np.ndarray) -> dict[str, Any]:
    sample = interp.Sample(question="what is it?", image=Image.fromarray(pixels), id="x")
    return interp.encode(vlm, [sample]).inputs


# -- the model's first layer followed to the image tokens: [tokens, features] -------------------


def _grid_tokens(vlm: interp.VLM, inputs: dict[str, Any]) -> torch.Tensor:
    """LLaVA / PaliGemma: one patch embedding per token, row-major."""
    conv = vlm.hf.model.vision_tower.embeddings.patch_embedding
    return conv(inputs["pixel_values"]).flatten(2).transpose(1, 2)[0]


def _gemma3_tokens(vlm: interp.VLM, inputs: dict[str, Any]) -> torch.Tensor:
    conv = vlm.hf.model.vision_tower.embeddings.patch_embedding
    patches = conv(inputs["pixel_values"]).flatten(2).transpose(1, 2)
    return vlm.hf.model.multi_modal_projector(patches)[0]


def _gemma4_tokens(vlm: interp.VLM, inputs: dict[str, Any]) -> torch.Tensor:
    """Gemma 4: patches embedded by a linear layer, pooled by their (x, y) positions."""
    tower = vlm.hf.model.vision_tower
    pixels, where = inputs["pixel_values"], inputs["image_position_ids"]
    hidden = tower.patch_embedder.input_proj(pixels)
    hidden = hidden.masked_fill((where == -1).all(-1)[..., None], 0.0)
    k = vlm.processor.image_processor.pooling_kernel_size
    pooled, real = tower.pooler._avg_pool_by_positions(hidden, where, pixels.shape[1] // k**2)
    return pooled[real]


def _qwen_tokens(vlm: interp.VLM, inputs: dict[str, Any]) -> torch.Tensor:
    visual = get_path(vlm.hf, vlm.adapter.image_features)
    merged = visual.merger(visual.patch_embed(inputs["pixel_values"]))
    return getattr(merged, "pooler_output", merged)


def _anyres_tokens(vlm: interp.VLM, inputs: dict[str, Any]) -> torch.Tensor:
    model = vlm.hf.model
    crops = inputs["pixel_values"][0]
    feats = model.vision_tower.embeddings.patch_embedding(crops).flatten(2).transpose(1, 2)
    feats = model.multi_modal_projector(feats)
    kwargs: dict[str, Any] = {"image_newline": model.image_newline}
    if vlm.adapter.name == "llava_onevision":
        kwargs["vision_aspect_ratio"] = vlm.hf.config.vision_aspect_ratio
    else:
        kwargs["vision_feature_select_strategy"] = vlm.hf.config.vision_feature_select_strategy
    packed, _ = model.pack_image_features([feats], inputs["image_sizes"], **kwargs)
    return packed[0]


def _idefics3_tokens(vlm: interp.VLM, inputs: dict[str, Any]) -> torch.Tensor:
    model = vlm.hf.model
    views = inputs["pixel_values"][0]
    conv = model.vision_model.embeddings.patch_embedding
    feats = model.connector(conv(views).flatten(2).transpose(1, 2).contiguous())
    return feats.flatten(0, 1)


def _internvl_tokens(vlm: interp.VLM, inputs: dict[str, Any]) -> torch.Tensor:
    model = vlm.hf.model
    tiles = inputs["pixel_values"]
    feats = model.vision_tower.embeddings.patch_embeddings(tiles)
    side = int(feats.shape[1] ** 0.5)
    feats = feats.reshape(len(tiles), side, side, -1).contiguous()
    feats = model.pixel_shuffle(feats, scale_factor=vlm.hf.config.downsample_ratio)
    feats = model.multi_modal_projector(feats.reshape(len(tiles), -1, feats.shape[-1]))
    return feats.flatten(0, 1)


TokensFn = Callable[[interp.VLM, dict[str, Any]], torch.Tensor]

# (arch, image (width, height), the smallest canvas side the processor resizes it to (px, for
# the margin), first layer to tokens)
CASES: list[tuple[str, tuple[int, int], int, TokensFn]] = [
    ("llava", (64, 40), 32, _grid_tokens),  # CLIP: shortest edge + centre crop
    ("real:llava", (500, 300), 336, _grid_tokens),  # LLaVA-1.5's own 336 px settings: 576 tokens
    ("llava_siglip", (50, 30), 32, _grid_tokens),  # SigLIP: squashed to a square
    ("paligemma", (50, 30), 32, _grid_tokens),
    ("gemma3", (64, 40), 32, _gemma3_tokens),
    ("gemma4", (64, 40), 48, _gemma4_tokens),  # aspect kept, within the soft-token budget
    ("qwen2_vl", (64, 48), 48, _qwen_tokens),
    ("qwen2_5_vl", (40, 60), 32, _qwen_tokens),
    ("qwen3_vl", (64, 48), 48, _qwen_tokens),
    ("qwen2_5_omni_thinker", (48, 64), 48, _qwen_tokens),
    ("qwen3_omni_moe_thinker", (64, 40), 32, _qwen_tokens),
    ("llava_next", (60, 40), 16, _anyres_tokens),  # 1x2 tiles, padded and unpadded
    ("llava_next", (40, 64), 16, _anyres_tokens),  # 2x1 tiles
    ("llava_onevision", (60, 40), 16, _anyres_tokens),
    ("llava_next_video", (64, 32), 16, _anyres_tokens),
    ("idefics3", (64, 40), 48, _idefics3_tokens),
    ("idefics3_split", (90, 50), 48, _idefics3_tokens),  # 2 x 2 tiles + the global view
    ("smolvlm_split", (50, 90), 48, _idefics3_tokens),
    ("internvl", (64, 32), 32, _internvl_tokens),  # 2 tiles + the thumbnail
    ("internvl", (40, 40), 32, _internvl_tokens),  # one tile, no thumbnail
]


def _model(arch: str) -> interp.VLM:
    if arch.endswith("_split"):
        return _split(arch.removesuffix("_split"))
    if arch.startswith("real:"):
        try:
            return real_vlm(arch[5:])
        except RealTokenizerMissing as err:
            pytest.skip(str(err))
    return shared_tiny_vlm(arch)


_SPLIT: dict[str, interp.VLM] = {}


def _split(arch: str) -> interp.VLM:
    """Idefics3 / SmolVLM with image splitting on: images up to 96 px cut in 48 px tiles + a
    global view."""
    if arch not in _SPLIT:
        vlm = tiny_vlm(arch)
        ip = vlm.processor.image_processor
        ip.do_image_splitting = True
        ip.size = {"longest_edge": 2 * ip.max_image_size["longest_edge"]}
        _SPLIT[arch] = vlm
    return _SPLIT[arch]


def _margin(image: tuple[int, int], side: int) -> float:
    """Original pixels a change can spread by: the bicubic support (2 output pixels each side) at
    the coarsest scale the image is resized by (to a ``side``-pixel canvas), plus slack for
    processors that resize twice."""
    return 2.0 * max(1.0, max(image) / side) + 3.0


def _overlap(boxes: np.ndarray, box: Box) -> np.ndarray:
    x0, y0, x1, y1 = box
    with np.errstate(invalid="ignore"):
        return (np.minimum(boxes[:, 2], x1) > np.maximum(boxes[:, 0], x0)) & (
            np.minimum(boxes[:, 3], y1) > np.maximum(boxes[:, 1], y0)
        )


def _boxes(image: tuple[int, int], seed: int) -> list[tuple[int, int, int, int]]:
    """The cells of a 1 x 2 and of a 2 x 1 grid (the left and the bottom half), and a random box
    (large enough that some tokens lie inside it by more than the margin)."""
    w, h = image
    rng = np.random.default_rng(seed)
    out = [(0, 0, w // 2, h), (0, h // 2, w, h)]
    for _ in range(1):
        bw, bh = int(rng.integers(w // 2, 4 * w // 5)), int(rng.integers(h // 2, 4 * h // 5))
        x0, y0 = int(rng.integers(0, w - bw)), int(rng.integers(0, h - bh))
        out.append((x0, y0, x0 + bw, y0 + bh))
    return out


@pytest.mark.parametrize(
    ("arch", "image", "side", "tokens"), CASES, ids=[f"{a}-{w}x{h}" for a, (w, h), *_ in CASES]
)
def test_perturbed_region_changes_the_mapped_tokens(
    arch: str, image: tuple[int, int], side: int, tokens: TokensFn
) -> None:
    vlm = _model(arch)
    base = _noise(*image, seed=1)
    sample = interp.Sample(question="what is it?", image=Image.fromarray(base), id="x")
    regions = interp.token_regions(vlm, sample)
    assert isinstance(regions, interp.TokenRegions)
    image_rows = np.array([v != "separator" for v in regions.views])
    boxes = regions.boxes[image_rows]
    margin = _margin(image, side)
    with torch.no_grad():
        ref = tokens(vlm, _inputs(vlm, base))
        assert len(ref) == len(boxes), "the first-layer tokens and the map disagree on the count"
        checked = 0
        for k, box in enumerate(_boxes(image, seed=len(arch) + image[0])):
            out = tokens(vlm, _inputs(vlm, _perturbed(base, box, seed=k)))
            changed = (out - ref).abs().amax(-1).gt(1e-5).numpy()
            x0, y0, x1, y1 = box
            grown = _overlap(boxes, (x0 - margin, y0 - margin, x1 + margin, y1 + margin))
            shrunk = _overlap(boxes, (x0 + margin, y0 + margin, x1 - margin, y1 - margin))
            assert changed.any()
            # changed tokens lie where the map puts the region (up to the margin) ...
            assert not (changed & ~grown).any(), (
                f"box {box}: tokens {np.flatnonzero(changed & ~grown)}"
            )
            # ... and every token the map puts well inside the region changed
            assert not (shrunk & ~changed).any(), (
                f"box {box}: tokens {np.flatnonzero(shrunk & ~changed)}"
            )
            checked += int(shrunk.sum())
        assert checked > 0, "no token lay well inside any perturbed box: the test checks nothing"
