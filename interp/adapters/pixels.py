"""Where each row's image pixels lie in the processor's ``pixel_values``: one function per layout.

A family names its layout by :attr:`~interp.adapters.Layout.pixel_layout`; a new layout is a
function added with :func:`register_pixel_layout`. Each function takes ``(inputs, images_per_row,
image_mask, processor, video_mask)`` and returns, per row, an index into ``pixel_values`` selecting
that row's real image pixels (``None`` for a row without images); pixel-space conditions such as
``distort`` edit those pixels.

The processor does not always call that tensor ``pixel_values`` (Video-LLaVA's image processor
returns ``pixel_values_images``): :func:`image_pixels_key` finds it in the processor's outputs,
and the layout functions see it under ``pixel_values`` whatever its name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import torch
from einops import reduce

PixelLayout = Literal[
    "images", "patches", "rows", "tiles", "cross_tiles", "side_by_side", "token_patches"
]
PixelRows = Callable[
    [dict[str, Any], Sequence[int], torch.Tensor, Any, "torch.Tensor | None"], list[Any]
]


def _slices(counts: Sequence[int]) -> list[Any]:
    out: list[Any] = []
    start = 0
    for n in counts:
        out.append(slice(start, start + n) if n else None)
        start += n
    return out


def images(
    inputs: dict[str, Any],
    images_per_row: Sequence[int],
    image_mask: torch.Tensor,
    processor: Any,
    video_mask: torch.Tensor | None = None,
) -> list[Any]:
    """Dim 0 enumerates images in row order."""
    return _slices(list(images_per_row))


def patches(
    inputs: dict[str, Any],
    images_per_row: Sequence[int],
    image_mask: torch.Tensor,
    processor: Any,
    video_mask: torch.Tensor | None = None,
) -> list[Any]:
    """Dim 0 enumerates patches; ``image_grid_thw`` gives each image's count (Qwen-VL), or
    ``image_grid_hw`` (Nemotron-H Omni)."""
    grid = inputs["image_grid_thw"] if "image_grid_thw" in inputs else inputs["image_grid_hw"]
    sizes = grid.prod(-1).tolist()
    counts, k = [], 0
    for n in images_per_row:
        counts.append(int(sum(sizes[k : k + n])))
        k += n
    return _slices(counts)


def rows(
    inputs: dict[str, Any],
    images_per_row: Sequence[int],
    image_mask: torch.Tensor,
    processor: Any,
    video_mask: torch.Tensor | None = None,
) -> list[Any]:
    """Dim 0 is the batch row, dim 1 its images, padding images all zero (Idefics3/SmolVLM)."""
    pixels = inputs["pixel_values"]
    return [
        (row, reduce(pixels[row].ne(0), "image ... -> image", "max")) if n else None
        for row, n in enumerate(images_per_row)
    ]


def cross_tiles(
    inputs: dict[str, Any],
    images_per_row: Sequence[int],
    image_mask: torch.Tensor,
    processor: Any,
    video_mask: torch.Tensor | None = None,
) -> list[Any]:
    """``[batch, images, tiles, ...]`` with ``aspect_ratio_mask`` marking real tiles (Mllama)."""
    return [
        (row, inputs["aspect_ratio_mask"][row].bool()) if n else None
        for row, n in enumerate(images_per_row)
    ]


def tiles(
    inputs: dict[str, Any],
    images_per_row: Sequence[int],
    image_mask: torch.Tensor,
    processor: Any,
    video_mask: torch.Tensor | None = None,
) -> list[Any]:
    """Dim 0 enumerates tiles; a row has ``image tokens / processor.image_seq_length`` of them
    (InternVL). Where video frames share ``pixel_values`` (``video_mask``), the image tiles are
    picked from the tiles and frames in placement order."""
    seq = int(processor.image_seq_length)
    if video_mask is not None and bool(video_mask.any()):
        return _image_tiles(image_mask, video_mask, seq, images_per_row)
    return _slices([int(c) // seq for c in image_mask.sum(1).tolist()])


def _image_tiles(
    image_mask: torch.Tensor, video_mask: torch.Tensor, seq: int, images_per_row: Sequence[int]
) -> list[Any]:
    """Per row, the indices of its image tiles in ``pixel_values`` where image tiles and video
    frames lie there together in placement order, ``seq`` placeholder positions each."""
    both = image_mask | video_mask
    is_video = video_mask[both][::seq].cpu()  # one entry per tile or frame, row-major
    row_of = both.nonzero()[:, 0][::seq].cpu()
    out: list[Any] = []
    for row, n in enumerate(images_per_row):
        picked = ((row_of == row) & ~is_video).nonzero().flatten()
        out.append(picked if n and len(picked) else None)
    return out


def side_by_side(
    inputs: dict[str, Any],
    images_per_row: Sequence[int],
    image_mask: torch.Tensor,
    processor: Any,
    video_mask: torch.Tensor | None = None,
) -> list[Any]:
    """``[1, 3, p, patches · p]``: every view's patches side by side, one patch (``p`` pixels)
    wide each, ``target_sizes`` giving each view's patch rows and columns and
    ``num_patches_per_image`` each image's views (one each where absent) (MiniCPM-V 4.6)."""
    pixels = inputs["pixel_values"]
    p = int(pixels.shape[-2])
    per_view = inputs["target_sizes"].reshape(-1, 2).prod(-1).tolist()
    n_images = sum(images_per_row)
    views = inputs.get("num_patches_per_image")
    views = [1] * n_images if views is None else [int(v) for v in torch.as_tensor(views).flatten()]
    widths, k = [], 0
    for n in views:
        widths.append(int(sum(per_view[k : k + n])) * p)
        k += n
    out: list[Any] = []
    start, image = 0, 0
    for n in images_per_row:
        width = int(sum(widths[image : image + n]))
        out.append((0, slice(None), slice(None), slice(start, start + width)) if n else None)
        start, image = start + width, image + n
    return out


