"""Tiny random Ovis2: a visual tokenizer (ViT -> a head over a visual vocabulary -> softmax)
whose probabilities weight a visual embedding table, feeding a Qwen2 decoder.

``Ovis2Processor`` replaces each ``<image>`` of the prompt with ``<IMG_START>``, one ``<IMG_ATOM>``
per visual token of each crop, ``<IMG_GRID>`` (and ``<IMG_COL>`` / ``<IMG_ROW>`` between crops of a
tiled image) and ``<IMG_END>``. The model places the table's output for the visual tokenizer's
probabilities at the ``<IMG_ATOM>`` tokens, and the table's rows of the five indicator entries at
the five indicator tokens: the table (``model.visual_embeddings_table``) runs twice per forward,
its first call giving the image features. Token ids are in the order the checkpoints' default
config lists them (atom, then start, grid, col, row, end).
"""

from __future__ import annotations

import torch
from transformers import (
    Ovis2Config,
    Ovis2ForConditionalGeneration,
    Ovis2ImageProcessorPil,
    Ovis2Processor,
    Ovis2VisionConfig,
    PreTrainedTokenizerBase,
    Qwen2Config,
)

from ..tokenizer import tiny_tokenizer
from .common import INIT_STD, TEXT_HIDDEN, finish, text_kwargs, vision_kwargs

IMAGE_TOKEN = "<image>"  # the prompt's placeholder, which the processor expands
ATOM_TOKEN = "<IMG_ATOM>"  # one per visual token
INDICATORS = ("<IMG_START>", "<IMG_GRID>", "<IMG_COL>", "<IMG_ROW>", "<IMG_END>")
IMAGE_SIZE = 32
PATCH_SIZE = 4
HIDDEN_STRIDE = 2  # 8 x 8 patches merged 2 x 2: 16 visual tokens per crop, as the checkpoints merge
VISUAL_TOKENS = (IMAGE_SIZE // PATCH_SIZE // HIDDEN_STRIDE) ** 2
VISUAL_VOCAB = 64  # the visual vocabulary, its last five entries the indicators'


def build_ovis2(
    seed: int = 0,
    attn_implementation: str = "eager",
    *,
    tokenizer: PreTrainedTokenizerBase | None = None,
    chat_template: str | None = None,
) -> tuple[Ovis2ForConditionalGeneration, Ovis2Processor]:
    """Ovis2 with 16 visual tokens per 32 px image, a 64-entry visual vocabulary and a 3-layer
    Qwen2 decoder."""
    tok = tokenizer or tiny_tokenizer(
        additional_special_tokens=[IMAGE_TOKEN, ATOM_TOKEN, *INDICATORS],
        image_placeholder=IMAGE_TOKEN,
    )
    ids = tok.convert_tokens_to_ids
    config = Ovis2Config(
        vision_config=Ovis2VisionConfig(
            **vision_kwargs(IMAGE_SIZE, PATCH_SIZE),
            vocab_size=VISUAL_VOCAB,
            hidden_stride=HIDDEN_STRIDE,
            num_visual_indicator_tokens=len(INDICATORS),
        ).to_dict(),
        text_config=Qwen2Config(**text_kwargs(tok)).to_dict(),
        image_token_id=ids(ATOM_TOKEN),
        visual_indicator_token_ids=[ids(t) for t in INDICATORS],
        vocab_size=len(tok),
        hidden_size=TEXT_HIDDEN,
        initializer_range=INIT_STD,
    )
    torch.manual_seed(seed)
    model = finish(Ovis2ForConditionalGeneration(config), tok, attn_implementation)
    processor = Ovis2Processor(
        image_processor=Ovis2ImageProcessorPil(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}),
        tokenizer=tok,
        chat_template=chat_template or tok.chat_template,
        image_seq_length=VISUAL_TOKENS,
    )
    return model, processor


__all__ = ["build_ovis2"]
