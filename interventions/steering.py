"""Steering: add a vector to the residual stream — :class:`Steer`.

``Steer(layers, vector, positions, scale)`` adds ``scale · vector`` to the residual stream
``vlm.residual[l]`` (the output of decoder layer l; 0 = the input embeddings) at the chosen
positions of every chosen layer, at the prompt forward and at every generated step (a generated
token is a position of ``"all"`` and ``"answer"``). It equals a plain Hugging Face forward with a
forward hook that adds the same vector to the layer's output at the same positions, and in
generation a per-step recomputation without the KV cache with that hook (tested).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import torch
from jaxtyping import Float
from torch import Tensor

from interp.edits import EditContext, Intervention, PositionSpec, check_position
from interp.errors import InterventionError
from interp.plain import Write, residual_site, write

from .common import residual_indices

if TYPE_CHECKING:
    from interp.model import VLM


class Steer(Intervention):
    """Add ``scale · vector`` to the residual stream at ``layers`` and ``positions``.

    Args:
        layers: residual indices in 0..L (``l`` = output of decoder layer l, 0 = embeddings; an
            int or several).
        vector: ``[d_model]`` (the same for every layer) or a mapping ``{layer: [d_model]}``.
        positions: which positions (see :meth:`interp.EditContext.positions`): ``"all"`` (every
            attended position, generated tokens included; the default), ``"last"`` (the last
            prompt token), ``"answer"`` (generated / teacher-forced tokens), ``"question"``,
            ``"image"``, ``"text"``, prompt offsets, or a mask.
        scale: multiplies the vector.
    """

    steps = "all"

    def __init__(
        self,
        layers: int | Iterable[int],
        vector: Float[Tensor, " d"] | Mapping[int, Float[Tensor, " d"]],
        positions: PositionSpec = "all",
        scale: float = 1.0,
    ) -> None:
        self.layers = [int(layers)] if isinstance(layers, int) else [int(x) for x in layers]
        if isinstance(vector, Mapping):
            self.vector = {int(k): torch.as_tensor(v) for k, v in vector.items()}
        else:
            self.vector = torch.as_tensor(vector)
        self.positions = positions
        self.scale = float(scale)

    def _plan(self, vlm: VLM) -> list[tuple[int, Tensor]]:
        """(residual index 0..L, vector) per given layer, in execution order."""
        plan = []
        for layer in self.layers:
            vec = self.vector[layer] if isinstance(self.vector, dict) else self.vector
            plan.append((residual_indices(vlm, layer)[0], vec))
        return sorted(plan, key=lambda item: item[0])

    def check(self, vlm: VLM) -> None:
        check_position(self.positions)
        if isinstance(self.vector, dict):
            missing = [layer for layer in self.layers if layer not in self.vector]
            if missing:
                raise InterventionError(f"Steer: no vector for layers {missing}")
        for _, vec in self._plan(vlm):
            if vec.dim() != 1 or vec.shape[0] != vlm.d_model:
                raise InterventionError(
                    f"Steer: a steering vector must have shape ({vlm.d_model},) (d_model), got "
                    f"{tuple(vec.shape)}"
                )

    def lower(self, ctx: EditContext) -> list[Write]:
        if not ctx.reaches(self.positions):  # a prompt position: nothing at generated steps
            return []
        vlm, mask = ctx.vlm, ctx.positions(self.positions)
        skipped = ctx.batch.skipped_layers
        return [  # in execution order, as nnsight needs
            write(residual_site(vlm, layer, skipped), mask, keep=1.0, value=self.scale * vec)
            for layer, vec in self._plan(vlm)
        ]


def difference_of_means(
    a: Float[Tensor, "n layer d"], b: Float[Tensor, "n layer d"]
) -> Float[Tensor, "layer d"]:
    """A steering vector per layer: the mean of ``a`` minus the mean of ``b`` over samples (e.g.
    the last-token states with and without the image, from :func:`interp.residual_stream`)."""
    if a.shape[1:] != b.shape[1:]:
        raise InterventionError(f"state shapes differ: {tuple(a.shape)} vs {tuple(b.shape)}")
    return a.float().mean(0) - b.float().mean(0)


__all__ = ["Steer", "difference_of_means"]
