"""Prefix sharing: teacher-forced rows whose inputs begin alike run that beginning once.

A measurement that scores several contexts per sample (the drives' 2K + 2 contexts, a sample under
several text conditions) recomputes the same image prefix for each of them: system text, then
hundreds of image tokens, then the part that varies. Here rows are grouped by their media (equal
image, audio and video inputs) and, within a group, by the tokens they agree on: with ``P`` the
length of their common token prefix, cut so that it holds every media placeholder and ends before
the first logit a row reads, the group runs

1. the prefix, tokens ``0 .. P-1`` with the media, once, keeping the model's cache (HF's
   ``cache``: keys and values of every layer);
2. each row's suffix, tokens ``P ..``, from that cache expanded to the rows (right-padded; the
   attention mask covers prefix + suffix), in one traced forward per ``batch_size`` rows, with
   position ids continuing the prefix's: ``P + k`` (HF derives them from the cache's length), or
   for M-RoPE families ``P + k + δ`` with δ the prefix's rope delta (``rope_deltas``, which the
   model's forward sets; text after the last image continues from the image grid's largest
   position, as HF's generation continues).

By causality token ``t ≥ P`` attends only to tokens ``≤ t``, so the suffix's logits are the full
forward's: results equal the naive runs within float tolerance (about 1e-6 in fp32 on the tiny
families; bf16 rounds differently in the cached and the full attention, declared in
``docs/performance.md``). A family opts in through its adapter (``prefix_sharing``), set where a
test checks that equality (``tests/core/test_prefix_sharing.py``); PaliGemma's prompt attends both
ways (prefix-LM) and InstructBLIP's forward keeps no cache, so neither shares.

Where nothing is shared — a row alone in its group, a varied part that comes first (a swapped or
distorted image), edits — the rows run as before (:func:`interp.scoring.score_rows`). Remotely
(NDIF) each request is one nnsight session that runs the prefix and then the suffixes from the
cache it left on the server (:func:`remote_logprobs`): only plain data crosses the wire (M-RoPE
families read the rope delta the prefix's forward left on the server's module there);
text-only forwards run every row in full there.
"""

from __future__ import annotations

import copy
import hashlib
import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from jaxtyping import Float, Int, Shaped
from PIL import Image
from torch import Tensor

from .adapters.base import module_path
from .conditions.apply import Prepared
from .encoding import append_targets
from .encoding.assemble import Encoding
from .options import is_remote
from .plain import head_transform
from .wire import target_logprobs

if TYPE_CHECKING:
    from .model import VLM


@dataclass
class Unit:
    """One teacher-forced row, unpadded (batch 1): what its forward needs and what it reads.

    Attributes:
        ids: the traced tokens (prompt + target, or the prompt alone with the prefix removed).
        fields: the per-token inputs ``[1, L, ...]`` (``input_ids``, ``attention_mask``,
            ``token_type_ids`` ...), after the adapter's fix-ups.
        key: the digest of the media the row carries (:func:`media_key`): rows with equal keys
            see the same media.
        where: the logit position that scores each target token.
        target: the target's token ids.
        media_end: one past the last media placeholder (0 without media).
    """

    ids: Int[Tensor, " seq"]
    fields: dict[str, Tensor]
    key: str
    where: Int[Tensor, " tgt"]
    target: Int[Tensor, " tgt"]
    media_end: int


def applies(vlm: VLM, edits: Sequence[Any], trace_options: dict[str, Any]) -> bool:
    """Whether rows of ``vlm`` may share prefixes: the family is verified (``prefix_sharing``, on
    a written adapter entry) and no edit is given; remotely (:func:`remote_logprobs`) also a
    family with one forward for every row (no text-only stand-in)."""
    adapter = vlm.adapter
    if not adapter.prefix_sharing or adapter.inferred or adapter.batch_dependent or edits:
        return False
    if is_remote(trace_options) or getattr(vlm, "remote", False):
        return adapter.text_only_module is None
    return True


