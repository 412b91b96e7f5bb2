"""Teacher-forced scoring: :func:`score` (one target per sample under one condition) and
:func:`score_contexts` (one target per sample under several contexts each)."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd
import torch
from jaxtyping import Bool, Float
from torch import Tensor

from . import prefix
from .conditions import Condition
from .edits import Batch, Intervention, check_edits, edit_hook, local_only
from .encoding import Encoding, append_targets, batches, target_ids
from .encoding.assemble import assemble, check_pixel_conditions
from .encoding.batch import batch_rows
from .encoding.codec import as_codec
from .encoding.resolve import resolve
from .errors import ContextError, EmptyInputError
from .options import RunOptions
from .plain import head_transform, residual_site, stand_in
from .reprs import Summary
from .resume import Resume, resumed_inputs
from .runner import Job
from .runner import run as run_job
from .samples import Sample, ensure_samples
from .wire import apply_writes, target_logprobs

if TYPE_CHECKING:
    from .model import VLM


@dataclass(repr=False)
class TokenScores(Summary):
    """Per-token log-probabilities (natural log) of teacher-forced targets.

    ``logprobs[i, t] = log p(a_t | a_<t, x_i)`` for t < len(target i); entries past a target's end
    are 0 and ``mask`` is False there.
    """

    logprobs: Float[Tensor, "n tgt"]
    mask: Bool[Tensor, "n tgt"]
    token_ids: list[list[int]]
    sample_ids: list[str]
    condition: str

    def _repr_head(self) -> dict[str, Any]:
        return {
            "n": len(self.sample_ids),
            "condition": self.condition,
            "mean_logprob": float(self.total.mean()) if self.sample_ids else None,
        }

    @property
    def total(self) -> Float[Tensor, " n"]:
        """log p(a_1..a_T | x): the sum over the target's tokens."""
        return (self.logprobs * self.mask).sum(dim=1)

    @property
    def mean(self) -> Float[Tensor, " n"]:
        """Mean per-token log-probability."""
        return self.total / self.mask.sum(dim=1)

    def to_frame(self) -> pd.DataFrame:
        """One row per target token: sample id, condition, position ``t``, token id, log-probability."""
        rows = []
        for i, (sid, ids) in enumerate(zip(self.sample_ids, self.token_ids)):
            for t, tok in enumerate(ids):
                rows.append(
                    {
                        "sample_id": sid,
                        "condition": self.condition,
                        "t": t,
                        "token_id": tok,
                        "logprob": float(self.logprobs[i, t]),
                    }
                )
        return pd.DataFrame(rows)


def trace_target_logprobs(
    vlm: VLM,
    batch: Batch,
    targets: Sequence[Sequence[int]],
    edits: Sequence[Intervention] = (),
    **trace_kwargs: Any,
) -> Float[Tensor, "batch tgt"]:
    """One teacher-forced forward: log p of each target token given everything before it.

    With the prefix kept, the forward holds prompt + target and the logit at position p predicts
    the token at p + 1. With the prefix removed (``no_prefix``), the forward holds the prompt only
    and every target token is scored by the last prompt position's distribution: p(a_t | x),
    without a_<t.
    """
    return scored_forward(vlm, batch, targets, edits, **trace_kwargs)[0]


def teacher_forced(
    vlm: VLM, batch: Batch, targets: Sequence[Sequence[int]]
) -> tuple[Encoding, Tensor, Tensor, Tensor, Tensor]:
    """The plain data of a teacher-forced read of ``targets`` on ``batch``: ``(traced, rows,
    where, tgt, valid)`` — the traced encoding (prompt + targets, or the prompt alone without the
    prefix), and the indices :func:`interp.wire.target_logprobs` reads with: the logit at
    ``(rows, where[r, t])`` scores token ``tgt[r, t]`` where ``valid[r, t]``. Sets
    ``batch.traced`` and ``batch.answer_mask`` (the target positions) for the edits to lower."""
    enc = batch.encoding
    width = max(len(t) for t in targets)
    tgt = torch.zeros(len(enc), width, dtype=torch.long, device=enc.input_ids.device)
    valid = torch.zeros(len(enc), width, dtype=torch.bool, device=enc.input_ids.device)
    for row, ids in enumerate(targets):
        tgt[row, : len(ids)] = torch.tensor(ids, device=tgt.device)
        valid[row, : len(ids)] = True
    rows = torch.arange(len(enc), device=tgt.device)[:, None]
    if batch.condition.prefix == "removed":
        traced, where = enc, enc.last_index[:, None].expand(-1, width)
        answer = torch.zeros_like(enc.image_mask)
    else:
        traced, positions, valid = append_targets(vlm, enc, targets)
        where = positions - 1  # the logit at position p predicts the token at p + 1
        answer = torch.zeros_like(traced.image_mask)
        answer[rows.expand_as(positions)[valid], positions[valid]] = True
    batch.traced, batch.answer_mask = traced, answer
    return traced, rows, where, tgt, valid


