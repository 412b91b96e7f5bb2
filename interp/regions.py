"""Token → pixel-region maps: where each image token of an encoded prompt comes from in the
original image.

:func:`token_regions` encodes samples (or takes their encoding), asks the family's adapter for the
layout of each image (:mod:`interp.region_layouts`, derived from the processor's real settings)
and lines the layout up with the row's image-token positions. The result, :class:`TokenRegions`,
is what attribution maps are built on: :meth:`TokenRegions.grid` gives the token groups of a
coarse occlusion grid, :meth:`TokenRegions.in_box` the tokens of a box.

Boxes are ``(x0, y0, x1, y1)`` in pixels of the original image (the image the processor was given,
after the condition). Tokens with no place in the image — LLaVA-NeXT's newline tokens, a kept
class token, Idefics3's ``<row_i_col_j>`` separators inside an image's span, tokens wholly in
padding — have NaN boxes and say what they are in ``views``.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from jaxtyping import Bool, Float, Int

from .conditions import Condition
from .conditions.apply import prepare
from .errors import (
    ImageTokenMismatchError,
    LayoutNotMappedError,
    NoSpatialLayoutError,
    RegionError,
)
from .region_layouts import ImageLayout
from .reprs import Summary
from .samples import Sample

if TYPE_CHECKING:
    from .adapters.base import Adapter
    from .encoding import Encoding
    from .model import VLM

Box = tuple[float, float, float, float]


@dataclass(frozen=True, repr=False)
class TokenRegions(Summary):
    """Where the image tokens of one encoded row come from.

    Attributes:
        positions: prompt positions (columns of the encoded row), in order, of every image token
            and of the separator tokens inside an image's span.
        boxes: ``[n, 4]`` boxes ``(x0, y0, x1, y1)`` in original-image pixels; NaN rows for
            non-spatial tokens.
        views: per token, the view it belongs to: ``"image"`` (single-view layouts), ``"base"``,
            ``"tile k"``, ``"thumbnail"``, ``"global"``; or what a non-spatial token is:
            ``"newline"``, ``"cls"``, ``"separator"``, ``"padding"``.
        images: per token, the index of its image in the row.
        image_sizes: per image of the row, the original ``(width, height)``.
        row: the row of the encoding.
        sample_id: the row's ``Sample.id``.
    """

    positions: Int[np.ndarray, " n"]
    boxes: Float[np.ndarray, "n 4"]
    views: tuple[str, ...]
    images: Int[np.ndarray, " n"]
    image_sizes: tuple[tuple[int, int], ...]
    row: int = 0
    sample_id: str = ""

    def _repr_head(self) -> dict[str, Any]:
        return {
            "tokens": len(self),
            "images": len(self.image_sizes),
            "row": self.row,
            "sample_id": self.sample_id,
        }

    def __len__(self) -> int:
        return len(self.positions)

    @property
    def spatial(self) -> np.ndarray:
        """True for tokens with a box."""
        return ~np.isnan(self.boxes[:, 0])

    def _select(self, image: int, views: Sequence[str] | None) -> np.ndarray:
        if not 0 <= image < len(self.image_sizes):
            raise RegionError(
                f"row {self.row} (sample {self.sample_id!r}) has {len(self.image_sizes)} "
                f"image(s); image={image} is out of range"
            )
        keep = self.spatial & (self.images == image)
        if views is not None:
            keep &= np.isin(np.array(self.views), list(views))
        return keep

    def in_box(
        self, box: Box, *, image: int = 0, views: Sequence[str] | None = None
    ) -> Int[np.ndarray, " k"]:
        """Positions of the tokens of ``image`` whose box overlaps ``box`` (positive area), over
        every view (tiles and the thumbnail alike) unless ``views`` narrows them."""
        x0, y0, x1, y1 = box
        b = self.boxes
        hit = (
            (np.minimum(b[:, 2], x1) > np.maximum(b[:, 0], x0))
            & (np.minimum(b[:, 3], y1) > np.maximum(b[:, 1], y0))
            & self._select(image, views)
        )
        return self.positions[hit]

    def grid(
        self, rows: int, cols: int, *, image: int = 0, views: Sequence[str] | None = None
    ) -> list[Int[np.ndarray, " k"]]:
        """A coarse ``rows × cols`` grid over ``image``: per cell (row-major), the positions of
        the tokens whose box centre lies in it. Every spatial token of the image falls in exactly
        one cell, so the groups partition the image's tokens (an occlusion of all cells ablates
        every spatial token once)."""
        if rows < 1 or cols < 1:
            raise ValueError(f"a grid needs rows, cols >= 1, got {rows} x {cols}")
        keep = self._select(image, views)
        w, h = self.image_sizes[image]
        cx = (self.boxes[:, 0] + self.boxes[:, 2]) / 2
        cy = (self.boxes[:, 1] + self.boxes[:, 3]) / 2
        cell = np.full(len(self), -1)
        col = np.clip((cx[keep] / w * cols).astype(int), 0, cols - 1)
        row = np.clip((cy[keep] / h * rows).astype(int), 0, rows - 1)
        cell[keep] = row * cols + col
        return [self.positions[cell == k] for k in range(rows * cols)]

    def cell_boxes(self, rows: int, cols: int, *, image: int = 0) -> Float[np.ndarray, "cells 4"]:
        """The pixel boxes of :meth:`grid`'s cells, row-major."""
        w, h = self.image_sizes[image]
        r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
        r, c = r.ravel(), c.ravel()
        return np.stack([c * w / cols, r * h / rows, (c + 1) * w / cols, (r + 1) * h / rows], 1)

    def masks(self, groups: Sequence[np.ndarray], seq_len: int) -> Bool[np.ndarray, "groups seq"]:
        """Position groups (from :meth:`grid` or :meth:`in_box`) as boolean masks over the
        ``seq_len`` positions of the encoded row, e.g. to ablate one region per forward."""
        out = np.zeros((len(groups), seq_len), dtype=bool)
        for k, group in enumerate(groups):
            out[k, np.asarray(group, dtype=np.int64)] = True
        return out

    def to_pixels(
        self,
        values: Float[np.ndarray, " n"],
        *,
        image: int = 0,
        views: Sequence[str] | None = None,
    ) -> Float[np.ndarray, "height width"]:
        """Per-token ``values`` (one per entry of :attr:`positions`, e.g. an attribution score)
        painted onto ``image``'s pixels: each pixel gets the mean value of the tokens whose box
        covers its centre (every view unless ``views`` narrows them); NaN where none does."""
        values = np.asarray(values, dtype=np.float64)
        if values.shape != (len(self),):
            raise RegionError(f"{values.shape} values for {len(self)} tokens; give one per token")
        keep = self._select(image, views)
        w, h = self.image_sizes[image]
        total, count = np.zeros((h, w)), np.zeros((h, w))
        for (x0, y0, x1, y1), v in zip(self.boxes[keep], values[keep]):
            # pixels whose centre (i + 0.5) lies in [x0, x1)
            c0, c1 = int(np.ceil(x0 - 0.5)), int(np.ceil(x1 - 0.5))
            r0, r1 = int(np.ceil(y0 - 0.5)), int(np.ceil(y1 - 0.5))
            total[r0:r1, c0:c1] += v
            count[r0:r1, c0:c1] += 1
        with np.errstate(invalid="ignore"):
            return total / np.where(count > 0, count, np.nan)

    def to_frame(self) -> pd.DataFrame:
        """One row per token: ``position``, ``image``, ``view``, ``x0 y0 x1 y1``, ``spatial``."""
        return pd.DataFrame(
            {
                "sample_id": self.sample_id,
                "row": self.row,
                "position": self.positions,
                "image": self.images,
                "view": list(self.views),
                "x0": self.boxes[:, 0],
                "y0": self.boxes[:, 1],
                "x1": self.boxes[:, 2],
                "y1": self.boxes[:, 3],
                "spatial": self.spatial,
            }
        )