def token_patches(
    inputs: dict[str, Any],
    images_per_row: Sequence[int],
    image_mask: torch.Tensor,
    processor: Any,
    video_mask: torch.Tensor | None = None,
) -> list[Any]:
    """Dim 0 enumerates flattened patches of every row, one per image token of the row (Fuyu's
    ``image_patches``: no tower, each patch projected to one token)."""
    return _slices([int(c) for c in image_mask.sum(1).tolist()])


PIXEL_ROWS: dict[str, PixelRows] = {
    "images": images,
    "patches": patches,
    "rows": rows,
    "tiles": tiles,
    "cross_tiles": cross_tiles,
    "side_by_side": side_by_side,
    "token_patches": token_patches,
}


def image_pixels_key(inputs: Mapping[str, Any], family: str, named: str = "") -> str:
    """The key of the processor output that holds the image pixels a pixel-space condition edits.

    ``named`` (an entry's ``Adapter.pixel_input``) is taken as it is; otherwise the key is the one
    floating-point tensor whose name contains ``pixel_values`` and not ``video`` (``pixel_values``,
    Video-LLaVA's ``pixel_values_images``). Why a search and not a fixed name: processors name it
    differently, and editing the wrong tensor, or one of two image tensors (DeepSeek-VL-Hybrid's
    ``pixel_values`` and ``high_res_pixel_values``), would be a wrong input, silently.

    Raises:
        LayoutNotMappedError: the named key is absent, or no such tensor or several (before any
            forward: this runs while the batch is encoded).
    """
    from ..errors import LayoutNotMappedError

    keys = sorted(inputs)
    fix = (
        "register an entry naming the image pixel tensor (Adapter.pixel_input) after checking "
        "its layout (pixel_layout, layout_verified=True)"
    )
    if named:
        if named not in inputs:
            raise LayoutNotMappedError(
                f"{family}: its entry names {named!r} as the image pixel tensor, but the "
                f"processor returned {keys}; {fix}"
            )
        return named
    found = [
        k
        for k, v in inputs.items()
        if "pixel_values" in k
        and "video" not in k
        and isinstance(v, torch.Tensor)
        and v.is_floating_point()
    ]
    if len(found) == 1:
        return found[0]
    if not found:
        what = "no image pixel tensor"
    else:  # one edited alone would leave the image clean in the other
        what = (
            f"several image pixel tensors ({found}), and editing one alone leaves the other clean"
        )
    raise LayoutNotMappedError(
        f"{family}: pixel-space conditions (distort ...) edit the image's normalised pixels, but "
        f"the processor's outputs {keys} hold {what}; {fix}"
    )


def register_pixel_layout(name: str, rows_of: PixelRows) -> None:
    """Add a pixel layout a family can name in ``pixel_layout``."""
    PIXEL_ROWS[name] = rows_of


__all__ = ["PIXEL_ROWS", "PixelLayout", "PixelRows", "image_pixels_key", "register_pixel_layout"]
