"""Architecture, tokenizer and processor of the demo VLM (built offline from config classes).

The model is a standard ``LlavaForConditionalGeneration``: a SigLIP vision tower (every patch token
is used, ``vision_feature_select_strategy="full"``, no pooling head), the LLaVA two-layer projector
and a Llama decoder. The tokenizer is word-level over the demo world's closed vocabulary; it
lowercases its input and splits punctuation off words ("What colour is the banana?" ->
``what colour is the banana ?``). Its ChatML template renders ``{"type": "image"}`` as ``<image>``,
which the processor expands to one token per patch; a prompt may hold several images (a flat image
list, in prompt order). The word-level pre-tokenizer drops newlines, so a generation prompt ends
with the tokens ``<|im_start|> assistant``: the last prompt token is ``assistant``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
from PIL import Image
from tokenizers import AddedToken, Tokenizer, models, normalizers, pre_tokenizers
from transformers import (
    LlamaConfig,
    LlavaConfig,
    LlavaForConditionalGeneration,
    LlavaProcessor,
    PreTrainedModel,
    PreTrainedTokenizerBase,
    PreTrainedTokenizerFast,
    SiglipVisionConfig,
)
from transformers.models.siglip.image_processing_pil_siglip import SiglipImageProcessorPil

from ..adapters import chat_content
from ..datasets.render import IMAGE_SIZE
from ..datasets.world import world_vocabulary
from ..samples import Sample
from ..testing.tokenizer import chat_template

PAD, UNK, IM_START, IM_END, IMAGE = "<pad>", "<unk>", "<|im_start|>", "<|im_end|>", "<image>"
SPECIAL_TOKENS: tuple[str, ...] = (PAD, UNK, IM_START, IM_END, IMAGE)
ROLE_WORDS: tuple[str, ...] = ("system", "user", "assistant")
LAST_PROMPT_TOKEN = "assistant"

IMAGE_MEAN = (0.5, 0.5, 0.5)
IMAGE_STD = (0.5, 0.5, 0.5)


@dataclass(frozen=True)
class DemoModelConfig:
    """Sizes of the demo VLM. ``patch_size`` must divide the world's image size."""

    patch_size: int = 8
    vision_hidden: int = 128
    vision_layers: int = 3
    vision_heads: int = 4
    vision_mlp: int = 512
    hidden: int = 128
    layers: int = 12
    heads: int = 4
    mlp: int = 256
    max_positions: int = 96

    @property
    def image_tokens(self) -> int:
        return (IMAGE_SIZE // self.patch_size) ** 2

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def word_level_tokenizer(
    words: Sequence[str],
    specials: Sequence[str],
    named: dict[str, str],
    template: str,
) -> PreTrainedTokenizerFast:
    """The demo models' word-level tokenizer: one id per word of ``words``, in order (a repeated
    word keeps its first id), ``specials`` matched whole, ``named`` the named special tokens
    (``image_token`` ...), ``template`` the chat template.

    Text is lowercased, split on whitespace, and every punctuation character becomes a word of
    its own; markup tokens (``specials``: ``<image>``, ``<|im_start|>`` ...) are matched before
    that, verbatim. Padding is on the left, the end of a turn is the end of sequence.
    """
    vocab = {w: i for i, w in enumerate(dict.fromkeys(words))}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    core.normalizer = normalizers.Lowercase()
    core.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation(behavior="isolated")]
    )
    # markup is matched whole, before the pre-tokenizer splits on punctuation
    core.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
    tok = PreTrainedTokenizerFast(
        tokenizer_object=core,
        unk_token=UNK,
        pad_token=PAD,
        eos_token=IM_END,
        extra_special_tokens=dict(named),
        padding_side="left",
    )
    tok.chat_template = template
    return tok


def build_tokenizer() -> PreTrainedTokenizerFast:
    """Word-level tokenizer (:func:`word_level_tokenizer`): specials, role words, then the world's
    sorted vocabulary."""
    return word_level_tokenizer(
        [*SPECIAL_TOKENS, *ROLE_WORDS, *world_vocabulary()],
        SPECIAL_TOKENS,
        {"image_token": IMAGE},
        chat_template(IMAGE),
    )


def build_processor(cfg: DemoModelConfig | None = None) -> LlavaProcessor:
    """LlavaProcessor with a PIL SigLIP image processor (no torchvision) and left padding."""
    cfg = cfg or DemoModelConfig()
    return llava_processor(build_tokenizer(), cfg.patch_size)


def llava_processor(tokenizer: PreTrainedTokenizerBase, patch_size: int) -> LlavaProcessor:
    """The demo models' processor around ``tokenizer`` (its chat template included): PIL SigLIP
    images of :data:`IMAGE_SIZE` pixels, normalised with :data:`IMAGE_MEAN` / :data:`IMAGE_STD`,
    one image token per ``patch_size`` patch."""
    image_processor = SiglipImageProcessorPil(
        size={"height": IMAGE_SIZE, "width": IMAGE_SIZE},
        image_mean=list(IMAGE_MEAN),
        image_std=list(IMAGE_STD),
    )
    return LlavaProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        patch_size=patch_size,
        vision_feature_select_strategy="full",
        num_additional_image_tokens=0,
        chat_template=tokenizer.chat_template,
    )