def remote(vlm: VLM, trace_options: dict[str, Any]) -> bool:
    """Whether the traces leave this process (the options, or a model loaded for NDIF)."""
    return is_remote(trace_options) or bool(getattr(vlm, "remote", False))


def _digest(value: Any, h: Any) -> None:
    if isinstance(value, Tensor):
        value = value.detach().cpu().contiguous()
        h.update(f"{tuple(value.shape)}{value.dtype}".encode())
        h.update(value.view(torch.uint8).numpy().tobytes())
    elif isinstance(value, np.ndarray):
        h.update(f"{value.shape}{value.dtype}".encode())
        h.update(np.ascontiguousarray(value).tobytes())
    elif isinstance(value, Image.Image):
        h.update(f"{value.size}{value.mode}".encode())
        h.update(value.tobytes())
    elif isinstance(value, (list, tuple)):
        h.update(f"[{len(value)}".encode())
        for v in value:
            _digest(v, h)
        h.update(b"]")
    else:
        h.update(repr(value).encode())


def media_key(seen: Prepared) -> str | None:
    """A digest of the media a row carries as the model sees them (its images, audio and videos,
    the condition applied): rows with equal keys get equal media inputs from the processor. None
    for a row whose pixels a condition edits after the processor (``distort``): it shares
    nothing."""
    if seen.pixels is not None:
        return None
    h = hashlib.sha1()
    for part in (seen.images, [a.array if hasattr(a, "array") else a for a in seen.audios]):
        _digest(part, h)
    _digest(seen.videos, h)
    return h.hexdigest()


def worth_trying(samples: Sequence[Any], condition: Any) -> bool:
    """Whether rows of one condition may share media, judged before encoding: the condition
    puts the same image in every row (``null:*``) or two samples name the same image, audio or
    video (equal paths, the same object). Rows that do not are scored in full without being
    encoded twice."""
    if not condition.uses_image and not any(s.audio or s.video for s in samples):
        return False
    if condition.kind not in ("full", "swap", "distort"):
        return True
    seen: set[Any] = set()
    for s in samples:
        for kind in ("image", "audio", "video"):
            value = getattr(s, kind)
            for item in value if isinstance(value, list) else [value]:
                if item is None:
                    continue
                key = (kind, str(item)) if isinstance(item, (str, Path)) else (kind, id(item))
                if key in seen:
                    return True
                seen.add(key)
    return False


def _per_token(inputs: dict[str, Any], batch: int, length: int) -> dict[str, Tensor]:
    return {
        k: v
        for k, v in inputs.items()
        if isinstance(v, Tensor) and v.dim() >= 2 and v.shape[:2] == (batch, length)
    }


@dataclass
class Prefix:
    """What the prefix of one media key runs with, from one of its rows encoded alone: its
    per-token inputs ``[1, L, ...]`` (the prefix takes their first P tokens; their trailing sizes
    are the suffixes' too), every other input (the media) and the callable the forward runs (None:
    the model's own forward)."""

    fields: dict[str, Tensor]
    media: dict[str, Any]
    fn: Any


def representative(vlm: VLM, enc: Encoding) -> Prefix:
    """The :class:`Prefix` of a one-row encoding (after the adapter's fix-ups)."""
    inputs, fn = vlm._call(enc, False)
    fields = _per_token(inputs, 1, enc.input_ids.shape[1])
    return Prefix(fields, {k: v for k, v in inputs.items() if k not in fields}, fn)


