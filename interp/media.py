"""The media inputs of a :class:`~interp.Sample`: images, audio and video, loaded in one place.

Every input path (a file, an in-memory array, a tensor) goes through the loaders here, with one
rule per kind, so the same content gives the same model input whatever form it came in.

**Images** are a PIL image, a path (PNG/JPEG...), an ``H×W×3`` (or ``H×W``) uint8 array, or a torch
tensor (``3×H×W`` or ``H×W×3``; floats in [0, 1], integers in 0..255); :func:`load_image` gives an
RGB PIL image.

**Audio** is given as an :class:`Audio` (a mono waveform and its sampling rate), a
``(waveform, sampling_rate)`` pair, or a path to a WAV/FLAC file (read with ``soundfile``). A 2-D
waveform is averaged to mono; its channel axis is the short one (``samples × channels`` as
soundfile returns, or ``channels × samples`` as torchaudio does; a side of at most
:data:`MAX_CHANNELS` is the channel axis). Integer PCM is scaled by ``2**(bits-1)``, as soundfile
scales a PCM file (``int16``: ``x / 32768``, so −32768 → −1.0 exactly). A rate may be an int or an
integral float (``16000.0``). **Resampling is the library's job**: every waveform is resampled to
the sampling rate of the model's audio feature extractor
(``processor.feature_extractor.sampling_rate``) with ``scipy.signal.resample_poly`` just before
encoding, so samples may mix rates freely.

**The extractor's window.** A feature extractor with a fixed window (Whisper-style
``n_samples``: 30 s on real omni checkpoints, 2 s on ``demo-omni``) pads or cuts every clip to it,
so a longer clip is truncated to the window before encoding — with an
:class:`AudioTruncatedWarning` naming the window and the seconds used, recorded in the ``interp``
command's ``manifest.json`` (``"audio_truncated"``) — and a file is read only up to the window
(``soundfile.read(frames=...)``). An extractor without a fixed window gets the clip whole.

**Video** is given as a ``T×H×W×3`` ``uint8`` array (or tensor), a list of frames (PIL images,
image paths or ``H×W×3`` arrays of one size), or a path to a video file. Reading a file needs
PyAV (``pip install av``, the ``video`` extra); frames and arrays need nothing more. Frames reach
the processor as given (the family's video processor resizes them).
"""

from __future__ import annotations

import errno
import hashlib
import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from einops import rearrange
from PIL import Image, UnidentifiedImageError

from .errors import (
    AudioError,
    ImageError,
    MissingAudioError,
    MissingExtraError,
    MissingImageError,
    MissingVideoError,
    VideoError,
)

AUDIO_SLOT = "{audio}"
"""Marker placing an audio input inside the question text (see :class:`~interp.Sample`)."""
VIDEO_SLOT = "{video}"
"""Marker placing a video inside the question text (see :class:`~interp.Sample`)."""

AUDIO_SUFFIXES = (".wav", ".flac")
MAX_CHANNELS = 8
"""The longest side of a 2-D waveform that is taken as its channel axis."""
SHOWN_PATH = 120  # characters of a path a message quotes


class AudioTruncatedWarning(UserWarning):
    """A clip longer than the feature extractor's window was cut to the window."""


def _is_tensor(obj: Any) -> bool:
    return type(obj).__module__.startswith("torch") and hasattr(obj, "detach")


def _where(sid: Any) -> str:
    """The message prefix naming the sample (none for an Audio built on its own)."""
    return "" if sid is None else f"Sample {sid!r}: "


def shown(path: Any) -> str:
    """A path quoted for a message: ``repr`` of it, cut to :data:`SHOWN_PATH` characters."""
    text = str(path)
    if len(text) <= SHOWN_PATH:
        return repr(text)
    return f"{text[: SHOWN_PATH // 2]!r}…{text[-SHOWN_PATH // 4 :]!r} ({len(text)} characters)"


def is_file(path: Path, kind: str, missing: type[Exception], sid: Any) -> bool:
    """Whether ``path`` is a file; a name the file system cannot hold (too long, a NUL byte)
    raises ``missing`` naming it, instead of the file system's ``OSError``."""
    try:
        return path.is_file()
    except (OSError, ValueError) as err:
        too_long = isinstance(err, OSError) and err.errno == errno.ENAMETOOLONG
        reason = (
            "the name is longer than the file system allows"
            if too_long
            else f"not a usable file name ({getattr(err, 'strerror', None) or err})"
        )
        raise missing(
            f"{_where(sid)}{kind} file {shown(path)}: {reason}; give the path to a {kind} file"
        ) from None


