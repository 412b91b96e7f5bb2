"""Wordings of the vision questions: every type is asked four ways (:data:`VARIANTS`).

``plain`` and ``polite`` name the object or offer two options, and so leak answer information to
a reader without the image; ``anchored`` refers only to the image; ``terse`` is one or two words.
Evaluation splits emit all four wordings of one draw on the same image, training one at random,
the text-only corpus a naming one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from PIL import Image

from ...samples import Sample
from .core import _blank_meta, _Ctx, _maybe_image, _pick

VARIANTS: tuple[str, ...] = ("plain", "polite", "anchored", "terse")
"""Wordings of the vision questions: ``plain`` and ``polite`` name the object (or offer two
options), ``anchored`` refers only to the image, ``terse`` is one or two words."""
NAMING_VARIANTS: tuple[str, ...] = ("plain", "polite")
WORDED_QTYPES: tuple[str, ...] = ("color", "identify", "count", "position", "digit", "describe")


def _variants(rng: np.random.Generator, ctx: _Ctx) -> tuple[str, ...]:
    """Wordings emitted for one draw: all four in evaluation splits, one at random in training,
    a naming one in the text-only corpus (what text alone can answer)."""
    if ctx.text_only:
        return (_pick(rng, NAMING_VARIANTS),)
    if ctx.train:
        return (_pick(rng, VARIANTS),)
    return VARIANTS


def _options(rng: np.random.Generator, answer: str, pool: Sequence[str]) -> tuple[str, str]:
    """The answer and one distractor from ``pool``, in random order."""
    other = _pick(rng, [p for p in pool if p != answer])
    return (answer, other) if rng.random() < 0.5 else (other, answer)


def _color_question(variant: str, kind: str, cw: str) -> str:
    return {
        "plain": f"what {cw} is the {kind} ?",
        "polite": f"please tell me the {cw} of the {kind} .",
        "anchored": f"what {cw} is the object in the image ?",
        "terse": f"{cw} ?",
    }[variant]


def _choice_question(qtype: str, variant: str, a: str, b: str, kind: str = "") -> str:
    plain, polite, anchored, terse = {
        "identify": (
            f"is the object a {a} or a {b} ?",
            f"please tell me if the object is a {a} or a {b} .",
            "which object is in the image ?",
            "object ?",
        ),
        "count": (
            f"are there {a} or {b} objects ?",
            f"please tell me if there are {a} or {b} objects .",
            "how many objects are in the image ?",
            "how many ?",
        ),
        "position": (
            f"is the {kind} at the {a} or the {b} ?",
            f"please tell me if the {kind} is at the {a} or the {b} .",
            "where is the object in the image ?",
            "where ?",
        ),
        "digit": (
            f"is the digit {a} or {b} ?",
            f"please tell me if the digit is {a} or {b} .",
            "what digit is in the image ?",
            "digit ?",
        ),
    }[qtype]
    return {"plain": plain, "polite": polite, "anchored": anchored, "terse": terse}[variant]


def _worded(
    rng: np.random.Generator,
    ctx: _Ctx,
    qtype: str,
    image: Image.Image,
    answer: str,
    pool: Sequence[str],
    meta_common: dict[str, Any],
    kind: str = "",
) -> list[Sample]:
    """One sample per wording of a choice-capable question type, all on the same image."""
    a, b = _options(rng, answer, pool)
    out = []
    for variant in _variants(rng, ctx):
        meta = _blank_meta(qtype, ctx.split)
        meta.update(meta_common)
        naming = variant in NAMING_VARIANTS
        meta.update(variant=variant, leaks=naming, options=[a, b] if naming else None)
        q = _choice_question(qtype, variant, a, b, kind)
        said = _pick(rng, (a, b)) if ctx.text_only else answer  # text alone: one of the options
        out.append(Sample(q, _maybe_image(image, ctx), said, None, meta))
    return out


def _describe_question(variant: str, kinds: Sequence[str]) -> str:
    named = " and ".join(f"the {k}" for k in kinds)
    return {
        "plain": f"describe {named} .",
        "polite": f"please describe {named} .",
        "anchored": "describe the image .",
        "terse": "describe .",
    }[variant]
