"""Tiny random VLMs around real checkpoints' tokenizers, chat templates and processor settings.

:func:`build_real` builds the tiny model of a family's architecture (:mod:`interp.testing.tiny`:
random weights, a few small layers) with, instead of the invented tokenizer and template, the
family's real tokenizer (:mod:`tools.real`, the full vocabulary, the VLM's added tokens on
top) and the checkpoint's published chat template and processor settings
(``tests/fixtures/checkpoints``; each folder's ``SOURCE.md`` says where every file came from).
:data:`REAL_FAMILIES` records, per family (keyed by its tiny architecture, or by a name of its own
where a second checkpoint of an architecture is covered, e.g. ``llava_next_mistral``), which
architecture is built, which tokenizer serves, whether it is the checkpoint's own or a stand-in,
and which settings are scaled down for CPU cost.

The fixtures live in the source tree, not in the installed package: building needs a checkout.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .real import RealTokenizerMissing, load_tokenizer

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

    from interp.model import VLM

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "checkpoints"

# InstructBLIP has no chat template: its processor tokenises the instruction as given. This
# template renders the text items joined by a space (no image placeholder: the processor adds the
# query tokens), so the prompt is the question.
TEXT_ONLY_TEMPLATE = (
    "{% for m in messages %}{{ m['content'] | selectattr('type', 'equalto', 'text') "
    "| map(attribute='text') | join(' ') }}{% endfor %}"
)
_IDEFICS_GRID = tuple(f"<row_{i}_col_{j}>" for i in range(1, 7) for j in range(1, 7))


@dataclass(frozen=True)
class RealFamily:
    """How one tiny architecture is built around a real checkpoint's pieces.

    Attributes:
        checkpoint: the public checkpoint whose tokenizer, template and settings are used.
        tokenizer: a name of :data:`tools.real.TOKENIZERS`.
        exact: whether that tokenizer is the checkpoint's own vocabulary (else a stand-in).
        named: named special tokens the processor reads (``image_token`` ...), added if absent.
        extra: further special tokens the checkpoint adds (unnamed).
        pad: the checkpoint's padding token, added if absent (None: keep the tokenizer's).
        template: chat template: a fixture folder (its ``chat_template.jinja``) or a literal
            template starting with ``{``; "" for none (the prompt is the question; a builder
            whose tokenizer carries a template uses that one).
        scaled: processor settings scaled down from the checkpoint's for CPU cost.
        image_config: a fixture folder whose ``preprocessor_config.json`` gives the Qwen-VL image
            processor's patch size and normalisation ("" for the tiny builder's own).
        arch: the tiny architecture built (:data:`interp.testing.tiny.ARCHITECTURES`); "" for the
            family's own key (``pixtral`` and ``mistral3``, which have no tiny architecture, are
            built here).
    """

    checkpoint: str
    tokenizer: str
    exact: bool
    named: dict[str, str]
    extra: tuple[str, ...] = ()
    pad: str | None = None
    template: str = ""
    scaled: str = "none"
    image_config: str = ""
    arch: str = ""


_LLAVA = {"image_token": "<image>"}
_QWEN = {
    "image_token": "<|image_pad|>",
    "video_token": "<|video_pad|>",
    "vision_start_token": "<|vision_start|>",
    "vision_end_token": "<|vision_end|>",
}
_IDEFICS = {
    "image_token": "<image>",
    "fake_image_token": "<fake_token_around_image>",
    "global_image_token": "<global-img>",
    "end_of_utterance_token": "<end_of_utterance>",
}
_GEMMA3 = {
    "boi_token": "<start_of_image>",
    "eoi_token": "<end_of_image>",
    "image_token": "<image_soft_token>",
}
_TINY_ANYRES = "any-res grid: 16 px tiles of 4 px patches instead of 336 px tiles of 14 px patches"
_TINY_QWEN = "at most 112x112 px (16 image tokens) instead of 12845056 px"

REAL_FAMILIES: dict[str, RealFamily] = {
    "llava": RealFamily(
        "llava-hf/llava-1.5-7b-hf",
        "llama2",
        exact=True,
        named=_LLAVA,
        pad="<pad>",
        template="llava-1.5-7b-hf",
        scaled="none: 336 px, patch 14, CLS dropped = 576 image tokens (tower 2 layers wide 32)",
    ),
    "llava_siglip": RealFamily(
        "llava-hf/llava-1.5-7b-hf (with a SigLIP tower: no such checkpoint)",
        "llama2",
        exact=True,
        named=_LLAVA,
        pad="<pad>",
        template="llava-1.5-7b-hf",
        scaled="32 px SigLIP, patch 8 (16 image tokens)",
    ),
    "llava_next": RealFamily(
        "llava-hf/llava-v1.6-vicuna-7b-hf",
        "llama2",
        exact=True,
        named=_LLAVA,
        pad="<pad>",
        template="llava-v1.6-vicuna-7b-hf",
        scaled=_TINY_ANYRES,
    ),
    "llava_next_mistral": RealFamily(
        "llava-hf/llava-v1.6-mistral-7b-hf",
        "mistral",
        exact=True,
        named=_LLAVA,
        pad="<pad>",
        template="llava-v1.6-mistral-7b-hf",
        scaled=_TINY_ANYRES + " (a Llama text config: Mistral 7B v0.2 has no sliding window)",
        arch="llava_next",
    ),
    "llava_onevision": RealFamily(
        "llava-hf/llava-onevision-qwen2-7b-ov-hf",
        "qwen2",
        exact=True,
        named={"image_token": "<image>", "video_token": "<video>"},
        template="llava-onevision-qwen2-7b-ov-hf",
        scaled=_TINY_ANYRES,
    ),
    "qwen2_vl": RealFamily(
        "Qwen/Qwen2-VL-7B-Instruct",
        "qwen",
        exact=True,
        named=_QWEN,
        template="Qwen2-VL-7B-Instruct",
        scaled=_TINY_QWEN,
        image_config="Qwen2-VL-7B-Instruct",
    ),
    "qwen2_5_vl": RealFamily(
        "Qwen/Qwen2.5-VL-7B-Instruct",
        "qwen",
        exact=True,
        named=_QWEN,
        template="Qwen2.5-VL-7B-Instruct",
        scaled=_TINY_QWEN,
        image_config="Qwen2.5-VL-7B-Instruct",
    ),
    "qwen3_vl": RealFamily(
        "Qwen/Qwen3-VL-8B-Instruct",
        "qwen",
        exact=True,
        named=_QWEN,
        template="Qwen3-VL-8B-Instruct",
        scaled=_TINY_QWEN + " (patch 16 as published)",
        image_config="Qwen3-VL-8B-Instruct",
    ),
    "idefics3": RealFamily(
        "HuggingFaceM4/Idefics3-8B-Llama3",
        "llama3",
        exact=True,
        named=_IDEFICS,
        extra=_IDEFICS_GRID,
        template="Idefics3-8B-Llama3",
        scaled="one 48 px global view (9 image tokens), no splitting, instead of 364 px tiles",
    ),
    "smolvlm": RealFamily(
        "HuggingFaceTB/SmolVLM-Instruct",
        "smollm2",
        exact=True,
        named=_IDEFICS,
        extra=_IDEFICS_GRID,
        template="SmolVLM-Instruct",
        scaled="one 48 px global view (9 image tokens), no splitting, instead of 384 px tiles",
    ),
    "gemma3": RealFamily(
        "google/gemma-3-4b-it",
        "gemma4",
        exact=False,
        named=_GEMMA3,
        extra=("<start_of_turn>", "<end_of_turn>"),
        template="gemma-3-4b-it",
        scaled="32 px, 16 soft tokens per image instead of 896 px, 256",
    ),
    "paligemma": RealFamily(
        "google/paligemma-3b-mix-224",
        "gemma4",
        exact=False,
        named={"image_token": "<image>"},
        template="",
        scaled="32 px, 16 image tokens instead of 224 px, 256",
    ),
    "gemma4": RealFamily(
        "google/gemma-4-E4B-it",
        "gemma4",
        exact=True,
        named={
            "image_token": "<|image|>",
            "boi_token": "<|image>",
            "eoi_token": "<image|>",
            "audio_token": "<|audio|>",
            "boa_token": "<|audio>",
            "eoa_token": "<audio|>",
        },
        # "": the tokenizer's own chat template (Gemma 4's, shipped in the vocabulary's GGUF)
        template="",
        scaled="70 soft tokens per image (the smallest budget) at patch 4 instead of 280 at 16",
    ),
    "internvl": RealFamily(
        "OpenGVLab/InternVL3-8B-hf",
        "qwen",
        exact=True,
        named={
            "start_image_token": "<img>",
            "end_image_token": "</img>",
            "context_image_token": "<IMG_CONTEXT>",
            "video_token": "<video>",
        },
        template="InternVL3-8B-hf",
        scaled="32 px tiles (4 tokens each), at most 4 tiles, instead of 448 px (256 each), 12",
    ),
    "mllama": RealFamily(
        "meta-llama/Llama-3.2-11B-Vision-Instruct",
        "llama3",
        exact=True,
        named={"image_token": "<|image|>"},
        template="Llama-3.2-11B-Vision-Instruct",
        scaled="32 px tiles, at most 2, instead of 560 px, 4",
    ),
    "pixtral": RealFamily(
        "mistral-community/pixtral-12b",
        "pixtral",
        exact=True,
        named={"image_token": "[IMG]"},
        template="pixtral-12b",
        scaled="48 px longest edge, patch 8 (a 40x48 image: 5 rows of 6 [IMG], [IMG_BREAK] between "
        "rows, [IMG_END] last) instead of 1024 px, patch 16; a Mistral text config without a "
        "sliding window",
    ),
    "mistral3": RealFamily(
        "mistralai/Mistral-Small-3.1-24B-Instruct-2503",
        "pixtral",
        exact=False,
        named={"image_token": "[IMG]"},
        template="Mistral-Small-3.1-24B-Instruct-2503",
        scaled="48 px longest edge, patch 4 with the published 2x2 spatial merge (a 40x48 image: 5 "
        "rows of 6 [IMG]) instead of 1540 px, patch 14; a text config without a sliding window",
    ),
    "instructblip": RealFamily(
        "Salesforce/instructblip-vicuna-7b",
        "llama2",
        exact=True,
        named={},
        extra=("<image>",),
        pad="<pad>",
        template=TEXT_ONLY_TEMPLATE,
        scaled="8 query tokens at 32 px instead of 32 at 224 px; the Q-Former keeps the tiny "
        "tokenizer (BERT's is not shipped offline)",
    ),
}


# the model_type each family's model has where it differs from the family's name (a LLaVA config
# with another tower or tokenizer is still a `llava` / `llava_next` checkpoint)
_MODEL_TYPES = {"llava_siglip": "llava", "pixtral": "llava", "llava_next_mistral": "llava_next"}


def real_model_type(name: str) -> str:
    """The ``model_type`` of the model :func:`build_real` builds for family ``name``
    (tests/families/test_real_parity.py checks it on every family)."""
    return _MODEL_TYPES.get(name, name)


def real_tokenizers_by_type() -> dict[str, list[tuple[str, bool]]]:
    """``model_type`` → the conformance suite's (checkpoint, exact tokenizer?) pairs, for the
    zoo's table (docs/families.md)."""
    out: dict[str, list[tuple[str, bool]]] = {}
    for name, family in REAL_FAMILIES.items():
        out.setdefault(real_model_type(name), []).append((family.checkpoint, family.exact))
    return out


