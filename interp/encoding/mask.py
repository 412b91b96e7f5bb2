"""Stage 6, mask: the placeholder positions of each modality in the processed batch, checked
against what each row carries (a row with an image has image tokens, a row without has none ...).

A family whose videos expand into image tokens (``Adapter.video_in_image_tokens``) tells a video's
positions from an image's by the character span each placeholder expanded to (the locate stage's
spans read against the tokenizer's offsets).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from jaxtyping import Bool, Int
from torch import Tensor

from ..errors import ImageTokenMismatchError, ModalityError
from .codec import Codec
from .locate import RowSpans, span_tokens
from .process import Processed
from .resolve import Row


@dataclass
class Masks:
    """The placeholder positions of one processed batch (CPU; None: the family takes no such
    input, so there are no such positions)."""

    image: Bool[Tensor, "batch seq"]
    audio: Bool[Tensor, "batch seq"] | None = None
    video: Bool[Tensor, "batch seq"] | None = None
    # video positions written as image tokens (``Adapter.video_in_image_tokens``), else None
    shared_video: Bool[Tensor, "batch seq"] | None = None


def expansion_mask(
    offsets: Int[Tensor, "batch seq 2"],
    spans: Sequence[RowSpans],
    tokens: Bool[Tensor, "batch seq"],
    kind: str,
) -> Bool[Tensor, "batch seq"]:
    """The ``tokens`` positions inside the text each ``kind`` placeholder expanded to (the
    processor's replacement offsets, read against the tokenizer's character offsets): how a
    family whose videos expand into image tokens (``Adapter.video_in_image_tokens``) tells a
    video's positions from an image's."""
    mask = torch.zeros_like(tokens)
    for row, found in enumerate(spans):
        if found.of(kind):
            mask[row] = span_tokens(offsets[row], found.of(kind), ~tokens[row].cpu())
    return mask


def _expanded_positions(
    codec: Codec, processed: Processed, spans: list[RowSpans], tokens: Tensor, kind: str
) -> Tensor:
    """``tokens`` positions inside each ``kind`` input's expansion (for ``video_in_image_tokens``).

    Raises:
        ModalityError: the processor or tokenizer reports no offsets to read them against.
    """
    if processed.offsets is None or processed.replacements is None:
        raise ModalityError(
            f"{codec.adapter.name} writes a {kind} as image tokens; telling them apart needs the "
            "processor's replacement offsets and the tokenizer's character offsets, which this "
            "processor or tokenizer does not give. Load the processor with its fast tokenizer "
            f"(use_fast=True), or drop the {kind} (no_{kind})."
        )
    return expansion_mask(processed.offsets, spans, tokens, kind)


def mask(codec: Codec, rows: Sequence[Row], processed: Processed, spans: list[RowSpans]) -> Masks:
    """The batch's :class:`Masks`.

    Raises:
        ImageTokenMismatchError: a row with an image has no image token, or one without an image
            has some (e.g. a literal placeholder inside the question text).
        ModalityError: likewise for audio and video.
    """
    ids = processed.inputs["input_ids"]
    seen = [row.seen for row in rows]
    image_mask = ids == codec.image_token_id
    shared_video = None
    if codec.adapter.video_in_image_tokens and any(p.videos for p in seen):
        shared_video = _expanded_positions(codec, processed, spans, image_mask, "video")
        image_mask = image_mask & ~shared_video
    counts = image_mask.sum(dim=1)
    for row, (p, count) in enumerate(zip(seen, counts.tolist())):
        flag = p.has_image
        if flag and count == 0 or not flag and count > 0:
            raise ImageTokenMismatchError(
                f"sample {rows[row].sample.id!r}: {count} image-token positions for a row "
                f"{'with' if flag else 'without'} an image. A question text must not contain the "
                "model's image placeholder; pass the image through Sample.image instead."
            )
    found = Masks(image_mask, shared_video=shared_video)
    for kind in ("audio", "video"):
        if kind not in codec.adapter.modalities:
            continue
        if kind == "video" and codec.adapter.video_in_image_tokens:
            kind_mask = torch.zeros_like(image_mask) if shared_video is None else shared_video
        else:
            kind_mask = ids == codec.token_ids[kind]
        setattr(found, kind, kind_mask)
        counts_k = kind_mask.sum(dim=1).tolist()
        for row, p in enumerate(seen):
            carries = bool(p.audios if kind == "audio" else p.videos)
            if carries != (counts_k[row] > 0):
                raise ModalityError(
                    f"sample {rows[row].sample.id!r}: {counts_k[row]} {kind}-token positions for "
                    f"a row {'with' if carries else 'without'} {kind}. A question text must not "
                    f"contain the model's {kind} placeholder; pass the {kind} through "
                    f"Sample.{kind} instead."
                )
    return found


__all__ = ["Masks", "expansion_mask", "mask"]
