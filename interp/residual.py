"""Reading the residual stream: :func:`residual_stream`."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from jaxtyping import Float
from torch import Tensor

from .conditions import Condition
from .edits import Batch, Intervention, check_edits
from .encoding import batches
from .errors import ConditionError
from .runner import Job, Shard, run
from .samples import Sample, ensure_samples
from .tracing import Position, resolve_layers, trace_states

if TYPE_CHECKING:
    from .model import VLM


def residual_stream(
    vlm: VLM,
    samples: Sequence[Sample] | Sample,
    condition: str | Condition = "full",
    *,
    layers: Iterable[int] | None = None,
    position: Position = "last",
    edits: Sequence[Intervention] | None = None,
    batch_size: int = 8,
    store: str | Path | None = None,
    overwrite: bool = False,
    shard: Shard = None,
    progress_bar: bool = True,
    **trace_kwargs: Any,
) -> Float[Tensor, "n layer d"]:
    """Residual-stream states of every sample at the chosen layers, one nnsight trace per batch.

    Index convention (``docs/conventions.md``): 0 = input embeddings, l = output of decoder layer l
    (before the final norm), so with ``layers=None`` the result has L+1 entries along ``layer``.

    Args:
        condition: how samples become inputs (see :mod:`interp.conditions`).
        layers: indices in 0..L, increasing (None = all).
        position: ``"last"`` (last prompt token) or a negative offset from the end of the prompt.
        edits: interventions applied during the forward (see :mod:`interp.edits`).
        batch_size: rows per forward; results do not depend on it (left padding is handled).
        store: a folder to write results to batch by batch and resume from (see
            :mod:`interp.store`); ``overwrite`` starts it over; ``shard`` splits the samples
            across processes sharing the store (see :mod:`interp.runner`).
        **trace_kwargs: passed to nnsight's ``trace`` untouched (e.g. ``remote=True``).

    Returns:
        float32 CPU tensor ``[N, len(layers), d_model]`` in the order of ``samples``.
    """
    samples = ensure_samples(samples)
    cond = Condition.parse(condition)
    if cond.prefix == "removed":
        raise ConditionError("'no_prefix' applies to teacher-forced scoring (interp.score) only")
    wanted = resolve_layers(vlm, layers)
    edits = check_edits(vlm, edits)
    job = Job(
        "residual_stream",
        {"layers": wanted, "position": position},
        conditions=[cond],
        edits=edits,
        pool=samples,
    )

    def compute(chunk: list[Sample]) -> tuple[dict[str, Tensor], list[dict[str, Any]]]:
        out = torch.empty(len(chunk), len(wanted), vlm.d_model)
        for idx, enc in batches(vlm, chunk, cond, batch_size, all_samples=samples):
            batch = Batch(vlm, enc, [chunk[i] for i in idx], cond, "forward", samples)
            out[idx] = trace_states(vlm, batch, wanted, position, edits, **trace_kwargs)
        return {"states": out}, [{} for _ in chunk]

    _, tensors, _ = run(
        vlm,
        samples,
        job,
        compute,
        batch_size=batch_size,
        store=store,
        overwrite=overwrite,
        shard=shard,
        progress_bar=progress_bar,
    )
    return tensors["states"]


__all__ = ["residual_stream"]