# -- images -----------------------------------------------------------------------------------------

# A PIL image, a path to an image file, an ``H×W×3`` uint8 array, or a torch tensor (``3×H×W`` or
# ``H×W×3``; floats in [0, 1], integers in 0..255).
ImageLike = Any


def check_image_like(image: Any, sid: Any) -> None:
    """Validate an image input's type and (for arrays) content, before any compute."""
    if isinstance(image, (Image.Image, str, Path)):
        return
    if isinstance(image, np.ndarray) or _is_tensor(image):
        _array_to_pil(image, sid)  # validates shape and dtype up front
        return
    raise ImageError(
        f"Sample {sid!r}: an image must be a PIL.Image, a path, an H×W×3 uint8 numpy array or a "
        f"torch tensor (3×H×W or H×W×3), got {type(image).__name__}"
    )


def _array_to_pil(array: Any, sid: Any) -> Image.Image:
    """An RGB PIL image from an ``H×W×3`` / ``H×W`` array or a ``3×H×W`` / ``H×W×3`` tensor."""
    if _is_tensor(array):
        array = array.detach().cpu()
        if array.dim() == 3 and array.shape[0] in (1, 3) and array.shape[-1] not in (1, 3):
            array = rearrange(array, "c h w -> h w c")
        array = array.numpy()
    arr = np.asarray(array)
    if arr.ndim == 3 and arr.shape[-1] == 1:
        arr = arr[..., 0]
    if not (arr.ndim == 2 or (arr.ndim == 3 and arr.shape[-1] == 3)) or 0 in arr.shape:
        raise ImageError(
            f"Sample {sid!r}: an image array must be H×W×3 (or H×W, or a 3×H×W tensor), got shape "
            f"{tuple(arr.shape)}"
        )
    if np.issubdtype(arr.dtype, np.floating):
        if arr.size and (np.nanmin(arr) < 0.0 or np.nanmax(arr) > 1.0):
            raise ImageError(
                f"Sample {sid!r}: a float image must hold values in [0, 1], got "
                f"[{np.nanmin(arr):.3g}, {np.nanmax(arr):.3g}]; pass uint8 pixels for 0..255"
            )
        arr = np.round(arr * 255.0).astype(np.uint8)
    elif arr.dtype != np.uint8:
        if arr.size and (arr.min() < 0 or arr.max() > 255):
            raise ImageError(f"Sample {sid!r}: integer image values must lie in 0..255")
        arr = arr.astype(np.uint8)
    return Image.fromarray(np.ascontiguousarray(arr)).convert("RGB")


def load_image(image: ImageLike, sid: Any = None) -> Image.Image:
    """An RGB PIL image from any accepted image input (files are read here).

    Raises:
        MissingImageError: a path that does not exist (or that no file system can hold).
        ImageError: anything else unusable.
    """
    if isinstance(image, Image.Image):
        return image.convert("RGB")
    if isinstance(image, np.ndarray) or _is_tensor(image):
        return _array_to_pil(image, sid)
    path = Path(image)
    if not is_file(path, "image", MissingImageError, sid):
        raise MissingImageError(
            f"Sample {sid!r}: image file not found: {shown(path)}. "
            "Check the path (relative paths are resolved from the working directory "
            "or, for JSONL data, from the JSONL file's folder)."
        )
    try:
        with Image.open(path) as im:
            return im.convert("RGB")
    except (UnidentifiedImageError, OSError) as err:
        raise ImageError(
            f"Sample {sid!r}: cannot read image {shown(path)} ({err}); "
            "give a PNG/JPEG file or a PIL image"
        ) from err


def image_digest(image: ImageLike, sid: Any = None) -> str:
    """A content hash of one image: the file's bytes for a path, the decoded pixels otherwise.

    Raises:
        MissingImageError: a path that does not exist.
    """
    h = hashlib.sha256()
    if isinstance(image, (str, Path)):
        path = Path(image)
        if not is_file(path, "image", MissingImageError, sid):
            raise MissingImageError(f"Sample {sid!r}: image file not found: {shown(path)}")
        h.update(b"file:")
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        return h.hexdigest()
    pil = load_image(image, sid)
    h.update(f"pixels:{pil.mode}:{pil.size}:".encode())
    h.update(pil.tobytes())
    return h.hexdigest()


# -- audio ------------------------------------------------------------------------------------------


