"""Registry of tiny random VLMs: :func:`tiny_vlm`, :func:`shared_tiny_vlm`, :data:`ARCHITECTURES`.

Each architecture has a builder in :mod:`interp.testing.builders` returning ``(hf_model, processor)``:
a real transformers model class with random weights (a few hundred thousand parameters) and the
architecture's real processor class with an offline tokenizer. Building one takes well under a second
and needs no network. Every builder also takes ``tokenizer=`` and ``chat_template=`` (Qwen-VL also
``image_processor=``) in place of the invented ones: the repository's ``tools/real_models.py`` builds the
same tiny models around real checkpoints' tokenizers and templates.
"""

from __future__ import annotations

from functools import cache
from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from transformers import PreTrainedModel

    from ..model import VLM

# arch -> builder module in interp.testing.builders (function name: build_<arch>)
_BUILDERS: dict[str, str] = {
    "llava": "llava",
    "llava_siglip": "llava",
    "llava_next": "llava",
    "llava_onevision": "llava",
    "qwen2_vl": "qwen_vl",
    "qwen2_5_vl": "qwen_vl",
    "qwen3_vl": "qwen_vl",
    "idefics3": "idefics3",
    "smolvlm": "idefics3",
    "gemma3": "gemma",
    "paligemma": "gemma",
    "internvl": "internvl",
    "mllama": "mllama",
    "instructblip": "instructblip",
    "qwen2_5_omni_thinker": "qwen_omni",
    "qwen3_omni_moe_thinker": "qwen_omni",
    "gemma4": "gemma_omni",
    "llava_next_video": "llava_video",
}

ARCHITECTURES: tuple[str, ...] = tuple(_BUILDERS)

# Families without images (audio-language): buildable by name, kept out of ARCHITECTURES, which
# the image tests run over.
_MEDIA_BUILDERS: dict[str, str] = {"qwen2_audio": "audio"}
MEDIA_ARCHITECTURES: tuple[str, ...] = tuple(_MEDIA_BUILDERS)

# Families with a written entry and a tiny builder around their stock processor whose HF parity
# the family tests check (tests/families/test_blip2_fuyu_ovis2.py: reads, features, generate, score,
# Steer, SwapImage, batch invariance and contrastive decoding, text-only rows); buildable by
# name, kept out of ARCHITECTURES, which the suite-wide image tests run over.
_FAMILY_BUILDERS: dict[str, str] = {"blip-2": "blip2", "fuyu": "fuyu", "ovis2": "ovis2"}
FAMILY_ARCHITECTURES: tuple[str, ...] = tuple(_FAMILY_BUILDERS)

# One-fix entries of the zoo, built from their default config shrunk, with the tiny processor of
# their pattern (:func:`interp.testing.builders.inferred.tiny_inferred`); kept out of ARCHITECTURES (their
# layouts are not verified, so the region and pixel tests do not apply).
ZOO_ARCHITECTURES: tuple[str, ...] = (
    "llama4",
    "idefics2",
    "granite_docling",
    "nemotron_h_omni",
    "hunyuan_vl",
)


def build_tiny(
    arch: str, seed: int = 0, attn_implementation: str = "eager"
) -> tuple[PreTrainedModel, Any]:
    """Build the tiny random ``(hf_model, processor)`` of ``arch`` (one of :data:`ARCHITECTURES`,
    :data:`MEDIA_ARCHITECTURES`, :data:`FAMILY_ARCHITECTURES` or :data:`ZOO_ARCHITECTURES`)."""
    builders = {**_BUILDERS, **_MEDIA_BUILDERS, **_FAMILY_BUILDERS}
    if arch in ZOO_ARCHITECTURES:
        from .builders.inferred import tiny_inferred

        return tiny_inferred(arch, seed, attn_implementation)[:2]
    if arch not in builders:
        choices = ", ".join([*builders, *ZOO_ARCHITECTURES])
        raise ValueError(f"unknown tiny architecture {arch!r}; choose one of {choices}")
    module = import_module(f"{__package__}.builders.{builders[arch]}")
    build = getattr(module, f"build_{builders[arch] if arch in _FAMILY_BUILDERS else arch}")
    return build(seed=seed, attn_implementation=attn_implementation)


def tiny_vlm(arch: str, seed: int = 0, attn_implementation: str = "eager") -> VLM:
    """A tiny random model of ``arch`` loaded as a :class:`~interp.VLM`, deterministic in ``seed``."""
    from ..model import load

    model, processor = build_tiny(arch, seed=seed, attn_implementation=attn_implementation)
    return load(model, processor)


@cache
def shared_tiny_vlm(arch: str) -> VLM:
    """The tiny model of ``arch`` (seed 0), built once per process and shared by every caller: for
    tests that only read the model (a test that changes it builds its own with :func:`tiny_vlm`)."""
    return tiny_vlm(arch, seed=0)


__all__ = [
    "ARCHITECTURES",
    "FAMILY_ARCHITECTURES",
    "MEDIA_ARCHITECTURES",
    "ZOO_ARCHITECTURES",
    "build_tiny",
    "shared_tiny_vlm",
    "tiny_vlm",
]
