"""Lowering a measurement to plain data before its trace opens, so the same ``with`` block runs
here and on NDIF (``docs/remote.md``).

nnsight ships a remote trace as the block's source plus the objects the block names. NDIF's
server cannot import this library and unpickles only whitelisted modules (torch, numpy, einops,
collections, math, ... and nnsight itself), so a block may name only: nnsight envoys (they travel
as module paths), tensors, ints, floats, strings, and lists / tuples / dicts of them. Everything
the library knows — the adapter's module paths, which decoder layers run, where each row's read
position is, the head's transform — is computed here, on the client, into such data:

- :func:`residual_sites`: which envoy holds each residual index (0 = the decoder's input
  embeddings, l = the output of decoder layer l), in execution order, with the attention sites
  of the visual-attention read;
- :func:`head_transform`: the forward's transform of the head's output as two floats.

Interventions (``edits``) and contrastive decoding are library objects: they run in this process
only, and a remote run that holds them is refused before any request is sent (:func:`local_only`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .options import refuse_remote

if TYPE_CHECKING:
    from .model import VLM

ATTENTION = "attention"  # a site whose output[1] holds the attention weights


def stand_in(layer: int, skipped: frozenset[int]) -> int:
    """The residual index whose value ``layer`` has: a skipped decoder layer passes its input on."""
    while layer > 0 and (layer - 1) in skipped:
        layer -= 1
    return layer


def residual_sites(
    vlm: VLM,
    layers: Sequence[int],
    *,
    skipped: frozenset[int] = frozenset(),
    attend: bool = False,
    normed: bool = False,
) -> tuple[list[tuple[Any, str]], list[int]]:
    """The sites a trace reads for residual indices ``layers``, as plain data.

    Returns ``(sites, order)``: ``sites`` is a list of ``(envoy, kind)`` in execution order —
    ``kind`` is ``"input"`` (the first decoder layer's input), ``"output"`` (a decoder layer's
    output), the name of a decoder keyword argument (the embeddings, where the adapter names one),
    or :data:`ATTENTION` (a layer's attention module, ``output[1]`` its weights; with ``attend``,
    every running layer's) — and ``order[j]`` is the index among the non-attention sites of
    ``layers[j]``'s value. Decoder layers in ``skipped`` do not run (Mllama's cross-attention
    layers in a text-only batch): their output is their input, so such an index reads the site
    before it. With ``normed``, the decoder's final norm is read last (after every layer) and
    ``order`` gets one more entry: ``norm(h^L)``, the forward's own input to the head.
    """
    source = [stand_in(layer, skipped) for layer in layers]
    wanted = sorted(set(source))
    sites: list[tuple[Any, str]] = []
    if 0 in wanted:
        kwarg = vlm.adapter.embeddings_kwarg
        sites.append((vlm.decoder, kwarg) if kwarg is not None else (vlm.layers[0], "input"))
    top = vlm.n_layers if attend else max(wanted)
    for i in range(top):  # decoder layer i produces residual index i + 1
        if i in skipped:
            continue
        if attend:
            sites.append((vlm.layers[i].self_attn, ATTENTION))
        if i + 1 in wanted:
            sites.append((vlm.layers[i], "output"))
    slot = {index: k for k, index in enumerate(wanted)}
    order = [slot[s] for s in source]
    if normed:
        sites.append((vlm.final_norm, "output"))
        order.append(len(wanted))
    return sites, order


def head_transform(vlm: VLM) -> tuple[float, float]:
    """The forward's transform of the head's output as ``(scale, cap)``: logits =
    ``cap · tanh(scale · z / cap)``, or ``scale · z`` where ``cap`` is 0
    (:mod:`interp.adapters.logits`)."""
    t = vlm.head_transform
    if t is None:
        return 1.0, 0.0
    return float(t.scale), float(t.softcap or 0.0)


def local_only(
    vlm: VLM,
    trace_options: Mapping[str, Any],
    step: str,
    *,
    edits: Sequence[Any] = (),
    decoding: Any = None,
    sampling: bool = False,
    attention: bool = False,
) -> None:
    """Refuse, before any request, a remote run of ``step`` (its options or ``vlm`` remote) that
    holds what is not lowered yet: interventions or a contrastive decoding method (library
    objects run inside the trace), seeded sampling (a generator per row), or attention weights
    (they need eager attention, which the server's deployment decides)."""
    why = []
    if edits:
        why.append(f"its edits ({', '.join(type(e).__name__ for e in edits)}) are library objects")
    if decoding is not None:
        why.append(f"the decoding method {type(decoding).__name__} is a library object")
    if sampling:
        why.append("seeded sampling draws with a generator per row, kept in this process")
    if attention:
        why.append("attention weights need eager attention, which the server's model may not use")
    if why:
        refuse_remote(trace_options, step, "; ".join(why), vlm=vlm)


__all__ = ["ATTENTION", "head_transform", "local_only", "residual_sites", "stand_in"]
