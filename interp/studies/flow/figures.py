"""The flow figure: mean Δ per window with its interval, one curve per edge, one panel per
group, the causal integration layer marked."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from interp.figures import subplots

if TYPE_CHECKING:
    from .analysis import Flow


def symlog_ticks(low: float, high: float, linthresh: float) -> list[float]:
    """Major ticks for a symmetric-log axis over ``[low, high]``: 0 and ``±10^k`` for every decade
    at or beyond ``linthresh`` inside the range (at least one decade apart on the axis, so their
    labels do not overlap); ``±linthresh`` instead where no decade falls inside."""
    top = max(abs(low), abs(high), linthresh)
    first = math.ceil(math.log10(linthresh))
    decades = [10.0**k for k in range(first, math.floor(math.log10(top)) + 1)]
    ticks = [0.0] if low <= 0 <= high else []
    for sign in (-1.0, 1.0):
        inside = [sign * t for t in decades if low <= sign * t <= high]
        if not inside and low <= sign * linthresh <= high:
            inside = [sign * linthresh]
        ticks += inside
    return sorted(ticks)


def _tick_label(value: float, _pos: object = None) -> str:
    return "0" if value == 0 else f"{value:g}"


def plot_flow(
    flow: Flow,
    *,
    groups: list[str] | None = None,
    alpha: float = 0.05,
    mark: bool = True,
    title: str = "",
    linthresh: float | None = 0.05,
) -> Figure:
    """Mean Δ = log p(answer | knockout) − log p(answer) against each window's first layer, with
    its 95 % bootstrap band, one curve per edge; one panel per group (``"all"`` first, then the
    split's groups). With ``mark``, a dashed line at each panel's causal integration layer. The y
    axis is symmetric-log, linear within ±``linthresh`` (None: linear), so that small image
    effects stay visible beside the large question → last drop; its ticks are 0 and whole decades
    (:func:`symlog_ticks`), written as plain numbers. Each panel's title gives its n."""
    curves = flow.curves()
    names = groups or list(dict.fromkeys(curves["group"]))
    fig, axes = subplots(
        1, len(names), figsize=(3.6 * len(names) + 0.6, 3.0), squeeze=False, sharey=True
    )
    k = len(flow.windows[0]) if flow.windows else 1
    for ax, group in zip(axes[0], names):
        part = curves[curves["group"] == group]
        for edge, c in part.groupby("edge", sort=False):
            (line,) = ax.plot(c["start"], c["mean"], marker="o", ms=3, label=edge)
            ax.fill_between(c["start"], c["low"], c["high"], alpha=0.2, color=line.get_color())
        ax.axhline(0.0, color="0.5", lw=0.8)
        if linthresh is not None:
            ax.set_yscale("symlog", linthresh=linthresh)
        if mark:
            try:
                found = flow.integration_layer(alpha=alpha, group=None if group == "all" else group)
            except ValueError:
                found = None
            if found is not None and found.layer is not None:
                ax.axvline(found.layer, color="k", ls="--", lw=1, label="integration layer")
        n = int(part["n"].iloc[0]) if len(part) else 0
        ax.set_title(f"{group} (n = {n})", fontsize=9)
        ax.set_xlabel(f"first layer of the {k}-layer window")
    if linthresh is not None:  # sharey: one y axis for every panel
        low, high = axes[0, 0].get_ylim()
        axes[0, 0].yaxis.set_major_locator(FixedLocator(symlog_ticks(low, high, linthresh)))
        axes[0, 0].yaxis.set_major_formatter(FuncFormatter(_tick_label))
        axes[0, 0].yaxis.set_minor_locator(NullLocator())
    axes[0, 0].set_ylabel("Δ log p(answer)")
    axes[0, 0].legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


__all__ = ["plot_flow", "symlog_ticks"]
