"""Maps as pictures: attribution heatmaps over the original image.

:func:`plot_attribution` draws one sample's map per method side by side on a shared, symmetric
colour scale (red: the region supports the answer, blue: it works against it), over the image the
processor received, with the question and the answer in the title; :func:`plot_attribution_grid`
draws one method's maps for many samples.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from PIL import Image

from interp.errors import RegionError
from interp.figures import subplots
from interp.samples import Sample

from .measure import Attribution

CMAP = "RdBu_r"


def _image(sample: Sample | None) -> np.ndarray | None:
    if sample is None or sample.image is None or isinstance(sample.image, list):
        return None
    image = sample.image
    if isinstance(image, np.ndarray):
        return image
    if not isinstance(image, Image.Image):
        if hasattr(image, "detach"):  # a tensor
            return np.asarray(image.detach().cpu())
        with Image.open(image) as im:  # type: ignore[arg-type]
            return np.asarray(im.convert("RGB"))
    return np.asarray(image.convert("RGB"))


def _results(result: Attribution | Sequence[Attribution]) -> list[Attribution]:
    out = [result] if isinstance(result, Attribution) else list(result)
    if not out:
        raise RegionError("plot_attribution needs at least one attribution result")
    return out


def _draw(ax: plt.Axes, image: np.ndarray | None, heat: np.ndarray, vmax: float, alpha: float):
    h, w = heat.shape
    if image is not None:
        ax.imshow(image, extent=(0, w, h, 0))
    im = ax.imshow(
        heat,
        cmap=CMAP,
        vmin=-vmax,
        vmax=vmax,
        alpha=alpha if image is not None else 1.0,
        extent=(0, w, h, 0),
        interpolation="nearest",
    )
    ax.set_xticks([])
    ax.set_yticks([])
    return im


def _unit(method: str) -> str:
    return {
        "occlusion": "Δ log p(answer)",
        "gradient": "≈ Δ log p(answer)",
        "attention": "attention mass",
    }.get(method, method)


def _wrapped(text: str, width: int, lines: int) -> str:
    """``text`` wrapped at ``width`` characters into at most ``lines`` lines (the last one ending
    in an ellipsis where the text goes on), so a panel title fits its panel."""
    return "\n".join(textwrap.wrap(str(text), width, max_lines=lines, placeholder=" …"))


def _scale(heats: Sequence[np.ndarray]) -> float:
    peak = max((float(np.nanmax(np.abs(h))) for h in heats if np.isfinite(h).any()), default=0.0)
    return peak if peak > 0 else 1.0


def plot_attribution(
    result: Attribution | Sequence[Attribution],
    sample: Sample | str | int,
    *,
    alpha: float = 0.6,
) -> Figure:
    """One sample's attribution maps, one panel per method (``result`` may be several results of
    the same samples), over the original image, on one colour scale (symmetric around 0; maps of
    different methods are each divided by their largest ``|score|`` first, as their units differ).

    ``sample`` is the :class:`~interp.Sample` (its image is drawn underneath), or its id or row
    (the maps alone).
    """
    results = _results(result)
    row = results[0].index(sample)
    heats = [r.heatmap(r.index(results[0].sample_ids[row])) for r in results]
    mixed = len({r.method for r in results}) > 1
    if mixed:  # different units: each map relative to its own largest |score|
        heats = [h / _scale([h]) for h in heats]
    vmax = _scale(heats)
    image = _image(sample if isinstance(sample, Sample) else None)
    fig, axes = subplots(1, len(results), figsize=(3.0 * len(results) + 0.8, 3.4), squeeze=False)
    im = None
    for ax, r, heat in zip(axes[0], results, heats):
        im = _draw(ax, image, heat, vmax, alpha)
        ax.set_title(r.method, fontsize=9)
    label = "score / max |score|" if mixed else _unit(results[0].method)
    fig.colorbar(im, ax=axes[0].tolist(), shrink=0.8, label=label)
    first = results[0]
    width = max(30, int(14 * len(results)))
    fig.suptitle(
        _wrapped(first.questions[row], width, 2) + f"\nanswer: {first.answers[row]!r}", fontsize=9
    )
    return fig


def plot_attribution_grid(
    result: Attribution,
    samples: Sequence[Sample] | None = None,
    *,
    cols: int = 4,
    limit: int = 16,
    alpha: float = 0.6,
) -> Figure:
    """One method's maps for up to ``limit`` samples, ``cols`` per row, on one colour scale (one
    colour bar, in the method's unit); the images of ``samples`` (matched by id) underneath. Each
    panel's title is its question wrapped to fit the panel and its answer; the figure's title
    gives how many samples are shown of how many."""
    n = min(len(result), limit)
    if n == 0:
        raise RegionError("the attribution result holds no samples")
    by_id = {str(s.id): s for s in samples or []}
    heats = [result.heatmap(i) for i in range(n)]
    vmax = _scale(heats)
    rows = (n + cols - 1) // cols
    fig, axes = subplots(
        rows, min(cols, n), figsize=(2.4 * min(cols, n) + 0.8, 3.0 * rows + 0.4), squeeze=False
    )
    im = None
    for k, ax in enumerate(axes.ravel()):
        if k >= n:
            ax.axis("off")
            continue
        sid = result.sample_ids[k]
        im = _draw(ax, _image(by_id.get(sid)), heats[k], vmax, alpha)
        answer = _wrapped(f"→ {result.answers[k]!r}", 30, 1)
        ax.set_title(_wrapped(result.questions[k], 30, 2) + "\n" + answer, fontsize=7)
    fig.colorbar(im, ax=axes.ravel().tolist(), shrink=0.8, label=_unit(result.method))
    fig.suptitle(f"{result.method} maps (n = {n} of {len(result)} samples)", fontsize=9)
    return fig


__all__ = ["plot_attribution", "plot_attribution_grid"]
