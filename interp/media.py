"""Audio and video inputs of a :class:`~interp.Sample`.

**Audio** is given as an :class:`Audio` (a mono waveform and its sampling rate), a
``(waveform, sampling_rate)`` pair, or a path to a WAV/FLAC file (read with ``soundfile``). A 2-D
waveform is ``samples × channels`` and is averaged to mono; integer PCM (``int16``/``int32``) is
scaled to [-1, 1]. **Resampling is the library's job**: every waveform is resampled to the sampling
rate of the model's audio feature extractor (``processor.feature_extractor.sampling_rate``) with
``scipy.signal.resample_poly`` just before encoding, so samples may mix rates freely.

**Video** is given as a ``T×H×W×3`` ``uint8`` array (or tensor), a list of frames (PIL images,
image paths or ``H×W×3`` arrays of one size), or a path to a video file. Reading a file needs
PyAV (``pip install av``, the ``video`` extra); frames and arrays need nothing more. Frames reach
the processor as given (the family's video processor resizes them).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy.signal import resample_poly

from .errors import (
    AudioError,
    MissingAudioError,
    MissingExtraError,
    MissingVideoError,
    VideoError,
)

AUDIO_SLOT = "{audio}"
"""Marker placing an audio input inside the question text (see :class:`~interp.Sample`)."""
VIDEO_SLOT = "{video}"
"""Marker placing a video inside the question text (see :class:`~interp.Sample`)."""

AUDIO_SUFFIXES = (".wav", ".flac")


def _is_tensor(obj: Any) -> bool:
    return type(obj).__module__.startswith("torch") and hasattr(obj, "detach")


def _where(sid: Any) -> str:
    """The message prefix naming the sample (none for an Audio built on its own)."""
    return "" if sid is None else f"Sample {sid!r}: "


def _mono(waveform: Any, sid: Any) -> np.ndarray:
    """A 1-D float32 waveform from a 1-D or ``samples × channels`` array (float or PCM ints)."""
    if _is_tensor(waveform):
        waveform = waveform.detach().cpu().numpy()
    if not isinstance(waveform, np.ndarray):
        raise AudioError(
            f"{_where(sid)}a waveform must be a numpy array (or a torch tensor), got "
            f"{type(waveform).__name__}"
        )
    arr = waveform
    if np.issubdtype(arr.dtype, np.integer) and arr.dtype.itemsize >= 2:
        arr = arr / float(np.iinfo(arr.dtype).max)  # PCM to [-1, 1]
    elif not np.issubdtype(arr.dtype, np.floating):
        raise AudioError(
            f"{_where(sid)}a waveform must hold floats in [-1, 1] or int16/int32 PCM, got "
            f"dtype {waveform.dtype}"
        )
    if arr.ndim == 2:
        arr = arr.mean(axis=1)  # samples x channels -> mono
    if arr.ndim != 1 or arr.size == 0:
        raise AudioError(
            f"{_where(sid)}a waveform must be 1-D (samples) or 2-D (samples × channels) and "
            f"non-empty, got shape {tuple(waveform.shape)}"
        )
    arr = np.asarray(arr, dtype=np.float32)
    if not np.isfinite(arr).all():
        raise AudioError(f"{_where(sid)}the waveform holds NaN or infinite values")
    return arr


@dataclass(frozen=True, eq=False)
class Audio:
    """A mono waveform (float32, one dimension) and its sampling rate in Hz.

    Raises:
        AudioError: a waveform that is not a non-empty 1-D/2-D numeric array of finite values, or a
            sampling rate that is not a positive integer.
    """

    waveform: np.ndarray
    sampling_rate: int

    def __post_init__(self) -> None:
        rate = self.sampling_rate
        if isinstance(rate, bool) or not isinstance(rate, (int, np.integer)) or rate <= 0:
            raise AudioError(f"a sampling rate must be a positive integer (Hz), got {rate!r}")
        object.__setattr__(self, "sampling_rate", int(rate))
        object.__setattr__(self, "waveform", _mono(self.waveform, None))

    @property
    def duration(self) -> float:
        """Length in seconds."""
        return len(self.waveform) / self.sampling_rate

    def resampled(self, rate: int) -> Audio:
        """The waveform at ``rate`` Hz (``scipy.signal.resample_poly``); itself when equal."""
        if int(rate) == self.sampling_rate:
            return self
        g = math.gcd(int(rate), self.sampling_rate)
        out = resample_poly(self.waveform, int(rate) // g, self.sampling_rate // g)
        return Audio(np.asarray(out, dtype=np.float32), int(rate))


# An Audio, a (waveform, sampling_rate) pair, or a path to a WAV/FLAC file.
AudioLike = Any
# A T×H×W×3 uint8 array or tensor, a list of frames, or a path to a video file.
VideoLike = Any


def check_audio_like(audio: AudioLike, sid: Any) -> None:
    """Validate an audio input's type and (for in-memory audio) content, before any compute."""
    if isinstance(audio, Audio):
        return
    if isinstance(audio, (str, Path)):
        if Path(audio).suffix.lower() not in AUDIO_SUFFIXES:
            raise AudioError(
                f"Sample {sid!r}: an audio file must be WAV or FLAC ({', '.join(AUDIO_SUFFIXES)}), "
                f"got {str(audio)!r}; decode other formats yourself and pass (waveform, rate)"
            )
        return
    to_audio(audio, sid)


