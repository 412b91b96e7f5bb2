"""The reach of a convolutional merge (:mod:`interp.reach`) in the layout check: GOT-OCR 2.0's,
PP-Chart2Table's and DeepSeek-VL hybrid's tokens read past their cells through SAM's neck and two
3 x 3 stride-2 convolutions; the reach derived from those modules lets their grid pass, and a
wrong grid (shifted by a token, transposed, a token fewer per side) is still refused."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import interp
import interp.layout_check as lc
from interp import region_layouts as rl
from interp.reach import Reach, conv_axis, resample_axis
from interp.testing.builders.inferred import tiny_inferred
from interp.testing.samples import make_samples


def _chain(*steps: tuple[float, float, float]) -> tuple[float, float, float]:
    j, left, right = 1.0, 0.0, 0.0
    for a, l_step, r_step in steps:
        j, left, right = j * a, left + l_step * j, right + r_step * j
    return j, left, right


def test_the_receptive_field_arithmetic() -> None:
    # GOT-OCR 2.0: 16 px patches, a 1 x 1 and a 3 x 3 neck, two 3 x 3 stride-2 convolutions:
    # a token's cell is 64 px; it reads 64 px (1 cell) before it and 16 px (a quarter) after
    got = _chain(
        conv_axis(16, 16, 0),
        conv_axis(1, 1, 0),
        conv_axis(3, 1, 1),
        conv_axis(3, 2, 1),
        conv_axis(3, 2, 1),
    )
    assert got == (64.0, 64.0, 16.0)
    assert conv_axis(14, 14, 0) == (14.0, 0.0, 0.0)  # a patch embedding reads its own cell
    # a bilinear resample to the same size reads each sample alone
    assert resample_axis(16, 16, "bilinear", False) == (1.0, 0.0, 0.0)
    assert resample_axis(8, 4, "area", None) is None  # not modelled: no reach is assumed


@pytest.mark.parametrize(
    ("n_in", "n_out", "mode", "corners"),
    [
        (64, 96, "bilinear", False),  # DeepSeek-VL hybrid's SAM grid to 4 x 24
        (16, 16, "bilinear", False),
        (12, 7, "bilinear", True),
        (10, 23, "bicubic", False),
        (9, 4, "bicubic", False),
        (7, 12, "nearest", None),
    ],
)
def test_the_resample_reach_is_its_weights_support(
    n_in: int, n_out: int, mode: str, corners: bool | None
) -> None:
    """Against torch: which input samples each output sample depends on (a unit impulse per
    input sample), measured from the output sample's cell ``[i·a, (i + 1)·a)``."""
    a = n_in / n_out
    eye = torch.eye(n_in).reshape(n_in, 1, 1, n_in).repeat(1, 1, 2, 1)
    out = F.interpolate(eye, size=(2, n_out), mode=mode, align_corners=corners)[:, 0, 0]
    before = after = 0.0
    for i in range(n_out):
        read = torch.nonzero(out[:, i].abs() > 1e-7).flatten()
        before = max(before, i * a - int(read.min()))
        after = max(after, int(read.max()) + 1 - (i + 1) * a)
    assert resample_axis(n_in, n_out, mode, corners) == pytest.approx((a, before, after))


@pytest.mark.parametrize(
    ("arch", "layout"),
    [
        ("got_ocr2", "conv_downsampled_layout"),
        ("pp_chart2table", "conv_downsampled_layout"),
        ("deepseek_vl_hybrid", "llava_layout"),
        ("unlimited_ocr", "conv_downsampled_layout"),  # rows closed by newlines, a separator
    ],
)
def test_the_reach_lets_the_grid_pass(arch: str, layout: str) -> None:
    model, processor, _ = tiny_inferred(arch)
    vlm = interp.load(model, processor)
    assert vlm.adapter.layout_verified, vlm.adapter.layout_refusal
    assert vlm.adapter.token_layout.__name__ == layout
    verdict = lc.check_layout(vlm)
    assert verdict.reach == Reach(1.0, 1.0, 0.25, 0.25)  # from the modules, as computed above
    assert "receptive field" in vlm.adapter.layout_checked
    regions = interp.token_regions(vlm, make_samples(1)[0])
    assert np.isfinite(regions.boxes).any()


