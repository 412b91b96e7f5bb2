"""Prefix sharing in generation: prompts that begin alike run that beginning once.

The ablation study answers every item under each condition: under ``null:*`` every row carries the
same image, and the wordings of one image carry it under ``full`` and ``swap``; each prompt is
system text, the image's tokens, then the question. :func:`batches` prepares the batches
:func:`interp.generate` runs for a chunk of samples (greedy or seeded):

1. it orders the rows so that rows with equal media (:func:`interp.prefix.media_key`) sit in one
   batch, and groups a batch's rows by media; a group's prefix is its rows' common token prefix,
   cut to hold every media placeholder and to leave each row at least its last prompt token
   (a row alone is a group of one: its prefix is all but its last token);
2. it runs the batch's prefixes, one row per group (left-padded, with the media), through the
   model's own ``generate`` for one token, keeping the cache (keys and values of every layer),
   and selects each row's group from it (``batch_select_indices``);
3. :func:`interp.generate` generates every row from that cache in one nnsight generate trace
   (:func:`interp.generation.generate_batch`, unchanged): the input is each row's group prefix
   (left-padded as in step 2) then its own suffix, left-padded where it begins, so the pads sit in
   the middle; the attention mask is 0 on both pads, and HF's position ids (``cumsum(mask) - 1``)
   give the suffix ``P + k``, as the row's full prompt would have. HF slices the tokens past the
   cache, so only suffixes run.

M-RoPE families (Qwen-VL, the Qwen omni thinkers) continue a cache at those positions plus the
model's rope delta (``rope_deltas``), which the prefixes' ``generate`` sets per group: each row
takes its group's before the rows generate.

By causality every suffix token attends to the same keys as in the full prompt: the scores equal
the naive generation's within float tolerance (``tests/core/test_prefix_generation.py`` checks the
scores and the tokens on every family of the tiny suite, and HF's own ``generate`` of each row
alone on LLaVA). A family shares where its adapter declares ``prefix_sharing`` and the run has no
edits and no decoding method (:func:`refusal` says why not); HF's sliding window counts cache
columns, pads included, so a family with one shares a batch only while the window holds every
column (:func:`sliding_window`). Elsewhere, and for a batch whose rows carry media a condition
edits after the processor (``distort``) or share nothing, the rows run in full.

Remotely (NDIF) the cache never leaves the server: each shared batch is one nnsight session
(:func:`interp.generation.generate_batch` given a :class:`ServerPrefix`) that runs the prefixes'
forward (step 2 as a trace with ``use_cache=True`` at the positions ``generate``'s first step
gives them, ``cumsum(mask) - 1``), selects each row's group from the cache it leaves there
(``batch_select_indices``) and generates the rows from it in the same block as every other run.
The rows carry the positions of step 3 as ``position_ids`` (the values HF would derive): the
server's collation counts a row with pads in the middle from its first column. Only the inputs,
the positions and the rows' group indices cross the wire
(``tests/remote/test_remote_prefix_generation.py``). For M-RoPE families the prefixes' forward runs
without positions (the model computes its 3-D positions from the grids and leaves the groups' rope
deltas on its module); between the traces the session reads them there (through the module's
envoy) and gives the rows the positions HF's generation would, ``cumsum(mask) - 1 + δ`` of the
row's group, computed on the server: nothing is set on the server's module.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor
from transformers import GenerationConfig

from . import prefix
from .conditions import Condition
from .encoding.assemble import Encoding, assemble
from .encoding.batch import batch_rows
from .encoding.codec import as_codec
from .encoding.resolve import Row, resolve
from .samples import Sample

if TYPE_CHECKING:
    from .model import VLM


def refusal(
    vlm: VLM, edits: Sequence[Any], decoding: Any, trace_options: dict[str, Any]
) -> str | None:
    """Why :func:`interp.generate` may not share prefixes on ``vlm`` (None: it may): the family
    shares when scoring (:func:`interp.prefix.applies`), its forward with images needs no
    text-only stand-in, and there is no edit and no decoding method."""
    adapter = vlm.adapter
    if decoding is not None:
        return "a decoding method chooses the tokens"
    if edits:
        return "edits change the prefix"
    if adapter.text_only_module is not None:
        return "its image-less rows run a text-only module"
    if not prefix.applies(vlm, edits, trace_options):
        return "the family is not verified to share prefixes (prefix_sharing)"
    return None


def applies(vlm: VLM, edits: Sequence[Any], decoding: Any, trace_options: dict[str, Any]) -> bool:
    """Whether :func:`interp.generate` may share prefixes on ``vlm`` (:func:`refusal` is None)."""
    return refusal(vlm, edits, decoding, trace_options) is None


@dataclass
class ServerPrefix:
    """A shared batch's prefixes for a remote run, as plain data: the one-row-per-group forward's
    ``inputs`` (media, left-padded per-token fields, HF's generation positions), each row's
    group (``rows``, the cache's rows to select) and the generate keyword taking the cache
    (``cache_kwarg``); for M-RoPE families the envoy of the module whose ``rope_deltas`` the
    prefixes' forward sets (``rope``, :func:`interp.prefix._rope_envoy`; None for the others).
    :func:`interp.generation.generate_batch` runs them in its session."""

    inputs: dict[str, Any]
    rows: Tensor
    cache_kwarg: str
    rope: Any = None


def sliding_window(vlm: VLM) -> int | None:
    """The text decoder's sliding attention window (None without one). HF's window counts
    columns of the cache, pads included: a pad in the middle of a row would move a key out of a
    query's window, so a batch wider than the window runs in full."""
    config = vlm.hf.config.get_text_config()
    window = getattr(config, "sliding_window", None)
    kinds = getattr(config, "layer_types", None) or []
    if not isinstance(window, int) or getattr(config, "use_sliding_window", True) is False:
        return None
    if kinds and not any("sliding" in str(k) for k in kinds):
        return None
    return window


def _lengths(enc: Encoding) -> tuple[list[int], list[int]]:
    """Each row's first real token (after its left padding) and one past its last media
    placeholder, counted from that first token (0 without media)."""
    starts = enc.attention_mask.to(torch.long).argmax(dim=1).tolist()
    media = enc.media_mask
    ends = []
    for row, s in enumerate(starts):
        found = media[row, s:].nonzero()
        ends.append(int(found.max()) + 1 if len(found) else 0)
    return starts, ends


def _prefix_lengths(
    enc: Encoding, groups: list[list[int]], starts: list[int], ends: list[int]
) -> list[int]:
    """Each group's prefix length (:func:`interp.prefix.shared_length`): at most every row's
    length - 1 (the last prompt token runs with the suffix and gives the first logit), 0 where
    the group cannot share; ``starts`` and ``ends`` as :func:`_lengths` gives them."""
    ids = enc.input_ids
    out = []
    for members in groups:
        rows = [ids[r, starts[r] :] for r in members]
        cap = min(len(t) for t in rows) - 1
        out.append(prefix.shared_length(rows, cap, max(ends[r] for r in members)))
    return out


def _per_token(inputs: dict[str, Any], enc: Encoding) -> dict[str, Tensor]:
    """The per-token inputs of ``enc``'s batch (``[batch, seq, ...]``)."""
    return prefix._per_token(inputs, *enc.input_ids.shape)


def _pack(
    fields: dict[str, Tensor], spans: Sequence[tuple[int, int, int]], width: int, pad: int
) -> dict[str, Tensor]:
    """Per-token fields rebuilt: output row ``i`` holds ``field[row, a:b]`` right-aligned in
    ``width`` columns (``spans[i] = (row, a, b)``), left-padded with ``pad`` (input ids) or 0."""
    out = {}
    for name, value in fields.items():
        fill = pad if name == "input_ids" else 0
        shape = (len(spans), width, *value.shape[2:])
        packed = torch.full(shape, fill, dtype=value.dtype, device=value.device)
        for i, (row, a, b) in enumerate(spans):
            packed[i, width - (b - a) :] = value[row, a:b]
        out[name] = packed
    return out


def _prefix_rows(
    vlm: VLM, reps: list[Row], lengths: list[int], pad: int
) -> tuple[dict[str, Any], dict[str, Tensor]]:
    """Every group's prefix, one row per group left-padded to the longest: the media inputs and
    the per-token fields."""
    enc = assemble(as_codec(vlm), reps)
    inputs, _ = vlm._call(enc, True)
    fields = _per_token(inputs, enc)
    starts, _ = _lengths(enc)
    width = max(lengths)
    spans = [(g, starts[g], starts[g] + p) for g, p in enumerate(lengths)]
    packed = _pack(fields, spans, width, pad)
    return {k: v for k, v in inputs.items() if k not in fields}, packed


def _prefix_cache(
    vlm: VLM, reps: list[Row], lengths: list[int], pad: int, config: GenerationConfig
) -> tuple[Any, dict[str, Tensor]]:
    """The cache of every group's prefix (:func:`_prefix_rows`) from one call of the model's own
    ``generate`` for one token, and those prefix rows' per-token fields."""
    media, packed = _prefix_rows(vlm, reps, lengths, pad)
    width = max(lengths)
    with torch.no_grad():
        out = vlm.hf.generate(**media, **packed, generation_config=config)
    cache = out.get("cache")
    if cache is None:
        cache = out.get("past_key_values")
    if cache is None or cache.get_seq_length() != width:
        raise RuntimeError(
            f"{vlm.adapter.name}: generate kept no cache of the prefix; set prefix_sharing=False "
            "on its adapter entry"
        )
    return cache, packed


def _positions(mask: Tensor) -> Tensor:
    """The position ids HF's ``generate`` derives from an attention mask: ``cumsum(mask) - 1``
    over the attended tokens, 0 on pads."""
    counted = mask.to(torch.long).cumsum(-1) - 1
    return counted.masked_fill(mask == 0, 0)


def _server_prefix(
    vlm: VLM, reps: list[Row], lengths: list[int], pad: int, rows_of: Tensor
) -> tuple[ServerPrefix, dict[str, Tensor]]:
    """:func:`_prefix_cache` lowered for a remote run: the prefix forward's inputs with the
    positions ``generate``'s first step gives left-padded rows (``cumsum(mask) - 1``, where the
    forward takes positions), to run on the server, and the prefix rows' per-token fields."""
    media, packed = _prefix_rows(vlm, reps, lengths, pad)
    inputs: dict[str, Any] = {**media, **packed}
    params = prefix._parameters(vlm.hf)
    mask = packed.get("attention_mask")
    rope = prefix._rope_envoy(vlm)  # M-RoPE: the model computes the prefixes' 3-D positions
    if (
        mask is not None
        and rope is None
        and "position_ids" not in inputs
        and "position_ids" in params
    ):
        inputs["position_ids"] = _positions(mask)
    if "logits_to_keep" in params:  # the prefix's logits are never read
        inputs["logits_to_keep"] = 1
    return ServerPrefix(inputs, rows_of, prefix._cache_kwarg(vlm, None), rope), packed


def _batch(
    vlm: VLM,
    rows: list[Row],
    keys: list[str | None],
    pad: int,
    max_new_tokens: int,
    config: GenerationConfig,
    remote: bool = False,
) -> tuple[Encoding, dict[str, Any]] | None:
    """The encoding of one batch with its inputs rebuilt to continue from the groups' prefix cache
    (the module docstring, steps 2-3), and the trace keyword carrying that cache (remotely: the
    ``server_prefix`` keyword of :func:`interp.generation.generate_batch`); None when a row
    carries media a condition edits after the processor, no group shares anything, or the rows
    with the new tokens would outgrow a sliding window (:func:`sliding_window`). ``keys``: the
    rows' media keys (:func:`interp.prefix.media_key`)."""
    if any(k is None for k in keys):
        return None
    first: dict[str, int] = {}
    group_of = [first.setdefault(k, len(first)) for k in keys]  # type: ignore[arg-type]
    groups = [[r for r, g in enumerate(group_of) if g == k] for k in range(len(first))]
    enc = assemble(as_codec(vlm), rows)
    starts, ends = _lengths(enc)
    lengths = _prefix_lengths(enc, groups, starts, ends)
    if 0 in lengths or all(len(m) == 1 for m in groups):
        return None
    total = enc.input_ids.shape[1]
    tails = [(r, starts[r] + lengths[group_of[r]], total) for r in range(len(rows))]
    width = max(b - a for _, a, b in tails)
    window = sliding_window(vlm)
    if window is not None and max(lengths) + width + max_new_tokens > window:
        return None
    reps = [rows[m[0]] for m in groups]
    rows_of = torch.tensor(group_of, device=enc.input_ids.device)
    if remote:  # the prefix runs in the rows' own session on the server (ServerPrefix)
        lowered, heads = _server_prefix(vlm, reps, lengths, pad, rows_of)
        extra: dict[str, Any] = {"server_prefix": lowered}
    else:
        cache, heads = _prefix_cache(vlm, reps, lengths, pad, config)
        cache.batch_select_indices(rows_of)
        owner = prefix._rope_owner(vlm)
        if owner is not None and owner.rope_deltas is not None:
            # M-RoPE: generate continues a cache at its cumsum positions plus the model's rope
            # delta, which the prefixes' generate left per group: each row takes its group's
            owner.rope_deltas = owner.rope_deltas[rows_of]
        extra = {prefix._cache_kwarg(vlm, None): cache}
    inputs, _ = vlm._call(enc, True)
    suffix = _pack(_per_token(inputs, enc), tails, width, pad)
    merged = {k: torch.cat([heads[k][group_of], suffix[k]], dim=1) for k in suffix}
    if remote and "attention_mask" in merged and "position_ids" in prefix._parameters(vlm.hf):
        # nnsight's server counts a row with pads in the middle from its first column: the
        # positions generate would derive here travel with the inputs
        merged["position_ids"] = _positions(merged["attention_mask"])
    shared = Encoding(
        merged,
        torch.full((len(rows),), merged["input_ids"].shape[1] - 1, dtype=torch.long),
        torch.zeros_like(merged["input_ids"], dtype=torch.bool),
        enc.has_image,
        enc.prompts,
        enc.questions,
        enc.n_images,
        enc.sample_ids,
    )
    return shared, extra


def batches(
    vlm: VLM,
    chunk: Sequence[Sample],
    cond: Condition,
    pool: Sequence[Sample],
    batch_size: int,
    max_new_tokens: int,
    prefix_config: GenerationConfig,
    remote: bool = False,
) -> Iterator[tuple[list[int], Encoding, dict[str, Any]]]:
    """The batches :func:`interp.generate` runs for ``chunk`` under ``cond`` with shared prefixes:
    per batch, the rows' indices in ``chunk``, the encoding to generate from and the keyword of
    :func:`interp.generation.generate_batch` carrying the prefix cache, or with ``remote`` the
    prefixes to run on the server (module docstring; ``prefix_config``: the plain generation
    config of one token the prefixes run with locally). A batch that shares nothing comes as
    :func:`interp.encoding.encode` gives it, with no keyword."""
    codec = as_codec(vlm)
    resolved = resolve(chunk, cond, codec.processor, all_samples=pool)
    keys = []
    for row in resolved:  # each row's media loaded once here, and again for its batch
        keys.append(prefix.media_key(row.seen))
        row.release()
    first: dict[Any, int] = {}
    rank = [first.setdefault(k if k is not None else ("row", i), i) for i, k in enumerate(keys)]
    order = sorted(range(len(chunk)), key=lambda i: (rank[i], i))  # equal media side by side
    ordered = [resolved[i] for i in order]
    pad = vlm.tokenizer.pad_token_id or 0
    for idx in batch_rows(codec.adapter, ordered, batch_size):
        rows = [ordered[i] for i in idx]
        keyed = [keys[order[i]] for i in idx]
        built = _batch(vlm, rows, keyed, pad, max_new_tokens, prefix_config, remote)
        enc, extra = built if built is not None else (assemble(codec, rows), {})
        for row in rows:
            row.release()
        yield [order[i] for i in idx], enc, extra


__all__ = ["ServerPrefix", "applies", "batches", "refusal", "sliding_window"]
