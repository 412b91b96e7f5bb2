"""Per-family token layouts: where each image token of one image comes from in the original image.

A layout function takes the processor, the model config and the original image size ``(width,
height)`` and returns an :class:`ImageLayout`: one entry per image-token placeholder the processor
writes for that image, in prompt order, each with a box ``(x0, y0, x1, y1)`` in original-image
pixels (NaN for a token with no place in the image: a newline, a class token) and the view it
belongs to (``"image"`` for a single view; ``"base"``, ``"tile k"``, ``"thumbnail"``, ``"global"``
for multi-view layouts).

Everything is derived from the processor's real settings (resize, crop, pad, patch and merge
sizes, tiling) and follows the image's pixels through them as affine maps: a resize scales
coordinates, a crop or pad shifts them. Each family's function is named by its adapter entry
(:attr:`interp.Adapter.token_layout`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from jaxtyping import Float

NON_SPATIAL = ("newline", "cls", "separator", "padding")


@dataclass(frozen=True)
class ImageLayout:
    """The image-token entries of one image, in prompt order."""

    boxes: Float[np.ndarray, "n 4"]
    views: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.views)

    @staticmethod
    def concat(parts: list[ImageLayout]) -> ImageLayout:
        if not parts:
            return ImageLayout(np.zeros((0, 4)), ())
        return ImageLayout(
            np.concatenate([p.boxes for p in parts]), tuple(v for p in parts for v in p.views)
        )


LayoutFn = Callable[[Any, Any, tuple[int, int]], ImageLayout]


@dataclass(frozen=True)
class View:
    """A canvas made from the original image: canvas pixel ``u = sx·x + tx``, ``v = sy·y + ty``."""

    sx: float
    sy: float
    tx: float = 0.0
    ty: float = 0.0

    @staticmethod
    def resized(size: tuple[int, int], to: tuple[int, int]) -> View:
        """The whole image ``size`` (w, h) resized to ``to`` (w, h)."""
        return View(to[0] / size[0], to[1] / size[1])

    def shift(self, dx: float, dy: float) -> View:
        """Crop (negative shift) or pad (positive shift) the canvas."""
        return View(self.sx, self.sy, self.tx + dx, self.ty + dy)

    def scale(self, fx: float, fy: float) -> View:
        return View(self.sx * fx, self.sy * fy, self.tx * fx, self.ty * fy)

    def grid(
        self,
        image: tuple[int, int],
        rows: int,
        cols: int,
        cell: tuple[float, float],
        origin: tuple[float, float] = (0.0, 0.0),
        label: str = "image",
    ) -> ImageLayout:
        """Row-major ``rows × cols`` tokens, each a ``cell`` (w, h) of canvas pixels from
        ``origin``, mapped back to the original image and clipped to it (a token wholly in
        padding is marked ``"padding"``)."""
        c, r = np.meshgrid(np.arange(cols), np.arange(rows))
        u0 = origin[0] + c.ravel() * cell[0]
        v0 = origin[1] + r.ravel() * cell[1]
        boxes = np.stack(
            [
                (u0 - self.tx) / self.sx,
                (v0 - self.ty) / self.sy,
                (u0 + cell[0] - self.tx) / self.sx,
                (v0 + cell[1] - self.ty) / self.sy,
            ],
            axis=1,
        )
        w, h = image
        boxes[:, [0, 2]] = boxes[:, [0, 2]].clip(0, w)
        boxes[:, [1, 3]] = boxes[:, [1, 3]].clip(0, h)
        empty = (boxes[:, 2] <= boxes[:, 0]) | (boxes[:, 3] <= boxes[:, 1])
        boxes[empty] = np.nan
        views = tuple("padding" if e else label for e in empty)
        return ImageLayout(boxes, views)


def non_spatial(label: str, n: int = 1) -> ImageLayout:
    return ImageLayout(np.full((n, 4), np.nan), (label,) * n)


def _get(size: Any, key: str) -> Any:
    return size.get(key) if isinstance(size, dict) else getattr(size, key, None)


def _image_processor(processor: Any) -> Any:
    return getattr(processor, "image_processor", processor)


def _opt(processor: Any, key: str, default: Any = None) -> Any:
    """The value of image setting ``key`` that a processor call uses: the processor's own image
    keywords (class defaults such as InternVL's ``crop_to_patches=True`` or Gemma 3's
    ``do_pan_and_scan=False``, merged by transformers) over the image processor's attribute."""
    try:
        merged = processor._merge_kwargs(
            processor.valid_processor_kwargs,
            tokenizer_init_kwargs=processor.tokenizer.init_kwargs,
        )["images_kwargs"]
    except (AttributeError, KeyError, TypeError):
        merged = {}
    if merged.get(key) is not None:
        return merged[key]
    return getattr(_image_processor(processor), key, default)


