"""Conditions: how a :class:`~interp.Sample` is turned into model input.

A condition is parsed once, at the API boundary, into a :class:`Condition` of up to three parts
joined by ``+`` — what happens to the **image**, to the **question**, and to the generated
**prefix** — so that, e.g., "no image and no question" (P0 of the temporal-causal-drives paper) is
the one condition ``"blind+no_question"``.

=========================  =====================================================================
image part                 input
=========================  =====================================================================
``full``                   the sample's image(s) (the default when no image part is given)
``blind``                  the same chat prompt with every image item removed (Z_blind, Eq. 2 of
                           the chain-of-embedding paper): no image tokens at all
``null:black``             a black image of each real image's size in its place
``null:white``             a white image
``null:noise``             uniform RGB noise, seeded by the sample id (reproducible)
``null:mean``              a uniform image of the processor's normalisation mean: after
                           normalisation every pixel value is 0
``swap:next``              the image(s) of the next sample with an image (cyclic)
``swap:<id>``              the image(s) of the sample with that id, for every sample
``distort:<t>``            the real image with VCD's forward-diffusion noise at step ``t`` of
                           1,000 added to the *normalised* pixel values, seeded by the sample id
=========================  =====================================================================

=========================  =====================================================================
question / prefix part     input
=========================  =====================================================================
``no_question``            an empty question (the image(s) alone)
``ask:<text>``             the question replaced by ``<text>`` (e.g. ``ask:Please provide a
                           response.``)
``instruct:<text>``        ``<text>`` placed before the question, as an instruction prefix (ICD's
                           disturbance instruction)
``no_prefix``              teacher-forced scoring only: every answer token is scored right after
                           the prompt, without the answer tokens before it
=========================  =====================================================================

Audio and video parts (``no_audio``, ``null_audio:silence``, ``frames:8``, ``still:0`` ...) are
listed in :mod:`interp.media_conditions`; a condition holds at most one of each.

``null_question`` is kept as the name of ``full+no_question``. Text arguments may hold ``:`` but not
``+``; build a :class:`Condition` directly for any text. Null images take the size of the image
they replace, so architectures with dynamic resolution get exactly as many image tokens. A sample
without an image gets one null image of the processor's nominal input size.

New conditions are registered in a few lines (see :func:`register_image_condition` and
:func:`register_question_condition`)::

    from PIL import ImageFilter
    import interp

    @interp.register_image_condition("blur", check=float)
    def blur(sample, arg, ctx):
        return [im.filter(ImageFilter.GaussianBlur(float(arg))) for im in sample.load_images()]

    interp.residual_stream(vlm, samples, "blur:2+no_question")
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import torch
from PIL import Image
from torch import Tensor

from .errors import ConditionError, ImageError
from .samples import Sample

NULL_KINDS = ("black", "white", "noise", "mean")
Prefix = Literal["kept", "removed"]

# -- the condition object ------------------------------------------------------------------------


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
    def uses_audio(self) -> bool:
        """Whether inputs under this condition carry the samples' audio slots (False for
        ``no_audio``)."""
        return self.audio is None or _media("audio")[self.audio.name].keeps

    @property
    def uses_video(self) -> bool:
        """Whether inputs under this condition carry videos (False for ``no_video``)."""
        return self.video is None or _media("video")[self.video.name].keeps


def _media(kind: str) -> dict[str, Any]:
    """The audio or video part registry (parts defined in :mod:`interp.media_conditions`)."""
    return AUDIO_CONDITIONS if kind == "audio" else VIDEO_CONDITIONS


_ALIASES = {"null_question": ("full", "no_question")}


def _split_part(text: str) -> Part:
    name, sep, arg = text.partition(":")
    return Part(name.strip(), arg if sep else None)


def _parse(value: str) -> Condition:
    prefix: Prefix = "kept"
    pieces: list[str] = []
    for raw in value.split("+"):
        if not raw.strip():
            raise ConditionError(f"empty part in condition {value!r}")
        pieces.extend(_ALIASES.get(raw.strip(), (raw,)))
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
            "audio": _media("audio"),
            "video": _media("video"),
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
    audio = ", ".join(spec.usage for spec in _media("audio").values())
    video = ", ".join(spec.usage for spec in _media("video").values())
    return (
        f"image parts: {images}; audio parts: {audio}; video parts: {video}; question parts: "
        f"{questions}; prefix: no_prefix; join parts with '+' (e.g. 'blind+no_question')"
    )


# -- registries ----------------------------------------------------------------------------------


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
PixelFn = Callable[[Tensor, Sample, "str | None", int], Tensor]
# sources(sample, arg, ctx) -> the samples whose images the input uses (for store fingerprints)
SourcesFn = Callable[[Sample, "str | None", ConditionContext], "list[Sample]"]
QuestionFn = Callable[[str, "str | None", Sample], str]
# rewrite(sample, arg) -> the sample the other parts then apply to (e.g. one input removed)
RewriteFn = Callable[[Sample, "str | None"], Sample]


def _no_check(arg: str | None) -> None:
    if arg is not None:
        raise ValueError("takes no argument")


class _Registered:
    """What image and question parts share: an argument check and its usage line."""

    check: Callable[[str | None], Any]
    usage: str

    def validate(self, part: Part, whole: str) -> None:
        try:
            self.check(part.arg)
        except (ValueError, TypeError) as err:
            raise ConditionError(
                f"bad argument in {str(part)!r} of condition {whole!r} ({err}); use {self.usage}"
            ) from err


@dataclass(frozen=True)
class ImageCondition(_Registered):
    """A registered image part. ``pixels``, when set, runs on each image's *normalised* pixel
    values after the processor (VCD's distortion); ``images`` then gives the images to process.
    ``question``, when set, rewrites the question text to go with the new images (e.g. removing
    the slot of an image the part drops), before any question part applies. ``rewrite``, when
    set, rewrites the whole sample first (its question, images, audio and videos), before every
    other part: a part that removes one input of any modality together with its slot."""

    name: str
    images: ImageFn
    check: Callable[[str | None], Any] = _no_check
    usage: str = ""
    uses_image: bool = True
    pixels: PixelFn | None = None
    sources: SourcesFn | None = None
    question: QuestionFn | None = None
    rewrite: RewriteFn | None = None


@dataclass(frozen=True)
class QuestionCondition(_Registered):
    """A registered question part: maps the question text to the text the model sees."""

    name: str
    question: QuestionFn
    check: Callable[[str | None], Any] = _no_check
    usage: str = ""


IMAGE_CONDITIONS: dict[str, ImageCondition] = {}
QUESTION_CONDITIONS: dict[str, QuestionCondition] = {}
# audio / video parts: name -> interp.media_conditions.MediaCondition
AUDIO_CONDITIONS: dict[str, Any] = {}
VIDEO_CONDITIONS: dict[str, Any] = {}


def _check_free(name: str, overwrite: bool) -> None:
    reserved = {"no_prefix", *_ALIASES}
    taken = (
        name in IMAGE_CONDITIONS
        or name in QUESTION_CONDITIONS
        or name in reserved
        or name in _media("audio")
        or name in _media("video")
    )
    if taken and not overwrite:
        raise ValueError(f"a condition part named {name!r} exists; pass overwrite=True")
    if not name or any(c in name for c in "+: "):
        raise ValueError(f"a condition name must be non-empty without '+', ':' or spaces: {name!r}")


def register_image_condition(
    name: str,
    images: ImageFn | None = None,
    *,
    check: Callable[[str | None], Any] | None = None,
    usage: str | None = None,
    uses_image: bool = True,
    pixels: PixelFn | None = None,
    sources: SourcesFn | None = None,
    question: QuestionFn | None = None,
    rewrite: RewriteFn | None = None,
    overwrite: bool = False,
) -> Any:
    """Register an image part ``name[:arg]``; usable as a decorator of ``images``.

    Args:
        images: ``(sample, arg, ctx) -> list of PIL images`` (``None`` for no image); ``arg`` is
            the text after ``:`` or None.
        check: validates ``arg`` at parse time (raise ``ValueError``); default: no argument.
            ``check=float`` accepts a number, ``check=str`` any text.
        pixels: optional ``(values, sample, arg, image_index) -> values`` applied to each image's
            normalised pixel values after the processor.
        sources: ``(sample, arg, ctx) -> samples`` whose images the input uses besides the
            sample's own (stores fingerprint their content).
        question: optional ``(text, arg, sample) -> text`` rewriting the question to go with the
            images (e.g. dropping the ``{image}`` slot of an image the part removes, or text
            evidence), applied before the question part.
        rewrite: optional ``(sample, arg) -> sample`` applied before everything else: the
            sample whose question, images, audio and videos the other parts then see (e.g.
            removing one audio input and its ``{audio}`` slot). It must not load media: batching
            and decoding checks call it to learn which modalities a row carries.
    """

    def register(fn: ImageFn) -> ImageFn:
        _check_free(name, overwrite)
        IMAGE_CONDITIONS[name] = ImageCondition(
            name=name,
            images=fn,
            check=_arg_check(check),
            usage=usage or (name if check is None else f"{name}:<arg>"),
            uses_image=uses_image,
            pixels=pixels,
            sources=sources,
            question=question,
            rewrite=rewrite,
        )
        return fn

    return register(images) if images is not None else register


def register_question_condition(
    name: str,
    question: QuestionFn | None = None,
    *,
    check: Callable[[str | None], Any] | None = None,
    usage: str | None = None,
    overwrite: bool = False,
) -> Any:
    """Register a question part ``name[:arg]``; usable as a decorator of
    ``question(text, arg, sample) -> new text`` (image slots in the new text place the images)."""

    def register(fn: QuestionFn) -> QuestionFn:
        _check_free(name, overwrite)
        QUESTION_CONDITIONS[name] = QuestionCondition(
            name=name,
            question=fn,
            check=_arg_check(check),
            usage=usage or (name if check is None else f"{name}:<arg>"),
        )
        return fn

    return register(question) if question is not None else register


def _arg_check(check: Callable[[str | None], Any] | None) -> Callable[[str | None], Any]:
    if check is None:
        return _no_check

    def needs_arg(arg: str | None) -> Any:
        if arg is None or arg == "":
            raise ValueError("needs an argument after ':'")
        return check(arg)

    return needs_arg


# -- helpers -------------------------------------------------------------------------------------


def stable_seed(text: str) -> int:
    """A platform-independent 32-bit seed of a string (CRC-32)."""
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
    if isinstance(size, (int, float)):
        return int(size), int(size)

    def get(key: str) -> Any:  # a dict or transformers' SizeDict
        return size.get(key) if isinstance(size, dict) else getattr(size, key, None)

    h = get("height") or get("shortest_edge") or get("longest_edge") or 224
    w = get("width") or h
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


# -- built-in image parts ------------------------------------------------------------------------


@register_image_condition("full", usage="full")
def _full(sample: Sample, arg: str | None, ctx: ConditionContext) -> list[Image.Image] | None:
    return sample.load_images() if sample.has_image else None


@register_image_condition("blind", usage="blind", uses_image=False)
def _blind(sample: Sample, arg: str | None, ctx: ConditionContext) -> list[Image.Image] | None:
    return None


def _check_null(arg: str | None) -> None:
    if arg not in NULL_KINDS:
        raise ValueError(f"unknown null image {arg!r}")


@register_image_condition("null", check=_check_null, usage=f"null:{{{'|'.join(NULL_KINDS)}}}")
def _null(sample: Sample, arg: str | None, ctx: ConditionContext) -> list[Image.Image]:
    sizes = [im.size for im in sample.load_images()] or [nominal_size(ctx.processor)]
    seed = ctx.seed(sample)
    return [
        null_image(arg or "", size, seed=seed + k, processor=ctx.processor)
        for k, size in enumerate(sizes)
    ]


def _swap_source(sample: Sample, arg: str | None, ctx: ConditionContext) -> list[Sample]:
    pool = list(ctx.pool)
    if arg == "next":
        with_images = [p for p in pool if p.has_image]
        if len(with_images) < 2:
            raise ImageError("'swap:next' needs at least two samples with images")
        index = next(
            (i for i, p in enumerate(with_images) if p.id == sample.id and p.has_image), -1
        )
        return [with_images[(index + 1) % len(with_images)]]
    for p in pool:
        if str(p.id) == arg:
            if not p.has_image:
                raise ImageError(f"'swap:{arg}': sample {arg!r} has no image")
            return [p]
    raise ConditionError(f"'swap:{arg}': no sample with id {arg!r} among the samples given")


@register_image_condition("swap", check=str, usage="swap:<sample id|next>", sources=_swap_source)
def _swap(sample: Sample, arg: str | None, ctx: ConditionContext) -> list[Image.Image]:
    return _swap_source(sample, arg, ctx)[0].load_images()


# VCD's noise schedule: T = 1000 steps, betas = sigmoid(linspace(-6, 6, T)) * (5e-3 - 1e-5) + 1e-5.
DIFFUSION_STEPS = 1000


@lru_cache(maxsize=1)
def diffusion_alphas_cumprod() -> Tensor:
    """ᾱ_t = Π_{s≤t} (1 − β_s) for VCD's sigmoid schedule, t = 0..999 (float64)."""
    betas = torch.sigmoid(torch.linspace(-6, 6, DIFFUSION_STEPS, dtype=torch.float64))
    betas = betas * (5e-3 - 1e-5) + 1e-5
    return torch.cumprod(1.0 - betas, dim=0)


def _check_step(arg: str | None) -> None:
    t = int(str(arg))
    if not 0 <= t < DIFFUSION_STEPS:
        raise ValueError(f"the noise step must be in 0..{DIFFUSION_STEPS - 1}")


def diffusion_noise(values: Tensor, step: int, seed: int) -> Tensor:
    """VCD's forward diffusion of normalised pixel values ``x_0`` at noise step ``t``:
    ``x_t = sqrt(ᾱ_t)·x_0 + sqrt(1 − ᾱ_t)·ε``, ε ~ N(0, 1) drawn from a generator seeded with
    ``seed`` (computed in float32 on the CPU, so it does not depend on the device)."""
    abar = float(diffusion_alphas_cumprod()[step])
    gen = torch.Generator().manual_seed(seed)
    eps = torch.randn(values.shape, generator=gen, dtype=torch.float32)
    x0 = values.detach().to("cpu", torch.float32)
    out = math.sqrt(abar) * x0 + math.sqrt(1.0 - abar) * eps
    return out.to(values.device, values.dtype)


def _distort_pixels(values: Tensor, sample: Sample, arg: str | None, index: int) -> Tensor:
    return diffusion_noise(values, int(str(arg)), stable_seed(f"{sample.id}:distort:{index}"))


@register_image_condition(
    "distort", check=_check_step, usage="distort:<noise step 0..999>", pixels=_distort_pixels
)
def _distort(sample: Sample, arg: str | None, ctx: ConditionContext) -> list[Image.Image] | None:
    if not sample.has_image:
        raise ImageError(f"'distort:{arg}' needs an image; sample {sample.id!r} has none")
    return sample.load_images()


# -- built-in question parts ---------------------------------------------------------------------


register_question_condition("no_question", lambda text, arg, sample: "", usage="no_question")
register_question_condition(
    "ask", lambda text, arg, sample: str(arg), check=str, usage="ask:<text>"
)
register_question_condition(
    "instruct",
    lambda text, arg, sample: f"{str(arg).strip()} {text.lstrip()}".strip(),
    check=str,
    usage="instruct:<text>",
)


__all__ = [
    "DIFFUSION_STEPS",
    "IMAGE_CONDITIONS",
    "NULL_KINDS",
    "QUESTION_CONDITIONS",
    "Condition",
    "ConditionContext",
    "ImageCondition",
    "Part",
    "Prepared",
    "QuestionCondition",
    "condition_help",
    "condition_inputs",
    "condition_sources",
    "diffusion_alphas_cumprod",
    "diffusion_noise",
    "nominal_size",
    "null_image",
    "prepare",
    "register_image_condition",
    "register_question_condition",
    "stable_seed",
]

from . import media_conditions as _media_conditions  # noqa: E402,F401  (registers the parts)

if TYPE_CHECKING:
    from .resolve import Prepared, condition_inputs, condition_sources, prepare

_RESOLVE = ("Prepared", "condition_inputs", "condition_sources", "prepare")


def __getattr__(name: str) -> Any:
    """Resolving a condition lives in :mod:`interp.resolve`; its names are re-exported here."""
    if name in _RESOLVE:
        from . import resolve

        return getattr(resolve, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