def to_audio(audio: AudioLike, sid: Any = None) -> Audio:
    """An :class:`Audio` from any accepted audio input (files are read here).

    Raises:
        MissingAudioError: a path that does not exist.
        AudioError: anything else unusable.
    """
    if isinstance(audio, Audio):
        return audio
    if isinstance(audio, (str, Path)):
        path = Path(audio)
        if not path.is_file():
            raise MissingAudioError(
                f"Sample {sid!r}: audio file not found: {str(path)!r}. Check the path (relative "
                "paths are resolved from the working directory)."
            )
        import soundfile

        try:
            data, rate = soundfile.read(str(path), dtype="float32", always_2d=False)
        except (RuntimeError, soundfile.LibsndfileError) as err:
            raise AudioError(
                f"Sample {sid!r}: cannot read audio {str(path)!r} ({err}); give a WAV or FLAC file"
            ) from err
        return Audio(_mono(data, sid), int(rate))
    if isinstance(audio, (tuple, list)) and len(audio) == 2 and not isinstance(audio[1], float):
        waveform, rate = audio
        try:
            return Audio(_mono(waveform, sid), rate)
        except AudioError as err:
            if str(err).startswith("Sample"):
                raise
            raise AudioError(f"Sample {sid!r}: {err}") from None
    raise AudioError(
        f"Sample {sid!r}: audio must be an interp.Audio, a (waveform, sampling_rate) pair or a "
        f"WAV/FLAC path, got {type(audio).__name__}"
    )


def _file_digest(path: Path, kind: str, missing: type[Exception], sid: Any) -> str:
    """The content hash of an audio or video file: ``sha256(b"<kind>-file:" + its bytes)``."""
    if not path.is_file():
        raise missing(f"Sample {sid!r}: {kind} file not found: {str(path)!r}")
    return hashlib.sha256(f"{kind}-file:".encode() + path.read_bytes()).hexdigest()


def audio_digest(audio: AudioLike, sid: Any = None) -> str:
    """A content hash of one audio input: the file's bytes for a path, the samples otherwise."""
    if isinstance(audio, (str, Path)):
        return _file_digest(Path(audio), "audio", MissingAudioError, sid)
    h = hashlib.sha256()
    a = to_audio(audio, sid)
    h.update(f"audio:{a.sampling_rate}:{a.waveform.shape}:".encode())
    h.update(a.waveform.tobytes())
    return h.hexdigest()


