"""Pieces shared by the tiny omni-modal and video builders: a chat template that renders image,
audio and video items, the tiny Whisper feature extractor, and video processors that are real
where torchvision imports.

Every video processor in transformers needs torchvision; where it is absent (this project's CPU
install) the builders put :class:`~interp.demo.omni.processors.NoVideoProcessor` in its place,
so the processor handles text, images and audio and refuses videos.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from transformers import ProcessorMixin, WhisperFeatureExtractor

from ...demo.omni.processors import omni_chat_template
from .common import NoVideoProcessor, processor_without_video

P = TypeVar("P", bound=ProcessorMixin)

# 16 kHz, 10 ms hop (Whisper's), 32 mel bins and at most 2 s of audio (200 mel frames) per clip.
SAMPLING_RATE = 16000
MEL_BINS = 32
AUDIO_SECONDS = 2


def whisper_features(**overrides: Any) -> WhisperFeatureExtractor:
    """Whisper's log-mel front end at 16 kHz with :data:`MEL_BINS` bins, clips padded (or cut) to
    :data:`AUDIO_SECONDS`; ``overrides`` replace any setting."""
    kwargs: dict[str, Any] = {
        "feature_size": MEL_BINS,
        "sampling_rate": SAMPLING_RATE,
        "hop_length": 160,
        "n_fft": 400,
        "chunk_length": AUDIO_SECONDS,
        "return_attention_mask": True,
        **overrides,
    }
    return WhisperFeatureExtractor(**kwargs)


def video_processor(factory: Callable[[], Any]) -> Any:
    """``factory()`` (a real video processor) where torchvision imports, else a
    :class:`NoVideoProcessor` stand-in."""
    try:
        return factory()
    except (ImportError, RuntimeError, AttributeError):
        return NoVideoProcessor()


def omni_processor(cls: type[P], video: Callable[[], Any], **kwargs: Any) -> P:
    """The processor class ``cls`` (exactly that class) around ``kwargs``' sub-processors and the
    video processor ``video()`` builds, or a :class:`NoVideoProcessor` where torchvision is absent."""
    vp = video_processor(video)
    if isinstance(vp, NoVideoProcessor):
        return processor_without_video(cls, stand_in=True, **kwargs)
    return cls(video_processor=vp, **kwargs)


def has_video_processor(processor: Any) -> bool:
    """Whether ``processor`` carries a real video processor (torchvision imported)."""
    vp = getattr(processor, "video_processor", None)
    return vp is not None and not isinstance(vp, NoVideoProcessor)


__all__ = [
    "AUDIO_SECONDS",
    "MEL_BINS",
    "SAMPLING_RATE",
    "has_video_processor",
    "omni_chat_template",
    "omni_processor",
    "video_processor",
    "whisper_features",
]
