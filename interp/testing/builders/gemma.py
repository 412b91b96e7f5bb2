"""Tiny random Gemma3 and PaliGemma models with their real processors, built offline.

Gemma3: a SigLIP tower whose 8 x 8 patch grid is average-pooled to ``mm_tokens_per_image = 16``
vectors, projected by ``model.model.multi_modal_projector`` and scattered into the embeddings at
the ``<image_soft_token>`` positions. The chat template writes ``<start_of_image>`` for an image;
the processor expands it to ``"\\n\\n<start_of_image>" + 16 x "<image_soft_token>" +
"<end_of_image>\\n\\n"``.

PaliGemma: a SigLIP tower (4 x 4 patches = 16 ``<image>`` tokens) and a linear projector; the
prompt is a prefix, ``<image> x 16 + <bos> + text + "\\n"``, attended bidirectionally (the
processor's ``token_type_ids`` are 0 over the prefix).
"""

from __future__ import annotations

import torch
from transformers import (
    Gemma3Config,
    Gemma3ForConditionalGeneration,
    Gemma3ImageProcessorPil,
    Gemma3Processor,
    Gemma3TextConfig,
    GemmaConfig,
    PaliGemmaConfig,
    PaliGemmaForConditionalGeneration,
    PaliGemmaProcessor,
    PreTrainedTokenizerBase,
    SiglipImageProcessorPil,
    SiglipVisionConfig,
)

from ..tokenizer import chat_template as chatml_template
from ..tokenizer import tiny_tokenizer
from .common import HEAD_DIM, INIT_STD, TEXT_HIDDEN, finish, text_kwargs, vision_kwargs

GEMMA3_IMAGE_SIZE = 32
GEMMA3_PATCH_SIZE = 4  # 8 x 8 patches, average-pooled 2 x 2 ...
GEMMA3_TOKENS_PER_IMAGE = 16  # ... to a 4 x 4 grid (must be a square number)
GEMMA3_BOI_TOKEN = "<start_of_image>"
GEMMA3_EOI_TOKEN = "<end_of_image>"
GEMMA3_IMAGE_TOKEN = "<image_soft_token>"

