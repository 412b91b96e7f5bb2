"""The demo world: a seeded generator of small images with questions, answers and labels.

The world has ten object kinds drawn as silhouettes, eight colours, digits and written words. Five
kinds carry a planted language prior (a canonical colour: the banana is yellow, the leaf green, the
carrot orange, the heart red, the drop blue); in the training split they are drawn in that colour
with probability :data:`PRIOR_STRENGTH`, in the evaluation splits a controlled share is
counterfactual. Every kind is also an entity with two facts (what it is known for, where it is
found), asked either by naming it (textual reference) or as "the object in the image" (visual
reference). See :func:`demo_world` for the question types and :data:`META_KEYS` for the labels.

Generation is by item index from ``numpy.random.default_rng([seed, split, ...])``: the same
``(split, seed, start, n)`` always gives the same samples, and a longer request extends a shorter
one without changing it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from PIL import Image

from ..samples import Sample
from .render import (
    CELLS,
    COLORS,
    SHAPE_KINDS,
    TRIVIAL_IMAGES,
    SceneObject,
    render_digit,
    render_scene,
    render_word,
    trivial_image,
)

SPLITS: tuple[str, ...] = ("train", "val", "test")
_SPLIT_CODE = {"train": 11, "val": 23, "test": 37}

COLOR_NAMES: tuple[str, ...] = tuple(COLORS)
PRIOR_COLORS: dict[str, str] = {
    "banana": "yellow",
    "leaf": "green",
    "carrot": "orange",
    "heart": "red",
    "drop": "blue",
}
PRIOR_KINDS: tuple[str, ...] = tuple(PRIOR_COLORS)
PLAIN_KINDS: tuple[str, ...] = tuple(k for k in SHAPE_KINDS if k not in PRIOR_COLORS)

# Share of prior-bearing objects drawn in their canonical colour in the training split.
PRIOR_STRENGTH = 0.95
# Default share of counterfactual prior-bearing objects in the val/test splits.
EVAL_COUNTERFACTUAL_SHARE = 0.5

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


# ---------------------------------------------------------------------------------------------
# question types

VISION_QTYPES: tuple[str, ...] = (
    "color",
    "identify",
    "count",
    "position",
    "digit",
    "describe",
)
TEXT_QTYPES: tuple[str, ...] = ("arith", "fact_color")
REFERENCE_QTYPES: tuple[str, ...] = ("recall", "digit_arith")
CONFLICT_QTYPES: tuple[str, ...] = ("caption", "conflict")
QTYPES: tuple[str, ...] = VISION_QTYPES + TEXT_QTYPES + REFERENCE_QTYPES + CONFLICT_QTYPES

# Training mixture of the joint image-text stage. Misleading captions ("conflict") are rare, so
# the caption is usually right but the image decides when it is visible.
TRAIN_MIX: dict[str, float] = {
    "color": 0.17,
    "identify": 0.12,
    "count": 0.05,
    "position": 0.10,
    "digit": 0.08,
    "describe": 0.14,
    "arith": 0.03,
    "fact_color": 0.03,
    "recall": 0.09,
    "digit_arith": 0.09,
    "caption": 0.07,
    "conflict": 0.03,
}
# Text-only stage (language pretraining): only what text can answer, no images.
TEXT_MIX: dict[str, float] = {
    "color": 0.20,  # plain wording, answered by the prior alone: the planted language prior
    "fact_color": 0.10,
    "arith": 0.15,
    "recall": 0.25,
    "digit_arith": 0.15,
    "caption": 0.15,
}

META_KEYS: tuple[str, ...] = (
    "qtype",
    "needs_image",
    "counterfactual",
    "prior_answer",
    "entity",
    "reference",
    "setting",
    "variant",
    "group",
    "image_kind",
    "evidence_form",
    "image_label",
    "text_label",
    "opacity",
    "objects",
    "linked",
    "split",
)
"""Keys present in every sample's ``meta`` (``None`` where not applicable):

- ``qtype``: question type, one of :data:`QTYPES`.
- ``needs_image``: the answer cannot be known from the text alone.
- ``counterfactual``: a prior-bearing object the question is about is drawn in a non-canonical
  colour (for descriptions: any object of the scene); ``False`` elsewhere.
