"""Applying a condition: each sample as the model will see it (:func:`prepare`), which modalities
its input carries (:func:`carries`, without loading media), and which other samples' content it
uses (:func:`condition_sources`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from PIL import Image

from ..media import AUDIO_SLOT, VIDEO_SLOT, Audio, fit_audio
from ..samples import IMAGE_SLOT, Sample
from .condition import Condition
from .registry import (
    IMAGE_CONDITIONS,
    QUESTION_CONDITIONS,
    ConditionContext,
    PixelFn,
    media_registry,
)

# -- resolving a condition -----------------------------------------------------------------------

if TYPE_CHECKING:
    from torch import Tensor


@dataclass
class Prepared:
    """One sample under a condition: the sample the model sees (question and images as PIL
    images), for pixel-stage conditions the per-image pixel transform, and the audio (resampled
    to the processor's rate) and videos (``T×H×W×3`` uint8) it carries."""

    sample: Sample
    images: list[Image.Image]
    pixels: Callable[[Tensor, int], Tensor] | None = None
    audios: list[Audio] = field(default_factory=list)
    videos: list[np.ndarray] = field(default_factory=list)

    @property
    def has_image(self) -> bool:
        return bool(self.images)


def prepare(
    samples: Sequence[Sample],
    condition: Condition | str,
    processor: Any,
    *,
    all_samples: Sequence[Sample] | None = None,
) -> list[Prepared]:
    """Each sample as the model will see it under ``condition``.

    ``all_samples`` is the full list the samples belong to; ``swap:next`` and ``swap:<id>`` look
    images up in it (defaults to ``samples``).

    Raises:
        ImageError / MissingImageError: a needed image is missing or unreadable.
        ConditionError: ``swap:<id>`` names no sample.
    """
    cond = Condition.parse(condition)
    ctx = ConditionContext(processor, list(all_samples) if all_samples is not None else samples)
    spec = IMAGE_CONDITIONS[cond.image.name]
    qspec = QUESTION_CONDITIONS[cond.question.name] if cond.question is not None else None
    out: list[Prepared] = []
    for s in samples:
        if spec.rewrite is not None:
            s = spec.rewrite(s, cond.image.arg)
        images = spec.images(s, cond.image.arg, ctx) or []
        question = s.question
        if spec.question is not None:
            question = spec.question(question, cond.image.arg, s)
        if qspec is not None:
            question = qspec.question(question, cond.question.arg, s)  # type: ignore[union-attr]
        if IMAGE_SLOT in question and question.count(IMAGE_SLOT) != len(images):
            # the images were removed or replaced by a different number: they go first
            question = " ".join(p.strip() for p in question.split(IMAGE_SLOT) if p.strip())
        audios, videos = _media_inputs(s, cond, ctx)
        for slot, items in ((AUDIO_SLOT, audios), (VIDEO_SLOT, videos)):
            if slot in question and question.count(slot) != len(items):
                question = " ".join(p.strip() for p in question.split(slot) if p.strip())
        seen = replace(
            s,
            question=question,
            image=list(images) or None,
            audio=list(audios) or None,
            video=list(videos) or None,
        )
        pixels = None
        if spec.pixels is not None and images:
            pixels = _bind_pixels(spec.pixels, s, cond.image.arg)
        out.append(Prepared(seen, list(images), pixels, audios, videos))
    return out


def _media_inputs(
    sample: Sample, cond: Condition, ctx: ConditionContext
) -> tuple[list[Audio], list[np.ndarray]]:
    """The audio (at the processor's rate) and videos of ``sample`` under ``cond``."""
    if cond.audio is None:  # read lazily: fit_audio reads a file only up to the window
        audios = sample.audios
    else:
        audios = media_registry("audio")[cond.audio.name].apply(sample, cond.audio.arg, ctx)
    return fit_audio(audios, ctx.processor, sample.id), _videos(sample, cond, ctx)


def _videos(sample: Sample, cond: Condition, ctx: ConditionContext) -> list[np.ndarray]:
    """The videos of ``sample`` under ``cond``'s video part."""
    if cond.video is None:
        return sample.load_videos()
    return list(media_registry("video")[cond.video.name].apply(sample, cond.video.arg, ctx))


def carries(sample: Sample, condition: Condition | str, kind: str) -> bool:
    """Whether ``sample``'s input under ``condition`` carries ``kind`` (``"image"``, ``"audio"``
    or ``"video"``), without loading any media: the condition keeps that modality and the sample
    (after the image part's ``rewrite``, which may remove one input) has some."""
    cond = Condition.parse(condition)
    spec = IMAGE_CONDITIONS[cond.image.name]
    if spec.rewrite is not None:
        sample = spec.rewrite(sample, cond.image.arg)
    uses = {"image": cond.uses_image, "audio": cond.uses_audio, "video": cond.uses_video}[kind]
    has = {"image": sample.has_image, "audio": sample.has_audio, "video": sample.has_video}[kind]
    return uses and has


def video_frames(
    sample: Sample,
    condition: Condition | str,
    processor: Any,
    *,
    all_samples: Sequence[Sample] | None = None,
) -> tuple[int, ...]:
    """The frame counts of the videos ``sample``'s input carries under ``condition`` (empty when
    it carries none); loads the sample's videos (not its images or audio) to apply the
    condition's video part."""
    cond = Condition.parse(condition)
    if not carries(sample, cond, "video"):
        return ()
    rewrite = IMAGE_CONDITIONS[cond.image.name].rewrite
    seen = rewrite(sample, cond.image.arg) if rewrite is not None else sample
    ctx = ConditionContext(processor, list(all_samples) if all_samples is not None else [sample])
    return tuple(len(v) for v in _videos(seen, cond, ctx))


def _bind_pixels(fn: PixelFn, sample: Sample, arg: str | None) -> Callable[[Tensor, int], Tensor]:
    return lambda values, index: fn(values, sample, arg, index)


def condition_sources(
    sample: Sample, condition: Condition | str, pool: Sequence[Sample], processor: Any = None
) -> list[Sample]:
    """Samples other than ``sample`` whose content the input under ``condition`` uses."""
    cond = Condition.parse(condition)
    ctx = ConditionContext(processor, pool)
    out: list[Sample] = []
    spec = IMAGE_CONDITIONS[cond.image.name]
    if spec.sources is not None:
        out += spec.sources(sample, cond.image.arg, ctx)
    for kind, part in (("audio", cond.audio), ("video", cond.video)):
        media = media_registry(kind)[part.name] if part is not None else None
        if media is not None and media.sources is not None and part is not None:
            out += media.sources(sample, part.arg, ctx)
    return out


def condition_inputs(
    samples: Sequence[Sample],
    condition: Condition | str,
    processor: Any,
    *,
    all_samples: Sequence[Sample] | None = None,
) -> list[tuple[str, Image.Image | None]]:
    """(question, first image or None) per sample under ``condition`` — a compact view of
    :func:`prepare` for single-image samples."""
    return [
        (p.sample.question, p.images[0] if p.images else None)
        for p in prepare(samples, condition, processor, all_samples=all_samples)
    ]


__all__ = [
    "Prepared",
    "carries",
    "condition_inputs",
    "condition_sources",
    "prepare",
    "video_frames",
]
