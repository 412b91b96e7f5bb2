"""The attention weights of the last prompt position: :func:`attention_weights`.

Why: attention to image tokens is the descriptive baseline of attribution maps (which image
tokens does the position that predicts the answer look at, per layer and head?), and attention
mass on a set of positions is a common reading. The weights are the second output of each decoder
layer's self-attention, which transformers computes only with eager attention, so the measurement
checks that before any compute.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import nnsight
import numpy as np
import torch
from jaxtyping import Float
from torch import Tensor

from .conditions import Condition
from .edits import Batch, Intervention, apply_edits, check_edits, prepare_edits
from .encoding import batches
from .errors import InterpError
from .options import RunOptions
from .residual import check_visual_attention
from .runner import Job
from .runner import run as run_job
from .samples import Sample, ensure_samples

if TYPE_CHECKING:
    from .model import VLM


@dataclass
class AttentionWeights:
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

    def __len__(self) -> int:
        return len(self.sample_ids)

    def mass(self, row: int, positions: Sequence[int] | np.ndarray) -> Float[Tensor, "layer head"]:
        """Attention mass of sample ``row``'s last prompt position on ``positions`` (keys of the
        sample encoded alone), per layer and head: the sum of the weights over them."""
        index = torch.as_tensor(np.asarray(positions, dtype=np.int64))
        return self.weights[row][:, :, index].sum(-1)


def check_eager_weights(vlm: VLM) -> None:
    """Raise unless the model returns every layer's whole attention weights (eager attention's
    second output) and its image enters as tokens."""
    impl = getattr(vlm.hf.config, "_attn_implementation", None)
    if impl != "eager":
        raise InterpError(
            f"attention_weights reads eager attention's weights, but the model uses {impl!r}: "
            "load it with interp.load(..., attn_implementation='eager')"
        )
    check_visual_attention(vlm)


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
        InterpError: the model does not run eager attention (load it with
            ``interp.load(..., attn_implementation="eager")``), or its image enters through
            cross-attention.
    """
    opts = RunOptions.resolve(run, **options)
    trace_options = opts.trace_options()
    samples = ensure_samples(samples)
    cond = Condition.parse(condition)
    check_eager_weights(vlm)
    edits = check_edits(vlm, edits)
    job = Job("attention_weights", {}, conditions=[cond], edits=edits, pool=samples)

    def compute(chunk: list[Sample]) -> tuple[dict[str, Tensor], list[dict[str, Any]]]:
        parts: list[Tensor | None] = [None] * len(chunk)
        for idx, enc in batches(vlm, chunk, cond, opts.batch_size, all_samples=samples):
            picked = [chunk[i] for i in idx]
            batch = Batch(vlm, enc, picked, cond, "forward", samples, trace_options=trace_options)
            rows = torch.arange(len(enc), device=enc.last_index.device)
            states = prepare_edits(vlm, batch, edits)
            skipped = batch.skipped_layers
            trace, inputs = vlm.open_trace(enc, **trace_options)
            read: list[Any] = []
            with torch.no_grad(), trace as tracer:
                apply_edits(tracer, vlm, batch, edits, states)
                with tracer.invoke(**inputs):
                    for i in range(vlm.n_layers):
                        if i in skipped:
                            continue
                        w = vlm.layers[i].self_attn.output[1][rows, :, enc.last_index]
                        read.append(nnsight.save(w.float().cpu()))
            stacked = torch.stack(list(read), dim=1)  # [batch, layer, head, seq]
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


__all__ = ["AttentionWeights", "attention_weights", "check_eager_weights"]
