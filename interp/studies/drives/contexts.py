"""Null sources, the support and the contexts of the teacher-forced forwards.

What V = ∅ and Q = ∅ mean (``null_image``, ``null_question``), the K support pairs, and for each
sample the list of (input sample, condition) contexts whose forwards give its drives. Light on
purpose: the command's option checks import it before any model is loaded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from interp.conditions import Condition, Part
from interp.errors import ConditionError, DriveError, ImageError, SupportError, VideoError
from interp.media import video_digest
from interp.samples import IMAGE_SLOT, VIDEO_SLOT, Sample, ensure_samples, image_digest

from .constants import (
    DEFAULT_QTYPES,
    DRIVE_ALIASES,
    DRIVES,
    LN2,
    NEUTRAL_PROMPT,
    NULL_IMAGES,
    NULL_VIDEOS,
    VISUALS,
)

if TYPE_CHECKING:
    from .result import CausalDrives

FULL = Condition(Part("full"))


# -- null sources and support --------------------------------------------------------------------


def _null_image_name(null_image: str) -> str:
    """The canonical name of a null image (``"none"`` is ``"blind"``, ``"null:black"`` is
    ``"black"``)."""
    name = str(null_image).strip().lower()
    name = {"none": "blind", "": "blind"}.get(name, name)
    if name.startswith("null:"):
        name = name[5:]
    if name not in NULL_IMAGES:
        raise ConditionError(
            f"unknown null image {null_image!r}; use one of {', '.join(NULL_IMAGES)} ('blind' or "
            "'none': no image)"
        )
    return name


def _visual_name(visual: str) -> str:
    """The checked visual source: ``"image"`` or ``"video"``."""
    name = str(visual).strip().lower()
    if name not in VISUALS:
        raise ConditionError(
            f"unknown visual {visual!r}; use 'image' (V is the image) or 'video' (V is the video)"
        )
    return name


def _visual_of(drives: CausalDrives, visual: str | None) -> str:
    """What V is for a follow-up of ``drives``: as they were computed (``visual=None``), or the
    given name, which must then be theirs."""
    if visual is None:
        return drives.visual
    name = _visual_name(visual)
    if name != drives.visual:
        raise DriveError(
            f"visual={visual!r}, but the drives were computed with visual={drives.visual!r}; "
            "leave visual unset (it follows the drives) or recompute the drives"
        )
    return name


def _check_null_visual(null_image: str, visual: str) -> None:
    """Reject a null image that has no video counterpart when V is the video."""
    if visual == "video" and null_image not in NULL_VIDEOS:
        raise ConditionError(
            f"null_image={null_image!r} has no video counterpart; with visual='video' use one of "
            f"{', '.join(NULL_VIDEOS)} ('blind': no video, 'black' / 'mean': null_video frames)"
        )


def _question_part(null_question: str) -> Part:
    """The question part of Q = ∅: an empty question, or the given text."""
    if not isinstance(null_question, str):
        raise ConditionError(
            f"null_question must be a string ('' for an empty question), got "
            f"{type(null_question).__name__}"
        )
    text = null_question.strip()
    return Part("no_question") if not text else Part("ask", text)


def _check_images(samples: Sequence[Sample], what: str = "sample", visual: str = "image") -> None:
    if visual == "video":
        for s in samples:
            if not s.has_video:
                raise VideoError(
                    f"{what} {s.id!r} has no video: with visual='video' causal drives intervene "
                    "on the video of every sample and of every support context; give each a "
                    "video or drop it (or use visual='image')"
                )
        return
    for s in samples:
        if not s.has_image:
            raise ImageError(
                f"{what} {s.id!r} has no image: causal drives intervene on the image of every "
                "sample and of every support context; give each an image or drop it"
            )


def draw_support(
    samples: Sequence[Sample], k: int = 20, *, seed: int = 0, visual: str = "image"
) -> list[Sample]:
    """K observed (image, question) pairs (video, question with ``visual="video"``) drawn uniformly without replacement from ``samples``:
    the finite support of the backdoor adjustments (empirical P(V) P(Q|V), uniform weights;
    Supplementary Sec. 9.1 of the paper).

    Raises:
        SupportError: ``k`` < 1 or more than the samples available.
        ImageError: a sample without an image (VideoError: without a video, for video).
        ConditionError: an unknown ``visual``.
    """
    samples = ensure_samples(samples)
    visual = _visual_name(visual)
    if not isinstance(k, (int, np.integer)) or k < 1:
        raise SupportError(f"k must be an integer >= 1 (the support size K), got {k!r}")
    if k > len(samples):
        raise SupportError(
            f"k={k} but only {len(samples)} observed (image, question) pairs to draw the support "
            "from; lower k or pass more samples (or support=...)"
        )
    _check_images(samples, visual=visual)
    rng = np.random.default_rng(seed)
    picked = sorted(rng.choice(len(samples), size=int(k), replace=False).tolist())
    return [samples[i] for i in picked]


def _resolve_support(
    samples: list[Sample],
    support: Sequence[Sample] | None,
    k: int,
    seed: int,
    visual: str = "image",
) -> list[Sample]:
    if support is None:
        return draw_support(samples, k, seed=seed, visual=visual)
    support = list(support)
    if not support:
        raise SupportError("support is empty; give at least one (image, question) sample")
    for i, s in enumerate(support):
        if not isinstance(s, Sample):
            raise SupportError(f"support[{i}] is a {type(s).__name__}, expected interp.Sample")
    _check_images(support, "support sample", visual)
    return support


def _drop_slots(question: str, slot: str, n: int) -> str:
    if slot in question and question.count(slot) != n:
        question = " ".join(p.strip() for p in question.split(slot) if p.strip())
    return question


def _compose(question: str, images: Any, sid: str, video: Any = None) -> Sample:
    """A sample with ``question`` and the images (and video) of another sample; image or video
    slots that no longer match the number of inputs are dropped (those inputs then come first)."""
    n = len(images) if isinstance(images, list) else (0 if images is None else 1)
    question = _drop_slots(question, IMAGE_SLOT, n)
    if video is None:
        return Sample(question, images, None, sid)
    probe = Sample("", video=video)
    question = _drop_slots(question, VIDEO_SLOT, probe.n_video)
    return Sample(question, images, None, sid, video=video)


def _mismatched_partners(samples: list[Sample], visual: str = "image") -> list[int]:
    """For each sample, the index of the next sample (cyclically) whose images (videos with
    ``visual="video"``) differ."""
    if visual == "video":
        digests = [tuple(video_digest(v, s.id) for v in s.videos) for s in samples]
    else:
        digests = [tuple(image_digest(im, s.id) for im in s.images) for s in samples]
    out = []
    for i in range(len(samples)):
        j = next(
            (
                (i + d) % len(samples)
                for d in range(1, len(samples))
                if digests[(i + d) % len(samples)] != digests[i]
            ),
            None,
        )
        if j is None:
            raise SupportError(
                f"null_image='mismatched' needs at least two samples with different {visual}s"
            )
        out.append(j)
    return out


def _check_common(batch_size: int, max_new_tokens: int) -> None:
    if batch_size < 1:
        raise DriveError(f"batch_size must be >= 1, got {batch_size}")
    if max_new_tokens < 1:
        raise DriveError(f"max_new_tokens must be >= 1, got {max_new_tokens}")


Context = tuple[Sample, Condition]
ContextsFn = Callable[[int, Sample], list[Context]]


def _null_context(
    s: Sample,
    i: int,
    samples: list[Sample],
    null_image: str,
    question: Part | None,
    partners: list[int] | None,
    tag: str,
    visual: str = "image",
) -> Context:
    """The input with V = ∅ (and the question part ``question``: Q = ∅, or None to keep it).
    With ``visual="video"`` V is the video: ``blind`` removes it (``no_video``), ``black`` /
    ``mean`` put ``null_video`` frames in its place, ``mismatched`` takes another sample's."""
    sid = f"{s.id}|{tag}"
    if visual == "video":
        _check_null_visual(null_image, visual)
        if null_image == "mismatched":
            assert partners is not None
            other = samples[partners[i]]
            return _compose(s.question, s.image, sid, other.video), Condition(
                Part("full"), question
            )
        vpart = Part("no_video") if null_image == "blind" else Part("null_video", null_image)
        return _compose(s.question, s.image, sid, s.video), Condition(
            Part("full"), question, video=vpart
        )
    if null_image == "blind":
        return _compose(s.question, s.image, sid), Condition(Part("blind"), question)
    if null_image == "mismatched":
        assert partners is not None
        other = samples[partners[i]]
        return _compose(s.question, other.image, sid), Condition(Part("full"), question)
    return _compose(s.question, s.image, sid), Condition(Part("null", null_image), question)


