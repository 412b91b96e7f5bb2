"""Figures of the chain-of-embedding paper. Each function takes results and returns a matplotlib
Figure (nothing is shown or saved; call ``fig.savefig``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from jaxtyping import Bool, Float
from matplotlib.figure import Figure

from interp.figures import plot_band, subplots

from .diagnosis import Diagnosis

VT_COLOR, T_COLOR = "#d62728", "#1f77b4"


def plot_distance_curves(
    distances: Float[np.ndarray, "n layer"] | Diagnosis,
    in_vt: Bool[np.ndarray, " n"] | None = None,
    *,
    vip: int | None = None,
    title: str | None = None,
    metric: str = "cosine",
    ax=None,
) -> Figure:
    """Fig. 2: mean ± 1 SD (ddof = 1, over the samples) of d(z_vis^l, z_blind^l) per layer for D_VT
    (red) and D_T (blue), with the VIP marked; the legend says what the band is and each group's
    n, the title the total n. Accepts a :class:`Diagnosis` or (distances, in_vt)."""
    if isinstance(distances, Diagnosis):
        diag = distances
        distances, in_vt, metric = diag.distances, diag.in_vt, diag.metric
        vip = diag.vip if vip is None else vip
    if in_vt is None:
        raise ValueError("give in_vt (D_VT membership) with a distance array")
    distances, in_vt = np.asarray(distances), np.asarray(in_vt, dtype=bool)
    fig, ax = (ax.figure, ax) if ax is not None else subplots(figsize=(5.5, 3.6))
    x = np.arange(distances.shape[1])
    plot_band(ax, x, distances[in_vt], VT_COLOR, r"$\mathcal{D}_{VT}$")
    plot_band(ax, x, distances[~in_vt], T_COLOR, r"$\mathcal{D}_{T}$")
    if vip is not None:
        ax.axvline(vip, color="k", ls="--", lw=1)
        ax.annotate(
            f"VIP = {vip}", (vip, ax.get_ylim()[1]), xytext=(4, -12), textcoords="offset points"
        )
    ax.set_xlabel("layer (0 = embeddings)")
    ax.set_ylabel(f"{metric} distance, image vs blind")
    ax.set_title(_with_n(title or "Chain-of-embedding distance per layer", len(distances)))
    ax.legend(frameon=False, loc="upper left", fontsize=8)
    fig.tight_layout()
    return fig


def _with_n(title: str, n: int) -> str:
    """``title`` with ``" (n = N)"`` added unless it already gives an n."""
    return title if "n = " in title or "n=" in title else f"{title} (n = {n})"


def plot_tvi_distributions(
    groups: Mapping[str, Sequence[float] | np.ndarray],
    *,
    title: str | None = None,
    ylabel: str = "TVI",
) -> Figure:
    """Fig. 4: TVI distributions of several datasets or groups (box plots: quartiles, whiskers to
    1.5 IQR; every sample a point); each group's tick label gives its n."""
    names = list(groups)
    data = [np.asarray(groups[n], dtype=float) for n in names]
    fig, ax = subplots(figsize=(1.4 + 1.3 * len(names), 3.8))
    ax.boxplot(data, showfliers=False)
    ticks = [f"{name}\n(n = {len(values)})" for name, values in zip(names, data)]
    ax.set_xticks(range(1, len(names) + 1), ticks, rotation=20, ha="right")
    rng = np.random.default_rng(0)
    for i, values in enumerate(data, start=1):
        ax.scatter(i + rng.uniform(-0.15, 0.15, len(values)), values, s=6, alpha=0.35, color="0.3")
    ax.set_ylabel(ylabel)
    ax.set_title(title or "TVI by group")
    fig.tight_layout()
    return fig


def plot_vip_comparison(
    diag: Diagnosis, manual: int, automatic: int | None, *, title: str | None = None
) -> Figure:
    """Fig. 9: the distance curves with the manual and the automatic VIP marked, and the two-sample
    statistic against the Eq. 9 threshold."""
    fig, (ax1, ax2) = subplots(1, 2, figsize=(10, 3.6))
    plot_distance_curves(diag.distances, diag.in_vt, vip=None, metric=diag.metric, ax=ax1)
    ax1.axvline(manual, color="k", ls="--", lw=1, label=f"manual VIP = {manual}")
    if automatic is not None:
        ax1.axvline(
            automatic, color="tab:green", ls=":", lw=2, label=f"automatic VIP = {automatic}"
        )
    ax1.legend(frameon=False, loc="upper left", fontsize=8)
    x = np.arange(diag.distances.shape[1])
    ax2.plot(
        x,
        diag.detector.statistic_,
        "o-",
        color="k",
        label="the paper's two-sample statistic $t_l$\n(samples taken as independent)",
    )
    ax2.plot(
        x,
        diag.detector.thresholds_,
        "s--",
        color="tab:green",
        label=r"Eq. 9 threshold $\beta\,\bar t_{<l}$",
    )
    ax2.set_xlabel("layer")
    ax2.legend(frameon=False, fontsize=8)
    ax2.set_title("VIP detection")
    fig.suptitle(_with_n(title or "Manual vs automatic VIP", len(diag.distances)))
    fig.tight_layout()
    return fig


__all__ = ["plot_distance_curves", "plot_tvi_distributions", "plot_vip_comparison"]