def head_tail(
    vlm: VLM,
    traced: Encoding,
    inputs: dict[str, Any],
    where: Tensor,
    valid: Tensor,
    writes: Sequence[Any],
    hook: Any,
) -> tuple[dict[str, Any], Tensor]:
    """Only the positions a teacher-forced read needs go through the head: the forward gets
    HF's ``logits_to_keep = k`` (its head sees the last k positions, k = T - min ``where``: the
    targets are appended on the right, so they are the sequence's tail), and ``where`` counts
    from the end (``where - T``, whatever the number of positions the head returns). At real
    width the head over the whole sequence costs about two thirds of a decoder layer (d = 4096,
    32k vocabulary). Unchanged where the forward does not take ``logits_to_keep`` (or a
    text-only batch runs another module), and where an edit may see the head's output (an edit
    that does not lower, or a write to the head)."""
    head = getattr(vlm.lm_head, "_module", None)
    if hook is not None or any(
        getattr(w[0], "_module", w[0]) is head for e, _ in writes for w in e
    ):
        return inputs, where
    if vlm.adapter.text_only_module is not None and not any(traced.has_image):
        return inputs, where
    try:
        params = inspect.signature(vlm.hf.forward).parameters
    except (TypeError, ValueError):
        return inputs, where
    if "logits_to_keep" not in params or not bool(valid.any()):
        return inputs, where
    n = traced.input_ids.shape[1]
    first = int(where[valid].min())
    # padded targets' entries (not valid) are read and masked: keep them inside the tail
    return {**inputs, "logits_to_keep": n - first}, (where - n).clamp(min=first - n)


