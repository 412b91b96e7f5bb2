"""Tiny random InstructBLIP: ViT tower -> Q-Former (query tokens + instruction) -> Llama decoder.

Unlike the LLaVA family, the text holds no image placeholder: ``InstructBlipProcessor`` prepends
``num_query_tokens`` image tokens to every row *after* padding the text, so a left-padded row reads
``[image tokens][pads][text]``. The chat template therefore renders ``{"type": "image"}`` as nothing.
With RoPE and the default positions ``0..T-1`` the pads shift the text away from the image, so a
batch-invariant forward passes ``position_ids = attention_mask.cumsum(-1) - 1`` (``generate``
derives them that way itself). The VLM forward needs ``pixel_values``: run blind prompts through
``model.language_model``.
"""

from __future__ import annotations

import torch
from transformers import (
    BlipImageProcessorPil,
    InstructBlipConfig,
    InstructBlipForConditionalGeneration,
    InstructBlipProcessor,
    InstructBlipQFormerConfig,
    InstructBlipVisionConfig,
    LlamaConfig,
    PreTrainedTokenizerBase,
)

from ..tokenizer import chat_template as chatml_template
from ..tokenizer import tiny_tokenizer
from .common import INIT_STD, finish, text_kwargs, vision_kwargs

IMAGE_TOKEN = "<image>"
IMAGE_SIZE = 32
PATCH_SIZE = 8
NUM_QUERY_TOKENS = 8
QFORMER_HIDDEN = 32


def build_instructblip(
    seed: int = 0,
    attn_implementation: str = "eager",
    *,
    tokenizer: PreTrainedTokenizerBase | None = None,
    chat_template: str | None = None,
) -> tuple[InstructBlipForConditionalGeneration, InstructBlipProcessor]:
    """InstructBLIP with 8 query tokens (= 8 image tokens per row) and a 3-layer Llama decoder."""
    # Unnamed on purpose: given a tokenizer with an ``image_token`` attribute, the processor keeps a
    # str where it later needs an AddedToken. In the vocabulary already, so adding it is a no-op.
    tok = tokenizer or tiny_tokenizer(additional_special_tokens=[IMAGE_TOKEN], image_placeholder="")
    # The processor calls *both* tokenizers with the LM tokenizer's init kwargs, padding_side
    # included. The Q-Former has absolute positions and must pad right (as BERT does), so the LM's
    # left padding is kept as an attribute only.
    tok.init_kwargs.pop("padding_side", None)
    qformer_tok = tiny_tokenizer(image_placeholder="")
    qformer_tok.padding_side = "right"
    config = InstructBlipConfig(
        # vision_kwargs sets initializer_range: HF's InstructBLIP vision default is 1e-10, which
        # would make every image look the same
        vision_config=InstructBlipVisionConfig(**vision_kwargs(IMAGE_SIZE, PATCH_SIZE)),
        qformer_config=InstructBlipQFormerConfig(
            vocab_size=len(qformer_tok),
            hidden_size=QFORMER_HIDDEN,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=2 * QFORMER_HIDDEN,
            max_position_embeddings=256,
            cross_attention_frequency=1,
            pad_token_id=qformer_tok.pad_token_id,
            initializer_range=INIT_STD,
        ),
        text_config=LlamaConfig(**text_kwargs(tok, tie_word_embeddings=False)),
        num_query_tokens=NUM_QUERY_TOKENS,
        image_token_index=tok.convert_tokens_to_ids(IMAGE_TOKEN),
        initializer_range=INIT_STD,
    )
    torch.manual_seed(seed)
    model = InstructBlipForConditionalGeneration(config)
    # HF initialises the learned queries to zero; random queries make each query token distinct.
    with torch.no_grad():
        model.query_tokens.normal_(0.0, INIT_STD)
    model = finish(model, tok, attn_implementation)
    # The decoder keeps a generation config of its own (``model.language_model.generate``).
    lm_generation = model.language_model.generation_config
    lm_generation.pad_token_id = tok.pad_token_id
    lm_generation.bos_token_id = tok.bos_token_id
    lm_generation.eos_token_id = tok.eos_token_id
    processor = InstructBlipProcessor(
        image_processor=BlipImageProcessorPil(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}),
        tokenizer=tok,
        qformer_tokenizer=qformer_tok,
        num_query_tokens=NUM_QUERY_TOKENS,
    )
    # The constructor does not forward ``chat_template`` to the base class, so set it afterwards.
    processor.chat_template = chat_template or chatml_template("")
    return model, processor


__all__ = ["build_instructblip"]
