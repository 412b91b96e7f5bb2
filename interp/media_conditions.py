"""Audio and video parts of a condition (see :mod:`interp.conditions`).

A condition holds at most one audio part and one video part besides its image and question parts,
all joined by ``+``: ``"blind+no_audio+no_question"`` is P0 of the temporal-causal-drives paper on
an omni input. Without an audio (video) part the sample's own audio (video) is used.

==========================  ====================================================================
audio part                  input
==========================  ====================================================================
``no_audio``                every audio item removed from the prompt (no audio tokens at all)
``null_audio:silence``      zeros of each audio's length and rate in its place
``null_audio:noise``        white Gaussian noise (std 0.1), seeded by the sample id
``null_audio:mean``         a constant at each waveform's mean (its DC part: no temporal content)
``swap_audio:next``         the audio of the next sample with audio (cyclic)
``swap_audio:<id>``         the audio of the sample with that id
``distort_audio:<snr_db>``  the real audio plus white Gaussian noise at that signal-to-noise ratio
                            (dB, over the whole waveform), seeded by the sample id
==========================  ====================================================================

==========================  ====================================================================
video part                  input
==========================  ====================================================================
``no_video``                every video item removed from the prompt
``null_video:black``        black frames of each video's shape
``null_video:mean``         frames of the processor's normalisation mean (0 after normalising)
``swap_video:next|<id>``    another sample's video
``frames:<k>``              k frames sampled uniformly (``linspace(0, T-1, k)`` rounded)
``shuffle_frames``          the frames in a random order, seeded by the sample id
``still:<i>``               frame ``i`` repeated T times (the video without motion)
==========================  ====================================================================

One rule for every modality, as ``null`` for images: a ``null`` part replaces each of the sample's
inputs of that kind by its null form, and gives a row without any one null input — one second at
the processor's rate under ``null_audio``, 4 frames of the processor's nominal size under
``null_video`` (``null`` gives an image of the nominal size). The null input is the ``V = ∅`` of
the drives paper: the input is present and carries nothing. Use ``no_audio`` / ``no_video`` for a
prompt without the input at all. Every waveform is
resampled to the processor's audio rate afterwards (:mod:`interp.media`). New parts are registered
with :func:`register_audio_condition` / :func:`register_video_condition`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .conditions import (
    AUDIO_CONDITIONS,
    VIDEO_CONDITIONS,
    ConditionContext,
    _arg_check,
    _check_free,
    _no_check,
    _processor_mean,
    _Registered,
    nominal_size,
)
from .errors import AudioError, ConditionError, VideoError
from .media import Audio, audio_rate
from .samples import Sample

MediaKind = Literal["audio", "video"]
NULL_AUDIO_KINDS = ("silence", "noise", "mean")
NULL_VIDEO_KINDS = ("black", "mean")
NOISE_STD = 0.1
NULL_VIDEO_FRAMES = 4

# apply(sample, arg, ctx) -> the audio inputs (Audio) or videos (T×H×W×3 uint8) the input carries
MediaFn = Callable[[Sample, "str | None", ConditionContext], list[Any]]
SourcesFn = Callable[[Sample, "str | None", ConditionContext], "list[Sample]"]


@dataclass(frozen=True)
class MediaCondition(_Registered):
    """A registered audio or video part: what replaces the sample's audio (videos)."""

    name: str
    kind: MediaKind
    apply: MediaFn
    check: Callable[[str | None], Any] = _no_check
    usage: str = ""
    keeps: bool = True
    sources: SourcesFn | None = None


def _register(
    kind: MediaKind,
    name: str,
    fn: MediaFn | None,
    check: Callable[[str | None], Any] | None,
    usage: str | None,
    keeps: bool,
    sources: SourcesFn | None,
    overwrite: bool,
) -> Any:
    registry = AUDIO_CONDITIONS if kind == "audio" else VIDEO_CONDITIONS

    def register(f: MediaFn) -> MediaFn:
        _check_free(name, overwrite)
        registry[name] = MediaCondition(
            name=name,
            kind=kind,
            apply=f,
            check=_arg_check(check),
            usage=usage or (name if check is None else f"{name}:<arg>"),
            keeps=keeps,
            sources=sources,
        )
        return f

    return register(fn) if fn is not None else register


def register_audio_condition(
    name: str,
    fn: MediaFn | None = None,
    *,
    check: Callable[[str | None], Any] | None = None,
    usage: str | None = None,
    keeps: bool = True,
    sources: SourcesFn | None = None,
    overwrite: bool = False,
) -> Any:
    """Register an audio part ``name[:arg]``; usable as a decorator of
    ``fn(sample, arg, ctx) -> list of Audio`` (an empty list: no audio). ``keeps=False`` marks a
    part whose inputs carry no audio (batches then need not group rows by audio)."""
    return _register("audio", name, fn, check, usage, keeps, sources, overwrite)


def register_video_condition(
    name: str,
    fn: MediaFn | None = None,
    *,
    check: Callable[[str | None], Any] | None = None,
    usage: str | None = None,
    keeps: bool = True,
    sources: SourcesFn | None = None,
    overwrite: bool = False,
) -> Any:
    """Register a video part ``name[:arg]``; usable as a decorator of
    ``fn(sample, arg, ctx) -> list of T×H×W×3 uint8 arrays`` (an empty list: no video)."""
    return _register("video", name, fn, check, usage, keeps, sources, overwrite)


