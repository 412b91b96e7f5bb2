"""The attention weights of the last prompt position: :func:`attention_weights`.

Why: attention to image tokens is the descriptive baseline of attribution maps (which image
tokens does the position that predicts the answer look at, per layer and head?), and attention
mass on a set of positions is a common reading. The weights are eager attention's: its second
output where the model runs eager attention here, and otherwise (SDPA, a remote run) recomputed
from the inputs of each layer's attention call (:func:`interp.plain.attention_kind`), so the
measurement runs here or on NDIF alike (one plain request per batch).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from jaxtyping import Float
from torch import Tensor

from .conditions import Condition
from .edits import Batch, Intervention, check_edits, local_only
from .encoding import batches
from .options import RunOptions
from .reprs import Summary
from .residual import check_visual_attention
from .runner import Job
from .runner import run as run_job
from .samples import Sample, ensure_samples
from .tracing import forward_reads

if TYPE_CHECKING:
    from .model import VLM


@dataclass(repr=False)
class AttentionWeights(Summary):
    """The last prompt position's attention weights, per sample.

    Attributes:
        weights: per sample a float32 CPU ``[L, heads, seq]``: ``weights[l, h, k]`` is the
            attention of decoder layer l + 1's head h from the last prompt position to key
            position k, keys counted from the sample's first prompt token (the positions of the
            sample encoded alone, as :func:`interp.token_regions` of that sample gives them).
        sample_ids: ``Sample.id`` of each row.
        condition: the condition of the prompts.
    """

    weights: list[Tensor]  # per sample [layer, head, seq_i]: lengths differ
    sample_ids: list[str]
    condition: str

    def _repr_head(self) -> dict[str, Any]:
        return {"n": len(self), "condition": self.condition}

    def __len__(self) -> int:
        return len(self.sample_ids)

    def mass(self, row: int, positions: Sequence[int] | np.ndarray) -> Float[Tensor, "layer head"]:
        """Attention mass of sample ``row``'s last prompt position on ``positions`` (keys of the
        sample encoded alone), per layer and head: the sum of the weights over them."""
        index = torch.as_tensor(np.asarray(positions, dtype=np.int64))
        return self.weights[row][:, :, index].sum(-1)


def attention_weights(
    vlm: VLM,
    samples: Sequence[Sample] | Sample,
    condition: str | Condition = "full",
    *,
    edits: Sequence[Intervention] | None = None,
    run: RunOptions | None = None,
    **options: Any,
) -> AttentionWeights:
    """Attention weights of the last prompt position (the one that predicts the answer's first
    token) to every prompt position, for every decoder layer and head: one forward per batch.

    Args:
        edits: interventions applied during the forward.
        run: how it runs (:class:`~interp.options.RunOptions`: batch size, store, shard,
            progress bar, nnsight trace options); its fields may also be given as keywords, as
            in :func:`interp.residual_stream`.

    Raises:
        InterpError: flash attention (no 4-D mask to recompute the weights with), or the image
            enters through cross-attention.
        RemoteError: a remote run with an edit that does not lower, before any compute.
    """
    opts = RunOptions.resolve(run, **options)
    trace_options = opts.trace_options()
    samples = ensure_samples(samples)
    cond = Condition.parse(condition)
    local_only(vlm, trace_options, "attention_weights", edits=edits or ())
    check_visual_attention(vlm)
    edits = check_edits(vlm, edits)
    job = Job("attention_weights", {}, conditions=[cond], edits=edits, pool=samples)

    def compute(chunk: list[Sample]) -> tuple[dict[str, Tensor], list[dict[str, Any]]]:
        parts: list[Tensor | None] = [None] * len(chunk)
        for idx, enc in batches(vlm, chunk, cond, opts.batch_size, all_samples=samples):
            picked = [chunk[i] for i in idx]
            batch = Batch(vlm, enc, picked, cond, "forward", samples, trace_options=trace_options)
            rows = torch.arange(len(enc), device=enc.last_index.device)
            _, stacked = forward_reads(
                vlm, batch, enc, [1], rows, enc.last_index, edits, weights=True, **trace_options
            )
            assert stacked is not None
            stacked = stacked.detach().to("cpu", torch.float32)  # [batch, layer, head, seq]
            starts = enc.attention_mask.long().argmax(dim=1).cpu()  # left padding
            last = enc.last_index.cpu()
            for row, i in enumerate(idx):
                parts[i] = stacked[row, :, :, int(starts[row]) : int(last[row]) + 1]
        width = max(int(p.shape[-1]) for p in parts if p is not None)
        out = torch.zeros(len(chunk), *parts[0].shape[:2], width)  # type: ignore[union-attr]
        for i, p in enumerate(parts):
            assert p is not None
            out[i, :, :, : p.shape[-1]] = p
        return {"weights": out}, [{"n": int(p.shape[-1])} for p in parts if p is not None]

    _, tensors, records = run_job(vlm, samples, job, compute, opts)
    return AttentionWeights(
        weights=[tensors["weights"][i, :, :, : r["n"]] for i, r in enumerate(records)],
        sample_ids=[str(s.id) for s in samples],
        condition=str(cond),
    )


__all__ = ["AttentionWeights", "attention_weights"]
