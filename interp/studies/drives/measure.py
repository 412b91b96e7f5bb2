"""The model runs: greedy answers, teacher-forced log-probabilities of every context
(:func:`interp.scoring.score_contexts`: stores, resume, progress bar), and :func:`causal_drives` (2K + 2 forwards a
sample)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from interp.edits import check_edits
from interp.encoding import target_ids, warn_unknown_tokens
from interp.errors import DriveError, EmptyTargetError
from interp.generation import generate
from interp.options import RunOptions
from interp.samples import Sample, ensure_samples
from interp.scoring import score_contexts as score_contexts_of
from interp.scoring import score_rows
from interp.store import substore

from .analysis import _drive_arrays, _pad
from .contexts import (
    ContextsFn,
    _check_common,
    _check_images,
    _check_null_visual,
    _mismatched_partners,
    _null_image_name,
    _question_part,
    _resolve_support,
    _visual_name,
    drive_contexts,
)
from .result import CausalDrives

if TYPE_CHECKING:
    from interp.conditions import Part
    from interp.edits import Intervention
    from interp.model import VLM


def drives_options(run: RunOptions | None, options: dict[str, Any]) -> RunOptions:
    """The run options of one of the study's entry points (default ``batch_size`` 32).

    The drives run remotely (NDIF) as they are: every model run is :func:`interp.generate` or
    :func:`interp.scoring.score_contexts` under conditions (null images, removed questions and
    prefixes are encoded here), both lowered to plain data; edits are refused by those
    measurements before any request."""
    return RunOptions.resolve(run if run is not None else RunOptions(batch_size=32), **options)


def _resolve_targets(
    vlm: VLM,
    samples: list[Sample],
    targets: Sequence[str | Sequence[int]] | None,
) -> list[list[int]] | None:
    """Token ids of given targets (checked before any compute); None when they are to be
    generated."""
    if targets is None:
        return None
    targets = list(targets)
    if len(targets) != len(samples):
        raise DriveError(
            f"{len(targets)} targets for {len(samples)} samples; give one per sample (or "
            "targets=None for the greedy answers)"
        )
    return target_ids(vlm, targets)


def _greedy_targets(
    vlm: VLM,
    samples: list[Sample],
    *,
    max_new_tokens: int,
    edits: Sequence[Intervention],
    run: RunOptions,
) -> list[list[int]]:
    """The greedy answers under ``full`` (in ``run``'s store, ``<store>/answers``; every
    process computes them all: they are not sharded)."""
    gen = generate(
        vlm,
        samples,
        "full",
        max_new_tokens=max_new_tokens,
        edits=list(edits),
        run=replace(run, store=substore(run.store, "answers"), shard=None),
    )
    empty = [sid for sid, ids in zip(gen.sample_ids, gen.token_ids) if not ids]
    if empty:
        raise EmptyTargetError(
            f"the greedy answers of samples {empty[:5]} are empty (the model stopped at once); "
            "pass targets= explicitly or drop these samples"
        )
    return [list(ids) for ids in gen.token_ids]


class _Setup(NamedTuple):
    """What :func:`causal_drives` and :func:`~.removal.source_removal` check and resolve before
    their forwards (one place, so both raise the same errors in the same order)."""

    samples: list[Sample]
    visual: str
    null_image: str
    qpart: Part
    support: list[Sample]
    ids: list[list[int]]
    edits: list[Intervention]
    partners: list[int] | None


def _setup(
    vlm: VLM,
    samples: Sequence[Sample],
    opts: RunOptions,
    targets: Sequence[str | Sequence[int]] | None,
    null_image: str,
    null_question: str,
    max_new_tokens: int,
    edits: Sequence[Intervention] | None,
    visual: str,
    *,
    support: tuple[Sequence[Sample] | None, int, int] | None = None,
) -> _Setup:
    """Checks every argument before any compute (``opts``: the run options, resolved first), then
    generates the greedy targets where none are given. ``support``: ``(support, k, seed)`` to
    resolve the support set (after the samples' checks, before the targets'), None for a
    measurement without one."""
    samples = ensure_samples(samples)
    visual = _visual_name(visual)
    _check_images(samples, visual=visual)
    nimg = _null_image_name(null_image)
    _check_null_visual(nimg, visual)
    qpart = _question_part(null_question)
    _check_common(opts.batch_size, max_new_tokens)
    sup = [] if support is None else _resolve_support(samples, *support, visual)
    ids = _resolve_targets(vlm, samples, targets)
    checked = check_edits(vlm, edits)
    partners = _mismatched_partners(samples, visual) if nimg == "mismatched" else None
    if qpart.arg:
        warn_unknown_tokens(vlm, [Sample(qpart.arg)])
    if ids is None:
        ids = _greedy_targets(vlm, samples, max_new_tokens=max_new_tokens, edits=checked, run=opts)
    return _Setup(samples, visual, nimg, qpart, sup, ids, checked, partners)


def _partner_prints(samples: list[Sample], partners: list[int] | None) -> list[str] | None:
    """The mismatched partners' fingerprints (the store's extras), None without partners."""
    return None if partners is None else [samples[j].fingerprint() for j in partners]


def _answer_mask(ids: list[list[int]]) -> np.ndarray:
    """``[N, T]``: True on each answer's tokens (T: the longest answer)."""
    mask = np.zeros((len(ids), max(len(t) for t in ids)), dtype=bool)
    for i, t in enumerate(ids):
        mask[i, : len(t)] = True
    return mask


