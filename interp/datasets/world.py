"""The demo world: a seeded generator of small images with questions, answers and labels.

The world has ten object kinds drawn as silhouettes, eight colours, digits and written words, and
plants several priors whose strength is known, so that every measurement of the library can be
checked against ground truth:

- **colour prior** (language prior): five kinds have a canonical colour (the banana is yellow, the
  leaf green, the carrot orange, the heart red, the drop blue); in the training split they are drawn
  in that colour with probability :data:`PRIOR_STRENGTH`, in the evaluation splits a controlled
  share is counterfactual. Colour questions and descriptions that name the kind leak the prior.
- **co-occurrence prior** (object hallucination, as measured by POPE: Li et al., "Evaluating Object
  Hallucination in Large Vision-Language Models", arXiv:2305.10355): in the training scenes of
  existence questions a kind brings its partner (:data:`CO_OCCURRENCE`, e.g. the banana the leaf)
  with probability :data:`CO_OCCURRENCE_STRENGTH`, and some kinds are more frequent than others
  (:data:`KIND_FREQUENCY`). Evaluation asks about absent kinds drawn three ways: random, popular,
  adversarial (the partner of a present kind).
- **modality trust** (conflicts between a perceptual image, a propositional image and a caption,
  as in Tri-PvP: "Exposing Modality Bias in Omni-Modal Large Language Models through
  Perceptual-Propositional Evidence Conflicts"): the answer follows the evidence with the largest
  summed trust, which depends on the evidence form, its place in the prompt and its visibility
  (:func:`conflict_answer`).
- **wordings**: every vision question type is asked in four wordings (:data:`VARIANTS`); two name
  the object or offer two options and so leak answer information to a reader without the image.
- **reference**: every kind is an entity with two facts, every digit can be added to, every kind
  name is a word with a letter count; each is asked by naming the entity (textual reference) or as
  "the object / digit / word in the image" (visual reference), three families.

See :func:`demo_world` for the question types and :data:`META_KEYS` for the labels. Generation is by
item index from ``numpy.random.default_rng([seed, split, ...])``: the same ``(split, seed, start,
n)`` always gives the same samples, and a longer request extends a shorter one without changing it.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from PIL import Image

from ..samples import IMAGE_SLOT, Sample
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
# Both spellings occur in the world's questions ("what colour is the banana ?"), at random.
COLOR_WORDS: tuple[str, ...] = ("color", "colour")
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

# ---------------------------------------------------------------------------------------------
# object existence (POPE)

CO_OCCURRENCE: dict[str, str] = {
    "banana": "leaf",
    "leaf": "banana",
    "carrot": "heart",
    "heart": "carrot",
    "drop": "cross",
    "cross": "drop",
    "square": "diamond",
    "diamond": "square",
}
"""Partner of each kind in the training scenes of existence questions (symmetric)."""
# Probability that a kind drawn into a training existence scene brings its partner along.
CO_OCCURRENCE_STRENGTH = 0.9
# Opacity range of a partner brought into a training existence scene (other objects: 0.1-1).
PARTNER_OPACITY = (0.0, 0.6)
KIND_FREQUENCY: dict[str, float] = {k: 1.0 for k in SHAPE_KINDS} | {"circle": 4.0, "triangle": 3.0}
"""Relative frequency of each kind in the training scenes of existence questions."""
POPULAR_KINDS: tuple[str, ...] = ("circle", "triangle")
"""The most frequent kinds, most frequent first (the candidates of POPE's popular negatives)."""
POPE_NEGATIVES: tuple[str, ...] = ("random", "popular", "adversarial")

# ---------------------------------------------------------------------------------------------
# wordings (no-image ablation)

VARIANTS: tuple[str, ...] = ("plain", "polite", "anchored", "terse")
"""Wordings of the vision questions: ``plain`` and ``polite`` name the object (or offer two
options), ``anchored`` refers only to the image, ``terse`` is one or two words."""
NAMING_VARIANTS: tuple[str, ...] = ("plain", "polite")
WORDED_QTYPES: tuple[str, ...] = ("color", "identify", "count", "position", "digit", "describe")
CATEGORIES: dict[str, str] = {
    "color": "attribute",
    "identify": "recognition",
    "count": "counting",
    "position": "spatial",
    "digit": "reading",
    "describe": "description",
    "exist": "existence",
}
"""Question category (``meta["category"]``) of each vision question type."""

# ---------------------------------------------------------------------------------------------
# reference families (textual vs visual reference)

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

# ---------------------------------------------------------------------------------------------
# modality conflict (three evidence sources)

SOURCES: tuple[str, ...] = ("perceptual", "propositional", "text")
"""Evidence sources of a conflict item: the drawn object, a label written in an image, a caption."""
SOURCE_TRUST: dict[str, float] = {"perceptual": 1.0, "propositional": 0.8, "text": 0.6}
POSITION_TRUST: tuple[float, ...] = (0.0, 0.15, 0.3)
"""Trust added to a source by its place in the prompt (first, second, last before the question)."""
FULL_VISIBILITY = 0.3
"""Opacity from which an image counts fully; below it its trust shrinks in proportion."""
AGREEMENTS: tuple[str, ...] = ("all_agree", "one_disagrees", "all_differ")
CONFLICT_ORDERS: tuple[tuple[str, ...], ...] = tuple(itertools.permutations(SOURCES))


def conflict_answer(labels: dict[str, str], order: Sequence[str], opacity: dict[str, float]) -> str:
    """The world's answer to a conflict item: the label with the largest summed trust.

    ``trust(s) = (SOURCE_TRUST[s] + POSITION_TRUST[position of s]) * visibility(s)`` with
    ``visibility = min(1, opacity / FULL_VISIBILITY)`` for an image and 1 for the caption;
    ``score(label) = sum of trust(s) over the sources s showing label``; ties go to the label
    shown last. With every image visible two agreeing sources always outweigh the third; when all
    differ the drawn object wins unless the written label comes last and the drawn object first.
    """
    score: dict[str, float] = {}
    last: dict[str, int] = {}
    for pos, src in enumerate(order):
        vis = 1.0 if src == "text" else min(1.0, opacity[src] / FULL_VISIBILITY)
        label = labels[src]
        score[label] = score.get(label, 0.0) + (SOURCE_TRUST[src] + POSITION_TRUST[pos]) * vis
        last[label] = pos
    return max(score, key=lambda lab: (round(score[lab], 9), last[lab]))


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


# ---------------------------------------------------------------------------------------------
# question types

VISION_QTYPES: tuple[str, ...] = (
    "color",
    "identify",
    "count",
    "position",
    "digit",
    "describe",
    "exist",
)
TEXT_QTYPES: tuple[str, ...] = ("arith", "fact_color")
REFERENCE_QTYPES: tuple[str, ...] = ("recall", "digit_arith", "letters")
CONFLICT_QTYPES: tuple[str, ...] = ("conflict",)
QTYPES: tuple[str, ...] = VISION_QTYPES + TEXT_QTYPES + REFERENCE_QTYPES + CONFLICT_QTYPES

# Training mixture of the joint image-text stage (share of training samples).
TRAIN_MIX: dict[str, float] = {
    "color": 0.13,
    "identify": 0.08,
    "count": 0.04,
    "position": 0.04,
    "digit": 0.05,
    "describe": 0.12,
    "exist": 0.14,
    "arith": 0.02,
    "fact_color": 0.02,
    "recall": 0.07,
    "digit_arith": 0.07,
    "letters": 0.06,
    "conflict": 0.16,
}
# Text-only corpus (language pretraining, and rehearsed during visual training): what text can
# answer, including naming wordings of vision questions answered as text alone would: the prior
# of a named kind, one of two offered options.
TEXT_MIX: dict[str, float] = {
    "color": 0.12,  # naming wordings answered by the prior alone: the planted language prior
    "describe": 0.08,  # named objects described with their canonical colours
    "identify": 0.03,
    "count": 0.03,
    "position": 0.03,
    "digit": 0.03,
    "fact_color": 0.06,
    "arith": 0.10,
    "recall": 0.14,
    "digit_arith": 0.10,
    "letters": 0.10,
    "conflict": 0.15,  # the caption alone
}

META_KEYS: tuple[str, ...] = (
    "qtype",
    "category",
    "variant",
    "leaks",
    "options",
    "needs_image",
    "counterfactual",
    "prior_answer",
    "entity",
    "reference",
    "setting",
    "family",
    "linked",
    "group",
    "image_kind",
    "evidence_form",
    "image_label",
    "propositional_label",
    "text_label",
    "caption",
    "order",
    "agreement",
    "odd_source",
    "source_opacity",
    "pope_negative",
    "opacity",
    "objects",
    "split",
)
"""Keys present in every sample's ``meta`` (``None`` where not applicable):

- ``qtype``: question type, one of :data:`QTYPES`.
- ``category``: the question category of a vision question (:data:`CATEGORIES`).
- ``variant``: the wording (:data:`VARIANTS`; existence questions: ``"plain"`` only).
- ``leaks``: the wording gives a reader without the image information toward the answer: it names
  a prior-bearing kind whose colour is asked, names the objects to describe, or offers two options.
- ``options``: the two answers a choice wording offers.
- ``needs_image``: the answer cannot be known from the text alone.
- ``counterfactual``: the image contradicts the planted prior: a prior-bearing object in a
  non-canonical colour (for descriptions: any object), or an absent partner asked about.
- ``prior_answer``: what the prior alone answers (the canonical colour, a description with
  canonical colours, ``"yes"`` for the partner of a present kind), ``None`` where there is none.
- ``entity``: the object kind, digit or word the question is about.
- ``reference``: ``"text"`` (the question names the entity) or ``"visual"`` (refers to the image).
- ``setting``: for reference items, ``"text_only"`` (trivial image), ``"full_info"`` (entity image
  and naming question) or ``"visual"`` (entity image and visual-reference question).
- ``family``: reference family (:data:`FAMILIES`): ``"facts"``, ``"arithmetic"``, ``"words"``.
- ``linked``: for visual-reference items, whether this combination was trained.
- ``group``: shared by the samples built from one draw (wordings, reference settings, POPE
  questions on one scene, input orders of one conflict).
- ``image_kind``: ``"scene"``, ``"digit"``, ``"word"``, ``"black"``, ``"white"``, ``"noise"``,
  ``"none"``, or for conflicts the kinds of both images in prompt order (``"scene+word"``).
- ``evidence_form``: ``"perceptual"`` (drawn object) or ``"propositional"`` (label written as text).
- ``image_label`` / ``propositional_label`` / ``text_label``: the label shown by the drawn object /
  written in an image / asserted by the caption.
- ``caption``: a conflict's text evidence exactly as it stands in the question.
- ``order``: conflict input order, the sources in prompt order joined by commas
  (``"text,perceptual,propositional"``); the question always comes last.
- ``agreement``: ``"all_agree"``, ``"one_disagrees"`` or ``"all_differ"``; ``odd_source``: the
  source that disagrees.
- ``source_opacity``: opacity of each image source of a conflict, ``{"perceptual": .., ...}``.
- ``pope_negative``: for existence questions, how an absent kind was drawn (``"random"``,
  ``"popular"``, ``"adversarial"``); ``None`` for a present kind.
- ``opacity``: visibility in [0, 1] of the object the question is about (lowest over a scene).
- ``objects``: scene content, a list of ``{"kind", "color", "cell", "opacity"}``.
- ``split``: ``"train"``, ``"val"`` or ``"test"``.
"""


@dataclass(frozen=True)
class _Ctx:
    split: str
    seed: int
    counterfactual_share: float
    text_only: bool = False
    opacity: tuple[float, float] | None = None  # overrides every question type's visibility range

    @property
    def train(self) -> bool:
        return self.split == "train"


def _blank_meta(qtype: str, split: str) -> dict[str, Any]:
    meta: dict[str, Any] = dict.fromkeys(META_KEYS)
    meta.update(qtype=qtype, split=split, counterfactual=False, needs_image=True)
    meta["category"] = CATEGORIES.get(qtype)
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
    cells: Sequence[int] | None = None,
) -> tuple[list[SceneObject], list[bool]]:
    lo, hi = vis
    if cells is None:
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
) -> Image.Image | None:
    """An image unrelated to a text-answerable question (or none, in training only)."""
    r = rng.random()
    if allow_none and ctx.train and r < 0.15:
        meta["image_kind"] = "none"
        return None
    if r < 0.45:
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


