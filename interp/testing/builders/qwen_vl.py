"""Tiny random Qwen-VL family models: Qwen2-VL, Qwen2.5-VL and Qwen3-VL.

Every builder returns ``(model, processor)``: the real ``...ForConditionalGeneration`` class in fp32
and eval mode, deterministic from ``seed``, and the real processor class built offline around the
tiny tokenizer and a ``Qwen2VLImageProcessorPil``. The chat template renders ``{"type": "image"}``
as ``<|vision_start|><|image_pad|><|vision_end|>``; the processor expands ``<|image_pad|>`` into one
token per merged 2x2 patch group, so an image of ``h x w`` pixels (rounded to multiples of 16, at
most 64x64 pixels in area) gives ``(h/16)·(w/16)`` image tokens: 4 for 32x32, at most 16.

Qwen2-VL and Qwen2.5-VL also take videos (``{"type": "video"}`` renders as
``<|vision_start|><|video_pad|><|vision_end|>``) through :class:`FramesVideoProcessor`: the stock
``Qwen2VLVideoProcessor`` imports torchvision at module level, and the torchvision wheel on PyPI
for this torch (0.28.0) is a CUDA build whose ops library links ``libtorch_cuda.so``, which the CPU
torch wheel lacks, so ``import torchvision`` fails. A video of ``T`` frames of ``h x w`` gives
``ceil(T/2)·(h/16)·(w/16)`` video tokens. Qwen3-VL takes videos through
:class:`~interp.testing.builders.frames_video.Qwen3VLFramesVideoProcessor` (the stock class's
sampling, resizing and timestamps without torchvision).
"""

from __future__ import annotations

from typing import Any, TypeVar

