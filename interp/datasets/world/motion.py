"""Video items (world v3): an object that moves, or two objects that appear in turn.

Each video is ``T x 32 x 32 x 3`` uint8 with ``T`` in :data:`FRAME_RANGE`, every frame drawn over
fresh background noise (:func:`~interp.datasets.render.noisy_background`), so no single frame
answers the questions: the direction of a movement and the order of appearance need the frames
in sequence. Questions: ``"which way does the X move ?"``, ``"which object appears first ?"`` /
``"... last ?"``, and ``"describe the video ."`` (:func:`describe_motion`).
"""

from __future__ import annotations

import numpy as np

from ...media import VIDEO_SLOT
from ...samples import Sample
from ..render import (
    CELL_SIZE,
    CELLS,
    IMAGE_SIZE,
    OBJECT_SIZE,
    SHAPE_KINDS,
    blend,
    noisy_background,
    shape_mask,
)
from .core import _blank_meta_v3, _color_for, _Ctx, _pick, _vis

DIRECTIONS: tuple[str, ...] = ("left", "right", "up", "down")
VIDEO_KINDS: tuple[str, ...] = ("move", "appear")
FRAME_RANGE: tuple[int, int] = (4, 8)
"""Number of frames of a video, drawn uniformly between these bounds (inclusive)."""
MOTION_OPACITY_LO = 0.5
MOTION_QUESTIONS: dict[str, str] = {
    "direction": "which way does the {kind} move ?",
    "first": "which object appears first ?",
    "last": "which object appears last ?",
    "describe": "describe the video .",
}
"""``meta["video_question"]`` -> question (``{kind}``: the moving object)."""


def describe_motion(video_kind: str, kinds: list[str], direction: str | None = None) -> str:
    """The description of a video: ``"the banana moves left"`` or
    ``"the banana appears before the leaf"``."""
    if video_kind == "move":
        return f"the {kinds[0]} moves {direction}"
    return f"the {kinds[0]} appears before the {kinds[1]}"


def _to_uint8(canvas: np.ndarray) -> np.ndarray:
    return np.clip(np.rint(canvas), 0, 255).astype(np.uint8)


def _moving(
    rng: np.random.Generator, kind: str, color: str, opacity: float, direction: str, t: int
) -> np.ndarray:
    """Frames of one object crossing the image in ``direction`` (at least 14 pixels in all)."""
    far = IMAGE_SIZE - OBJECT_SIZE
    start, end = int(rng.integers(0, 4)), int(rng.integers(far - 3, far + 1))
    if direction in ("left", "up"):
        start, end = far - start, far - end
    across = int(rng.integers(0, far + 1))
    mask = shape_mask(kind)
    frames = []
    for i in range(t):
        along = int(round(start + (end - start) * i / (t - 1)))
        top, left = (across, along) if direction in ("left", "right") else (along, across)
        canvas = noisy_background(rng)
        blend(canvas, mask, color, opacity, top, left)
        frames.append(_to_uint8(canvas))
    return np.stack(frames)


def _appearing(
    rng: np.random.Generator,
    objs: list[tuple[str, str, float, int]],
    onsets: list[int],
    t: int,
) -> np.ndarray:
    """Frames in which each object ``(kind, colour, opacity, cell)`` is present from its onset on."""
    frames = []
    for i in range(t):
        canvas = noisy_background(rng)
        for (kind, color, opacity, cell), onset in zip(objs, onsets, strict=True):
            if i >= onset:
                row, col = divmod(cell, 2)
                top, left = row * CELL_SIZE + 2, col * CELL_SIZE + 2
                blend(canvas, shape_mask(kind), color, opacity, top, left)
        frames.append(_to_uint8(canvas))
    return np.stack(frames)


def _gen_motion(rng: np.random.Generator, ctx: _Ctx, group: str, index: int) -> list[Sample]:
    """A video and the questions on it (see the module docstring).

    Training: a random video kind and one of its questions. Evaluation: the video kinds
    alternate with ``index`` and every question of the video is asked (``move``: direction and
    description; ``appear``: first, last and description), sharing ``meta["group"]``.
    """
    video_kind = _pick(rng, VIDEO_KINDS) if ctx.train else VIDEO_KINDS[index % len(VIDEO_KINDS)]
    t = int(rng.integers(FRAME_RANGE[0], FRAME_RANGE[1] + 1))
    lo, hi = _vis(ctx, MOTION_OPACITY_LO)
    common: dict = {"group": group, "video_kind": video_kind, "frames": t, "needs_video": True}
    if video_kind == "move":
        kind = _pick(rng, SHAPE_KINDS)
        color, cf = _color_for(rng, kind, ctx.counterfactual_share)
        opacity = float(rng.uniform(lo, hi))
        direction = _pick(rng, DIRECTIONS)
        video = _moving(rng, kind, color, opacity, direction, t)
        answers = {"direction": direction, "describe": describe_motion("move", [kind], direction)}
        objects = [{"kind": kind, "color": color, "cell": None, "opacity": round(opacity, 4)}]
        common.update(
            entity=kind, direction=direction, counterfactual=cf, opacity=round(opacity, 4)
        )
        kinds = [kind]
    else:
        kinds = [str(k) for k in rng.choice(SHAPE_KINDS, size=2, replace=False)]
        cells = [int(c) for c in rng.permutation(len(CELLS))[:2]]
        objs = []
        for kind, cell in zip(kinds, cells, strict=True):
            color, _ = _color_for(rng, kind, ctx.counterfactual_share)
            objs.append((kind, color, float(rng.uniform(lo, hi)), cell))
        first = int(rng.integers(0, t - 1))
        onsets = [first, int(rng.integers(first + 1, t))]
        video = _appearing(rng, objs, onsets, t)
        answers = {
            "first": kinds[0],
            "last": kinds[1],
            "describe": describe_motion("appear", kinds),
        }
        objects = [
            {"kind": k, "color": c, "cell": CELLS[cell], "opacity": round(o, 4), "onset": on}
            for (k, c, o, cell), on in zip(objs, onsets, strict=True)
        ]
        common.update(appear_order=",".join(kinds), opacity=round(min(o[2] for o in objs), 4))
    asked = [_pick(rng, list(answers))] if ctx.train else list(answers)
    out = []
    for which in asked:
        meta = _blank_meta_v3("motion", ctx.split)
        meta.update(common, image_kind="none", video_question=which, answer=answers[which])
        meta["objects"] = objects
        q = f"{VIDEO_SLOT} {MOTION_QUESTIONS[which].format(kind=kinds[0])}"
        out.append(Sample(q, None, answers[which], None, meta, video=video))
    return out


__all__ = [
    "DIRECTIONS",
    "FRAME_RANGE",
    "MOTION_OPACITY_LO",
    "MOTION_QUESTIONS",
    "VIDEO_KINDS",
    "describe_motion",
]
