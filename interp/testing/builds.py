"""Checks of a tiny random VLM builder, as this project checks its own (the family tests of
``tests/families/``): what the builder makes is a real transformers class at the tiny sizes of
:mod:`interp.testing.builders.common`, and its weights are a function of the seed alone.

A builder is ``build(seed=..., attn_implementation=...) -> (model, processor)``, as the functions of
:mod:`interp.testing.builders` are. A user who writes a builder for a family of their own calls
these in their tests.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from transformers import PreTrainedModel
from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES

from .builders.common import TEXT_LAYERS

Builder = Callable[..., tuple[PreTrainedModel, Any]]
"""``build(seed=..., attn_implementation=...) -> (model, processor)``."""

TEXT_SIZES = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2}
"""The tiny text decoder's sizes (:func:`interp.testing.builders.common.text_kwargs`)."""
VISION_WIDTH = 32
"""The tiny vision tower's width (:func:`interp.testing.builders.common.vision_kwargs`)."""


def vision_layers(vision: Any) -> int:
    """The tower's layer count: ``num_hidden_layers`` (or Qwen-VL's ``depth``), with Mllama's
    global layers."""
    n = getattr(vision, "num_hidden_layers", None)
    if n is None:
        n = vision.depth
    return int(n) + int(getattr(vision, "num_global_layers", 0) or 0)


def check_tiny_build(model: PreTrainedModel, processor: Any) -> None:
    """Assert that ``(model, processor)`` is a tiny random VLM as the project's builders make:

    - in eval mode, every parameter float32;
    - ``config.architectures`` names the model's class, the class
      ``AutoModelForImageTextToText`` maps the config's ``model_type`` to;
    - a text decoder of :data:`TEXT_SIZES` with :data:`~interp.testing.builders.common.TEXT_LAYERS`
      layers (the decoder's layer list that long), a vision tower :data:`VISION_WIDTH` wide with
      one or two layers;
    - every tokenizer id has an embedding row, the image token among them, and the tokenizer pads
      on the left.
    """
    config = model.config
    assert not model.training, "the builder returns a model in training mode"
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    assert config.architectures == [type(model).__name__], config.architectures
    assert MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES[config.model_type] == type(model).__name__
    text = config.get_text_config()
    got = {key: getattr(text, key) for key in TEXT_SIZES}
    assert got == TEXT_SIZES, f"text decoder {got}, not the tiny {TEXT_SIZES}"
    assert len(model.get_decoder().layers) == text.num_hidden_layers == TEXT_LAYERS
    vision = config.vision_config
    widths = (getattr(vision, "hidden_size", None), getattr(vision, "embed_dim", None))
    assert VISION_WIDTH in widths, f"vision tower {widths} wide"  # Qwen-VL's: embed_dim
    assert 1 <= vision_layers(vision) <= 2, vision_layers(vision)
    tokenizer = processor.tokenizer
    assert model.get_input_embeddings().num_embeddings >= len(tokenizer)
    image_token = getattr(config, "image_token_id", None)
    if image_token is None:
        image_token = getattr(config, "image_token_index", None)
    assert image_token is None or image_token < len(tokenizer), image_token
    assert tokenizer.padding_side == "left"


def check_seeded(build: Builder, seeds: tuple[int, int] = (0, 1)) -> None:
    """Assert that ``build`` makes the same weights, bit for bit, from the same seed and other
    weights from another seed."""
    a = build(seed=seeds[0])[0].state_dict()
    b = build(seed=seeds[0])[0].state_dict()
    c = build(seed=seeds[1])[0].state_dict()
    assert a.keys() == b.keys() == c.keys()
    assert all(torch.equal(a[k], b[k]) for k in a), "the same seed built other weights"
    assert any(not torch.equal(a[k], c[k]) for k in a), "another seed built the same weights"


def check_attn_implementation(build: Builder, name: str = "sdpa") -> None:
    """Assert that ``build(attn_implementation=name)`` reaches the text decoder."""
    model, _ = build(attn_implementation=name)
    assert model.get_decoder().config._attn_implementation == name


__all__ = [
    "TEXT_SIZES",
    "VISION_WIDTH",
    "Builder",
    "check_attn_implementation",
    "check_seeded",
    "check_tiny_build",
    "vision_layers",
]
