"""The demo world's entry points: question types, mixtures, generation and answer labelling.

:func:`demo_world` and :func:`text_corpus` draw each item from its own random stream
(``numpy.random.default_rng([seed, split, ...])``) and hand it to the generator of its question
type; :func:`generation_label` reads a generated answer against ``meta``; :func:`world_vocabulary`
lists every word the world can say.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...samples import Sample
from ..render import CELLS, SHAPE_KINDS
from .conflict import _gen_conflict
from .core import (
    _SPLIT_CODE,
    COLOR_NAMES,
    COLOR_WORDS,
    EVAL_COUNTERFACTUAL_SHARE,
    PRIOR_COLORS,
    PRIOR_STRENGTH,
    SPLITS,
    _Ctx,
    _GroupFn,
)
from .existence import _gen_exist
from .motion import DIRECTIONS, MOTION_QUESTIONS, _gen_motion, describe_motion
from .perception import (
    _gen_color,
    _gen_count,
    _gen_describe,
    _gen_digit,
    _gen_identify,
    _gen_position,
    parse_description,
)
from .reference import FACTS, NUMBER_WORDS, RELATIONS, _gen_digit_arith, _gen_letters, _gen_recall
from .text import _gen_arith, _gen_fact_color
from .trimodal import HEAR_QUESTION, TRI_QUESTION, _gen_hear, _gen_trimodal
from .wordings import VARIANTS, _color_question

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
V3_QTYPES: tuple[str, ...] = ("trimodal", "hear", "motion")
"""World-v3 question types (audio and video): generated only when asked for by name, from their
own random streams, so that every request without them returns exactly the items it always did."""
ALL_QTYPES: tuple[str, ...] = QTYPES + V3_QTYPES
_V3_STREAM = 1000  # offset of the v3 types' random streams

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
# Training mixture of the v3 types, used when a training request names them.
V3_TRAIN_MIX: dict[str, float] = {"trimodal": 0.5, "hear": 0.2, "motion": 0.3}
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


_V3_GENERATORS = {"trimodal": _gen_trimodal, "hear": _gen_hear, "motion": _gen_motion}


def _check_qtypes(qtypes: Sequence[str]) -> tuple[str, ...]:
    bad = [q for q in qtypes if q not in ALL_QTYPES]
    if bad or not qtypes:
        raise ValueError(f"unknown question types {bad}; choose from {', '.join(ALL_QTYPES)}")
    return tuple(qtypes)


FAINT = (0.05, 0.25)
"""An opacity band (``demo_world(..., opacity=FAINT)``) of objects visible, but faintly enough for
a language prior to matter: above it the demo models answer colour questions almost perfectly
with or without a prior (the faint-colour items of the smol prior tables, the flow and
where-in-the-image notebooks)."""


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
            training mixture in train; in train they restrict the mixture). The world-v3 types
            of :data:`V3_QTYPES` (``trimodal``: image + audio + caption conflicts, ``hear``: one
            audio clip, ``motion``: videos) come only when named here (``V3_QTYPES`` asks for
            all three); they draw from their own random streams (a training request that names
            one uses its own stream for every draw, weighted by :data:`V3_TRAIN_MIX` for them),
            so the items of every other request are unchanged.
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
        if qtypes:
            mix = {q: TRAIN_MIX.get(q) or V3_TRAIN_MIX.get(q, 0.0) for q in _check_qtypes(qtypes)}
        else:
            mix = dict(TRAIN_MIX)
        if not any(mix.values()):
            raise ValueError(f"none of {qtypes} is in the training mixture {list(TRAIN_MIX)}")
        names, weights = _normalised(mix)
        v3 = [_V3_STREAM] if any(q in V3_QTYPES for q in names) else []
        i = start
        while len(out) < n:
            rng = np.random.default_rng([seed, code, *v3, i])
            qtype = names[int(rng.choice(len(names), p=weights))]
            out.extend(_emit(rng, ctx, qtype, f"{split}-{seed}-{i}", i))
            i += 1
        return out[:n]
    order = _check_qtypes(qtypes) if qtypes else QTYPES
    i = start
    while len(out) < n:
        qtype = order[i % len(order)]
        k = i // len(order)  # draw index within this question type: stable when qtypes change
        stream = QTYPES.index(qtype) if qtype in QTYPES else _V3_STREAM + V3_QTYPES.index(qtype)
        rng = np.random.default_rng([seed, code, stream, k])
        out.extend(_emit(rng, ctx, qtype, f"{split}-{seed}-{qtype}-{k}", k))
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


def _emit(
    rng: np.random.Generator, ctx: _Ctx, qtype: str, group: str, index: int = 0
) -> list[Sample]:
    if qtype in _V3_GENERATORS:
        samples = _V3_GENERATORS[qtype](rng, ctx, group, index)
    else:
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


def world_vocabulary(v3: bool = False) -> list[str]:
    """Every word the world's questions and answers can contain, sorted (fixed tokenizer vocab).

    ``v3=True`` adds the words of the :data:`V3_QTYPES` questions and answers (the demo model's
    vocabulary is the default list, unchanged)."""
    words: set[str] = set()
    if v3:
        words.update(world_vocabulary())
        v3_texts = [*MOTION_QUESTIONS.values(), *DIRECTIONS, TRI_QUESTION, HEAR_QUESTION]
        v3_texts += [describe_motion("move", ["x"], "x"), describe_motion("appear", ["x", "x"])]
        for t in v3_texts:
            words.update(t.replace("{kind}", "x").split())
        words.discard("x")
        return sorted(words)
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