def units(
    vlm: VLM,
    enc: Encoding,
    targets: Sequence[Sequence[int]],
    prefix_removed: bool,
    keys: Sequence[str | None],
) -> list[Unit | None]:
    """The :class:`Unit` of each row of a left-padded batch and its target (None for a row with
    no media key): each row's tokens and per-token inputs cut out of the batch, after the
    adapter's fix-ups, with its read positions counted from its own first token."""
    if prefix_removed:
        traced = enc
        where = enc.last_index[:, None].expand(-1, max(len(t) for t in targets))
    else:
        traced, positions, _ = append_targets(vlm, enc, targets)
        where = positions - 1  # the logit at p predicts the token at p + 1
    inputs, _ = vlm._call(traced, False)
    batch, length = traced.input_ids.shape
    fields = _per_token(inputs, batch, length)
    starts = traced.attention_mask.to(torch.long).argmax(dim=1).tolist()
    media = traced.media_mask
    out: list[Unit | None] = []
    for row, (key, target) in enumerate(zip(keys, targets)):
        if key is None:
            out.append(None)
            continue
        s = starts[row]
        placeholders = media[row, s:].nonzero()
        out.append(
            Unit(
                ids=traced.input_ids[row, s:],
                fields={k: v[row : row + 1, s:] for k, v in fields.items()},
                key=key,
                where=(where[row, : len(target)] - s).to(torch.long).cpu(),
                target=torch.tensor(list(target), dtype=torch.long),
                media_end=int(placeholders.max()) + 1 if len(placeholders) else 0,
            )
        )
    return out


def shared_length(ids: Sequence[Tensor], cap: int, media_end: int) -> int:
    """The prefix length ``P`` rows with equal media share: the length of their common token
    prefix (``ids``: each row's tokens from its first), at most ``cap``; 0 when that leaves a
    media placeholder (``media_end``: one past the last of any row) out of it, or is 0."""
    p = min(cap, *(int(t.shape[0]) for t in ids))
    for t in ids[1:]:
        differ = (t[:p] != ids[0][:p]).nonzero()
        if len(differ):
            p = int(differ[0])
    return p if p >= media_end and p > 0 else 0


def common_length(units: Sequence[Unit]) -> int:
    """The prefix length ``P`` a group of rows with equal media shares (:func:`shared_length`),
    cut before the first logit any of them reads (the row's read must run in its suffix)."""
    cap = min(int(u.where.min()) for u in units)
    return shared_length([u.ids for u in units], cap, max(u.media_end for u in units))


def plan(units: Sequence[Unit]) -> tuple[list[tuple[list[int], int]], list[int]]:
    """Groups ``(row indices, P)`` of at least two rows that share a prefix of ``P`` tokens, and
    the rows that share nothing."""
    by_key: dict[str, list[int]] = {}
    for i, u in enumerate(units):
        by_key.setdefault(u.key, []).append(i)
    groups, alone = [], []
    for members in by_key.values():
        p = common_length([units[i] for i in members]) if len(members) > 1 else 0
        if p:
            groups.append((members, p))
        else:
            alone.extend(members)
    return groups, sorted(alone)


def _parameters(forward: Any) -> Any:
    try:
        return inspect.signature(getattr(forward, "forward", forward)).parameters
    except (TypeError, ValueError):
        return {}


def _cache_kwarg(vlm: VLM, fn: Any) -> str:
    """The forward's keyword for a cache (``cache`` in transformers 5, ``past_key_values``
    before it and in models not yet renamed)."""
    return (
        "cache" if "cache" in _parameters(fn if fn is not None else vlm.hf) else "past_key_values"
    )


def _rope_owner(vlm: VLM) -> Any:
    """The module holding M-RoPE's ``rope_deltas`` (None for other position schemes)."""
    for module in (getattr(vlm.hf, "model", None), vlm.hf):
        if module is not None and hasattr(module, "rope_deltas"):
            return module
    return None


def _rope_envoy(vlm: VLM) -> Any:
    """The nnsight envoy of :func:`_rope_owner`'s module (None without M-RoPE): a remote session
    reads the rope delta from it on the server."""
    owner = _rope_owner(vlm)
    if owner is None:
        return None
    return vlm.nn if owner is vlm.hf else vlm.nn.get(module_path(vlm.hf, owner))


