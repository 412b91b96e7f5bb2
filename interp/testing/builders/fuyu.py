"""Tiny random Fuyu: no vision tower — each image patch is flattened and projected by one linear
layer (``model.vision_embed_tokens``) into a Persimmon decoder.

``FuyuProcessor`` writes each image as a row-major grid of ``|SPEAKER|`` tokens, one per patch,
each grid row closed by a ``|NEWLINE|`` token (an embedding of the vocabulary, not a patch), then
``<s>`` and the prompt, ``<0x04>`` (beginning of answer) last, and pads on the left. It strips the
first token of the placeholder run's encoding, the ``▁`` a SentencePiece tokenizer puts before
it: the tiny tokenizer is given the same habit (a normalizer prepending a space, the patch tokens
added as normalized tokens), so the run keeps every ``|SPEAKER|``. The chat template renders
``{"type": "image"}`` as nothing (the processor puts the image first itself). The forward counts
positions ``0..T-1`` over the padded row, ``generate`` over attended tokens: single forwards get
mask-derived ``position_ids``, as InstructBLIP's.

The image processor is the stock PIL one with one repair: ``FuyuProcessor`` asks it for torch
tensors, which its numpy ``patchify_image`` cannot reshape (transformers' own bug under the PIL
backend; the default backend needs torchvision, not installed here), so the patches are cut from a
numpy view of the same values and handed back as a tensor — the values and their order are the
stock ones.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from tokenizers import AddedToken, Regex, normalizers
from transformers import (
    FuyuConfig,
    FuyuForCausalLM,
    FuyuImageProcessorPil,
    FuyuProcessor,
    PersimmonConfig,
    PreTrainedTokenizerBase,
)

from ..tokenizer import chat_template as chatml_template
from ..tokenizer import tiny_tokenizer
from .common import INIT_STD, finish, text_kwargs

IMAGE_TOKEN = "|SPEAKER|"
NEWLINE_TOKEN = "|NEWLINE|"
ANSWER_TOKEN = "<0x04>"  # FuyuProcessor's BEGINNING_OF_ANSWER_STRING
IMAGE_SIZE = 32  # the largest image side; smaller images keep their size, padded to it
PATCH_SIZE = 8


class FuyuPatches(FuyuImageProcessorPil):
    """``FuyuImageProcessorPil`` whose ``patchify_image`` also takes the torch tensors that
    ``FuyuProcessor`` gets from it (see the module docstring)."""

    def patchify_image(self, image: Any, patch_size: Any = None) -> Any:
        if not isinstance(image, torch.Tensor):
            return super().patchify_image(image, patch_size)
        patches = super().patchify_image(np.asarray(image.detach().cpu()), patch_size)
        return torch.from_numpy(np.ascontiguousarray(patches)).to(image.dtype)


def fuyu_tokenizer() -> PreTrainedTokenizerBase:
    """The tiny tokenizer with Fuyu's image tokens and a SentencePiece-like leading space."""
    tok = tiny_tokenizer(additional_special_tokens=[ANSWER_TOKEN], image_placeholder="")
    # a space before a run that starts with an image token, as SentencePiece's "▁" (not before
    # the token alone: added tokens are matched on their normalized text)
    tok.backend_tokenizer.normalizer = normalizers.Replace(Regex(r"^\|(?=[A-Z]+\|.)"), " |")
    tok.add_tokens([AddedToken(t, normalized=True) for t in (IMAGE_TOKEN, NEWLINE_TOKEN)])
    return tok


def build_fuyu(
    seed: int = 0,
    attn_implementation: str = "eager",
    *,
    tokenizer: PreTrainedTokenizerBase | None = None,
    chat_template: str | None = None,
) -> tuple[FuyuForCausalLM, FuyuProcessor]:
    """Fuyu with 8 x 8 patches (a 32 x 32 image: 4 rows of 4 patch tokens and a newline) and a
    3-layer Persimmon decoder."""
    tok = tokenizer or fuyu_tokenizer()
    processor = FuyuProcessor(
        image_processor=FuyuPatches(
            size={"height": IMAGE_SIZE, "width": IMAGE_SIZE},
            patch_size={"height": PATCH_SIZE, "width": PATCH_SIZE},
        ),
        tokenizer=tok,
    )  # sets the tokenizer's pad id to 0, as Fuyu's checkpoints have it
    text = text_kwargs(tok, tie_word_embeddings=False)
    text.pop("num_key_value_heads")  # Persimmon's heads are all full
    config = FuyuConfig(
        text_config=PersimmonConfig(**text).to_dict(),
        image_size=IMAGE_SIZE,
        patch_size=PATCH_SIZE,
        image_token_id=tok.convert_tokens_to_ids(IMAGE_TOKEN),
        initializer_range=INIT_STD,
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    torch.manual_seed(seed)
    model = finish(FuyuForCausalLM(config), tok, attn_implementation)
    processor.chat_template = chat_template or chatml_template("")
    return model, processor


__all__ = ["FuyuPatches", "build_fuyu", "fuyu_tokenizer"]
