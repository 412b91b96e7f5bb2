"""Torchvision-free video processors for the LLaVA-style families (LLaVA-NeXT-Video,
LLaVA-OneVision, InternVL), Qwen3-VL and Gemma 4.

Their stock video processors (``BaseVideoProcessor`` subclasses) import torchvision, which does not
import with this project's CPU torch (see ``docs/omni_families.md``). The processor here repeats
their arithmetic in plain torch; it was compared with the stock ones (equal, see the docs).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from transformers import BatchFeature
from transformers.image_transforms import get_resize_output_image_size
from transformers.image_utils import (
    OPENAI_CLIP_MEAN,
    OPENAI_CLIP_STD,
    ChannelDimension,
    PILImageResampling,
    SizeDict,
)
from transformers.models.gemma4.image_processing_pil_gemma4 import (
    get_aspect_ratio_preserving_size,
)
from transformers.models.qwen3_vl.video_processing_qwen3_vl import (
    Qwen3VLVideoProcessor,
    smart_resize,
)
from transformers.processing_utils import VideosKwargs
from transformers.video_processing_utils import BaseVideoProcessor
from transformers.video_utils import make_batched_metadata

from .common import flat_videos


class ResizeCropVideoProcessor:
    """The LLaVA-style video preprocessing of transformers' ``BaseVideoProcessor`` without
    torchvision: each frame is resized with antialiased bicubic interpolation (the shortest edge to
    ``shortest_edge``, aspect kept; or to ``height x width``) by torch's uint8 kernel (torchvision's
    CPU path for uint8 frames), center-cropped to ``crop`` (optional), rescaled by 1/255 and normalised.
    Output: ``pixel_values_videos`` ``[videos, frames, 3, H, W]`` (videos of one frame count and
    size, as the stock processor stacks them) and the stock ``video_metadata``."""

    model_input_names = ["pixel_values_videos"]
    _auto_class = None

    def __init__(
        self,
        *,
        shortest_edge: int | None = None,
        size: tuple[int, int] | None = None,
        crop: tuple[int, int] | None = None,
        mean: tuple[float, ...] = tuple(OPENAI_CLIP_MEAN),
        std: tuple[float, ...] = tuple(OPENAI_CLIP_STD),
    ) -> None:
        if (shortest_edge is None) == (size is None):
            raise ValueError("give exactly one of shortest_edge and size")
        self.shortest_edge, self.size, self.crop = shortest_edge, size, crop
        self.image_mean, self.image_std = list(mean), list(std)
        self.num_frames = None
        self.fps = None

    def _frames(self, video: Any) -> torch.Tensor:
        x = torch.from_numpy(np.stack([np.asarray(f) for f in video])).permute(0, 3, 1, 2)
        if self.shortest_edge is not None:
            new = get_resize_output_image_size(
                x[0],
                size=self.shortest_edge,
                default_to_square=False,
                input_data_format=ChannelDimension.FIRST,
            )
        else:
            new = self.size
        x = resize_uint8(x, tuple(new))
        if self.crop is not None:
            ch, cw = self.crop
            h, w = x.shape[-2:]
            top, left = int((h - ch) / 2.0), int((w - cw) / 2.0)
            x = x[..., top : top + ch, left : left + cw]
        mean = torch.tensor(self.image_mean).view(1, 3, 1, 1) * 255
        std = torch.tensor(self.image_std).view(1, 3, 1, 1) * 255
        return (x.float() - mean) / std

    def __call__(self, videos: Any, return_tensors: Any = "pt", **kwargs: Any) -> BatchFeature:
        if isinstance(videos, np.ndarray) and videos.ndim == 4:
            videos = [videos]
        videos = flat_videos(videos)
        frames = [self._frames(v) for v in videos]
        if len({f.shape for f in frames}) > 1:
            shapes = ", ".join(str(tuple(f.shape)) for f in frames)
            raise ValueError(
                f"the videos of one call must stack (same frame count and size), got {shapes}: "
                "subsample them to one frame count or process them one at a time"
            )
        pixels = torch.stack(frames)
        return BatchFeature(
            {
                "pixel_values_videos": pixels.numpy(),
                "video_metadata": make_batched_metadata(videos, kwargs.get("video_metadata")),
            },
            tensor_type=return_tensors,
            skip_tensor_conversion=["video_metadata"],
        )

    def save_pretrained(self, *args: Any, **kwargs: Any) -> None:
        """Nothing to save (the constructor's arguments define it)."""


def resize_uint8(frames: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    """Antialiased bicubic resize of uint8 ``[..., 3, H, W]`` frames by torch's native uint8 kernel
    (what torchvision's ``resize`` runs for uint8 input on CPU); unchanged at the same size."""
    if tuple(size) == tuple(frames.shape[-2:]):
        return frames
    flat = frames.reshape(-1, *frames.shape[-3:]).contiguous()
    out = torch.nn.functional.interpolate(
        flat, size=tuple(size), mode="bicubic", antialias=True, align_corners=False
    )
    return out.reshape(*frames.shape[:-2], *out.shape[-2:])


class Qwen3VLFramesVideoProcessor(Qwen3VLVideoProcessor):
    """The stock ``Qwen3VLVideoProcessor`` (frame sampling at ``fps`` of the video's rate — 24 fps
    assumed for raw frames — with at least ``min_frames``, the clip-wide ``smart_resize`` area
    bounds, temporal patches, the metadata the processor turns into ``<t seconds>`` timestamps)
    with its three torchvision calls replaced: the uint8 resize (:func:`resize_uint8`), the RGB
    conversion (frames are RGB already) and the normalisation (same arithmetic in torch). The
    per-frame pixel cap is off (``cap_pixels_per_frame=False``, the current stock default)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("cap_pixels_per_frame", False)
        super().__init__(**kwargs)

    def convert_to_rgb(self, video: torch.Tensor) -> torch.Tensor:
        if video.shape[-3] != 3:
            raise ValueError(f"video frames must be RGB (3 channels), got {video.shape[-3]}")
        return video

    def resize(  # type: ignore[override]
        self,
        videos: torch.Tensor,
        size: SizeDict,
        resample: Any,
        factor: int,
        temporal_factor: int,
        cap_pixels_per_frame: bool | None = None,
        **kwargs: Any,
    ) -> torch.Tensor:
        if cap_pixels_per_frame:
            raise ValueError("cap_pixels_per_frame is not supported by the frames processor")
        h, w = smart_resize(
            num_frames=videos.shape[1],
            height=videos.shape[-2],
            width=videos.shape[-1],
            temporal_factor=temporal_factor,
            factor=factor,
            min_pixels=size.shortest_edge,
            max_pixels=size.longest_edge,
        )
        return resize_uint8(videos, (h, w))

    def normalize(  # type: ignore[override]
        self, image: torch.Tensor, mean: Any, std: Any, inplace: bool = False, **kwargs: Any
    ) -> torch.Tensor:
        mean = torch.as_tensor(mean, dtype=image.dtype).view(-1, 1, 1)
        std = torch.as_tensor(std, dtype=image.dtype).view(-1, 1, 1)
        return (image - mean) / std


class _TorchNormalize:
    """The two torchvision calls of the stock ``BaseVideoProcessor`` path, in plain torch: the RGB
    conversion (frames are RGB already) and the normalisation (the same arithmetic)."""

    def convert_to_rgb(self, video: torch.Tensor) -> torch.Tensor:
        if video.shape[-3] != 3:
            raise ValueError(f"video frames must be RGB (3 channels), got {video.shape[-3]}")
        return video

    def normalize(
        self, image: torch.Tensor, mean: Any, std: Any, inplace: bool = False, **kwargs: Any
    ) -> torch.Tensor:
        mean = torch.as_tensor(mean, dtype=image.dtype).view(-1, 1, 1)
        std = torch.as_tensor(std, dtype=image.dtype).view(-1, 1, 1)
        return (image - mean) / std


class Gemma4VideoKwargs(VideosKwargs, total=False):
    """Gemma 4's video options: the patch side, the soft-token budget per frame and the pooling
    kernel (as the stock ``Gemma4VideoProcessor`` takes them)."""

    patch_size: int
    max_soft_tokens: int
    pooling_kernel_size: int


GEMMA4_SOFT_TOKEN_BUDGETS = (70, 140, 280, 560, 1120)


class Gemma4FramesVideoProcessor(_TorchNormalize, BaseVideoProcessor):
    """Gemma 4's video preprocessing without torchvision (the stock module does not import
    without it). The stock ``BaseVideoProcessor`` path does the frame sampling (``num_frames``
    uniformly, all frames when ``num_frames`` is None) and the metadata the processor turns into
    ``mm:ss`` stamps; then each frame is resized, aspect kept, to the largest size whose patch
    grid fits ``max_soft_tokens x pooling_kernel_size²`` patches with sides divisible by
    ``pooling_kernel_size x patch_size`` (the stock image processor's own size rule), by
    :func:`resize_uint8`, rescaled by 1/255 (mean 0, std 1), cut into ``patch_size`` patches
    (row-major, each patch's pixels row, column, channel) and padded to the budget: pixels 0,
    positions ``(-1, -1)``. Output: ``pixel_values_videos`` ``[frames of all videos, max patches,
    patch pixels]``, ``video_position_ids`` ``[.., .., 2]`` as (column, row),
    ``num_frames_per_video`` and ``num_soft_tokens_per_video`` (per frame)."""

    resample = PILImageResampling.BICUBIC
    image_mean = [0.0, 0.0, 0.0]
    image_std = [1.0, 1.0, 1.0]
    size = None
    default_to_square = True
    do_convert_rgb = True
    do_resize = True
    do_rescale = True
    do_normalize = True
    num_frames = 32
    do_sample_frames = True
    patch_size = 16
    max_soft_tokens = 70
    pooling_kernel_size = 3
    valid_kwargs = Gemma4VideoKwargs
    model_input_names = ["pixel_values_videos", "video_position_ids", "num_frames_per_video"]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if self.max_soft_tokens not in GEMMA4_SOFT_TOKEN_BUDGETS:
            raise ValueError(
                f"max_soft_tokens must be one of {GEMMA4_SOFT_TOKEN_BUDGETS}, got "
                f"{self.max_soft_tokens}"
            )

    def _validate_preprocess_kwargs(self, **kwargs: Any) -> None:
        # the size comes from the patch budget, not from ``size``
        super()._validate_preprocess_kwargs(**{**kwargs, "do_resize": False})

    def _preprocess(  # type: ignore[override]
        self,
        videos: list[torch.Tensor],
        do_resize: bool,
        do_rescale: bool,
        rescale_factor: float,
        do_normalize: bool,
        image_mean: Any,
        image_std: Any,
        return_tensors: Any,
        patch_size: int = 16,
        max_soft_tokens: int = 70,
        pooling_kernel_size: int = 3,
        **kwargs: Any,
    ) -> BatchFeature:
        if max_soft_tokens not in GEMMA4_SOFT_TOKEN_BUDGETS:
            raise ValueError(f"max_soft_tokens must be one of {GEMMA4_SOFT_TOKEN_BUDGETS}")
        budget = max_soft_tokens * pooling_kernel_size**2
        pixels, positions, soft, frames = [], [], [], []
        for video in videos:
            if do_resize:
                h, w = get_aspect_ratio_preserving_size(
                    height=video.shape[-2],
                    width=video.shape[-1],
                    patch_size=patch_size,
                    max_patches=budget,
                    pooling_kernel_size=pooling_kernel_size,
                )
                video = resize_uint8(video, (h, w))
            video = self.rescale_and_normalize(
                video, do_rescale, rescale_factor, do_normalize, image_mean, image_std
            )
            t, c, height, width = video.shape
            rows, cols = height // patch_size, width // patch_size
            patches = video.reshape(t, c, rows, patch_size, cols, patch_size)
            patches = patches.permute(0, 2, 4, 3, 5, 1).reshape(t, rows * cols, -1)
            row, col = torch.meshgrid(torch.arange(rows), torch.arange(cols), indexing="ij")
            where = torch.stack([col, row], dim=-1).reshape(1, rows * cols, 2).repeat(t, 1, 1)
            pad = budget - rows * cols
            if pad > 0:
                patches = torch.nn.functional.pad(patches, (0, 0, 0, pad), value=0)
                where = torch.nn.functional.pad(where, (0, 0, 0, pad), value=-1)
            pixels.append(patches)
            positions.append(where)
            soft.append(rows * cols // pooling_kernel_size**2)
            frames.append(t)
        return BatchFeature(
            {
                "pixel_values_videos": torch.cat(pixels),
                "video_position_ids": torch.cat(positions),
                "num_frames_per_video": frames,
                "num_soft_tokens_per_video": soft,
            },
            tensor_type=return_tensors,
        )


__all__ = [
    "Gemma4FramesVideoProcessor",
    "Qwen3VLFramesVideoProcessor",
    "ResizeCropVideoProcessor",
    "resize_uint8",
]
