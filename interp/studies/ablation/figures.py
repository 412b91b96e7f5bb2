"""Figures of the ablation: the main table, accuracy with vs without the image per variant,
per category, and accuracy against the number of in-context examples. Each returns a Figure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from interp.errors import ConditionError
from interp.figures import subplots

from .analysis import Ablation, InContext
from .variants import ALL


def _bars(
    ax: Any,
    frame: pd.DataFrame,
    groups: Sequence[str],
    series: Sequence[tuple[str, str, str]],
    key: str,
    first_colour: int = 0,
) -> None:
    """Grouped bars with bootstrap error bars: ``series`` holds (label, condition, column);
    series ``s`` is drawn in colour ``C{first_colour + s}``."""
    x = np.arange(len(groups))
    width = 0.8 / max(1, len(series))
    for s, (label, cond, column) in enumerate(series):
        vals, lows, highs = [], [], []
        for g in groups:
            row = frame[(frame[key] == g) & (frame["condition"] == cond)]
            r = row.iloc[0] if not row.empty else None
            vals.append(np.nan if r is None else r[column])
            lows.append(np.nan if r is None else r[f"{column}_low"])
            highs.append(np.nan if r is None else r[f"{column}_high"])
        v, lo, hi = (np.asarray(a, dtype=float) for a in (vals, lows, highs))
        err = np.nan_to_num(np.vstack([v - lo, hi - v]), nan=0.0)
        offset = (s - (len(series) - 1) / 2) * width
        colour = f"C{first_colour + s}"
        ax.bar(x + offset, v, width, yerr=err, capsize=2, label=label, color=colour)


def _baseline_marks(ax: Any, frame: pd.DataFrame, groups: Sequence[str], key: str) -> None:
    x = np.arange(len(groups))
    vals = []
    for g in groups:
        row = frame[frame[key] == g]
        vals.append(np.nan if row.empty else row.iloc[0]["text_only"])
    ax.scatter(x, vals, marker="_", s=900, color="k", zorder=5, label="text-only baseline")


def _legend_below(fig: Any, ax: Any, ncol: int) -> None:
    """One legend for the figure, under the axes."""
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=ncol, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.08, 1, 1))


def plot_ablation(ablation: Ablation, category: str = ALL) -> Figure:
    """Accuracy with the image and under each condition without it, per variant (bars with
    bootstrap intervals, the text-only baseline as a black dash), beside the agreement with the
    answer given with the image."""
    frame = ablation.to_frame()
    part = frame[frame["category"] == category]
    groups = [v for v in (*ablation.variants, ALL) if v in set(part["variant"])]
    first = ablation.conditions[0]
    fig, (ax, bx) = subplots(1, 2, figsize=(12, 4.2), gridspec_kw={"width_ratios": [3, 2]})
    series = [("with image", first, "with_image")]
    series += [(c, c, "without") for c in ablation.conditions]
    _bars(ax, part, groups, series, "variant")
    _baseline_marks(ax, part[part["condition"] == first], groups, "variant")
    labels = [ablation._name(g).replace(" (", "\n(") for g in groups]
    ax.set_xticks(np.arange(len(groups)), labels, fontsize=8)
    ax.set_ylabel("accuracy")
    ax.set_ylim(0, 1.05)
    ax.set_title(f"with vs without the image ({category} categories)", fontsize=9)
    series = [(c, c, "agreement") for c in ablation.conditions]
    _bars(bx, part, groups, series, "variant", first_colour=1)
    bx.set_xticks(np.arange(len(groups)), groups, fontsize=8)
    bx.set_ylim(0, 1.05)
    bx.set_ylabel("same answer as with the image")
    bx.set_title("answer agreement without the image", fontsize=9)
    _legend_below(fig, ax, len(ablation.conditions) + 2)
    return fig


def plot_main_table(ablation: Ablation, category: str = ALL, digits: int = 2) -> Figure:
    """The main table (:meth:`Ablation.main_table`) drawn as a figure: one row per variant,
    accuracy ``value [low, high]`` with the image, under each condition without it, and the
    text-only baseline."""
    table = ablation.main_table(category, digits)
    fig, ax = subplots(figsize=(2.2 + 1.75 * len(table.columns), 0.5 + 0.36 * len(table)))
    ax.axis("off")
    t = ax.table(
        cellText=table.to_numpy().tolist(),
        rowLabels=list(table.index),
        colLabels=list(table.columns),
        loc="center",
        cellLoc="center",
    )
    t.auto_set_font_size(False)
    t.set_fontsize(8)
    t.scale(1.0, 1.3)
    ax.set_title(
        f"accuracy with and without the image, {int(ablation.ci * 100)}% bootstrap intervals "
        f"(judge: {ablation.judge})",
        fontsize=9,
    )
    fig.tight_layout()
    return fig


def plot_categories(ablation: Ablation, conditions: Sequence[str] | None = None) -> Figure:
    """The per-category figure: one panel per category, accuracy per variant with the image and
    under each condition without it (bootstrap intervals), the text-only baseline as a dash."""
    conds = list(conditions) if conditions is not None else list(ablation.conditions)
    unknown = [c for c in conds if c not in ablation.conditions]
    if unknown:
        raise ConditionError(f"conditions {unknown} are not in this ablation {ablation.conditions}")
    frame = ablation.to_frame()
    cats = list(ablation.categories)
    ncols = min(3, len(cats))
    nrows = int(np.ceil(len(cats) / ncols))
    fig, axes = subplots(
        nrows, ncols, figsize=(4.2 * ncols, 3.0 * nrows + 0.4), squeeze=False, sharey=True
    )
    for ax, cat in zip(axes.ravel(), cats):
        part = frame[(frame["category"] == cat) & (frame["variant"] != ALL)]
        groups = [v for v in ablation.variants if v in set(part["variant"])]
        series = [("with image", conds[0], "with_image")] + [(c, c, "without") for c in conds]
        _bars(ax, part, groups, series, "variant")
        _baseline_marks(ax, part[part["condition"] == conds[0]], groups, "variant")
        ax.set_xticks(np.arange(len(groups)), groups, fontsize=8)
        n = int(part["n"].max()) if not part.empty else 0
        ax.set_title(f"{cat} (n = {n} per variant)", fontsize=9)
        ax.set_ylim(0, 1.05)
    for ax in axes.ravel()[len(cats) :]:
        ax.axis("off")
    axes[0, 0].set_ylabel("accuracy")
    _legend_below(fig, axes[0, 0], len(conds) + 2)
    return fig


def plot_in_context(result: InContext) -> Figure:
    """Accuracy against the number of in-context examples k: one panel per condition, one line
    per variant (solid: matched examples, dashed: mismatched), bootstrap bands."""
    frame = result.to_frame()
    fig, axes = subplots(
        1, len(result.conditions), figsize=(4.4 * len(result.conditions), 3.2), squeeze=False
    )
    for ax, cond in zip(axes[0], result.conditions):
        for v, variant in enumerate(result.variants):
            for source, style in zip(result.sources, ("-", "--")):
                part = frame[
                    (frame["condition"] == cond)
                    & (frame["source"] == source)
                    & (frame["variant"] == variant)
                ].sort_values("k")
                label = variant if source == result.sources[0] else f"{variant} ({source})"
                ax.plot(part["k"], part["accuracy"], style, marker="o", color=f"C{v}", label=label)
                ax.fill_between(
                    part["k"], part["accuracy_low"], part["accuracy_high"], color=f"C{v}", alpha=0.1
                )
        ax.set_xticks(list(result.shots))
        ax.set_xlabel("in-context examples k")
        ax.set_ylim(0, 1.05)
        ax.set_title(cond, fontsize=9)
    axes[0, 0].set_ylabel("accuracy")
    _legend_below(fig, axes[0, 0], 4)
    fig.tight_layout(rect=(0, 0.08 * len(result.sources), 1, 1))
    return fig


__all__ = ["plot_ablation", "plot_categories", "plot_in_context", "plot_main_table"]
