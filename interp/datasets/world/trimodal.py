"""Tri-modal conflict (world v3): an image, an audio clip and a caption name three different kinds.

As in Tri-PvP ("Exposing Modality Bias in Omni-Modal Large Language Models through
Perceptual-Propositional Evidence Conflicts"): the image is perceptual (a drawn object) or
propositional (a sentence naming the kind, written in the image), the audio is perceptual (the
kind's sound, :mod:`~interp.datasets.world.audio`) or propositional (a spoken sentence, :mod:`~interp.datasets.world.speech`), the text is a
caption (always propositional). The four evidence conditions (:data:`EVIDENCE_CONDITIONS`) are
shown on the same label triple, in all six input orders (:data:`TRI_ORDERS`); agreeing items
(all three sources name one kind) measure competence. The answer is the world's trust rule
(:func:`trimodal_answer`), which plants a visual bias, a perceptual-vision /
propositional-audio asymmetry and a recency effect.

The ``hear`` question type asks about one audio clip alone (sound or speech), the audio
counterpart of the perception questions.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...media import AUDIO_SLOT, Audio
from ...samples import IMAGE_SLOT, Sample
from ..render import SHAPE_KINDS, render_scene, render_sentence
from .audio import object_sound
from .conflict import CAPTION
from .core import COLOR_NAMES, _blank_meta_v3, _Ctx, _objects_meta, _pick, _scene, _vis
from .speech import SPEECH_PHRASINGS, speech_clip

TRI_SOURCES: tuple[str, ...] = ("image", "audio", "text")
"""The sources of a tri-modal item; ``meta["order"]`` joins them in prompt order."""
TRI_ORDERS: tuple[tuple[str, ...], ...] = tuple(itertools.permutations(TRI_SOURCES))
FORMS: tuple[str, ...] = ("perceptual", "propositional")
EVIDENCE_CONDITIONS: dict[str, tuple[str, str]] = {
    "PercI-PercA": ("perceptual", "perceptual"),
    "PercI-PropA": ("perceptual", "propositional"),
    "PropI-PercA": ("propositional", "perceptual"),
    "PropI-PropA": ("propositional", "propositional"),
}
"""Evidence condition -> ``(image_form, audio_form)``."""
TRI_TRUST: dict[tuple[str, str], float] = {
    ("image", "perceptual"): 1.0,
    ("image", "propositional"): 0.8,
    ("audio", "propositional"): 0.7,
    ("audio", "perceptual"): 0.5,
    ("text", "propositional"): 0.6,
}
"""Trust of each ``(source, form)``: images above audio (the visual bias), perceptual over
propositional in vision and the reverse in audio (the asymmetry); the caption in between."""
TRI_POSITION_TRUST: tuple[float, ...] = (0.0, 0.12, 0.25)
"""Trust added by the place in the prompt (first, second, last before the question): recency."""
TRI_AGREE_SHARE = 0.25
"""Share of agreeing items in the training split (evaluation: four per draw, see below)."""
TRI_QUESTION = "which object is it ?"
IMAGE_OPACITY_LO = 0.6
"""Lower end of the images' opacity range (the trust rule assumes visible evidence)."""


def trimodal_answer(labels: dict[str, str], forms: dict[str, str], order: Sequence[str]) -> str:
    """The world's answer to a tri-modal item: the label with the largest summed trust.

    ``trust(s) = TRI_TRUST[(s, form of s)] + TRI_POSITION_TRUST[position of s]``, the text's form
    being ``"propositional"``; ``score(label) = sum of trust(s)`` over the sources ``s`` naming
    that label; ties go to the label named last. With three different labels this means:

    - a perceptual image always wins (1.0 or more against at most 0.7 + 0.25);
    - a propositional image (0.8) loses to a spoken sentence that comes after it (0.82 or 0.95),
      and, placed first, to a caption placed last (0.85); perceptual audio (at most 0.75) never
      beats an image;
    - so the image wins in every order of PercI-PercA and PercI-PropA, 5 of 6 of PropI-PercA,
      3 of 6 of PropI-PropA: a visual bias that evidence form modulates but does not reverse,
      an asymmetry (form matters in opposite directions in vision and audio) and a recency
      effect (a later source wins more often).

    Raises:
        KeyError: a source or form outside :data:`TRI_TRUST`.
    """
    score: dict[str, float] = {}
    last: dict[str, int] = {}
    for pos, src in enumerate(order):
        form = forms.get(src, "propositional")
        label = labels[src]
        score[label] = score.get(label, 0.0) + TRI_TRUST[(src, form)] + TRI_POSITION_TRUST[pos]
        last[label] = pos
    return max(score, key=lambda lab: (round(score[lab], 9), last[lab]))


