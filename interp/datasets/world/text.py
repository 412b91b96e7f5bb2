"""Text-answerable questions: arithmetic and the colour a kind usually has.

The image is irrelevant to the answer (a trivial image, an unrelated scene, or none in training).
"""

from __future__ import annotations

import numpy as np

from ...samples import Sample
from .core import (
    COLOR_WORDS,
    PRIOR_COLORS,
    PRIOR_KINDS,
    _blank_meta,
    _Ctx,
    _irrelevant_image,
    _maybe_image,
    _pick,
)


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
