"""Tiny random Qwen-VL family models: Qwen2-VL, Qwen2.5-VL and Qwen3-VL.

Every builder returns ``(model, processor)``: the real ``...ForConditionalGeneration`` class in fp32
and eval mode, deterministic from ``seed``, and the real processor class built offline around the
tiny tokenizer and a ``Qwen2VLImageProcessorPil``. The chat template renders ``{"type": "image"}``
as ``<|vision_start|><|image_pad|><|vision_end|>``; the processor expands ``<|image_pad|>`` into one
token per merged 2x2 patch group, so an image of ``h x w`` pixels (rounded to multiples of 16, at
most 64x64 pixels in area) gives ``(h/16)·(w/16)`` image tokens: 4 for 32x32, at most 16.
"""

from __future__ import annotations

from typing import Any, TypeVar

import torch
from transformers import (
    PreTrainedConfig,
    PreTrainedModel,
    PreTrainedTokenizerFast,
    ProcessorMixin,
    Qwen2_5_VLConfig,
    Qwen2_5_VLForConditionalGeneration,
    Qwen2_5_VLProcessor,
    Qwen2VLConfig,
    Qwen2VLForConditionalGeneration,
    Qwen2VLImageProcessorPil,
    Qwen2VLProcessor,
    Qwen3VLConfig,
    Qwen3VLForConditionalGeneration,
    Qwen3VLProcessor,
)

from ..tokenizer import tiny_tokenizer

IMAGE_TOKEN = "<|image_pad|>"
VIDEO_TOKEN = "<|video_pad|>"
VISION_START = "<|vision_start|>"
VISION_END = "<|vision_end|>"
# What the chat template writes for an image item; the processor expands the <|image_pad|> in it.
IMAGE_PLACEHOLDER = VISION_START + IMAGE_TOKEN + VISION_END

TEXT_HIDDEN = 64
TEXT_LAYERS = 3
HEAD_DIM = 16  # 64 / 4 heads
# M-RoPE splits head_dim/2 rotary frequencies into (temporal, height, width) sections.
MROPE_SECTION = [2, 3, 3]
VISION_HIDDEN = 32
PATCH_SIZE = 8
MERGE_SIZE = 2
# Bounds on the resized image area: at least one 16 px merge unit, at most 64x64 px (16 tokens).
MIN_PIXELS = (PATCH_SIZE * MERGE_SIZE) ** 2
MAX_PIXELS = 64 * 64
# Larger than HF's 0.02 so that an image changes the logits well above float noise.
INIT_STD = 0.1

P = TypeVar("P", bound=ProcessorMixin)


