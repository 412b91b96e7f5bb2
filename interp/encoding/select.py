"""Stage 8, select: named positions of an :class:`~interp.Encoding` as ``[batch, seq]`` masks.

:func:`select` is the one place a position name is resolved: :meth:`interp.EditContext.positions`,
:func:`interp.tracing.resolve_positions` and :func:`question_mask` call it.

Names: ``"all"`` (every attended token), ``"prompt"``, ``"last"`` (the last prompt token, which
predicts the first answer token), ``"image"`` (image-token positions), ``"image:k"`` (those of each
row's k-th image), ``"audio"`` / ``"video"`` and ``"audio:k"`` / ``"video:k"`` likewise, ``"text"``
(prompt tokens that are not image, audio or video tokens), ``"question"`` (the tokens over the
question text's characters), ``"answer"`` (teacher-forced target tokens, given by the caller).
Integers select prompt positions counted from each row's first prompt token (0, 1 ...) or from its
end (-1 = the last prompt token). A boolean tensor ``[batch, seq]`` is used as it is.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import torch
from jaxtyping import Bool
from torch import Tensor

from ..errors import InterventionError, PositionError
from .assemble import Encoding
from .locate import span_tokens, uncovered

PositionSpec = str | int | Sequence[int] | Tensor

POSITION_NAMES = ("all", "prompt", "last", "image", "audio", "video", "text", "question", "answer")
SLOT_KINDS = ("image", "audio", "video")


def slot(spec: str) -> tuple[str, int] | None:
    """``"image:k"`` (``"audio:k"``, ``"video:k"``) → (kind, k): the k-th input of that kind in
    each row; else None."""
    name, sep, arg = spec.partition(":")
    if name not in SLOT_KINDS or not sep:
        return None
    if not arg.isdigit():
        raise InterventionError(f"position {spec!r}: give the input's index, e.g. '{name}:0'")
    return name, int(arg)


def bad_position(spec: Any) -> None:
    raise InterventionError(
        f"unknown position {spec!r}; use one of {', '.join(POSITION_NAMES)}, 'image:<k>' (the "
        "k-th image of each row; 'audio:<k>', 'video:<k>' likewise), prompt offsets (ints), or a "
        "bool mask"
    )


def check_position(spec: Any) -> None:
    """Validate a position spec before any compute: a known name, ``"image:<k>"``, prompt
    offsets (ints) or a bool mask (whose shape is checked against each batch later).

    Raises:
        InterventionError: anything else.
    """
    if isinstance(spec, str):
        if spec not in POSITION_NAMES and slot(spec) is None:
            bad_position(spec)
        return
    if isinstance(spec, Tensor):
        if spec.dtype != torch.bool or spec.dim() != 2:
            raise InterventionError(
                f"a position mask must be a 2-D bool tensor [batch, seq], got {spec.dtype} "
                f"{tuple(spec.shape)}"
            )
        return
    values = [spec] if isinstance(spec, int) else spec
    try:
        ok = all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in values)
    except TypeError:
        ok = False
    if not ok or not list(values):
        bad_position(spec)


def prompt_mask(enc: Encoding) -> Bool[Tensor, "batch seq"]:
    """True at attended prompt positions (up to each row's last prompt token)."""
    seq = enc.input_ids.shape[1]
    pos = torch.arange(seq, device=enc.input_ids.device)
    return enc.attention_mask.bool() & (pos[None, :] <= enc.last_index[:, None])


def _question(enc: Encoding) -> Bool[Tensor, "batch seq"]:
    """The tokens whose character offsets overlap the question's character spans in the text the
    tokenizer read; never image, audio or video tokens. Every non-space character of the question
    must lie under a selected token. A row with an empty question has none.

    Raises:
        PositionError: a row's question cannot be located (named with the reason and the fix).
    """
    mask = torch.zeros_like(enc.image_mask, device="cpu")
    problems: list[str] = []
    for row in range(len(enc)):
        spans = enc.spans[row] if row < len(enc.spans) else None
        if spans is None:
            problems.append(f"row {row}: the encoding carries no spans (build it with encode())")
            continue
        problem = spans.problem
        if not spans.question and problem is None:
            continue  # no question text in this row
        if problem is None and enc.offsets is None:
            problem = "the tokenizer gives no character offsets (a slow tokenizer)"
        if problem is not None:
            problems.append(
                f"row {row} ({enc.sample_ids[row] if enc.sample_ids else row}): {problem}"
            )
            continue
        assert enc.offsets is not None
        exclude = (enc.media_mask[row] | ~enc.attention_mask[row].bool()).cpu()
        found = span_tokens(enc.offsets[row], spans.question, exclude)
        missing = uncovered(enc.offsets[row][found], spans.question, enc.texts[row] or "")
        if missing:
            problems.append(
                f"row {row}: no token's offsets cover the question characters {missing!r}"
            )
            continue
        mask[row] = found
    if problems:
        raise PositionError(
            "cannot locate the question in "
            + "; ".join(problems)
            + ". Load the model with its fast tokenizer (use_fast=True) and a processor that "
            "inserts the question text verbatim, or pass explicit positions (a bool mask)."
        )
    return mask.to(enc.image_mask.device)


def _runs(flags: Tensor) -> list[tuple[int, int]]:
    """``[start, end)`` of each run of True in a 1-D bool tensor."""
    padded = torch.cat(
        [torch.zeros(1, dtype=torch.int8), flags.to(torch.int8), torch.zeros(1, dtype=torch.int8)]
    )
    edges = padded.diff().nonzero().flatten().tolist()
    return list(zip(edges[::2], edges[1::2]))


def slot_mask(enc: Encoding, kind: str, k: int) -> Bool[Tensor, "batch seq"]:
    """True at the placeholder positions of each row's ``k``-th ``kind`` input (``"image"``,
    ``"audio"``, ``"video"``; 0-based, in prompt order).

    The input's tokens are those inside the character span its placeholder expanded to (the
    processor's replacement offsets); for processors that report none (one image token per image,
    or image tokens prepended outside the text), the ``k``-th run of consecutive placeholder
    tokens. A row with fewer than ``k + 1`` such inputs has no such positions.
    """
    tokens = enc.mask(kind).cpu()
    mask = torch.zeros_like(tokens)
    counts = {"image": enc.n_images, "audio": enc.n_audio, "video": enc.n_video}[kind]
    for row in range(len(enc)):
        spans = enc.spans[row].of(kind) if row < len(enc.spans) else []
        if spans and enc.offsets is not None:
            if k < len(spans):
                mask[row] = span_tokens(enc.offsets[row], [spans[k]], ~tokens[row])
            continue
        runs = _runs(tokens[row])
        n = counts[row] if row < len(counts) else len(runs)
        if len(runs) < n == int(tokens[row].sum()):
            # one token per input (Mllama's <|image|>) with inputs side by side: one run, n inputs
            runs = [(i, i + 1) for i in tokens[row].nonzero().flatten().tolist()]
        if k < len(runs):
            mask[row, runs[k][0] : runs[k][1]] = True
    return mask.to(enc.image_mask.device)


def _offsets(enc: Encoding, offsets: list[int], prompt: Tensor) -> Bool[Tensor, "batch seq"]:
    device = enc.input_ids.device
    first = enc.attention_mask.to(torch.long).argmax(dim=1)
    mask = torch.zeros_like(prompt)
    for k in offsets:
        idx = enc.last_index + k + 1 if k < 0 else first + k
        if bool(((idx < first) | (idx > enc.last_index)).any()):
            raise InterventionError(
                f"position {k} falls outside the prompt of some row (prompt lengths "
                f"{(enc.last_index - first + 1).tolist()})"
            )
        mask[torch.arange(len(enc), device=device), idx] = True
    return mask


def select(
    enc: Encoding, spec: PositionSpec, *, answer_mask: Tensor | None = None
) -> Bool[Tensor, "batch seq"]:
    """The positions ``spec`` names in ``enc`` (see the module docstring), as a ``[batch, seq]``
    mask on the encoding's device. ``answer_mask`` gives ``"answer"`` (default: none).

    Raises:
        InterventionError: an unknown name, a bad mask, or an offset outside some row's prompt.
        PositionError: ``"question"`` where a row's question cannot be located.
    """
    device = enc.input_ids.device
    if isinstance(spec, Tensor):
        if spec.dtype != torch.bool or tuple(spec.shape) != tuple(enc.input_ids.shape):
            raise InterventionError(
                f"a position mask must be a bool tensor of shape {tuple(enc.input_ids.shape)}, "
                f"got {spec.dtype} {tuple(spec.shape)}"
            )
        return spec.to(device)
    prompt = prompt_mask(enc)
    if isinstance(spec, str):
        if spec == "all":
            return enc.attention_mask.bool()
        if spec == "prompt":
            return prompt
        if spec == "last":
            mask = torch.zeros_like(prompt)
            mask[torch.arange(len(enc), device=device), enc.last_index] = True
            return mask
        if spec in SLOT_KINDS:
            return enc.mask(spec) & prompt
        if spec == "text":
            return prompt & ~enc.media_mask
        if spec == "question":
            return _question(enc)
        if spec == "answer":
            if answer_mask is None:
                return torch.zeros_like(prompt)
            return answer_mask.to(device)
        found = slot(spec)
        if found is not None:
            return slot_mask(enc, *found) & prompt
        bad_position(spec)
    return _offsets(enc, [spec] if isinstance(spec, int) else list(spec), prompt)


def question_mask(*args: Any) -> Bool[Tensor, "batch seq"]:
    """``select(enc, "question")``: True at the prompt positions that hold each row's question
    text. Called as ``question_mask(enc)`` (or ``question_mask(vlm, enc)``, the older form).

    Raises:
        PositionError: a row's question cannot be located (named with the reason and the fix).
    """
    if not 1 <= len(args) <= 2 or not isinstance(args[-1], Encoding):
        raise TypeError("question_mask takes an Encoding: question_mask(enc)")
    return select(args[-1], "question")


def image_slot_mask(enc: Encoding, k: int) -> Bool[Tensor, "batch seq"]:
    """True at the image-token positions of each row's ``k``-th image (0-based, in prompt order);
    see :func:`slot_mask`."""
    return slot_mask(enc, "image", k)


__all__ = [
    "POSITION_NAMES",
    "SLOT_KINDS",
    "PositionSpec",
    "check_position",
    "image_slot_mask",
    "prompt_mask",
    "question_mask",
    "select",
    "slot",
    "slot_mask",
]
