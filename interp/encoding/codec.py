"""What the encoding stages know of a model: its processor, tokenizer, adapter, placeholder token
ids, device and dtype (:class:`Codec`) — never the model itself, so nothing in
:mod:`interp.encoding` imports :mod:`interp.model`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import torch


@runtime_checkable
class ModelLike(Protocol):
    """The attributes of a loaded model (:class:`interp.VLM`) the encoding reads."""

    processor: Any
    adapter: Any
    hf: Any

    @property
    def tokenizer(self) -> Any: ...

    @property
    def image_token_id(self) -> int: ...

    @property
    def device(self) -> torch.device: ...

    @property
    def dtype(self) -> torch.dtype: ...

    def require_processor(self) -> None: ...


@dataclass(frozen=True)
class Codec:
    """A model's input side, as the encoding stages use it.

    Attributes:
        processor / tokenizer: the Hugging Face processor and its tokenizer.
        adapter: the family's :class:`~interp.Adapter` (prompt builder, batching limits, pixel
            layout).
        image_token_id: the image placeholder token.
        token_ids: the placeholder token of each other modality the family takes (a video that
            expands into image tokens has none).
        device / dtype: where, and in which floating type, the encoded inputs go.
    """

    processor: Any
    tokenizer: Any
    adapter: Any
    image_token_id: int
    token_ids: dict[str, int] = field(default_factory=dict)
    device: torch.device = torch.device("cpu")
    dtype: torch.dtype = torch.float32


def codec_of(model: ModelLike) -> Codec:
    """The :class:`Codec` of a loaded model.

    Raises:
        ProcessorMissingError: the model was loaded without a processor.
    """
    model.require_processor()
    adapter = model.adapter
    token_ids = {
        kind: adapter.token_id(model.hf, kind)
        for kind in ("audio", "video")
        if kind in adapter.modalities and not (kind == "video" and adapter.video_in_image_tokens)
    }
    return Codec(
        processor=model.processor,
        tokenizer=model.tokenizer,
        adapter=adapter,
        image_token_id=model.image_token_id,
        token_ids=token_ids,
        device=model.device,
        dtype=model.dtype,
    )


def as_codec(model: ModelLike | Codec) -> Codec:
    """``model``'s codec, or ``model`` itself when it is one."""
    return model if isinstance(model, Codec) else codec_of(model)


__all__ = ["Codec", "ModelLike", "as_codec", "codec_of"]
