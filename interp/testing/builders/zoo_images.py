"""Each zoo type's own image inputs, sized to its tiny tower (:data:`IMAGE_PROCESSORS`, the one
place they are named): the borrowed processor of
:func:`interp.testing.builders.inferred.tiny_inferred` takes the type's PIL image processor where
its feature site needs more than plain ``pixel_values`` (``image_sizes`` for Pixtral towers,
``pixel_attention_mask`` and 5-D ``pixel_values`` for Idefics2, ``pixel_mask`` for Aria, the batch's
views side by side for MiniCPM-V), or, where that image processor needs torchvision (not in the
test environment), a CLIP one whose pixels are cut by hand as the type's tower reads them
(:func:`_hand_cut`: Nemotron-H Omni, Inkling, Inkling 2, Gemma 4 Unified, Kimi K2.5, Muse
Glimmer and Spark). A tower that merges 4 x 4 patches gets :data:`GRID_SIZE` images, where a
:data:`IMAGE_SIZE` one would be a single token (too few for the layout check to see anything).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

IMAGE_SIZE = 32
HIGH_RES_SIZE = 256  # DeepSeek-VL hybrid's SAM view: 16 x 16 patches, 4 x 4 after its neck
ARIA_SIZE, ARIA_PATCH = 490, 70  # 7 x 7 patches
# a tower that merges 4 x 4 patches of 8 px (a pixel shuffle by 4, two stride-2 convolutions)
# makes one token of a 32 px image: 128 px gives a 4 x 4 grid, enough for the layout check
GRID_SIZE = 128
SOFT_TOKENS = 24  # Gemma 4 Unified's token budget per image (a checkpoint's: 70 to 1120)


def _pixtral(vision: dict[str, Any]) -> Any:
    """Pixtral's image processor: longest edge :data:`IMAGE_SIZE`, the tower's patch; gives
    ``image_sizes`` (Mistral 3 and LightOnOCR crop each padded image to it)."""
    from transformers import PixtralImageProcessorPil

    p = int(vision["patch_size"])
    return PixtralImageProcessorPil(
        patch_size={"height": p, "width": p}, size={"longest_edge": IMAGE_SIZE}
    )


def _idefics2(vision: dict[str, Any]) -> Any:
    """Idefics2's image processor without splitting: 5-D ``pixel_values`` ``[rows, images, 3,
    H, W]`` and ``pixel_attention_mask``."""
    from transformers import Idefics2ImageProcessorPil

    return Idefics2ImageProcessorPil(
        size={"longest_edge": IMAGE_SIZE, "shortest_edge": IMAGE_SIZE}, do_image_splitting=False
    )


def _aria(vision: dict[str, Any]) -> Any:
    """Aria's image processor at its smaller size (490 px, the only sizes it takes are 490 and
    980), no split: padded square images and ``pixel_mask``."""
    from transformers import AriaImageProcessorPil

    return AriaImageProcessorPil(max_image_size=ARIA_SIZE, split_image=False)


def _square(name: str) -> Callable[[dict[str, Any]], Any]:
    """An image processor ``name`` that resizes to a :data:`IMAGE_SIZE` square."""

    def build(vision: dict[str, Any]) -> Any:
        import transformers

        return getattr(transformers, name)(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE})

    return build


def _granite_docling(vision: dict[str, Any]) -> Any:
    """Granite Docling's image processor without tiling: one :data:`GRID_SIZE` square tile per
    page, ``pixel_values`` ``[pages, tiles, 3, H, W]`` and ``pixel_attention_mask`` (real tiles)."""
    from transformers import GraniteDoclingImageProcessorPil

    return GraniteDoclingImageProcessorPil(
        size={"height": GRID_SIZE, "width": GRID_SIZE}, crop_to_patches=False
    )


def _square_grid(name: str) -> Callable[[dict[str, Any]], Any]:
    """An image processor ``name`` that resizes to a :data:`GRID_SIZE` square (PP-Chart2Table's),
    or a CLIP one doing so (``name`` empty): Step 3.7's global view (its processor needs
    torchvision) and GOT-OCR 2.0's image without crops are a plain bicubic square resize with
    CLIP's mean and std (GOT's own PIL processor does the same but also returns ``num_patches``,
    which its processor, not borrowed here, drops)."""

    def build(vision: dict[str, Any]) -> Any:
        import transformers

        square = {"height": GRID_SIZE, "width": GRID_SIZE}
        if not name:
            return transformers.CLIPImageProcessorPil(size=square, do_center_crop=False)
        return getattr(transformers, name)(size=square)

    return build


def _deepseek_vl_hybrid(vision: dict[str, Any]) -> Any:
    """DeepSeek-VL hybrid's image processor: the low-resolution view at :data:`IMAGE_SIZE`, the
    high-resolution one at :data:`HIGH_RES_SIZE` (whose SAM features, pooled 4 x 4, give the
    low-resolution view's token count)."""
    from transformers import DeepseekVLHybridImageProcessorPil

    return DeepseekVLHybridImageProcessorPil(
        size={"height": IMAGE_SIZE, "width": IMAGE_SIZE},
        high_res_size={"height": HIGH_RES_SIZE, "width": HIGH_RES_SIZE},
    )


def _hand_cut(
    names: list[str],
    cut: Callable[[np.ndarray], dict[str, np.ndarray]],
    resize_to: Callable[[int, int], tuple[int, int]] | None = None,
    **settings: Any,
) -> Any:
    """For a type whose image processor needs torchvision (absent from the test environment): a
    CLIP image processor at :data:`IMAGE_SIZE` (resized, centre-cropped; ``settings`` override
    its keywords; ``resize_to`` maps an image's (height, width) to the size the type's own
    processor resizes it to, uncropped) whose normalised ``[images, 3, H, W]`` pixels ``cut``
    lays out as the type's tower reads them; ``names`` are its model input names."""
    from transformers import BatchFeature, CLIPImageProcessorPil
    from transformers.image_utils import SizeDict

    class HandCut(CLIPImageProcessorPil):
        model_input_names = names

        def _validate_preprocess_kwargs(self, **kwargs: Any) -> None:
            if resize_to is not None:  # no size needed: resize_to gives it (Gemma 4 Unified's way)
                kwargs["do_resize"] = False
            super()._validate_preprocess_kwargs(**kwargs)

        def resize(self, image: np.ndarray, size: Any, *args: Any, **kwargs: Any) -> np.ndarray:
            if resize_to is not None:
                height, width = resize_to(*image.shape[-2:])
                size = SizeDict(height=height, width=width)
            return super().resize(image, size, *args, **kwargs)

        def __call__(self, images: Any, **kwargs: Any) -> BatchFeature:
            kwargs.pop("return_tensors", None)
            views = [np.asarray(v) for v in super().__call__(images, **kwargs)["pixel_values"]]
            if len({v.shape for v in views}) == 1:
                return BatchFeature(cut(np.stack(views)), tensor_type="pt")
            # images of several sizes (a processor that does not resize): cut one at a time
            parts = [cut(v[None]) for v in views]
            joined = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
            return BatchFeature(joined, tensor_type="pt")

    square = {"height": IMAGE_SIZE, "width": IMAGE_SIZE}
    return HandCut(**{"size": {"shortest_edge": IMAGE_SIZE}, "crop_size": square, **settings})


def _radio_patches(vision: dict[str, Any]) -> Any:
    """Nemotron-H Omni's: flat ``[patches, 3 * p * p]`` (channel, then row and column within the
    patch) over all images, with ``image_grid_hw`` per image."""
    p = int(vision["patch_size"])

    def cut(pixels: np.ndarray) -> dict[str, np.ndarray]:
        n, c, h, w = pixels.shape
        patches = pixels.reshape(n, c, h // p, p, w // p, p).transpose(0, 2, 4, 1, 3, 5)
        grid = np.array([[h // p, w // p]] * n)
        return {"pixel_values": patches.reshape(-1, c * p * p), "image_grid_hw": grid}

    return _hand_cut(["pixel_values", "image_grid_hw"], cut)


def _minicpm(mode: str, resolution: int = GRID_SIZE) -> Callable[[dict[str, Any]], Any]:
    """MiniCPM-V 4.6's PIL image processor (4.7 and MiniCPM-OCR take the same inputs; theirs need
    torchvision) without slicing, at the tiny tower's patch and the type's downsampling ``mode``,
    each image one view of about ``resolution`` squared pixels (at :data:`IMAGE_SIZE` the 16x
    merge leaves one token): ``pixel_values`` of the whole batch side by side
    ``[1, 3, p, patches * p]`` and ``target_sizes`` (patch rows and columns per view)."""

    def build(vision: dict[str, Any]) -> Any:
        from transformers import MiniCPMV4_6ImageProcessorPil

        return MiniCPMV4_6ImageProcessorPil(
            patch_size=int(vision["patch_size"]),
            scale_resolution=resolution,
            slice_mode=False,
            max_slice_nums=1,
            downsample_mode=mode,
        )

    return build


def _padded_blocks(vision: dict[str, Any]) -> Any:
    """Inkling 2's as its own image processor makes them: the image not resized, padded right and
    below to whole merged blocks (-1 on the 0-255 scale, mean and std 0.5) and cut into them,
    ``[blocks, (m·p)², 3]`` row by row, channels last, with ``image_grid_thw`` in blocks; its
    ``size`` is the block (the real one's 40 px)."""
    side = int(vision["patch_size"]) * int(vision["spatial_merge_size"])
    fill = (-1 / 255 - 0.5) / 0.5  # the pad value once rescaled and normalised

    def cut(pixels: np.ndarray) -> dict[str, np.ndarray]:
        n, c, h, w = pixels.shape
        rows, cols = -(-h // side), -(-w // side)
        padded = np.full((n, c, rows * side, cols * side), fill, dtype=pixels.dtype)
        padded[:, :, :h, :w] = pixels
        blocks = padded.transpose(0, 2, 3, 1).reshape(n, rows, side, cols, side, c)
        blocks = blocks.transpose(0, 1, 3, 2, 4, 5).reshape(-1, side * side, c)
        return {"pixel_values": blocks, "image_grid_thw": np.array([[1, rows, cols]] * n)}

    return _hand_cut(
        ["pixel_values", "image_grid_thw"],
        cut,
        size={"height": side, "width": side},
        do_resize=False,
        do_center_crop=False,
        image_mean=[0.5] * 3,
        image_std=[0.5] * 3,
    )


def _hmlp_patches(vision: dict[str, Any]) -> Any:
    """Inkling's (its tower is an MLP over each patch): ``[patches, t, p, p, 3]``, patches row by
    row, each repeated over the tower's ``t`` frames; ``image_grid_hw`` (patches per side) only
    slices the batch per image for the count and is dropped
    (:data:`~interp.testing.builders.zoo_inputs.DROPPED`)."""
    p, t = int(vision["patch_size"]), int(vision["temporal_patch_size"])

    def cut(pixels: np.ndarray) -> dict[str, np.ndarray]:
        n, c, h, w = pixels.shape
        patches = pixels.transpose(0, 2, 3, 1).reshape(n, h // p, p, w // p, p, c)
        patches = patches.transpose(0, 1, 3, 2, 4, 5).reshape(-1, 1, p, p, c)
        grid = np.array([[h // p, w // p]] * n)
        return {"pixel_values": np.repeat(patches, t, axis=1), "image_grid_hw": grid}

    return _hand_cut(["pixel_values"], cut)


def _model_patches(vision: dict[str, Any]) -> Any:
    """Gemma 4 Unified's: the image resized as its own processor does (keeping its aspect ratio,
    to the most pixels within :data:`SOFT_TOKENS` model patches, each side a multiple of one), its
    model patches (``patch_size · pooling_kernel_size`` pixels a side) row by row, each flattened
    channels last, padded to :data:`SOFT_TOKENS` — ``[images, SOFT_TOKENS, side² · 3]`` — with
    their ``image_position_ids`` (x, y; -1 for padding). The processor carries the settings
    (``patch_size``, ``pooling_kernel_size``, ``max_soft_tokens``) its resize follows."""
    # Gemma 4's PIL module has the same function as Gemma 4 Unified's (which needs torchvision)
    from transformers.models.gemma4.image_processing_pil_gemma4 import (
        get_aspect_ratio_preserving_size,
    )

    p, k = int(vision["patch_size"]), int(vision["pooling_kernel_size"])
    side = p * k

    def resize_to(height: int, width: int) -> tuple[int, int]:
        return get_aspect_ratio_preserving_size(height, width, p, SOFT_TOKENS * k * k, k)

    def cut(pixels: np.ndarray) -> dict[str, np.ndarray]:
        n, c, h, w = pixels.shape
        rows, cols = h // side, w // side
        patches = pixels.transpose(0, 2, 3, 1).reshape(n, rows, side, cols, side, c)
        patches = patches.transpose(0, 1, 3, 2, 4, 5).reshape(n, rows * cols, -1)
        ys, xs = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
        positions = np.stack([xs.ravel(), ys.ravel()], -1)
        pad = SOFT_TOKENS - rows * cols
        patches = np.pad(patches, ((0, 0), (0, pad), (0, 0)))
        positions = np.pad(positions, ((0, pad), (0, 0)), constant_values=-1)
        return {"pixel_values": patches, "image_position_ids": np.stack([positions] * n)}

    # no size: as the real processor's, the resize is resize_to's alone (a shortest-edge size
    # would let llava_layout pass the check when its grid happens to match)
    processor = _hand_cut(
        ["pixel_values", "image_position_ids"],
        cut,
        resize_to=resize_to,
        do_center_crop=False,
        size=None,
    )
    processor.patch_size, processor.pooling_kernel_size = p, k
    processor.max_soft_tokens = SOFT_TOKENS
    return processor


def _conv_patches(vision: dict[str, Any]) -> Any:
    """Kimi K2.5's (its patch embedding is a convolution over each patch): ``[patches, 3, p, p]``
    row by row, with ``image_grid_thw`` in patches."""
    p = int(vision["patch_size"])

    def cut(pixels: np.ndarray) -> dict[str, np.ndarray]:
        n, c, h, w = pixels.shape
        patches = pixels.reshape(n, c, h // p, p, w // p, p).transpose(0, 2, 4, 1, 3, 5)
        grid = np.array([[1, h // p, w // p]] * n)
        return {"pixel_values": patches.reshape(-1, c, p, p), "image_grid_thw": grid}

    return _hand_cut(["pixel_values", "image_grid_thw"], cut)


def _sam_view(vision: dict[str, Any]) -> Any:
    """DeepSeek-OCR 2's and Unlimited-OCR's image processors need torchvision: one global view,
    a CLIP image processor at the tiny SAM tower's :data:`HIGH_RES_SIZE` (no local crops)."""
    from transformers import CLIPImageProcessorPil

    return CLIPImageProcessorPil(
        size={"shortest_edge": HIGH_RES_SIZE},
        crop_size={"height": HIGH_RES_SIZE, "width": HIGH_RES_SIZE},
    )


def _raster_patches(vision: dict[str, Any]) -> Any:
    """Muse Glimmer's and Muse Spark's (their image processor, Glm4v's with patches kept in
    raster order, needs torchvision): a :data:`GRID_SIZE` / 2 square's patches row by row, each
    flattened (frame, channel, row, column) over the tower's ``patch_temporal`` frames, with
    ``image_grid_thw`` in patches; the tower groups each merge block itself. The processor's
    ``merge_size`` counts the placeholders (the borrowed Qwen3-VL processor reads it)."""
    p, t, m = int(vision["patch_size"]), int(vision["patch_temporal"]), int(vision["merge_size"])

    def cut(pixels: np.ndarray) -> dict[str, np.ndarray]:
        n, c, h, w = pixels.shape
        patches = pixels.reshape(n, c, h // p, p, w // p, p).transpose(0, 2, 4, 1, 3, 5)
        patches = np.repeat(patches[:, :, :, None], t, axis=3)  # (frame, channel, row, column)
        grid = np.array([[1, h // p, w // p]] * n)
        return {"pixel_values": patches.reshape(-1, t * c * p * p), "image_grid_thw": grid}

    side = GRID_SIZE // 2
    square = {"height": side, "width": side}
    processor = _hand_cut(
        ["pixel_values", "image_grid_thw"], cut, size=square, do_center_crop=False
    )
    processor.patch_size, processor.merge_size, processor.temporal_patch_size = p, m, t
    return processor


def _siglip2(vision: dict[str, Any]) -> Any:
    """LFM2-VL's image processor (torchvision only) is Siglip2's with a smart resize: Siglip2's
    PIL one at the tower's patch, at most a 4 x 4 patch grid; gives patch-flattened
    ``pixel_values``, ``spatial_shapes`` and ``pixel_attention_mask``."""
    from transformers import Siglip2ImageProcessorPil

    return Siglip2ImageProcessorPil(
        patch_size=int(vision["patch_size"]),
        max_num_patches=(IMAGE_SIZE // int(vision["patch_size"])) ** 2,
    )


def _video_llama_3(vision: dict[str, Any]) -> Any:
    """VideoLLaMA 3's image processor at the tower's patch, at most :data:`IMAGE_SIZE` squared
    pixels: patch-flattened ``pixel_values``, ``image_grid_thw`` and ``image_merge_sizes``."""
    from transformers import VideoLlama3ImageProcessorPil

    p = int(vision["patch_size"])
    return VideoLlama3ImageProcessorPil(
        patch_size=p, size={"longest_edge": IMAGE_SIZE**2, "shortest_edge": (2 * p) ** 2}
    )


def _paddleocr_vl(vision: dict[str, Any]) -> Any:
    """PaddleOCR-VL's image processor at the tiny tower's patch and merge (in the Qwen-VL
    processor it borrows): patches kept 2-D, ``[patches, 3, p, p]``, as its tower takes them; at
    most :data:`GRID_SIZE` squared pixels (at 32 px squared a probe image is two tokens)."""
    from transformers import PaddleOCRVLImageProcessorPil

    p, m = int(vision["patch_size"]), int(vision["spatial_merge_size"])
    return PaddleOCRVLImageProcessorPil(
        patch_size=p,
        merge_size=m,
        size={"shortest_edge": (p * m) ** 2, "longest_edge": GRID_SIZE**2},
    )


def _hunyuan_vl(vision: dict[str, Any]) -> Any:
    """HunYuan-VL's image processor at the tiny tower's patch and merge, at most
    :data:`GRID_SIZE` squared pixels: its patches row by row, as its merger reshapes them (the
    borrowed Qwen-VL one orders them by merged block)."""
    from transformers import HunYuanVLImageProcessorPil

    p, m = int(vision["patch_size"]), int(vision["spatial_merge_size"])
    return HunYuanVLImageProcessorPil(
        patch_size=p,
        merge_size=m,
        temporal_patch_size=int(vision.get("temporal_patch_size") or 1),
        size={"shortest_edge": (p * m) ** 2, "longest_edge": GRID_SIZE**2},
    )


# type -> its own PIL image processor, sized to the tiny tower's vision config
IMAGE_PROCESSORS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "mistral3": _pixtral,
    "lighton_ocr": _pixtral,
    "mistral_large4": _pixtral,
    "idefics2": _idefics2,
    "aria": _aria,
    "shieldgemma2": _square("Gemma3ImageProcessorPil"),
    "deepseek_vl": _square("DeepseekVLImageProcessorPil"),
    "lfm2_vl": _siglip2,
    "granite_docling": _granite_docling,
    "deepseek_vl_hybrid": _deepseek_vl_hybrid,
    "nemotron_h_omni": _radio_patches,
    "inkling2": _padded_blocks,
    "inkling_mm_model": _hmlp_patches,
    "gemma4_unified": _model_patches,
    "kimi_k25": _conv_patches,
    "deepseek_ocr2": _sam_view,
    "unlimited_ocr": _sam_view,
    "inkling2_loop": _padded_blocks,
    "minicpmv4_6": _minicpm("16x"),
    "minicpmv4_7": _minicpm("16x"),
    "minicpm_ocr": _minicpm("4x", GRID_SIZE // 2),  # 2 x 2 merges: half the size suffices
    "video_llama_3": _video_llama_3,
    "paddleocr_vl": _paddleocr_vl,
    "got_ocr2": _square_grid(""),
    "pp_chart2table": _square_grid("PPChart2TableImageProcessorPil"),
    "step3p7": _square_grid(""),
    "hunyuan_vl": _hunyuan_vl,
    "muse_glimmer": _raster_patches,
    "muse_spark": _raster_patches,
}


__all__ = [
    "ARIA_PATCH",
    "ARIA_SIZE",
    "GRID_SIZE",
    "HIGH_RES_SIZE",
    "IMAGE_PROCESSORS",
    "IMAGE_SIZE",
]