def build_model(
    tokenizer: PreTrainedTokenizerFast, cfg: DemoModelConfig | None = None
) -> LlavaForConditionalGeneration:
    """A randomly initialised demo VLM whose vocabulary matches ``tokenizer``."""
    cfg = cfg or DemoModelConfig()
    text = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=cfg.hidden,
        intermediate_size=cfg.mlp,
        num_hidden_layers=cfg.layers,
        num_attention_heads=cfg.heads,
        num_key_value_heads=cfg.heads,
        max_position_embeddings=cfg.max_positions,
        tie_word_embeddings=False,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
    )
    config = llava_config(cfg, text, tokenizer.convert_tokens_to_ids(IMAGE), tie=False)
    model = LlavaForConditionalGeneration(config)
    greedy_generation(model, eos=tokenizer.eos_token_id, pad=tokenizer.pad_token_id)
    return model


def llava_config(cfg: Any, text: LlamaConfig, image_token_index: int, *, tie: bool) -> LlavaConfig:
    """The demo models' Llava around the decoder ``text``: a SigLIP tower of ``cfg``'s sizes
    (``patch_size``, ``vision_hidden``, ``vision_mlp``, ``vision_layers``, ``vision_heads``;
    no pooling head) whose every patch state (``"full"``, last layer) is one image token
    (``cfg.image_tokens`` per image), and the standard GELU projector."""
    vision = SiglipVisionConfig(
        hidden_size=cfg.vision_hidden,
        intermediate_size=cfg.vision_mlp,
        num_hidden_layers=cfg.vision_layers,
        num_attention_heads=cfg.vision_heads,
        image_size=IMAGE_SIZE,
        patch_size=cfg.patch_size,
        vision_use_head=False,
    )
    return LlavaConfig(
        vision_config=vision,
        text_config=text,
        image_token_index=image_token_index,
        image_seq_length=cfg.image_tokens,
        vision_feature_select_strategy="full",
        vision_feature_layer=-1,
        projector_hidden_act="gelu",
        tie_word_embeddings=tie,
    )


def greedy_generation(model: PreTrainedModel, *, eos: int, pad: int) -> None:
    """Set ``model``'s generation defaults: greedy, at most 24 new tokens, stop at ``eos``, pad
    with ``pad``, no BOS token."""
    gen = model.generation_config
    gen.eos_token_id = eos
    gen.pad_token_id = pad
    gen.bos_token_id = None
    gen.do_sample = False
    gen.max_new_tokens = 24


def messages(question: str, images: int | bool) -> list[dict[str, Any]]:
    """One user turn holding ``images`` images (``True`` = 1, ``False``/0 = the blind turn).

    The content is the core's :func:`interp.adapters.chat_content`, so training prompts are the
    prompts the library builds: the question is split at its ``{image}`` slots, each piece
    stripped and empty pieces dropped, text and image items alternating in that order; without
    slots every image comes first; the blind turn is one text item, the stripped pieces joined by
    single spaces.
    """
    return [{"role": "user", "content": chat_content(question, int(images))}]


def prompt(processor: LlavaProcessor, question: str, images: int | bool) -> str:
    """The chat prompt with the generation prompt appended (ends in the role word)."""
    return processor.apply_chat_template(
        messages(question, images), add_generation_prompt=True, tokenize=False
    )


def sample_images(sample: Sample) -> list[Image.Image]:
    """A sample's images as RGB PIL images, in prompt order (empty for a text-only item)."""
    if sample.image is None:
        return []
    items = sample.image if isinstance(sample.image, (list, tuple)) else [sample.image]
    return [Sample("", im, id=sample.id).load_image() for im in items]


def pixel_values(images: list[Image.Image]) -> torch.Tensor:
    """What the processor computes for world images (already ``IMAGE_SIZE`` square), faster.

    Equal to ``processor.image_processor(images)["pixel_values"]`` (checked in the tests).
    """
    arr = np.stack([np.asarray(im.convert("RGB"), dtype=np.float32) for im in images])
    arr = (arr / 255.0 - np.asarray(IMAGE_MEAN, np.float32)) / np.asarray(IMAGE_STD, np.float32)
    return torch.from_numpy(arr).permute(0, 3, 1, 2).contiguous()


def image_token_count(processor: LlavaProcessor) -> int:
    """How many ``<image>`` tokens the processor expands one image into."""
    size = processor.image_processor.size
    n = (size["height"] // processor.patch_size) * (size["width"] // processor.patch_size)
    n += processor.num_additional_image_tokens
    return n - 1 if processor.vision_feature_select_strategy == "default" else n


def sample_prompt(processor: LlavaProcessor, sample: Sample, with_image: bool = True) -> str:
    """Prompt for a world sample; ``with_image=False`` gives the blind prompt (no image items)."""
    if not with_image or sample.image is None:
        return prompt(processor, sample.question, 0)
    n = len(sample.image) if isinstance(sample.image, (list, tuple)) else 1
    return prompt(processor, sample.question, n)


__all__ = [
    "IMAGE",
    "IM_END",
    "IM_START",
    "LAST_PROMPT_TOKEN",
    "PAD",
    "SPECIAL_TOKENS",
    "DemoModelConfig",
    "build_model",
    "build_processor",
    "build_tokenizer",
    "greedy_generation",
    "llava_config",
    "llava_processor",
    "image_token_count",
    "messages",
    "pixel_values",
    "prompt",
    "sample_images",
    "sample_prompt",
    "word_level_tokenizer",
]