def _other_visuals(
    s: Sample, others: Sequence[Sample], tag: str, visual: str, *, own_question: bool
) -> list[Context]:
    """Sample ``s``'s rows under each of ``others``' images (or videos), with ``s``'s question
    (``own_question``) or theirs; row ids ``<s.id>|<tag><j>``. Shared by the support terms of the
    drives and the held-out terms of :func:`~.recovery.recovery_error`."""
    return [
        (
            _compose(
                s.question if own_question else c.question,
                c.image,
                f"{s.id}|{tag}{j}",
                c.video if visual == "video" else None,
            ),
            FULL,
        )
        for j, c in enumerate(others)
    ]


def drive_contexts(
    samples: Sequence[Sample],
    support: Sequence[Sample],
    *,
    null_image: str = "blind",
    null_question: str = "",
    pmi: bool = True,
    visual: str = "image",
    pmi_marginal: bool = False,
) -> ContextsFn:
    """The contexts whose teacher-forced forwards give a sample's drives, in order: the K support
    pairs (v_k, q_k) for the prefix drive (PCD), the K support images with the sample's question
    (v_k, q) for the question drive (QCD), the sample's image with the null question for the
    visual drive (VCD), the null input (P0), and with ``pmi`` the
    full input and the full input without the prefix, and with ``pmi_marginal`` the sample's
    image with each support question (v, q_k) (the marginal PMI_Q's denominator). With ``visual="video"`` V is the video
    (v_k: the support samples' videos; V = ∅: see :func:`_null_context`). Returns ``contexts(i, sample)`` giving
    sample i's ``(input sample, condition)`` pairs (used by :func:`causal_drives`, and by the bench
    to feed bare HF forwards the same inputs)."""
    samples = list(samples)
    sup = list(support)
    nimg = _null_image_name(null_image)
    visual = _visual_name(visual)
    _check_null_visual(nimg, visual)
    qpart = _question_part(null_question)
    partners = _mismatched_partners(samples, visual) if nimg == "mismatched" else None
    visual_cond = Condition(Part("full"), qpart)

    def vid(x: Sample) -> Any:
        # image runs keep building their inputs as before (no video)
        return x.video if visual == "video" else None

    noprefix = Condition(Part("full"), None, "removed")

    def contexts(i: int, s: Sample) -> list[Context]:
        # the row ids' tags (pcd, qcd, vcd) key the result store: kept as they are
        rows = _other_visuals(s, sup, "pcd", visual, own_question=False)
        rows += _other_visuals(s, sup, "qcd", visual, own_question=True)
        rows.append((_compose(s.question, s.image, f"{s.id}|vcd", vid(s)), visual_cond))
        rows.append(_null_context(s, i, samples, nimg, qpart, partners, "p0", visual))
        if pmi:
            rows.append((_compose(s.question, s.image, f"{s.id}|full", vid(s)), FULL))
            rows.append((_compose(s.question, s.image, f"{s.id}|noprefix", vid(s)), noprefix))
        if pmi and pmi_marginal:
            rows += [
                (_compose(c.question, s.image, f"{s.id}|pmiq{j}", vid(s)), FULL)
                for j, c in enumerate(sup)
            ]
        return rows

    return contexts


def _check_matches(samples: list[Sample], drives: CausalDrives) -> None:
    got = [str(s.id) for s in samples]
    if got != drives.sample_ids:
        raise DriveError(
            "the samples are not those of the drive result (ids or order differ); pass the same "
            "samples, in the same order, as to causal_drives"
        )


__all__ = [
    "Context",
    "ContextsFn",
    "DEFAULT_QTYPES",
    "DRIVES",
    "DRIVE_ALIASES",
    "FULL",
    "LN2",
    "NEUTRAL_PROMPT",
    "NULL_IMAGES",
    "NULL_VIDEOS",
    "VISUALS",
    "draw_support",
    "drive_contexts",
]