def processor_without_video(cls: type[P], **kwargs: Any) -> P:
    """Construct the processor class ``cls`` (exactly that class) with ``video_processor=None``.

    ``ProcessorMixin.__init__`` type-checks every sub-processor against classes that only exist
    when torchvision imports, so a ``None`` video processor is refused. The check is relaxed on
    this one instance, for the video processor only, while ``__init__`` runs; the result is an
    unmodified ``cls`` instance that handles text and images (passing videos fails).
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
    return processor


def qwen_vl_tokenizer() -> PreTrainedTokenizerFast:
    """The tiny tokenizer with the Qwen vision special tokens and the image placeholder template."""
    return tiny_tokenizer(
        extra_special_tokens={
            "image_token": IMAGE_TOKEN,
            "video_token": VIDEO_TOKEN,
            "vision_start_token": VISION_START,
            "vision_end_token": VISION_END,
        },
        image_placeholder=IMAGE_PLACEHOLDER,
    )


def qwen_vl_image_processor() -> Qwen2VLImageProcessorPil:
    """Patch 8, 2x2 merge, area between 16x16 and 64x64 px (shared by all three architectures)."""
    return Qwen2VLImageProcessorPil(
        patch_size=PATCH_SIZE,
        merge_size=MERGE_SIZE,
        temporal_patch_size=2,
        min_pixels=MIN_PIXELS,
        max_pixels=MAX_PIXELS,
    )


def _text_kwargs(tok: PreTrainedTokenizerFast) -> dict[str, Any]:
    """Decoder sizes shared by the family; the vocabulary covers every tokenizer id."""
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
        "rope_parameters": {
            "rope_type": "default",
            "rope_theta": 10000.0,
            "mrope_section": list(MROPE_SECTION),
        },
    }


def _vision_kwargs() -> dict[str, Any]:
    """Vision sizes shared by the family (each architecture adds its own fields)."""
    return {
        "depth": 2,
        "num_heads": 2,
        "in_channels": 3,
        "patch_size": PATCH_SIZE,
        "spatial_merge_size": MERGE_SIZE,
        "temporal_patch_size": 2,
        "initializer_range": INIT_STD,
    }


def _token_ids(tok: PreTrainedTokenizerFast) -> dict[str, int]:
    return {
        "image_token_id": tok.convert_tokens_to_ids(IMAGE_TOKEN),
        "video_token_id": tok.convert_tokens_to_ids(VIDEO_TOKEN),
        "vision_start_token_id": tok.convert_tokens_to_ids(VISION_START),
        "vision_end_token_id": tok.convert_tokens_to_ids(VISION_END),
    }


M = TypeVar("M", bound=PreTrainedModel)


def _build(
    model_cls: type[M],
    config: PreTrainedConfig,
    processor_cls: type[P],
    tok: PreTrainedTokenizerFast,
    seed: int,
    attn_implementation: str,
) -> tuple[M, P]:
    """Seeded fp32 construction; checkpoint-like ``architectures`` and generation ids."""
    config.architectures = [model_cls.__name__]
    torch.manual_seed(seed)
    model = model_cls._from_config(
        config, attn_implementation=attn_implementation, dtype=torch.float32
    )
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.bos_token_id = tok.bos_token_id
    processor = processor_without_video(
        processor_cls,
        image_processor=qwen_vl_image_processor(),
        tokenizer=tok,
        chat_template=tok.chat_template,
    )
    return model.float().eval(), processor


def build_qwen2_vl(
    seed: int = 0, attn_implementation: str = "eager"
) -> tuple[Qwen2VLForConditionalGeneration, Qwen2VLProcessor]:
    """Qwen2-VL: ViT (embed 32, 2 blocks) + patch merger into a 3-layer M-RoPE decoder."""
    tok = qwen_vl_tokenizer()
    config = Qwen2VLConfig(
        text_config=_text_kwargs(tok),
        vision_config={
            **_vision_kwargs(),
            "embed_dim": VISION_HIDDEN,
            "hidden_size": TEXT_HIDDEN,  # the merger's output width
            "mlp_ratio": 2,
        },
        **_token_ids(tok),
    )
    return _build(
        Qwen2VLForConditionalGeneration, config, Qwen2VLProcessor, tok, seed, attn_implementation
    )


def build_qwen2_5_vl(
    seed: int = 0, attn_implementation: str = "eager"
) -> tuple[Qwen2_5_VLForConditionalGeneration, Qwen2_5_VLProcessor]:
    """Qwen2.5-VL: windowed-attention ViT (block 0 windowed at 32 px, block 1 full) + merger."""
    tok = qwen_vl_tokenizer()
    config = Qwen2_5_VLConfig(
        text_config=_text_kwargs(tok),
        vision_config={
            **_vision_kwargs(),
            "hidden_size": VISION_HIDDEN,
            "intermediate_size": 2 * VISION_HIDDEN,
            "out_hidden_size": TEXT_HIDDEN,
            # a 32 px window holds 2x2 merge units, so 48 px images span several windows
            "window_size": 2 * PATCH_SIZE * MERGE_SIZE,
            "fullatt_block_indexes": [1],
        },
        **_token_ids(tok),
    )
    return _build(
        Qwen2_5_VLForConditionalGeneration,
        config,
        Qwen2_5_VLProcessor,
        tok,
        seed,
        attn_implementation,
    )


def build_qwen3_vl(
    seed: int = 0, attn_implementation: str = "eager"
) -> tuple[Qwen3VLForConditionalGeneration, Qwen3VLProcessor]:
    """Qwen3-VL: ViT + merger, interleaved M-RoPE, and one DeepStack feature from ViT block 0.

    DeepStack adds a second set of image features to the residual stream *after* decoder layer 0
    (outside the layer module), so the image enters both the input embeddings and layer 1's input.
    """
    tok = qwen_vl_tokenizer()
    text = _text_kwargs(tok)
    text["head_dim"] = HEAD_DIM
    text["rope_parameters"]["mrope_interleaved"] = True
    config = Qwen3VLConfig(
        text_config=text,
        vision_config={
            **_vision_kwargs(),
            "hidden_size": VISION_HIDDEN,
            "intermediate_size": 2 * VISION_HIDDEN,
            "out_hidden_size": TEXT_HIDDEN,
            # learned 4x4 position grid, bilinearly interpolated to the image's patch grid
            "num_position_embeddings": 16,
            "deepstack_visual_indexes": [0],
        },
        **_token_ids(tok),
    )
    return _build(
        Qwen3VLForConditionalGeneration, config, Qwen3VLProcessor, tok, seed, attn_implementation
    )


__all__ = [
    "IMAGE_PLACEHOLDER",
    "build_qwen2_5_vl",
    "build_qwen2_vl",
    "build_qwen3_vl",
    "processor_without_video",
    "qwen_vl_image_processor",
    "qwen_vl_tokenizer",
]
