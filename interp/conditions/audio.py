"""Audio parts of a condition (see :mod:`interp.conditions`): ``no_audio``,
``null_audio:{silence|noise|mean}``, ``swap_audio:<id|next>``, ``distort_audio:<snr_db>``; and
:func:`register_audio_condition` for new ones. Every waveform is resampled to the processor's
audio rate afterwards (:func:`interp.conditions.apply.prepare`)."""

from __future__ import annotations

import numpy as np

from ..errors import AudioError
from ..media import Audio, audio_rate
from ..samples import Sample
from .registry import (
    ConditionContext,
    media_registrar,
    one_of,
    register_swap,
    seeded_rng,
)

NULL_AUDIO_KINDS = ("silence", "noise", "mean")
NOISE_STD = 0.1


register_audio_condition = media_registrar(
    "audio",
    """Register an audio part ``name[:arg]``; usable as a decorator of
    ``fn(sample, arg, ctx) -> list of Audio`` (an empty list: no audio). ``keeps=False`` marks a
    part whose inputs carry no audio (batches then need not group rows by audio).""",
)


# -- audio parts ---------------------------------------------------------------------------------


@register_audio_condition("no_audio", keeps=False)
def _no_audio(sample: Sample, arg: str | None, ctx: ConditionContext) -> list[Audio]:
    return []


@register_audio_condition(
    "null_audio",
    check=one_of(NULL_AUDIO_KINDS),
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
            wave = seeded_rng(ctx, sample, f":null_audio:{k}").normal(
                0.0, NOISE_STD, a.waveform.shape
            )
        out.append(Audio(wave.astype(np.float32), a.sampling_rate))
    return out


register_swap("audio")


@register_audio_condition("distort_audio", check=float, usage="distort_audio:<snr_db>")
def _distort_audio(sample: Sample, arg: str | None, ctx: ConditionContext) -> list[Audio]:
    if not sample.has_audio:
        raise AudioError(f"'distort_audio:{arg}' needs audio; sample {sample.id!r} has none")
    snr_db = float(str(arg))
    out = []
    for k, a in enumerate(sample.load_audios()):
        power = float(np.mean(a.waveform.astype(np.float64) ** 2))
        std = np.sqrt(power / 10.0 ** (snr_db / 10.0))
        noise = seeded_rng(ctx, sample, f":distort_audio:{k}").normal(0.0, std, a.waveform.shape)
        out.append(Audio((a.waveform + noise).astype(np.float32), a.sampling_rate))
    return out


__all__ = ["NOISE_STD", "NULL_AUDIO_KINDS", "register_audio_condition"]
