"""A tiny random Mllama (Llama 3.2 Vision) model with its real processor, built offline.

Mllama fuses the image by cross-attention, not by placing features in the token sequence: the
prompt holds one ``<|image|>`` token per image, the vision tower turns each image into up to
``max_num_tiles`` tiles of ``(image_size / patch_size)**2 + 1`` vectors, and
``model.model.multi_modal_projector`` maps them to the ``cross_attention_states`` that the
cross-attention decoder layers (``config.text_config.cross_attention_layers``) attend to. Text
tokens before the first ``<|image|>`` are masked out of the image by ``cross_attention_mask``.
"""

from __future__ import annotations

import torch
from transformers import (
    MllamaConfig,
    MllamaForConditionalGeneration,
    MllamaImageProcessorPil,
    MllamaProcessor,
    PreTrainedTokenizerBase,
)
from transformers.models.mllama.configuration_mllama import MllamaTextConfig, MllamaVisionConfig

from ..tokenizer import chat_template as chatml_template
from ..tokenizer import tiny_tokenizer
from .common import INIT_STD, VISION_HIDDEN, finish, text_kwargs

IMAGE_TOKEN = "<|image|>"
TILE_SIZE = 32  # pixels per tile side; an image becomes 1 or 2 tiles
PATCH_SIZE = 8
MAX_TILES = 2
# Tile layouts (columns, rows) for at most MAX_TILES tiles, as the image processor enumerates them.
ASPECT_RATIOS = [[1, 1], [1, 2], [2, 1]]
# Per tile: 4 x 4 patches + a class embedding.
VECTORS_PER_TILE = (TILE_SIZE // PATCH_SIZE) ** 2 + 1

# Decoder layer 1 of 0..2 is the cross-attention layer; 0 and 2 are self-attention layers.
CROSS_ATTENTION_LAYERS = [1]
# HF starts the tanh gates at 0 (image ignored); drawn from this range they are open for every seed.
GATE_RANGE = (0.25, 0.75)


def build_mllama(
    seed: int = 0,
    attn_implementation: str = "eager",
    *,
    tokenizer: PreTrainedTokenizerBase | None = None,
    chat_template: str | None = None,
) -> tuple[MllamaForConditionalGeneration, MllamaProcessor]:
    """A tiny random ``MllamaForConditionalGeneration`` and its ``MllamaProcessor``.

    Invariants: 3 decoder layers, layer 1 cross-attention; one ``<|image|>`` token per image
    (config ``image_token_id``); every gate HF initialises to zero (cross-attention attention and
    MLP gates, vision tile/position-embedding gates) is random, so the image changes the output.
    """
    tok = tokenizer or tiny_tokenizer(
        extra_special_tokens={"image_token": IMAGE_TOKEN}, image_placeholder=IMAGE_TOKEN
    )
    text_config = MllamaTextConfig(
        **text_kwargs(tok, cross_attention_layers=CROSS_ATTENTION_LAYERS, tie_word_embeddings=False)
    )
    intermediate_layers = [0]  # vision features = last layer ++ these local layers' outputs
    vision_config = MllamaVisionConfig(
        hidden_size=VISION_HIDDEN,
        intermediate_size=2 * VISION_HIDDEN,
        num_hidden_layers=1,
        num_global_layers=1,
        attention_heads=2,
        image_size=TILE_SIZE,
        patch_size=PATCH_SIZE,
        max_num_tiles=MAX_TILES,
        supported_aspect_ratios=ASPECT_RATIOS,
        intermediate_layers_indices=intermediate_layers,
        vision_output_dim=VISION_HIDDEN * (1 + len(intermediate_layers)),
        initializer_range=INIT_STD,
    )
    config = MllamaConfig(
        text_config=text_config,
        vision_config=vision_config,
        image_token_index=tok.convert_tokens_to_ids(IMAGE_TOKEN),
    )
    torch.manual_seed(seed)
    model = MllamaForConditionalGeneration(config)
    _open_gates(model)
    processor = MllamaProcessor(
        image_processor=MllamaImageProcessorPil(
            size={"height": TILE_SIZE, "width": TILE_SIZE}, max_image_tiles=MAX_TILES
        ),
        tokenizer=tok,
        chat_template=chat_template or chatml_template(IMAGE_TOKEN),
    )
    return finish(model, tok, attn_implementation), processor


def _open_gates(model: MllamaForConditionalGeneration) -> None:
    """Give every zero-initialised gate a random value (draws follow the seeded construction)."""
    vision = model.model.vision_model
    gates = [
        vision.gated_positional_embedding.gate,
        vision.pre_tile_positional_embedding.gate,
        vision.post_tile_positional_embedding.gate,
    ]
    for layer in model.model.language_model.layers:
        if hasattr(layer, "cross_attn_attn_gate"):
            gates += [layer.cross_attn_attn_gate, layer.cross_attn_mlp_gate]
    with torch.no_grad():
        for gate in gates:
            gate.uniform_(*GATE_RANGE)


__all__ = ["CROSS_ATTENTION_LAYERS", "IMAGE_TOKEN", "VECTORS_PER_TILE", "build_mllama"]