def _mono(waveform: Any, sid: Any) -> np.ndarray:
    """A 1-D float32 waveform from a 1-D, ``samples × channels`` or ``channels × samples`` array
    (floats, or integer PCM scaled by ``2**(bits-1)`` as soundfile scales a PCM file)."""
    if _is_tensor(waveform):
        waveform = waveform.detach().cpu().numpy()
    if not isinstance(waveform, np.ndarray):
        raise AudioError(
            f"{_where(sid)}a waveform must be a numpy array (or a torch tensor), got "
            f"{type(waveform).__name__}"
        )
    arr = waveform
    if np.issubdtype(arr.dtype, np.signedinteger) and arr.dtype.itemsize >= 2:
        arr = arr / -float(np.iinfo(arr.dtype).min)  # PCM: -32768 -> -1.0 exactly
    elif not np.issubdtype(arr.dtype, np.floating):
        raise AudioError(
            f"{_where(sid)}a waveform must hold floats in [-1, 1] or int16/int32 PCM, got "
            f"dtype {waveform.dtype}"
        )
    if arr.ndim == 2:
        # the channel axis is the short one: soundfile gives samples x channels, torchaudio
        # channels x samples
        channels_first = arr.shape[0] <= MAX_CHANNELS < arr.shape[1]
        arr = arr.mean(axis=0 if channels_first else 1)
    if arr.ndim != 1 or arr.size == 0:
        raise AudioError(
            f"{_where(sid)}a waveform must be 1-D (samples) or 2-D (samples × channels, or "
            f"channels × samples) and non-empty, got shape {tuple(waveform.shape)}"
        )
    arr = np.asarray(arr, dtype=np.float32)
    if not np.isfinite(arr).all():
        raise AudioError(f"{_where(sid)}the waveform holds NaN or infinite values")
    return arr


@dataclass(frozen=True, eq=False)
class Audio:
    """A mono waveform (float32, one dimension) and its sampling rate in Hz.

    ``source_seconds`` is the length of the clip it was read from, when only its start was read
    (a file read up to the extractor's window); None: the waveform is the whole clip.

    Raises:
        AudioError: a waveform that is not a non-empty 1-D/2-D numeric array of finite values, or a
            sampling rate that is not a positive whole number (an int or an integral float).
    """

    waveform: np.ndarray
    sampling_rate: int
    source_seconds: float | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sampling_rate", _rate(self.sampling_rate))
        object.__setattr__(self, "waveform", _mono(self.waveform, None))

    @property
    def duration(self) -> float:
        """Length in seconds."""
        return len(self.waveform) / self.sampling_rate

    @property
    def full_duration(self) -> float:
        """Length of the clip it came from, in seconds (more than :attr:`duration` when only its
        start was read)."""
        return self.duration if self.source_seconds is None else self.source_seconds

    def head(self, seconds: float) -> Audio:
        """The first ``seconds`` of the waveform (itself when it is not longer)."""
        n = int(round(seconds * self.sampling_rate))
        if len(self.waveform) <= n:
            return self
        return Audio(self.waveform[:n], self.sampling_rate, self.full_duration)

    def resampled(self, rate: int) -> Audio:
        """The waveform at ``rate`` Hz (``scipy.signal.resample_poly``); itself when equal."""
        if int(rate) == self.sampling_rate:
            return self
        g = math.gcd(int(rate), self.sampling_rate)
        from scipy.signal import resample_poly

        out = resample_poly(self.waveform, int(rate) // g, self.sampling_rate // g)
        return Audio(np.asarray(out, dtype=np.float32), int(rate), self.source_seconds)


def _rate(rate: Any) -> int:
    """A sampling rate as an int: a positive int or integral float (``16000.0``).

    Raises:
        AudioError: anything else.
    """
    if isinstance(rate, (float, np.floating)) and math.isfinite(rate) and float(rate).is_integer():
        rate = int(rate)
    if isinstance(rate, bool) or not isinstance(rate, (int, np.integer)) or rate <= 0:
        raise AudioError(
            f"a sampling rate must be a positive whole number of Hz (an int, or a float such as "
            f"16000.0), got {rate!r}"
        )
    return int(rate)


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
                f"got {shown(audio)}; decode other formats yourself and pass (waveform, rate)"
            )
        return
    to_audio(audio, sid)


