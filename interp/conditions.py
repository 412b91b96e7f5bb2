"""Conditions: how a :class:`~interp.Sample` is turned into model input.

=====================  ==========================================================================
condition              input
=====================  ==========================================================================
``full``               the sample's image + its question
``blind``              the same chat prompt with the image item removed (Z_blind, Eq. 2 of the
                       chain-of-embedding paper): no image tokens at all
``null:black``         a black image of the sample's image size in place of the real one
``null:white``         a white image
``null:noise``         uniform RGB noise, seeded by the sample id (reproducible)
``null:mean``          a uniform image of the processor's normalisation mean: after normalisation
                       every pixel value is 0
``null_question``      the sample's image with an empty question
``swap:next``          the image of the next sample in the list (cyclic): a mismatched image
``swap:<id>``          the image of the sample with that id, for every sample
=====================  ==========================================================================

Null images take the size of the sample's own image, so architectures with dynamic resolution give
the null image exactly as many image tokens as the real one. A sample without an image uses the
processor's nominal input size.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from PIL import Image

from .errors import ConditionError, ImageError
from .samples import Sample

NULL_KINDS = ("black", "white", "noise", "mean")
_KINDS = ("full", "blind", "null", "null_question", "swap")


@dataclass(frozen=True)
class Condition:
    """A parsed condition: ``kind`` plus an optional argument (``null:black`` → kind ``null``,
    arg ``black``)."""

    kind: str
    arg: str | None = None

    @classmethod
    def parse(cls, value: str | Condition) -> Condition:
        """Parse ``"full"``, ``"blind"``, ``"null:<kind>"``, ``"null_question"``, ``"swap:<id|next>"``."""
        if isinstance(value, Condition):
            return value
        if not isinstance(value, str):
            raise ConditionError(f"a condition is a string such as 'full', got {value!r}")
        kind, _, arg = value.partition(":")
        if kind not in _KINDS:
            raise ConditionError(
                f"unknown condition {value!r}; use one of: full, blind, "
                f"null:{{{'|'.join(NULL_KINDS)}}}, null_question, swap:<sample id|next>"
            )
        if kind == "null":
            if arg not in NULL_KINDS:
                raise ConditionError(
                    f"unknown null image {arg!r} in {value!r}; use null:{'|'.join(NULL_KINDS)}"
                )
        elif kind == "swap":
            if not arg:
                raise ConditionError("'swap' needs a source: 'swap:next' or 'swap:<sample id>'")
        elif arg:
            raise ConditionError(f"condition {kind!r} takes no argument, got {value!r}")
        return cls(kind, arg or None)

    def __str__(self) -> str:
        return self.kind if self.arg is None else f"{self.kind}:{self.arg}"

    @property
    def uses_image(self) -> bool:
        return self.kind != "blind"


def _stable_seed(text: str) -> int:
    return zlib.crc32(text.encode("utf-8"))


def _processor_mean(processor: Any) -> tuple[int, int, int]:
    image_processor = getattr(processor, "image_processor", processor)
    mean = getattr(image_processor, "image_mean", None) or (0.5, 0.5, 0.5)
    if isinstance(mean, (int, float)):
        mean = (mean,) * 3
    return tuple(int(round(255 * float(m))) for m in mean)  # type: ignore[return-value]


def nominal_size(processor: Any) -> tuple[int, int]:
    """The processor's nominal input size (width, height), for samples that carry no image."""
    image_processor = getattr(processor, "image_processor", processor)
    size = getattr(image_processor, "size", None) or {}
    if isinstance(size, dict):
        h = size.get("height") or size.get("shortest_edge") or size.get("longest_edge") or 224
        w = size.get("width") or h
    else:
        h = w = int(size)
    return int(w), int(h)


def null_image(
    kind: str, size: tuple[int, int], *, seed: int = 0, processor: Any = None
) -> Image.Image:
    """A trivial image of ``size`` = (width, height): black, white, noise (seeded) or the
    processor's normalisation mean."""
    w, h = size
    if kind == "black":
        return Image.new("RGB", (w, h), (0, 0, 0))
    if kind == "white":
        return Image.new("RGB", (w, h), (255, 255, 255))
    if kind == "mean":
        return Image.new("RGB", (w, h), _processor_mean(processor))
    if kind == "noise":
        rng = np.random.default_rng(seed)
        return Image.fromarray(rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8), "RGB")
    raise ConditionError(f"unknown null image {kind!r}; use one of {NULL_KINDS}")


def condition_inputs(
    samples: Sequence[Sample],
    condition: Condition | str,
    processor: Any,
    *,
    all_samples: Sequence[Sample] | None = None,
) -> list[tuple[str, Image.Image | None]]:
    """(question, image or None) per sample under ``condition``.

    ``all_samples`` is the full list the samples belong to; ``swap:next`` and ``swap:<id>`` look
    images up in it (defaults to ``samples``).

    Raises:
        ImageError / MissingImageError: a needed image is missing or unreadable.
        ConditionError: ``swap:<id>`` names no sample.
    """
    cond = Condition.parse(condition)
    pool = list(all_samples) if all_samples is not None else list(samples)
    out: list[tuple[str, Image.Image | None]] = []
    for s in samples:
        if cond.kind == "blind":
            out.append((s.question, None))
        elif cond.kind == "full":
            out.append((s.question, s.load_image() if s.has_image else None))
        elif cond.kind == "null_question":
            out.append(("", s.load_image()))
        elif cond.kind == "null":
            size = s.load_image().size if s.has_image else nominal_size(processor)
            seed = _stable_seed(str(s.id))
            out.append(
                (s.question, null_image(cond.arg or "", size, seed=seed, processor=processor))
            )
        elif cond.kind == "swap":
            out.append((s.question, _swap_source(s, cond.arg or "", pool).load_image()))
    return out


def _swap_source(sample: Sample, arg: str, pool: list[Sample]) -> Sample:
    if arg == "next":
        with_images = [p for p in pool if p.has_image]
        if len(with_images) < 2:
            raise ImageError("'swap:next' needs at least two samples with images")
        index = (
            next(i for i, p in enumerate(with_images) if p is sample) if sample.has_image else -1
        )
        return with_images[(index + 1) % len(with_images)]
    for p in pool:
        if str(p.id) == arg:
            if not p.has_image:
                raise ImageError(f"'swap:{arg}': sample {arg!r} has no image")
            return p
    raise ConditionError(f"'swap:{arg}': no sample with id {arg!r} among the samples given")


__all__ = ["NULL_KINDS", "Condition", "condition_inputs", "nominal_size", "null_image"]
