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

import torch
from jaxtyping import Float, Int
from nnsight.intervention.interleaver import OutOfOrderError
from torch import Tensor
from tqdm.auto import tqdm

from .edits import Batch, Intervention, edit_hook
from .encoding.assemble import Encoding
from .encoding.select import select
from .errors import InterventionError
from .plain import ATTENTION, attention_kind, residual_sites, stand_in
from .wire import apply_writes, read_site, row_weights

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
    sites, order = residual_sites(vlm, layers, skipped=skipped, attend=image_mask is not None)
    states, masses = [], []
    for envoy, kind in sites:  # in execution order; each value cut to the read rows at once
        if kind == ATTENTION:
            weights = row_weights(envoy, kind, rows, index)  # [batch, head, key]
            masses.append((weights * image_mask[:, None, :]).sum(-1).mean(-1))
            continue
        states.append(read_site(envoy, kind, rows, index))
    mass = torch.stack(masses, dim=1).mean(1) if masses else None
    return torch.stack(states, dim=1)[:, order], mass


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
    index = resolve_positions(batch.encoding, position)
    rows = torch.arange(len(batch.encoding), device=index.device)
    states, _ = forward_reads(
        vlm, batch, batch.encoding, layers, rows, index, edits, stop=stop, **trace_kwargs
    )
    return states


def forward_reads(
    vlm: VLM,
    batch: Batch,
    enc: Encoding,
    layers: Sequence[int],
    rows: Tensor,
    index: Tensor,
    edits: Sequence[Intervention] = (),
    *,
    image_mask: Tensor | None = None,
    weights: bool = False,
    normed: bool = False,
    stop: bool = True,
    **trace_kwargs: Any,
) -> tuple[Float[Tensor, "batch layer *read"], Tensor | None]:
    """One forward of ``enc`` with ``edits``: the residual stream at ``layers`` for the (rows,
    index) positions (float32, CPU) and, with ``image_mask`` (float ``[batch, seq]``, 1 at image
    tokens), the mean over layers and heads of their attention on image tokens (Eq. 10 of the
    chain-of-embedding paper; eager attention's weights, recomputed from the attention call's
    inputs where eager attention does not run here: :func:`interp.plain.attention_kind`). With
    ``weights`` (and no ``image_mask``), instead of the mass the read rows' whole attention
    weights, float32 ``[batch, running layers, heads, keys]``. With ``normed``, one more state at the end:
    the final norm's output there (:func:`interp.plain.residual_sites`). With ``stop``, the run
    ends after the last read (no edit, no attention read).

    The block holds only envoys, tensors and ints (:mod:`interp.plain`), so it runs here or on
    NDIF alike, with the edits that lower to plain writes (the others run here only).
    """
    sites, order = residual_sites(
        vlm,
        layers,
        skipped=batch.skipped_layers,
        attend=image_mask is not None or weights,
        normed=normed,
        attention=attention_kind(vlm, trace_kwargs),
    )
    writes, hook = edit_hook(vlm, batch, edits)
    mass = None
    trace, inputs = vlm.open_trace(enc, plain=hook is None, **trace_kwargs)
    with torch.no_grad(), trace as tracer:
        # edits first: at a site they share with a read, the read sees them
        if hook is not None:
            hook(tracer)
        for edit_writes, _ in writes:  # one invoke per edit (interp.wire: by source)
            with tracer.invoke():
                apply_writes(edit_writes, 0)
        with tracer.invoke(**inputs):
            read, masses = [], []
            for s, k in sites:  # in execution order; each value cut to the read rows at once
                if k == "attention" or k.startswith("weights:"):
                    w = row_weights(s, k, rows, index)
                else:
                    read.append(read_site(s, k, rows, index))
                    continue
                # the row's weights [b, heads, keys], or their mass on image tokens (Eq. 10)
                masses.append(w if image_mask is None else (w * image_mask[:, None, :]).sum(-1))
            read = torch.stack(read, 1)[:, order].save()
            if masses:  # [b, layers, heads, keys], or the mean mass over layers and heads
                mass = torch.stack(masses, 1)
                mass = (mass if image_mask is None else mass.mean((1, 2))).save()
            if stop and not masses:
                tracer.stop()
    return read.detach().to("cpu", torch.float32), mass


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
    "forward_reads",
    "read_states",
    "resolve_layers",
    "resolve_positions",
    "stand_in",
    "trace_states",
]
