"""Figure helpers shared by the studies. Plotting functions take results and return a matplotlib
Figure (nothing is shown or saved; call ``fig.savefig``); the helpers here draw onto a given axis.

A mean curve with its band (a line of width 2, the band in the same colour at opacity 0.2) is
drawn by :func:`plot_line_band`, whatever computed the band; :func:`plot_band` (mean ± one
standard deviation) and :func:`plot_mean_ci` (mean ± 1.96 standard errors) compute it from rows of
values.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from jaxtyping import Float, Shaped

from probes._figures import ShownOnceFigure, subplots


def plot_line_band(
    ax: Any,
    x: Any,
    mean: Any,
    low: Any,
    high: Any,
    color: str,
    label: str,
    **line: Any,
) -> None:
    """A line through ``(x, mean)`` and a band from ``low`` to ``high`` (arrays or Series of one
    length); ``line`` goes to the line (e.g. ``ls="--"``)."""
    ax.plot(x, mean, color=color, label=label, lw=2, **line)
    ax.fill_between(x, low, high, color=color, alpha=0.2)


def plot_band(
    ax: Any,
    x: Shaped[np.ndarray, " layer"] | range,
    values: Float[np.ndarray, "n layer"],
    color: str,
    label: str,
) -> None:
    """Mean ± one standard deviation (ddof = 1) of ``values`` over its rows, as a line and a band;
    the legend label says so and carries the row count: ``"<label>: mean ± 1 SD (n = N)"``."""
    values = np.asarray(values, dtype=float)
    mean = values.mean(0)
    std = values.std(0, ddof=1) if len(values) > 1 else np.zeros(values.shape[1])
    plot_line_band(
        ax, x, mean, mean - std, mean + std, color, f"{label}: mean ± 1 SD (n = {len(values)})"
    )


def plot_mean_ci(
    ax: Any,
    x: Shaped[np.ndarray, " bins"],
    values: Float[np.ndarray, "n bins"],
    color: str,
    label: str,
    **line: Any,
) -> None:
    """Mean of ``values`` over its rows with a normal-approximation 95% band of the mean
    (± 1.96 standard errors, ddof = 1; no band for one row)."""
    values = np.asarray(values, dtype=np.float64)
    mean = values.mean(axis=0)
    se = values.std(axis=0, ddof=1) / np.sqrt(len(values)) if len(values) > 1 else 0 * mean
    plot_line_band(ax, x, mean, mean - 1.96 * se, mean + 1.96 * se, color, label, **line)


__all__ = ["ShownOnceFigure", "plot_band", "plot_line_band", "plot_mean_ci", "subplots"]
