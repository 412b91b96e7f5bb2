"""Turning samples under a condition into one collated model input.

Every batch is built by the model's own processor with its chat template and left padding; the last
prompt token's position and the image-token mask are derived from the encoding itself, so they are
correct whatever the padding side.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from jaxtyping import Bool, Int
from torch import Tensor

from .conditions import Condition, prepare
from .errors import (
    ImageTokenMismatchError,
    ModalityError,
    PositionError,
    UnknownTokenWarning,
)
from .positions import (
    RowSpans,
    expansion_mask,
    locate_row,
    question_pieces,
    slot_mask,
    span_tokens,
    special_token_pattern,
    uncovered,
)
from .processing import _Processed, _processor_call
from .resolve import carries, video_frames
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


def _to_model(inputs: dict[str, Any], vlm: VLM) -> dict[str, Tensor]:
    out: dict[str, Tensor] = {}
    for key, value in inputs.items():
        if isinstance(value, Tensor):
            value = value.to(vlm.device)
            if value.is_floating_point():
                value = value.to(vlm.dtype)
        out[key] = value
    return out


def _build(vlm: VLM, question: str, n_images: int, n_audio: int = 0, n_video: int = 0) -> str:
    """The adapter's prompt for one row; audio and video counts are passed only when nonzero, so
    image-only builders keep their three-argument form."""
    extra = {k: n for k, n in (("n_audio", n_audio), ("n_video", n_video)) if n}
    return vlm.adapter.build_prompt(vlm.processor, question, n_images, **extra)


def _builder(vlm: VLM, n_images: int, n_audio: int = 0, n_video: int = 0) -> Callable[[str], str]:
    """The adapter's prompt builder with the processor and the counts bound."""
    return lambda question: _build(vlm, question, n_images, n_audio, n_video)


def row_conditions(
    condition: str | Condition | Sequence[str | Condition], n: int
) -> list[Condition]:
    """One parsed condition per row: ``condition`` for every row, or a sequence of ``n``."""
    if isinstance(condition, (str, Condition)):
        return [Condition.parse(condition)] * n
    conds = [Condition.parse(c) for c in condition]
    if len(conds) != n:
        raise ValueError(f"{len(conds)} conditions for {n} rows; give one per row")
    return conds


