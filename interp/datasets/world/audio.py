"""Perceptual audio of the demo world: one synthetic sound per object kind.

Hearing "a banana" here is perception, not words: each kind has its own spectral and temporal
signature (:data:`SOUND_SIGNATURES`), and every draw varies the pitch, the duration, the loudness
and a background noise, so a small audio encoder has to learn the signature rather than one
waveform. All sounds are 16 kHz mono float32, drawn only from the ``numpy.random.Generator``
passed in (a seeded generator gives identical samples).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...media import Audio
from ..render import SHAPE_KINDS

SAMPLE_RATE = 16_000
DURATION_RANGE: tuple[float, float] = (0.6, 1.2)
"""Duration in seconds of a perceptual sound, drawn uniformly."""
PEAK_RANGE: tuple[float, float] = (0.2, 0.9)
"""Peak amplitude of the sound before the background noise is added, drawn uniformly."""
SNR_DB_RANGE: tuple[float, float] = (8.0, 30.0)
"""Signal-to-noise ratio (dB, signal RMS over noise RMS) of the white background noise."""

SOUND_SIGNATURES: dict[str, str] = {
    "circle": "a steady pure tone, 300-600 Hz",
    "square": "a buzz: odd harmonics of a 120-260 Hz fundamental",
    "triangle": "pings: short decaying 1.5-2.5 kHz tones repeated 4-8 times a second",
    "diamond": "a rising chirp, from 300-500 Hz up to 1.6-2.4 kHz",
    "cross": "a falling chirp, from 1.6-2.4 kHz down to 300-500 Hz",
    "banana": "a warble: a 500-900 Hz tone amplitude-modulated at 10-18 Hz",
    "leaf": "a rustle: noise band-passed to 3-6 kHz",
    "carrot": "crunches: bursts of 200-900 Hz noise, 3-6 a second",
    "heart": "a heartbeat: pairs of low 60-110 Hz thumps, 1.5-2.5 pairs a second",
    "drop": "drips: short upward 'bloop' sweeps from 600-900 Hz, 2-4 a second",
}
"""What each kind sounds like (every draw varies the numbers within these ranges)."""


def _envelope(n: int, rate: int, attack: float = 0.01) -> np.ndarray:
    """A fade in and out of ``attack`` seconds, so no sound starts or ends with a click."""
    k = max(1, min(n // 2, int(attack * rate)))
    env = np.ones(n)
    ramp = np.linspace(0.0, 1.0, k)
    env[:k] = ramp
    env[n - k :] = ramp[::-1]
    return env


def _bursts(
    rng: np.random.Generator,
    t: np.ndarray,
    per_second: float,
    make: Callable[[np.ndarray], np.ndarray],
) -> np.ndarray:
    """Add ``make(local_time)`` at onsets ``per_second`` apart (with a small random jitter)."""
    out = np.zeros_like(t)
    period = 1.0 / per_second
    onset = float(rng.uniform(0.0, 0.3 * period))
    while onset < t[-1]:
        local = t - onset
        on = local >= 0
        out[on] += make(local[on])
        onset += period * float(rng.uniform(0.9, 1.1))
    return out


def _band_noise(rng: np.random.Generator, n: int, lo: float, hi: float, rate: int) -> np.ndarray:
    """White noise restricted to ``[lo, hi]`` Hz (by zeroing the other FFT bins)."""
    spec = np.fft.rfft(rng.standard_normal(n))
    freqs = np.fft.rfftfreq(n, 1.0 / rate)
    spec[(freqs < lo) | (freqs > hi)] = 0.0
    return np.fft.irfft(spec, n)


def _signal(kind: str, rng: np.random.Generator, t: np.ndarray, rate: int) -> np.ndarray:
    """The clean sound of ``kind`` on the time axis ``t`` (seconds), unnormalised."""
    two_pi = 2.0 * np.pi
    dur = float(t[-1])
    if kind == "circle":
        return np.sin(two_pi * rng.uniform(300, 600) * t + rng.uniform(0, two_pi))
    if kind == "square":
        f0 = rng.uniform(120, 260)
        return sum(np.sin(two_pi * h * f0 * t) / h for h in (1, 3, 5, 7, 9, 11))
    if kind == "triangle":
        f = rng.uniform(1500, 2500)
        decay = rng.uniform(25, 40)
        return _bursts(
            rng, t, rng.uniform(4, 8), lambda u: np.sin(two_pi * f * u) * np.exp(-decay * u)
        )
    if kind in ("diamond", "cross"):
        lo, hi = rng.uniform(300, 500), rng.uniform(1600, 2400)
        f_start, f_end = (lo, hi) if kind == "diamond" else (hi, lo)
        freq = f_start + (f_end - f_start) * t / dur
        return np.sin(two_pi * np.cumsum(freq) / rate)
    if kind == "banana":
        am = 0.5 * (1.0 + np.sin(two_pi * rng.uniform(10, 18) * t))
        return am * np.sin(two_pi * rng.uniform(500, 900) * t)
    if kind == "leaf":
        return _band_noise(rng, len(t), rng.uniform(3000, 3500), rng.uniform(5500, 6000), rate)
    if kind == "carrot":
        noise = _band_noise(rng, len(t), 200.0, rng.uniform(700, 900), rate)
        length = rng.uniform(0.04, 0.08)
        gate = _bursts(rng, t, rng.uniform(3, 6), lambda u: (u < length) * np.exp(-20 * u))
        return noise * gate
    if kind == "heart":
        f = rng.uniform(60, 110)
        gap = rng.uniform(0.15, 0.22)

        def beat(u: np.ndarray) -> np.ndarray:
            thump = np.sin(two_pi * f * u) * np.exp(-30 * u)
            second = np.where(u >= gap, np.sin(two_pi * f * (u - gap)) * np.exp(-30 * (u - gap)), 0)
            return thump + 0.8 * second

        return _bursts(rng, t, rng.uniform(1.5, 2.5), beat)
    if kind == "drop":
        f0 = rng.uniform(600, 900)
        sweep = rng.uniform(8, 14)  # frequency doubles in about 1/sweep s

        def bloop(u: np.ndarray) -> np.ndarray:
            phase = two_pi * f0 * (np.exp(sweep * u * np.log(2)) - 1) / (sweep * np.log(2))
            return np.sin(phase) * np.exp(-18 * u)

        return _bursts(rng, t, rng.uniform(2, 4), bloop)
    raise ValueError(f"no sound for object kind {kind!r}; known kinds: {', '.join(SHAPE_KINDS)}")


def add_background(
    rng: np.random.Generator,
    waveform: np.ndarray,
    snr_db: float | None = None,
    peak: float | None = None,
) -> np.ndarray:
    """Scale ``waveform`` to a peak amplitude (default: drawn from :data:`PEAK_RANGE`) and add white
    noise at ``snr_db`` (default: drawn from :data:`SNR_DB_RANGE`); clipped to [-1, 1], float32."""
    x = np.asarray(waveform, dtype=np.float64)
    peak = float(rng.uniform(*PEAK_RANGE)) if peak is None else peak
    snr_db = float(rng.uniform(*SNR_DB_RANGE)) if snr_db is None else snr_db
    x = x * (peak / max(float(np.max(np.abs(x))), 1e-9))
    rms = float(np.sqrt(np.mean(x**2)))
    noise = rng.standard_normal(len(x)) * rms / (10.0 ** (snr_db / 20.0))
    return np.clip(x + noise, -1.0, 1.0).astype(np.float32)


def object_sound(kind: str, rng: np.random.Generator, duration: float | None = None) -> Audio:
    """The perceptual sound of ``kind`` (:data:`SOUND_SIGNATURES`): 16 kHz mono float32, with the
    duration (default: drawn from :data:`DURATION_RANGE`), pitch, loudness and background noise
    drawn from ``rng``.

    Raises:
        ValueError: an unknown kind, or a duration that is not positive.
    """
    if kind not in SOUND_SIGNATURES:
        raise ValueError(
            f"no sound for object kind {kind!r}; known kinds: {', '.join(SHAPE_KINDS)}"
        )
    duration = float(rng.uniform(*DURATION_RANGE)) if duration is None else float(duration)
    if duration <= 0:
        raise ValueError(f"duration must be positive (seconds), got {duration}")
    n = int(round(duration * SAMPLE_RATE))
    t = np.arange(n) / SAMPLE_RATE
    clean = _signal(kind, rng, t, SAMPLE_RATE) * _envelope(n, SAMPLE_RATE)
    return Audio(add_background(rng, clean), SAMPLE_RATE)


__all__ = [
    "DURATION_RANGE",
    "PEAK_RANGE",
    "SAMPLE_RATE",
    "SNR_DB_RANGE",
    "SOUND_SIGNATURES",
    "add_background",
    "object_sound",
]