def scored_forward(
    vlm: VLM,
    batch: Batch,
    targets: Sequence[Sequence[int]],
    edits: Sequence[Intervention] = (),
    *,
    gradient_at: int | None = None,
    resume: Resume | None = None,
    **trace_kwargs: Any,
) -> tuple[Float[Tensor, "batch tgt"], Tensor | None, Tensor | None]:
    """:func:`trace_target_logprobs`'s forward, and with ``gradient_at`` = l also the residual
    stream ``h^l`` (``[batch, seq, d]``, the traced sequence: prompt + target) and the gradient
    ``∂ Σ_t log p(a_t | ·) / ∂ h^l`` of the batch's summed target log-probability (rows are
    independent, so each row's is its own), from one backward in the same plain block — here or
    on NDIF. The gradient starts at the decoder's input embeddings (``requires_grad`` set there:
    the caller freezes the weights, as NDIF's deployments are). Returns ``(logprobs, h, grad)``
    (None, None without ``gradient_at``).

    With ``resume`` (:mod:`interp.resume`, a local forward), decoder layers ``0..resume.start-1``
    do not run and output the kept ``resume.states[resume.start - 1]``, and the outputs of the
    layers in ``resume.keep`` are kept into ``resume.states``.
    """
    traced, rows, where, tgt, valid = teacher_forced(vlm, batch, targets)
    # plain data only inside the block (it runs here or on NDIF: interp.plain)
    head, (scale, cap) = vlm.lm_head, head_transform(vlm)
    writes, hook = edit_hook(vlm, batch, edits)
    grad_sites = None
    if gradient_at is not None:  # (the embeddings, where the gradient starts), h^l
        skipped = batch.skipped_layers
        start, read = residual_site(vlm, 0, skipped), residual_site(vlm, gradient_at, skipped)
        grad_sites = (start, read, stand_in(gradient_at, skipped) == 0)
    states = grads = None
    # layer resume (local only) as plain data: the envoys to skip, the kept state, those to keep
    skips: list[Any] = []
    keeps: list[Any] = []
    kept: list[Any] = []
    state: Any = None
    if resume is not None:
        skips = [vlm.layers[i] for i in range(resume.start)]
        keeps = [vlm.layers[i] for i in resume.keep]
        state = resume.states[resume.start - 1] if resume.start else None
    trace, inputs = vlm.open_trace(traced, plain=hook is None, **trace_kwargs)
    inputs, where = head_tail(vlm, traced, inputs, where, valid, writes, hook)
    if state is not None:
        # the media's features would feed only the skipped layers: the vision tower does not run
        inputs = resumed_inputs(vlm, inputs)
    mode = torch.no_grad() if grad_sites is None else torch.enable_grad()
    with mode, trace as tracer:
        if hook is not None:  # edits first: the read sees edited logits
            hook(tracer)
        for edit_writes, _ in writes:  # one invoke per edit (interp.wire: by source)
            with tracer.invoke():
                apply_writes(edit_writes, 0)
        with tracer.invoke(**inputs):
            for layer in skips:  # layers below the start give the kept state (interp.resume)
                layer.skip(state)
            kept.extend(layer.output.save() for layer in keeps)
            if grad_sites is not None:  # the gradient starts at the embeddings (frozen weights)
                (s0, p0), (s1, p1), same = grad_sites
                v = getattr(s0, p0[0])
                for key in p0[1:]:
                    v = v[key]
                h = v[0] if isinstance(v, tuple) else v
                h.requires_grad_(True)
                if not same:
                    h = getattr(s1, p1[0])
                    for key in p1[1:]:
                        h = h[key]
                    h = h[0] if isinstance(h, tuple) else h
                states = h.detach().clone().save()
            picked = target_logprobs(head.output, rows, where, tgt, scale, cap)
            lp = picked.detach().save()  # (a tensor in the graph does not cross the wire)
            if grad_sites is not None:
                with (picked * valid).sum().backward():
                    grads = h.grad.detach().clone().save()
    if resume is not None:
        resume.states.update(zip(resume.keep, kept))
    return (lp * valid).cpu(), states, grads


def score(
    vlm: VLM,
    samples: Sequence[Sample] | Sample,
    targets: Sequence[str | Sequence[int]] | None = None,
    condition: str | Condition = "full",
    *,
    edits: Sequence[Intervention] | None = None,
    run: RunOptions | None = None,
    **options: Any,
) -> TokenScores:
    """Teacher-forced per-token log-probabilities of each target continuation, one trace per batch.

    Args:
        targets: one per sample, a string (tokenised without special tokens) or token ids (e.g. a
            generated answer's); defaults to each sample's ``answer``.
        condition: how samples become inputs; with the ``no_prefix`` part each target token is
            scored right after the prompt, without the target tokens before it.
        edits: interventions applied during the teacher-forced forward (``ctx.positions("answer")``
            are the target positions).
        run: how it runs (:class:`~interp.options.RunOptions`: batch size, store, shard,
            progress bar, nnsight trace options); its fields may also be given as keywords, as
            in :func:`interp.residual_stream`.

    Raises:
        EmptyTargetError: a target tokenises to nothing.
        EmptyInputError: no targets given and a sample has no answer.
    """
    opts = RunOptions.resolve(run, **options)
    trace = opts.trace_options()
    samples = ensure_samples(samples)
    cond = Condition.parse(condition)
    if targets is None:
        missing = [s.id for s in samples if not s.answer]
        if missing:
            raise EmptyInputError(f"samples {missing[:5]} have no answer; pass targets= explicitly")
        targets = [s.answer for s in samples]  # type: ignore[misc]
    if len(targets) != len(samples):
        raise ValueError(f"{len(targets)} targets for {len(samples)} samples: give one per sample")
    ids = target_ids(vlm, targets)
    by_id = {str(s.id): t for s, t in zip(samples, ids)}
    local_only(vlm, trace, "score", edits=edits or ())  # refused before any check
    edits = check_edits(vlm, edits)
    job = Job("score", {}, conditions=[cond], edits=edits, extras=ids, pool=samples)
    # samples that share an image run the tokens before their questions once (interp.prefix)
    shared = opts.share_prefix and prefix.applies(vlm, edits, trace)

    def compute(chunk: list[Sample]) -> tuple[dict[str, Tensor], list[dict[str, Any]]]:
        chunk_ids = [by_id[str(s.id)] for s in chunk]
        out = torch.zeros(len(chunk), max(len(t) for t in chunk_ids))
        if shared and prefix.worth_trying(chunk, cond):
            rows = [(s, cond) for s in chunk]
            lps = score_rows(vlm, rows, chunk_ids, pool=samples, run=_rows_run(opts))
            for i, lp in enumerate(lps):
                out[i, : len(lp)] = lp
            return {"logprobs": out}, [{"n": len(t)} for t in chunk_ids]
        for idx, enc in batches(vlm, chunk, cond, opts.batch_size, all_samples=samples):
            rows = [chunk[i] for i in idx]
            batch = Batch(vlm, enc, rows, cond, "score", samples, trace_options=trace)
            lp = trace_target_logprobs(vlm, batch, [chunk_ids[i] for i in idx], edits, **trace)
            for row, i in enumerate(idx):
                out[i, : len(chunk_ids[i])] = lp[row, : len(chunk_ids[i])]
        return {"logprobs": out}, [{"n": len(t)} for t in chunk_ids]

    _, tensors, records = run_job(vlm, samples, job, compute, opts)
    width = max(len(t) for t in ids)
    logprobs = torch.zeros(len(samples), width)
    mask = torch.zeros(len(samples), width, dtype=torch.bool)
    for i, r in enumerate(records):
        logprobs[i, : r["n"]] = tensors["logprobs"][i, : r["n"]]
        mask[i, : r["n"]] = True
    return TokenScores(logprobs, mask, ids, [str(s.id) for s in samples], str(cond))


