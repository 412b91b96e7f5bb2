"""A condition: how a :class:`~interp.Sample` is turned into model input, parsed once, at the API
boundary, into a :class:`Condition` of parts joined by ``+`` — what happens to the **image**, the
**audio**, the **video**, the **question** and the generated **prefix** (see :mod:`interp.conditions`
for the built-in parts)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ..errors import ConditionError
from .registry import (
    ALIASES,
    AUDIO_CONDITIONS,
    IMAGE_CONDITIONS,
    QUESTION_CONDITIONS,
    VIDEO_CONDITIONS,
)

Prefix = Literal["kept", "removed"]


@dataclass(frozen=True)
class Part:
    """One named part of a condition with its optional argument (``null:black`` → ``null``,
    ``black``)."""

    name: str
    arg: str | None = None

    def __str__(self) -> str:
        return self.name if self.arg is None else f"{self.name}:{self.arg}"


@dataclass(frozen=True)
class Condition:
    """A parsed condition: an image part, an optional question part, the prefix treatment, and
    optional audio and video parts (None: the sample's own audio / video).

    ``Condition.parse("blind+no_question")`` gives ``Condition(image=Part("blind"),
    question=Part("no_question"))``; ``str()`` gives the canonical string back (image, audio,
    video, question, prefix).
    """

    image: Part = field(default_factory=lambda: Part("full"))
    question: Part | None = None
    prefix: Prefix = "kept"
    audio: Part | None = None
    video: Part | None = None

    @classmethod
    def parse(cls, value: str | Condition) -> Condition:
        """Parse a condition string (see the module docstring) or pass a Condition through.

        Raises:
            ConditionError: an unknown part, a bad argument, or two parts of one kind.
        """
        if isinstance(value, Condition):
            return value
        if not isinstance(value, str) or not value.strip():
            raise ConditionError(f"a condition is a string such as 'full', got {value!r}")
        return _parse(value.strip())

    def __str__(self) -> str:
        parts = [str(self.image)]
        parts += [str(p) for p in (self.audio, self.video) if p is not None]
        if self.question is not None:
            parts.append(str(self.question))
        if self.prefix == "removed":
            parts.append("no_prefix")
        return "+".join(parts)

    @property
    def kind(self) -> str:
        """The image part's name (``full``, ``blind``, ``null``, ``swap``, ``distort`` ...)."""
        return self.image.name

    @property
    def arg(self) -> str | None:
        return self.image.arg

    @property
    def uses_image(self) -> bool:
        """Whether inputs under this condition carry the images (False for ``blind``)."""
        return IMAGE_CONDITIONS[self.image.name].uses_image

    @property
    def edits_pixels(self) -> bool:
        """Whether the image part edits the processor's normalised pixel values (``distort``,
        a part registered with ``pixels=``): such a condition needs the family's pixel layout."""
        return IMAGE_CONDITIONS[self.image.name].pixels is not None

    @property
    def uses_audio(self) -> bool:
        """Whether inputs under this condition carry the samples' audio slots (False for
        ``no_audio``)."""
        return self.audio is None or AUDIO_CONDITIONS[self.audio.name].keeps

    @property
    def uses_video(self) -> bool:
        """Whether inputs under this condition carry videos (False for ``no_video``)."""
        return self.video is None or VIDEO_CONDITIONS[self.video.name].keeps


def _split_part(text: str) -> Part:
    name, sep, arg = text.partition(":")
    return Part(name.strip(), arg if sep else None)


def _parse(value: str) -> Condition:
    prefix: Prefix = "kept"
    pieces: list[str] = []
    for raw in value.split("+"):
        if not raw.strip():
            raise ConditionError(f"empty part in condition {value!r}")
        pieces.extend(ALIASES.get(raw.strip(), (raw,)))
    parts: dict[str, Part] = {}
    for raw in pieces:
        part = _split_part(raw)
        if part.name == "no_prefix":
            if part.arg is not None:
                raise ConditionError(f"'no_prefix' takes no argument, got {raw!r} in {value!r}")
            prefix = "removed"
            continue
        kinds = {
            "image": IMAGE_CONDITIONS,
            "question": QUESTION_CONDITIONS,
            "audio": AUDIO_CONDITIONS,
            "video": VIDEO_CONDITIONS,
        }
        kind = next((k for k, registry in kinds.items() if part.name in registry), None)
        if kind is None:
            raise ConditionError(
                f"unknown condition part {part.name!r} in {value!r}; {condition_help()}"
            )
        if kind in parts:
            raise ConditionError(
                f"condition {value!r} has two {kind} parts ({parts[kind]}, {part}); give one"
            )
        kinds[kind][part.name].validate(part, value)
        parts[kind] = part
    image, question = parts.get("image"), parts.get("question")
    return Condition(
        image or Part("full"), question, prefix, parts.get("audio"), parts.get("video")
    )


def condition_help() -> str:
    """One line listing every registered condition part."""
    images = ", ".join(spec.usage for spec in IMAGE_CONDITIONS.values())
    questions = ", ".join(spec.usage for spec in QUESTION_CONDITIONS.values())
    audio = ", ".join(spec.usage for spec in AUDIO_CONDITIONS.values())
    video = ", ".join(spec.usage for spec in VIDEO_CONDITIONS.values())
    return (
        f"image parts: {images}; audio parts: {audio}; video parts: {video}; question parts: "
        f"{questions}; prefix: no_prefix; join parts with '+' (e.g. 'blind+no_question')"
    )


__all__ = ["Condition", "Part", "Prefix", "condition_help"]