def audio_header(path: Path, sid: Any = None) -> tuple[int, int]:
    """A WAV/FLAC file's sampling rate and length in frames, read from its header alone.

    Raises:
        MissingAudioError: the path does not exist.
        AudioError: the file is not a readable WAV/FLAC file.
    """
    if not is_file(path, "audio", MissingAudioError, sid):
        raise MissingAudioError(
            f"Sample {sid!r}: audio file not found: {shown(path)}. Check the path (relative "
            "paths are resolved from the working directory)."
        )
    import soundfile

    try:
        info = soundfile.info(str(path))
    except (RuntimeError, soundfile.LibsndfileError) as err:
        raise AudioError(
            f"Sample {sid!r}: cannot read audio {shown(path)} ({err}); give a WAV or FLAC file"
        ) from err
    if info.frames <= 0:
        raise AudioError(f"Sample {sid!r}: the audio file {shown(path)} holds no samples")
    return int(info.samplerate), int(info.frames)


def to_audio(audio: AudioLike, sid: Any = None, *, max_seconds: float | None = None) -> Audio:
    """An :class:`Audio` from any accepted audio input (files are read here, only up to
    ``max_seconds`` when given: the rest is never decoded).

    Raises:
        MissingAudioError: a path that does not exist.
        AudioError: anything else unusable.
    """
    if isinstance(audio, Audio):
        return audio
    if isinstance(audio, (str, Path)):
        path = Path(audio)
        rate, frames = audio_header(path, sid)
        wanted = frames if max_seconds is None else min(frames, math.ceil(max_seconds * rate))
        import soundfile

        try:
            data, _ = soundfile.read(str(path), frames=wanted, dtype="float32", always_2d=True)
        except (RuntimeError, soundfile.LibsndfileError) as err:
            raise AudioError(
                f"Sample {sid!r}: cannot read audio {shown(path)} ({err}); give a WAV or FLAC file"
            ) from err
        if data.shape[0] == 0:
            raise AudioError(f"Sample {sid!r}: the audio file {shown(path)} holds no samples")
        # soundfile's layout is frames x channels, whatever their counts
        mono = data.mean(axis=1).astype(np.float32)
        return Audio(mono, rate, frames / rate if wanted < frames else None)
    if isinstance(audio, (tuple, list)) and len(audio) == 2:
        waveform, rate = audio
        try:
            return Audio(_mono(waveform, sid), _rate(rate))
        except AudioError as err:
            if str(err).startswith("Sample"):
                raise
            raise AudioError(f"Sample {sid!r}: {err}") from None
    raise AudioError(
        f"Sample {sid!r}: audio must be an interp.Audio, a (waveform, sampling_rate) pair or a "
        f"WAV/FLAC path, got {type(audio).__name__}"
    )


def audio_window(processor: Any) -> float | None:
    """The feature extractor's fixed window in seconds (``n_samples / sampling_rate``, else its
    ``chunk_length``), or None: no fixed window, clips are used whole."""
    extractor = getattr(processor, "feature_extractor", None) or getattr(
        processor, "audio_processor", None
    )
    rate = getattr(extractor, "sampling_rate", None)
    n_samples = getattr(extractor, "n_samples", None)
    if rate and n_samples:
        return float(n_samples) / float(rate)
    chunk = getattr(extractor, "chunk_length", None)
    return float(chunk) if chunk else None


_TRUNCATED: list[dict[str, Any]] = []  # this process's truncations, for a command's manifest


def truncated_audio(clear: bool = False) -> list[dict[str, Any]]:
    """The audio clips cut to the extractor's window since the last ``clear`` (sample id, window,
    seconds used, clip length), in order; ``clear=True`` empties the record."""
    out = list(_TRUNCATED)
    if clear:
        _TRUNCATED.clear()
    return out


def fit_audio(audios: list[AudioLike], processor: Any, sid: Any = None) -> list[Audio]:
    """A sample's audio as the processor takes it: read (files only up to the window),
    resampled to the extractor's rate and cut to its window, with an
    :class:`AudioTruncatedWarning` for every clip that was longer (and a record for the run's
    manifest, :func:`truncated_audio`)."""
    window = audio_window(processor)
    rate = audio_rate(processor)
    out = []
    for k, item in enumerate(audios):
        a = to_audio(item, sid, max_seconds=window)
        if rate:
            a = a.resampled(rate)
        if window is not None and a.full_duration > window + 1e-9:
            a = a.head(window)
            note = {
                "sample": None if sid is None else str(sid),
                "input": k,
                "window_s": round(window, 6),
                "used_s": round(a.duration, 6),
                "clip_s": round(a.full_duration, 6),
            }
            if note not in _TRUNCATED:
                _TRUNCATED.append(note)
                warnings.warn(
                    f"{_where(sid)}audio {k} is {a.full_duration:.2f} s long, over the feature "
                    f"extractor's {window:g} s window: the first {a.duration:.2f} s are used (the "
                    "processor would cut it there too)",
                    AudioTruncatedWarning,
                    stacklevel=2,
                )
        out.append(a)
    return out