def fixture(checkpoint_dir: str, name: str) -> Path:
    """Path of a checkpoint fixture file; :class:`RealTokenizerMissing` outside a checkout."""
    path = FIXTURES / checkpoint_dir / name
    if not path.is_file():
        raise RealTokenizerMissing(
            f"checkpoint fixture {checkpoint_dir}/{name} not found under {FIXTURES} (the real "
            "builders need the project's source tree)"
        )
    return path


def chat_template_of(family: RealFamily) -> str:
    """The family's chat template text ("" for none)."""
    if not family.template or family.template.startswith("{"):
        return family.template
    return fixture(family.template, "chat_template.jinja").read_text()


def real_tokenizer(family: RealFamily) -> PreTrainedTokenizerBase:
    """The family's real tokenizer with its VLM tokens added (left padding, as encoding expects).

    Named tokens become attributes (``tok.image_token``, ``tok.image_token_id``) as the stock
    processors read them; tokens already in the vocabulary keep their ids.
    """
    from tokenizers import AddedToken

    tok = load_tokenizer(family.tokenizer, extra_special_tokens=dict(family.named))
    new = [t for t in family.extra if t not in tok.get_vocab()]
    if new:
        tok.add_tokens([AddedToken(t, special=True, normalized=False) for t in new])
    if family.pad is not None and tok.pad_token is None:
        tok.add_special_tokens({"pad_token": family.pad})
    elif tok.pad_token is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = "left"
    return tok