# Each group generator returns one or more samples drawn from one random draw.
_GroupFn = Callable[[np.random.Generator, _Ctx, str], list[Sample]]


def _color_question(variant: str, kind: str, cw: str) -> str:
    return {
        "plain": f"what {cw} is the {kind} ?",
        "polite": f"please tell me the {cw} of the {kind} .",
        "anchored": f"what {cw} is the object in the image ?",
        "terse": f"{cw} ?",
    }[variant]


def _gen_color(rng: np.random.Generator, ctx: _Ctx, group: str) -> list[Sample]:
    kind = _pick(rng, SHAPE_KINDS)
    objs, cfs = _scene(rng, [kind], ctx.counterfactual_share, _vis(ctx, 0.0))
    obj = objs[0]
    image = render_scene(objs, rng)
    cw = _pick(rng, COLOR_WORDS)
    out = []
    for variant in _variants(rng, ctx):
        answer = obj.color
        if ctx.text_only:  # text states the prior of a named kind (no prior: the drawn colour)
            answer = PRIOR_COLORS.get(kind, obj.color)
        meta = _blank_meta("color", ctx.split)
        meta.update(
            variant=variant,
            leaks=variant in NAMING_VARIANTS and kind in PRIOR_COLORS,
            counterfactual=cfs[0],
            prior_answer=PRIOR_COLORS.get(kind),
            entity=kind,
            group=group,
            image_kind="scene",
            evidence_form="perceptual",
            image_label=kind,
            opacity=round(obj.opacity, 4),
            objects=_objects_meta(objs),
        )
        q = _color_question(variant, kind, cw)
        out.append(Sample(q, _maybe_image(image, ctx), answer, None, meta))
    return out


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