def require_spatial_layout(adapter: Adapter, what: str) -> None:
    """Refuse ``what`` on a family whose image tokens have no token-to-region map (from the
    adapter alone: :func:`image_layout` and the attribute command's up-front check).

    Raises:
        LayoutNotMappedError: the family's layout is not verified, or its map not written yet.
        NoSpatialLayoutError: the family's image tokens have no place in the image.
    """
    adapter.require_layout(what)
    if adapter.no_layout:
        raise NoSpatialLayoutError(
            f"{adapter.name} has no token-to-region map: {adapter.no_layout}. Region-based "
            "attribution needs a family whose image tokens form a spatial layout"
        )
    if adapter.token_layout is None:
        mapped = sorted({a.name for a in _adapters().values() if a.token_layout is not None})
        raise LayoutNotMappedError(
            f"{adapter.name}: the token-to-region map is not mapped yet; mapped families: "
            f"{', '.join(mapped)} (a new one sets Adapter.token_layout)"
        )


def image_layout(vlm: VLM, size: tuple[int, int], images_in_row: int = 1) -> ImageLayout:
    """The family's layout of one image of ``size`` (width, height), before any prompt, in a row
    of ``images_in_row`` images (passed to a layout that takes it: some processors lay out an
    image of a multi-image row differently).

    Raises:
        NoSpatialLayoutError: the family's image tokens have no place in the image.
        LayoutNotMappedError: the family is not mapped yet.
    """
    adapter = vlm.adapter
    require_spatial_layout(adapter, "token regions, attribution maps and region edits")
    vlm.require_processor()
    extra: dict[str, int] = {}
    if images_in_row != 1 and "images_in_row" in inspect.signature(adapter.token_layout).parameters:
        extra["images_in_row"] = images_in_row
    return adapter.token_layout(vlm.processor, vlm.hf.config, size, **extra)


