"""The demo world's shared core: the colour prior, the label schema and the drawing helpers.

Every question family builds on these: :class:`_Ctx` carries a request's split, seed and
visibility; :func:`_blank_meta` starts a sample's labels with every key of :data:`META_KEYS`;
:func:`_scene` draws the objects of a scene, coloured by the planted prior, from the draw's random
stream (the order of the draws from that stream is what makes the world reproducible).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from PIL import Image

from ...samples import Sample
from ..render import (
    CELLS,
    COLORS,
    SHAPE_KINDS,
    TRIVIAL_IMAGES,
    SceneObject,
    render_scene,
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


V3_META_KEYS: tuple[str, ...] = (
    "audio_label",
    "image_form",
    "audio_form",
    "evidence",
    "answer",
    "audio_kind",
    "audio_text",
    "image_text",
    "needs_audio",
    "needs_video",
    "video_kind",
    "video_question",
    "direction",
    "appear_order",
    "frames",
)
"""Keys that the world-v3 question types (``trimodal``, ``hear``, ``motion``) add to
:data:`META_KEYS` (the items of the older types keep exactly :data:`META_KEYS`):

- ``audio_label``: the kind the audio names or sounds like.
- ``image_form`` / ``audio_form``: ``"perceptual"`` (a drawn object, a kind's sound) or
  ``"propositional"`` (a sentence written in the image, a spoken sentence).
- ``evidence``: the tri-modal evidence condition, ``"PercI-PercA"``, ``"PercI-PropA"``,
  ``"PropI-PercA"`` or ``"PropI-PropA"``.
- ``answer``: the world's answer (also the sample's ``answer``), from the trust rule
  :func:`~interp.datasets.world.trimodal.trimodal_answer` for tri-modal items.
- ``audio_kind``: ``"sound"`` or ``"speech"``; ``audio_text``: what a speech clip says;
  ``image_text``: the sentence a propositional image shows.
- ``needs_audio`` / ``needs_video``: the answer cannot be known without the audio / the video.
- ``video_kind``: ``"move"`` (one object moves) or ``"appear"`` (two objects appear in turn);
  ``video_question``: ``"direction"``, ``"first"``, ``"last"`` or ``"describe"``.
- ``direction``: where the object moves (``"left"``, ``"right"``, ``"up"``, ``"down"``);
  ``appear_order``: the kinds in order of appearance joined by commas; ``frames``: video length.
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


def _blank_meta_v3(qtype: str, split: str) -> dict[str, Any]:
    """:func:`_blank_meta` plus every key of :data:`V3_META_KEYS`."""
    meta = _blank_meta(qtype, split)
    meta.update(dict.fromkeys(V3_META_KEYS))
    meta.update(needs_image=False, needs_audio=False, needs_video=False)
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


# Each group generator returns one or more samples drawn from one random draw.
_GroupFn = Callable[[np.random.Generator, _Ctx, str], list[Sample]]
