"""Gradients of a teacher-forced answer with respect to the residual stream at the image tokens:
:func:`image_gradients`.

Why: attribution patching approximates the effect of replacing a state ``h`` by another ``h'``
(e.g. the null image's) by the first-order term ``∂ log p / ∂h · (h' − h)``, one forward and one
backward for every position at once, where patching each position would cost a forward each. The
measurement gives, per sample, the residual state ``h_l`` at the image-token positions and the
gradient of ``log p(answer | prompt)`` (natural log, summed over the answer's tokens) with respect
to it. The model's weights are frozen during the run (no weight gradient is kept); the gradient
flows from the decoder input on.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from .conditions import Condition
from .edits import Batch, Intervention, check_edits, local_only
from .encoding import batches, target_ids
from .errors import ConditionError, EmptyInputError, InterpError
from .options import RunOptions
from .reprs import Summary
from .runner import Job
from .runner import run as run_job
from .samples import Sample, ensure_samples
from .scoring import scored_forward
from .tracing import forward_reads

if TYPE_CHECKING:
    from .model import VLM


@dataclass(repr=False)
class ImageGradients(Summary):
    """Per sample, at its image-token positions (in prompt order) and residual index ``layer``:

    Attributes:
        states: float32 CPU ``[k_i, d]``: ``h_layer``.
        grads: float32 CPU ``[k_i, d]``: ``∂ log p(answer) / ∂ h_layer`` (None with
            ``gradients=False``).
        logprobs: ``[N]`` log p(answer | prompt) (None with ``gradients=False``).
        layer: the residual index (0 = the decoder input, l = output of decoder layer l).
        sample_ids, condition: the samples and their condition.
    """

    states: list[Tensor]
    grads: list[Tensor] | None
    logprobs: Tensor | None
    layer: int
    sample_ids: list[str]
    condition: str

    def _repr_head(self) -> dict[str, Any]:
        return {"n": len(self), "layer": self.layer, "condition": self.condition}

    def __len__(self) -> int:
        return len(self.sample_ids)


@contextmanager
def _frozen(vlm: VLM) -> Iterator[None]:
    params = [p for p in vlm.hf.parameters() if p.requires_grad]
    for p in params:
        p.requires_grad_(False)
    try:
        yield
    finally:
        for p in params:
            p.requires_grad_(True)


def image_gradients(
    vlm: VLM,
    samples: Sequence[Sample] | Sample,
    targets: Sequence[str | Sequence[int]] | None = None,
    condition: str | Condition = "full",
    *,
    layer: int,
    gradients: bool = True,
    edits: Sequence[Intervention] | None = None,
    run: RunOptions | None = None,
    **options: Any,
) -> ImageGradients:
    """The residual state at residual index ``layer`` on every image token, and (with
    ``gradients``) the gradient of the teacher-forced ``log p(target | prompt)`` with respect to
    it: one forward and one backward per batch (rows are independent, so the gradient of the
    batch's sum is each row's own). Without ``gradients`` only the states are read (e.g. those of
    the null image), in a prompt forward.

    Args:
        targets: one per sample (text, tokenised without special tokens, or token ids); default
            each sample's answer. Unused without ``gradients``.
        layer: 0..L (0 = the decoder input: for token fusion the image embeddings themselves).
        edits: interventions applied during the forward.
        run: how it runs (:class:`~interp.options.RunOptions`: batch size, store, progress bar,
            nnsight trace options); its fields may also be given as keywords, as in
            :func:`interp.residual_stream`.

    Raises:
        RemoteError: a remote run with an edit that does not lower (before any compute).
        InterpError: cross-attention fusion (no image tokens in the prompt); ``layer`` outside
            0..L.
        EmptyInputError: no targets and a sample without an answer.
        ConditionError: a ``no_prefix`` condition.
    """
    opts = RunOptions.resolve(run, **options)
    trace = opts.trace_options()
    local_only(vlm, trace, "image_gradients", edits=edits or ())
    samples = ensure_samples(samples)
    cond = Condition.parse(condition)
    if vlm.adapter.fusion != "tokens":
        raise InterpError(
            f"{vlm.adapter.name}'s image enters through cross-attention: no image tokens to take "
            "gradients at"
        )
    if not 0 <= layer <= vlm.n_layers:
        raise InterpError(f"layer {layer} is outside the residual indices 0..{vlm.n_layers}")
    if cond.prefix == "removed":
        raise ConditionError("image_gradients teacher-forces the whole answer: drop 'no_prefix'")
    ids: list[list[int]] = [[] for _ in samples]
    if gradients:
        if targets is None:
            missing = [s.id for s in samples if not s.answer]
            if missing:
                raise EmptyInputError(f"samples {missing[:5]} have no answer; pass targets=")
            targets = [str(s.answer) for s in samples]
        if len(targets) != len(samples):
            raise ValueError(f"{len(targets)} targets for {len(samples)} samples")
        ids = target_ids(vlm, targets)
    by_id = {str(s.id): t for s, t in zip(samples, ids)}
    edits = check_edits(vlm, edits)
    job = Job(
        "image_gradients",
        {"layer": layer, "gradients": gradients},
        conditions=[cond],
        edits=edits,
        extras=ids,
        pool=samples,
    )

    def compute(chunk: list[Sample]) -> tuple[dict[str, Tensor], list[dict[str, Any]]]:
        parts: list[tuple[Tensor, Tensor | None, float]] = [None] * len(chunk)  # type: ignore[list-item]
        for idx, enc in batches(vlm, chunk, cond, opts.batch_size, all_samples=samples):
            rows = [chunk[i] for i in idx]
            kind = "score" if gradients else "forward"
            batch = Batch(vlm, enc, rows, cond, kind, samples, trace_options=trace)
            answer_ids = [by_id[str(s.id)] for s in rows]
            out = _one_batch(vlm, batch, answer_ids, layer, gradients, edits)
            for row, i in enumerate(idx):
                parts[i] = out[row]
        width = max(int(p[0].shape[0]) for p in parts)
        states = torch.zeros(len(chunk), width, vlm.d_model)
        grads = torch.zeros(len(chunk), width, vlm.d_model)
        for i, (st, gr, _) in enumerate(parts):
            states[i, : len(st)] = st
            if gr is not None:
                grads[i, : len(gr)] = gr
        records = [{"n": int(p[0].shape[0]), "logprob": p[2]} for p in parts]
        return {"states": states, "grads": grads}, records

    _, tensors, records = run_job(vlm, samples, job, compute, opts)
    n = [r["n"] for r in records]
    return ImageGradients(
        states=[tensors["states"][i, :k] for i, k in enumerate(n)],
        grads=[tensors["grads"][i, :k] for i, k in enumerate(n)] if gradients else None,
        logprobs=torch.tensor([r["logprob"] for r in records]) if gradients else None,
        layer=layer,
        sample_ids=[str(s.id) for s in samples],
        condition=str(cond),
    )


def _one_batch(
    vlm: VLM,
    batch: Batch,
    targets: list[list[int]],
    layer: int,
    gradients: bool,
    edits: Sequence[Intervention],
) -> list[tuple[Tensor, Tensor | None, float]]:
    """One batch: the residual stream at ``layer`` over each row's image tokens and, with
    ``gradients``, its gradient and the answer's summed log-probability — plain blocks both
    (:func:`interp.tracing.forward_reads`, :func:`interp.scoring.scored_forward`), so they run
    here or on NDIF."""
    enc = batch.encoding
    trace = batch.trace_options
    if not gradients:  # every position of every row, one read
        rows = torch.arange(len(enc), device=enc.last_index.device)[:, None]
        index = torch.arange(enc.input_ids.shape[1], device=rows.device).expand(len(enc), -1)
        read, _ = forward_reads(vlm, batch, enc, [layer], rows, index, edits, **trace)
        image = enc.image_mask
        return [(read[r, 0][image[r].cpu()], None, float("nan")) for r in range(len(enc))]
    with _frozen(vlm):
        logprobs, states, grads = scored_forward(
            vlm, batch, targets, edits, gradient_at=layer, **trace
        )
    assert states is not None and grads is not None and batch.traced is not None
    mask = batch.traced.image_mask
    out = []
    for r in range(len(enc)):
        m = mask[r].to(states.device)
        out.append(
            (states[r][m].float().cpu(), grads[r][m].float().cpu(), float(logprobs[r].sum()))
        )
    return out


__all__ = ["ImageGradients", "image_gradients"]