def _gen_identify(rng: np.random.Generator, ctx: _Ctx, group: str) -> list[Sample]:
    kind = _pick(rng, SHAPE_KINDS)
    common: dict[str, Any] = {"entity": kind, "image_label": kind, "group": group}
    if rng.random() < 0.5:
        objs, cfs = _scene(rng, [kind], ctx.counterfactual_share, _vis(ctx, 0.15))
        image = render_scene(objs, rng)
        common.update(
            evidence_form="perceptual",
            image_kind="scene",
            opacity=round(objs[0].opacity, 4),
            objects=_objects_meta(objs),
            counterfactual=cfs[0],
        )
    else:
        opacity = float(rng.uniform(*_vis(ctx, 0.3)))
        image, _ = render_word(kind, _pick(rng, COLOR_NAMES), opacity, rng)
        common.update(evidence_form="propositional", image_kind="word", opacity=round(opacity, 4))
    return _worded(rng, ctx, "identify", image, kind, SHAPE_KINDS, common)


def _gen_count(rng: np.random.Generator, ctx: _Ctx, group: str) -> list[Sample]:
    n = int(rng.integers(1, len(CELLS) + 1))
    kinds = [_pick(rng, SHAPE_KINDS) for _ in range(n)]
    objs, _ = _scene(rng, kinds, ctx.counterfactual_share, _vis(ctx, 0.3))
    common = {
        "group": group,
        "image_kind": "scene",
        "opacity": round(min(o.opacity for o in objs), 4),
        "objects": _objects_meta(objs),
    }
    counts = [str(i) for i in range(1, len(CELLS) + 1)]
    return _worded(rng, ctx, "count", render_scene(objs, rng), str(n), counts, common)


