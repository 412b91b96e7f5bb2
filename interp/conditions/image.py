"""Image parts of a condition: ``full``, ``blind``, ``null:<kind>``, ``swap:<id|next>``,
``distort:<t>`` (see :mod:`interp.conditions`), and :func:`register_image_condition` for new
ones."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
from PIL import Image

from ..errors import ConditionError, ImageError
from ..samples import Sample
from .registry import (
    IMAGE_CONDITIONS,
    ConditionContext,
    ImageCondition,
    ImageFn,
    PixelFn,
    QuestionFn,
    RewriteFn,
    SourcesFn,
    register_part,
    stable_seed,
)

NULL_KINDS = ("black", "white", "noise", "mean")

if TYPE_CHECKING:
    from torch import Tensor


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
    return register_part(
        IMAGE_CONDITIONS,
        ImageCondition,
        "images",
        name,
        images,
        check,
        usage,
        overwrite,
        uses_image=uses_image,
        pixels=pixels,
        sources=sources,
        question=question,
        rewrite=rewrite,
    )


def processor_mean(processor: Any) -> tuple[int, int, int]:
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
        return Image.new("RGB", (w, h), processor_mean(processor))
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
    import torch  # here, not at import: naming a condition must not load torch

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
    import torch

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


__all__ = [
    "DIFFUSION_STEPS",
    "NULL_KINDS",
    "diffusion_alphas_cumprod",
    "diffusion_noise",
    "nominal_size",
    "null_image",
    "processor_mean",
    "register_image_condition",
]
