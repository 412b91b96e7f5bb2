"""Planted truth: does the attribution mass fall on the object?

The demo world draws each scene object inside one cell of a 2 × 2 grid over the image (the object
is ``OBJECT_SIZE`` pixels wide, jittered by a few pixels inside its ``CELL_SIZE`` cell), so the
cell is a box that holds the whole object. :func:`box_mass` gives the share of an attribution
map's positive mass that falls inside a box; :func:`mass_table` compares, per group of samples
(grounded vs counterfactual-prior answers, :func:`answer_group`), the share inside the object's box
with the mean share inside random boxes of the same size, with bootstrap 95 % CIs
(:func:`probes.bootstrap.estimate`). :func:`rank_agreement` compares two methods' maps region by region.
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


GROUPS = ("grounded", "prior", "other", "unlabelled")
"""The values of :func:`answer_group`."""


def _word(text: object) -> str:
    """The first word of an answer, lower case, without punctuation."""
    words = str(text or "").strip().lower().split()
    return words[0].strip(".,;:!?'\"") if words else ""


def answer_group(sample: Sample, answer: str) -> str:
    """Whether ``answer`` (the model's) follows the image or the prior:

    - ``"grounded"``: its first word is the sample's own answer (what the image shows);
    - ``"prior"``: the image is counterfactual (meta ``counterfactual``) and the answer names the
      object's prior instead (meta ``prior_answer``);
    - ``"other"``: neither;
    - ``"unlabelled"``: the sample has no answer, or no ``counterfactual`` flag to tell a prior
      answer from a wrong one (data from outside the demo world).
    """
    truth = _word(sample.answer)
    if not truth or "counterfactual" not in sample.meta:
        return "unlabelled"
    said = _word(answer)
    if said == truth:
        return "grounded"
    prior = _word(sample.meta.get("prior_answer"))
    if sample.meta.get("counterfactual") and prior and said == prior:
        return "prior"
    return "other"


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
    """Per sample with an object box: the share of positive mass inside it (``inside``), the
    mean share inside ``n_random`` random boxes of the same size (``random``), the drawing's
    ``counterfactual`` flag and the attributed answer's :func:`answer_group` (``group``)."""
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
                "group": answer_group(sample, result.answers[i]),  # type: ignore[arg-type]
                "inside": box_mass(heat, box),
                "random": float(np.nanmean(shares)) if not np.all(np.isnan(shares)) else np.nan,
            }
        )
    return pd.DataFrame(rows)


def mass_table(shares: pd.DataFrame, by: str = "group") -> pd.DataFrame:
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


def rank_agreement(result: Attribution, reference: Attribution) -> pd.DataFrame:
    """Per sample the Spearman correlation of two maps of the same samples over their regions
    (ranks with ties averaged): does ``result`` order the regions as ``reference`` does? NaN
    where either map is constant.

    Raises:
        RegionError: the results cover other samples or other regions.
    """
    if result.sample_ids != reference.sample_ids or result.scores.shape != reference.scores.shape:
        raise RegionError(
            f"rank_agreement needs two maps of the same samples and regions; got "
            f"{result.scores.shape} ({result.method}) and {reference.scores.shape} "
            f"({reference.method})"
        )
    rows = []
    for i, sid in enumerate(result.sample_ids):
        a = pd.Series(result.scores[i]).rank().to_numpy()
        b = pd.Series(reference.scores[i]).rank().to_numpy()
        a, b = a - a.mean(), b - b.mean()
        norm = float(np.sqrt((a * a).sum() * (b * b).sum()))
        rho = float((a * b).sum() / norm) if norm > 0 else float("nan")
        rows.append({"sample_id": sid, "method": result.method, "spearman": rho})
    return pd.DataFrame(rows)


__all__ = [
    "GROUPS",
    "answer_group",
    "box_mass",
    "mass_table",
    "object_box",
    "object_shares",
    "random_boxes",
    "rank_agreement",
]