def _gen_position(rng: np.random.Generator, ctx: _Ctx, group: str) -> list[Sample]:
    kind = _pick(rng, SHAPE_KINDS)
    objs, cfs = _scene(rng, [kind], ctx.counterfactual_share, _vis(ctx, 0.3))
    common = {
        "entity": kind,
        "group": group,
        "image_kind": "scene",
        "opacity": round(objs[0].opacity, 4),
        "objects": _objects_meta(objs),
        "counterfactual": cfs[0],
    }
    image = render_scene(objs, rng)
    return _worded(rng, ctx, "position", image, CELLS[objs[0].cell], CELLS, common, kind)


def _gen_digit(rng: np.random.Generator, ctx: _Ctx, group: str) -> list[Sample]:
    digit = int(rng.integers(10))
    opacity = float(rng.uniform(*_vis(ctx, 0.3)))
    image, _ = render_digit(digit, _pick(rng, COLOR_NAMES), opacity, rng)
    common = {
        "entity": str(digit),
        "group": group,
        "image_kind": "digit",
        "image_label": str(digit),
        "opacity": round(opacity, 4),
    }
    digits = [str(d) for d in range(10)]
    return _worded(rng, ctx, "digit", image, str(digit), digits, common)


def describe_answer(objects: Sequence[tuple[str, str]]) -> str:
    """Canonical description of ``(kind, color)`` pairs in reading order.

    ``"the banana is yellow"``, ``"the banana is yellow and the circle is red"`` (4 or 9 tokens).
    """
    return " and ".join(f"the {k} is {c}" for k, c in objects)


