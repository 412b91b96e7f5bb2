"""Tiny random BLIP-2: ViT tower -> Q-Former (learned queries only) -> OPT decoder.

As InstructBLIP's, the text holds no image placeholder: ``Blip2Processor`` prepends
``num_query_tokens`` image tokens to every row *after* padding the text, so a left-padded row reads
``[image tokens][pads][text]``, and the chat template renders ``{"type": "image"}`` as nothing.
Unlike InstructBLIP's Q-Former, BLIP-2's reads no instruction (no second tokenizer). The decoder is
OPT, as in the ``Salesforce/blip2-opt-*`` checkpoints (BLIP-2's default text config): OPT counts
its learned positions over attended tokens itself, so no position fix-up is needed. The VLM forward
needs ``pixel_values``: blind prompts run through ``model.language_model``.
"""

from __future__ import annotations

import torch
from transformers import (
    Blip2Config,
    Blip2ForConditionalGeneration,
    Blip2Processor,
    Blip2QFormerConfig,
    Blip2VisionConfig,
    BlipImageProcessorPil,
    OPTConfig,
    PreTrainedTokenizerBase,
)

from ..tokenizer import chat_template as chatml_template
from ..tokenizer import tiny_tokenizer
from .common import INIT_STD, TEXT_HIDDEN, finish, text_kwargs, vision_kwargs

IMAGE_TOKEN = "<image>"
IMAGE_SIZE = 32
PATCH_SIZE = 8
NUM_QUERY_TOKENS = 8
QFORMER_HIDDEN = 32


def build_blip2(
    seed: int = 0,
    attn_implementation: str = "eager",
    *,
    tokenizer: PreTrainedTokenizerBase | None = None,
    chat_template: str | None = None,
) -> tuple[Blip2ForConditionalGeneration, Blip2Processor]:
    """BLIP-2 with 8 query tokens (= 8 image tokens per row) and a 3-layer OPT decoder."""
    # Unnamed, as InstructBLIP's builder does: the processor adds "<image>" itself unless the
    # tokenizer names an image token; in the vocabulary already, so adding it is a no-op.
    tok = tokenizer or tiny_tokenizer(additional_special_tokens=[IMAGE_TOKEN], image_placeholder="")
    text = text_kwargs(tok, tie_word_embeddings=False)
    for key in ("intermediate_size", "num_key_value_heads"):  # OPT names its MLP width ffn_dim
        text.pop(key)
    config = Blip2Config(
        # vision_kwargs sets initializer_range: HF's BLIP-2 vision default is 1e-10, which would
        # make every image look the same
        vision_config=Blip2VisionConfig(**vision_kwargs(IMAGE_SIZE, PATCH_SIZE)),
        qformer_config=Blip2QFormerConfig(
            vocab_size=len(tok),
            hidden_size=QFORMER_HIDDEN,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=2 * QFORMER_HIDDEN,
            cross_attention_frequency=1,
            encoder_hidden_size=vision_kwargs(IMAGE_SIZE, PATCH_SIZE)["hidden_size"],
            pad_token_id=tok.pad_token_id,
            initializer_range=INIT_STD,
        ),
        text_config=OPTConfig(
            **text, ffn_dim=2 * TEXT_HIDDEN, word_embed_proj_dim=TEXT_HIDDEN, init_std=INIT_STD
        ),
        num_query_tokens=NUM_QUERY_TOKENS,
        image_token_index=tok.convert_tokens_to_ids(IMAGE_TOKEN),
        initializer_range=INIT_STD,
    )
    torch.manual_seed(seed)
    model = Blip2ForConditionalGeneration(config)
    # HF initialises the learned queries to zero; random queries make each query token distinct.
    with torch.no_grad():
        model.query_tokens.normal_(0.0, INIT_STD)
    model = finish(model, tok, attn_implementation)
    # The decoder keeps a generation config of its own (``model.language_model.generate``).
    lm_generation = model.language_model.generation_config
    lm_generation.pad_token_id = tok.pad_token_id
    lm_generation.bos_token_id = tok.bos_token_id
    lm_generation.eos_token_id = tok.eos_token_id
    processor = Blip2Processor(
        image_processor=BlipImageProcessorPil(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}),
        tokenizer=tok,
        num_query_tokens=NUM_QUERY_TOKENS,
    )
    processor.chat_template = chat_template or chatml_template("")
    return model, processor


__all__ = ["build_blip2"]
