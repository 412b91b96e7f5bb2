"""Planted truth: does the attribution mass fall on the object?

The demo world draws each scene object inside one cell of a 2 × 2 grid over the image (the object
is ``OBJECT_SIZE`` pixels wide, jittered by a few pixels inside its ``CELL_SIZE`` cell), so the
cell is a box that holds the whole object. :func:`box_mass` gives the share of an attribution
map's positive mass that falls inside a box; :func:`mass_table` compares, per group of samples
(grounded vs counterfactual-prior answers), the share inside the object's box with the mean share
inside random boxes of the same size, with bootstrap 95 % CIs (:func:`probes.stats.estimate`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from interp.errors import RegionError
from interp.regions import Box
from interp.samples import Sample
from probes.stats import estimate

from .measure import Attribution


def object_box(sample: Sample) -> Box | None:
    """The pixel box of the cell that holds the demo-world object a question asks about (its
    ``entity``, or the scene's only object), in the sample's own image size; None when the sample
    names no drawn object."""
    from interp.datasets.render import CELL_SIZE, CELLS, IMAGE_SIZE

    objects = sample.meta.get("objects") or []
    entity = sample.meta.get("entity")
    picked = [o for o in objects if o.get("kind") == entity] or (
        objects if len(objects) == 1 else []
    )
    if len(picked) != 1 or picked[0].get("cell") not in CELLS:
        return None
    if sample.image is None or isinstance(sample.image, list):  # one image, or no box
        return None
    row, col = divmod(CELLS.index(picked[0]["cell"]), 2)
    w, h = _size(sample)
    sx, sy = w / IMAGE_SIZE, h / IMAGE_SIZE
    return (
        col * CELL_SIZE * sx,
        row * CELL_SIZE * sy,
        (col + 1) * CELL_SIZE * sx,
        (row + 1) * CELL_SIZE * sy,
    )


def _size(sample: Sample) -> tuple[int, int]:
    from PIL import Image

    image = sample.image
    if isinstance(image, (str, bytes)) or hasattr(image, "__fspath__"):
        with Image.open(image) as im:  # type: ignore[arg-type]
            return im.size
    if isinstance(image, Image.Image):
        return image.size
    shape = tuple(image.shape)  # type: ignore[union-attr]  # an H×W×3 array or tensor
    return int(shape[1]), int(shape[0])


def box_mass(heat: np.ndarray, box: Box) -> float:
    """Share of the positive mass of a ``[height, width]`` map inside ``box`` (pixels whose centre
    lies in it); NaN when the map has no positive mass."""
    pos = np.clip(np.nan_to_num(heat, nan=0.0), 0.0, None)
    total = pos.sum()
    if total <= 0:
        return float("nan")
    x0, y0, x1, y1 = box
    cols = np.arange(heat.shape[1]) + 0.5
    rows = np.arange(heat.shape[0]) + 0.5
    inside = ((rows >= y0) & (rows < y1))[:, None] & ((cols >= x0) & (cols < x1))[None, :]
    return float(pos[inside].sum() / total)


def random_boxes(box: Box, size: tuple[int, int], n: int, seed: int) -> list[Box]:
    """``n`` boxes of ``box``'s width and height placed uniformly inside an image of ``size``."""
    w, h = size
    bw, bh = box[2] - box[0], box[3] - box[1]
    rng = np.random.default_rng(seed)
    xs = rng.uniform(0, max(w - bw, 0), n)
    ys = rng.uniform(0, max(h - bh, 0), n)
    return [(float(x), float(y), float(x + bw), float(y + bh)) for x, y in zip(xs, ys)]


def object_shares(
    result: Attribution, samples: Sequence[Sample], *, n_random: int = 64, seed: int = 0
) -> pd.DataFrame:
    """Per sample with an object box: the share of positive mass inside it (``inside``) and the
    mean share inside ``n_random`` random boxes of the same size (``random``)."""
    rows = []
    by_id = {str(s.id): s for s in samples}
    for i, sid in enumerate(result.sample_ids):
        sample = by_id.get(sid)
        box = None if sample is None else object_box(sample)
        if box is None:
            continue
        heat = result.heatmap(i)
        size = (heat.shape[1], heat.shape[0])
        shares = [box_mass(heat, b) for b in random_boxes(box, size, n_random, seed + i)]
        rows.append(
            {
                "sample_id": sid,
                "method": result.method,
                "counterfactual": bool(sample.meta.get("counterfactual")),  # type: ignore[union-attr]
                "inside": box_mass(heat, box),
                "random": float(np.nanmean(shares)) if not np.all(np.isnan(shares)) else np.nan,
            }
        )
    return pd.DataFrame(rows)


def mass_table(shares: pd.DataFrame, by: str = "counterfactual") -> pd.DataFrame:
    """Per group of ``by``: mean share inside the object's box, inside random boxes, and their
    paired difference, each with a bootstrap 95 % CI.

    Raises:
        RegionError: no sample with a positive map and an object box.
    """
    shares = shares.dropna(subset=["inside", "random"])
    if shares.empty:
        raise RegionError(
            "no sample has both an object box and positive attribution mass; use demo-world "
            "scene questions (meta 'objects' and 'entity')"
        )
    out = []
    for key, group in shares.groupby(by):
        row: dict[str, object] = {by: key, "n": len(group)}
        for name, values in (
            ("inside", group["inside"].to_numpy()),
            ("random", group["random"].to_numpy()),
            ("difference", (group["inside"] - group["random"]).to_numpy()),
        ):
            row[name] = float(np.mean(values))
            if len(values) >= 2:
                est = estimate(np.mean, values)
                row[f"{name}_low"], row[f"{name}_high"] = est.low, est.high
            else:
                row[f"{name}_low"] = row[f"{name}_high"] = np.nan
        out.append(row)
    return pd.DataFrame(out)


__all__ = ["box_mass", "mass_table", "object_box", "object_shares", "random_boxes"]
