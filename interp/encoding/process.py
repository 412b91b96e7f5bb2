"""Stage 4, process: one call of the model's processor on the rendered prompts with each row's
images, audio and videos (as the resolve stage left them): the keywords for each modality, BOS
decided once (:func:`special_tokens_kwargs`), token and placeholder-replacement offsets read
against the text the tokenizer saw, and a blind row encoded through a placeholder image where the
stock processor needs one (the image then removed)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from ..conditions.image import nominal_size, null_image
from ..errors import ImageTokenMismatchError, ModalityError, PromptError
from ..media import audio_rate
from .codec import Codec
from .render import Rendered


def _per_token(inputs: dict[str, Any]) -> dict[str, Tensor]:
    """The fields laid out like ``input_ids`` (``[batch, seq, ...]``)."""
    batch, seq = inputs["input_ids"].shape
    return {
        k: v
        for k, v in inputs.items()
        if isinstance(v, Tensor) and v.dim() >= 2 and tuple(v.shape[:2]) == (batch, seq)
    }


def _repack(inputs: dict[str, Any], keep: Tensor, pad_id: int) -> dict[str, Any]:
    """Keep the positions where ``keep`` is True in every per-token field, re-padded on the left."""
    fields = _per_token(inputs)
    batch = keep.shape[0]
    lengths = keep.sum(1).tolist()
    width = max(lengths)
    out = dict(inputs)
    for key, value in fields.items():
        fill = pad_id if key == "input_ids" else 0
        new = torch.full((batch, width, *value.shape[2:]), fill, dtype=value.dtype)
        for row in range(batch):
            n = lengths[row]
            new[row, width - n :] = value[row][keep[row]]
        out[key] = new
    return out


class _TextRecorder:
    """Stands in for ``processor.tokenizer`` during one processor call and keeps the exact strings
    the processor tokenizes for the batch (its prompts with the image placeholders expanded), so
    the character offsets the tokenizer returns can be read against them. Everything else is the
    tokenizer's own."""

    def __init__(self, tokenizer: Any, n_rows: int) -> None:
        self._tokenizer = tokenizer
        self._n_rows = n_rows
        self.texts: list[str] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tokenizer, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        text = kwargs.get("text", args[0] if args else None)
        if (
            isinstance(text, list)
            and len(text) == self._n_rows
            and all(isinstance(t, str) for t in text)
        ):
            self.texts = list(text)
        return self._tokenizer(*args, **kwargs)


@dataclass
class Processed:
    """The processor's model inputs, and what positions are read against."""

    inputs: dict[str, Any]
    texts: list[str | None]
    offsets: Tensor | None
    replacements: list[list[dict[str, Any]]] | None


def _run_processor(
    processor: Any, n_rows: int, kwargs: dict[str, Any], *, replacements: bool = True
) -> Processed:
    """Call the processor asking for token offsets and (with ``replacements``) placeholder-
    replacement offsets (read against the text its tokenizer saw); processors that do not take
    those options are called without them."""
    has_tokenizer = getattr(processor, "tokenizer", None) is not None
    recorder = _TextRecorder(processor.tokenizer, n_rows) if has_tokenizer else None
    extra = {"return_offsets_mapping": True}
    if replacements:
        extra["return_text_replacement_offsets"] = True
    if recorder is not None:
        processor.tokenizer = recorder
    try:
        try:
            raw = dict(processor(**kwargs, **extra))
        except (TypeError, NotImplementedError, UnboundLocalError):
            # a processor or slow tokenizer without these options: no offsets (FuyuProcessor
            # asked for replacement offsets of a batch without images reads an unset local)
            raw = dict(processor(**kwargs))
    finally:
        if recorder is not None:
            processor.tokenizer = recorder._tokenizer
    offsets = raw.pop("offset_mapping", None)
    spans = raw.pop("text_replacement_offsets", None)
    if not isinstance(spans, list) or len(spans) != n_rows:
        # absent, or a batch without images turned into an empty tensor by the processor
        spans = None
    texts: list[str | None] = list(recorder.texts) if recorder and recorder.texts else []
    if len(texts) != n_rows:
        texts = [None] * n_rows
    if isinstance(offsets, Tensor):
        offsets = offsets.to(torch.long)
    else:
        offsets = None
    return Processed(raw, texts, offsets, spans)


def special_tokens_kwargs(tokenizer: Any, prompts: Sequence[str]) -> dict[str, bool]:
    """Whether the tokenizer adds its special tokens to rendered prompts, decided as
    ``ProcessorMixin.apply_chat_template(..., tokenize=True)`` decides it: a prompt the chat
    template already began with the tokenizer's BOS is tokenized with ``add_special_tokens=False``
    (else the tokenizer would add a second BOS, as Llama 3.2 Vision's and Idefics3's would);
    otherwise the tokenizer's own default applies (``{}``). The one place this is decided, for
    every family.

    Raises:
        PromptError: some prompts of one batch begin with BOS and others do not (one template
            renders them all alike; a custom prompt builder must too).
    """
    bos = getattr(tokenizer, "bos_token", None)
    if not bos or not prompts:
        return {}
    starts = [p.startswith(bos) for p in prompts]
    if all(starts):
        return {"add_special_tokens": False}
    if any(starts):
        raise PromptError(
            f"{sum(starts)} of {len(prompts)} prompts of one batch begin with the BOS token "
            f"{bos!r} and the others do not; a prompt builder must render every row alike"
        )
    return {}