import torch
from transformers import (
    PreTrainedConfig,
    PreTrainedModel,
    PreTrainedTokenizerBase,
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

from ...demo.omni.processors import FramesVideoProcessor
from ..tokenizer import tiny_tokenizer
from .common import (
    HEAD_DIM,
    INIT_STD,
    TEXT_HIDDEN,
    VISION_HIDDEN,
    finish,
    processor_without_video,
    text_kwargs,
)
from .frames_video import Qwen3VLFramesVideoProcessor

IMAGE_TOKEN = "<|image_pad|>"
VIDEO_TOKEN = "<|video_pad|>"
VISION_START = "<|vision_start|>"
VISION_END = "<|vision_end|>"
# What the chat template writes for an image item; the processor expands the <|image_pad|> in it.
IMAGE_PLACEHOLDER = VISION_START + IMAGE_TOKEN + VISION_END

# M-RoPE splits head_dim/2 rotary frequencies into (temporal, height, width) sections.
MROPE_SECTION = [2, 3, 3]
PATCH_SIZE = 8
MERGE_SIZE = 2
# Bounds on the resized image area: at least one 16 px merge unit, at most 64x64 px (16 tokens).
MIN_PIXELS = (PATCH_SIZE * MERGE_SIZE) ** 2
MAX_PIXELS = 64 * 64


VIDEO_PLACEHOLDER = VISION_START + VIDEO_TOKEN + VISION_END


def qwen_vl_tokenizer() -> PreTrainedTokenizerFast:
    """The tiny tokenizer with the Qwen vision special tokens and the image (and video)
    placeholder template."""
    return tiny_tokenizer(
        extra_special_tokens={
            "image_token": IMAGE_TOKEN,
            "video_token": VIDEO_TOKEN,
            "vision_start_token": VISION_START,
            "vision_end_token": VISION_END,
        },
        image_placeholder=IMAGE_PLACEHOLDER,
        video_placeholder=VIDEO_PLACEHOLDER,
    )


def qwen_vl_image_processor(
    patch_size: int = PATCH_SIZE, max_pixels: int = MAX_PIXELS, **kwargs: Any
) -> Qwen2VLImageProcessorPil:
    """Patch 8, 2x2 merge, area between one merge unit and 64x64 px (shared by all three
    architectures); ``patch_size``, ``max_pixels`` and ``kwargs`` (e.g. a checkpoint's mean/std)
    override."""
    return Qwen2VLImageProcessorPil(
        patch_size=patch_size,
        merge_size=MERGE_SIZE,
        temporal_patch_size=2,
        min_pixels=(patch_size * MERGE_SIZE) ** 2,
        max_pixels=max_pixels,
        **kwargs,
    )


def _rope_parameters(interleaved: bool = False) -> dict[str, Any]:
    """M-RoPE over ``MROPE_SECTION``; Qwen3-VL interleaves the three sections."""
    rope: dict[str, Any] = {
        "rope_type": "default",
        "rope_theta": 10000.0,
        "mrope_section": list(MROPE_SECTION),
    }
    if interleaved:
        rope["mrope_interleaved"] = True
    return rope


def _vision_kwargs(patch_size: int = PATCH_SIZE) -> dict[str, Any]:
    """Vision sizes shared by the family (each architecture adds its own fields)."""
    return {
        "depth": 2,
        "num_heads": 2,
        "in_channels": 3,
        "patch_size": patch_size,
        "spatial_merge_size": MERGE_SIZE,
        "temporal_patch_size": 2,
        "initializer_range": INIT_STD,
    }


def _token_ids(tok: PreTrainedTokenizerBase) -> dict[str, int]:
    return {
        "image_token_id": tok.convert_tokens_to_ids(IMAGE_TOKEN),
        "video_token_id": tok.convert_tokens_to_ids(VIDEO_TOKEN),
        "vision_start_token_id": tok.convert_tokens_to_ids(VISION_START),
        "vision_end_token_id": tok.convert_tokens_to_ids(VISION_END),
    }


M = TypeVar("M", bound=PreTrainedModel)
P = TypeVar("P", bound=ProcessorMixin)


def _build(
    model_cls: type[M],
    config: PreTrainedConfig,
    processor_cls: type[P],
    tok: PreTrainedTokenizerBase,
    seed: int,
    attn_implementation: str,
    chat_template: str | None = None,
    image_processor: Qwen2VLImageProcessorPil | None = None,
    videos: bool = False,
    video_processor: type[Qwen3VLFramesVideoProcessor] | None = None,
) -> tuple[M, P]:
    """Seeded fp32 construction (``architectures`` set before it), then :func:`finish`; with
    ``videos``, a :class:`FramesVideoProcessor` over the image processor; with
    ``video_processor``, that class with the image processor's patch, merge, mean and std and
    a clip-wide area of at most 4x the image bound."""
    config.architectures = [model_cls.__name__]
    torch.manual_seed(seed)
    model = model_cls._from_config(
        config, attn_implementation=attn_implementation, dtype=torch.float32
    )
    processor = processor_without_video(
        processor_cls,
        image_processor=image_processor or qwen_vl_image_processor(),
        tokenizer=tok,
        chat_template=chat_template or tok.chat_template,
    )
    if videos:
        processor.video_processor = FramesVideoProcessor(processor.image_processor)
    elif video_processor is not None:
        ip = processor.image_processor
        processor.video_processor = video_processor(
            patch_size=ip.patch_size,
            merge_size=ip.merge_size,
            temporal_patch_size=ip.temporal_patch_size,
            size={
                "shortest_edge": ip.size["shortest_edge"],
                "longest_edge": 4 * ip.size["longest_edge"],
            },
            image_mean=ip.image_mean,
            image_std=ip.image_std,
        )
    return finish(model, tok, attn_implementation), processor


def build_qwen2_vl(
    seed: int = 0,
    attn_implementation: str = "eager",
    *,
    tokenizer: PreTrainedTokenizerBase | None = None,
    chat_template: str | None = None,
    image_processor: Qwen2VLImageProcessorPil | None = None,
) -> tuple[Qwen2VLForConditionalGeneration, Qwen2VLProcessor]:
    """Qwen2-VL: ViT (embed 32, 2 blocks) + patch merger into a 3-layer M-RoPE decoder; takes
    images and videos (:class:`FramesVideoProcessor`)."""
    tok = tokenizer or qwen_vl_tokenizer()
    patch = image_processor.patch_size if image_processor is not None else PATCH_SIZE
    config = Qwen2VLConfig(
        text_config=text_kwargs(tok, rope_parameters=_rope_parameters()),
        vision_config={
            **_vision_kwargs(patch),
            "embed_dim": VISION_HIDDEN,
            "hidden_size": TEXT_HIDDEN,  # the merger's output width
            "mlp_ratio": 2,
        },
        **_token_ids(tok),
    )
    return _build(
        Qwen2VLForConditionalGeneration,
        config,
        Qwen2VLProcessor,
        tok,
        seed,
        attn_implementation,
        chat_template,
        image_processor,
        videos=True,
    )


def build_qwen2_5_vl(
    seed: int = 0,
    attn_implementation: str = "eager",
    *,
    tokenizer: PreTrainedTokenizerBase | None = None,
    chat_template: str | None = None,
    image_processor: Qwen2VLImageProcessorPil | None = None,
) -> tuple[Qwen2_5_VLForConditionalGeneration, Qwen2_5_VLProcessor]:
    """Qwen2.5-VL: windowed-attention ViT (block 0 windowed at 32 px, block 1 full) + merger."""
    tok = tokenizer or qwen_vl_tokenizer()
    patch = image_processor.patch_size if image_processor is not None else PATCH_SIZE
    config = Qwen2_5_VLConfig(
        text_config=text_kwargs(tok, rope_parameters=_rope_parameters()),
        vision_config={
            **_vision_kwargs(patch),
            "hidden_size": VISION_HIDDEN,
            "intermediate_size": 2 * VISION_HIDDEN,
            "out_hidden_size": TEXT_HIDDEN,
            # a 32 px window holds 2x2 merge units, so 48 px images span several windows
            "window_size": 2 * patch * MERGE_SIZE,
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
        chat_template,
        image_processor,
        videos=True,
    )


def build_qwen3_vl(
    seed: int = 0,
    attn_implementation: str = "eager",
    *,
    tokenizer: PreTrainedTokenizerBase | None = None,
    chat_template: str | None = None,
    image_processor: Qwen2VLImageProcessorPil | None = None,
) -> tuple[Qwen3VLForConditionalGeneration, Qwen3VLProcessor]:
    """Qwen3-VL: ViT + merger, interleaved M-RoPE, and one DeepStack feature from ViT block 0.

    DeepStack adds a second set of image features to the residual stream *after* decoder layer 0
    (outside the layer module), so the image enters both the input embeddings and layer 1's input.
    """
    tok = tokenizer or qwen_vl_tokenizer()
    patch = image_processor.patch_size if image_processor is not None else PATCH_SIZE
    config = Qwen3VLConfig(
        text_config=text_kwargs(
            tok, head_dim=HEAD_DIM, rope_parameters=_rope_parameters(interleaved=True)
        ),
        vision_config={
            **_vision_kwargs(patch),
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
        Qwen3VLForConditionalGeneration,
        config,
        Qwen3VLProcessor,
        tok,
        seed,
        attn_implementation,
        chat_template,
        image_processor,
        video_processor=Qwen3VLFramesVideoProcessor,
    )


__all__ = [
    "IMAGE_PLACEHOLDER",
    "VIDEO_PLACEHOLDER",
    "FramesVideoProcessor",
    "build_qwen2_5_vl",
    "build_qwen2_vl",
    "build_qwen3_vl",
    "qwen_vl_image_processor",
    "qwen_vl_tokenizer",
]
