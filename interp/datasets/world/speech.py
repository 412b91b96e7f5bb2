"""Propositional audio of the demo world: spoken statements that name an object kind.

A clip says, in words, which kind is involved ("a banana is involved here"), so hearing it is
understanding a proposition, not perceiving the object (:mod:`~interp.datasets.world.audio` makes the perceptual
sounds). The clips were rendered once by the text-to-speech engine espeak-ng and ship with the
package, so generating the world never needs espeak-ng:

- every kind of :data:`~interp.datasets.render.SHAPE_KINDS` × every phrasing of
  :data:`SPEECH_PHRASINGS` × every ``(voice, words per minute)`` of :data:`SPEECH_VOICES`;
- ``espeak-ng -v VOICE -s SPEED -w OUT.wav TEXT`` (espeak-ng 1.51, Debian bookworm's package),
  resampled from espeak-ng's 22,050 Hz to 16 kHz (``scipy.signal.resample_poly``), leading and
  trailing silence trimmed (samples below 1 % of the peak), peak-normalised to 0.9 and stored as
  16 kHz mono FLAC under ``speech_clips/`` with 8-bit samples (``soundfile``, subtype ``PCM_S8``:
  its quantisation noise, about 48 dB below the peak, lies under the background noise every draw
  adds, and it keeps the 120 clips near 1.2 MB instead of 3.5 MB);
- ``speech_clips/manifest.json`` lists every clip: file, kind, phrasing index, text, voice,
  speed, duration and the SHA-256 of the file.

Re-render with ``python -m interp.datasets.world.speech_render`` (:mod:`~interp.datasets.world.speech_render`; needs
``espeak-ng`` on the PATH, e.g. ``apt-get install espeak-ng``); the world's samples then change
only if the new files differ. :func:`speech_clip` picks a clip by kind, phrasing and voice and adds background
noise and a loudness drawn from the generator.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import numpy as np
import soundfile

from ...media import Audio
from ..render import SHAPE_KINDS
from .audio import SAMPLE_RATE, add_background

CLIP_DIR = Path(__file__).with_name("speech_clips")
MANIFEST = CLIP_DIR / "manifest.json"

SPEECH_PHRASINGS: tuple[str, ...] = (
    "a {kind} is involved here",
    "there is a {kind} here",
    "the object is a {kind}",
)
"""The spoken statements; ``{kind}`` is the object kind."""
SPEECH_VOICES: tuple[tuple[str, int], ...] = (
    ("en-us", 150),
    ("en-gb", 175),
    ("en-us+f3", 165),
    ("en-gb-scotland+m3", 140),
)
"""``(espeak-ng voice, speed in words per minute)`` of the rendered clips."""


@functools.lru_cache(maxsize=1)
def speech_manifest() -> tuple[dict[str, Any], ...]:
    """The shipped clips' manifest entries (file, kind, phrasing, text, voice, speed, seconds,
    sha256), read once.

    Raises:
        FileNotFoundError: the manifest is missing (re-render, see the module docstring).
    """
    if not MANIFEST.is_file():
        raise FileNotFoundError(
            f"the speech clips' manifest {MANIFEST} is missing; reinstall the package or render "
            "them with `python -m interp.datasets.world.speech --render` (needs espeak-ng)"
        )
    return tuple(json.loads(MANIFEST.read_text())["clips"])


@functools.lru_cache(maxsize=256)
def _read_clip(file: str) -> np.ndarray:
    data, rate = soundfile.read(str(CLIP_DIR / file), dtype="float32", always_2d=False)
    if rate != SAMPLE_RATE:
        raise ValueError(f"speech clip {file} is at {rate} Hz, expected {SAMPLE_RATE}")
    data.setflags(write=False)
    return data


def _entry(kind: str, phrasing: int, voice: int) -> dict[str, Any]:
    if not 0 <= voice < len(SPEECH_VOICES) or not 0 <= phrasing < len(SPEECH_PHRASINGS):
        raise ValueError(
            f"no speech clip for phrasing {phrasing}, voice {voice}: phrasing indexes "
            f"SPEECH_PHRASINGS (0-{len(SPEECH_PHRASINGS) - 1}), voice SPEECH_VOICES "
            f"(0-{len(SPEECH_VOICES) - 1})"
        )
    voice_name, speed = SPEECH_VOICES[voice]
    for e in speech_manifest():
        if (e["kind"], e["phrasing"], e["voice"], e["speed"]) == (
            kind,
            phrasing,
            voice_name,
            speed,
        ):
            return e
    raise ValueError(
        f"no speech clip for kind {kind!r}, phrasing {phrasing}, voice {voice_name!r} at "
        f"{speed} wpm in {MANIFEST}; known kinds: {', '.join(SHAPE_KINDS)}"
    )


def speech_clip(
    kind: str,
    rng: np.random.Generator,
    phrasing: int | None = None,
    voice: int | None = None,
) -> tuple[Audio, dict[str, Any]]:
    """A spoken statement naming ``kind``, with a loudness and background noise drawn from
    ``rng``; returns the audio and its manifest entry (text, voice, speed ...).

    ``phrasing`` indexes :data:`SPEECH_PHRASINGS` and ``voice`` :data:`SPEECH_VOICES`; each is
    drawn from ``rng`` when ``None``.

    Raises:
        ValueError: no shipped clip for that kind, phrasing and voice.
    """
    if phrasing is None:
        phrasing = int(rng.integers(len(SPEECH_PHRASINGS)))
    if voice is None:
        voice = int(rng.integers(len(SPEECH_VOICES)))
    entry = _entry(kind, phrasing, voice)
    waveform = add_background(rng, _read_clip(entry["file"]))
    return Audio(waveform, SAMPLE_RATE), entry
