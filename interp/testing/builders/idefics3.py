"""Tiny random Idefics3 and SmolVLM models with their real processors, built offline.

Both families share one layout: a SigLIP-like vision tower, a pixel-shuffle ``connector`` that
turns ``(image_size / patch_size)**2`` patches into ``image_seq_len = patches / scale_factor**2``
feature vectors, and a Llama text model at ``model.model.text_model``. The processor expands each
``<image>`` in the prompt to ``<fake_token_around_image><global-img>`` + ``image_seq_len`` x
``<image>`` + ``<fake_token_around_image>`` (image splitting is off, so one global view per image).
"""

from __future__ import annotations

from typing import Any, TypeVar

import torch
from transformers import (
    Idefics3Config,
    Idefics3ForConditionalGeneration,
    Idefics3ImageProcessorPil,
    Idefics3Processor,
    LlamaConfig,
    PreTrainedTokenizerBase,
    PreTrainedTokenizerFast,
    SmolVLMConfig,
    SmolVLMForConditionalGeneration,
    SmolVLMImageProcessorPil,
    SmolVLMProcessor,
)
from transformers.models.idefics3.configuration_idefics3 import Idefics3VisionConfig
from transformers.models.smolvlm.configuration_smolvlm import SmolVLMVisionConfig

from ..tokenizer import tiny_tokenizer
from .common import finish, processor_without_video, text_kwargs, vision_kwargs

IMAGE_SIZE = 48  # processor output side in pixels (every image is resized to this square)
PATCH_SIZE = 8
SCALE_FACTOR = 2
# 6 x 6 patches, pixel-shuffled by 2 -> 9 image tokens per image
IMAGE_SEQ_LEN = (IMAGE_SIZE // PATCH_SIZE) ** 2 // SCALE_FACTOR**2

IMAGE_TOKEN = "<image>"
_NAMED_TOKENS = {
    "image_token": IMAGE_TOKEN,
    "fake_image_token": "<fake_token_around_image>",
    "global_image_token": "<global-img>",
    "end_of_utterance_token": "<end_of_utterance>",
}
# The processors look these up even with splitting off; as single tokens they keep prompts short.
_ROW_COL_TOKENS = [f"<row_{i}_col_{j}>" for i in range(1, 7) for j in range(1, 7)]


def _tokenizer() -> PreTrainedTokenizerFast:
    return tiny_tokenizer(
        extra_special_tokens=dict(_NAMED_TOKENS),
        additional_special_tokens=_ROW_COL_TOKENS,
        image_placeholder=IMAGE_TOKEN,
    )


def _image_processor_kwargs() -> dict[str, Any]:
    # No splitting: one IMAGE_SIZE x IMAGE_SIZE global view per image, whatever its input size.
    return {
        "do_image_splitting": False,
        "size": {"longest_edge": IMAGE_SIZE},
        "max_image_size": {"longest_edge": IMAGE_SIZE},
    }


M = TypeVar("M", Idefics3ForConditionalGeneration, SmolVLMForConditionalGeneration)


def _model(
    config_class: type[Idefics3Config] | type[SmolVLMConfig],
    vision_config_class: type[Idefics3VisionConfig] | type[SmolVLMVisionConfig],
    model_class: type[M],
    tok: PreTrainedTokenizerBase,
    seed: int,
    attn_implementation: str,
) -> M:
    """The tiny model of either family (the two configs take the same keywords)."""
    config = config_class(
        text_config=LlamaConfig(**text_kwargs(tok, tie_word_embeddings=False)),
        vision_config=vision_config_class(
            **vision_kwargs(IMAGE_SIZE, PATCH_SIZE, num_attention_heads=4)
        ),
        image_token_id=tok.convert_tokens_to_ids(IMAGE_TOKEN),
        scale_factor=SCALE_FACTOR,
        pad_token_id=tok.pad_token_id,
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    return finish(model_class(config), tok, attn_implementation)


def build_idefics3(
    seed: int = 0,
    attn_implementation: str = "eager",
    *,
    tokenizer: PreTrainedTokenizerBase | None = None,
    chat_template: str | None = None,
) -> tuple[Idefics3ForConditionalGeneration, Idefics3Processor]:
    """A tiny random ``Idefics3ForConditionalGeneration`` and its ``Idefics3Processor``.

    Invariants: text hidden 64, 3 decoder layers, 9 ``<image>`` tokens per image, the config's
    ``image_token_id`` equals the tokenizer id of ``<image>``; same seed, same weights.
    """
    tok = tokenizer or _tokenizer()
    processor = Idefics3Processor(
        Idefics3ImageProcessorPil(**_image_processor_kwargs()),
        tok,
        image_seq_len=IMAGE_SEQ_LEN,
        chat_template=chat_template or tok.chat_template,
    )
    model = _model(
        Idefics3Config,
        Idefics3VisionConfig,
        Idefics3ForConditionalGeneration,
        tok,
        seed,
        attn_implementation,
    )
    return model, processor


def build_smolvlm(
    seed: int = 0,
    attn_implementation: str = "eager",
    *,
    tokenizer: PreTrainedTokenizerBase | None = None,
    chat_template: str | None = None,
) -> tuple[SmolVLMForConditionalGeneration, SmolVLMProcessor]:
    """A tiny random ``SmolVLMForConditionalGeneration`` and the stock ``SmolVLMProcessor``
    (built without a video processor, which needs torchvision).

    Invariants as :func:`build_idefics3`.
    """
    tok = tokenizer or _tokenizer()
    processor = processor_without_video(
        SmolVLMProcessor,
        stand_in=True,  # its chat templating reads the video sampling defaults
        image_processor=SmolVLMImageProcessorPil(**_image_processor_kwargs()),
        tokenizer=tok,
        image_seq_len=IMAGE_SEQ_LEN,
        chat_template=chat_template or tok.chat_template,
    )
    model = _model(
        SmolVLMConfig,
        SmolVLMVisionConfig,
        SmolVLMForConditionalGeneration,
        tok,
        seed,
        attn_implementation,
    )
    return model, processor


__all__ = [
    "IMAGE_SEQ_LEN",
    "IMAGE_TOKEN",
    "build_idefics3",
    "build_smolvlm",
]
