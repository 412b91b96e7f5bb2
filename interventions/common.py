"""Helpers the intervention modules share: validating decoder-layer numbers."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from interp.errors import InterventionError
from interp.tracing import resolve_layers

if TYPE_CHECKING:
    from interp.model import VLM


def decoder_layers(vlm: VLM, layers: Iterable[int] | int | None, *, first: int = 1) -> list[int]:
    """Decoder-layer numbers in 1..L (layer l produces ``vlm.residual[l]``), sorted and unique;
    negative numbers count from L (-1 = L); None = ``first``..L.

    Raises:
        InterventionError: a number outside 1..L.
    """
    n = vlm.n_layers
    if layers is None:
        return list(range(first, n + 1))
    values = [layers] if isinstance(layers, int) else list(layers)
    out = set()
    for layer in values:
        layer = int(layer)
        if layer < 0:
            layer += n + 1
        if not 1 <= layer <= n:
            raise InterventionError(f"decoder layer {layer} is outside 1..{n}")
        out.add(layer)
    if not out:
        raise InterventionError("give at least one layer")
    return sorted(out)


def residual_indices(vlm: VLM, layers: Iterable[int] | int) -> list[int]:
    """Residual-stream indices in 0..L (0 = embeddings), sorted and unique; negative from L.

    Raises:
        InterventionError: an index outside 0..L, or none given.
    """
    values = [layers] if isinstance(layers, int) else list(layers)
    if not values:
        raise InterventionError("give at least one layer")
    n = vlm.n_layers
    normalised = sorted({int(v) + (n + 1 if int(v) < 0 else 0) for v in values})
    try:
        return resolve_layers(vlm, normalised)
    except ValueError as err:
        raise InterventionError(str(err)) from None


__all__ = ["decoder_layers", "residual_indices"]
