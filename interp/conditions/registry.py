"""The registries of condition parts (image, question, audio, video), what a registered part is,
and what a part's function may use besides the sample (:class:`ConditionContext`). A leaf: the
part modules (:mod:`~interp.conditions.image`, :mod:`~interp.conditions.question`, :mod:`~interp.conditions.audio`, :mod:`~interp.conditions.video`) fill the registries,
:mod:`~interp.conditions.condition` parses against them."""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from PIL import Image

from ..errors import AudioError, ConditionError, VideoError
from ..samples import Sample

if TYPE_CHECKING:  # parsing a condition name imports no torch (a bad name errs at once)
    from torch import Tensor

MediaKind = Literal["audio", "video"]
# names a part may not take: the prefix part and the aliases of whole conditions
ALIASES = {"null_question": ("full", "no_question")}
RESERVED = ("no_prefix", *ALIASES)


def stable_seed(text: str) -> int:
    """A platform-independent 32-bit seed of a string (CRC-32)."""
    return zlib.crc32(text.encode("utf-8"))


@dataclass(frozen=True)
class ConditionContext:
    """What a condition function may use besides the sample: the processor (for nominal sizes
    and normalisation constants) and the full sample list (for ``swap``)."""

    processor: Any
    pool: Sequence[Sample]

    def seed(self, sample: Sample, salt: str = "") -> int:
        """A reproducible seed from the sample id (and a salt), independent of batching."""
        return stable_seed(f"{sample.id}{salt}")


# images(sample, arg, ctx) -> the list of PIL images the input carries (None: no image)
ImageFn = Callable[[Sample, "str | None", ConditionContext], "list[Image.Image] | None"]
# pixels(values, sample, arg, image_index) -> new normalised pixel values for one image
PixelFn = Callable[["Tensor", Sample, "str | None", int], "Tensor"]
# sources(sample, arg, ctx) -> the samples whose images the input uses (for store fingerprints)
SourcesFn = Callable[[Sample, "str | None", ConditionContext], "list[Sample]"]
QuestionFn = Callable[[str, "str | None", Sample], str]
# rewrite(sample, arg) -> the sample the other parts then apply to (e.g. one input removed)
RewriteFn = Callable[[Sample, "str | None"], Sample]


def no_check(arg: str | None) -> None:
    if arg is not None:
        raise ValueError("takes no argument")


class Registered:
    """What image and question parts share: an argument check and its usage line."""

    check: Callable[[str | None], Any]
    usage: str

    def validate(self, part: Any, whole: str) -> None:
        """Check ``part``'s argument (a :class:`~interp.conditions.Part` of ``whole``)."""
        try:
            self.check(part.arg)
        except (ValueError, TypeError) as err:
            raise ConditionError(
                f"bad argument in {str(part)!r} of condition {whole!r} ({err}); use {self.usage}"
            ) from err


@dataclass(frozen=True)
class ImageCondition(Registered):
    """A registered image part. ``pixels``, when set, runs on each image's *normalised* pixel
    values after the processor (VCD's distortion); ``images`` then gives the images to process.
    ``question``, when set, rewrites the question text to go with the new images (e.g. removing
    the slot of an image the part drops), before any question part applies. ``rewrite``, when
    set, rewrites the whole sample first (its question, images, audio and videos), before every
    other part: a part that removes one input of any modality together with its slot."""

    name: str
    images: ImageFn
    check: Callable[[str | None], Any] = no_check
    usage: str = ""
    uses_image: bool = True
    pixels: PixelFn | None = None
    sources: SourcesFn | None = None
    question: QuestionFn | None = None
    rewrite: RewriteFn | None = None


@dataclass(frozen=True)
class QuestionCondition(Registered):
    """A registered question part: maps the question text to the text the model sees."""

    name: str
    question: QuestionFn
    check: Callable[[str | None], Any] = no_check
    usage: str = ""


# apply(sample, arg, ctx) -> the audio inputs (Audio) or videos (T×H×W×3 uint8) the input carries
MediaFn = Callable[[Sample, "str | None", ConditionContext], list[Any]]


@dataclass(frozen=True)
class MediaCondition(Registered):
    """A registered audio or video part: what replaces the sample's audio (videos)."""

    name: str
    kind: MediaKind
    apply: MediaFn
    check: Callable[[str | None], Any] = no_check
    usage: str = ""
    keeps: bool = True
    sources: SourcesFn | None = None


IMAGE_CONDITIONS: dict[str, ImageCondition] = {}
QUESTION_CONDITIONS: dict[str, QuestionCondition] = {}
AUDIO_CONDITIONS: dict[str, MediaCondition] = {}
VIDEO_CONDITIONS: dict[str, MediaCondition] = {}


def media_registry(kind: str) -> dict[str, MediaCondition]:
    """The audio or video part registry."""
    return AUDIO_CONDITIONS if kind == "audio" else VIDEO_CONDITIONS


def check_free(name: str, overwrite: bool) -> None:
    taken = (
        name in IMAGE_CONDITIONS
        or name in QUESTION_CONDITIONS
        or name in RESERVED
        or name in AUDIO_CONDITIONS
        or name in VIDEO_CONDITIONS
    )
    if taken and not overwrite:
        raise ValueError(f"a condition part named {name!r} exists; pass overwrite=True")
    if not name or any(c in name for c in "+: "):
        raise ValueError(f"a condition name must be non-empty without '+', ':' or spaces: {name!r}")


