"""Tiny random LLaVA-family VLMs: LLaVA (CLIP or SigLIP tower), LLaVA-NeXT and LLaVA-OneVision.

Every builder returns ``(model, processor)``: the real ``...ForConditionalGeneration`` class in fp32
and eval mode, deterministic from ``seed``, and the real processor class built offline around the
tiny tokenizer. All four share one placeholder: the chat template renders ``{"type": "image"}`` as
``"<image>\\n"`` and the processor expands each ``<image>`` into one token per image feature vector.
"""

from __future__ import annotations

import torch
from transformers import (
    CLIPImageProcessorPil,
    CLIPVisionConfig,
    LlamaConfig,
    LlavaConfig,
    LlavaForConditionalGeneration,
    LlavaNextConfig,
    LlavaNextForConditionalGeneration,
    LlavaNextImageProcessorPil,
    LlavaNextProcessor,
    LlavaOnevisionConfig,
    LlavaOnevisionForConditionalGeneration,
    LlavaOnevisionImageProcessorPil,
    LlavaOnevisionProcessor,
    LlavaProcessor,
    PreTrainedConfig,
    PreTrainedTokenizerBase,
    PreTrainedTokenizerFast,
    Qwen2Config,
    SiglipImageProcessorPil,
    SiglipVisionConfig,
)

from ..tokenizer import chat_template as chatml_template
from ..tokenizer import tiny_tokenizer
from .common import INIT_STD, finish, processor_without_video, text_kwargs, vision_kwargs
from .frames_video import ResizeCropVideoProcessor
from .omni_common import omni_chat_template

IMAGE_TOKEN = "<image>"
VIDEO_TOKEN = "<video>"
# What the chat template writes for an image item; the processor expands the <image> in it.
IMAGE_PLACEHOLDER = IMAGE_TOKEN + "\n"


def _tokenizer(with_video: bool = False) -> PreTrainedTokenizerFast:
    specials = {"image_token": IMAGE_TOKEN}
    if with_video:
        specials["video_token"] = VIDEO_TOKEN
    return tiny_tokenizer(extra_special_tokens=specials, image_placeholder=IMAGE_PLACEHOLDER)


def _common_config(tok: PreTrainedTokenizerFast, strategy: str) -> dict[str, object]:
    return {
        "image_token_id": tok.convert_tokens_to_ids(IMAGE_TOKEN),
        "vision_feature_select_strategy": strategy,
        "vision_feature_layer": -1,
        "initializer_range": INIT_STD,
    }


def _build_llava(
    vision_config: PreTrainedConfig,
    image_processor: CLIPImageProcessorPil | SiglipImageProcessorPil,
    strategy: str,
    num_additional_image_tokens: int,
    seed: int,
    attn_implementation: str,
    tokenizer: PreTrainedTokenizerBase | None = None,
    template: str | None = None,
) -> tuple[LlavaForConditionalGeneration, LlavaProcessor]:
    tok = tokenizer or _tokenizer()
    config = LlavaConfig(
        vision_config=vision_config,
        text_config=LlamaConfig(**text_kwargs(tok, tie_word_embeddings=False)),
        **_common_config(tok, strategy),
    )
    torch.manual_seed(seed)
    model = LlavaForConditionalGeneration(config)
    processor = LlavaProcessor(
        image_processor=image_processor,
        tokenizer=tok,
        patch_size=vision_config.patch_size,
        vision_feature_select_strategy=strategy,
        num_additional_image_tokens=num_additional_image_tokens,
        chat_template=template or chatml_template(IMAGE_PLACEHOLDER),
    )
    return finish(model, tok, attn_implementation), processor


def build_llava(
    seed: int = 0,
    attn_implementation: str = "eager",
    *,
    tokenizer: PreTrainedTokenizerBase | None = None,
    chat_template: str | None = None,
) -> tuple[LlavaForConditionalGeneration, LlavaProcessor]:
    """LLaVA-1.5 style: CLIP tower (32 px, patch 8), CLS dropped ("default"): 16 image tokens."""
    size = 32
    return _build_llava(
        CLIPVisionConfig(**vision_kwargs(size, 8)),
        CLIPImageProcessorPil(
            size={"shortest_edge": size}, crop_size={"height": size, "width": size}
        ),
        strategy="default",
        num_additional_image_tokens=1,
        seed=seed,
        attn_implementation=attn_implementation,
        tokenizer=tokenizer,
        template=chat_template,
    )


def build_llava_siglip(
    seed: int = 0,
    attn_implementation: str = "eager",
    *,
    tokenizer: PreTrainedTokenizerBase | None = None,
    chat_template: str | None = None,
) -> tuple[LlavaForConditionalGeneration, LlavaProcessor]:
    """LLaVA with a SigLIP tower (32 px, patch 8, no CLS, "full"): 16 image tokens."""
    size = 32
    return _build_llava(
        SiglipVisionConfig(**vision_kwargs(size, 8)),
        SiglipImageProcessorPil(size={"height": size, "width": size}),
        strategy="full",
        num_additional_image_tokens=0,
        seed=seed,
        attn_implementation=attn_implementation,
        tokenizer=tokenizer,
        template=chat_template,
    )