- ``prior_answer``: what the language prior alone answers (the canonical colour, or a description
  with canonical colours), or ``None`` where the world plants no prior.
- ``entity``: the object kind or digit the question is about.
- ``reference``: ``"text"`` (the question names the entity) or ``"visual"`` (it refers to the image).
- ``setting``: for reference items, ``"text_only"`` (trivial image), ``"full_info"`` (entity image
  and naming question) or ``"visual"`` (entity image and visual-reference question).
- ``variant``: wording of colour questions, ``"plain"`` (names the kind, leaks the prior) or
  ``"anchored"`` (refers to the object in the image, leaks less).
- ``group``: shared by the samples built from one draw (wording variants, reference settings).
- ``image_kind``: ``"scene"``, ``"digit"``, ``"word"``, ``"black"``, ``"white"``, ``"noise"``
  or ``"none"``.
- ``evidence_form``: ``"perceptual"`` (drawn object) or ``"propositional"`` (label written as text).
- ``image_label`` / ``text_label``: the label shown by the image / asserted by the caption
  (conflict items have both, and answer with ``image_label``).
- ``opacity``: visibility in [0, 1] of the object the question is about (lowest over a scene).
- ``objects``: scene content, a list of ``{"kind", "color", "cell", "opacity"}``.
- ``linked``: for visual-reference items, whether this combination was trained.
- ``split``: ``"train"``, ``"val"`` or ``"test"``.
"""


@dataclass(frozen=True)
class _Ctx:
    split: str
    seed: int
    counterfactual_share: float
    text_only: bool = False
    opacity: tuple[float, float] | None = None  # overrides every question type's visibility range


def _blank_meta(qtype: str, split: str) -> dict[str, Any]:
    meta: dict[str, Any] = dict.fromkeys(META_KEYS)
    meta.update(qtype=qtype, split=split, counterfactual=False, needs_image=True)
    return meta


def _pick(rng: np.random.Generator, items: Sequence[Any]) -> Any:
    return items[int(rng.integers(len(items)))]


def _color_for(rng: np.random.Generator, kind: str, cf_share: float) -> tuple[str, bool]:
    """Colour of a drawn object and whether it is counterfactual."""
    canonical = PRIOR_COLORS.get(kind)
    if canonical is None:
        return _pick(rng, COLOR_NAMES), False
    if rng.random() < cf_share:
        return _pick(rng, [c for c in COLOR_NAMES if c != canonical]), True
    return canonical, False


def _vis(ctx: _Ctx, lo: float) -> tuple[float, float]:
    """Opacity range of the objects a question is about: ``[lo, 1]`` unless overridden."""
    return ctx.opacity if ctx.opacity is not None else (lo, 1.0)


def _offset(rng: np.random.Generator) -> tuple[int, int]:
    return int(rng.integers(0, 5)), int(rng.integers(0, 5))


def _scene(
    rng: np.random.Generator,
    kinds: Sequence[str],
    cf_share: float,
    vis: tuple[float, float],
) -> tuple[list[SceneObject], list[bool]]:
    lo, hi = vis
    cells = rng.permutation(len(CELLS))[: len(kinds)]
    objs: list[SceneObject] = []
    cfs: list[bool] = []
    for kind, cell in zip(kinds, cells, strict=True):
        color, cf = _color_for(rng, kind, cf_share)
        objs.append(SceneObject(kind, color, int(cell), float(rng.uniform(lo, hi)), _offset(rng)))
        cfs.append(cf)
    return objs, cfs


def _objects_meta(objs: Sequence[SceneObject]) -> list[dict[str, Any]]:
    return [
        {"kind": o.kind, "color": o.color, "cell": CELLS[o.cell], "opacity": round(o.opacity, 4)}
        for o in objs
    ]


def _irrelevant_image(
    rng: np.random.Generator,
    ctx: _Ctx,
    meta: dict[str, Any],
    allow_none: bool,
    trivial_only: bool = False,
) -> Image.Image | None:
    """An image unrelated to a text-answerable question (or none, in training only)."""
    r = rng.random()
    if allow_none and ctx.split == "train" and r < 0.15:
        meta["image_kind"] = "none"
        return None
    if r < 0.45 or trivial_only:
        kind = _pick(rng, TRIVIAL_IMAGES)
        meta["image_kind"] = kind
        return trivial_image(kind, rng)
    n = int(rng.integers(1, 4))
    kinds = list(rng.choice(SHAPE_KINDS, size=n, replace=False))
    objs, _ = _scene(rng, kinds, 0.05, (0.3, 1.0))
    meta["image_kind"] = "scene"
    meta["objects"] = _objects_meta(objs)
    return render_scene(objs, rng)


def _maybe_image(img: Image.Image | None, ctx: _Ctx) -> Image.Image | None:
    return None if ctx.text_only else img


# Each group generator returns one or more samples drawn from one random draw.
_GroupFn = Callable[[np.random.Generator, _Ctx, str], list[Sample]]


def _gen_color(rng: np.random.Generator, ctx: _Ctx, group: str) -> list[Sample]:
    kind = _pick(rng, SHAPE_KINDS)
    objs, cfs = _scene(rng, [kind], ctx.counterfactual_share, _vis(ctx, 0.0))
    obj = objs[0]
    image = render_scene(objs, rng)
    out = []
    variants = (
        ("plain", "anchored") if ctx.split != "train" else (_pick(rng, ("plain", "anchored")),)
    )
    if ctx.text_only:
        variants = ("plain",)
    for variant in variants:
        meta = _blank_meta("color", ctx.split)
        q = (
            f"what color is the {kind} ?"
            if variant == "plain"
            else "what color is the object in the image ?"
        )
        answer = obj.color
        if ctx.text_only:  # language pretraining states the prior: canonical or unknown colour
            answer = PRIOR_COLORS.get(kind, _pick(rng, COLOR_NAMES))
        meta.update(
            counterfactual=cfs[0],
            prior_answer=PRIOR_COLORS.get(kind),
            entity=kind,
            variant=variant,
            group=group,
            image_kind="scene",
            evidence_form="perceptual",
            image_label=kind,
            opacity=round(obj.opacity, 4),
            objects=_objects_meta(objs),
        )
        out.append(Sample(q, _maybe_image(image, ctx), answer, None, meta))
    return out


def _gen_identify(rng: np.random.Generator, ctx: _Ctx, group: str) -> list[Sample]:
    kind = _pick(rng, SHAPE_KINDS)
    meta = _blank_meta("identify", ctx.split)
    if rng.random() < 0.5:
        objs, cfs = _scene(rng, [kind], ctx.counterfactual_share, _vis(ctx, 0.15))
        image = render_scene(objs, rng)
        meta.update(
            evidence_form="perceptual",
            image_kind="scene",
            opacity=round(objs[0].opacity, 4),
            objects=_objects_meta(objs),
            counterfactual=cfs[0],
        )
    else:
        opacity = float(rng.uniform(*_vis(ctx, 0.3)))
        image, _ = render_word(kind, _pick(rng, COLOR_NAMES), opacity, rng)
        meta.update(evidence_form="propositional", image_kind="word", opacity=round(opacity, 4))
    meta.update(entity=kind, image_label=kind, group=group)
    return [Sample("which object is in the image ?", image, kind, None, meta)]


def _gen_count(rng: np.random.Generator, ctx: _Ctx, group: str) -> list[Sample]:
    n = int(rng.integers(1, len(CELLS) + 1))
    kinds = [_pick(rng, SHAPE_KINDS) for _ in range(n)]
    objs, _ = _scene(rng, kinds, ctx.counterfactual_share, _vis(ctx, 0.3))
    meta = _blank_meta("count", ctx.split)
    meta.update(
        group=group,
        image_kind="scene",
        opacity=round(min(o.opacity for o in objs), 4),
        objects=_objects_meta(objs),
    )
    return [Sample("how many objects are there ?", render_scene(objs, rng), str(n), None, meta)]


def _gen_position(rng: np.random.Generator, ctx: _Ctx, group: str) -> list[Sample]:
    n = int(rng.integers(1, 4))
    kinds = list(rng.choice(SHAPE_KINDS, size=n, replace=False))
    objs, _ = _scene(rng, kinds, ctx.counterfactual_share, _vis(ctx, 0.3))
    target = objs[int(rng.integers(n))]
    meta = _blank_meta("position", ctx.split)
    meta.update(
        entity=target.kind,
        group=group,
        image_kind="scene",
        opacity=round(target.opacity, 4),
        objects=_objects_meta(objs),
    )
    q = f"where is the {target.kind} ?"
    return [Sample(q, render_scene(objs, rng), CELLS[target.cell], None, meta)]


def _gen_digit(rng: np.random.Generator, ctx: _Ctx, group: str) -> list[Sample]:
    digit = int(rng.integers(10))
    opacity = float(rng.uniform(*_vis(ctx, 0.3)))
    image, _ = render_digit(digit, _pick(rng, COLOR_NAMES), opacity, rng)
    meta = _blank_meta("digit", ctx.split)
    meta.update(entity=str(digit), group=group, image_kind="digit", opacity=round(opacity, 4))
    return [Sample("what digit is in the image ?", image, str(digit), None, meta)]


def describe_answer(objects: Sequence[tuple[str, str]]) -> str:
    """Canonical description of ``(kind, color)`` pairs in reading order.

    ``"the banana is yellow , the circle is red and the square is blue"``.
    """
    parts = [f"the {k} is {c}" for k, c in objects]
    if len(parts) == 1:
        return parts[0]
    return " , ".join(parts[:-1]) + " and " + parts[-1]


def _gen_describe(rng: np.random.Generator, ctx: _Ctx, group: str) -> list[Sample]:
    n = int(rng.integers(1, 4))
    kinds = list(rng.choice(SHAPE_KINDS, size=n, replace=False))
    # faint objects included: where colour evidence is weak the prior can drive the description
    objs, cfs = _scene(rng, kinds, ctx.counterfactual_share, _vis(ctx, 0.15))
    ordered = sorted(objs, key=lambda o: o.cell)
    answer = describe_answer([(o.kind, o.color) for o in ordered])
    prior = describe_answer([(o.kind, PRIOR_COLORS.get(o.kind, o.color)) for o in ordered])
    meta = _blank_meta("describe", ctx.split)
    meta.update(
        counterfactual=any(cfs),
        prior_answer=prior if any(o.kind in PRIOR_COLORS for o in objs) else None,
        group=group,
        image_kind="scene",
        opacity=round(min(o.opacity for o in objs), 4),
        objects=_objects_meta(ordered),
    )
    return [Sample("describe the image .", render_scene(objs, rng), answer, None, meta)]


def _gen_arith(rng: np.random.Generator, ctx: _Ctx, group: str) -> list[Sample]:
    a, b = int(rng.integers(10)), int(rng.integers(10))
    meta = _blank_meta("arith", ctx.split)
    meta.update(needs_image=False, group=group)
    image = _irrelevant_image(rng, ctx, meta, allow_none=True)
    q = f"what is {a} plus {b} ?"
    return [Sample(q, _maybe_image(image, ctx), str(a + b), None, meta)]


def _gen_fact_color(rng: np.random.Generator, ctx: _Ctx, group: str) -> list[Sample]:
    kind = _pick(rng, PRIOR_KINDS)
    meta = _blank_meta("fact_color", ctx.split)
    meta.update(needs_image=False, entity=kind, prior_answer=PRIOR_COLORS[kind], group=group)
    image = _irrelevant_image(rng, ctx, meta, allow_none=True)
    q = f"what color is a {kind} usually ?"
    return [Sample(q, _maybe_image(image, ctx), PRIOR_COLORS[kind], None, meta)]


def _settings(rng: np.random.Generator, ctx: _Ctx, linked: bool) -> tuple[str, ...]:
    """Reference settings emitted for one draw: all three in evaluation splits."""
    if ctx.text_only:
        return ("text_only",)
    if ctx.split != "train":
        return ("text_only", "full_info", "visual")
    choices = ("text_only", "full_info", "visual") if linked else ("text_only", "full_info")
    return (_pick(rng, choices),)


def _gen_recall(rng: np.random.Generator, ctx: _Ctx, group: str) -> list[Sample]:
    entity = _pick(rng, SHAPE_KINDS)
    relation = _pick(rng, tuple(RELATIONS))
    linked = linked_recall(entity, relation)
    objs, cfs = _scene(rng, [entity], ctx.counterfactual_share, _vis(ctx, 0.3))
    entity_image = render_scene(objs, rng)
    trivial_kind = _pick(rng, TRIVIAL_IMAGES)
    trivial = trivial_image(trivial_kind, rng)
    out = []
    for setting in _settings(rng, ctx, linked):
        meta = _blank_meta("recall", ctx.split)
        textual, visual = RELATIONS[relation]
        if setting == "visual":
            q, image = visual, entity_image
            meta.update(reference="visual", needs_image=True, linked=linked)
        else:
            q = textual.format(entity=entity)
            image = trivial if setting == "text_only" else entity_image
            meta.update(reference="text", needs_image=False)
        if image is entity_image:
            meta.update(
                image_kind="scene",
                evidence_form="perceptual",
                image_label=entity,
                opacity=round(objs[0].opacity, 4),
                objects=_objects_meta(objs),
                counterfactual=cfs[0],
            )
        else:
            meta["image_kind"] = trivial_kind
        meta.update(entity=entity, setting=setting, group=group)
        out.append(Sample(q, _maybe_image(image, ctx), FACTS[relation][entity], None, meta))
    return out


def _gen_digit_arith(rng: np.random.Generator, ctx: _Ctx, group: str) -> list[Sample]:
    digit, operand = int(rng.integers(10)), int(rng.integers(10))
    linked = linked_digit(digit, operand)
    opacity = float(rng.uniform(*_vis(ctx, 0.3)))
    digit_image, _ = render_digit(digit, _pick(rng, COLOR_NAMES), opacity, rng)
    trivial_kind = _pick(rng, TRIVIAL_IMAGES)
    trivial = trivial_image(trivial_kind, rng)
    out = []
    for setting in _settings(rng, ctx, linked):
        meta = _blank_meta("digit_arith", ctx.split)
        if setting == "visual":
            q, image = f"what is the digit in the image plus {operand} ?", digit_image
            meta.update(reference="visual", needs_image=True, linked=linked)
        else:
            q = f"what is the digit {digit} plus {operand} ?"
            image = trivial if setting == "text_only" else digit_image
            meta.update(reference="text", needs_image=False)
        if image is digit_image:
            meta.update(image_kind="digit", image_label=str(digit), opacity=round(opacity, 4))
        else:
            meta["image_kind"] = trivial_kind
        meta.update(entity=str(digit), setting=setting, group=group)
        out.append(Sample(q, _maybe_image(image, ctx), str(digit + operand), None, meta))
    return out


def _label_image(
    rng: np.random.Generator,
    label: str,
    form: str,
    ctx: _Ctx,
    meta: dict[str, Any],
    lo: float = 0.3,
) -> Image.Image:
    """A perceptual (drawn) or propositional (written) image of ``label``, opacity in [lo, 1]."""
    if form == "perceptual":
        objs, _ = _scene(rng, [label], ctx.counterfactual_share, _vis(ctx, lo))
        meta.update(image_kind="scene", opacity=round(objs[0].opacity, 4))
        meta["objects"] = _objects_meta(objs)
        return render_scene(objs, rng)
    opacity = float(rng.uniform(*_vis(ctx, lo)))
    meta.update(image_kind="word", opacity=round(opacity, 4))
    return render_word(label, _pick(rng, COLOR_NAMES), opacity, rng)[0]


def _caption_question(label: str) -> str:
    return f"the caption says {label} . which object is in the image ?"


def _gen_caption(rng: np.random.Generator, ctx: _Ctx, group: str) -> list[Sample]:
    """A caption and an image that agree, or a caption with an uninformative image."""
    label = _pick(rng, SHAPE_KINDS)
    meta = _blank_meta("caption", ctx.split)
    meta.update(needs_image=False, text_label=label, entity=label, group=group)
    if ctx.text_only or rng.random() < 0.4:
        image = _irrelevant_image(rng, ctx, meta, allow_none=True, trivial_only=True)
    else:
        form = _pick(rng, ("perceptual", "propositional"))
        image = _label_image(rng, label, form, ctx, meta)
        meta.update(evidence_form=form, image_label=label)
    return [Sample(_caption_question(label), _maybe_image(image, ctx), label, None, meta)]


def _gen_conflict(rng: np.random.Generator, ctx: _Ctx, group: str) -> list[Sample]:
    """The caption asserts one label, the image shows another.

    The question asks what is in the image, so the image's label is the reference answer; the
    caption is a misleading hint. In val/test the opacity reaches down to 0.05, where the
    image barely shows.
    """
    image_label, text_label = (str(k) for k in rng.choice(SHAPE_KINDS, size=2, replace=False))
    form = _pick(rng, ("perceptual", "propositional"))
    meta = _blank_meta("conflict", ctx.split)
    meta.update(
        image_label=image_label,
        text_label=text_label,
        evidence_form=form,
        entity=image_label,
        group=group,
    )
    # training shows misleading captions only with visible images; evaluation goes down to
    # near-invisible ones, where the caption is the only evidence left
    image = _label_image(
        rng, image_label, form, ctx, meta, lo=0.3 if ctx.split == "train" else 0.05
    )
    return [Sample(_caption_question(text_label), image, image_label, None, meta)]


_GENERATORS: dict[str, _GroupFn] = {
    "color": _gen_color,
    "identify": _gen_identify,
    "count": _gen_count,
    "position": _gen_position,
    "digit": _gen_digit,
    "describe": _gen_describe,
    "arith": _gen_arith,
    "fact_color": _gen_fact_color,
    "recall": _gen_recall,
    "digit_arith": _gen_digit_arith,
    "caption": _gen_caption,
    "conflict": _gen_conflict,
}


def _check_qtypes(qtypes: Sequence[str]) -> tuple[str, ...]:
    bad = [q for q in qtypes if q not in QTYPES]
    if bad or not qtypes:
        raise ValueError(f"unknown question types {bad}; choose from {', '.join(QTYPES)}")
    return tuple(qtypes)


def demo_world(
    split: str = "test",
    n: int = 500,
    seed: int = 0,
    qtypes: Sequence[str] | None = None,
    counterfactual_share: float | None = None,
    start: int = 0,
    opacity: tuple[float, float] | None = None,
) -> list[Sample]:
    """Generate ``n`` samples of the demo world.

    Args:
        split: ``"train"`` draws question types at random from :data:`TRAIN_MIX`, one sample per
            draw, with prior-bearing objects in their canonical colour with probability
            :data:`PRIOR_STRENGTH`. ``"val"`` and ``"test"`` cycle through ``qtypes`` in turn; a
            colour draw yields both wordings (``plain``, ``anchored``) of one image and a reference
            draw its three settings (``text_only``, ``full_info``, ``visual``), sharing
            ``meta["group"]``.
        n: number of samples returned (the last group may be cut short).
        seed: the world seed; splits use disjoint random streams.
        qtypes: question types to include (default: all of :data:`QTYPES` in val/test, the
            training mixture in train; in train they restrict the mixture).
        counterfactual_share: share of prior-bearing objects drawn in a non-canonical colour
            (default ``1 - PRIOR_STRENGTH`` in train, :data:`EVAL_COUNTERFACTUAL_SHARE` otherwise).
        start: index of the first draw, for streaming (``start=k`` continues after ``k`` draws).
        opacity: ``(lo, hi)`` visibility range of the objects, digits and words the questions
            are about, overriding each type's default (colour questions: 0-1; most others:
            0.3-1). ``(0.05, 0.25)`` samples the band where the prior competes with weak evidence.

    Returns:
        Samples with PIL images, question, reference answer, a unique id and ``meta`` with every
        key of :data:`META_KEYS`. Conflict items answer with the image's label (the question asks
        what is in the image); ``meta["text_label"]`` is the caption's competing claim.
    """
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; choose from {', '.join(SPLITS)}")
    if n < 0 or start < 0:
        raise ValueError(f"n and start must be non-negative, got n={n}, start={start}")
    if counterfactual_share is None:
        counterfactual_share = (
            1.0 - PRIOR_STRENGTH if split == "train" else EVAL_COUNTERFACTUAL_SHARE
        )
    if not 0.0 <= counterfactual_share <= 1.0:
        raise ValueError(f"counterfactual_share must be in [0, 1], got {counterfactual_share}")
    if opacity is not None and not 0.0 <= opacity[0] <= opacity[1] <= 1.0:
        raise ValueError(f"opacity must be a range (lo, hi) with 0 <= lo <= hi <= 1, got {opacity}")
    ctx = _Ctx(split, seed, counterfactual_share, opacity=opacity)
    code = _SPLIT_CODE[split]
    out: list[Sample] = []
    if split == "train":
        mix = {q: TRAIN_MIX[q] for q in _check_qtypes(qtypes)} if qtypes else dict(TRAIN_MIX)
        if not any(mix.values()):
            raise ValueError(f"none of {qtypes} is in the training mixture {list(TRAIN_MIX)}")
        names, weights = _normalised(mix)
        i = start
        while len(out) < n:
            rng = np.random.default_rng([seed, code, i])
            qtype = names[int(rng.choice(len(names), p=weights))]
            out.extend(_emit(rng, ctx, qtype, f"{split}-{seed}-{i}"))
            i += 1
        return out[:n]
    order = _check_qtypes(qtypes) if qtypes else QTYPES
    i = start
    while len(out) < n:
        qtype = order[i % len(order)]
        k = i // len(order)  # draw index within this question type: stable when qtypes change
        rng = np.random.default_rng([seed, code, QTYPES.index(qtype), k])
        out.extend(_emit(rng, ctx, qtype, f"{split}-{seed}-{qtype}-{k}"))
        i += 1
    return out[:n]


def text_corpus(n: int, seed: int = 0, start: int = 0) -> list[Sample]:
    """Text-only training items for language pretraining (image ``None``), from :data:`TEXT_MIX`.

    Plain colour questions are answered with the canonical colour (and a random colour for kinds
    without a prior): the language prior as text states it.
    """
    ctx = _Ctx("train", seed, 0.0, text_only=True)
    names, weights = _normalised(TEXT_MIX)
    out: list[Sample] = []
    i = start
    while len(out) < n:
        rng = np.random.default_rng([seed, 97, i])
        qtype = names[int(rng.choice(len(names), p=weights))]
        for s in _emit(rng, ctx, qtype, f"text-{seed}-{i}"):
            # the text stage sees no image: drop labels that describe one
            s.meta.update(image_kind="none", objects=None, opacity=None, evidence_form=None)
            s.meta.update(image_label=None, counterfactual=False)
            out.append(s)
        i += 1
    return out[:n]


def _normalised(mix: dict[str, float]) -> tuple[list[str], np.ndarray]:
    names = [q for q, w in mix.items() if w > 0]
    w = np.array([mix[q] for q in names], dtype=np.float64)
    return names, w / w.sum()


def _emit(rng: np.random.Generator, ctx: _Ctx, qtype: str, group: str) -> list[Sample]:
    samples = _GENERATORS[qtype](rng, ctx, group)
    for j, s in enumerate(samples):
        s.id = group if len(samples) == 1 else f"{group}-{j}"
    return samples


def world_vocabulary() -> list[str]:
    """Every word the world's questions and answers can contain, sorted (fixed tokenizer vocab)."""
    words: set[str] = set()
    texts = [
        "what color is the object in the image ?",
        "which object is in the image ?",
        "how many objects are there ?",
        "what digit is in the image ?",
        "describe the image .",
        "what is the digit in the image plus 0 ?",
        "the caption says x . which object is in the image ?",
        "what color is a x usually ?",
        "where is the x ?",
        "what is 0 plus 0 ?",
        " , and ",
        *(t for pair in RELATIONS.values() for t in pair),
        *CELLS,
        *SHAPE_KINDS,
        *COLOR_NAMES,
        *NUMBER_WORDS,
        *(v for facts in FACTS.values() for v in facts.values()),
    ]
    for t in texts:
        words.update(t.replace("{entity}", "x").split())
    words.discard("x")
    return sorted(words)


__all__ = [
    "COLOR_NAMES",
    "EVAL_COUNTERFACTUAL_SHARE",
    "FACTS",
    "META_KEYS",
    "NUMBER_WORDS",
    "PLAIN_KINDS",
    "PRIOR_COLORS",
    "PRIOR_KINDS",
    "PRIOR_STRENGTH",
    "QTYPES",
    "REFERENCE_QTYPES",
    "RELATIONS",
    "SPLITS",
    "TEXT_MIX",
    "TEXT_QTYPES",
    "TRAIN_MIX",
    "VISION_QTYPES",
    "CONFLICT_QTYPES",
    "demo_world",
    "describe_answer",
    "linked_digit",
    "linked_recall",
    "text_corpus",
    "world_vocabulary",
]
