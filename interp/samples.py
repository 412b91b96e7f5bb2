"""One item of a dataset.

A :class:`Sample` is what every measurement consumes: an image (a PIL image, a path, or absent),
optionally audio and video (see :mod:`interp.media`), a question, an optional answer/target, an id
and free metadata (dataset labels such as ``needs_image`` or ``counterfactual`` live in ``meta``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from .errors import (
    DataFormatError,
    DuplicateSampleError,
    EmptyInputError,
    ImageError,
    ImageTokenMismatchError,
    MissingImageError,
    ModalityError,
)
from .media import (
    AUDIO_SLOT,
    VIDEO_SLOT,
    Audio,
    AudioLike,
    ImageLike,
    VideoLike,
    audio_digest,
    check_audio_like,
    check_image_like,
    check_video_like,
    image_digest,
    is_file,
    load_image,
    shown,
    to_audio,
    to_video,
    video_digest,
)

IMAGE_SLOT = "{image}"
"""Marker placing an image inside the question text of a multi-image sample (see :class:`Sample`)."""

# the loaders live in interp.media (every kind of input in one place); these names stay importable
_load_one = load_image
_check_image_like = check_image_like


@dataclass
class Sample:
    """An image-question item.

    Attributes:
        question: the user's text, without any chat markup. A multi-image sample may place its
            images inside the text with :data:`IMAGE_SLOT` markers (``"{image}"``), one per image,
            e.g. ``"the caption says leaf . {image} {image} what is drawn ?"``; without markers the
            images come first, as the model cards of the supported families do.
        image: one image (a PIL image, a path, an ``H×W×3`` uint8 array or a torch tensor), a list
            of them (several images in one prompt), or ``None`` for a text-only item.
        answer: the reference answer (also the default teacher-forcing target), if known.
        id: a stable identifier; used by result stores to resume and by seeded null images.
        meta: free labels (``needs_image``, ``counterfactual``, ``qtype`` ...), copied into tables.
        audio: one audio input — an :class:`~interp.media.Audio`, a ``(waveform, sampling_rate)``
            pair or a WAV/FLAC path — or a list of them, or ``None``. Waveforms are resampled to
            the model's feature-extractor rate by the library (see :mod:`interp.media`).
        video: one video — a ``T×H×W×3`` uint8 array, a list of frames (images of one size) or a
            video file path — or a list of ``T×H×W×3`` arrays for several videos, or ``None``.

    ``{audio}`` and ``{video}`` slots place audio and video inside the question as ``{image}``
    slots place images (one slot per input of that kind, or none: those inputs then come first).

    Raises:
        ImageError: an image of an unusable type or shape.
        ImageTokenMismatchError: the question holds image slots but not one per image.
        AudioError / VideoError: audio or video of an unusable type, shape or dtype.
        ModalityError: ``{audio}`` / ``{video}`` slots that do not match the inputs.
    """

    question: str
    image: ImageLike | list[ImageLike] | None = None
    answer: str | None = None
    id: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    audio: AudioLike | list[AudioLike] | None = None
    video: VideoLike | list[VideoLike] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.question, str):
            raise TypeError(f"Sample.question must be a str, got {type(self.question).__name__}")
        if isinstance(self.image, tuple):
            self.image = list(self.image)
        if isinstance(self.image, list) and not self.image:
            self.image = None
        for image in self.images:
            check_image_like(image, self.id)
        slots = self.question.count(IMAGE_SLOT)
        if slots and slots != len(self.images):
            raise ImageTokenMismatchError(
                f"Sample {self.id!r}: the question has {slots} {IMAGE_SLOT!r} slot(s) for "
                f"{len(self.images)} image(s); give one slot per image, or none (images first)"
            )
        if isinstance(self.audio, list) and not self.audio:
            self.audio = None
        if isinstance(self.video, list) and not self.video:
            self.video = None
        for audio in self.audios:
            check_audio_like(audio, self.id)
        for video in self.videos:
            check_video_like(video, self.id)
        for slot, n, kind in (
            (AUDIO_SLOT, self.n_audio, "audio"),
            (VIDEO_SLOT, self.n_video, "video"),
        ):
            slots = self.question.count(slot)
            if slots and slots != n:
                raise ModalityError(
                    f"Sample {self.id!r}: the question has {slots} {slot!r} slot(s) for {n} "
                    f"{kind} input(s); give one slot per {kind} input, or none ({kind} first)"
                )

    @property
    def audios(self) -> list[AudioLike]:
        """The sample's audio inputs, in prompt order (empty without audio)."""
        if self.audio is None:
            return []
        return list(self.audio) if isinstance(self.audio, list) else [self.audio]

    @property
    def videos(self) -> list[VideoLike]:
        """The sample's videos, in prompt order (empty without video). A list of frames is one
        video; a list whose items are all ``T×H×W×3`` arrays (or tensors) is several."""
        if self.video is None:
            return []
        if isinstance(self.video, list) and all(
            getattr(v, "ndim", None) == 4 or (hasattr(v, "dim") and v.dim() == 4)
            for v in self.video
        ):
            return list(self.video)
        return [self.video]

    @property
    def n_audio(self) -> int:
        return len(self.audios)

    @property
    def n_video(self) -> int:
        return len(self.videos)

    @property
    def has_audio(self) -> bool:
        return self.audio is not None

    @property
    def has_video(self) -> bool:
        return self.video is not None

    def load_audios(
        self, sampling_rate: int | None = None, *, max_seconds: float | None = None
    ) -> list[Audio]:
        """Every audio input as an :class:`~interp.media.Audio`, resampled to ``sampling_rate``
        when given (``scipy.signal.resample_poly``); files are read only up to ``max_seconds``
        when given.

        Raises:
            MissingAudioError: a path does not exist.
            AudioError: a file cannot be decoded.
        """
        out = [to_audio(a, self.id, max_seconds=max_seconds) for a in self.audios]
        return [a.resampled(sampling_rate) for a in out] if sampling_rate else out

    def load_videos(self) -> list[np.ndarray]:
        """Every video as a ``T×H×W×3`` uint8 array, in prompt order.

        Raises:
            MissingVideoError: a path does not exist.
            MissingExtraError: a video file without PyAV installed.
            VideoError: unusable frames.
        """
        return [to_video(v, self.id) for v in self.videos]

    @property
    def images(self) -> list[ImageLike]:
        """The sample's images, in prompt order (empty for a text-only item)."""
        if self.image is None:
            return []
        return list(self.image) if isinstance(self.image, list) else [self.image]

    @property
    def n_images(self) -> int:
        return len(self.images)

    @property
    def has_image(self) -> bool:
        return self.image is not None

    def load_images(self) -> list[Image.Image]:
        """Every image as an RGB PIL image, in prompt order.

        Raises:
            MissingImageError: a path does not exist.
            ImageError: a file cannot be decoded.
        """
        return [load_image(image, self.id) for image in self.images]

    def load_image(self) -> Image.Image:
        """The sample's (first) image as an RGB PIL image.

        Raises:
            MissingImageError: the path does not exist.
            ImageError: the sample has no image, or the file cannot be decoded.
        """
        if self.image is None:
            raise ImageError(f"Sample {self.id!r} has no image; use the 'blind' condition for it")
        return load_image(self.images[0], self.id)

    def text_parts(self) -> list[str]:
        """The question split at its image slots (stripped): ``n_images + 1`` pieces when the
        question has slots, else the whole question as one piece."""
        return [part.strip() for part in self.question.split(IMAGE_SLOT)]

    def fingerprint(self) -> str:
        """A content hash of everything that defines the sample as a model input: id, question,
        answer and the content of every image, audio and video (file bytes, pixels or samples).
        ``meta`` is not included."""
        h = hashlib.sha256()
        h.update(json.dumps([str(self.id), self.question, self.answer]).encode())
        for image in self.images:
            h.update(image_digest(image, self.id).encode())
        for audio in self.audios:  # nothing is added without audio: image-only hashes unchanged
            h.update(b"audio" + audio_digest(audio, self.id).encode())
        for video in self.videos:
            h.update(b"video" + video_digest(video, self.id).encode())
        return h.hexdigest()[:32]