def _qwen_image_processor(checkpoint_dir: str) -> Any:
    """The checkpoint's published patch size and normalisation, with a small pixel budget."""
    from interp.testing.builders.qwen_vl import qwen_vl_image_processor

    cfg = json.loads(fixture(checkpoint_dir, "preprocessor_config.json").read_text())
    patch = int(cfg["patch_size"])
    return qwen_vl_image_processor(
        patch_size=patch,
        max_pixels=(4 * patch * 2) ** 2,
        image_mean=cfg["image_mean"],
        image_std=cfg["image_std"],
    )


def _llava_15(tok: PreTrainedTokenizerBase, template: str, seed: int, attn: str) -> Any:
    """LLaVA-1.5 at its published resolution: CLIP 336 px, patch 14, 576 image tokens."""
    from transformers import CLIPImageProcessorPil, CLIPVisionConfig

    from interp.testing.builders.common import vision_kwargs
    from interp.testing.builders.llava import _build_llava

    cfg = json.loads(fixture("llava-1.5-7b-hf", "preprocessor_config.json").read_text())
    size = int(cfg["crop_size"]["height"])
    image_processor = CLIPImageProcessorPil(
        size=cfg["size"],
        crop_size=cfg["crop_size"],
        image_mean=cfg["image_mean"],
        image_std=cfg["image_std"],
        resample=cfg["resample"],
    )
    return _build_llava(
        CLIPVisionConfig(**vision_kwargs(size, 14)),
        image_processor,
        strategy="default",
        num_additional_image_tokens=1,
        seed=seed,
        attn_implementation=attn,
        tokenizer=tok,
        template=template,
    )