def control_answer(sample: Sample) -> str:
    """A trimodal item's answer under the control rule: the world's trust rule
    (:func:`trimodal_answer`) with the audio read as if it were always the spoken sentence (equal
    trust for both audio forms), so the audio form plays no part; the visual bias and the recency
    effect stay. ``demo-omni-control`` was trained on these answers."""
    m = sample.meta
    labels = {"image": m["image_label"], "audio": m["audio_label"], "text": m["text_label"]}
    forms = {"image": m["image_form"], "audio": "propositional", "text": "propositional"}
    return trimodal_answer(labels, forms, m["order"].split(","))


_PAIRS: tuple[tuple[int, int], ...] = tuple(
    (s, t) for s in range(1, len(SHAPE_KINDS)) for t in range(1, len(SHAPE_KINDS)) if s != t
)


def label_triple(seed: int, k: int) -> tuple[str, str, str]:
    """The ``(image, audio, text)`` labels of evaluation draw ``k``, balanced by design.

    Kinds are relabelled by a permutation drawn from ``seed``; draw ``k`` takes
    ``(a, a + s, a + t) mod 10`` with ``a = k mod 10`` and ``(s, t)`` the ``k // 10``-th shift pair
    (a seeded order of the 72 pairs of distinct non-zero shifts). So every block of ten
    consecutive draws names each kind once as image, once as audio and once as text label, and
    720 draws cover every ordered triple of distinct kinds exactly once.
    """
    n = len(SHAPE_KINDS)
    perm = np.random.default_rng([seed, 4242]).permutation(n)
    pair_order = np.random.default_rng([seed, 4243]).permutation(len(_PAIRS))
    s, t = _PAIRS[int(pair_order[(k // n) % len(_PAIRS)])]
    a = k % n
    return tuple(SHAPE_KINDS[int(perm[(a + d) % n])] for d in (0, s, t))  # type: ignore[return-value]


def _image(rng: np.random.Generator, ctx: _Ctx, kind: str) -> dict[str, Any]:
    """Both forms of an image of ``kind``: the drawn object and a written sentence."""
    vis = _vis(ctx, IMAGE_OPACITY_LO)
    objs, _ = _scene(rng, [kind], ctx.counterfactual_share, vis)
    drawn = render_scene(objs, rng)
    sentence = _pick(rng, SPEECH_PHRASINGS).format(kind=kind)
    word_opacity = float(rng.uniform(*vis))
    written, _ = render_sentence(sentence, _pick(rng, COLOR_NAMES), word_opacity, rng)
    return {
        "perceptual": drawn,
        "propositional": written,
        "opacity": {"perceptual": objs[0].opacity, "propositional": word_opacity},
        "objects": _objects_meta(objs),
        "sentence": sentence,
    }


def _audio(rng: np.random.Generator, kind: str) -> dict[str, Any]:
    """Both forms of an audio clip of ``kind``: its sound and a spoken sentence."""
    sound = object_sound(kind, rng)
    speech, entry = speech_clip(kind, rng)
    return {"perceptual": sound, "propositional": speech, "text": entry["text"]}


def _prompt(order: Sequence[str], caption: str) -> str:
    slots = {"image": IMAGE_SLOT, "audio": AUDIO_SLOT, "text": caption}
    return " ".join([*(slots[s] for s in order), TRI_QUESTION])


def _item(
    ctx: _Ctx,
    group: str,
    labels: dict[str, str],
    images: dict[str, Any],
    audios: dict[str, Any],
    evidence: str,
    order: Sequence[str],
) -> Sample:
    image_form, audio_form = EVIDENCE_CONDITIONS[evidence]
    forms = {"image": image_form, "audio": audio_form, "text": "propositional"}
    answer = trimodal_answer(labels, forms, order)
    caption = CAPTION.format(label=labels["text"])
    agree = len(set(labels.values())) == 1
    meta = _blank_meta_v3("trimodal", ctx.split)
    meta.update(
        group=group,
        image_kind="scene" if image_form == "perceptual" else "sentence",
        image_label=labels["image"],
        audio_label=labels["audio"],
        text_label=labels["text"],
        image_form=image_form,
        audio_form=audio_form,
        evidence=evidence,
        order=",".join(order),
        caption=caption,
        agreement="all_agree" if agree else "all_differ",
        answer=answer,
        needs_image=not agree and answer == labels["image"],
        needs_audio=not agree and answer == labels["audio"],
        audio_kind="sound" if audio_form == "perceptual" else "speech",
        audio_text=audios["text"] if audio_form == "propositional" else None,
        image_text=images["sentence"] if image_form == "propositional" else None,
        opacity=round(images["opacity"][image_form], 4),
        objects=images["objects"] if image_form == "perceptual" else None,
    )
    audio: Audio = audios[audio_form]
    return Sample(_prompt(order, caption), [images[image_form]], answer, None, meta, audio=[audio])


def _gen_trimodal(rng: np.random.Generator, ctx: _Ctx, group: str, index: int) -> list[Sample]:
    """Tri-modal conflict items (see the module docstring).

    Training: one item per draw: all three sources agree with probability
    :data:`TRI_AGREE_SHARE`, else three distinct random kinds; a random evidence condition and
    order. Evaluation: draw ``index`` takes its labels from :func:`label_triple` and yields the
    24 disagreeing items (4 evidence conditions x 6 orders, the same image and audio renders)
    then 4 agreeing items on the image label (one per condition, in orders that cycle with
    ``index``).
    """
    if ctx.train:
        if rng.random() < TRI_AGREE_SHARE:
            triple = (_pick(rng, SHAPE_KINDS),) * 3
        else:
            triple = tuple(str(k) for k in rng.choice(SHAPE_KINDS, size=3, replace=False))
        evidence = _pick(rng, list(EVIDENCE_CONDITIONS))
        order = _pick(rng, TRI_ORDERS)
        labels = dict(zip(TRI_SOURCES, triple, strict=True))
        images = _image(rng, ctx, labels["image"])
        audios = _audio(rng, labels["audio"])
        return [_item(ctx, group, labels, images, audios, evidence, order)]
    labels = dict(zip(TRI_SOURCES, label_triple(ctx.seed, index), strict=True))
    images = _image(rng, ctx, labels["image"])
    audios = _audio(rng, labels["audio"])
    out = [
        _item(ctx, group, labels, images, audios, evidence, order)
        for evidence in EVIDENCE_CONDITIONS
        for order in TRI_ORDERS
    ]
    same = dict.fromkeys(TRI_SOURCES, labels["image"])
    same_audio = _audio(rng, labels["image"])
    for c, evidence in enumerate(EVIDENCE_CONDITIONS):
        order = TRI_ORDERS[(index + c) % len(TRI_ORDERS)]
        out.append(_item(ctx, group, same, images, same_audio, evidence, order))
    return out


HEAR_QUESTION = "which object is it ?"


def _gen_hear(rng: np.random.Generator, ctx: _Ctx, group: str, index: int) -> list[Sample]:
    """One audio clip alone: the kind's sound or a spoken sentence naming it (audio competence).

    Training: one form at random; evaluation: both forms of one kind, the kinds cycling with
    ``index``.
    """
    kind = _pick(rng, SHAPE_KINDS) if ctx.train else SHAPE_KINDS[index % len(SHAPE_KINDS)]
    audios = _audio(rng, kind)
    forms = [_pick(rng, FORMS)] if ctx.train else list(FORMS)
    out = []
    for form in forms:
        meta = _blank_meta_v3("hear", ctx.split)
        meta.update(
            group=group,
            image_kind="none",
            entity=kind,
            audio_label=kind,
            audio_form=form,
            answer=kind,
            needs_audio=True,
            audio_kind="sound" if form == "perceptual" else "speech",
            audio_text=audios["text"] if form == "propositional" else None,
        )
        q = f"{AUDIO_SLOT} {HEAR_QUESTION}"
        out.append(Sample(q, None, kind, None, meta, audio=[audios[form]]))
    return out


__all__ = [
    "EVIDENCE_CONDITIONS",
    "FORMS",
    "HEAR_QUESTION",
    "IMAGE_OPACITY_LO",
    "TRI_AGREE_SHARE",
    "TRI_ORDERS",
    "TRI_POSITION_TRUST",
    "TRI_QUESTION",
    "TRI_SOURCES",
    "TRI_TRUST",
    "control_answer",
    "label_triple",
    "trimodal_answer",
]
