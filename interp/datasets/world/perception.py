"""Perception questions on one image: colour, identity, count, position, digit, description.

Each draws one image and asks about it in every wording of :mod:`~interp.datasets.world.wordings`. Colour questions and
descriptions that name a prior-bearing kind leak the planted colour prior; descriptions state
``(kind, colour)`` pairs in reading order (:func:`describe_answer`, :func:`parse_description`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...samples import Sample
from ..render import CELLS, SHAPE_KINDS, render_digit, render_scene, render_word
from .core import (
    COLOR_NAMES,
    COLOR_WORDS,
    PRIOR_COLORS,
    _blank_meta,
    _Ctx,
    _maybe_image,
    _objects_meta,
    _pick,
    _scene,
    _vis,
)
from .wordings import (
    NAMING_VARIANTS,
    _color_question,
    _describe_question,
    _variants,
    _worded,
)


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
