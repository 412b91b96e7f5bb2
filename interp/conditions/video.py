"""Video parts of a condition (see :mod:`interp.conditions`): ``no_video``,
``null_video:{black|mean}``, ``swap_video:<id|next>``, ``frames:<k>``, ``shuffle_frames``,
``still:<i>``; and :func:`register_video_condition` for new ones."""

from __future__ import annotations

import numpy as np

from ..errors import VideoError
from ..samples import Sample
from .image import nominal_size, processor_mean
from .registry import (
    ConditionContext,
    media_registrar,
    one_of,
    register_swap,
    seeded_rng,
)

NULL_VIDEO_KINDS = ("black", "mean")
NULL_VIDEO_FRAMES = 4


register_video_condition = media_registrar(
    "video",
    """Register a video part ``name[:arg]``; usable as a decorator of
    ``fn(sample, arg, ctx) -> list of T×H×W×3 uint8 arrays`` (an empty list: no video).""",
)


def _videos(sample: Sample, part: str) -> list[np.ndarray]:
    if not sample.has_video:
        raise VideoError(f"'{part}' needs a video; sample {sample.id!r} has none")
    return sample.load_videos()


@register_video_condition("no_video", keeps=False)
def _no_video(sample: Sample, arg: str | None, ctx: ConditionContext) -> list[np.ndarray]:
    return []


@register_video_condition(
    "null_video",
    check=one_of(NULL_VIDEO_KINDS),
    usage=f"null_video:{{{'|'.join(NULL_VIDEO_KINDS)}}}",
)
def _null_video(sample: Sample, arg: str | None, ctx: ConditionContext) -> list[np.ndarray]:
    w, h = nominal_size(ctx.processor)
    shapes = [v.shape for v in sample.load_videos()] or [(NULL_VIDEO_FRAMES, h, w, 3)]
    video_processor = getattr(ctx.processor, "video_processor", None) or ctx.processor
    color = (0, 0, 0) if arg == "black" else processor_mean(video_processor)
    return [np.broadcast_to(np.array(color, np.uint8), shape).copy() for shape in shapes]


register_swap("video")


def _positive(arg: str | None) -> None:
    if int(str(arg)) < 1:
        raise ValueError("the frame count must be at least 1")


def _index(arg: str | None) -> None:
    if int(str(arg)) < 0:
        raise ValueError("the frame index must be 0 or more")


@register_video_condition("frames", check=_positive, usage="frames:<k>")
def _frames(sample: Sample, arg: str | None, ctx: ConditionContext) -> list[np.ndarray]:
    k = int(str(arg))
    out = []
    for v in _videos(sample, f"frames:{k}"):
        if k > len(v):
            raise VideoError(
                f"'frames:{k}': sample {sample.id!r} has a video of {len(v)} frames; give k <= "
                f"{len(v)}"
            )
        out.append(v[np.round(np.linspace(0, len(v) - 1, k)).astype(int)])
    return out


@register_video_condition("shuffle_frames")
def _shuffle(sample: Sample, arg: str | None, ctx: ConditionContext) -> list[np.ndarray]:
    return [
        v[seeded_rng(ctx, sample, f":shuffle_frames:{k}").permutation(len(v))]
        for k, v in enumerate(_videos(sample, "shuffle_frames"))
    ]


@register_video_condition("still", check=_index, usage="still:<frame index>")
def _still(sample: Sample, arg: str | None, ctx: ConditionContext) -> list[np.ndarray]:
    i = int(str(arg))
    out = []
    for v in _videos(sample, f"still:{i}"):
        if i >= len(v):
            raise VideoError(
                f"'still:{i}': sample {sample.id!r} has a video of {len(v)} frames (0..{len(v) - 1})"
            )
        out.append(np.repeat(v[i : i + 1], len(v), axis=0))
    return out


__all__ = ["NULL_VIDEO_FRAMES", "NULL_VIDEO_KINDS", "register_video_condition"]
