"""The figures say what they show (#46 item 4), checked on matplotlib objects, not pixels: Fig. 2's
band is named (mean ± 1 SD) with each group's n, Fig. 4 gives each group's n, the flow plot's
symmetric-log ticks are whole decades whose labels do not overlap, and every caption carries n."""

from __future__ import annotations

import itertools

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

from interp.studies.coe.figures import plot_distance_curves, plot_tvi_distributions
from interp.studies.flow.analysis import Flow
from interp.studies.flow.figures import plot_flow, symlog_ticks


def _legend_texts(ax) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts()]


def test_fig2_names_its_band_and_each_groups_n():
    rng = np.random.default_rng(0)
    d = np.abs(rng.normal(size=(10, 5)))
    vt = np.array([True] * 6 + [False] * 4)
    fig = plot_distance_curves(d, vt, vip=2)
    ax = fig.axes[0]
    texts = _legend_texts(ax)
    assert any("mean ± 1 SD (n = 6)" in t and "VT" in t for t in texts), texts
    assert any("mean ± 1 SD (n = 4)" in t and "{T}" in t for t in texts), texts
    assert ax.get_title().endswith("(n = 10)")
    # the band is one standard deviation (ddof = 1) of the D_VT rows around their mean
    band = ax.collections[0].get_paths()[0].vertices[:, 1]
    sd = d[vt].std(0, ddof=1)
    assert band.max() == pytest.approx((d[vt].mean(0) + sd).max())
    titled = plot_distance_curves(d, vt, title="D_VT vs D_T")
    assert titled.axes[0].get_title() == "D_VT vs D_T (n = 10)"


def test_fig4_gives_each_groups_n():
    fig = plot_tvi_distributions({"D_VT": [0.1, 0.2, 0.3], "D_T": [0.0, 0.05]})
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert labels == ["D_VT\n(n = 3)", "D_T\n(n = 2)"]


def _flow(rng: np.random.Generator, n: int = 24, w: int = 12) -> Flow:
    """A large question → last drop (about −8 nats) beside small image effects (±0.03)."""
    return Flow(
        delta={
            "question>last": rng.normal(-8.0, 1.0, (n, w)),
            "image>last": rng.normal(-0.03, 0.01, (n, w)),
            "image>question": rng.normal(0.02, 0.01, (n, w)),
        },
        windows=[(i, i + 1) for i in range(1, w + 1)],
        base=np.full(n, -1.0),
        groups=np.array(["D_VT", "D_T"] * (n // 2)),
        sample_ids=[f"s{i}" for i in range(n)],
        answers=["red"] * n,
        n_layers=w + 1,
    )


def test_flow_symlog_ticks_are_decades_whose_labels_do_not_overlap():
    fig = plot_flow(_flow(np.random.default_rng(1)), mark=False)
    fig.canvas.draw()
    ax = fig.axes[0]
    low, high = ax.get_ylim()
    shown = [
        t
        for t in ax.get_yticklabels()
        if t.get_visible() and t.get_text() and low <= t.get_position()[1] <= high
    ]
    values = sorted(float(t.get_text()) for t in shown)
    assert 0.0 in values and -1.0 in values and -0.1 in values
    assert all(v == 0 or np.log10(abs(v)).is_integer() for v in values), values
    renderer = fig.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in shown]
    for a, b in itertools.combinations(boxes, 2):
        assert not a.overlaps(b), "two y tick labels overlap"
    titles = [a.get_title() for a in fig.axes]
    assert titles == ["all (n = 24)", "D_T (n = 12)", "D_VT (n = 12)"]


def test_symlog_ticks_against_hand_lists():
    assert symlog_ticks(-12.0, 0.3, 0.05) == [-10.0, -1.0, -0.1, 0.0, 0.1]
    assert symlog_ticks(-0.04, 0.03, 0.05) == [0.0]
    assert symlog_ticks(-0.08, 0.08, 0.05) == [-0.05, 0.0, 0.05]
    assert symlog_ticks(0.2, 30.0, 0.05) == [1.0, 10.0]
