"""Turning samples under a condition into one collated model input.

Every batch is built by the model's own processor with its chat template and left padding; the last
prompt token's position and the image-token mask are derived from the encoding itself, so they are
correct whatever the padding side.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from jaxtyping import Bool, Int
from torch import Tensor

from .conditions import Condition, condition_inputs
from .errors import EmptyTargetError, ImageTokenMismatchError
from .samples import Sample

if TYPE_CHECKING:
    from .model import VLM


@dataclass
class Encoding:
    """One collated batch of model inputs.

    Attributes:
        inputs: the processor's output (``input_ids``, ``attention_mask``, ``pixel_values`` ...), on
            the model's device, floating tensors in the model's dtype.
        last_index: position of each row's last prompt token (the one that predicts the first answer
            token).
        image_mask: True at image-token positions.
        has_image: whether each row carries an image.
        prompts: the rendered text prompts.
    """

    inputs: dict[str, Tensor]
    last_index: Int[Tensor, " batch"]
    image_mask: Bool[Tensor, "batch seq"]
    has_image: list[bool]
    prompts: list[str]

    @property
    def input_ids(self) -> Int[Tensor, "batch seq"]:
        return self.inputs["input_ids"]

    @property
    def attention_mask(self) -> Int[Tensor, "batch seq"]:
        return self.inputs["attention_mask"]

    def __len__(self) -> int:
        return int(self.input_ids.shape[0])


def last_positions(attention_mask: Int[Tensor, "batch seq"]) -> Int[Tensor, " batch"]:
    """Index of the last attended position of each row (left or right padding)."""
    seq = attention_mask.shape[1]
    return (seq - 1 - attention_mask.flip(1).to(torch.long).argmax(dim=1)).to(torch.long)


def _to_model(inputs: dict[str, Any], vlm: VLM) -> dict[str, Tensor]:
    out: dict[str, Tensor] = {}
    for key, value in inputs.items():
        if isinstance(value, Tensor):
            value = value.to(vlm.device)
            if value.is_floating_point():
                value = value.to(vlm.dtype)
        out[key] = value
    return out


def encode(
    vlm: VLM,
    samples: Sequence[Sample],
    condition: str | Condition = "full",
    *,
    all_samples: Sequence[Sample] | None = None,
) -> Encoding:
    """Encode ``samples`` under ``condition`` as one left-padded batch.

    Raises:
        ImageTokenMismatchError: a row with an image has no image token, or a row without one has
            image tokens (e.g. a literal placeholder such as ``<image>`` inside the question text).
    """
    pairs = condition_inputs(samples, condition, vlm.processor, all_samples=all_samples)
    for sample, (question, _) in zip(samples, pairs):
        if vlm.image_token_id in vlm.tokenizer(question, add_special_tokens=False)["input_ids"]:
            raise ImageTokenMismatchError(
                f"sample {sample.id!r}: the question contains the model's image placeholder token "
                f"({vlm.tokenizer.convert_ids_to_tokens(vlm.image_token_id)!r}); remove it from the "
                "text and pass the image through Sample.image"
            )
    prompts = [vlm.adapter.build_prompt(vlm.processor, q, img is not None) for q, img in pairs]
    images = vlm.adapter.processor_images([img for _, img in pairs])
    kwargs: dict[str, Any] = {"text": prompts, "padding": True, "return_tensors": "pt"}
    if images is not None:
        kwargs["images"] = images
    try:
        raw = vlm.processor(**kwargs)
    except ValueError as err:
        if "image" in str(err).lower() and "token" in str(err).lower():
            raise ImageTokenMismatchError(
                f"the processor could not match images to image tokens ({err}). Check that no "
                "question contains an image placeholder string and that each image-bearing row "
                "has exactly one image."
            ) from err
        raise
    inputs = dict(raw)
    inputs.pop("labels", None)  # some processors add training labels; measurements never use them
    has_image = [img is not None for _, img in pairs]
    image_mask = inputs["input_ids"] == vlm.image_token_id
    counts = image_mask.sum(dim=1)
    for row, (flag, count) in enumerate(zip(has_image, counts.tolist())):
        if flag and count == 0 or not flag and count > 0:
            sid = samples[row].id
            raise ImageTokenMismatchError(
                f"sample {sid!r}: {count} image-token positions for a row "
                f"{'with' if flag else 'without'} an image. A question text must not contain the "
                "model's image placeholder; pass the image through Sample.image instead."
            )
    inputs = _to_model(inputs, vlm)
    return Encoding(
        inputs=inputs,
        last_index=last_positions(inputs["attention_mask"]).to(vlm.device),
        image_mask=image_mask.to(vlm.device),
        has_image=has_image,
        prompts=prompts,
    )


def batches(
    vlm: VLM,
    samples: Sequence[Sample],
    condition: str | Condition,
    batch_size: int,
    *,
    all_samples: Sequence[Sample] | None = None,
) -> Iterator[tuple[list[int], Encoding]]:
    """Yield ``(indices, encoding)`` over ``samples`` in batches of at most ``batch_size``.

    Where the adapter forbids mixing image and no-image rows in one forward (Mllama), the rows are
    grouped by whether they carry an image first; indices say where each row belongs.
    ``all_samples`` is the list ``swap:`` conditions draw images from (default: ``samples``).
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    cond = Condition.parse(condition)
    order = list(range(len(samples)))
    if not vlm.adapter.mixed_batches and cond.kind == "full":
        with_image = [i for i in order if samples[i].has_image]
        groups = [with_image, [i for i in order if not samples[i].has_image]]
    else:
        groups = [order]
    for group in groups:
        for start in range(0, len(group), batch_size):
            idx = group[start : start + batch_size]
            yield (
                idx,
                encode(vlm, [samples[i] for i in idx], cond, all_samples=all_samples or samples),
            )


def target_ids(vlm: VLM, targets: Sequence[str | Sequence[int]]) -> list[list[int]]:
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
    vlm: VLM, enc: Encoding, targets: Sequence[Sequence[int]]
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
        last[row] = offset + n_prompt - 1
        positions[row, : len(tgt)] = torch.arange(offset + n_prompt, total)
        valid[row, : len(tgt)] = True
    inputs = {**enc.inputs, **new}
    extended = Encoding(
        inputs=inputs,
        last_index=last.to(ids.device),
        image_mask=inputs["input_ids"] == vlm.image_token_id,
        has_image=enc.has_image,
        prompts=enc.prompts,
    )
    return extended, positions.to(ids.device), valid.to(ids.device)


__all__ = ["Encoding", "append_targets", "batches", "encode", "last_positions", "target_ids"]