def _adapters() -> dict[str, Any]:
    from .adapters.registry import ADAPTERS

    return ADAPTERS


def _row_regions(
    vlm: VLM,
    mask: np.ndarray,
    sizes: list[tuple[int, int]],
    row: int,
    sample_id: str,
) -> TokenRegions:
    where = np.flatnonzero(mask)
    layouts = [image_layout(vlm, size, len(sizes)) for size in sizes]
    expected = sum(len(lay) for lay in layouts)
    if expected != len(where):
        raise ImageTokenMismatchError(
            f"sample {sample_id!r}: the {vlm.adapter.name} layout of images of sizes {sizes} has "
            f"{expected} image tokens but the prompt has {len(where)}; the processor settings "
            "differ from what the layout reads (report this with the processor's config)"
        )
    positions, boxes, views, images = [], [], [], []
    start = 0
    for k, lay in enumerate(layouts):
        mine = where[start : start + len(lay)]
        start += len(lay)
        inside = np.arange(mine[0], mine[-1] + 1) if len(mine) else mine
        slot = np.searchsorted(mine, inside)
        is_image = np.isin(inside, mine)
        for pos, s, img in zip(inside, slot, is_image):
            positions.append(int(pos))
            images.append(k)
            if img:
                boxes.append(lay.boxes[s])
                views.append(lay.views[s])
            else:
                boxes.append(np.full(4, np.nan))
                views.append("separator")
    return TokenRegions(
        positions=np.asarray(positions, dtype=np.int64),
        boxes=np.asarray(boxes, dtype=np.float64).reshape(-1, 4),
        views=tuple(views),
        images=np.asarray(images, dtype=np.int64),
        image_sizes=tuple(sizes),
        row=row,
        sample_id=sample_id,
    )


def token_regions(
    vlm: VLM,
    samples: Sample | Sequence[Sample],
    condition: str | Condition = "full",
    *,
    enc: Encoding | None = None,
) -> TokenRegions | list[TokenRegions]:
    """Where each image token of the samples' prompts comes from in their original images.

    ``samples`` is one :class:`~interp.Sample` (returns one :class:`TokenRegions`) or a sequence
    (returns one per row). ``enc`` reuses an encoding of the same samples under ``condition``
    (from :func:`interp.encode`); otherwise they are encoded here. A row without an image gives
    an empty map.

    Raises:
        NoSpatialLayoutError: the family's image tokens have no place in the image (InstructBLIP,
            Mllama).
        LayoutNotMappedError: the family is not mapped yet.
        ImageTokenMismatchError: the layout and the prompt disagree on the image-token count.
    """
    from .encoding import encode

    single = isinstance(samples, Sample)
    rows = [samples] if single else list(samples)
    if enc is None:
        image_layout_check(vlm)
        enc = encode(vlm, rows, condition)
    elif enc.sample_ids and enc.sample_ids != [str(s.id) for s in rows]:
        raise RegionError(
            f"the encoding holds samples {enc.sample_ids[:4]}..., not the samples given; pass "
            "the encoding of these samples (interp.encode(vlm, samples, condition))"
        )
    prepared = prepare(rows, condition, vlm.processor)
    mask = enc.image_mask.cpu().numpy()
    out = [
        _row_regions(vlm, mask[i], [im.size for im in p.images], i, str(rows[i].id))
        for i, p in enumerate(prepared)
    ]
    return out[0] if single else out


def image_layout_check(vlm: VLM) -> None:
    """Raise the typed error of a family without a (mapped) layout before any encoding."""
    if vlm.adapter.no_layout or vlm.adapter.token_layout is None or not vlm.adapter.layout_verified:
        image_layout(vlm, (1, 1))


__all__ = ["TokenRegions", "image_layout", "token_regions"]