def _mrope_positions(delta: Tensor, p: int, n: int, width: int) -> Shaped[Tensor, "3 batch width"]:
    """M-RoPE positions of ``n`` suffixes of ``width`` tokens after a prefix of ``p``: text after
    the media continues from the prefix's positions, ``p + k + δ`` on each of the three axes, as
    HF's generation continues (``δ``: the prefix's rope delta, ``[1, 1]`` or ``[n, 1]``, integer
    or float as the family keeps it)."""
    steps = torch.arange(p, p + width, device=delta.device)
    return (steps[None, None, :] + delta.reshape(1, -1, 1)).expand(3, n, -1)


def _prefix_inputs(vlm: VLM, shared: Prefix, p: int) -> dict[str, Any]:
    """The prefix's forward inputs: tokens ``0 .. p-1`` with the media, one logit kept where the
    forward takes ``logits_to_keep`` (the prefix's logits are never read)."""
    inputs = {**shared.media, **{k: v[:, :p] for k, v in shared.fields.items()}}
    if "logits_to_keep" in _parameters(shared.fn if shared.fn is not None else vlm.hf):
        inputs["logits_to_keep"] = 1
    return inputs


def run_prefix(vlm: VLM, shared: Prefix, p: int) -> tuple[Any, Any]:
    """The prefix's forward (tokens ``0 .. p-1`` with the media): the model's cache, and the
    rope delta its forward set (None for families without M-RoPE, or a prefix without media)."""
    inputs = _prefix_inputs(vlm, shared, p)
    fn = shared.fn
    owner = _rope_owner(vlm)
    if owner is not None:
        owner.rope_deltas = None  # the prefix's own, not an earlier forward's
    forward = fn if fn is not None else vlm.hf
    with torch.no_grad():
        out = forward(**inputs, use_cache=True)
    cache = out.get("cache")
    if cache is None:
        cache = out.get("past_key_values")
    if cache is None:
        raise RuntimeError(
            f"{vlm.adapter.name}: the forward returned no cache; set prefix_sharing=False on its "
            "adapter entry"
        )
    delta = None if owner is None else owner.rope_deltas
    return cache, delta


def _suffix(
    vlm: VLM, units: Sequence[Unit], p: int, shared: Prefix
) -> tuple[dict[str, Any], Tensor, Tensor, Tensor, Tensor]:
    """The suffixes' inputs (tokens ``p ..`` right-padded, the attention mask over prefix +
    suffix), and the read: rows, logit positions counted from ``p``, targets, and which are real."""
    n = len(units)
    width = max(int(u.ids.shape[0]) - p for u in units)
    pad = vlm.tokenizer.pad_token_id or 0
    inputs: dict[str, Any] = {}
    for name, value in shared.fields.items():
        fill = pad if name == "input_ids" else 0
        shape = (n, width, *value.shape[2:])
        inputs[name] = torch.full(shape, fill, dtype=value.dtype, device=value.device)
    for row, u in enumerate(units):
        size = int(u.ids.shape[0]) - p
        for name, value in u.fields.items():
            # trailing sizes may differ between batches (padded to a batch's most images)
            crop = tuple(slice(0, k) for k in inputs[name].shape[2:])
            inputs[name][(row, slice(0, size), *crop)] = value[(0, slice(p, None), *crop)]
    mask = inputs.get("attention_mask")
    if mask is not None:  # the prefix's keys, then each row's own
        inputs["attention_mask"] = torch.cat([mask.new_ones(n, p), mask], dim=1)
    span = max(len(u.target) for u in units)
    where = torch.zeros(n, span, dtype=torch.long)
    tgt = torch.zeros(n, span, dtype=torch.long)
    valid = torch.zeros(n, span, dtype=torch.bool)
    for row, u in enumerate(units):
        where[row, : len(u.target)] = u.where - p
        tgt[row, : len(u.target)] = u.target
        valid[row, : len(u.target)] = True
    device = units[0].ids.device
    rows = torch.arange(n, device=device)[:, None]
    return inputs, rows, where.to(device), tgt.to(device), valid