Context = tuple[Sample, "str | Condition"]
"""One input to score a target under: a sample and the condition it is shown under."""
ContextsFn = Callable[[int, Sample], list[Context]]
"""``contexts(i, sample)`` → the contexts sample ``i`` is scored under (the same number for
every sample)."""


def _rows_run(opts: RunOptions) -> RunOptions:
    """A stored measurement's options for the :func:`score_rows` of one chunk: the chunk is
    already this process's share, and the measurement stores its results itself."""
    return dataclasses.replace(opts, store=None, shard=None)


def score_rows(
    vlm: VLM,
    rows: Sequence[Context],
    targets: Sequence[Sequence[int]],
    *,
    edits: Sequence[Intervention] = (),
    pool: Sequence[Sample] | None = None,
    run: RunOptions | None = None,
    **options: Any,
) -> list[Tensor]:
    """Natural-log ``log p(a_t | a_<t, context)`` of each row's target token ids, one
    teacher-forced forward per row (the values :func:`score` gives each row alone), rows of one
    condition batched together (``run.batch_size`` rows a forward; similar lengths share a
    batch). The run's trace options go to every trace (the edits' preparation included), e.g.
    ``remote=True``. No store: see :func:`score_contexts` for stored, resumable runs.

    With ``run.share_prefix`` (and a family that supports it, no edits, a local run), rows with
    equal media run the tokens they share once and only their own suffixes after it
    (:mod:`interp.prefix`): the same values within float tolerance, fewer tokens computed.
    ``pool``: the samples a ``swap`` part draws from (default: the rows of each condition).

    Args:
        run: how it runs (:class:`~interp.options.RunOptions`: batch size, prefix sharing,
            nnsight trace options); its fields may also be given as keywords, as in
            :func:`interp.residual_stream`.

    Returns:
        one float64 ``[T_row]`` tensor per row, in row order.

    Raises:
        ValueError: a store or a shard is asked for (rows are not stored; use
            :func:`score_contexts`).
    """
    opts = RunOptions.resolve(run, **options)
    if opts.store is not None or opts.shard is not None:
        raise ValueError(
            "score_rows keeps no store and computes every row: use score_contexts for a stored, "
            "sharded run"
        )
    batch_size, trace_kwargs = opts.batch_size, opts.trace_options()
    out: list[Tensor | None] = [None] * len(rows)
    groups: dict[Condition, list[int]] = {}
    for j, (_, cond) in enumerate(rows):
        groups.setdefault(Condition.parse(cond), []).append(j)
    pools: dict[Condition, list[int]] = {}
    for cond, where in groups.items():
        # similar lengths share a batch (less padding); every row is still scored on its own
        pools[cond] = sorted(where, key=lambda j: (len(targets[j]), len(rows[j][0].question), j))
    left = dict(pools)
    if opts.share_prefix and prefix.applies(vlm, edits, trace_kwargs):
        left = _score_shared(vlm, rows, targets, pools, out, batch_size, trace_kwargs, pool)
    for cond, where in pools.items():
        group = list(pool) if pool is not None else [rows[j][0] for j in where]  # for ``swap``
        todo = left[cond]
        if not todo:
            continue
        chosen = [rows[j][0] for j in todo]
        for sub, enc in batches(vlm, chosen, cond, batch_size, all_samples=group):
            batch = Batch(
                vlm, enc, [chosen[r] for r in sub], cond, "score", group, trace_options=trace_kwargs
            )
            lp = trace_target_logprobs(
                vlm, batch, [targets[todo[r]] for r in sub], edits, **trace_kwargs
            )
            for row, r in enumerate(sub):
                j = todo[r]
                out[j] = lp[row, : len(targets[j])].double()
    return out  # type: ignore[return-value]