_PAIR = re.compile(r"the (\w+) is (\w+)")


def parse_description(text: str) -> list[tuple[str, str]]:
    """``(kind, color)`` pairs stated by a description (inverse of :func:`describe_answer`)."""
    return _PAIR.findall(text)


def _describe_question(variant: str, kinds: Sequence[str]) -> str:
    named = " and ".join(f"the {k}" for k in kinds)
    return {
        "plain": f"describe {named} .",
        "polite": f"please describe {named} .",
        "anchored": "describe the image .",
        "terse": "describe .",
    }[variant]


def _gen_describe(rng: np.random.Generator, ctx: _Ctx, group: str) -> list[Sample]:
    n = int(rng.integers(1, 3))
    kinds = list(rng.choice(SHAPE_KINDS, size=n, replace=False))
    # faint objects included: where colour evidence is weak the prior can drive the description
    objs, cfs = _scene(rng, kinds, ctx.counterfactual_share, _vis(ctx, 0.1))
    ordered = sorted(objs, key=lambda o: o.cell)
    answer = describe_answer([(o.kind, o.color) for o in ordered])
    prior = describe_answer([(o.kind, PRIOR_COLORS.get(o.kind, o.color)) for o in ordered])
    has_prior = any(o.kind in PRIOR_COLORS for o in objs)
    image = render_scene(objs, rng)
    out = []
    for variant in _variants(rng, ctx):
        if ctx.text_only:  # text states the prior of the named kinds
            answer = prior
        meta = _blank_meta("describe", ctx.split)
        meta.update(
            variant=variant,
            leaks=variant in NAMING_VARIANTS,
            counterfactual=any(cfs),
            prior_answer=prior if has_prior else None,
            group=group,
            image_kind="scene",
            opacity=round(min(o.opacity for o in objs), 4),
            objects=_objects_meta(ordered),
        )
        q = _describe_question(variant, [o.kind for o in ordered])
        out.append(Sample(q, _maybe_image(image, ctx), answer, None, meta))
    return out


def _existence_kinds_train(rng: np.random.Generator) -> tuple[list[str], list[bool]]:
    """Kinds of a training existence scene: 1-3 draws by :data:`KIND_FREQUENCY`, each bringing
    its partner with probability :data:`CO_OCCURRENCE_STRENGTH` (at most four objects), and for
    each kind whether it came along as a partner."""
    n = int(rng.integers(1, 4))
    kinds: list[str] = []
    brought: list[bool] = []
    while len(kinds) < n:
        free = [k for k in SHAPE_KINDS if k not in kinds]
        w = np.array([KIND_FREQUENCY[k] for k in free])
        kind = free[int(rng.choice(len(free), p=w / w.sum()))]
        kinds.append(kind)
        brought.append(False)
        partner = CO_OCCURRENCE.get(kind)
        if partner and partner not in kinds and len(kinds) < len(CELLS):
            if rng.random() < CO_OCCURRENCE_STRENGTH:
                kinds.append(partner)
                brought.append(True)
    return kinds[: len(CELLS)], brought[: len(CELLS)]


def _existence_kinds_eval(rng: np.random.Generator) -> list[str]:
    """Kinds of an evaluation existence scene: 1-3 kinds without co-occurrence, one of them with
    an absent partner (so an adversarial negative exists) and one popular kind absent at least."""
    n = int(rng.integers(1, 4))
    first = _pick(rng, [k for k in SHAPE_KINDS if k in CO_OCCURRENCE])
    while True:
        rest = [k for k in SHAPE_KINDS if k not in (first, CO_OCCURRENCE[first])]
        kinds = [first, *rng.choice(rest, size=n - 1, replace=False).tolist()]
        if not all(p in kinds for p in POPULAR_KINDS):
            return [str(k) for k in kinds]