def encode(
    vlm: VLM,
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
    """
    vlm.require_processor()
    conds = row_conditions(condition, len(samples))
    pool = all_samples if all_samples is not None else samples
    prepared: list[Any] = [None] * len(samples)
    for cond in dict.fromkeys(conds):  # each distinct condition once, rows kept in place
        rows = [i for i, c in enumerate(conds) if c == cond]
        done = prepare([samples[i] for i in rows], cond, vlm.processor, all_samples=pool)
        for i, p in zip(rows, done):
            prepared[i] = p
    for original, p in zip(samples, prepared):
        if p.images:
            vlm.adapter.require("image")
        if p.audios:
            vlm.adapter.require("audio")
        if p.videos:
            vlm.adapter.require("video")
        if (
            vlm.image_token_id
            in vlm.tokenizer(p.sample.question, add_special_tokens=False)["input_ids"]
        ):
            raise ImageTokenMismatchError(
                f"sample {original.id!r}: the question contains the model's image placeholder "
                f"token ({vlm.tokenizer.convert_ids_to_tokens(vlm.image_token_id)!r}); remove it "
                "from the text and pass the image through Sample.image (with '{image}' slots to "
                "place several images)"
            )
    prompts = [
        _build(vlm, p.sample.question, len(p.images), len(p.audios), len(p.videos))
        for p in prepared
    ]
    processed = _processor_call(
        vlm,
        prompts,
        [p.images for p in prepared],
        [p.audios for p in prepared],
        [p.videos for p in prepared],
    )
    inputs = processed.inputs
    special = special_token_pattern(vlm.tokenizer)
    spans = [
        locate_row(
            _builder(vlm, len(p.images), len(p.audios), len(p.videos)),
            p.sample.question,
            prompt,
            text,
            processed.replacements[row] if processed.replacements else None,
            special,
        )
        for row, (p, prompt, text) in enumerate(zip(prepared, prompts, processed.texts))
    ]
    has_image = [p.has_image for p in prepared]
    n_images = [len(p.images) for p in prepared]
    image_mask = inputs["input_ids"] == vlm.image_token_id
    shared_video = None
    if vlm.adapter.video_in_image_tokens and any(p.videos for p in prepared):
        shared_video = _expanded_positions(vlm, processed, spans, image_mask, "video")
        image_mask = image_mask & ~shared_video
    counts = image_mask.sum(dim=1)
    for row, (flag, count) in enumerate(zip(has_image, counts.tolist())):
        if flag and count == 0 or not flag and count > 0:
            sid = samples[row].id
            raise ImageTokenMismatchError(
                f"sample {sid!r}: {count} image-token positions for a row "
                f"{'with' if flag else 'without'} an image. A question text must not contain the "
                "model's image placeholder; pass the image through Sample.image instead."
            )
    media_masks: dict[str, Tensor | None] = {"audio": None, "video": None}
    for kind in media_masks:
        if kind not in vlm.adapter.modalities:
            continue
        if kind == "video" and vlm.adapter.video_in_image_tokens:
            mask = torch.zeros_like(image_mask) if shared_video is None else shared_video
        else:
            mask = inputs["input_ids"] == vlm.adapter.token_id(vlm.hf, kind)
        media_masks[kind] = mask
        counts_k = mask.sum(dim=1).tolist()
        for row, p in enumerate(prepared):
            carries = bool(p.audios if kind == "audio" else p.videos)
            if carries != (counts_k[row] > 0):
                raise ModalityError(
                    f"sample {samples[row].id!r}: {counts_k[row]} {kind}-token positions for a row "
                    f"{'with' if carries else 'without'} {kind}. A question text must not "
                    f"contain the model's {kind} placeholder; pass the {kind} through "
                    f"Sample.{kind} instead."
                )
    if any(p.pixels is not None for p in prepared):
        pixels = inputs["pixel_values"]
        where = vlm.adapter.pixel_rows(
            inputs, n_images, image_mask, vlm.processor, video_mask=shared_video
        )
        for p, index in zip(prepared, where):
            if p.pixels is not None and index is not None:
                pixels[index] = p.pixels(pixels[index], 0)
    inputs = _to_model(inputs, vlm)
    return Encoding(
        inputs=inputs,
        last_index=last_positions(inputs["attention_mask"]).to(vlm.device),
        image_mask=image_mask.to(vlm.device),
        has_image=has_image,
        prompts=prompts,
        questions=[p.sample.question for p in prepared],
        n_images=n_images,
        sample_ids=[str(s.id) for s in samples],
        texts=processed.texts,
        offsets=processed.offsets,
        spans=spans,
        audio_mask=None if media_masks["audio"] is None else media_masks["audio"].to(vlm.device),
        video_mask=None if media_masks["video"] is None else media_masks["video"].to(vlm.device),
        n_audio=[len(p.audios) for p in prepared],
        n_video=[len(p.videos) for p in prepared],
    )


def _expanded_positions(
    vlm: VLM, processed: _Processed, spans: list[RowSpans], tokens: Tensor, kind: str
) -> Tensor:
    """``tokens`` positions inside each ``kind`` input's expansion (for ``video_in_image_tokens``).

    Raises:
        ModalityError: the processor or tokenizer reports no offsets to read them against.
    """
    if processed.offsets is None or processed.replacements is None:
        raise ModalityError(
            f"{vlm.adapter.name} writes a {kind} as image tokens; telling them apart needs the "
            "processor's replacement offsets and the tokenizer's character offsets, which this "
            "processor or tokenizer does not give. Load the processor with its fast tokenizer "
            f"(use_fast=True), or drop the {kind} (no_{kind})."
        )
    return expansion_mask(processed.offsets, spans, tokens, kind)


def question_mask(vlm: VLM, enc: Encoding) -> Bool[Tensor, "batch seq"]:
    """True at the prompt positions that hold each row's question text.

    The positions are the tokens whose character offsets overlap the question's character spans
    in the text the tokenizer read (see :mod:`interp.positions`); image tokens are never part of
    it, nor audio or video tokens. Every non-space character of the question must lie under a
    selected token.
    A row with an empty question (``no_question``) has no question positions.

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
        if not spans.question and spans.problem is None:
            continue  # no question text in this row
        if spans.problem is None and enc.offsets is None:
            spans.problem = "the tokenizer gives no character offsets (a slow tokenizer)"
        if spans.problem is not None:
            problems.append(
                f"row {row} ({enc.sample_ids[row] if enc.sample_ids else row}): {spans.problem}"
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


def image_slot_mask(enc: Encoding, k: int) -> Bool[Tensor, "batch seq"]:
    """True at the image-token positions of each row's ``k``-th image (0-based, in prompt order);
    see :func:`interp.positions.slot_mask`."""
    return slot_mask(enc, "image", k)


def unknown_words(vlm: VLM, texts: Sequence[str]) -> tuple[int, list[str]]:
    """How many of ``texts`` hold words the tokenizer maps to its unknown token, and those words
    (first occurrence order)."""
    unk = vlm.tokenizer.unk_token_id
    if unk is None:
        return 0, []
    count, words = 0, []
    for text in texts:
        if not text:
            continue
        enc = vlm.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        bad = [text[a:b] for t, (a, b) in zip(enc["input_ids"], enc["offset_mapping"]) if t == unk]
        if bad:
            count += 1
            words.extend(w for w in bad if w not in words)
    return count, words


def warn_unknown_tokens(vlm: VLM, samples: Sequence[Sample]) -> None:
    """One :class:`~interp.errors.UnknownTokenWarning` if any question has words the tokenizer
    cannot represent (they reach the model as its unknown token)."""
    texts = [" ".join(question_pieces(s.question)) for s in samples]  # without input slots
    count, words = unknown_words(vlm, texts)
    if count:
        shown = ", ".join(repr(w) for w in words[:5])
        warnings.warn(
            f"{count} of {len(samples)} questions hold words the tokenizer maps to its unknown "
            f"token {vlm.tokenizer.unk_token!r} (e.g. {shown}); the model sees "
            f"{vlm.tokenizer.unk_token!r} in their place. Check the wording and spelling.",
            UnknownTokenWarning,
            stacklevel=3,
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

    Where the adapter forbids mixing image and no-image rows in one forward (Mllama, InstructBLIP,
    PaliGemma), the rows are grouped by whether they carry an image first; indices say where each
    row belongs.
    ``all_samples`` is the list ``swap:`` conditions draw images from (default: ``samples``).
    """
    cond = Condition.parse(condition)
    for idx in batch_indices(vlm, samples, cond, batch_size, all_samples=all_samples):
        yield (
            idx,
            encode(vlm, [samples[i] for i in idx], cond, all_samples=all_samples or samples),
        )


def batch_indices(
    vlm: VLM,
    samples: Sequence[Sample],
    condition: str | Condition,
    batch_size: int,
    *,
    all_samples: Sequence[Sample] | None = None,
) -> Iterator[list[int]]:
    """The row indices of each batch :func:`batches` forms (without encoding them).

    Rows are grouped first where the adapter cannot mix rows with and without a modality, and
    where it stacks a forward's videos (``stacked_videos``), by their videos' frame counts under
    the condition (which loads the videos); each group is then cut into batches in order."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    cond = Condition.parse(condition)
    order = list(range(len(samples)))
    groups = [order]
    for kind in ("image", "audio", "video"):
        if not vlm.adapter.mixed(kind):
            # rows with and without this modality run in separate forwards
            has = [carries(s, cond, kind) for s in samples]
            groups = [
                part
                for group in groups
                for part in ([i for i in group if has[i]], [i for i in group if not has[i]])
                if part
            ]
    if vlm.adapter.stacked_videos:
        pool = all_samples or samples
        frames = {i: video_frames(samples[i], cond, vlm.processor, all_samples=pool) for i in order}
        groups = [
            [i for i in group if frames[i] == key]
            for group in groups
            for key in dict.fromkeys(frames[i] for i in group)
        ]
    for group in groups:
        for start in range(0, len(group), batch_size):
            yield group[start : start + batch_size]


__all__ = [
    "Encoding",
    "append_targets",
    "batch_indices",
    "batches",
    "encode",
    "image_slot_mask",
    "last_positions",
    "question_mask",
    "row_conditions",
    "target_ids",
]

if TYPE_CHECKING:
    from .targets import append_targets, target_ids


def __getattr__(name: str) -> Any:
    """Teacher-forcing targets live in :mod:`interp.targets`; their names are re-exported here."""
    if name in ("append_targets", "target_ids"):
        from . import targets

        return getattr(targets, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
