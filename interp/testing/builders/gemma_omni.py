"""Tiny random Gemma 4 (image, audio, video) with its stock processor, built offline.

The builder returns ``(model, processor)``: the real ``Gemma4ForConditionalGeneration`` in fp32 and
eval mode, deterministic from ``seed``, and the stock ``Gemma4Processor`` around the tiny tokenizer,
a ``Gemma4ImageProcessorPil`` (patch 4, 2x2 pooling, the smallest soft-token budget it accepts:
70), a ``Gemma4AudioFeatureExtractor`` (16 kHz, 32 mel bins) and a ``Gemma4VideoProcessor`` where
torchvision imports, else (this project's CPU install, where the stock video module does not
import) :class:`~interp.testing.builders.frames_video.Gemma4FramesVideoProcessor`, the same
preprocessing in plain torch. Every frame of a video is kept (``num_frames=None``).

Placeholders, as Gemma 4's chat template writes them and the processor expands them: an image
item is ``"\\n\\n<|image|>\\n\\n"``, expanded to ``<|image>`` + one ``<|image|>`` per pooled 2x2
patch group + ``<image|>`` (60 for a 48x32 image, resized to fill the budget); an audio item is
``<|audio|>``, expanded to ``<|audio>`` + one ``<|audio|>`` per 40 ms + ``<audio|>``; a video item
is ``"\\n\\n<|video|>\\n\\n"``, expanded per sampled frame to ``"mm:ss <|image>"`` + ``<|video|>``
soft tokens + ``<image|>``.

Gemma 3n is not built: its vision tower is a timm model (MobileNetV5) and timm needs torchvision.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import (
    Gemma4AudioFeatureExtractor,
    Gemma4Config,
    Gemma4ForConditionalGeneration,
    Gemma4ImageProcessorPil,
    Gemma4Processor,
    PreTrainedTokenizerBase,
    PreTrainedTokenizerFast,
)

from ..tokenizer import tiny_tokenizer
from .common import HEAD_DIM, INIT_STD, VISION_HIDDEN, finish, text_kwargs
from .frames_video import Gemma4FramesVideoProcessor
from .omni_common import (
    MEL_BINS,
    SAMPLING_RATE,
    has_video_processor,
    omni_chat_template,
    omni_processor,
)

GEMMA4_TOKENS = {
    "image_token": "<|image|>",
    "boi_token": "<|image>",
    "eoi_token": "<image|>",
    "audio_token": "<|audio|>",
    "boa_token": "<|audio>",
    "eoa_token": "<audio|>",
}
GEMMA4_VIDEO_TOKEN = "<|video|>"
GEMMA4_PATCH = 4
GEMMA4_POOLING = 2
GEMMA4_SOFT_TOKENS = 70  # the smallest budget Gemma4ImageProcessor accepts


def gemma4_tokenizer() -> PreTrainedTokenizerFast:
    """The tiny tokenizer with Gemma 4's multimodal tokens and a ChatML template writing Gemma 4's
    placeholders."""
    tok = tiny_tokenizer(
        extra_special_tokens=dict(GEMMA4_TOKENS), additional_special_tokens=[GEMMA4_VIDEO_TOKEN]
    )
    tok.chat_template = omni_chat_template(
        "\n\n<|image|>\n\n", "<|audio|>", "\n\n" + GEMMA4_VIDEO_TOKEN + "\n\n"
    )
    return tok


# the tiny video settings: the image processor's patch, pooling and budget, every frame kept
GEMMA4_VIDEO_KWARGS: dict[str, Any] = {
    "patch_size": GEMMA4_PATCH,
    "pooling_kernel_size": GEMMA4_POOLING,
    "max_soft_tokens": GEMMA4_SOFT_TOKENS,
    "num_frames": None,
}


def _gemma4_video_processor() -> Any:
    from transformers import Gemma4VideoProcessor

    return Gemma4VideoProcessor(**GEMMA4_VIDEO_KWARGS)


def build_gemma4(
    seed: int = 0,
    attn_implementation: str = "eager",
    *,
    tokenizer: PreTrainedTokenizerBase | None = None,
    chat_template: str | None = None,
    without: tuple[str, ...] = (),
) -> tuple[Gemma4ForConditionalGeneration, Gemma4Processor]:
    """Gemma 4 (E-series layout): 2-layer ViT with 2x2 pooling, 2-layer conformer audio encoder
    and a 3-layer decoder (sliding, sliding, full) with per-layer input embeddings (width 8).
    ``without``: tower configs left None, as a checkpoint without that tower publishes them
    (``("audio_config",)``: Gemma 4 31B); the processor stays the stock one."""
    tok = tokenizer or gemma4_tokenizer()
    ids = {name: tok.convert_tokens_to_ids(token) for name, token in GEMMA4_TOKENS.items()}
    text = text_kwargs(tok, head_dim=HEAD_DIM, tie_word_embeddings=True)
    config = Gemma4Config(
        text_config={
            **text,
            "global_head_dim": HEAD_DIM,
            "sliding_window": 32,
            "layer_types": ["sliding_attention", "sliding_attention", "full_attention"],
            "hidden_size_per_layer_input": 8,
            "vocab_size_per_layer_input": text["vocab_size"],
        },
        vision_config={
            "hidden_size": VISION_HIDDEN,
            "intermediate_size": 2 * VISION_HIDDEN,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "num_key_value_heads": 2,
            "head_dim": VISION_HIDDEN // 2,
            "patch_size": GEMMA4_PATCH,
            "pooling_kernel_size": GEMMA4_POOLING,
            "position_embedding_size": 64,
            "initializer_range": INIT_STD,
        },
        audio_config={
            "hidden_size": VISION_HIDDEN,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            # the conv front end flattens (first channels / 4) x second channels: the first must
            # equal the mel bins
            "subsampling_conv_channels": [MEL_BINS, 4],
            "output_proj_dims": VISION_HIDDEN,
            "initializer_range": INIT_STD,
        },
        boi_token_id=ids["boi_token"],
        eoi_token_id=ids["eoi_token"],
        image_token_id=ids["image_token"],
        video_token_id=tok.convert_tokens_to_ids(GEMMA4_VIDEO_TOKEN),
        boa_token_id=ids["boa_token"],
        eoa_token_index=ids["eoa_token"],
        audio_token_id=ids["audio_token"],
        initializer_range=INIT_STD,
    )
    for tower in without:
        setattr(config, tower, None)
    config.architectures = [Gemma4ForConditionalGeneration.__name__]
    torch.manual_seed(seed)
    model = Gemma4ForConditionalGeneration._from_config(
        config, attn_implementation=attn_implementation, dtype=torch.float32
    )
    processor = omni_processor(
        Gemma4Processor,
        _gemma4_video_processor,
        image_processor=Gemma4ImageProcessorPil(
            patch_size=GEMMA4_PATCH,
            pooling_kernel_size=GEMMA4_POOLING,
            max_soft_tokens=GEMMA4_SOFT_TOKENS,
        ),
        feature_extractor=Gemma4AudioFeatureExtractor(
            feature_size=MEL_BINS, sampling_rate=SAMPLING_RATE
        ),
        tokenizer=tok,
        chat_template=chat_template or tok.chat_template,
        image_seq_length=GEMMA4_SOFT_TOKENS,
    )
    if not has_video_processor(processor):
        processor.video_processor = Gemma4FramesVideoProcessor(**GEMMA4_VIDEO_KWARGS)
    return finish(model, tok, attn_implementation), processor


__all__ = ["GEMMA4_SOFT_TOKENS", "GEMMA4_VIDEO_KWARGS", "build_gemma4", "gemma4_tokenizer"]