def ensure_samples(samples: Iterable[Sample] | Sample) -> list[Sample]:
    """Validate a sample collection and give every sample an id (its position) if it has none.

    Raises:
        EmptyInputError: no samples.
        DuplicateSampleError: two samples share an id (ids key stores, seeds and ``swap:<id>``).
    """
    if isinstance(samples, Sample):
        samples = [samples]
    out = list(samples)
    if not out:
        raise EmptyInputError("no samples were given: pass a non-empty list of interp.Sample")
    for i, s in enumerate(out):
        if not isinstance(s, Sample):
            raise TypeError(f"item {i} is a {type(s).__name__}, expected interp.Sample")
        if s.id is None:
            s.id = str(i)
    seen: dict[str, int] = {}
    for i, s in enumerate(out):
        sid = str(s.id)
        if sid in seen:
            raise DuplicateSampleError(
                f"samples {seen[sid]} and {i} share the id {sid!r}; sample ids must be unique "
                "(they key result stores, seeded null images and 'swap:<id>')"
            )
        seen[sid] = i
    return out


def read_jsonl(path: str | Path) -> list[Sample]:
    """Read samples from a JSONL file, one JSON object per line.

    Fields: ``question`` (required), ``image`` (a path relative to the file's folder, a list of
    paths for a multi-image sample, or null), ``audio`` / ``video`` (a file path, optional),
    ``answer`` (optional), ``id`` (optional; defaults to the line number) and any other keys, which
    go to ``meta``. Blank lines are skipped.

    Raises:
        DataFormatError: a line is not a JSON object or lacks ``question``.
    """
    path = Path(path)
    if not is_file(path, "data", MissingImageError, None):
        raise MissingImageError(f"data file not found: {shown(path)}")
    samples: list[Sample] = []
    for lineno, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as err:
            raise DataFormatError(f"{path}:{lineno}: not valid JSON ({err})") from err
        if not isinstance(obj, dict) or "question" not in obj:
            raise DataFormatError(
                f"{path}:{lineno}: each line must be an object with at least a 'question' key"
            )
        if not isinstance(obj["question"], str):
            raise DataFormatError(
                f"{path}:{lineno}: 'question' must be a string, got "
                f"{type(obj['question']).__name__}"
            )
        answer = obj.get("answer")
        if isinstance(answer, (int, float)) and not isinstance(answer, bool):
            obj["answer"] = str(answer)  # a numeric answer ("answer": 3) is its text
        elif answer is not None and not isinstance(answer, str):
            raise DataFormatError(
                f"{path}:{lineno}: 'answer' must be a string (or a number), got "
                f"{type(answer).__name__}"
            )
        image = obj.pop("image", None)
        if isinstance(image, list):
            image = [_relative_to(path, p) for p in image]
        elif image is not None:
            image = _relative_to(path, image)
        media = {
            key: _relative_to(path, obj.pop(key))
            for key in ("audio", "video")
            if obj.get(key) is not None
        }
        samples.append(
            Sample(
                question=obj.pop("question"),
                image=image,
                answer=obj.pop("answer", None),
                id=str(obj.pop("id", lineno)),
                meta=obj,
                **media,
            )
        )
    if not samples:
        raise EmptyInputError(f"{path} holds no samples")
    return samples


