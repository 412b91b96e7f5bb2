"""Reading the residual stream: :func:`residual_stream`."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import torch
from jaxtyping import Float
from torch import Tensor

from .conditions import Condition
from .encoding import batches
from .samples import Sample, ensure_samples
from .tracing import Position, progress, resolve_layers, trace_states

if TYPE_CHECKING:
    from .model import VLM


def residual_stream(
    vlm: VLM,
    samples: Sequence[Sample] | Sample,
    condition: str | Condition = "full",
    *,
    layers: Iterable[int] | None = None,
    position: Position = "last",
    batch_size: int = 8,
    progress_bar: bool = True,
    **trace_kwargs: Any,
) -> Float[Tensor, "n layer d"]:
    """Residual-stream states of every sample at the chosen layers, one nnsight trace per batch.

    Index convention (SPEC §3): 0 = input embeddings, l = output of decoder layer l (before the final
    norm), so with ``layers=None`` the result has L+1 entries along ``layer``.

    Args:
        condition: how samples become inputs (see :mod:`interp.conditions`).
        layers: indices in 0..L, increasing (None = all).
        position: ``"last"`` (last prompt token) or a negative offset from the end of the prompt.
        batch_size: rows per forward; results do not depend on it (left padding is handled).
        **trace_kwargs: passed to nnsight's ``trace`` untouched (e.g. ``remote=True``).

    Returns:
        float32 CPU tensor ``[N, len(layers), d_model]`` in the order of ``samples``.
    """
    samples = ensure_samples(samples)
    wanted = resolve_layers(vlm, layers)
    out = torch.empty(len(samples), len(wanted), vlm.d_model)
    for idx, enc in progress(
        batches(vlm, samples, condition, batch_size),
        total=len(samples),
        desc=f"residual_stream[{condition}]",
        enabled=progress_bar,
    ):
        out[idx] = trace_states(vlm, enc, wanted, position, **trace_kwargs)
    return out


__all__ = ["residual_stream"]