def check_media_files(sample: Any) -> None:
    """Every media file a sample names exists and, for images and audio, opens: an image's
    header identifies its format (PIL, no decoding), an audio file's header reads (soundfile).

    Raises:
        MissingImageError / ImageError, MissingAudioError / AudioError, MissingVideoError.
    """
    sid = sample.id
    for image in sample.images:
        if isinstance(image, (str, Path)):
            path = Path(image)
            if not is_file(path, "image", MissingImageError, sid):
                load_image(path, sid)  # the missing-file error, with its advice
            try:
                with Image.open(path):
                    pass
            except (UnidentifiedImageError, OSError) as err:
                raise ImageError(
                    f"Sample {sid!r}: cannot read image {shown(path)} ({err}); "
                    "give a PNG/JPEG file or a PIL image"
                ) from err
    for audio in sample.audios:
        if isinstance(audio, (str, Path)):
            audio_header(Path(audio), sid)
    for video in sample.videos:
        if isinstance(video, (str, Path)) and not is_file(
            Path(video), "video", MissingVideoError, sid
        ):
            raise MissingVideoError(f"Sample {sid!r}: video file not found: {shown(video)}")


def _file_digest(path: Path, kind: str, missing: type[Exception], sid: Any) -> str:
    """The content hash of an audio or video file: ``sha256(b"<kind>-file:" + its bytes)``."""
    if not is_file(path, kind, missing, sid):
        raise missing(f"Sample {sid!r}: {kind} file not found: {shown(path)}")
    return hashlib.sha256(f"{kind}-file:".encode() + path.read_bytes()).hexdigest()


def audio_digest(audio: AudioLike, sid: Any = None) -> str:
    """A content hash of one audio input: the file's bytes for a path, the samples otherwise."""
    if isinstance(audio, (str, Path)):
        return _file_digest(Path(audio), "audio", MissingAudioError, sid)
    a = to_audio(audio, sid)
    head = f"audio:{a.sampling_rate}:{a.waveform.shape}:".encode()
    return hashlib.sha256(head + a.waveform.tobytes()).hexdigest()


def _read_video_file(path: Path, sid: Any) -> np.ndarray:
    try:
        import av
    except ImportError as err:
        raise MissingExtraError(
            f"Sample {sid!r}: reading the video file {shown(path)} needs PyAV: pip install av "
            "(or the 'video' extra: pip install 'vlm-interp[video]'); or pass the frames as a "
            "T×H×W×3 uint8 array or a list of images"
        ) from err
    try:
        with av.open(str(path)) as container:
            frames = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    except Exception as err:  # PyAV raises its own error classes per container/codec problem
        raise VideoError(f"Sample {sid!r}: cannot decode video {shown(path)} ({err})") from err
    if not frames:
        raise VideoError(f"Sample {sid!r}: the video {shown(path)} has no frames")
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
        if not is_file(path, "video", MissingVideoError, sid):
            raise MissingVideoError(f"Sample {sid!r}: video file not found: {shown(path)}")
        return _read_video_file(path, sid)
    if isinstance(video, np.ndarray) or _is_tensor(video):
        return _frames_array(video, sid)
    if isinstance(video, (list, tuple)) and video:
        frames = [np.asarray(load_image(frame, sid)) for frame in video]
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
    frames = to_video(video, sid)
    head = f"video:{frames.shape}:".encode()
    return hashlib.sha256(head + np.ascontiguousarray(frames).tobytes()).hexdigest()


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
    "AudioTruncatedWarning",
    "ImageLike",
    "MAX_CHANNELS",
    "VIDEO_SLOT",
    "VideoLike",
    "audio_digest",
    "audio_header",
    "audio_rate",
    "audio_window",
    "check_audio_like",
    "check_image_like",
    "check_media_files",
    "check_video_like",
    "fit_audio",
    "image_digest",
    "load_image",
    "shown",
    "to_audio",
    "to_video",
    "truncated_audio",
    "video_digest",
]
