"""Low-level trace helpers shared by the measurements: reading residual-stream states at chosen
positions inside an nnsight trace, and the progress bar.

Layer index convention (``docs/conventions.md``): index 0 is the decoder's input embeddings
(``layers[0].input``, after any image-feature scatter), index l in 1..L is the output of decoder
layer l (the residual stream before the final norm). Index L therefore differs from HF
``hidden_states[-1]``, which is post-norm. Qwen3-VL's DeepStack adds image features to the residual
stream after its first decoder layers, outside the layer modules and only at image positions: there
index l is the layer's output before that addition, as in HF ``hidden_states`` (last-token reads
are unaffected).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import nnsight
import torch
from jaxtyping import Float, Int
from nnsight.intervention.interleaver import OutOfOrderError
from torch import Tensor
from tqdm.auto import tqdm

from .edits import Batch, Intervention, apply_edits, prepare_edits
from .encoding.assemble import Encoding
from .encoding.select import select
from .errors import InterventionError

if TYPE_CHECKING:
    from .model import VLM

T = TypeVar("T")

Position = int | str


def resolve_layers(vlm: VLM, layers: Iterable[int] | None) -> list[int]:
    """Validate layer indices in the 0..L convention (None = all of them, in order)."""
    n = vlm.n_layers
    if layers is None:
        return list(range(n + 1))
    out = []
    for layer in layers:
        layer = int(layer)
        if layer < 0:
            layer += n + 1
        if not 0 <= layer <= n:
            raise ValueError(
                f"layer index {layer} out of range: valid indices are 0..{n} (0 = embeddings)"
            )
        out.append(layer)
    if out != sorted(set(out)):
        raise ValueError(
            f"layers must be increasing and unique (execution order), got {list(layers)}"
        )
    return out


def resolve_positions(enc: Encoding, position: Position) -> Int[Tensor, " batch"]:
    """Token index per row: ``"last"`` = last prompt token; a negative int k = k-th token from the
    end of the prompt (-1 = last). The one position each row reads, from
    :func:`interp.encoding.select.select`."""
    if position != "last" and not (isinstance(position, int) and position < 0):
        raise ValueError(
            f"position must be 'last' or a negative int (offset from the end), got {position!r}"
        )
    try:
        mask = select(enc, position)
    except InterventionError:
        raise ValueError(f"position {position} falls before the start of some prompt") from None
    return mask.to(torch.long).argmax(dim=1)


def stand_in(layer: int, skipped: frozenset[int]) -> int:
    """The residual index whose value ``layer`` has: a skipped decoder layer passes its input on."""
    while layer > 0 and (layer - 1) in skipped:
        layer -= 1
    return layer


def read_states(
    vlm: VLM,
    layers: Sequence[int],
    rows: Tensor,
    index: Tensor,
    *,
    skipped: frozenset[int] = frozenset(),
    image_mask: Tensor | None = None,
) -> tuple[Float[Tensor, "batch layer d"], Float[Tensor, " batch"] | None]:
    """Inside a trace: the residual stream at ``layers`` for (rows, index) positions, and optionally
    the visual-attention mass (Eq. 10 of the chain-of-embedding paper).

    Reads happen in execution order, as nnsight requires. Decoder layers in ``skipped`` do not run
    (Mllama's cross-attention layers in a text-only batch): their output is their input.

    With ``image_mask`` (float ``[batch, seq]``, 1 at image tokens), also returns the mean over layers
    and heads of the attention weight of the read position on image tokens; this needs eager attention
    (the weights are the second output of each layer's ``self_attn``).
    """
    source = {layer: stand_in(layer, skipped) for layer in layers}
    wanted = set(source.values())
    cache: dict[int, Tensor] = {}
    masses: list[Tensor] = []
    if 0 in wanted:
        cache[0] = vlm.residual[0][rows, index]
    top = vlm.n_layers if image_mask is not None else max(wanted)
    for i in range(top):  # decoder layer i produces residual index i + 1
        if i in skipped:
            continue
        if image_mask is not None:
            weights = vlm.layers[i].self_attn.output[1][rows, :, index]  # [batch, head, key]
            masses.append((weights.float() * image_mask[:, None, :]).sum(-1).mean(-1))
        if i + 1 in wanted:
            cache[i + 1] = vlm.residual[i + 1][rows, index]
    states = torch.stack([cache[source[layer]] for layer in layers], dim=1)
    mass = torch.stack(masses, dim=1).mean(1) if masses else None
    return states, mass


def trace_states(
    vlm: VLM,
    batch: Batch,
    layers: Sequence[int],
    position: Position = "last",
    edits: Sequence[Intervention] = (),
    **trace_kwargs: Any,
) -> Float[Tensor, "batch layer d"]:
    """One forward of ``batch``: residual-stream states at ``layers`` and ``position`` (float32,
    CPU), with ``edits`` applied.

    The run stops right after the last layer read: nothing after it can change the reads, so the
    final norm and the LM head are never computed (with edits too, unless one declares
    ``needs_logits``; an edit that reaches past the reads without declaring it makes the read run
    again to the end).
    """
    stop = not any(getattr(edit, "needs_logits", False) for edit in edits)
    try:
        return _trace_states(vlm, batch, layers, position, edits, stop, trace_kwargs)
    except OutOfOrderError:
        if not stop or not edits:
            raise
        # an edit asked for a module past the last read (the head) after the run stopped
        return _trace_states(vlm, batch, layers, position, edits, False, trace_kwargs)


def _trace_states(
    vlm: VLM,
    batch: Batch,
    layers: Sequence[int],
    position: Position,
    edits: Sequence[Intervention],
    stop: bool,
    trace_kwargs: dict[str, Any],
) -> Float[Tensor, "batch layer d"]:
    enc = batch.encoding
    index = resolve_positions(enc, position)
    rows = torch.arange(len(enc), device=index.device)
    skipped = batch.skipped_layers
    states = prepare_edits(vlm, batch, edits)
    trace, inputs = vlm.open_trace(enc, **trace_kwargs)
    with torch.no_grad(), trace as tracer:
        # Edits first: at a site they share with a read, the read sees the edited value.
        apply_edits(tracer, vlm, batch, edits, states)
        with tracer.invoke(**inputs):
            read = nnsight.save(read_states(vlm, layers, rows, index, skipped=skipped)[0])
            if stop:
                tracer.stop()
    return read.detach().to("cpu", torch.float32)


def progress(
    iterable: Iterable[T],
    *,
    total: int | None,
    desc: str,
    enabled: bool,
    unit: str = "sample",
    initial: int = 0,
) -> Iterator[T]:
    """A tqdm progress bar (notebook-aware) over ``iterable`` unless disabled; ``initial`` rows
    are already done (a resumed run)."""
    if not enabled:
        yield from iterable
        return
    bar = tqdm(total=total, desc=desc, unit=unit, leave=False, initial=initial)
    try:
        for item in iterable:
            yield item
            # batches count their rows: a list of samples, or an (indices, encoding) pair
            if isinstance(item, list):
                bar.update(len(item))
            elif isinstance(item, tuple) and item and isinstance(item[0], list):
                bar.update(len(item[0]))
            else:
                bar.update(1)
    finally:
        bar.close()


__all__ = [
    "progress",
    "read_states",
    "resolve_layers",
    "resolve_positions",
    "stand_in",
    "trace_states",
]
