"""Tiny random InternVL (the transformers-native ``InternVLForConditionalGeneration``).

The builder returns ``(model, processor)``: the real model class in fp32 and eval mode,
deterministic from ``seed``, and the real ``InternVLProcessor`` built offline around the tiny
tokenizer and a ``GotOcr2ImageProcessorPil``. The chat template renders ``{"type": "image"}`` as
``<IMG_CONTEXT>\\n``; the processor expands each ``<IMG_CONTEXT>`` into
``<img>`` + ``<IMG_CONTEXT>`` x (4 per tile) + ``</img>``. Images are cut into 32 px tiles (1 to 4
tiles by aspect ratio, plus a thumbnail tile when there are several): 4 to 20 image tokens.

Videos: the template renders ``{"type": "video"}`` as ``<video>\n`` (as the real checkpoints'
template does) and the processor expands it into ``Frame<i>: <img><IMG_CONTEXT> x 4</img>`` per
frame, joined by newlines; each frame is resized to one 32 px tile. The stock
``InternVLVideoProcessor`` imports torchvision, so the builder attaches
:class:`~interp.testing.builders.frames_video.ResizeCropVideoProcessor` with the same settings
(why it equals the stock one: "Video on InternVL" in ``docs/omni_families.md``).
"""

from __future__ import annotations

import torch
from transformers import (
    GotOcr2ImageProcessorPil,
    InternVLConfig,
    InternVLForConditionalGeneration,
    InternVLProcessor,
    PreTrainedTokenizerBase,
    PreTrainedTokenizerFast,
)

from ..tokenizer import tiny_tokenizer
from .common import INIT_STD, finish, processor_without_video, text_kwargs, vision_kwargs
from .frames_video import ResizeCropVideoProcessor

IMAGE_TOKEN = "<IMG_CONTEXT>"
START_IMAGE = "<img>"
END_IMAGE = "</img>"
VIDEO_TOKEN = "<video>"
# What the chat template writes for an image item; the processor expands the <IMG_CONTEXT> in it.
IMAGE_PLACEHOLDER = IMAGE_TOKEN + "\n"
VIDEO_PLACEHOLDER = VIDEO_TOKEN + "\n"

TILE_SIZE = 32
PATCH_SIZE = 8
DOWNSAMPLE_RATIO = 0.5
# (32/8)^2 = 16 patches per tile, pixel-shuffled by 0.5 per side: 4 tokens per tile.
TOKENS_PER_TILE = int((TILE_SIZE // PATCH_SIZE) ** 2 * DOWNSAMPLE_RATIO**2)
MAX_TILES = 4


def internvl_tokenizer() -> PreTrainedTokenizerFast:
    """The tiny tokenizer with InternVL's named image tokens and the placeholder template."""
    return tiny_tokenizer(
        extra_special_tokens={
            "start_image_token": START_IMAGE,
            "end_image_token": END_IMAGE,
            "context_image_token": IMAGE_TOKEN,
            "video_token": VIDEO_TOKEN,
        },
        image_placeholder=IMAGE_PLACEHOLDER,
        video_placeholder=VIDEO_PLACEHOLDER,
    )


def internvl_video_processor() -> ResizeCropVideoProcessor:
    """The stock ``InternVLVideoProcessor``'s preprocessing without torchvision: every frame
    resized to one tile (bicubic, antialiased), rescaled by 1/255, normalised with the CLIP mean
    and std (the stock class defaults, which the tiny image processor shares); no crop and no
    frame sampling (``do_sample_frames=False``, the stock default)."""
    return ResizeCropVideoProcessor(size=(TILE_SIZE, TILE_SIZE))


def build_internvl(
    seed: int = 0,
    attn_implementation: str = "eager",
    *,
    tokenizer: PreTrainedTokenizerBase | None = None,
    chat_template: str | None = None,
) -> tuple[InternVLForConditionalGeneration, InternVLProcessor]:
    """InternVL: InternViT (32 px tiles, patch 8, CLS dropped) + pixel shuffle + MLP into Qwen2.

    The vision tower's CLS token and position embeddings, which HF initialises to zero, are drawn
    at random so every part of the tower is exercised.
    """
    tok = tokenizer or internvl_tokenizer()
    config = InternVLConfig(
        text_config={"model_type": "qwen2", **text_kwargs(tok)},
        vision_config=vision_kwargs(TILE_SIZE, PATCH_SIZE),
        image_token_id=tok.convert_tokens_to_ids(IMAGE_TOKEN),
        image_seq_length=TOKENS_PER_TILE,
        downsample_ratio=DOWNSAMPLE_RATIO,
        vision_feature_layer=-1,
        vision_feature_select_strategy="default",
    )
    config.architectures = [InternVLForConditionalGeneration.__name__]
    torch.manual_seed(seed)
    model = InternVLForConditionalGeneration._from_config(
        config, attn_implementation=attn_implementation, dtype=torch.float32
    )
    embeddings = model.model.vision_tower.embeddings
    with torch.no_grad():
        embeddings.cls_token.normal_(0.0, INIT_STD)
        embeddings.position_embeddings.normal_(0.0, INIT_STD)

    processor = processor_without_video(
        InternVLProcessor,
        image_processor=GotOcr2ImageProcessorPil(
            size={"height": TILE_SIZE, "width": TILE_SIZE},
            crop_to_patches=True,
            min_patches=1,
            max_patches=MAX_TILES,
        ),
        tokenizer=tok,
        image_seq_length=TOKENS_PER_TILE,
        chat_template=chat_template or tok.chat_template,
    )
    processor.video_processor = internvl_video_processor()
    return finish(model, tok, attn_implementation), processor


__all__ = [
    "IMAGE_PLACEHOLDER",
    "VIDEO_PLACEHOLDER",
    "build_internvl",
    "internvl_tokenizer",
    "internvl_video_processor",
]