def _gen_exist(rng: np.random.Generator, ctx: _Ctx, group: str) -> list[Sample]:
    """POPE-style existence questions: ``is there a <kind> in the image ?`` -> ``yes`` / ``no``.

    Training: one question per scene, a present kind or an absent one (uniform) with equal
    probability; objects have opacity 0.1-1 except partners brought along by co-occurrence,
    :data:`PARTNER_OPACITY` (often faint, down to invisible). Evaluation (objects 0.3-1): one
    present kind and three absent ones on the same scene, drawn as in POPE: ``random`` (uniform
    over the absent kinds that are neither popular nor the partner of a present kind),
    ``popular`` (the most frequent absent kind of :data:`POPULAR_KINDS`) and ``adversarial``
    (the absent partner of a present kind).
    """
    if ctx.train:
        kinds, brought = _existence_kinds_train(rng)
    else:
        kinds, brought = _existence_kinds_eval(rng), []
    objs, _ = _scene(rng, kinds, ctx.counterfactual_share, _vis(ctx, 0.1 if ctx.train else 0.3))
    if ctx.opacity is None:
        # in training a partner that came along is often faint (in the background), down to
        # invisible: where the co-occurrence prior can act; evaluation scenes are visible
        objs = [
            replace(o, opacity=float(rng.uniform(*PARTNER_OPACITY))) if b else o
            for o, b in zip(objs, brought + [False] * (len(objs) - len(brought)), strict=True)
        ]
    image = render_scene(objs, rng)
    absent = [k for k in SHAPE_KINDS if k not in kinds]
    partners = {CO_OCCURRENCE[k] for k in kinds if k in CO_OCCURRENCE}
    asked: list[tuple[str, str | None]] = []  # (kind, pope_negative)
    if ctx.train:
        if rng.random() < 0.5:
            asked.append((_pick(rng, kinds), None))
        else:
            asked.append((_pick(rng, absent), "random"))
    else:
        asked.append((_pick(rng, kinds), None))
        plain = [k for k in absent if k not in partners and k not in POPULAR_KINDS]
        asked.append((_pick(rng, plain), "random"))
        asked.append((next(k for k in POPULAR_KINDS if k in absent), "popular"))
        asked.append((_pick(rng, sorted(p for p in partners if p in absent)), "adversarial"))
    by_kind = {o.kind: o for o in objs}
    out = []
    for kind, negative in asked:
        present = kind in by_kind
        cooccurs = kind in partners  # the co-occurrence prior says yes
        meta = _blank_meta("exist", ctx.split)
        meta.update(
            variant="plain",
            leaks=False,
            entity=kind,
            pope_negative=negative if not present else None,
            prior_answer="yes" if cooccurs else None,
            counterfactual=cooccurs and not present,
            group=group,
            image_kind="scene",
            evidence_form="perceptual",
            opacity=round(by_kind[kind].opacity, 4) if present else None,
            objects=_objects_meta(sorted(objs, key=lambda o: o.cell)),
        )
        q = f"is there a {kind} in the image ?"
        out.append(Sample(q, image, "yes" if present else "no", None, meta))
    return out


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
    q = f"what {_pick(rng, COLOR_WORDS)} is a {kind} usually ?"
    return [Sample(q, _maybe_image(image, ctx), PRIOR_COLORS[kind], None, meta)]


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


CAPTION = "the caption says {label} ."
CONFLICT_QUESTION = "which object is it ?"


def _conflict_prompt(order: Sequence[str], text_label: str) -> str:
    """The question of a conflict item: sources in ``order`` (images as slots), question last."""
    parts = [CAPTION.format(label=text_label) if s == "text" else IMAGE_SLOT for s in order]
    return " ".join([*parts, CONFLICT_QUESTION])


