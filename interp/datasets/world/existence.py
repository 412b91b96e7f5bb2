"""Object existence, as measured by POPE: ``is there a <kind> in the image ?``.

Training scenes plant a co-occurrence prior (a kind brings its partner, :data:`CO_OCCURRENCE`,
often faint) and unequal kind frequencies (:data:`KIND_FREQUENCY`); evaluation asks about one
present kind and three absent ones drawn as in POPE (Li et al., "Evaluating Object Hallucination
in Large Vision-Language Models", arXiv:2305.10355): random, popular, adversarial.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ...samples import Sample
from ..render import CELLS, SHAPE_KINDS, render_scene
from .core import _blank_meta, _Ctx, _objects_meta, _pick, _scene, _vis

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
