"""Tiny random LLaVA-NeXT-Video with its stock processor, built offline.

Images take LLaVA-NeXT's any-res path (see :func:`~interp.testing.builders.llava.build_llava_next`:
the same 16 px tiles of 4 px patches); a video's frames each pass the vision tower, a 2x2 average
pool (``vision_resampler``) and the projector. The chat template writes ``"<image>\\n"`` for an
image and ``"<video>\\n"`` for a video; the processor expands ``<video>`` into
``frames x (16 px / 4 px / 2)^2`` tokens (4 per frame). The stock video processor
(``LlavaNextVideoVideoProcessor``) imports torchvision, so the builder attaches
:class:`ResizeCropVideoProcessor`, which does the same arithmetic in plain torch.
"""

from __future__ import annotations

import torch
from transformers import (
    CLIPVisionConfig,
    LlamaConfig,
    LlavaNextImageProcessorPil,
    LlavaNextVideoConfig,
    LlavaNextVideoForConditionalGeneration,
    LlavaNextVideoProcessor,
    PreTrainedTokenizerBase,
)

from ..tokenizer import tiny_tokenizer
from .common import finish, processor_without_video, text_kwargs, vision_kwargs
from .frames_video import ResizeCropVideoProcessor
from .llava import (
    ANYRES_PATCH,
    ANYRES_SIZE,
    IMAGE_TOKEN,
    VIDEO_TOKEN,
    _common_config,
)
from .omni_common import omni_chat_template


def _video_processor() -> ResizeCropVideoProcessor:
    return ResizeCropVideoProcessor(shortest_edge=ANYRES_SIZE, crop=(ANYRES_SIZE, ANYRES_SIZE))


def build_llava_next_video(
    seed: int = 0,
    attn_implementation: str = "eager",
    *,
    tokenizer: PreTrainedTokenizerBase | None = None,
    chat_template: str | None = None,
) -> tuple[LlavaNextVideoForConditionalGeneration, LlavaNextVideoProcessor]:
    """LLaVA-NeXT-Video (any-res CLIP tower, "default" strategy, 2x2 video pooling, Llama decoder).

    ``tokenizer`` (with ``image_token`` and ``video_token``) and ``chat_template`` replace the tiny
    ones.
    """
    tok = tokenizer or tiny_tokenizer(
        extra_special_tokens={"image_token": IMAGE_TOKEN, "video_token": VIDEO_TOKEN}
    )
    pinpoints = [[ANYRES_SIZE, 2 * ANYRES_SIZE], [2 * ANYRES_SIZE, ANYRES_SIZE]]
    config = LlavaNextVideoConfig(
        vision_config=CLIPVisionConfig(**vision_kwargs(ANYRES_SIZE, ANYRES_PATCH)),
        text_config=LlamaConfig(**text_kwargs(tok, tie_word_embeddings=False)),
        image_grid_pinpoints=pinpoints,
        video_token_id=tok.convert_tokens_to_ids(VIDEO_TOKEN),
        spatial_pool_mode="average",
        spatial_pool_stride=2,
        **_common_config(tok, "default"),
    )
    config.architectures = [LlavaNextVideoForConditionalGeneration.__name__]
    torch.manual_seed(seed)
    model = LlavaNextVideoForConditionalGeneration(config)
    processor = processor_without_video(
        LlavaNextVideoProcessor,
        image_processor=LlavaNextImageProcessorPil(
            size={"shortest_edge": ANYRES_SIZE},
            crop_size={"height": ANYRES_SIZE, "width": ANYRES_SIZE},
            image_grid_pinpoints=pinpoints,
        ),
        tokenizer=tok,
        patch_size=ANYRES_PATCH,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=chat_template
        or omni_chat_template(IMAGE_TOKEN + "\n", video=VIDEO_TOKEN + "\n"),
    )
    processor.video_processor = _video_processor()
    return finish(model, tok, attn_implementation), processor


__all__ = ["build_llava_next_video"]