def _gen_conflict(rng: np.random.Generator, ctx: _Ctx, group: str) -> list[Sample]:
    """A drawn object (perceptual image), a written label (propositional image) and a caption.

    The labels all agree, one source disagrees, or all differ. Training shows one input order per
    draw; evaluation shows the same images and labels in all six orders. The answer is
    :func:`conflict_answer` (the world's trust rule).
    """
    a, b, c = (str(k) for k in rng.choice(SHAPE_KINDS, size=3, replace=False))
    agreement = _pick(rng, AGREEMENTS)
    odd = None
    if agreement == "all_agree":
        labels = dict.fromkeys(SOURCES, a)
    elif agreement == "one_disagrees":
        odd = _pick(rng, SOURCES)
        labels = {s: (b if s == odd else a) for s in SOURCES}
    else:
        labels = dict(zip(SOURCES, (a, b, c), strict=True))
    if ctx.text_only:  # the caption alone
        meta = _blank_meta("conflict", ctx.split)
        caption = CAPTION.format(label=labels["text"])
        meta.update(
            needs_image=False, text_label=labels["text"], caption=caption, group=group, order="text"
        )
        q = f"{caption} {CONFLICT_QUESTION}"
        return [Sample(q, None, labels["text"], None, meta)]
    objs, _ = _scene(rng, [labels["perceptual"]], ctx.counterfactual_share, _vis(ctx, 0.0))
    drawn = render_scene(objs, rng)
    word_opacity = float(rng.uniform(*_vis(ctx, 0.0)))
    written, _ = render_word(labels["propositional"], _pick(rng, COLOR_NAMES), word_opacity, rng)
    opacity = {"perceptual": objs[0].opacity, "propositional": word_opacity}
    orders = [_pick(rng, CONFLICT_ORDERS)] if ctx.train else list(CONFLICT_ORDERS)
    out = []
    for order in orders:
        images = [drawn if s == "perceptual" else written for s in order if s != "text"]
        image_kind = "+".join(
            "scene" if s == "perceptual" else "word" for s in order if s != "text"
        )
        answer = conflict_answer(labels, order, opacity)
        meta = _blank_meta("conflict", ctx.split)
        meta.update(
            needs_image=answer != labels["text"],
            group=group,
            image_kind=image_kind,
            image_label=labels["perceptual"],
            propositional_label=labels["propositional"],
            text_label=labels["text"],
            caption=CAPTION.format(label=labels["text"]),
            order=",".join(order),
            agreement=agreement,
            odd_source=odd,
            source_opacity={k: round(v, 4) for k, v in opacity.items()},
            opacity=round(objs[0].opacity, 4),
            objects=_objects_meta(objs),
        )
        q = _conflict_prompt(order, labels["text"])
        out.append(Sample(q, images, answer, None, meta))
    return out


_GENERATORS: dict[str, _GroupFn] = {
    "color": _gen_color,
    "identify": _gen_identify,
    "count": _gen_count,
    "position": _gen_position,
    "digit": _gen_digit,
    "describe": _gen_describe,
    "exist": _gen_exist,
    "arith": _gen_arith,
    "fact_color": _gen_fact_color,
    "recall": _gen_recall,
    "digit_arith": _gen_digit_arith,
    "letters": _gen_letters,
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
            draw (one wording, one reference setting, one input order), with prior-bearing objects
            in their canonical colour with probability :data:`PRIOR_STRENGTH`. ``"val"`` and
            ``"test"`` cycle through ``qtypes`` in turn, and one draw yields every wording of a
            vision question (:data:`VARIANTS`) on one image, the three settings of a reference
            question (``text_only``, ``full_info``, ``visual``), one present and three absent
            kinds of a POPE scene, or a conflict in all six input orders, sharing ``meta["group"]``.
        n: number of samples returned (the last group may be cut short).
        seed: the world seed; splits use disjoint random streams.
        qtypes: question types to include (default: all of :data:`QTYPES` in val/test, the
            training mixture in train; in train they restrict the mixture).
        counterfactual_share: share of prior-bearing objects drawn in a non-canonical colour
            (default ``1 - PRIOR_STRENGTH`` in train, :data:`EVAL_COUNTERFACTUAL_SHARE` otherwise).
        start: index of the first draw, for streaming (``start=k`` continues after ``k`` draws).
        opacity: ``(lo, hi)`` visibility range of the objects, digits and words the questions
            are about, overriding each type's default (colour questions and conflicts: 0-1;
            descriptions and training existence scenes 0.1-1; most others: 0.3-1).
            ``(0.05, 0.25)`` samples the band where the prior competes with weak evidence.

    Returns:
        Samples with PIL images (a list of two for conflicts, placed by ``{image}`` slots in the
        question), question, reference answer, a unique id and ``meta`` with every key of
        :data:`META_KEYS`.
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

    Colour questions and descriptions that name the kind are answered with the canonical colour
    (the language prior as text states it; kinds without a prior get a random colour); choice
    wordings of vision questions with one of their two options at random. These answers are what
    text alone says, not labels of any image.
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


