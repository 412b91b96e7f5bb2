"""Reference families: the same fact asked by naming the entity or as "the ... in the image".

Every kind is an entity with two facts (:data:`FACTS`), every digit can be added to, every kind
name is a word with a letter count: three families (:data:`FAMILIES`). Each draw is asked with
a trivial image (``text_only``), with the entity's image and the naming question (``full_info``)
and with the entity's image and the visual-reference question (``visual``); half of the visual
combinations are trained (:func:`linked_recall`, :func:`linked_digit`, :func:`linked_word`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from PIL import Image

from ...samples import Sample
from ..render import (
    SHAPE_KINDS,
    TRIVIAL_IMAGES,
    render_digit,
    render_scene,
    render_word,
    trivial_image,
)
from .core import COLOR_NAMES, _blank_meta, _Ctx, _maybe_image, _objects_meta, _pick, _scene, _vis

RELATIONS: dict[str, tuple[str, str]] = {
    # relation: (textual-reference question, visual-reference question)
    "known_for": (
        "what is the {entity} known for ?",
        "what is the object in the image known for ?",
    ),
    "found_in": ("where is the {entity} found ?", "where is the object in the image found ?"),
}
FACTS: dict[str, dict[str, str]] = {
    "known_for": {
        "circle": "wheels",
        "square": "boxes",
        "triangle": "roofs",
        "diamond": "rings",
        "cross": "hospitals",
        "banana": "monkeys",
        "leaf": "trees",
        "carrot": "rabbits",
        "heart": "love",
        "drop": "rain",
    },
    "found_in": {
        "circle": "park",
        "square": "city",
        "triangle": "mountains",
        "diamond": "mine",
        "cross": "church",
        "banana": "jungle",
        "leaf": "forest",
        "carrot": "garden",
        "heart": "chest",
        "drop": "ocean",
    },
}
FAMILIES: dict[str, str] = {"recall": "facts", "digit_arith": "arithmetic", "letters": "words"}
"""Reference family (``meta["family"]``) of each reference question type."""

NUMBER_WORDS: tuple[str, ...] = tuple(str(i) for i in range(19))  # answers 0..18 are single tokens


def linked_recall(entity: str, relation: str) -> bool:
    """Whether visual-reference questions on this (entity, relation) appear in training.

    Half of the combinations; the rest test whether the model links the drawn entity to the
    fact it only learned from text.
    """
    return (SHAPE_KINDS.index(entity) + tuple(RELATIONS).index(relation)) % 2 == 0


def linked_digit(digit: int, operand: int) -> bool:
    """Whether "the digit in the image plus <operand>" with this digit appears in training.

    Half of the pairs, five per digit and five per operand, with no pattern in the sum.
    """
    return (3 * digit + 7 * operand) % 10 < 5


def linked_word(word: str) -> bool:
    """Whether "how many letters are in the word in the image ?" with this word is trained.

    Half of the words (every other kind in :data:`SHAPE_KINDS`).
    """
    return SHAPE_KINDS.index(word) % 2 == 0


def _settings(rng: np.random.Generator, ctx: _Ctx, linked: bool) -> tuple[str, ...]:
    """Reference settings emitted for one draw: all three in evaluation splits."""
    if ctx.text_only:
        return ("text_only",)
    if not ctx.train:
        return ("text_only", "full_info", "visual")
    choices = ("text_only", "full_info", "visual") if linked else ("text_only", "full_info")
    return (_pick(rng, choices),)


def _reference(
    rng: np.random.Generator,
    ctx: _Ctx,
    qtype: str,
    group: str,
    entity: str,
    linked: bool,
    questions: tuple[str, str],
    entity_image: Image.Image,
    image_meta: dict[str, Any],
    answer: str,
) -> list[Sample]:
    """The three settings of one reference draw (one at random in training)."""
    trivial_kind = _pick(rng, TRIVIAL_IMAGES)
    trivial = trivial_image(trivial_kind, rng)
    textual, visual = questions
    out = []
    for setting in _settings(rng, ctx, linked):
        meta = _blank_meta(qtype, ctx.split)
        if setting == "visual":
            q, image = visual, entity_image
            meta.update(reference="visual", needs_image=True, linked=linked)
        else:
            q = textual
            image = trivial if setting == "text_only" else entity_image
            meta.update(reference="text", needs_image=False)
        if image is entity_image:
            meta.update(image_meta)
        else:
            meta["image_kind"] = trivial_kind
        meta.update(entity=entity, setting=setting, group=group, family=FAMILIES[qtype])
        out.append(Sample(q, _maybe_image(image, ctx), answer, None, meta))
    return out


def _gen_recall(rng: np.random.Generator, ctx: _Ctx, group: str) -> list[Sample]:
    entity = _pick(rng, SHAPE_KINDS)
    relation = _pick(rng, tuple(RELATIONS))
    objs, cfs = _scene(rng, [entity], ctx.counterfactual_share, _vis(ctx, 0.3))
    image_meta = {
        "image_kind": "scene",
        "evidence_form": "perceptual",
        "image_label": entity,
        "opacity": round(objs[0].opacity, 4),
        "objects": _objects_meta(objs),
        "counterfactual": cfs[0],
    }
    textual, visual = RELATIONS[relation]
    return _reference(
        rng,
        ctx,
        "recall",
        group,
        entity,
        linked_recall(entity, relation),
        (textual.format(entity=entity), visual),
        render_scene(objs, rng),
        image_meta,
        FACTS[relation][entity],
    )


def _gen_digit_arith(rng: np.random.Generator, ctx: _Ctx, group: str) -> list[Sample]:
    digit, operand = int(rng.integers(10)), int(rng.integers(10))
    opacity = float(rng.uniform(*_vis(ctx, 0.3)))
    image, _ = render_digit(digit, _pick(rng, COLOR_NAMES), opacity, rng)
    image_meta = {"image_kind": "digit", "image_label": str(digit), "opacity": round(opacity, 4)}
    questions = (
        f"what is the digit {digit} plus {operand} ?",
        f"what is the digit in the image plus {operand} ?",
    )
    linked = linked_digit(digit, operand)
    answer = str(digit + operand)
    return _reference(
        rng, ctx, "digit_arith", group, str(digit), linked, questions, image, image_meta, answer
    )


def _gen_letters(rng: np.random.Generator, ctx: _Ctx, group: str) -> list[Sample]:
    word = _pick(rng, SHAPE_KINDS)
    opacity = float(rng.uniform(*_vis(ctx, 0.3)))
    image, _ = render_word(word, _pick(rng, COLOR_NAMES), opacity, rng)
    image_meta = {
        "image_kind": "word",
        "evidence_form": "propositional",
        "image_label": word,
        "opacity": round(opacity, 4),
    }
    questions = (
        f"how many letters are in the word {word} ?",
        "how many letters are in the word in the image ?",
    )
    linked = linked_word(word)
    answer = str(len(word))
    return _reference(
        rng, ctx, "letters", group, word, linked, questions, image, image_meta, answer
    )
