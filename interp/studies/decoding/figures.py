"""Figures of the decoding study: each method against the plain baseline per POPE setting
(:func:`plot_methods`), and the α / β sweeps of one method (:func:`plot_sweep`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from interp.figures import subplots

from .analysis import baseline

if TYPE_CHECKING:
    from .measure import DecodingRuns


def plot_methods(runs: DecodingRuns, metrics: Sequence[str] = ("f1", "yes_ratio")) -> Figure:
    """One panel per (metric, setting): each method's greedy value (bar) and sampled mean ± std
    (bar with error bar), the plain baseline's greedy value as a dashed line."""
    s = runs.to_frame()
    settings = list(runs.settings)
    names = list(dict.fromkeys(s["method"]))
    fig, axes = subplots(
        len(metrics),
        len(settings),
        figsize=(3.6 * len(settings), 2.8 * len(metrics)),
        squeeze=False,
        sharey="row",
    )
    x = np.arange(len(names))
    for r, metric in enumerate(metrics):
        for c, setting in enumerate(settings):
            ax = axes[r, c]
            part = s[s["setting"] == setting].set_index(["method", "mode"])
            for k, (mode, colour) in enumerate((("greedy", "C0"), ("sampled", "C1"))):
                vals = [part[metric].get((n, mode), np.nan) for n in names]
                errs = [part[metric + "_std"].get((n, mode), 0.0) for n in names]
                ax.bar(
                    x + (k - 0.5) * 0.38, vals, 0.38, yerr=errs, color=colour, label=mode, capsize=2
                )
            plain = baseline(names)
            base = part[metric].get((plain, "greedy"), np.nan) if plain else np.nan
            if not np.isnan(base):
                ax.axhline(base, color="k", ls="--", lw=0.8)
            ax.set_xticks(x, names, rotation=30)
            ax.set_title(f"{setting}: {metric}", fontsize=9)
    axes[0, 0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_sweep(frame: pd.DataFrame, setting: str = "adversarial") -> Figure:
    """The α and β sweeps of :func:`~interp.studies.decoding.parameter_sweep` on one setting: F1
    and yes-ratio."""
    part = frame[frame["setting"] == setting]
    fig, axes = subplots(1, 2, figsize=(8, 3))
    for ax, swept in zip(axes, ("alpha", "beta")):
        sub = part[part["parameter"] == swept].sort_values("value")
        for metric, style in (("f1", "o-"), ("yes_ratio", "s--"), ("accuracy", "^:")):
            ax.plot(sub["value"], sub[metric], style, label=metric)
        ax.set_xlabel(swept if swept == "alpha" else "beta (log scale)")
        if swept == "beta":
            ax.set_xscale("log")
        ax.set_title(f"{setting}: {swept} sweep", fontsize=9)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    return fig


__all__ = ["plot_methods", "plot_sweep"]