def _one_of(kinds: Sequence[str]) -> Callable[[str | None], None]:
    def check(arg: str | None) -> None:
        if arg not in kinds:
            raise ValueError(f"unknown kind {arg!r}; use one of {', '.join(kinds)}")

    return check


def _rng(ctx: ConditionContext, sample: Sample, salt: str) -> np.random.Generator:
    return np.random.default_rng(ctx.seed(sample, salt))


def _swap(kind: MediaKind) -> SourcesFn:
    def source(sample: Sample, arg: str | None, ctx: ConditionContext) -> list[Sample]:
        error = AudioError if kind == "audio" else VideoError
        has = (lambda p: p.has_audio) if kind == "audio" else (lambda p: p.has_video)
        pool = list(ctx.pool)
        if arg == "next":
            carriers = [p for p in pool if has(p)]
            if len(carriers) < 2:
                raise error(f"'swap_{kind}:next' needs at least two samples with {kind}")
            index = next((i for i, p in enumerate(carriers) if p.id == sample.id), -1)
            return [carriers[(index + 1) % len(carriers)]]
        for p in pool:
            if str(p.id) == arg:
                if not has(p):
                    raise error(f"'swap_{kind}:{arg}': sample {arg!r} has no {kind}")
                return [p]
        raise ConditionError(f"'swap_{kind}:{arg}': no sample with id {arg!r} among the samples")

    return source


# -- audio parts ---------------------------------------------------------------------------------


@register_audio_condition("no_audio", keeps=False)
def _no_audio(sample: Sample, arg: str | None, ctx: ConditionContext) -> list[Audio]:
    return []


@register_audio_condition(
    "null_audio",
    check=_one_of(NULL_AUDIO_KINDS),
    usage=f"null_audio:{{{'|'.join(NULL_AUDIO_KINDS)}}}",
)
def _null_audio(sample: Sample, arg: str | None, ctx: ConditionContext) -> list[Audio]:
    rate = audio_rate(ctx.processor) or 16000
    audios = sample.load_audios() or [Audio(np.zeros(rate, np.float32), rate)]
    out = []
    for k, a in enumerate(audios):
        if arg == "silence":
            wave = np.zeros_like(a.waveform)
        elif arg == "mean":
            wave = np.full_like(a.waveform, a.waveform.mean())
        else:
            wave = _rng(ctx, sample, f":null_audio:{k}").normal(0.0, NOISE_STD, a.waveform.shape)
        out.append(Audio(wave.astype(np.float32), a.sampling_rate))
    return out


register_audio_condition(
    "swap_audio",
    lambda sample, arg, ctx: _swap("audio")(sample, arg, ctx)[0].load_audios(),
    check=str,
    usage="swap_audio:<sample id|next>",
    sources=_swap("audio"),
)


@register_audio_condition("distort_audio", check=float, usage="distort_audio:<snr_db>")
def _distort_audio(sample: Sample, arg: str | None, ctx: ConditionContext) -> list[Audio]:
    if not sample.has_audio:
        raise AudioError(f"'distort_audio:{arg}' needs audio; sample {sample.id!r} has none")
    snr_db = float(str(arg))
    out = []
    for k, a in enumerate(sample.load_audios()):
        power = float(np.mean(a.waveform.astype(np.float64) ** 2))
        std = np.sqrt(power / 10.0 ** (snr_db / 10.0))
        noise = _rng(ctx, sample, f":distort_audio:{k}").normal(0.0, std, a.waveform.shape)
        out.append(Audio((a.waveform + noise).astype(np.float32), a.sampling_rate))
    return out


# -- video parts ---------------------------------------------------------------------------------


def _videos(sample: Sample, part: str) -> list[np.ndarray]:
    if not sample.has_video:
        raise VideoError(f"'{part}' needs a video; sample {sample.id!r} has none")
    return sample.load_videos()


@register_video_condition("no_video", keeps=False)
def _no_video(sample: Sample, arg: str | None, ctx: ConditionContext) -> list[np.ndarray]:
    return []


@register_video_condition(
    "null_video",
    check=_one_of(NULL_VIDEO_KINDS),
    usage=f"null_video:{{{'|'.join(NULL_VIDEO_KINDS)}}}",
)
def _null_video(sample: Sample, arg: str | None, ctx: ConditionContext) -> list[np.ndarray]:
    w, h = nominal_size(ctx.processor)
    shapes = [v.shape for v in sample.load_videos()] or [(NULL_VIDEO_FRAMES, h, w, 3)]
    video_processor = getattr(ctx.processor, "video_processor", None) or ctx.processor
    color = (0, 0, 0) if arg == "black" else _processor_mean(video_processor)
    return [np.broadcast_to(np.array(color, np.uint8), shape).copy() for shape in shapes]


register_video_condition(
    "swap_video",
    lambda sample, arg, ctx: _swap("video")(sample, arg, ctx)[0].load_videos(),
    check=str,
    usage="swap_video:<sample id|next>",
    sources=_swap("video"),
)


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
        v[_rng(ctx, sample, f":shuffle_frames:{k}").permutation(len(v))]
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


__all__ = [
    "AUDIO_CONDITIONS",
    "NULL_AUDIO_KINDS",
    "NULL_VIDEO_KINDS",
    "VIDEO_CONDITIONS",
    "MediaCondition",
    "register_audio_condition",
    "register_video_condition",
]
