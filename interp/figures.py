"""Figure helpers shared by the studies. Plotting functions take results and return a matplotlib
Figure (nothing is shown or saved; call ``fig.savefig``)."""

from __future__ import annotations

from typing import Any

import numpy as np
from jaxtyping import Float, Shaped


def plot_band(
    ax: Any,
    x: Shaped[np.ndarray, " layer"] | range,
    values: Float[np.ndarray, "n layer"],
    color: str,
    label: str,
) -> None:
    """Mean ± one standard deviation (ddof = 1) of ``values`` over its rows, as a line and a band;
    the legend label carries the row count."""
    values = np.asarray(values, dtype=float)
    mean = values.mean(0)
    std = values.std(0, ddof=1) if len(values) > 1 else np.zeros(values.shape[1])
    ax.plot(x, mean, color=color, label=f"{label} (n={len(values)})", lw=2)
    ax.fill_between(x, mean - std, mean + std, color=color, alpha=0.2)


__all__ = ["plot_band"]