def _read_video_file(path: Path, sid: Any) -> np.ndarray:
    try:
        import av
    except ImportError as err:
        raise MissingExtraError(
            f"Sample {sid!r}: reading the video file {str(path)!r} needs PyAV: pip install av "
            "(or the 'video' extra: pip install 'vlm-interp[video]'); or pass the frames as a "
            "T×H×W×3 uint8 array or a list of images"
        ) from err
    try:
        with av.open(str(path)) as container:
            frames = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    except Exception as err:  # PyAV raises its own error classes per container/codec problem
        raise VideoError(f"Sample {sid!r}: cannot decode video {str(path)!r} ({err})") from err
    if not frames:
        raise VideoError(f"Sample {sid!r}: the video {str(path)!r} has no frames")
    return np.stack(frames)


def _frames_array(video: Any, sid: Any) -> np.ndarray:
    if _is_tensor(video):
        video = video.detach().cpu().numpy()
    arr = video
    if arr.ndim != 4 or arr.shape[-1] != 3 or 0 in arr.shape:
        raise VideoError(
            f"Sample {sid!r}: a video array must be T×H×W×3 (frames, height, width, RGB), got "
            f"shape {tuple(arr.shape)}"
        )
    if arr.dtype != np.uint8:
        raise VideoError(
            f"Sample {sid!r}: a video array must be uint8 (0..255), got dtype {arr.dtype}; "
            "convert with (frames * 255).round().astype(np.uint8) for floats in [0, 1]"
        )
    return arr


def to_video(video: VideoLike, sid: Any = None) -> np.ndarray:
    """A ``T×H×W×3`` uint8 array of frames from any accepted video input (files are read here).

    Raises:
        MissingVideoError: a path that does not exist.
        MissingExtraError: a video file without PyAV installed.
        VideoError: anything else unusable (wrong shape or dtype, frames of different sizes).
    """
    if isinstance(video, (str, Path)):
        path = Path(video)
        if not path.is_file():
            raise MissingVideoError(f"Sample {sid!r}: video file not found: {str(path)!r}")
        return _read_video_file(path, sid)
    if isinstance(video, np.ndarray) or _is_tensor(video):
        return _frames_array(video, sid)
    if isinstance(video, (list, tuple)) and video:
        from .samples import _load_one  # frames are images

        frames = [np.asarray(_load_one(frame, sid)) for frame in video]
        if len({f.shape for f in frames}) != 1:
            raise VideoError(
                f"Sample {sid!r}: the frames of a video must share one size, got "
                f"{sorted({f.shape[:2] for f in frames})}"
            )
        return np.stack(frames)
    raise VideoError(
        f"Sample {sid!r}: a video must be a T×H×W×3 uint8 array, a non-empty list of frames or a "
        f"video file path, got {type(video).__name__}"
    )


def check_video_like(video: VideoLike, sid: Any) -> None:
    """Validate a video input's type and (for in-memory frames) content, before any compute."""
    if isinstance(video, (str, Path)):
        return
    to_video(video, sid)


def video_digest(video: VideoLike, sid: Any = None) -> str:
    """A content hash of one video: the file's bytes for a path, the frames otherwise."""
    if isinstance(video, (str, Path)):
        return _file_digest(Path(video), "video", MissingVideoError, sid)
    h = hashlib.sha256()
    frames = to_video(video, sid)
    h.update(f"video:{frames.shape}:".encode())
    h.update(np.ascontiguousarray(frames).tobytes())
    return h.hexdigest()


def audio_rate(processor: Any) -> int | None:
    """The sampling rate (Hz) of the processor's audio feature extractor, or None."""
    extractor = getattr(processor, "feature_extractor", None) or getattr(
        processor, "audio_processor", None
    )
    rate = getattr(extractor, "sampling_rate", None)
    return int(rate) if rate else None


__all__ = [
    "AUDIO_SLOT",
    "Audio",
    "AudioLike",
    "VIDEO_SLOT",
    "VideoLike",
    "audio_digest",
    "audio_rate",
    "check_audio_like",
    "check_video_like",
    "to_audio",
    "to_video",
    "video_digest",
]