def _relative_to(jsonl: Path, image: Any) -> Path:
    if not isinstance(image, str):
        raise DataFormatError(f"{jsonl}: an image entry must be a path string, got {shown(image)}")
    p = Path(image)
    return p if p.is_absolute() else jsonl.parent / p


def write_jsonl(
    samples: Sequence[Sample], path: str | Path, image_dir: str | Path | None = None
) -> Path:
    """Write samples as JSONL; in-memory images (PIL, arrays, tensors) are saved as PNG files
    under ``image_dir`` (default: ``images/`` beside the file)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    image_dir = Path(image_dir) if image_dir is not None else path.parent / "images"
    lines = []
    for i, s in enumerate(samples):
        sid = s.id if s.id is not None else str(i)
        names: list[str] = []
        for k, image in enumerate(s.images):
            if isinstance(image, (str, Path)):
                names.append(str(image))
                continue
            image_dir.mkdir(parents=True, exist_ok=True)
            target = image_dir / (f"{sid}.png" if s.n_images == 1 else f"{sid}-{k}.png")
            load_image(image, sid).save(target)
            names.append(
                str(target.relative_to(path.parent))
                if target.is_relative_to(path.parent)
                else str(target)
            )
        image_field: str | list[str] | None = (
            None
            if not names
            else names[0]
            if s.n_images == 1 and not isinstance(s.image, list)
            else names
        )
        media: dict[str, str] = {}
        for key, value in (("audio", s.audio), ("video", s.video)):
            if value is None:
                continue
            if not isinstance(value, (str, Path)):
                raise DataFormatError(
                    f"sample {sid!r}: write_jsonl stores {key} as a file path; save the in-memory "
                    f"{key} to a file (WAV/FLAC, a video file) and give its path"
                )
            media[key] = str(value)
        lines.append(
            json.dumps(
                {
                    **media,
                    "id": sid,
                    "image": image_field,
                    "question": s.question,
                    "answer": s.answer,
                    **s.meta,
                }
            )
        )
    path.write_text("\n".join(lines) + "\n")
    return path


__all__ = [
    "AUDIO_SLOT",
    "IMAGE_SLOT",
    "VIDEO_SLOT",
    "ImageLike",
    "Sample",
    "ensure_samples",
    "image_digest",
    "read_jsonl",
    "write_jsonl",
]