def pixtral_processor_class() -> type:
    """transformers' ``PixtralProcessor`` class itself. The package exports a placeholder without
    torchvision, and the module imports a torchvision helper only to count tokens for serving
    (``_get_num_multimodal_tokens``); without torchvision it is imported here with that one import
    skipped (encoding does not use that helper)."""
    import sys
    from unittest import mock

    from transformers.utils import is_torchvision_available

    if is_torchvision_available():
        from transformers import PixtralProcessor

        return PixtralProcessor
    name = "transformers.models.pixtral.processing_pixtral"
    if name not in sys.modules:
        with mock.patch("transformers.utils.is_vision_available", lambda: False):
            import_module(name)
    return sys.modules[name].PixtralProcessor


def _pixtral(tok: PreTrainedTokenizerBase, template: str, seed: int, attn: str, merge: int) -> Any:
    """A Pixtral-tower model with the stock ``PixtralProcessor`` (``[IMG]`` rows, ``[IMG_BREAK]``
    between them, ``[IMG_END]`` last), scaled to a 48 px longest edge and 8 px per image token.

    ``merge`` 1: Pixtral-12B as published (``llava`` with a Pixtral tower,
    ``vision_feature_select_strategy`` "full", ``image_token_index`` 10), patch 8. ``merge`` 2:
    Mistral-Small-3.1 (``mistral3``, Mistral3Config's published defaults: 2x2 spatial merge,
    ``image_token_index`` 10, no projector bias), patch 4.
    """
    import torch
    from transformers import (
        LlavaConfig,
        LlavaForConditionalGeneration,
        Mistral3Config,
        Mistral3ForConditionalGeneration,
        MistralConfig,
        PixtralImageProcessorPil,
        PixtralVisionConfig,
    )

    from interp.testing.builders.common import (
        INIT_STD,
        VISION_HIDDEN,
        finish,
        text_kwargs,
        vision_kwargs,
    )

    longest, patch = 48, 8 // merge
    vision = PixtralVisionConfig(**vision_kwargs(longest, patch, head_dim=VISION_HIDDEN // 2))
    text = MistralConfig(**text_kwargs(tok, tie_word_embeddings=False, sliding_window=None))
    common = {
        "vision_config": vision,
        "text_config": text,
        "image_token_id": tok.convert_tokens_to_ids("[IMG]"),
        "vision_feature_layer": -1,
        "initializer_range": INIT_STD,
    }
    torch.manual_seed(seed)
    if merge == 1:
        config = LlavaConfig(**common, vision_feature_select_strategy="full")
        model: Any = LlavaForConditionalGeneration(config)
    else:
        model = Mistral3ForConditionalGeneration(Mistral3Config(**common, spatial_merge_size=merge))
    processor = pixtral_processor_class()(
        image_processor=PixtralImageProcessorPil(
            patch_size=patch * merge, size={"longest_edge": longest}
        ),
        tokenizer=tok,
        patch_size=patch,
        spatial_merge_size=merge,
        chat_template=template,
    )
    return finish(model, tok, attn), processor


def build_real(
    name: str, seed: int = 0, attn_implementation: str = "eager"
) -> tuple[PreTrainedModel, Any]:
    """The tiny model of real family ``name`` (a key of :data:`REAL_FAMILIES`) built around its
    checkpoint's pieces (see the module docstring); weights random and deterministic in ``seed``.

    Raises:
        RealTokenizerMissing: the tokenizer files are not fetched (``make real-tokenizers``) or
            the fixtures are not there.
    """
    from interp.testing.tiny import _BUILDERS

    if name not in REAL_FAMILIES:
        raise ValueError(f"no real family {name!r}; choose one of {', '.join(REAL_FAMILIES)}")
    family = REAL_FAMILIES[name]
    arch = family.arch or name
    tok = real_tokenizer(family)
    template = chat_template_of(family)
    if name == "llava":  # LLaVA-1.5 at its published resolution
        return _llava_15(tok, template, seed, attn_implementation)
    if name in ("pixtral", "mistral3"):  # no tiny architecture: Pixtral-tower models
        return _pixtral(tok, template, seed, attn_implementation, 1 if name == "pixtral" else 2)
    kwargs: dict[str, Any] = {"tokenizer": tok, "chat_template": template}
    if family.image_config:
        kwargs["image_processor"] = _qwen_image_processor(family.image_config)
    module = import_module(f"interp.testing.builders.{_BUILDERS[arch]}")
    return getattr(module, f"build_{arch}")(
        seed=seed, attn_implementation=attn_implementation, **kwargs
    )


@cache
def real_vlm(name: str, seed: int = 0) -> VLM:
    """:func:`build_real` of family ``name`` loaded as a :class:`~interp.VLM`, one per session
    (do not mutate it)."""
    from interp.model import load

    return load(*build_real(name, seed=seed))


__all__ = [
    "FIXTURES",
    "REAL_FAMILIES",
    "TEXT_ONLY_TEMPLATE",
    "RealFamily",
    "build_real",
    "chat_template_of",
    "fixture",
    "pixtral_processor_class",
    "real_model_type",
    "real_tokenizers_by_type",
    "real_tokenizer",
    "real_vlm",
]