def suffix_logprobs(
    vlm: VLM,
    units: Sequence[Unit],
    p: int,
    cache: Any,
    delta: Tensor | None,
    shared: Prefix,
    trace_options: dict[str, Any],
) -> Float[Tensor, "batch tgt"]:
    """One traced forward of the rows' suffixes (tokens ``p ..``) from the prefix's ``cache``
    (copied and expanded to the rows): natural-log ``log p(a_t | a_<t, context)`` of each row's
    target tokens, 0 past a row's end."""
    n = len(units)
    inputs, rows, where, tgt, valid = _suffix(vlm, units, p, shared)
    if delta is not None:  # M-RoPE: text after the media continues from the prefix's positions
        inputs["position_ids"] = _mrope_positions(delta, p, n, inputs["input_ids"].shape[1])
    expanded = copy.deepcopy(cache)
    expanded.batch_repeat_interleave(n)
    inputs[_cache_kwarg(vlm, shared.fn)] = expanded
    inputs["use_cache"] = True
    # plain data only inside the block, as every scoring forward (interp.plain)
    head, (scale, cap) = vlm.lm_head, head_transform(vlm)
    options = dict(trace_options)
    if shared.fn is not None:
        options["fn"] = shared.fn
    with torch.no_grad(), vlm.nn.trace(**options) as tracer:
        with tracer.invoke(**inputs):
            lp = target_logprobs(head.output, rows, where, tgt, scale, cap).save()
    return (lp.cpu() * valid).float()


def remote_logprobs(
    vlm: VLM, units: Sequence[Unit], p: int, shared: Prefix, trace_options: dict[str, Any]
) -> Float[Tensor, "batch tgt"]:
    """:func:`suffix_logprobs` as one request: an nnsight session that runs the prefix's trace,
    expands the cache it leaves on the server to the rows (``batch_repeat_interleave``) and runs
    the suffixes' trace from it. Only plain data crosses the wire (the inputs, the positions, the
    read's indices); the cache never leaves the server. For M-RoPE families the suffixes'
    positions (:func:`_mrope_positions`) are computed on the server from the rope delta the
    prefix's forward left on its module (read through the module's envoy, between the traces).
    A text-only forward does not share remotely (:func:`applies`)."""
    n = len(units)
    inputs, rows, where, tgt, valid = _suffix(vlm, units, p, shared)
    first = _prefix_inputs(vlm, shared, p)
    key = _cache_kwarg(vlm, None)
    sent = {k: v for k, v in trace_options.items() if k in ("remote", "backend")}
    if vlm.remote and not is_remote(sent):
        sent["remote"] = vlm.remote
    extra = {k: v for k, v in trace_options.items() if k not in sent}
    # plain data only inside the block, as every scoring forward (interp.plain)
    nn, head, (scale, cap) = vlm.nn, vlm.lm_head, head_transform(vlm)
    rope, width = _rope_envoy(vlm), inputs["input_ids"].shape[1]
    with torch.no_grad(), nn.session(**sent):
        with nn.trace(**first, use_cache=True, **extra):
            out = nn.output
            cache = out.get("cache")
            if cache is None:
                cache = out.get("past_key_values")
        cache.batch_repeat_interleave(n)
        inputs[key] = cache
        if rope is not None:  # the prefix's forward set its rope delta on the server's module
            delta = rope.rope_deltas  # as _mrope_positions, inline: the server has no interp
            steps = torch.arange(p, p + width, device=delta.device)
            inputs["position_ids"] = (steps[None, None, :] + delta.reshape(1, -1, 1)).expand(
                3, n, -1
            )
        with nn.trace(**inputs, use_cache=True, **extra):
            lp = target_logprobs(head.output, rows, where, tgt, scale, cap).save()
    return (lp.cpu() * valid).float()


__all__ = [
    "Prefix",
    "Unit",
    "applies",
    "common_length",
    "media_key",
    "plan",
    "remote",
    "remote_logprobs",
    "representative",
    "run_prefix",
    "shared_length",
    "suffix_logprobs",
    "units",
    "worth_trying",
]