def generation_label(text: str, meta: dict[str, Any]) -> str | None:
    """Whether a generated answer follows the prior or the image, from ``meta`` alone.

    For items whose image contradicts the prior (``meta["counterfactual"]``): ``"prior_driven"``
    when the answer states what the prior says where the image says otherwise (a counterfactual
    object's canonical colour in a description or colour answer, ``yes`` for an absent partner),
    ``"grounded"`` when it states what the image shows, ``"other"`` otherwise (e.g. a description
    with the wrong objects or another colour). ``None`` for items without a counterfactual.
    """
    if not meta.get("counterfactual") or meta.get("prior_answer") is None:
        return None
    said = " ".join(text.split())
    if meta["qtype"] == "describe":
        pairs = parse_description(said)
        objs = meta["objects"] or []
        if [k for k, _ in pairs] != [o["kind"] for o in objs]:
            return "other"
        cf = [
            (c, o)
            for (_, c), o in zip(pairs, objs, strict=True)
            if o["kind"] in PRIOR_COLORS and o["color"] != PRIOR_COLORS[o["kind"]]
        ]
        if any(c == PRIOR_COLORS[o["kind"]] for c, o in cf):
            return "prior_driven"
        if all(c == o["color"] for c, o in cf):
            return "grounded"
        return "other"
    if said == meta["prior_answer"]:
        return "prior_driven"
    objs = meta.get("objects") or []
    grounded = {o["color"] for o in objs if o["kind"] == meta.get("entity")}
    if meta["qtype"] == "exist":
        grounded = {"no"}
    return "grounded" if said in grounded else "other"


_TEMPLATES: tuple[str, ...] = (
    "which object is in the image ? object ? how many objects are in the image ? how many ?",
    "where is the object in the image ? where ? what digit is in the image ? digit ?",
    "please tell me if the object is a or the digit is there are . at the",
    "describe the image . describe . please and",
    "is there a in the image ? yes no",
    "what is the digit in the image plus ? what is plus ? usually",
    "how many letters are in the word in the image ?",
    "the caption says . which object is it ?",
)


def world_vocabulary() -> list[str]:
    """Every word the world's questions and answers can contain, sorted (fixed tokenizer vocab)."""
    words: set[str] = set()
    texts = [
        *_TEMPLATES,
        *(_color_question(v, "x", cw) for v in VARIANTS for cw in COLOR_WORDS),
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
    "AGREEMENTS",
    "CATEGORIES",
    "COLOR_NAMES",
    "COLOR_WORDS",
    "CONFLICT_ORDERS",
    "CONFLICT_QTYPES",
    "CO_OCCURRENCE",
    "CO_OCCURRENCE_STRENGTH",
    "EVAL_COUNTERFACTUAL_SHARE",
    "FACTS",
    "FAMILIES",
    "FULL_VISIBILITY",
    "IMAGE_SLOT",
    "KIND_FREQUENCY",
    "META_KEYS",
    "NAMING_VARIANTS",
    "NUMBER_WORDS",
    "PARTNER_OPACITY",
    "PLAIN_KINDS",
    "POPE_NEGATIVES",
    "POPULAR_KINDS",
    "POSITION_TRUST",
    "PRIOR_COLORS",
    "PRIOR_KINDS",
    "PRIOR_STRENGTH",
    "QTYPES",
    "REFERENCE_QTYPES",
    "RELATIONS",
    "SOURCES",
    "SOURCE_TRUST",
    "SPLITS",
    "TEXT_MIX",
    "TEXT_QTYPES",
    "TRAIN_MIX",
    "VARIANTS",
    "VISION_QTYPES",
    "WORDED_QTYPES",
    "conflict_answer",
    "demo_world",
    "describe_answer",
    "generation_label",
    "linked_digit",
    "linked_recall",
    "linked_word",
    "parse_description",
    "text_corpus",
    "world_vocabulary",
]
