"""Stage 7, assemble: the stages run in order on a group of resolved rows, collected into one
:class:`Encoding`; :func:`encode` and :func:`batches` are the entry points.

One row's walk: :func:`~interp.encoding.resolve.resolve` (Sample + Condition → Row) →
:func:`~interp.encoding.batch.batch_rows` (its batch) → :func:`~interp.encoding.render.render`
(prompt text + question spans) → :func:`~interp.encoding.process.process` (the processor call) →
:func:`~interp.encoding.locate.locate` (spans in the tokenized text) →
:func:`~interp.encoding.mask.mask` (placeholder positions) → :class:`Encoding`; named positions are
then read from it by :func:`~interp.encoding.select.select`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from jaxtyping import Bool, Int
from torch import Tensor

from ..conditions import Condition
from ..reprs import Summary
from ..samples import Sample
from .batch import batch_rows
from .codec import Codec, ModelLike, as_codec
from .locate import RowSpans, locate
from .mask import mask
from .process import process
from .render import render
from .resolve import Row, resolve

if TYPE_CHECKING:
    from ..adapters import Adapter


@dataclass(repr=False)
class Encoding(Summary):
    """One collated batch of model inputs.

    Attributes:
        inputs: the processor's output (``input_ids``, ``attention_mask``, ``pixel_values`` ...), on
            the model's device, floating tensors in the model's dtype.
        last_index: position of each row's last prompt token (the one that predicts the first answer
            token).
        image_mask: True at image-token positions.
        has_image: whether each row carries an image.
        prompts: the rendered text prompts.
        questions: each row's question text as the model sees it (after the condition).
        n_images: images per row.
        sample_ids: ``Sample.id`` of each row.
        texts: per row, the exact text the tokenizer read (the prompt with its image placeholders
            expanded by the processor); None where the processor did not expose it.
        offsets: ``[batch, seq, 2]`` character offsets of each token in ``texts`` (on the CPU;
            ``(0, 0)`` for padding and added tokens); None for a tokenizer without offsets.
        spans: per row, where the question and each image are in ``texts`` (:class:`RowSpans`).
        audio_mask / video_mask: True at the audio / video placeholder positions the processor
            expanded (None for an encoding built without them: no such positions).
        n_audio / n_video: audio inputs / videos per row.
    """

    inputs: dict[str, Tensor]
    last_index: Int[Tensor, " batch"]
    image_mask: Bool[Tensor, "batch seq"]
    has_image: list[bool]
    prompts: list[str]
    questions: list[str] = field(default_factory=list)
    n_images: list[int] = field(default_factory=list)
    sample_ids: list[str] = field(default_factory=list)
    texts: list[str | None] = field(default_factory=list)
    offsets: Int[Tensor, "batch seq 2"] | None = None
    spans: list[RowSpans] = field(default_factory=list)
    audio_mask: Bool[Tensor, "batch seq"] | None = None
    video_mask: Bool[Tensor, "batch seq"] | None = None
    n_audio: list[int] = field(default_factory=list)
    n_video: list[int] = field(default_factory=list)

    def _repr_head(self) -> dict[str, Any]:
        return {
            "rows": int(self.image_mask.shape[0]),
            "seq": int(self.image_mask.shape[1]),
            "image_tokens": int(self.image_mask.sum()),
        }

    def mask(self, kind: str) -> Bool[Tensor, "batch seq"]:
        """The placeholder positions of ``kind`` (``"image"``, ``"audio"``, ``"video"``)."""
        found = {"image": self.image_mask, "audio": self.audio_mask, "video": self.video_mask}
        value = found[kind]
        return torch.zeros_like(self.image_mask) if value is None else value

    @property
    def media_mask(self) -> Bool[Tensor, "batch seq"]:
        """True at every image, audio and video placeholder position."""
        return self.image_mask | self.mask("audio") | self.mask("video")

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


def _to_model(inputs: dict[str, Any], codec: Codec) -> dict[str, Tensor]:
    out: dict[str, Tensor] = {}
    for key, value in inputs.items():
        if isinstance(value, Tensor):
            value = value.to(codec.device)
            if value.is_floating_point():
                value = value.to(codec.dtype)
        out[key] = value
    return out


def assemble(codec: Codec, rows: Sequence[Row]) -> Encoding:
    """The rows through render → process → locate → mask, as one left-padded :class:`Encoding`
    (a pixel-stage condition part, such as ``distort``, edits the processed pixels here)."""
    rendered = render(codec, rows)
    processed = process(codec, rendered)
    spans = locate(codec, rendered, processed)
    masks = mask(codec, rows, processed, spans)
    seen = [row.seen for row in rows]
    inputs = processed.inputs
    n_images = [len(p.images) for p in seen]
    if any(p.pixels is not None for p in seen):
        # the layout is required first, then the key is found: not always ``pixel_values``
        # (Video-LLaVA's ``pixel_values_images``), and two image tensors are refused
        pixels = inputs[codec.adapter.pixel_key(inputs)]
        where = codec.adapter.pixel_rows(
            inputs, n_images, masks.image, codec.processor, video_mask=masks.shared_video
        )
        for p, index in zip(seen, where):
            if p.pixels is not None and index is not None:
                pixels[index] = p.pixels(pixels[index], 0)
    inputs = _to_model(inputs, codec)
    return Encoding(
        inputs=inputs,
        last_index=last_positions(inputs["attention_mask"]).to(codec.device),
        image_mask=masks.image.to(codec.device),
        has_image=[p.has_image for p in seen],
        prompts=[r.prompt for r in rendered],
        questions=[p.sample.question for p in seen],
        n_images=n_images,
        sample_ids=[str(row.sample.id) for row in rows],
        texts=processed.texts,
        offsets=processed.offsets,
        spans=spans,
        audio_mask=None if masks.audio is None else masks.audio.to(codec.device),
        video_mask=None if masks.video is None else masks.video.to(codec.device),
        n_audio=[len(p.audios) for p in seen],
        n_video=[len(p.videos) for p in seen],
    )


def check_pixel_conditions(
    adapter: Adapter, conditions: Sequence[str | Condition], what: str = "pixel-space conditions"
) -> None:
    """Refuse, before any media is loaded or any forward runs, a condition that edits pixels
    (``distort`` ...) on a family whose pixel layout is not verified: each measurement calls this
    on its conditions, and the edits that encode a source condition at ``check``, so the refusal
    never comes after part of a run has computed.

    Raises:
        LayoutNotMappedError: such a condition and an unverified layout (the message names the
            condition and the family).
    """
    pixel = [str(c) for c in map(Condition.parse, conditions) if c.edits_pixels]
    if pixel:
        adapter.require_layout(f"{what} ({', '.join(dict.fromkeys(pixel))})")


def encode(
    vlm: ModelLike | Codec,
    samples: Sequence[Sample],
    condition: str | Condition | Sequence[str | Condition] = "full",
    *,
    all_samples: Sequence[Sample] | None = None,
) -> Encoding:
    """Encode ``samples`` under ``condition`` as one left-padded batch.

    ``condition`` may also be a sequence with one condition per row: rows under different
    conditions (an expert input and its contrastive-decoding amateur) share one batch.

    Raises:
        ImageTokenMismatchError: a row with an image has no image token, or a row without one has
            image tokens (e.g. a literal placeholder such as ``<image>`` inside the question text).
        ProcessorMissingError: the model was loaded without a processor (a configuration alone).
        LayoutNotMappedError: a condition edits pixels (``distort``) and the family's pixel
            layout is not verified, or its processor's outputs hold no single image pixel tensor
            (before the media are loaded, or once the processor has run: never after a forward).
    """
    codec = as_codec(vlm)
    conds = [condition] if isinstance(condition, (str, Condition)) else list(condition)
    check_pixel_conditions(codec.adapter, conds)
    return assemble(codec, resolve(samples, condition, codec.processor, all_samples=all_samples))


def batches(
    vlm: ModelLike | Codec,
    samples: Sequence[Sample],
    condition: str | Condition,
    batch_size: int,
    *,
    all_samples: Sequence[Sample] | None = None,
) -> Iterator[tuple[list[int], Encoding]]:
    """Yield ``(indices, encoding)`` over ``samples`` in batches of at most ``batch_size``.

    Where the adapter forbids mixing image and no-image rows in one forward (Mllama, InstructBLIP,
    PaliGemma), the rows are grouped by whether they carry an image first; indices say where each
    row belongs (see :mod:`interp.encoding.batch`). Each row is resolved once: the videos the
    batching reads frame counts from are the ones encoded.
    ``all_samples`` is the list ``swap:`` conditions draw images from (default: ``samples``).
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    cond = Condition.parse(condition)
    codec = as_codec(vlm)
    check_pixel_conditions(codec.adapter, [cond])
    rows = resolve(samples, cond, codec.processor, all_samples=all_samples or samples)
    for idx in batch_rows(codec.adapter, rows, batch_size):
        yield idx, assemble(codec, [rows[i] for i in idx])
        for i in idx:
            rows[i].release()


__all__ = [
    "Encoding",
    "assemble",
    "batches",
    "check_pixel_conditions",
    "encode",
    "last_positions",
]
