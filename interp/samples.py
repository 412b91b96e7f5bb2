"""One item of an image-question dataset.

A :class:`Sample` is what every measurement consumes: an image (a PIL image, a path, or absent), a
question, an optional answer/target, an id and free metadata (dataset labels such as
``needs_image`` or ``counterfactual`` live in ``meta``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image, UnidentifiedImageError

from .errors import DataFormatError, EmptyInputError, ImageError, MissingImageError

ImageLike = Image.Image | str | Path


@dataclass
class Sample:
    """An image-question item.

    Attributes:
        question: the user's text, without any chat markup.
        image: a PIL image, a path to an image file, or ``None`` for a text-only item.
        answer: the reference answer (also the default teacher-forcing target), if known.
        id: a stable identifier; used by result stores to resume and by seeded null images.
        meta: free labels (``needs_image``, ``counterfactual``, ``qtype`` ...), copied into tables.
    """

    question: str
    image: ImageLike | None = None
    answer: str | None = None
    id: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.question, str):
            raise TypeError(f"Sample.question must be a str, got {type(self.question).__name__}")
        if self.image is not None and not isinstance(self.image, (Image.Image, str, Path)):
            raise ImageError(
                f"Sample {self.id!r}: image must be a PIL.Image, a path or None, "
                f"got {type(self.image).__name__}"
            )

    @property
    def has_image(self) -> bool:
        return self.image is not None

    def load_image(self) -> Image.Image:
        """Return the image as an RGB PIL image.

        Raises:
            MissingImageError: the path does not exist.
            ImageError: the sample has no image, or the file cannot be decoded.
        """
        if self.image is None:
            raise ImageError(f"Sample {self.id!r} has no image; use the 'blind' condition for it")
        if isinstance(self.image, Image.Image):
            return self.image.convert("RGB")
        path = Path(self.image)
        if not path.is_file():
            raise MissingImageError(
                f"Sample {self.id!r}: image file not found: {str(path)!r}. "
                "Check the path (relative paths are resolved from the working directory "
                "or, for JSONL data, from the JSONL file's folder)."
            )
        try:
            with Image.open(path) as im:
                return im.convert("RGB")
        except (UnidentifiedImageError, OSError) as err:
            raise ImageError(
                f"Sample {self.id!r}: cannot read image {str(path)!r} ({err}); "
                "give a PNG/JPEG file or a PIL image"
            ) from err


def ensure_samples(samples: Iterable[Sample] | Sample) -> list[Sample]:
    """Validate a sample collection and give every sample an id (its position) if it has none."""
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
    return out


def read_jsonl(path: str | Path) -> list[Sample]:
    """Read samples from a JSONL file, one JSON object per line.

    Fields: ``question`` (required), ``image`` (path, relative to the file's folder, or null),
    ``answer`` (optional), ``id`` (optional; defaults to the line number) and any other keys, which
    go to ``meta``. Blank lines are skipped.

    Raises:
        DataFormatError: a line is not a JSON object or lacks ``question``.
    """
    path = Path(path)
    if not path.is_file():
        raise MissingImageError(f"data file not found: {str(path)!r}")
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
        image = obj.pop("image", None)
        if image is not None:
            image = Path(image)
            if not image.is_absolute():
                image = path.parent / image
        samples.append(
            Sample(
                question=obj.pop("question"),
                image=image,
                answer=obj.pop("answer", None),
                id=str(obj.pop("id", lineno)),
                meta=obj,
            )
        )
    if not samples:
        raise EmptyInputError(f"{path} holds no samples")
    return samples


def write_jsonl(
    samples: Sequence[Sample], path: str | Path, image_dir: str | Path | None = None
) -> Path:
    """Write samples as JSONL; in-memory images are saved as PNG files under ``image_dir``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    image_dir = Path(image_dir) if image_dir is not None else path.parent / "images"
    lines = []
    for i, s in enumerate(samples):
        sid = s.id if s.id is not None else str(i)
        image: str | None = None
        if isinstance(s.image, Image.Image):
            image_dir.mkdir(parents=True, exist_ok=True)
            target = image_dir / f"{sid}.png"
            s.image.save(target)
            image = (
                str(target.relative_to(path.parent))
                if target.is_relative_to(path.parent)
                else str(target)
            )
        elif s.image is not None:
            image = str(s.image)
        lines.append(
            json.dumps(
                {"id": sid, "image": image, "question": s.question, "answer": s.answer, **s.meta}
            )
        )
    path.write_text("\n".join(lines) + "\n")
    return path


__all__ = ["ImageLike", "Sample", "ensure_samples", "read_jsonl", "write_jsonl"]
