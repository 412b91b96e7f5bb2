"""Figures of the study: label rates as stacked bars or as grouped bars with Wilson CIs (the
paper's Fig. 3), each source's bias rate by position."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from interp.figures import subplots


def plot_bias(table: pd.DataFrame, title: str = "") -> Figure:
    """Stacked bars of label rates (a :meth:`ConflictResponses.table`), one bar per row."""
    t = table.drop(columns="n")
    fig, ax = subplots(figsize=(1.2 + 0.9 * len(t), 3.2))
    bottom = np.zeros(len(t))
    for col in t.columns:
        ax.bar(range(len(t)), t[col].to_numpy(), bottom=bottom, label=col)
        bottom += t[col].to_numpy()
    ax.set_xticks(range(len(t)), [str(i) for i in t.index], rotation=30, ha="right")
    ax.set_ylabel("share of responses")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, bbox_to_anchor=(1.02, 1), loc="upper left")
    fig.tight_layout()
    return fig


def plot_positions(effect: pd.DataFrame) -> Figure:
    """Each source's bias rate by its position in the order, one panel per configuration."""
    configs = list(dict.fromkeys(effect["configuration"]))
    fig, axes = subplots(1, len(configs), figsize=(3.4 * len(configs), 2.8), squeeze=False)
    for ax, config in zip(axes[0], configs):
        part = effect[effect["configuration"] == config]
        for src, grp in part.groupby("source", sort=False):
            err = [grp["rate"] - grp["low"], grp["high"] - grp["rate"]]
            ax.errorbar(grp["position"], grp["rate"], yerr=err, marker="o", capsize=3, label=src)
        ax.set_xlabel("position before the question")
        ax.set_title(config, fontsize=9)
    axes[0, 0].set_ylabel("rate of the source's own bias")
    axes[0, 0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_rates(
    frame: pd.DataFrame, by: Sequence[str], labels: Sequence[str], title: str = ""
) -> Figure:
    """Grouped bars of label rates with Wilson 95 % CI whiskers (a :class:`RateTable`'s frame):
    one cluster per group (e.g. the four evidence types), one bar per label that occurs."""
    frame = frame.assign(group=frame[list(by)].astype(str).agg(" / ".join, axis=1))
    groups = list(dict.fromkeys(frame["group"]))
    shown = [lab for lab in labels if frame.loc[frame["label"] == lab, "rate"].sum() > 0]
    shown = shown or list(labels)[:1]
    width = 0.8 / len(shown)
    fig, ax = subplots(figsize=(1.5 + 1.3 * len(groups), 3.4))
    x = np.arange(len(groups))
    for j, lab in enumerate(shown):
        part = frame[frame["label"] == lab].set_index("group").reindex(groups)
        rate = part["rate"].fillna(0.0).to_numpy()
        err = [
            rate - part["low"].fillna(0.0).to_numpy(),
            part["high"].fillna(0.0).to_numpy() - rate,
        ]
        ax.bar(x + (j - (len(shown) - 1) / 2) * width, rate, width, yerr=err, capsize=2, label=lab)
    ax.set_xticks(x, groups, rotation=20, ha="right")
    ax.set_ylim(0, 1)
    ax.set_ylabel("share of responses")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, bbox_to_anchor=(1.02, 1), loc="upper left")
    fig.tight_layout()
    return fig