def _processor_kwargs(
    codec: Codec,
    prompts: list[str],
    images: list[list[Any]],
    audios: Sequence[Sequence[Any]],
    videos: Sequence[Sequence[Any]],
) -> dict[str, Any]:
    """The processor call's keywords for rows of prompts with their images, audio and videos."""
    kwargs: dict[str, Any] = {"text": prompts, "padding": True, "return_tensors": "pt"}
    kwargs.update(special_tokens_kwargs(codec.tokenizer, prompts))
    flat_audio = [a.waveform for row in audios for a in row]
    if flat_audio:
        kwargs[codec.adapter.audio_kwarg] = flat_audio
        kwargs["sampling_rate"] = audio_rate(codec.processor)
    flat_video = [v for row in videos for v in row]
    if flat_video:
        kwargs[codec.adapter.video_kwarg] = flat_video
    processed = codec.adapter.processor_images(images)
    if processed is not None:
        kwargs["images"] = processed
    return kwargs


def _replacements_by_row(
    codec: Codec,
    prompts: list[str],
    images: list[list[Any]],
    audios: Sequence[Sequence[Any]],
    videos: Sequence[Sequence[Any]],
) -> Processed:
    """The batch's processor output with each row's replacement offsets asked row by row:
    transformers tries to turn the batch's ragged offsets list into a tensor (and fails) when
    its first row has no placeholder to expand."""
    n = len(prompts)
    out = _run_processor(
        codec.processor,
        n,
        _processor_kwargs(codec, prompts, images, audios, videos),
        replacements=False,
    )
    spans = []
    for i in range(n):
        pick = [images[i]], [audios[i]] if audios else [], [videos[i]] if videos else []
        row = _run_processor(codec.processor, 1, _processor_kwargs(codec, [prompts[i]], *pick))
        spans.append(row.replacements[0] if row.replacements else [])
    out.replacements = spans
    return out


def _processor_call(
    codec: Codec,
    prompts: list[str],
    images: list[list[Any]],
    audios: Sequence[Sequence[Any]] = (),
    videos: Sequence[Sequence[Any]] = (),
) -> Processed:
    stripped = codec.adapter.blind_by_stripping and not any(images)
    if stripped:
        # The stock processor needs an image: encode a placeholder image's prompt and remove the
        # image afterwards, so the text layout is exactly the processor's.
        placeholder = null_image("black", nominal_size(codec.processor))
        images = [[placeholder] for _ in prompts]
    kwargs = _processor_kwargs(codec, prompts, images, audios, videos)
    try:
        try:
            out = _run_processor(codec.processor, len(prompts), kwargs)
        except ValueError as err:
            if "text_replacement_offsets" not in str(err):
                raise
            out = _replacements_by_row(codec, prompts, images, audios, videos)
    except ValueError as err:
        text = str(err).lower()
        if ("audio" in text or "video" in text) and "token" in text:
            raise ModalityError(
                f"the processor could not match audio/video inputs to their placeholder tokens "
                f"({err}). Check that no question contains a placeholder string and that each row "
                "has as many audio/video inputs as {audio}/{video} slots."
            ) from err
        if "image" in text and "token" in text:
            raise ImageTokenMismatchError(
                f"the processor could not match images to image tokens ({err}). Check that no "
                "question contains an image placeholder string and that each image-bearing row "
                "has as many images as image slots."
            ) from err
        raise
    raw = out.inputs
    raw.pop("labels", None)  # some processors add training labels; measurements never use them
    if stripped:
        keep = (raw["input_ids"] != codec.image_token_id) & raw["attention_mask"].bool()
        if out.offsets is not None:
            raw["offset_mapping"] = out.offsets
        raw = _repack(raw, keep, codec.tokenizer.pad_token_id)
        out.offsets = raw.pop("offset_mapping", None)
        out.replacements = None  # the placeholder image's expansion is gone
        for key in [k for k in raw if k not in _per_token(raw)]:
            del raw[key]  # pixel values and image sizes of the placeholder
    out.inputs = raw
    return out


def process(codec: Codec, rendered: Sequence[Rendered]) -> Processed:
    """The processor's output for the rendered rows: model inputs (CPU), the texts the tokenizer
    read, token offsets and placeholder-replacement offsets."""
    seen = [r.row.seen for r in rendered]
    return _processor_call(
        codec,
        [r.prompt for r in rendered],
        [p.images for p in seen],
        [p.audios for p in seen],
        [p.videos for p in seen],
    )


__all__ = ["Processed", "process", "special_tokens_kwargs"]