# Any-res tiles: the 16 px base view plus a 1x2 or 2x1 grid of 16 px crops. A tile of 4x4 patches
# keeps unpadding non-trivial (different aspect ratios give different token counts).
ANYRES_SIZE = 16
ANYRES_PATCH = 4


def build_llava_next(
    seed: int = 0,
    attn_implementation: str = "eager",
    *,
    tokenizer: PreTrainedTokenizerBase | None = None,
    chat_template: str | None = None,
) -> tuple[LlavaNextForConditionalGeneration, LlavaNextProcessor]:
    """LLaVA-NeXT (any-res, CLIP tower, "default"): 16 base + unpadded crop tokens + row newlines.

    ``tokenizer`` (with an ``image_token``) and ``chat_template`` replace the tiny ones.
    """
    tok = tokenizer or _tokenizer()
    pinpoints = [[ANYRES_SIZE, 2 * ANYRES_SIZE], [2 * ANYRES_SIZE, ANYRES_SIZE]]
    config = LlavaNextConfig(
        vision_config=CLIPVisionConfig(**vision_kwargs(ANYRES_SIZE, ANYRES_PATCH)),
        text_config=LlamaConfig(**text_kwargs(tok, tie_word_embeddings=False)),
        image_grid_pinpoints=pinpoints,
        **_common_config(tok, "default"),
    )
    torch.manual_seed(seed)
    model = LlavaNextForConditionalGeneration(config)
    processor = LlavaNextProcessor(
        image_processor=LlavaNextImageProcessorPil(
            size={"shortest_edge": ANYRES_SIZE},
            crop_size={"height": ANYRES_SIZE, "width": ANYRES_SIZE},
            image_grid_pinpoints=pinpoints,
        ),
        tokenizer=tok,
        patch_size=ANYRES_PATCH,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=chat_template or chatml_template(IMAGE_PLACEHOLDER),
    )
    return finish(model, tok, attn_implementation), processor


def build_llava_onevision(
    seed: int = 0,
    attn_implementation: str = "eager",
    *,
    tokenizer: PreTrainedTokenizerBase | None = None,
    chat_template: str | None = None,
) -> tuple[LlavaOnevisionForConditionalGeneration, LlavaOnevisionProcessor]:
    """LLaVA-OneVision (any-res, SigLIP tower, "full", Qwen2 decoder); takes videos through
    :class:`~interp.testing.builders.frames_video.ResizeCropVideoProcessor` (frames resized to
    16x16, as ``LlavaOnevisionVideoProcessor`` with that size): per frame 4x4 patches pooled to
    2x2, plus one newline for the video, so ``<video>`` expands to ``4·frames + 1`` tokens.

    ``tokenizer`` (with ``image_token`` and ``video_token``) and ``chat_template`` replace the tiny
    ones.
    """
    tok = tokenizer or _tokenizer(with_video=True)
    pinpoints = [
        [ANYRES_SIZE, ANYRES_SIZE],
        [ANYRES_SIZE, 2 * ANYRES_SIZE],
        [2 * ANYRES_SIZE, ANYRES_SIZE],
    ]
    config = LlavaOnevisionConfig(
        vision_config=SiglipVisionConfig(**vision_kwargs(ANYRES_SIZE, ANYRES_PATCH)),
        text_config=Qwen2Config(**text_kwargs(tok, tie_word_embeddings=False)),
        image_grid_pinpoints=pinpoints,
        video_token_id=tok.convert_tokens_to_ids(VIDEO_TOKEN),
        **_common_config(tok, "full"),
    )
    torch.manual_seed(seed)
    model = LlavaOnevisionForConditionalGeneration(config)
    processor = processor_without_video(
        LlavaOnevisionProcessor,
        image_processor=LlavaOnevisionImageProcessorPil(
            size={"height": ANYRES_SIZE, "width": ANYRES_SIZE}, image_grid_pinpoints=pinpoints
        ),
        tokenizer=tok,
        num_image_tokens=(ANYRES_SIZE // ANYRES_PATCH) ** 2,
        vision_feature_select_strategy="full",
        chat_template=chat_template
        or omni_chat_template(IMAGE_PLACEHOLDER, video=VIDEO_TOKEN + "\n"),
    )
    processor.video_processor = ResizeCropVideoProcessor(size=(ANYRES_SIZE, ANYRES_SIZE))
    return finish(model, tok, attn_implementation), processor


__all__ = ["build_llava", "build_llava_next", "build_llava_onevision", "build_llava_siglip"]
