"""Audio and video cells of a table (see :mod:`interp.datasets.tabular`), as :class:`~interp.Sample`
inputs.

**Audio cells** hold a WAV/FLAC file path (relative to the data's folder, or absolute), a
``{"array": ..., "sampling_rate": ...}`` dict (the Hugging Face ``datasets`` Audio feature,
decoded), a ``{"bytes": ..., "path": ...}`` struct (that feature as stored in arrow and parquet;
the bytes are decoded with ``soundfile``), or a list of these (several audio inputs).

**Video cells** hold a video file path, a ``.npy`` file of ``T×H×W×3`` uint8 frames, a
``T×H×W×3`` array or nested list of integers 0..255, or a list of frame image paths (one video).
Files are resolved here; videos are decoded when the sample is encoded.
"""

from __future__ import annotations

import io
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import AudioError, MissingAudioError, MissingVideoError, VideoError
from ..media import AUDIO_SUFFIXES, Audio


def _find(value: str, bases: Sequence[Path]) -> Path | None:
    """The file ``value`` names: absolute, or relative to one of ``bases``."""
    try:
        path = Path(os.path.expanduser(value))
        candidates = [path] if path.is_absolute() else [b / path for b in bases]
        return next((c for c in candidates if c.is_file()), None)
    except (OSError, RuntimeError):
        return None


def _looked(bases: Sequence[Path]) -> str:
    return ", ".join(str(b) for b in bases)


def _decode_audio_bytes(raw: bytes, where: str) -> Audio:
    import soundfile

    try:
        waveform, rate = soundfile.read(io.BytesIO(raw), dtype="float32", always_2d=False)
    except (RuntimeError, ValueError, TypeError) as err:  # soundfile's LibsndfileError is one
        raise AudioError(
            f"{where}: the audio cell's bytes do not decode as audio ({err})"
        ) from None
    return Audio(waveform, int(rate))


def _audio_file(text: str, bases: Sequence[Path], where: str) -> Path:
    if Path(text).suffix.lower() not in AUDIO_SUFFIXES:
        raise AudioError(
            f"{where}: the audio cell {text[:80]!r} is not a WAV or FLAC file "
            f"({', '.join(AUDIO_SUFFIXES)}); convert it, or store {{array, sampling_rate}} dicts"
        )
    found = _find(text, bases)
    if found is None:
        raise MissingAudioError(
            f"{where}: the audio file {text[:80]!r} is not there (looked in {_looked(bases)})"
        )
    return found


def audio_cell(value: Any, bases: Sequence[Path], where: str) -> Any:
    """An :class:`~interp.media.Audio`, a file path or a list of them from one audio cell (None: no
    audio).

    Raises:
        AudioError: a cell of another kind, a non-audio file, bytes that do not decode, a waveform
            without its sampling rate. MissingAudioError: a path that is not a file.
    """
    if value is None:
        return None
    if isinstance(value, np.ndarray) and value.dtype == object:
        value = list(value)
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(v, (int, float, np.number)) for v in value):
            raise AudioError(
                f"{where}: the audio cell is a bare waveform; give its sampling rate too, as an "
                "{'array': ..., 'sampling_rate': ...} dict (the datasets Audio feature's form)"
            )
        items = [audio_cell(v, bases, f"{where} audio {k}") for k, v in enumerate(value)]
        return [a for a in items if a is not None] or None
    if isinstance(value, Mapping):
        if "array" in value:
            rate = value.get("sampling_rate")
            if rate is None:
                raise AudioError(f"{where}: the audio cell has an array but no 'sampling_rate'")
            array = value["array"]
            array = np.asarray(array, dtype=np.float32) if isinstance(array, list) else array
            try:
                return Audio(array, rate)
            except AudioError as err:
                raise AudioError(f"{where}: {err}") from None
        if "bytes" in value or "path" in value:
            if value.get("bytes") is not None:
                return _decode_audio_bytes(bytes(value["bytes"]), where)
            return _audio_file(str(value["path"]), bases, where) if value.get("path") else None
        raise AudioError(
            f"{where}: an audio dict needs 'array' and 'sampling_rate' (or 'bytes'/'path'), got "
            f"keys {sorted(map(str, value))}"
        )
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _decode_audio_bytes(bytes(value), where)
    if isinstance(value, str):
        return _audio_file(value.strip(), bases, where) if value.strip() else None
    raise AudioError(
        f"{where}: cannot read audio from a {type(value).__name__} cell; give WAV/FLAC paths, "
        "{'array', 'sampling_rate'} dicts or {'bytes', 'path'} structs"
    )


def _frames(value: Any, where: str) -> np.ndarray:
    """A ``T×H×W×3`` uint8 array from an array or nested lists of integers 0..255."""
    try:
        arr = np.asarray(value if isinstance(value, np.ndarray) else _nested(value))
    except ValueError as err:  # ragged nesting
        raise VideoError(f"{where}: the video cell's frames are ragged ({err})") from None
    if arr.ndim != 4 or arr.shape[-1] != 3 or 0 in arr.shape:
        raise VideoError(
            f"{where}: a video cell's frames must be T×H×W×3 (frames, height, width, RGB), got "
            f"shape {tuple(arr.shape)}"
        )
    if arr.dtype != np.uint8:
        ints = np.issubdtype(arr.dtype, np.integer)
        if not ints or arr.min() < 0 or arr.max() > 255:
            raise VideoError(
                f"{where}: a video cell's frames must be integers 0..255, got dtype {arr.dtype}"
            )
        arr = arr.astype(np.uint8)
    return arr


def _nested(value: Any) -> Any:
    """Nested lists from nested object arrays (how pandas returns list columns)."""
    if isinstance(value, np.ndarray) and value.dtype == object:
        return [_nested(v) for v in value]
    if isinstance(value, (list, tuple)):
        return [_nested(v) for v in value]
    return value


def video_cell(value: Any, bases: Sequence[Path], where: str) -> Any:
    """A ``T×H×W×3`` uint8 array, a video file path or a list of frame paths from one video cell
    (None: no video).

    Raises:
        VideoError: a cell of another kind, frames of the wrong shape or values, an unreadable
            ``.npy`` file. MissingVideoError: a path that is not a file.
    """
    if value is None:
        return None
    if isinstance(value, Mapping) and value.get("path"):  # a {"bytes", "path"} struct
        value = value["path"]
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        found = _find(text, bases)
        if found is None:
            raise MissingVideoError(
                f"{where}: the video file {text[:80]!r} is not there (looked in {_looked(bases)})"
            )
        if found.suffix.lower() != ".npy":
            return found
        try:
            return _frames(np.load(found, allow_pickle=False), f"{where} ({found.name})")
        except (OSError, ValueError) as err:
            raise VideoError(f"{where}: cannot read frames from {str(found)!r} ({err})") from None
    if isinstance(value, np.ndarray) and value.dtype == object:
        value = list(value)
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
        paths = [_find(v, bases) for v in value]
        missing = [v for v, p in zip(value, paths) if p is None]
        if missing:
            raise MissingVideoError(
                f"{where}: frame file {missing[0][:80]!r} is not there (looked in {_looked(bases)})"
            )
        return paths
    if isinstance(value, (np.ndarray, list, tuple)):
        return _frames(value, where) if len(value) else None
    raise VideoError(
        f"{where}: cannot read a video from a {type(value).__name__} cell; give a video or .npy "
        "file path, T×H×W×3 frames or a list of frame image paths"
    )


__all__ = ["audio_cell", "video_cell"]