def arg_check(check: Callable[[str | None], Any] | None) -> Callable[[str | None], Any]:
    if check is None:
        return no_check

    def needs_arg(arg: str | None) -> Any:
        if arg is None or arg == "":
            raise ValueError("needs an argument after ':'")
        return check(arg)

    return needs_arg


def register_part(
    registry: dict[str, Any],
    make: Callable[..., Registered],
    field: str,
    name: str,
    fn: Callable[..., Any] | None,
    check: Callable[[str | None], Any] | None,
    usage: str | None,
    overwrite: bool,
    **fields: Any,
) -> Any:
    """What every ``register_*_condition`` does (one place, so all kinds check names and fill in
    the argument check and usage line alike): ``make(name=name, <field>=fn, ...)`` stored under
    ``name``; with ``fn`` None, a decorator that registers the function it decorates."""

    def register(f: Callable[..., Any]) -> Callable[..., Any]:
        check_free(name, overwrite)
        registry[name] = make(
            name=name,
            check=arg_check(check),
            usage=usage or (name if check is None else f"{name}:<arg>"),
            **{field: f},
            **fields,
        )
        return f

    return register(fn) if fn is not None else register


def register_media(
    kind: MediaKind,
    name: str,
    fn: MediaFn | None,
    check: Callable[[str | None], Any] | None,
    usage: str | None,
    keeps: bool,
    sources: SourcesFn | None,
    overwrite: bool,
) -> Any:
    """Register an audio or video part (see :func:`media_registrar`)."""
    return register_part(
        media_registry(kind),
        MediaCondition,
        "apply",
        name,
        fn,
        check,
        usage,
        overwrite,
        kind=kind,
        keeps=keeps,
        sources=sources,
    )


def register_swap(kind: MediaKind) -> None:
    """Register ``swap_<kind>:<sample id|next>``: another sample's audio (videos) in place of the
    sample's own (one definition for both kinds)."""
    source = swap_source(kind)

    def swapped(sample: Sample, arg: str | None, ctx: ConditionContext) -> list[Any]:
        other = source(sample, arg, ctx)[0]
        return other.load_audios() if kind == "audio" else other.load_videos()

    usage = f"swap_{kind}:<sample id|next>"
    register_media(kind, f"swap_{kind}", swapped, str, usage, True, source, False)


def media_registrar(kind: MediaKind, doc: str) -> Callable[..., Any]:
    """The public ``register_audio_condition`` / ``register_video_condition`` (one definition:
    the two take the same arguments), documented by ``doc`` in ``interp.conditions.<kind>``."""

    def register_condition(
        name: str,
        fn: MediaFn | None = None,
        *,
        check: Callable[[str | None], Any] | None = None,
        usage: str | None = None,
        keeps: bool = True,
        sources: SourcesFn | None = None,
        overwrite: bool = False,
    ) -> Any:
        return register_media(kind, name, fn, check, usage, keeps, sources, overwrite)

    register_condition.__name__ = register_condition.__qualname__ = f"register_{kind}_condition"
    register_condition.__module__ = f"interp.conditions.{kind}"
    register_condition.__doc__ = doc
    return register_condition


def one_of(kinds: Sequence[str]) -> Callable[[str | None], None]:
    def check(arg: str | None) -> None:
        if arg not in kinds:
            raise ValueError(f"unknown kind {arg!r}; use one of {', '.join(kinds)}")

    return check


def seeded_rng(ctx: ConditionContext, sample: Sample, salt: str) -> np.random.Generator:
    return np.random.default_rng(ctx.seed(sample, salt))


def swap_source(kind: MediaKind) -> SourcesFn:
    def source(sample: Sample, arg: str | None, ctx: ConditionContext) -> list[Sample]:
        error = AudioError if kind == "audio" else VideoError
        has = (lambda p: p.has_audio) if kind == "audio" else (lambda p: p.has_video)
        pool = list(ctx.pool)
        if arg == "next":
            carriers = [p for p in pool if has(p)]
            if len(carriers) < 2:
                raise error(f"'swap_{kind}:next' needs at least two samples with {kind}")
            index = next((i for i, p in enumerate(carriers) if p.id == sample.id), -1)
            return [carriers[(index + 1) % len(carriers)]]
        for p in pool:
            if str(p.id) == arg:
                if not has(p):
                    raise error(f"'swap_{kind}:{arg}': sample {arg!r} has no {kind}")
                return [p]
        raise ConditionError(f"'swap_{kind}:{arg}': no sample with id {arg!r} among the samples")

    return source


__all__ = [
    "AUDIO_CONDITIONS",
    "IMAGE_CONDITIONS",
    "QUESTION_CONDITIONS",
    "VIDEO_CONDITIONS",
    "ConditionContext",
    "ImageCondition",
    "MediaCondition",
    "QuestionCondition",
    "check_free",
    "media_registrar",
    "media_registry",
    "one_of",
    "register_media",
    "register_part",
    "register_swap",
    "seeded_rng",
    "swap_source",
    "stable_seed",
]
