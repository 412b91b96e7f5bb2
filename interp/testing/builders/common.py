"""Sizes and steps shared by every tiny random-VLM builder.

Each builder passes :func:`text_kwargs` to its decoder config (adding what its architecture needs
on top: ``head_dim``, ``rope_parameters``, ``cross_attention_layers``, ``tie_word_embeddings``),
:func:`vision_kwargs` to a ViT-style vision tower's, and ends with :func:`finish`.
"""

from __future__ import annotations

from typing import Any, TypeVar

from transformers import PreTrainedModel, PreTrainedTokenizerBase

# the processor pieces without torchvision, shared with demo-omni's processor (defined there)
from ...demo.omni.processors import NoVideoProcessor, flat_videos, processor_without_video

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


__all__ = [
    "HEAD_DIM",
    "INIT_STD",
    "TEXT_HIDDEN",
    "TEXT_LAYERS",
    "VISION_HIDDEN",
    "NoVideoProcessor",
    "flat_videos",
    "finish",
    "processor_without_video",
    "text_kwargs",
    "vision_kwargs",
]