def _score_shared(
    vlm: VLM,
    rows: Sequence[Context],
    targets: Sequence[Sequence[int]],
    pools: dict[Condition, list[int]],
    out: list[Tensor | None],
    batch_size: int,
    trace_kwargs: dict[str, Any],
    draw: Sequence[Sample] | None = None,
) -> dict[Condition, list[int]]:
    """Score the rows that share a prefix with others (:mod:`interp.prefix`) into ``out``; the
    rows left, per condition, in pool order."""
    codec = as_codec(vlm)
    units: list[prefix.Unit] = []
    order: list[tuple[Condition, int]] = []
    shared: dict[str, prefix.Prefix] = {}
    unshared: list[tuple[Condition, int]] = []
    for cond, where in pools.items():
        check_pixel_conditions(codec.adapter, [cond])
        pool = [rows[j][0] for j in where]
        resolved = resolve(pool, cond, codec.processor, all_samples=draw or pool)
        for idx in batch_rows(codec.adapter, resolved, batch_size):
            chosen = [resolved[i] for i in idx]
            keys = [prefix.media_key(row.seen) for row in chosen]
            for row, key in zip(chosen, keys):
                if key is not None and key not in shared:  # the prefix's inputs, encoded alone
                    shared[key] = prefix.representative(vlm, assemble(codec, [row]))
            enc = assemble(codec, chosen)
            tgts = [targets[where[i]] for i in idx]
            for i, u in zip(idx, prefix.units(vlm, enc, tgts, cond.prefix == "removed", keys)):
                if u is None:
                    unshared.append((cond, where[i]))
                else:
                    units.append(u)
                    order.append((cond, where[i]))
            for i in idx:
                resolved[i].release()
    groups, alone = prefix.plan(units)
    away = prefix.remote(vlm, trace_kwargs)
    for members, p in groups:
        head = shared[units[members[0]].key]
        if not away:  # remotely each request runs its own prefix (the cache stays there)
            cache, delta = prefix.run_prefix(vlm, head, p)
        # similar suffix lengths share a forward
        members = sorted(members, key=lambda i: (int(units[i].ids.shape[0]), i))
        for start in range(0, len(members), batch_size):
            chunk = members[start : start + batch_size]
            part = [units[i] for i in chunk]
            if away:
                lp = prefix.remote_logprobs(vlm, part, p, head, trace_kwargs)
            else:
                lp = prefix.suffix_logprobs(vlm, part, p, cache, delta, head, trace_kwargs)
            for row, i in enumerate(chunk):
                j = order[i][1]
                out[j] = lp[row, : len(targets[j])].double()
    left: dict[Condition, list[int]] = {cond: [] for cond in pools}
    for cond, j in [order[i] for i in alone] + unshared:
        left[cond].append(j)
    return {cond: sorted(js, key=pools[cond].index) for cond, js in left.items()}