PALIGEMMA_IMAGE_SIZE = 32
PALIGEMMA_PATCH_SIZE = 8  # 4 x 4 patches = 16 image tokens
PALIGEMMA_TOKENS_PER_IMAGE = (PALIGEMMA_IMAGE_SIZE // PALIGEMMA_PATCH_SIZE) ** 2
PALIGEMMA_IMAGE_TOKEN = "<image>"

# PaliGemma prompts are a prefix, not a chat: all images first, then the texts, no role markup.
# The processor adds <bos> after the images and "\n" at the end, which ends the prefix.
PALIGEMMA_TEMPLATE = (
    "{% for m in messages %}{% if m['content'] is string %}{{ m['content'] }}{% else %}"
    "{% for c in m['content'] %}{% if c['type'] == 'image' %}"
    + PALIGEMMA_IMAGE_TOKEN
    + "{% endif %}"
    "{% endfor %}{% for c in m['content'] %}{% if c['type'] == 'text' %}{{ c['text'] }}{% endif %}"
    "{% endfor %}{% endif %}{% endfor %}"
)


def _vision_config(image_size: int, patch_size: int) -> SiglipVisionConfig:
    return SiglipVisionConfig(**vision_kwargs(image_size, patch_size, vision_use_head=False))


def build_gemma3(
    seed: int = 0,
    attn_implementation: str = "eager",
    *,
    tokenizer: PreTrainedTokenizerBase | None = None,
    chat_template: str | None = None,
) -> tuple[Gemma3ForConditionalGeneration, Gemma3Processor]:
    """A tiny random ``Gemma3ForConditionalGeneration`` and its ``Gemma3Processor``.

    Invariants: 16 ``<image_soft_token>`` per image (config ``image_token_id``); layers 0-1 use
    sliding-window attention (window 32) and layer 2 full attention; the projector weight, zero
    in HF's initialisation, is random, so the image changes the output.
    """
    tok = tokenizer or tiny_tokenizer(
        extra_special_tokens={
            "boi_token": GEMMA3_BOI_TOKEN,
            "eoi_token": GEMMA3_EOI_TOKEN,
            "image_token": GEMMA3_IMAGE_TOKEN,
        },
        image_placeholder=GEMMA3_BOI_TOKEN,
    )
    text_config = Gemma3TextConfig(
        **text_kwargs(tok, head_dim=HEAD_DIM, tie_word_embeddings=True),
        query_pre_attn_scalar=HEAD_DIM,
        sliding_window=32,
        layer_types=["sliding_attention", "sliding_attention", "full_attention"],
    )
    config = Gemma3Config(
        text_config=text_config,
        vision_config=_vision_config(GEMMA3_IMAGE_SIZE, GEMMA3_PATCH_SIZE),
        mm_tokens_per_image=GEMMA3_TOKENS_PER_IMAGE,
        boi_token_index=tok.convert_tokens_to_ids(GEMMA3_BOI_TOKEN),
        eoi_token_index=tok.convert_tokens_to_ids(GEMMA3_EOI_TOKEN),
        image_token_index=tok.convert_tokens_to_ids(GEMMA3_IMAGE_TOKEN),
        initializer_range=INIT_STD,
        tie_word_embeddings=True,
    )
    torch.manual_seed(seed)
    model = Gemma3ForConditionalGeneration(config)
    with torch.no_grad():
        model.model.multi_modal_projector.mm_input_projection_weight.normal_(0.0, INIT_STD)
    processor = Gemma3Processor(
        image_processor=Gemma3ImageProcessorPil(
            size={"height": GEMMA3_IMAGE_SIZE, "width": GEMMA3_IMAGE_SIZE}
        ),
        tokenizer=tok,
        chat_template=chat_template or chatml_template(GEMMA3_BOI_TOKEN),
        image_seq_length=GEMMA3_TOKENS_PER_IMAGE,
    )
    return finish(model, tok, attn_implementation), processor


def build_paligemma(
    seed: int = 0,
    attn_implementation: str = "eager",
    *,
    tokenizer: PreTrainedTokenizerBase | None = None,
    chat_template: str | None = None,
) -> tuple[PaliGemmaForConditionalGeneration, PaliGemmaProcessor]:
    """A tiny random ``PaliGemmaForConditionalGeneration`` (Gemma text model) and its processor.

    Invariants: 16 ``<image>`` tokens per image (config ``image_token_id``); the processor is the
    stock ``PaliGemmaProcessor``; the vocabulary includes the 1152 ``<locNNNN>`` /
    ``<segNNN>`` tokens the processor adds.
    """
    tok = tokenizer or tiny_tokenizer(
        extra_special_tokens={"image_token": PALIGEMMA_IMAGE_TOKEN},
        image_placeholder=PALIGEMMA_IMAGE_TOKEN,
    )
    processor = PaliGemmaProcessor(
        image_processor=SiglipImageProcessorPil(
            size={"height": PALIGEMMA_IMAGE_SIZE, "width": PALIGEMMA_IMAGE_SIZE},
            image_seq_length=PALIGEMMA_TOKENS_PER_IMAGE,
        ),
        tokenizer=tok,
        # "": no chat template (the checkpoint's own case: the prompt is the question)
        chat_template=PALIGEMMA_TEMPLATE if chat_template is None else chat_template or None,
    )
    # The processor grows the vocabulary (location/segmentation tokens): size the model after it.
    text_config = GemmaConfig(**text_kwargs(tok, head_dim=HEAD_DIM, tie_word_embeddings=True))
    config = PaliGemmaConfig(
        text_config=text_config,
        vision_config=_vision_config(PALIGEMMA_IMAGE_SIZE, PALIGEMMA_PATCH_SIZE),
        image_token_index=tok.convert_tokens_to_ids(PALIGEMMA_IMAGE_TOKEN),
        vocab_size=len(tok),
        projection_dim=TEXT_HIDDEN,
        hidden_size=TEXT_HIDDEN,
        tie_word_embeddings=True,
    )
    torch.manual_seed(seed)
    model = PaliGemmaForConditionalGeneration(config)
    return finish(model, tok, attn_implementation), processor


__all__ = [
    "GEMMA3_TOKENS_PER_IMAGE",
    "PALIGEMMA_TOKENS_PER_IMAGE",
    "build_gemma3",
    "build_paligemma",
]
