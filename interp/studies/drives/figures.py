"""Figures of the temporal-causal-drive paper (Figs. 2-5 and the S_PV validation). Each function
takes results and returns a matplotlib Figure (nothing is shown or saved; call ``fig.savefig``)."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from jaxtyping import Float
from matplotlib.figure import Figure
from sklearn.metrics import roc_curve

from interp.figures import plot_mean_ci, subplots

from .analysis import IMBALANCE_SCORES, DriveClusters, Imbalance
from .constants import COLORS, DRIVES, NAMES
from .profiles import DriveProfiles
from .recovery import RECOVERED, Recovery
from .removal import SourceRemoval
from .result import CausalDrives


def _mean_band(
    ax: Any, values: Float[np.ndarray, "n bins"], color: str, label: str, **kw: Any
) -> None:
    """Mean over rows per bin (x at the bin centres) with a 95% band of the mean."""
    x = (np.arange(np.shape(values)[1]) + 0.5) / np.shape(values)[1]
    plot_mean_ci(ax, x, values, color, label, **kw)


def plot_trajectories(drives: CausalDrives, *, bins: int = 10, title: str | None = None) -> Figure:
    """Fig. 2: mean question, visual and prefix drives (QCD, VCD, PCD) over the relative decoding
    position (``bins`` bins), with
    95% bands of the mean over samples."""
    b = drives.binned(bins)
    fig, ax = subplots(figsize=(5.5, 3.6))
    for d, name in enumerate(DRIVES):
        _mean_band(ax, b[:, d], COLORS[name], NAMES[name])
    ax.axhline(0, color="k", lw=0.6)
    ax.set_xlabel("relative decoding position")
    ax.set_ylabel("drive (bits)")
    ax.set_title(title or f"causal drives (n={len(drives)}, K={drives.k})", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_clusters(clusters: DriveClusters, *, title: str | None = None) -> Figure:
    """Fig. 3: each cluster's mean prefix, question and visual drive trajectory (one panel per
    drive), labelled
    with the cluster's share of the generations."""
    fig, axes = subplots(1, 3, figsize=(11, 3.2))
    x = (np.arange(clusters.bins) + 0.5) / clusters.bins
    palette = plt.get_cmap("tab10")
    for ax, name in zip(axes, ("prefix_drive", "question_drive", "visual_drive")):
        d = DRIVES.index(name)
        for c in range(clusters.k):
            ax.plot(
                x,
                clusters.profiles[c, d],
                color=palette(c),
                lw=2,
                label=f"cluster {c + 1} ({100 * clusters.shares[c]:.0f}%)",
            )
        ax.axhline(0, color="k", lw=0.6)
        ax.set_title(NAMES[name], fontsize=10)
        ax.set_xlabel("relative decoding position")
    axes[0].set_ylabel("drive (bits)")
    axes[0].legend(fontsize=8)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def plot_recovery(
    recovery: Recovery, *, bins: int = 10, blocks: Any = None, n_boot: int = 1000
) -> Figure:
    """Fig. 5: ``|D(t) − G(t)|`` over the relative decoding position for the drive and its PMI
    baseline, question (question drive QCD vs PMI_Q) and prefix (prefix drive PCD vs PMI_P)
    interventions, with the paper's 95 % block-bootstrap bands (:meth:`Recovery.binned_ci`)."""
    ci = recovery.binned_ci(bins, blocks, n_boot)
    fig, axes = subplots(1, 2, figsize=(9, 3.3))
    for ax, (title, drive, base) in zip(axes, RECOVERED):
        for name, ls in ((drive, "-"), (base, "--")):
            c = ci[ci["error"] == name]
            x = c["position"].to_numpy()
            ax.plot(x, c["mean"], color=COLORS[name], lw=2, ls=ls, label=NAMES[name])
            ax.fill_between(x, c["low"], c["high"], color=COLORS[name], alpha=0.2, lw=0)
        ax.set_title(f"{title} intervention (M={recovery.m})", fontsize=10)
        ax.set_xlabel("relative decoding position")
        ax.legend(fontsize=8)
    axes[0].set_ylabel("recovery error |D − G| (bits)")
    fig.tight_layout()
    return fig


def plot_profiles(profiles: DriveProfiles, *, title: str | None = None) -> Figure:
    """Fig. 2's normalised drive profiles (:meth:`.profiles.DriveProfiles.plot`): each drive's
    share of the three mean drives per relative-position bin as stacked areas, and each share
    with its 95 % block-bootstrap interval as a line and band on top."""
    return profiles.plot(title=title)


def plot_imbalance(imbalance: Imbalance) -> Figure:
    """S_PV of prior-driven vs grounded generations (histograms) and the ROC curves of S_PV and
    of the answer-level visual drive (negated: lower visual drive predicts prior-driven)."""
    s = imbalance.scores
    y = s["positive"].to_numpy()
    fig, (left, right) = subplots(1, 2, figsize=(9, 3.4))
    edges = np.histogram_bin_edges(s["s_pv"], bins=15)
    for flag, name, color in (
        (True, imbalance.positive, "#d62728"),
        (False, imbalance.negative, "#1f77b4"),
    ):
        left.hist(
            s.loc[y == flag, "s_pv"],
            bins=edges,
            alpha=0.55,
            color=color,
            label=f"{name} (n={int((y == flag).sum())})",
        )
    left.set_xlabel("$S_{PV}$ = mean prefix drive − mean visual drive (bits)")
    left.set_ylabel("generations")
    left.legend(fontsize=8)
    table = imbalance.table.set_index("score")
    for title, column, sign in IMBALANCE_SCORES[:2]:
        fpr, tpr, _ = roc_curve(y, sign * s[column].to_numpy())
        right.plot(fpr, tpr, lw=2, label=f"{title} (AUROC {table.loc[title, 'auroc']:.3f})")
    right.plot([0, 1], [0, 1], color="k", lw=0.6, ls=":")
    right.set_xlabel("false positive rate")
    right.set_ylabel("true positive rate")
    right.set_title(f"{imbalance.positive} vs {imbalance.negative}", fontsize=10)
    right.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_source_removal(removal: SourceRemoval, *, bins: int = 10) -> Figure:
    """Fig. 4: mean token probability of the fixed answers over the relative decoding position,
    under the full input and with Q, V or the prefix removed."""
    b = removal.binned(bins)
    fig, ax = subplots(figsize=(5.5, 3.6))
    styles = {
        "full": ("k", "full"),
        "no_question": (COLORS["question_drive"], "without Q"),
        "no_image": (COLORS["visual_drive"], "without V"),
        "no_prefix": (COLORS["prefix_drive"], "without $A_{<t}$"),
    }
    for key, (color, label) in styles.items():
        _mean_band(ax, b[key], color, label)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("relative decoding position")
    ax.set_ylabel("mean token probability")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


__all__ = [
    "plot_clusters",
    "plot_imbalance",
    "plot_recovery",
    "plot_source_removal",
    "plot_trajectories",
]
