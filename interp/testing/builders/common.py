"""Sizes and steps shared by every tiny random-VLM builder.

Each builder passes :func:`text_kwargs` to its decoder config (adding what its architecture needs
on top: ``head_dim``, ``rope_parameters``, ``cross_attention_layers``, ``tie_word_embeddings``),
:func:`vision_kwargs` to a ViT-style vision tower's, and ends with :func:`finish`.
"""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar

import numpy as np
from transformers import PreTrainedModel, PreTrainedTokenizerBase, ProcessorMixin

TEXT_HIDDEN = 64
TEXT_LAYERS = 3
# Per attention head for the 4 heads of :func:`text_kwargs`; for configs whose default differs.
HEAD_DIM = TEXT_HIDDEN // 4
VISION_HIDDEN = 32
# Larger than HF's 0.02 so that an image changes the logits well above float noise.
INIT_STD = 0.1

M = TypeVar("M", bound=PreTrainedModel)


def text_kwargs(tok: PreTrainedTokenizerBase, **overrides: Any) -> dict[str, Any]:
    """Decoder config keywords shared by all builders; ``overrides`` add or replace keys.

    The vocabulary covers every tokenizer id, and the pad/bos/eos ids are the tokenizer's.
    """
    return {
        "vocab_size": len(tok),
        "hidden_size": TEXT_HIDDEN,
        "intermediate_size": 2 * TEXT_HIDDEN,
        "num_hidden_layers": TEXT_LAYERS,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 512,
        "initializer_range": INIT_STD,
        "pad_token_id": tok.pad_token_id,
        "bos_token_id": tok.bos_token_id,
        "eos_token_id": tok.eos_token_id,
        **overrides,
    }


def vision_kwargs(image_size: int, patch_size: int, **overrides: Any) -> dict[str, Any]:
    """Vision-tower config keywords shared by the ViT-style builders (2 layers of width
    :data:`VISION_HIDDEN`, 2 heads); ``overrides`` add or replace keys."""
    return {
        "hidden_size": VISION_HIDDEN,
        "intermediate_size": 2 * VISION_HIDDEN,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "image_size": image_size,
        "patch_size": patch_size,
        "initializer_range": INIT_STD,
        **overrides,
    }


def finish(model: M, tok: PreTrainedTokenizerBase, attn_implementation: str) -> M:
    """fp32, eval mode, checkpoint-like ``architectures`` and generation ids from the tokenizer."""
    model.config.architectures = [type(model).__name__]
    model.set_attn_implementation(attn_implementation)
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.bos_token_id = tok.bos_token_id
    model.generation_config.eos_token_id = tok.eos_token_id
    return model.float().eval()


P = TypeVar("P", bound=ProcessorMixin)


class NoVideoProcessor:
    """Stands in for a video processor where torchvision (which every video processor needs) is
    absent: it carries the sampling defaults that some processors read while rendering a chat
    template (SmolVLM reads ``num_frames`` and ``fps``), and refuses videos."""

    num_frames = None
    fps = None
    _auto_class = None
    # added to the processor's own list by some processors (Qwen-Omni)
    model_input_names: ClassVar[list[str]] = []

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("this processor was built without a video processor (no torchvision)")

    def save_pretrained(self, *args: Any, **kwargs: Any) -> None:
        """Nothing to save."""


def processor_without_video(cls: type[P], *, stand_in: bool = False, **kwargs: Any) -> P:
    """Construct the processor class ``cls`` (exactly that class) without a video processor.

    ``ProcessorMixin.__init__`` type-checks every sub-processor against classes that only exist
    when torchvision imports, so a ``None`` video processor is refused. The check is relaxed on
    this one instance, for the video processor only, while ``__init__`` runs; the result is an
    unmodified ``cls`` instance that handles text and images (passing videos fails). With
    ``stand_in``, a :class:`NoVideoProcessor` takes the video processor's place, for processors
    that read video defaults while rendering a chat template.
    """
    processor = cls.__new__(cls)
    strict_check = processor.check_argument_for_proper_class

    def check(argument_name: str, argument: object) -> object:
        if argument_name == "video_processor" and argument is None:
            return None
        return strict_check(argument_name, argument)

    processor.check_argument_for_proper_class = check  # type: ignore[method-assign]
    try:
        cls.__init__(processor, video_processor=None, **kwargs)
    finally:
        del processor.check_argument_for_proper_class
    if stand_in:
        processor.video_processor = NoVideoProcessor()
    return processor


__all__ = [
    "HEAD_DIM",
    "INIT_STD",
    "TEXT_HIDDEN",
    "TEXT_LAYERS",
    "VISION_HIDDEN",
    "NoVideoProcessor",
    "finish",
    "processor_without_video",
    "text_kwargs",
    "vision_kwargs",
]


def flat_videos(videos: Any) -> Any:
    """Videos nested per row (``[[clip], [clip, clip]]``, as ``apply_chat_template`` passes them,
    which the stock video processors accept) as one flat list of clips."""
    if isinstance(videos, (list, tuple)) and all(
        isinstance(row, (list, tuple))
        and all(isinstance(c, np.ndarray) and c.ndim == 4 for c in row)
        for row in videos
    ):
        return [clip for row in videos for clip in row]
    return videos
