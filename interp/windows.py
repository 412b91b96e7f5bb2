"""Sweeps of edits confined to windows of decoder layers (the information-flow study's
knockouts): :func:`score_windows` scores each sample's target clean and under every window's
edits, with layer resume (:mod:`interp.resume`), here or on NDIF.

Locally each forward is :func:`interp.scoring.scored_forward`: the clean forward of a batch keeps
the residual stream at every window's first layer and each window's forward resumes from it.
Remotely a batch is **one request**: an nnsight session whose clean trace keeps those states in
the server's memory, and whose window traces skip the layers below their window with them
(:func:`remote_totals`). Only plain data crosses the wire (:mod:`interp.plain`): the inputs, each
window's writes, the read's indices and the envoys' paths go up, one total per row and pass comes
back; the kept states never leave the server.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from jaxtyping import Float
from torch import Tensor

from . import scoring
from .conditions import Condition
from .edits import Batch, Intervention, check_edits, edit_hook, local_only
from .encoding import batches, target_ids
from .options import RunOptions, is_remote
from .plain import head_transform
from .resume import Resume, resumed_inputs
from .runner import Job
from .runner import run as run_job
from .samples import Sample, ensure_samples
from .wire import apply_writes, target_logprobs

if TYPE_CHECKING:
    from .model import VLM

Pass = tuple[int, Sequence[Intervention]]
"""One pass of a sweep: ``(a, edits)``, edits that touch only decoder layers ``a..L``
(1-based)."""


def score_windows(
    vlm: VLM,
    samples: Sequence[Sample],
    targets: Sequence[str | Sequence[int]],
    passes: Sequence[Pass],
    *,
    labels: Mapping[str, Any] | None = None,
    run: RunOptions,
) -> tuple[np.ndarray, list[np.ndarray]]:
    """Teacher-forced totals ``Σ_t log p(a_t | a_<t, x)`` of each sample's target, clean and under
    each pass ``(a, edits)`` whose edits touch only decoder layers ``a..L`` (1-based), with layer
    resume (:mod:`interp.resume`): per batch the clean forward keeps the output of decoder layer
    ``a - 1`` for every pass's ``a`` > 1, and each pass's forward skips layers ``1..a-1``, giving
    them that output. The values are :func:`interp.score`'s totals (float32 sums, then float64)
    within float tolerance. Where :func:`interp.resume.why_not` allows it, locally or remotely
    (one request per batch, :func:`remote_totals`).

    With ``run.store`` the clean and every pass's totals of each chunk of samples are written
    together as one resumable run (identified by the edits of every pass, each pass's first
    layer and ``labels``), and ``run.shard`` splits the samples as for any measurement.

    Returns:
        the clean totals ``[n]`` and one ``[n]`` array per pass, float64, in sample order.

    Raises:
        RemoteError: a remote run whose edits do not lower to plain writes (before any request).
    """
    trace = run.trace_options()
    cond = Condition.parse("full")
    samples = ensure_samples(samples)
    ids = target_ids(vlm, targets)
    keep = tuple(sorted({a - 2 for a, _ in passes if a > 1}))  # 0-based layer a-1 of start a
    every = [e for _, edits in passes for e in edits]
    local_only(vlm, trace, "a sweep of windows", edits=every)  # refused before any check
    checked = [(a - 1, check_edits(vlm, edits)) for a, edits in passes]
    settings = {"passes": [[a, len(e)] for a, e in passes], **dict(labels or {})}
    job = Job(
        "score_windows",
        settings,
        conditions=[cond],
        edits=[e for _, edits in checked for e in edits],
        extras=ids,
        pool=samples,
    )
    index = {str(s.id): i for i, s in enumerate(samples)}
    away = is_remote(trace) or bool(getattr(vlm, "remote", False))

    def compute(chunk: list[Sample]) -> tuple[dict[str, Tensor], list[dict[str, Any]]]:
        # column 0 the clean totals, column 1 + p pass p's
        totals = torch.zeros(len(chunk), 1 + len(passes), dtype=torch.float64)
        for idx, enc in batches(vlm, chunk, cond, run.batch_size, all_samples=samples):
            rows = [chunk[i] for i in idx]
            tgt = [ids[index[str(s.id)]] for s in rows]
            if away:
                plan = [
                    (Batch(vlm, enc, rows, cond, "score", samples, trace_options=trace), e, a)
                    for a, e in [(0, []), *checked]
                ]
                totals[idx] = remote_totals(vlm, plan, tgt, keep, trace).double()
                continue
            clean = Resume(keep=keep)
            steps = [([], clean)] + [(e, clean.at(a)) for a, e in checked]
            for col, (edits, resume) in enumerate(steps):  # the clean forward first: it keeps
                batch = Batch(vlm, enc, rows, cond, "score", samples, trace_options=trace)
                lp = scoring.scored_forward(vlm, batch, tgt, edits, resume=resume, **trace)[0]
                totals[idx, col] = lp.sum(dim=1).double()
        return {"totals": totals}, [{} for _ in chunk]

    _, tensors, _ = run_job(vlm, samples, job, compute, run)
    totals = tensors["totals"].numpy()
    return totals[:, 0], [totals[:, 1 + p] for p in range(len(passes))]


def remote_totals(
    vlm: VLM,
    plan: Sequence[tuple[Batch, Sequence[Intervention], int]],
    targets: Sequence[Sequence[int]],
    keep: Sequence[int],
    trace_options: dict[str, Any],
) -> Float[Tensor, "batch passes"]:
    """One batch's sweep as one request: an nnsight session of one trace per ``(batch, edits,
    start)`` of ``plan`` (the clean pass first, ``start`` 0), each the teacher-forced forward of
    :func:`interp.scoring.scored_forward` lowered to plain data. The clean trace keeps the outputs
    of the decoder layers in ``keep`` (0-based) in the session; a pass with ``start`` = a skips
    layers ``0..a-1``, each giving the kept output of layer ``a - 1``, and leaves out the media
    inputs (:func:`interp.resume.resumed_inputs`). Returns the float32 totals ``Σ_t log p`` per row
    and pass, ``[batch, len(plan)]``."""
    sent = {k: v for k, v in trace_options.items() if k in ("remote", "backend")}
    if vlm.remote and not is_remote(sent):
        sent["remote"] = vlm.remote
    extra = {k: v for k, v in trace_options.items() if k not in sent}
    steps = []
    for batch, edits, start in plan:
        traced, rows, where, tgt, valid = scoring.teacher_forced(vlm, batch, targets)
        writes, hook = edit_hook(vlm, batch, edits)
        # refused before the request: a block holding library objects, a text-only module
        _, inputs = vlm.trace_keywords(traced, plain=hook is None, **sent)
        inputs, where = scoring.head_tail(vlm, traced, inputs, where, valid, writes, hook)
        if start:  # the media's features would feed only the skipped layers
            inputs = resumed_inputs(vlm, inputs)
        keeps = [] if steps else list(keep)  # the clean pass (the first) keeps
        steps.append((inputs, [w for w, _ in writes], start, keeps, rows, where, tgt, valid))
    # plain data only inside the block (interp.plain): envoys, tensors, ints
    nn, layers, head, (scale, cap) = vlm.nn, list(vlm.layers), vlm.lm_head, head_transform(vlm)
    with torch.no_grad(), nn.session(**sent):
        kept = {}
        sums = []
        for inputs, writes, start, keeps, rows, where, tgt, valid in steps:
            with nn.trace(**extra) as tracer:
                for edit_writes in writes:  # one invoke per edit (interp.wire: by source)
                    with tracer.invoke():
                        apply_writes(edit_writes, 0)
                with tracer.invoke(**inputs):
                    for layer in layers[:start]:  # below the window: the kept state
                        layer.skip(kept[start - 1])
                    for k in keeps:  # the clean pass: each window's starting state
                        kept[k] = layers[k].output
                    lp = target_logprobs(head.output, rows, where, tgt, scale, cap)
                    sums.append((lp * valid.to(lp.device)).sum(1))
        totals = torch.stack(sums, 1).save()
    return totals.cpu()


__all__ = ["Pass", "remote_totals", "score_windows"]