def score_contexts(
    vlm: VLM,
    samples: Sequence[Sample] | Sample,
    targets: Sequence[str | Sequence[int]],
    contexts: ContextsFn,
    *,
    extras: Sequence[Any] | None = None,
    edits: Sequence[Intervention] | None = None,
    measurement: str = "score_contexts",
    labels: Mapping[str, Any] | None = None,
    run: RunOptions | None = None,
    **options: Any,
) -> list[Tensor]:
    """Teacher-forced log-probabilities of one target per sample under each of its contexts.

    For sample i with target a_1..a_T and contexts c_1..c_C = ``contexts(i, sample)`` (a sample
    and the condition it is shown under, e.g. the question with another image),

        out[i][c, t] = log p(a_t | a_<t, c)       (natural log; :func:`score` of that context)

    A chunk of ``run.batch_size`` samples is scored at a time, so every condition's rows fill whole
    forwards of as many rows (:func:`score_rows`).

    Args:
        targets: one per sample, text (tokenised without special tokens) or token ids.
        contexts: ``contexts(i, sample)`` → the C contexts (the same C for every sample). The
            conditions of sample 0's contexts, with ``labels``, identify the run in the store:
            name in ``labels`` whatever else the contexts depend on (e.g. the fingerprints of the
            samples they draw images from).
        extras: per-sample values that enter each sample's store key (e.g. the fingerprint of a
            partner sample its contexts use).
        edits: interventions applied in every forward.
        measurement, labels: the name and further settings the store records as its
            configuration.
        run: how it runs (:class:`~interp.options.RunOptions`: batch size, store, shard,
            progress bar, nnsight trace options); its fields may also be given as keywords, as
            in :func:`interp.residual_stream`.

    Returns:
        per sample a float64 CPU tensor ``[C, T_i]``, in sample order.

    Raises:
        EmptyTargetError: a target tokenises to nothing.
        ContextError: not one target per sample, or samples with different numbers of contexts.
    """
    opts = RunOptions.resolve(run, **options)
    trace = opts.trace_options()
    samples = ensure_samples(samples)
    if len(targets) != len(samples):
        raise ContextError(
            f"{len(targets)} targets for {len(samples)} samples: give one per sample"
        )
    ids = target_ids(vlm, targets)
    local_only(vlm, trace, measurement, edits=edits or ())  # refused before any check
    edits = check_edits(vlm, edits)
    probe = contexts(0, samples[0])
    conds = list(dict.fromkeys(Condition.parse(c) for _, c in probe))
    job = Job(
        measurement,
        dict(labels or {}),
        conditions=conds,
        edits=list(edits),
        extras=[[t, e] for t, e in zip(ids, extras or [None] * len(ids))],
        pool=samples,
    )
    index = {str(s.id): i for i, s in enumerate(samples)}

    def compute(chunk: list[Sample]) -> tuple[dict[str, Tensor], list[dict[str, Any]]]:
        rows: list[Context] = []
        tgts: list[list[int]] = []
        counts = []
        for s in chunk:
            i = index[str(s.id)]
            ctx = contexts(i, s)
            rows.extend(ctx)
            tgts.extend([ids[i]] * len(ctx))
            counts.append(len(ctx))
        if len(set(counts)) != 1:
            raise ContextError("every sample must have the same number of contexts")
        lps = score_rows(vlm, rows, tgts, edits=edits, run=_rows_run(opts))
        width = max(len(ids[index[str(s.id)]]) for s in chunk)
        out = torch.zeros(len(chunk), counts[0], width, dtype=torch.float64)
        for r, lp in enumerate(lps):
            out[r // counts[0], r % counts[0], : len(lp)] = lp
        return {"logprobs": out}, [{"n": len(ids[index[str(s.id)]])} for s in chunk]

    _, tensors, records = run_job(vlm, samples, job, compute, opts)
    return [tensors["logprobs"][i, :, : r["n"]] for i, r in enumerate(records)]


__all__ = [
    "Context",
    "ContextsFn",
    "TokenScores",
    "score",
    "score_contexts",
    "score_rows",
    "head_tail",
    "scored_forward",
    "teacher_forced",
    "trace_target_logprobs",
]
