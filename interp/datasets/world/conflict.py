"""Modality conflict: a drawn object, a label written in an image and a caption disagree.

As in Tri-PvP ("Exposing Modality Bias in Omni-Modal Large Language Models through
Perceptual-Propositional Evidence Conflicts"): the answer follows the evidence with the largest
summed trust, which depends on the evidence form, its place in the prompt and its visibility
(:func:`conflict_answer`).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from ...samples import IMAGE_SLOT, Sample
from ..render import SHAPE_KINDS, render_scene, render_word
from .core import COLOR_NAMES, _blank_meta, _Ctx, _objects_meta, _pick, _scene, _vis

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