def test_without_the_reach_the_grid_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lc.Recorder, "reach", lambda self, tokens: Reach())
    model, processor, _ = tiny_inferred("got_ocr2")
    vlm = interp.load(model, processor)
    assert not vlm.adapter.layout_verified
    assert "read past their own cells" in vlm.adapter.layout_refusal


def _moved(dx: float, dy: float) -> rl.LayoutFn:
    def layout(processor: object, config: object, size: tuple[int, int]) -> rl.ImageLayout:
        grid = rl.conv_downsampled_layout(processor, config, size)
        w, h = (
            np.median(grid.boxes[:, 2] - grid.boxes[:, 0]),
            np.median(grid.boxes[:, 3] - grid.boxes[:, 1]),
        )
        return rl.ImageLayout(grid.boxes + np.array([dx * w, dy * h, dx * w, dy * h]), grid.views)

    layout.__name__ = f"moved_{dx}_{dy}"
    return layout


def _transposed(processor: object, config: object, size: tuple[int, int]) -> rl.ImageLayout:
    grid = rl.conv_downsampled_layout(processor, config, size)
    side = int(round(len(grid) ** 0.5))
    order = np.arange(len(grid)).reshape(side, side).T.ravel()
    return rl.ImageLayout(grid.boxes[order], grid.views)


def _grid(rows: int, cols: int) -> rl.LayoutFn:
    """A grid of the prompt's 16 tokens with the wrong count per side (2 x 8, 8 x 2)."""

    def layout(processor: object, config: object, size: tuple[int, int]) -> rl.ImageLayout:
        w, h = size
        return rl.View(1.0, 1.0).grid(size, rows, cols, (w / cols, h / rows))

    layout.__name__ = f"grid_{rows}x{cols}"
    return layout


@pytest.mark.parametrize(
    "wrong",
    [
        _moved(1, 0),
        _moved(-1, 0),
        _moved(0, 1),
        _moved(0, -1),
        _transposed,
        _grid(2, 8),
        _grid(8, 2),
    ],
)
def test_a_wrong_grid_is_refused_with_the_reach(wrong: rl.LayoutFn) -> None:
    model, processor, _ = tiny_inferred("got_ocr2")
    vlm = interp.load(model, processor)
    assert vlm.adapter.layout_verified  # the right grid passes with the reach
    vlm.adapter = dataclasses.replace(vlm.adapter, token_layout=wrong, layout_verified=False)
    verdict = lc.check_layout(vlm)
    name, why = verdict.tried[0]
    assert name == wrong.__name__ and "mapped" in why, why
    assert verdict.reach  # refused with the reach on
    assert verdict.layout == "conv_downsampled_layout"


def test_pixel_conditions_stay_refused_with_two_pixel_tensors() -> None:
    """DeepSeek-VL hybrid's processor gives ``pixel_values`` and ``high_res_pixel_values``: its
    token grid is verified, ``distort`` (which would edit one) is refused at encode."""
    model, processor, _ = tiny_inferred("deepseek_vl_hybrid")
    vlm = interp.load(model, processor)
    assert vlm.adapter.layout_verified
    assert "pixel-space conditions stay refused" in vlm.adapter.layout_checked
    with pytest.raises(interp.LayoutNotMappedError, match="several image pixel tensors"):
        interp.residual_stream(vlm, make_samples(2), "distort:500", progress_bar=False)


def test_unlimited_ocrs_framing_is_checked() -> None:
    """Its newline closes each row: the same tokens with the newline opening each row instead
    (right count, each row's tokens one place later) are refused."""

    def opened(processor: object, config: object, size: tuple[int, int]) -> rl.ImageLayout:
        grid = rl.conv_downsampled_layout(processor, config, size)
        order = [k for k in range(len(grid) - 1) if grid.views[k] == "newline"]
        spatial = [k for k in range(len(grid) - 1) if grid.views[k] != "newline"]
        side = len(order)
        keep = [i for r in range(side) for i in (order[r], *spatial[r * side : (r + 1) * side])]
        return rl.ImageLayout(grid.boxes[[*keep, len(grid) - 1]], grid.views)

    model, processor, _ = tiny_inferred("unlimited_ocr")
    vlm = interp.load(model, processor)
    assert vlm.adapter.layout_verified
    vlm.adapter = dataclasses.replace(vlm.adapter, token_layout=opened, layout_verified=False)
    name, why = lc.check_layout(vlm).tried[0]
    assert name == "opened" and "mapped" in why, why
