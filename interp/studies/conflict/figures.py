"""Figures of the study: label rates as stacked bars, each source's bias rate by position."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure


def plot_bias(table: pd.DataFrame, title: str = "") -> Figure:
    """Stacked bars of label rates (a :meth:`ConflictResponses.table`), one bar per row."""
    t = table.drop(columns="n")
    fig, ax = plt.subplots(figsize=(1.2 + 0.9 * len(t), 3.2))
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
    fig, axes = plt.subplots(1, len(configs), figsize=(3.4 * len(configs), 2.8), squeeze=False)
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
