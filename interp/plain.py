"""Lowering a measurement to plain data before its trace opens, so the same ``with`` block runs
here and on NDIF (``docs/remote.md``).

nnsight ships a remote trace as the block's source plus the objects the block names. NDIF's
server cannot import this library and unpickles only whitelisted modules (torch, numpy, einops,
collections, math, ... and nnsight itself), so a block may name only: nnsight envoys (they travel
as module paths), tensors, ints, floats, strings, lists / tuples / dicts of them, and the
functions of :mod:`interp.wire` (torch-only code that travels by source). Everything
the library knows — the adapter's module paths, which decoder layers run, where each row's read
position is, the head's transform — is computed here, on the client, into such data:

- :func:`residual_sites`: which envoy holds each residual index (0 = the decoder's input
  embeddings, l = the output of decoder layer l), in execution order, with the attention sites
  of the visual-attention read;
- :func:`head_transform`: the forward's transform of the head's output as two floats;
- *writes*: an intervention lowered to plain data (:meth:`interp.Intervention.lower`). A write is
  the tuple ``(envoy, path, where, keep, value, groups)``: the tensor at ``path`` of the envoy
  (``("output",)``, ``("input",)``, ``("inputs", 1, "inputs_embeds")``,
  ``("output", "deepstack_features", k)`` ...; a tuple found there stands for its first element)
  gets, at the positions of the boolean mask ``where``,

      x ← keep · x + value  [+ weight · mean of x over its group]

  (``keep`` and ``value`` broadcast against the ``[n, d]`` selected vectors; ``groups`` = ``(g,
  count, weight)`` or None: ``g[i]`` the group of selected position i, ``count[G, 1]`` each
  group's size, ``weight[n, 1]``). Setting is ``keep = 0``, adding is ``keep = 1``, a row-mean
  ablation is ``keep = 0, weight = 1`` with the rows as groups. Each measurement's block applies
  its edits' writes with :func:`interp.wire.apply_writes` (a function that travels to the
  server by source, :mod:`interp.wire`), one empty invoke per edit;
- *boosts*: PAI's boost of the pre-softmax scores lowered to plain data (:func:`boost`): the
  block recomputes the layer's attention from its attention call's inputs with the boost;
- *cuts*: an attention knockout lowered to plain data (:func:`cut`), a write whose path ends in
  :data:`MASK`: the attention module's ``attention_mask`` keyword becomes an additive
  ``[batch, 1, query, key]`` mask with the dtype's minimum where the chosen queries meet the chosen
  keys. Eager and SDPA attention both take such a mask (SDPA's causal shortcut, no mask at all,
  is replaced by the causal mask it stands for), so a knockout needs neither eager attention nor
  the attention function's source.

Interventions that do not lower (a user's edit that only defines ``apply``) and decoding methods
whose ``lower`` gives None are library objects: they run in this process only, and a remote run that holds them is refused before any request is sent
(:func:`interp.edits.local_only`). A contrastive method's rule and seeded sampling reach the
generation block as plain numbers (:meth:`interp.Decoding.lower`, :meth:`interp.Sampling.seeds`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import torch
from jaxtyping import Bool, Int
from torch import Tensor

from .options import is_remote
from .wire import apply_writes

if TYPE_CHECKING:
    from .model import VLM

ATTENTION = "attention"  # a site whose output[1] holds the attention weights
WEIGHTS = (
    "weights:"  # + the attention function's call in `.source`: weights recomputed from its inputs
)
MASK = "attention_mask"  # the last key of a cut's path: the attention module's mask keyword


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
    attention: str = ATTENTION,
) -> tuple[list[tuple[Any, str]], list[int]]:
    """The sites a trace reads for residual indices ``layers``, as plain data.

    Returns ``(sites, order)``: ``sites`` is a list of ``(envoy, kind)`` in execution order —
    ``kind`` is ``"input"`` (the first decoder layer's input), ``"output"`` (a decoder layer's
    output), the name of a decoder keyword argument (the embeddings, where the adapter names one),
    or the attention kind ``attention`` (:func:`attention_kind`: :data:`ATTENTION`, the module's
    ``output[1]`` holds its weights, or :data:`WEIGHTS` + the attention call, whose inputs give
    them; with ``attend``, every running layer's module) — and ``order[j]`` is the index among
    the non-attention sites of
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
            sites.append((getattr(vlm.layers[i], vlm.adapter.attention_module), attention))
        if i + 1 in wanted:
            sites.append((vlm.layers[i], "output"))
    slot = {index: k for k, index in enumerate(wanted)}
    order = [slot[s] for s in source]
    if normed:
        sites.append((vlm.final_norm, "output"))
        order.append(len(wanted))
    return sites, order


def attention_kind(vlm: VLM, trace_options: Mapping[str, Any]) -> str:
    """How a trace with ``trace_options`` reads the attention weights of a decoder layer
    (:func:`residual_sites`).

    Eager attention returns them (``output[1]`` of the attention module: :data:`ATTENTION`), where
    this process runs it. Elsewhere — SDPA, or a remote run whose server's attention its
    deployment decides — the block recomputes eager's weights from the inputs of the module's
    attention call (nnsight's ``.source``; :data:`WEIGHTS` + its name, the first step of the
    adapter's ``attention_scores_site``): for the read query row ``q`` (``[heads, d]``) and the
    keys ``K`` (``[kv_heads, n, d]``, repeated to the query heads)

        w = softmax(q·Kᵀ · scaling [→ cap · tanh(· / cap) where the call takes a softcap] + mask)

    in float32, with the call's own mask (a boolean mask as 0 / the dtype's minimum; none — SDPA's
    causal shortcut — the causal mask), which is eager attention's formula."""
    impl = getattr(vlm.hf.config, "_attn_implementation", None)
    if impl == "eager" and not (vlm.remote or is_remote(trace_options)):
        return ATTENTION
    return WEIGHTS + vlm.adapter.attention_scores_site[0]


Write = tuple[Any, tuple[Any, ...], Tensor, Tensor, Tensor, "tuple[Tensor, Tensor, Tensor] | None"]


def residual_site(vlm: VLM, index: int, skipped: frozenset[int] = frozenset()) -> tuple[Any, tuple]:
    """Where ``vlm.residual[index]`` lives, as ``(envoy, path)`` for a write: the decoder's
    embeddings keyword or the first layer's input for 0, decoder layer l's output for l (a
    skipped layer's index: the site whose value it has, :func:`stand_in`)."""
    index = stand_in(index, skipped)
    if index > 0:
        return vlm.layers[index - 1], ("output",)
    kwarg = vlm.adapter.embeddings_kwarg
    return (vlm.decoder, ("inputs", 1, kwarg)) if kwarg is not None else (vlm.layers[0], ("input",))


def write(
    site: tuple[Any, tuple],
    where: Bool[Tensor, ...],
    *,
    keep: float | Tensor = 0.0,
    value: float | Tensor = 0.0,
    groups: tuple[Tensor, Tensor, Tensor] | None = None,
) -> Write:
    """One write (see the module docstring) at ``site`` = ``(envoy, path)``: ``x ← keep · x +
    value [+ weight · group mean]`` at the positions ``where``. Plain data only."""
    envoy, path = site
    return (
        envoy,
        tuple(path),
        where.bool(),
        torch.as_tensor(keep, dtype=torch.float32),
        torch.as_tensor(value) if isinstance(value, Tensor) else torch.tensor(float(value)),
        groups,
    )


def mean_groups(
    group: Int[Tensor, " n"], weight: Tensor | float = 1.0
) -> tuple[Tensor, Tensor, Tensor]:
    """``groups`` for a write that adds ``weight`` times the mean over each group (e.g. the batch
    row of each selected position: a row-mean ablation)."""
    group = group.long()
    count = torch.bincount(group).clamp(min=1) if group.numel() else torch.zeros(0)
    weight = torch.as_tensor(weight, dtype=torch.float32)
    return group, count.float()[:, None], weight.reshape(-1, 1).expand(len(group), 1)


def cut(
    attention: Any,
    queries: Bool[Tensor, "batch query"],
    keys: Bool[Tensor, "batch prompt"],
    generated: bool = False,
) -> Write:
    """An attention knockout of one layer as plain data: in the attention module ``attention``
    (an envoy), the ``queries`` of this forward may not attend to the ``keys``.

    ``keys`` covers the prompt's positions (the traced encoding's, teacher-forced answer tokens
    included); at a generated step the forward's keys are those followed by the generated tokens,
    cut too where ``generated``. Where the forward holds fewer keys than that (a sliding-window
    cache), the last ones count. In the write's tuple the query mask is ``where``, the key mask
    ``keep`` and ``generated`` ``value``; the path ends in :data:`MASK`.

    The block makes the module's mask additive ``[batch, 1, query, key]`` (a boolean mask:
    0 where True, the dtype's minimum elsewhere; none — SDPA's causal shortcut — the causal mask)
    and sets the minimum at ``queries × keys``: ``a[q, k] + min`` is ``min`` to the dtype's
    precision, so the softmax gives those keys weight 0, as eager attention's own mask does.
    """
    return (
        attention,
        ("inputs", 1, MASK),
        queries.bool(),
        keys.bool(),
        torch.tensor(bool(generated)),
        None,
    )


def boost(
    attention: Any,
    call: str,
    queries: Bool[Tensor, "batch query"],
    keys: Bool[Tensor, "batch prompt"],
    alpha: float,
    generated: bool = False,
) -> Write:
    """PAI's boost of one layer as plain data: in the attention module ``attention`` (an
    envoy), the attention is recomputed from the inputs of its attention call ``call`` (a name
    in nnsight's ``.source``) as eager attention computes it::

        a = q·Kᵀ · scaling [→ cap · tanh(a / cap)] + mask,   a ← a + α·|a| at queries × keys,
        out = softmax(a) · V

    (keys and values repeated to the query heads; the mask made as for :func:`cut`), and the
    call's output is replaced by ``(out, softmax(a))``. ``keys`` covers the prompt's positions,
    followed at generated steps by the generated tokens (boosted where ``generated``). In the
    write's tuple the path is ``("boost", call)``, the query mask ``where``, the key mask ``keep``
    and ``value`` = ``[α, generated]``.
    """
    return (
        attention,
        ("boost", call),
        queries.bool(),
        keys.bool(),
        torch.tensor([float(alpha), float(generated)]),
        None,
    )


def run_writes(writes: Sequence[Write], step: int = 0) -> None:
    """Inside a trace, in this process: apply ``writes`` (writes, cuts and boosts) in order, at
    generated step ``step`` (0: the prompt forward) — what :meth:`interp.Intervention.apply`
    does for an edit that lowers, with the code every measurement's block calls
    (:func:`interp.wire.apply_writes`, which travels to NDIF by source)."""
    apply_writes(writes, step)


def head_transform(vlm: VLM) -> tuple[float, float]:
    """The forward's transform of the head's output as ``(scale, cap)``: logits =
    ``cap · tanh(scale · z / cap)``, or ``scale · z`` where ``cap`` is 0
    (:mod:`interp.adapters.logits`)."""
    return (1.0, 0.0) if vlm.head_transform is None else vlm.head_transform.floats()


__all__ = [
    "ATTENTION",
    "MASK",
    "WEIGHTS",
    "Write",
    "attention_kind",
    "boost",
    "cut",
    "head_transform",
    "mean_groups",
    "residual_site",
    "residual_sites",
    "run_writes",
    "stand_in",
    "write",
]
