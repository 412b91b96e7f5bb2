"""Gemma 4's torchvision-free frames processor against the stock ``Gemma4VideoProcessor``.

The stock module does not import without torchvision: it names ``tvF`` (torchvision's
functional API) at class definition. Here its installed source is executed with ``tvF`` bound to
a stand-in whose ``resize`` is torch's antialiased bicubic uint8 kernel (what torchvision runs
on CPU for uint8 frames), and the two torchvision calls of the shared base path (RGB conversion,
normalisation) done in torch. Everything else — the frame sampling, the size rule, the
patching, the positions, the padding, the soft-token counts, the metadata — is the stock code.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from typing import Any

import numpy as np
import pytest
import torch

from interp.testing.builders.frames_video import Gemma4FramesVideoProcessor, resize_uint8
from interp.testing.builders.gemma_omni import GEMMA4_VIDEO_KWARGS


def stock_class() -> type:
    """The installed ``Gemma4VideoProcessor`` source, run with the ``tvF`` stand-in."""
    spec = importlib.util.find_spec("transformers.models.gemma4.video_processing_gemma4")
    assert spec is not None and spec.origin is not None
    with open(spec.origin, encoding="utf-8") as f:
        source = f.read()

    def resize(video: torch.Tensor, size: list[int], interpolation: Any, antialias: bool) -> Any:
        assert antialias
        return resize_uint8(video, (int(size[0]), int(size[1])))

    module = types.ModuleType("gemma4_video_stock")
    module.__dict__.update(
        __package__="transformers.models.gemma4",
        __file__=spec.origin,
        tvF=types.SimpleNamespace(resize=resize, InterpolationMode=object),
    )
    sys.modules[module.__name__] = module  # its decorators read the source back by module
    try:
        exec(compile(source, spec.origin, "exec"), module.__dict__)  # noqa: S102 (installed source)
    finally:
        del sys.modules[module.__name__]
    stock = module.Gemma4VideoProcessor

    class Stock(stock):  # type: ignore[misc, valid-type]
        def convert_to_rgb(self, video: torch.Tensor) -> torch.Tensor:
            return video

        def normalize(self, image: torch.Tensor, mean: Any, std: Any, **kwargs: Any) -> Any:
            mean = torch.as_tensor(mean, dtype=image.dtype).view(-1, 1, 1)
            std = torch.as_tensor(std, dtype=image.dtype).view(-1, 1, 1)
            return (image - mean) / std

    return Stock


def clip(frames: int, h: int, w: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (frames, h, w, 3), dtype=np.uint8)


@pytest.mark.parametrize(
    "settings",
    [
        GEMMA4_VIDEO_KWARGS,  # the tiny model's
        {"num_frames": 3},  # the stock defaults (patch 16, 3x3 pooling), 3 frames sampled
        {"patch_size": 8, "pooling_kernel_size": 2, "max_soft_tokens": 140, "num_frames": None},
    ],
)
def test_frames_processor_equals_the_stock_code(settings):
    stock, ours = stock_class()(**settings), Gemma4FramesVideoProcessor(**settings)
    videos = [clip(4, 32, 32, 0), clip(5, 48, 80, 1), clip(3, 200, 120, 2)]
    want = stock(videos, return_tensors="pt", return_metadata=True)
    got = ours(videos, return_tensors="pt", return_metadata=True)
    assert set(got) == set(want)
    for key in ("pixel_values_videos", "video_position_ids", "num_frames_per_video"):
        torch.testing.assert_close(got[key], want[key], atol=0, rtol=0)
    assert got["num_soft_tokens_per_video"].tolist() == want["num_soft_tokens_per_video"].tolist()
    for a, b in zip(got["video_metadata"], want["video_metadata"]):
        assert list(a.frames_indices) == list(b.frames_indices)
    # the frames were sampled as asked (all of them without num_frames)
    assert got["pixel_values_videos"].shape[0] == sum(
        min(len(v), settings.get("num_frames") or len(v)) for v in videos
    )
