"""After the stages, teacher forcing: the targets' token ids and an :class:`~interp.Encoding` with
them appended (what :func:`interp.score` traces)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import torch
from jaxtyping import Bool, Int
from torch import Tensor

from ..errors import EmptyTargetError
from .assemble import Encoding
from .codec import Codec, ModelLike


def target_ids(vlm: ModelLike | Codec, targets: Sequence[str | Sequence[int]]) -> list[list[int]]:
    """Token ids of teacher-forcing targets (strings are tokenised without special tokens).

    Raises:
        EmptyTargetError: a target tokenises to nothing.
    """
    out: list[list[int]] = []
    for i, target in enumerate(targets):
        if isinstance(target, str):
            ids = vlm.tokenizer(target, add_special_tokens=False)["input_ids"]
        else:
            ids = [int(t) for t in target]
        if not ids:
            raise EmptyTargetError(
                f"target {i} ({target!r}) tokenises to no tokens; give a non-empty answer text"
            )
        out.append(list(ids))
    return out


def append_targets(
    vlm: ModelLike | Codec, enc: Encoding, targets: Sequence[Sequence[int]]
) -> tuple[Encoding, Int[Tensor, "batch tgt"], Bool[Tensor, "batch tgt"]]:
    """Append target tokens after each row's prompt, re-padding on the left.

    Per-token fields of the encoding (same ``[batch, seq]`` leading shape as ``input_ids``, e.g.
    ``attention_mask``, ``token_type_ids``, ``cross_attention_mask``) are re-laid out alongside: a
    target position copies the row's last prompt position (so answer tokens see what the prompt's
    end saw), unless the adapter fixes a value for it (``Adapter.target_fields``); padding is 0.

    Returns:
        the extended encoding (``last_index`` still points at the last *prompt* token), the target
        positions ``[batch, max_tgt]`` in the new sequence, and a mask of real target tokens.
    """
    ids = enc.input_ids
    batch, seq = ids.shape
    lengths = [len(t) for t in targets]
    starts = (
        enc.attention_mask.to(torch.long).argmax(dim=1).cpu().tolist()
    )  # first attended position
    ends = enc.last_index.cpu().tolist()
    total = max(e - s + 1 + n for s, e, n in zip(starts, ends, lengths))
    per_token = {
        k: v
        for k, v in enc.inputs.items()
        if isinstance(v, Tensor) and v.dim() >= 2 and v.shape[:2] == (batch, seq)
    }
    new: dict[str, Tensor] = {}
    for key, value in per_token.items():
        fill = vlm.tokenizer.pad_token_id if key == "input_ids" else 0
        new[key] = torch.full(
            (batch, total, *value.shape[2:]), fill, dtype=value.dtype, device=value.device
        )
    # the placeholder masks move with the prompt (the appended targets are text)
    masks = {"image_mask": enc.image_mask}
    masks |= {
        f"{kind}_mask": getattr(enc, f"{kind}_mask")
        for kind in ("audio", "video")
        if getattr(enc, f"{kind}_mask") is not None
    }
    moved = {
        key: torch.zeros(batch, total, dtype=torch.bool, device=value.device)
        for key, value in masks.items()
    }
    offsets = None
    if enc.offsets is not None:
        offsets = torch.zeros(batch, total, 2, dtype=torch.long)
    positions = torch.zeros(batch, max(lengths), dtype=torch.long)
    valid = torch.zeros(batch, max(lengths), dtype=torch.bool)
    last = torch.empty(batch, dtype=torch.long)
    for row, (s, e, tgt) in enumerate(zip(starts, ends, targets)):
        n_prompt = e - s + 1
        offset = total - n_prompt - len(tgt)
        tgt_slice = slice(offset + n_prompt, total)
        for key, value in per_token.items():
            new[key][row, offset : offset + n_prompt] = value[row, s : e + 1]
            if key == "input_ids":
                new[key][row, tgt_slice] = torch.tensor(tgt, dtype=value.dtype, device=value.device)
            elif key in vlm.adapter.target_fields:
                new[key][row, tgt_slice] = vlm.adapter.target_fields[key]
            else:
                new[key][row, tgt_slice] = value[row, e]
        for key, value in masks.items():
            moved[key][row, offset : offset + n_prompt] = value[row, s : e + 1]
        if offsets is not None and enc.offsets is not None:
            offsets[row, offset : offset + n_prompt] = enc.offsets[row, s : e + 1]
        last[row] = offset + n_prompt - 1
        positions[row, : len(tgt)] = torch.arange(offset + n_prompt, total)
        valid[row, : len(tgt)] = True
    inputs = {**enc.inputs, **new}
    extended = replace(
        enc,
        inputs=inputs,
        last_index=last.to(ids.device),
        offsets=offsets,
        **moved,
    )
    return extended, positions.to(ids.device), valid.to(ids.device)


__all__ = ["append_targets", "target_ids"]
