"""Activation patching: put another run's residual stream in place — :class:`Patch`.

``Patch(source, layers, positions)`` replaces the residual stream ``vlm.residual[l]`` at the chosen
positions of each chosen layer with the values of a *source*:

- a condition (``"null:black"``, ``"blind"``, ``"swap:next"``, ``"blind+no_question"`` ...): the
  same samples are run under it (one forward per batch, in ``prepare``) and its states are read at
  the corresponding positions — position k of the chosen set in the source row goes to position k
  of the chosen set in the traced row, so the two runs must hold equally many chosen positions per
  row (``"last"`` always does; ``"question"`` does whenever the question is kept);
- given states: a tensor ``[N, len(layers), d]`` of last-token states aligned with the
  measurement's samples (e.g. what :func:`interp.residual_stream` returned), for
  ``positions="last"``.

The patch applies at the prompt forward (generated tokens then see the patched keys and values).
It equals a plain Hugging Face forward with a forward hook that writes the source run's values —
captured by a hook in a plain forward of the source input — into the layer's output (tested).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import torch
from jaxtyping import Float
from torch import Tensor

from interp.conditions import Condition
from interp.edits import Batch, EditContext, Intervention, PositionSpec, check_position
from interp.encoding import check_pixel_conditions, encode
from interp.errors import InterventionError
from interp.plain import Write, residual_site, write
from interp.tracing import forward_reads

from .common import residual_indices

if TYPE_CHECKING:
    from interp.model import VLM


class Patch(Intervention):
    """Replace the residual stream at ``layers``/``positions`` with a source's values.

    Args:
        source: a condition string (run on the same samples) or a tensor ``[N, len(layers), d]``
            of states aligned with the measurement's samples (``positions="last"`` only).
        layers: residual indices in 0..L (0 = embeddings).
        positions: ``"last"`` (default), ``"question"``, ``"text"``, ``"image"``, ``"prompt"``
            or prompt offsets: matched position by position between the source and the traced
            run.
    """

    def __init__(
        self,
        source: str | Condition | Float[Tensor, "n layer d"],
        layers: int | Iterable[int],
        positions: PositionSpec = "last",
    ) -> None:
        self.layers = [int(layers)] if isinstance(layers, int) else [int(x) for x in layers]
        if isinstance(source, Tensor):
            if positions != "last":
                raise InterventionError("Patch from given states supports positions='last' only")
            self.source: str | Tensor = source
        else:
            self.source = str(Condition.parse(source))
            if Condition.parse(source).prefix == "removed":
                raise InterventionError("a Patch source cannot remove the prefix")
        if isinstance(positions, str) and positions in ("all", "answer"):
            raise InterventionError(
                f"Patch positions {positions!r} would include generated/target tokens, which only "
                "the traced run has; use 'prompt', 'last', 'question', 'text' or 'image'"
            )
        self.positions = positions

    def check(self, vlm: VLM) -> None:
        check_position(self.positions)
        layers = residual_indices(vlm, self.layers)
        if isinstance(self.source, str):
            check_pixel_conditions(vlm.adapter, [self.source], "Patch's source")
        if isinstance(self.source, Tensor):
            if self.source.dim() != 3 or self.source.shape[1:] != (len(layers), vlm.d_model):
                raise InterventionError(
                    f"Patch states must have shape [N, {len(layers)}, {vlm.d_model}] (one row per "
                    f"sample, one state per patched layer), got {tuple(self.source.shape)}"
                )

    def prepare(self, vlm: VLM, batch: Batch) -> list[Tensor]:
        """Per row, the source vectors ``[n_positions, len(layers), d]`` to write."""
        layers = residual_indices(vlm, self.layers)
        if isinstance(self.source, Tensor):
            where = {str(s.id): i for i, s in enumerate(batch.all_samples)}
            if len(batch.all_samples) != self.source.shape[0]:
                raise InterventionError(
                    f"Patch states have {self.source.shape[0]} rows for "
                    f"{len(batch.all_samples)} samples; give one row per sample"
                )
            rows = [where[str(s.id)] for s in batch.samples]
            return [self.source[r][None] for r in rows]
        enc = encode(vlm, batch.samples, self.source, all_samples=batch.all_samples)
        cond = Condition.parse(self.source)
        src = Batch(
            vlm,
            enc,
            batch.samples,
            cond,
            "forward",
            batch.all_samples,
            trace_options=batch.trace_options,
        )
        mask = EditContext(vlm, src, None, 0).positions(self.positions)
        target = EditContext(vlm, batch, None, 0).positions(self.positions)
        src_counts, tgt_counts = mask.sum(1).tolist(), target.sum(1).tolist()
        if src_counts != tgt_counts:
            raise InterventionError(
                f"Patch from {self.source!r} at positions {self.positions!r}: the source rows "
                f"hold {src_counts} such positions, the traced rows {tgt_counts}; patch positions "
                "that both runs share (e.g. 'last')"
            )
        return _read_masked(vlm, src, layers, mask)

    def lower(self, ctx: EditContext) -> list[Write]:
        vlm = ctx.vlm
        layers = residual_indices(vlm, self.layers)
        target = ctx.positions(self.positions)
        skipped = ctx.batch.skipped_layers
        return [  # the rows' values in mask order (row, then position), layer by layer
            write(
                residual_site(vlm, layer, skipped),
                target,
                value=torch.cat([values[:, k] for values in ctx.state]),
            )
            for k, layer in enumerate(layers)
        ]


def _read_masked(
    vlm: VLM, batch: Batch, layers: list[int], mask: Tensor
) -> list[Float[Tensor, "pos layer d"]]:
    """One forward of ``batch`` (with its trace options): the residual states at ``layers`` at the
    masked positions, per row (in position order), in the model's dtype (read as float32, which
    holds every value of a half-precision model exactly)."""
    rows, index = mask.nonzero(as_tuple=True)
    states, _ = forward_reads(
        vlm, batch, batch.encoding, layers, rows, index, **batch.trace_options
    )
    counts = mask.sum(1).tolist()
    return list(torch.split(states.to(vlm.device, vlm.dtype), counts))


__all__ = ["Patch"]
