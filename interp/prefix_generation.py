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
alone on LLaVA). A family shares where its adapter declares ``prefix_sharing`` and the run is
local with no edits and no decoding method (:func:`applies`); HF's sliding window counts cache
columns, pads included, so a family with one shares a batch only while the window holds every
column (:func:`sliding_window`). Elsewhere, and for a batch whose rows carry media a condition
edits after the processor (``distort``) or share nothing, the rows run in full. A remote run
generates every row in full.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
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


def applies(vlm: VLM, edits: Sequence[Any], decoding: Any, trace_options: dict[str, Any]) -> bool:
    """Whether :func:`interp.generate` may share prefixes on ``vlm``: the family shares when
    scoring (:func:`interp.prefix.applies`), its forward with images needs no text-only stand-in,
    and the run is local with no edits and no decoding method."""
    return (
        decoding is None
        and prefix.applies(vlm, edits, trace_options)
        and not prefix.remote(vlm, trace_options)
        and vlm.adapter.text_only_module is None
    )


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


def _prefix_cache(
    vlm: VLM, reps: list[Row], lengths: list[int], pad: int, config: GenerationConfig
) -> tuple[Any, dict[str, Tensor]]:
    """The cache of every group's prefix (one row per group, left-padded to the longest) from one
    call of the model's own ``generate`` for one token, and those prefix rows' per-token fields."""
    enc = assemble(as_codec(vlm), reps)
    inputs, _ = vlm._call(enc, True)
    fields = _per_token(inputs, enc)
    starts, _ = _lengths(enc)
    width = max(lengths)
    spans = [(g, starts[g], starts[g] + p) for g, p in enumerate(lengths)]
    packed = _pack(fields, spans, width, pad)
    media = {k: v for k, v in inputs.items() if k not in fields}
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


def _batch(
    vlm: VLM,
    rows: list[Row],
    keys: list[str | None],
    pad: int,
    max_new_tokens: int,
    config: GenerationConfig,
) -> tuple[Encoding, dict[str, Any]] | None:
    """The encoding of one batch with its inputs rebuilt to continue from the groups' prefix cache
    (the module docstring, steps 2-3), and the trace keyword carrying that cache; None when a row
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
    cache, heads = _prefix_cache(vlm, [rows[m[0]] for m in groups], lengths, pad, config)
    rows_of = torch.tensor(group_of, device=enc.input_ids.device)
    cache.batch_select_indices(rows_of)
    owner = prefix._rope_owner(vlm)
    if owner is not None and owner.rope_deltas is not None:
        # M-RoPE: generate continues a cache at its cumsum positions plus the model's rope delta,
        # which the prefixes' generate left per group: each row takes its group's
        owner.rope_deltas = owner.rope_deltas[rows_of]
    inputs, _ = vlm._call(enc, True)
    suffix = _pack(_per_token(inputs, enc), tails, width, pad)
    merged = {k: torch.cat([heads[k][group_of], suffix[k]], dim=1) for k in suffix}
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
    return shared, {prefix._cache_kwarg(vlm, None): cache}


def batches(
    vlm: VLM,
    chunk: Sequence[Sample],
    cond: Condition,
    pool: Sequence[Sample],
    batch_size: int,
    max_new_tokens: int,
    prefix_config: GenerationConfig,
) -> Iterator[tuple[list[int], Encoding, dict[str, Any]]]:
    """The batches :func:`interp.generate` runs for ``chunk`` under ``cond`` with shared prefixes:
    per batch, the rows' indices in ``chunk``, the encoding to generate from and the trace
    keyword carrying the prefix cache (module docstring; ``prefix_config``: the plain generation
    config of one token the prefixes run with). A batch that shares nothing comes as
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
        built = _batch(vlm, rows, [keys[order[i]] for i in idx], pad, max_new_tokens, prefix_config)
        enc, extra = built if built is not None else (assemble(codec, rows), {})
        for row in rows:
            row.release()
        yield [order[i] for i in idx], enc, extra


__all__ = ["applies", "batches", "sliding_window"]