# -- the measurement: teacher-forced log-probabilities of every context ----------------------------


score_contexts = score_rows
"""The per-row scorer, under its former name here (:func:`interp.scoring.score_rows`)."""


def _measure(
    vlm: VLM,
    samples: list[Sample],
    targets: list[list[int]],
    contexts: ContextsFn,
    *,
    name: str,
    settings: dict[str, Any],
    extras: Sequence[Any] | None = None,
    edits: Sequence[Intervention] = (),
    run: RunOptions,
) -> list[np.ndarray]:
    """Per sample, the ``[C, T]`` natural-log probabilities of its target under its C contexts
    (``contexts(i, sample)``, the same C for every sample): :func:`interp.scoring.score_contexts`
    under the study's run name and settings (``run``: its options, store included)."""
    lps = score_contexts_of(
        vlm,
        samples,
        targets,
        contexts,
        extras=extras,
        edits=edits,
        measurement=name,
        labels=settings,
        run=run,
    )
    return [lp.numpy() for lp in lps]


def causal_drives(
    vlm: VLM,
    samples: Sequence[Sample],
    *,
    support: Sequence[Sample] | None = None,
    k: int = 20,
    targets: Sequence[str | Sequence[int]] | None = None,
    null_image: str = "blind",
    null_question: str = "",
    seed: int = 0,
    pmi: bool = True,
    max_new_tokens: int = 24,
    edits: Sequence[Intervention] | None = None,
    visual: str = "image",
    pmi_marginal: bool = False,
    run: RunOptions | None = None,
    **options: Any,
) -> CausalDrives:
    r"""Per-token question, visual and prefix drives (the paper's QCD, VCD, PCD) and the PMI
    baselines of each sample's answer, in bits.

    For sample (v, q) with answer a_1..a_T and support {(v_k, q_k)}_{k=1..K}, w_k = 1/K:

    - log2 P0(a≤t) = Σ_{i≤t} log2 P(a_i | a_<i, ∅, ∅)                              (Eq. 4)
    - PCD_t = log2 Σ_k w_k P(a_t | a_<t, v_k, q_k) − log2 P0(a≤t)                   (Eq. 6)
    - QCD_t = log2 Σ_k w_k Π_{i≤t} P(a_i | a_<i, v_k, q) − log2 P0(a≤t)         (Eqs. 9-11)
    - VCD_t = Σ_{i≤t} log2 P(a_i | a_<i, v, ∅) − log2 P0(a≤t)                      (Eq. 14)
    - PMI_Q = log2 P(a_t | a_<t, v, q) − log2 P(a_t | a_<t, v, ∅)                  (Eq. 24,
      the null question standing for "Q not given": a departure from the paper's P(a_t | a_<t, v))
    - with ``pmi_marginal``: PMI_Q as the paper writes it, log2 P(a_t | a_<t, v, q) −
      log2 P(a_t | a_<t, v), with P(a_t | a_<t, v) = Σ_k P(a_≤t | v, q_k) / Σ_k P(a_<t | v, q_k):
      the question marginalised over the support's questions (uniform P(Q | V) on them),
      conditioned on the prefix (``pmi_q_marginal``; K more forwards)
    - PMI_P = log2 P(a_t | a_<t, v, q) − log2 P(a_t | v, q)                         (Eq. 25)

    Exactly 2K + 2 teacher-forced forwards per sample (+ 2 with ``pmi``), batched across samples
    and contexts; sums over the support with log-sum-exp.

    Args:
        samples: the generations to explain; each needs an image.
        support: the K (image, question) contexts; default: ``k`` drawn from ``samples`` with
            ``seed`` (:func:`draw_support`).
        targets: one per sample (text or token ids); default: the greedy answer under ``full``
            (``max_new_tokens``), without its end-of-sequence token.
        null_image: V = ∅ in P0: ``"blind"`` (no image), ``"black"``, ``"white"``, ``"noise"``,
            ``"mean"`` or ``"mismatched"``.
        null_question: Q = ∅ in P0, VCD and PMI_Q: ``""`` or a prompt text.
        pmi: also compute PMI_Q and PMI_P (2 more forwards per sample).
        pmi_marginal: also compute the marginal PMI_Q (K more forwards; needs ``pmi``).
        visual: what V is: ``"image"`` (the sample's images) or ``"video"`` (its video; the
            support pairs are (video, question); V = ∅ is ``"blind"`` (``no_video``),
            ``"black"`` / ``"mean"`` (``null_video`` frames) or ``"mismatched"``).
        edits: interventions applied in every forward (and in the greedy generation).
        run: how it runs (:class:`~interp.options.RunOptions`; default ``batch_size`` 32, rows
            per forward): store, overwrite, shard as in :func:`interp.residual_stream` (the
            greedy answers get their own store under ``store/answers``); its fields may also be
            given as keywords (``batch_size=8``, ``store=...``).

    Raises:
        RemoteError: a remote run holding edits (before any request).
        SupportError: ``k`` < 1, ``k`` larger than the samples, an empty support.
        ImageError: a sample or support sample without an image.
        EmptyTargetError: a target that tokenises to nothing (or an empty greedy answer).
        VideoError: with ``visual="video"``, a sample or support sample without a video.
        ConditionError: an unknown ``null_image`` or ``visual``, or a null image without a video
            counterpart (``"white"``, ``"noise"``) with ``visual="video"``.
        DriveError: not one target per sample, or bad ``batch_size`` / ``max_new_tokens``.
    """
    opts = drives_options(run, options)
    samples, visual, nimg, qpart, sup, ids, edits, partners = _setup(
        vlm,
        samples,
        opts,
        targets,
        null_image,
        null_question,
        max_new_tokens,
        edits,
        visual,
        support=(support, k, seed),
    )
    K = len(sup)
    marginal = bool(pmi and pmi_marginal)
    contexts = drive_contexts(
        samples,
        sup,
        null_image=nimg,
        null_question=qpart.arg or "",
        pmi=pmi,
        visual=visual,
        pmi_marginal=marginal,
    )

    settings = {
        "support": [c.fingerprint() for c in sup],
        "null_image": nimg,
        "null_question": qpart.arg or "",
        "pmi": pmi,
    }
    if visual == "video":  # image stores keep their settings (and resume)
        settings["visual"] = visual
    if marginal:  # stores without it keep their settings
        settings["pmi_marginal"] = True
    lps = _measure(
        vlm,
        samples,
        ids,
        contexts,
        name="causal_drives",
        settings=settings,
        extras=_partner_prints(samples, partners),
        edits=edits,
        run=replace(opts, store=substore(opts.store, "drives")),
    )
    arrays = _drive_arrays(lps, K, pmi, marginal)
    mask = _answer_mask(ids)
    width = mask.shape[1]
    return CausalDrives(
        sample_ids=[str(s.id) for s in samples],
        token_ids=ids,
        tokens=[list(vlm.tokenizer.convert_ids_to_tokens(t)) for t in ids],
        answers=[vlm.tokenizer.decode(t, skip_special_tokens=True).strip() for t in ids],
        p0=_pad(arrays["p0"], width),
        prefix_drive=_pad(arrays["prefix_drive"], width),
        question_drive=_pad(arrays["question_drive"], width),
        visual_drive=_pad(arrays["visual_drive"], width),
        mask=mask,
        pmi_q=_pad(arrays["pmi_q"], width) if pmi else None,
        pmi_p=_pad(arrays["pmi_p"], width) if pmi else None,
        support_ids=[str(c.id) for c in sup],
        null_image=nimg,
        null_question=qpart.arg or "",
        forwards_per_sample=2 * K + 2 + (2 if pmi else 0) + (K if marginal else 0),
        visual=visual,
        pmi_q_marginal=_pad(arrays["pmi_q_marginal"], width) if marginal else None,
    )


__all__ = [
    "causal_drives",
    "score_contexts",
]