def resize_crop(processor: Any, image: tuple[int, int]) -> tuple[View, tuple[int, int]]:
    """The view and canvas (w, h) of a CLIP/SigLIP-style processor: resize (to a fixed size, or
    the shortest edge keeping the aspect ratio), then centre crop."""
    w, h = image
    view, canvas = View(1.0, 1.0), (w, h)
    if _opt(processor, "do_resize", True):
        size = _opt(processor, "size")
        if _get(size, "height") and _get(size, "width"):
            canvas = (int(_get(size, "width")), int(_get(size, "height")))
        else:
            short = int(_get(size, "shortest_edge"))
            if w <= h:
                canvas = (short, int(short * h / w))
            else:
                canvas = (int(short * w / h), short)
        view = View.resized(image, canvas)
    crop = _opt(processor, "crop_size")
    if _opt(processor, "do_center_crop", False) and crop:
        cw, ch = int(_get(crop, "width")), int(_get(crop, "height"))
        view = view.shift(-((canvas[0] - cw) // 2), -((canvas[1] - ch) // 2))
        canvas = (cw, ch)
    return view, canvas


def _vision(config: Any) -> Any:
    return config.vision_config


# -- single-grid families -----------------------------------------------------------------------


def llava_layout(processor: Any, config: Any, image: tuple[int, int]) -> ImageLayout:
    """LLaVA / PaliGemma: one resized (and cropped) view, a grid of patches; a kept CLS token
    (``"full"`` strategy with ``num_additional_image_tokens``) comes first and is non-spatial."""
    view, canvas = resize_crop(processor, image)
    patch = int(_vision(config).patch_size)
    grid = view.grid(image, canvas[1] // patch, canvas[0] // patch, (patch, patch))
    strategy = getattr(config, "vision_feature_select_strategy", "full")
    extra = int(getattr(processor, "num_additional_image_tokens", 0) or 0)
    if strategy == "full" and extra:
        return ImageLayout.concat([non_spatial("cls", extra), grid])
    return grid


# config attributes naming how many patches per side one token merges (pixel shuffle, patch merger)
MERGE_ATTRS = (
    "downsample_factor",
    "scale_factor",
    "spatial_merge_size",
    "merge_size",
    "merge_kernel_size",
    "hidden_stride",  # Ovis2's visual tokenizer: hidden_stride x hidden_stride patches a token
)


def _merge(config: Any) -> int:
    for where in (config, getattr(config, "vision_config", None)):
        for key in MERGE_ATTRS:
            value = getattr(where, key, None)
            value = value[0] if isinstance(value, (list, tuple)) and value else value
            if isinstance(value, int) and value > 1:
                return value
    for where in (config, getattr(config, "vision_config", None)):  # tokens per patch side
        for key in ("downsample_ratio", "pixel_shuffle_ratio"):
            ratio = getattr(where, key, None)
            if isinstance(ratio, float) and 0 < ratio < 1:
                return round(1 / ratio)
    return 1


def _side(value: Any) -> int:
    return int(value[0] if isinstance(value, (list, tuple)) else value)


# processor outputs giving an image's patch grid: (..., rows, columns) in patches
PATCH_GRIDS = ("image_grid_thw", "image_grid_hw", "spatial_shapes")


def grid_layout(processor: Any, config: Any, image: tuple[int, int]) -> ImageLayout:
    """One view, a patch grid merged ``k × k``, on the canvas the image processor really
    produces: it is run on a blank image of ``image``'s size and the canvas read from its
    outputs — a patch grid (``image_grid_thw``, ``image_grid_hw``, ``spatial_shapes``: rows and
    columns of patches, flattened patches), else ``image_sizes`` (a processor that pads, such as
    Pixtral's) or the pixels' height and width; the image is resized onto it, centre-cropped
    where the processor crops (:func:`resize_crop`). ``k``: the processor's ``merge_size``, else
    the config's merge setting (:data:`MERGE_ATTRS`, a pixel-shuffle ratio), else 1. A candidate
    of :mod:`interp.layout_check` for families whose processor makes one view of any size."""
    from PIL import Image

    out = _image_processor(processor)(images=[Image.new("RGB", image)], return_tensors="pt")
    merge = int(_opt(processor, "merge_size") or _merge(config))
    grid = next((out[k] for k in PATCH_GRIDS if k in out), None)
    if grid is not None:
        if grid.shape[0] != 1:
            raise ValueError(f"not one view: {grid.shape[0]} patch grids")
        patch = _side(_opt(processor, "patch_size") or _vision(config).patch_size)
        rows, cols = (int(v) for v in grid[0, -2:])
        view = View.resized(image, (cols * patch, rows * patch))
        unit = patch * merge
        return view.grid(image, rows // merge, cols // merge, (unit, unit))
    pixels = out["pixel_values"]
    while pixels.dim() > 4 and pixels.shape[0] == 1:  # [rows, images, ...] of one image
        pixels = pixels[0]
    if pixels.dim() != 4 or pixels.shape[0] != 1:
        raise ValueError(f"not one view: pixel_values of shape {tuple(pixels.shape)}")
    h, w = (int(v) for v in (out["image_sizes"][0] if "image_sizes" in out else pixels.shape[-2:]))
    if _opt(processor, "do_center_crop", False):
        view, canvas = resize_crop(processor, image)
        if canvas != (w, h):
            raise ValueError(f"the crop gives {canvas}, the processor {(w, h)}")
    else:
        view = View.resized(image, (w, h))
    unit = _side(_vision(config).patch_size) * merge
    return view.grid(image, h // unit, w // unit, (unit, unit))


def gemma3_layout(processor: Any, config: Any, image: tuple[int, int]) -> ImageLayout:
    """Gemma 3: a resized square view whose patch grid is average-pooled to
    ``mm_tokens_per_image`` tokens."""
    if _opt(processor, "do_pan_and_scan", False):
        from .errors import LayoutNotMappedError

        raise LayoutNotMappedError(
            "gemma3 with do_pan_and_scan=True (extra crops) is not mapped yet; set "
            "processor.image_processor.do_pan_and_scan = False"
        )
    view, canvas = resize_crop(processor, image)
    side = math.isqrt(int(config.mm_tokens_per_image))
    cell = (canvas[0] / side, canvas[1] / side)
    return view.grid(image, side, side, cell)


def qwen_layout(processor: Any, config: Any, image: tuple[int, int]) -> ImageLayout:
    """Qwen2-VL, Qwen2.5-VL, Qwen3-VL and the Qwen Omni thinkers: the image resized to a multiple
    of patch × merge (``smart_resize`` within the pixel bounds), one token per merged
    ``merge × merge`` block of patches, row-major."""
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import smart_resize

    patch, merge = int(_opt(processor, "patch_size")), int(_opt(processor, "merge_size"))
    size = _opt(processor, "size") or {}
    lo = _get(size, "shortest_edge") or _opt(processor, "min_pixels")
    hi = _get(size, "longest_edge") or _opt(processor, "max_pixels")
    w, h = image
    rh, rw = smart_resize(h, w, factor=patch * merge, min_pixels=lo, max_pixels=hi)
    unit = patch * merge
    return View.resized(image, (rw, rh)).grid(image, rh // unit, rw // unit, (unit, unit))


def gemma4_layout(processor: Any, config: Any, image: tuple[int, int]) -> ImageLayout:
    """Gemma 4: the image resized, keeping its aspect ratio, to the largest multiple of
    patch × pooling kernel within the soft-token budget; one token per ``k × k`` block of
    patches, row-major."""
    from transformers.models.gemma4.image_processing_pil_gemma4 import (
        get_aspect_ratio_preserving_size,
    )

    patch, k = int(_opt(processor, "patch_size")), int(_opt(processor, "pooling_kernel_size"))
    w, h = image
    rh, rw = h, w
    if _opt(processor, "do_resize", True):
        budget = int(_opt(processor, "max_soft_tokens")) * k * k
        rh, rw = get_aspect_ratio_preserving_size(h, w, patch, budget, k)
    unit = patch * k
    return View.resized(image, (rw, rh)).grid(image, rh // unit, rw // unit, (unit, unit))


# types whose tokens come from the patch grid through two stride-2 3 x 3 convolutions (kernel 3,
# padding 1: each halves a side, rounding up): GotOcr2MultiModalProjector's conv_upsampler1/2
# (GOT-OCR 2.0, PP-Chart2Table, which reuses it), Step3p7VisionModel's downsampler1/2,
# UnlimitedOcrSamVisionProj's conv1/2
CONV_DOWNSAMPLED = {"got_ocr2": 4, "pp_chart2table": 4, "step3p7": 4, "unlimited_ocr": 4}
# of those, the types whose global view closes each row with image_newline and ends with
# view_separator (UnlimitedOcrModel.get_image_features)
NEWLINE_FRAMED = ("unlimited_ocr",)


def conv_downsampled_layout(processor: Any, config: Any, image: tuple[int, int]) -> ImageLayout:
    """GOT-OCR 2.0 / PP-Chart2Table / Step 3.7's global view: the image resized (and cropped) as
    the image processor does (:func:`resize_crop`: GOT's square resize), a grid of patches
    (``vision_config.patch_size``) brought down ``k`` times per side by strided convolutions
    (:data:`CONV_DOWNSAMPLED`; each stride-2 convolution of a side ``n`` gives ``ceil(n / 2)``),
    one token per ``k × k`` block of patches, row-major (the convolutions' output flattened as
    ``flatten(2).permute(0, 2, 1)``). Unlimited-OCR (:data:`NEWLINE_FRAMED`; its SAM tower's
    ``sam_config.patch_size``): each row followed by ``image_newline``, then ``view_separator``
    (a learned vector, labelled ``"cls"``): ``rows · (cols + 1) + 1`` tokens. Local crops (Step
    3.7's, Unlimited-OCR's: an image past the processor's crop size) are not mapped: such an
    image's token count differs and the layout is skipped."""
    kind = str(getattr(config, "model_type", ""))
    k = CONV_DOWNSAMPLED.get(kind)
    if k is None:
        raise ValueError("not a type with a strided-convolution merge")
    view, canvas = resize_crop(processor, image)
    vision = _vision(config)
    patch = _side(getattr(vision, "sam_config", vision).patch_size)
    cols, rows = canvas[0] // patch, canvas[1] // patch
    for _ in range(int(math.log2(k))):
        cols, rows = -(-cols // 2), -(-rows // 2)
    grid = view.grid(image, rows, cols, (patch * k, patch * k))
    if kind not in NEWLINE_FRAMED:
        return grid
    parts = []
    for r in range(rows):
        row = slice(r * cols, (r + 1) * cols)
        parts += [ImageLayout(grid.boxes[row], grid.views[row]), non_spatial("newline")]
    return ImageLayout.concat([*parts, non_spatial("cls")])


def hunyuan_vl_layout(processor: Any, config: Any, image: tuple[int, int]) -> ImageLayout:
    """HunYuan-VL: :func:`grid_layout`'s merged grid (the image smart-resized to a multiple of
    patch × merge, one token per ``merge × merge`` block by ``HunYuanVLVisionPatchMerger``'s
    strided convolution), framed as its merger frames it: ``image_begin``, each row of tokens
    followed by ``image_newline``, ``image_end`` — ``rows · (cols + 1) + 2`` tokens (the split
    sizes of ``HunYuanVLModel.get_image_features``). The begin and end tokens are learned
    vectors at image-token placeholders, non-spatial: labelled ``"cls"`` (``"separator"`` is for
    text tokens inside an image's span)."""
    if getattr(config, "model_type", "") != "hunyuan_vl":
        raise ValueError("not HunYuan-VL's framed grid")
    grid = grid_layout(processor, config, image)
    left = grid.boxes[:, 0]
    rows = int(np.sum(left == np.nanmin(left)))  # tokens at the left edge: one per row
    cols = len(grid) // rows
    parts = [non_spatial("cls")]
    for r in range(rows):
        row = slice(r * cols, (r + 1) * cols)
        parts += [ImageLayout(grid.boxes[row], grid.views[row]), non_spatial("newline")]
    return ImageLayout.concat([*parts, non_spatial("cls")])


# types whose image processor cuts the unresized image, padded, into blocks of its ``size``
PADDED_BLOCKS = ("inkling2", "inkling2_loop")


def padded_blocks_layout(processor: Any, config: Any, image: tuple[int, int]) -> ImageLayout:
    """Inkling 2: the image is not resized; ``Inkling2ImageProcessor._preprocess`` pads it right
    and below to whole blocks of its ``size`` (h × w pixels) and cuts ``ceil(H / h) ×
    ceil(W / w)`` blocks, row-major, one image token each (the tower merges each block's
    patches); a token's box is its block clipped to the image."""
    if getattr(config, "model_type", "") not in PADDED_BLOCKS:
        raise ValueError("not a type that cuts the unresized image into blocks")
    size = _opt(processor, "size")
    bw, bh = int(_get(size, "width")), int(_get(size, "height"))
    w, h = image
    return View(1.0, 1.0).grid(image, -(-h // bh), -(-w // bw), (bw, bh))


def minicpmv_layout(processor: Any, config: Any, image: tuple[int, int]) -> ImageLayout:
    """MiniCPM-V 4.6 / 4.7 / MiniCPM-OCR, one view (no slices): the image resized as the image
    processor really does (run on a blank image; its ``target_sizes``: rows and columns of
    patches), one token per ``k × k`` patches, row-major — ``k`` 4 in ``"16x"`` mode (the ViT's
    window merger then ``MiniCPMV4_6Merger``, 2 × 2 each), 2 in ``"4x"`` mode (the merger
    alone), as ``find_best_resize``'s ``merge_factor``. An image cut into slices (several target
    sizes) is not mapped."""
    from PIL import Image

    out = _image_processor(processor)(images=[Image.new("RGB", image)], return_tensors="pt")
    if "target_sizes" not in out:
        raise ValueError("no target_sizes: not MiniCPM-V's processor")
    sizes = np.asarray(out["target_sizes"]).reshape(-1, 2)
    if len(sizes) != 1:
        raise ValueError(f"not one view: {len(sizes)} slices")
    rows, cols = (int(v) for v in sizes[0])
    patch = _side(_opt(processor, "patch_size") or _vision(config).patch_size)
    mode = _opt(processor, "downsample_mode") or getattr(config, "downsample_mode", "16x")
    k = 2 if mode == "4x" else 4
    view = View.resized(image, (cols * patch, rows * patch))
    return view.grid(image, rows // k, cols // k, (patch * k, patch * k))


def fuyu_layout(processor: Any, config: Any, image: tuple[int, int]) -> ImageLayout:
    """Fuyu: the image shrunk (never enlarged) to fit the processor's ``size``, keeping its aspect
    ratio (``FuyuImageProcessor.resize``: ``int(side · min(h_t / h, w_t / w))``), padded below and
    right; ``preprocess_with_tokenizer_info`` keeps the unpadded part rounded up to whole patches
    and writes one image token per patch, row-major (each row's newline token is text, not an
    image token). A patch reaching into the padding is clipped to the image."""
    if getattr(config, "model_type", "") != "fuyu":
        raise ValueError("not Fuyu's patch grid")
    size, patch = _opt(processor, "size"), _opt(processor, "patch_size")
    th, tw = int(_get(size, "height")), int(_get(size, "width"))
    ph, pw = int(_get(patch, "height")), int(_get(patch, "width"))
    w, h = image
    nw, nh = w, h
    if _opt(processor, "do_resize", True) and (w > tw or h > th):
        scale = min(th / h, tw / w)
        nh, nw = int(h * scale), int(w * scale)
    view = View.resized(image, (nw, nh))
    return view.grid(image, -(-nh // ph), -(-nw // pw), (pw, ph))


# -- tiled families -------------------------------------------------------------------------------


def anyres_layout(
    processor: Any, config: Any, image: tuple[int, int], *, images_in_row: int = 1
) -> ImageLayout:
    """LLaVA-NeXT / -NeXT-Video / -OneVision: the base view (the whole image resized), then the
    any-res tiles (the image resized into the best pinpoint resolution, padded, cut in tiles)
    unpadded as the model unpads them, one newline token after each row. OneVision's
    ``anyres_max_N`` downsampling of large grids is followed (each token then covers its share
    of the unpadded area). OneVision gives each image of a row of several (``images_in_row`` > 1)
    its base view alone, then one newline token (its processor's multi-image rule)."""
    from transformers.image_processing_utils import get_patch_output_size, select_best_resolution

    vision = _vision(config)
    side = int(vision.image_size) // int(vision.patch_size)
    w, h = image
    size = _opt(processor, "size")
    base_size = (
        (int(_get(size, "width")), int(_get(size, "height")))
        if _get(size, "height")
        else (int(_get(size, "shortest_edge")),) * 2
    )
    crop = _opt(processor, "crop_size")
    tile = int(_get(crop, "height")) if crop and _get(crop, "height") else base_size[1]
    # base: resized to the base size, then as every tile: resized and centre-cropped
    view, canvas = View.resized(image, base_size), base_size
    inner, inner_canvas = resize_crop(processor, canvas)
    view = View(view.sx * inner.sx, view.sy * inner.sy, inner.tx, inner.ty)
    cell = (inner_canvas[0] / side, inner_canvas[1] / side)
    base = view.grid(image, side, side, cell, label="base")
    if images_in_row > 1 and getattr(config, "model_type", "") == "llava_onevision":
        return ImageLayout.concat([base, non_spatial("newline")])
    bh, bw = select_best_resolution((h, w), config.image_grid_pinpoints)
    nh, nw = get_patch_output_size(
        np.zeros((3, h, w)), (bh, bw), input_data_format="channels_first"
    )
    canvas_view = View.resized(image, (nw, nh)).shift((bw - nw) // 2, (bh - nh) // 2)
    tiles_h, tiles_w = bh // tile, bw // tile
    rows, cols = tiles_h * side, tiles_w * side
    # unpad exactly as the model does (from the original size and the feature grid)
    r0, r1, c0, c1 = 0, rows, 0, cols
    if w / h > cols / rows:
        new_h = int(round(h * (cols / w), 7))
        pad = (rows - new_h) // 2
        r0, r1 = pad, rows - pad
    else:
        new_w = int(round(w * (rows / h), 7))
        pad = (cols - new_w) // 2
        c0, c1 = pad, cols - pad
    grid_rows, grid_cols = r1 - r0, c1 - c0
    aspect = getattr(config, "vision_aspect_ratio", None)
    if aspect and str(aspect).startswith("anyres_max_"):
        ratio = math.sqrt(grid_rows * grid_cols / (int(str(aspect)[11:]) * side**2))
        if ratio > 1.1:
            grid_rows, grid_cols = int(grid_rows // ratio), int(grid_cols // ratio)
    cell_u = (c1 - c0) * tile / side / grid_cols
    cell_v = (r1 - r0) * tile / side / grid_rows
    parts = [base]
    for r in range(grid_rows):
        line = canvas_view.grid(
            image, 1, grid_cols, (cell_u, cell_v), (c0 * tile / side, r0 * tile / side + r * cell_v)
        )
        centre_v = r0 * tile / side + (r + 0.5) * cell_v
        labels = tuple(
            lab
            if lab == "padding"
            else f"tile {int(centre_v // tile) * tiles_w + int((c0 * tile / side + (k + 0.5) * cell_u) // tile)}"
            for k, lab in enumerate(line.views)
        )
        parts += [ImageLayout(line.boxes, labels), non_spatial("newline")]
    return ImageLayout.concat(parts)


def internvl_layout(processor: Any, config: Any, image: tuple[int, int]) -> ImageLayout:
    """InternVL: the image resized to the best ``cols × rows`` tile canvas and cut in tiles, then
    a thumbnail of the whole image (when there is more than one tile); each tile's patch grid is
    pixel-shuffled by ``downsample_ratio`` (a token covers ``1/ratio × 1/ratio`` patches)."""
    from transformers.models.got_ocr2.image_processing_pil_got_ocr2 import (
        get_optimal_tiled_canvas,
    )

    size = _opt(processor, "size")
    tw, th = int(_get(size, "width")), int(_get(size, "height"))
    patch = np.atleast_1d(_vision(config).patch_size)[0]
    unit = patch / float(config.downsample_ratio)
    per = (int(th // unit), int(tw // unit))
    w, h = image
    lo, hi = int(_opt(processor, "min_patches", 1)), int(_opt(processor, "max_patches", 1))
    if not (_opt(processor, "crop_to_patches", False) and hi > 1):
        return View.resized(image, (tw, th)).grid(image, per[0], per[1], (unit, unit))
    cols, rows = get_optimal_tiled_canvas((h, w), (th, tw), lo, hi)
    view = View.resized(image, (tw * cols, th * rows))
    if rows * cols == 1:
        return view.grid(image, per[0], per[1], (unit, unit))
    parts = [
        view.grid(
            image, per[0], per[1], (unit, unit), (c * tw, r * th), label=f"tile {r * cols + c}"
        )
        for r in range(rows)
        for c in range(cols)
    ]
    thumb = View.resized(image, (tw, th)).grid(
        image, per[0], per[1], (unit, unit), label="thumbnail"
    )
    return ImageLayout.concat([*parts, thumb])


def idefics3_layout(processor: Any, config: Any, image: tuple[int, int]) -> ImageLayout:
    """Idefics3 / SmolVLM: the image resized to its longest edge, then (with image splitting)
    to multiples of the tile size and cut in tiles, followed by a global view of the whole image;
    each view's patch grid is pixel-shuffled by ``scale_factor`` (a token covers
    ``scale × scale`` patches)."""
    from transformers.models.idefics3 import image_processing_pil_idefics3 as hf

    tile = int(_get(_opt(processor, "max_image_size"), "longest_edge"))
    unit = int(_vision(config).patch_size) * int(config.scale_factor)
    per = tile // unit
    w, h = image
    rw, rh = w, h
    if _opt(processor, "do_resize", True):
        longest = int(_get(_opt(processor, "size"), "longest_edge"))
        rh, rw = hf._resize_output_size_rescale_to_max_len(h, w, max_len=longest)
        rh, rw = hf._resize_output_size_scale_below_upper_bound(rh, rw, max_len=hf.MAX_IMAGE_SIZE)
    glob = View.resized(image, (tile, tile)).grid(image, per, per, (unit, unit), label="global")
    if not _opt(processor, "do_image_splitting", False):
        return ImageLayout(glob.boxes, ("image",) * len(glob))
    aspect = rw / rh
    if rw >= rh:
        rw = math.ceil(rw / tile) * tile
        rh = math.ceil(int(rw / aspect) / tile) * tile
    else:
        rh = math.ceil(rh / tile) * tile
        rw = math.ceil(int(rh * aspect) / tile) * tile
    if rh <= tile and rw <= tile:
        return ImageLayout(glob.boxes, ("image",) * len(glob))
    view = View.resized(image, (rw, rh))
    rows, cols = rh // tile, rw // tile
    parts = [
        view.grid(image, per, per, (unit, unit), (c * tile, r * tile), label=f"tile {r * cols + c}")
        for r in range(rows)
        for c in range(cols)
    ]
    return ImageLayout.concat([*parts, glob])


__all__ = [
    "NON_SPATIAL",
    "ImageLayout",
    "LayoutFn",
    "View",
    "anyres_layout",
    "conv_downsampled_layout",
    "fuyu_layout",
    "gemma3_layout",
    "gemma4_layout",
    "grid_layout",
    "hunyuan_vl_layout",
    "idefics3_layout",
    "internvl_layout",
    "llava_layout",
    "minicpmv_layout",
    "non_spatial",
    "padded_blocks_layout",
    "qwen_layout",
    "resize_crop",
]
