"""Figures that a notebook shows once.

A plotting function draws with pyplot (so that ``plot_x(...);`` and ``plot_x(...); plt.show()``
show the figure, as in any matplotlib code) and returns the Figure. Under Jupyter's inline backend
a plain pyplot Figure that ends a cell is shown twice: once as the cell's value and once more when
the backend shows the cell's open pyplot figures. :class:`ShownOnceFigure` shows itself once
whichever of the two displays it first, and leaves pyplot then, so the other finds nothing to show.
"""

from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure


class ShownOnceFigure(Figure):
    """A matplotlib Figure that IPython displays once (see the module docstring)."""

    def _ipython_display_(self) -> None:
        import matplotlib
        from IPython.core.pylabtools import print_figure
        from IPython.display import display

        if "inline" not in matplotlib.get_backend():  # a window shows it: the usual text only
            display({"text/plain": repr(self)}, raw=True)
            return
        import matplotlib.pyplot as plt

        plt.close(self)  # the backend's showing at the end of the cell would repeat it
        # the image the inline backend makes (its print_figure, bbox "tight"), the usual text
        png = print_figure(self, "png", bbox_inches="tight")
        display({"image/png": png, "text/plain": repr(self)}, raw=True)


def subplots(*args: Any, **kwargs: Any) -> tuple[ShownOnceFigure, Any]:
    """``plt.subplots`` whose figure is a :class:`ShownOnceFigure`."""
    import matplotlib.pyplot as plt

    return plt.subplots(*args, FigureClass=ShownOnceFigure, **kwargs)


__all__ = ["ShownOnceFigure", "subplots"]
