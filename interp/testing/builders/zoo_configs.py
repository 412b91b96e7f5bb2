"""A zoo type's config made buildable and sized to its tiny tower: placeholder ids a default leaves
None (:func:`set_unset_ids`), fields a default leaves unusable (:data:`UNBUILT_DEFAULTS`), and the
shrunk config's fields its tiny tower decides (:data:`CONFIG_FIXES`, the one place they are set;
the defaults are sized for the checkpoint's image size).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .zoo_images import ARIA_PATCH, ARIA_SIZE, GRID_SIZE, HIGH_RES_SIZE, IMAGE_SIZE


def set_unset_ids(config: Any) -> list[str]:
    """Give a default config that declares its placeholder-token ids but leaves them all None
    (:func:`interp.adapters.infer.unset_ids`) a stand-in id per field, as its checkpoints set
    them (the tiny build then sets its tokenizer's ids); returns the fields set, or none where
    the config has an id already or declares none."""
    from ...adapters.infer import _text, _token, unset_ids

    if _token(config, "image") is not None or _token(config, "audio") is not None:
        return []
    names = unset_ids(config)
    for i, name in enumerate(names):
        for cfg in (config, _text(config)):
            if name in vars(cfg):
                setattr(cfg, name, 1 + i)
    return names


def _towers(config: Any) -> list[str]:
    """Gemma 4 Unified's default config has no towers; its own documented example builds it with
    the default vision and audio configs."""
    from transformers import Gemma4UnifiedAudioConfig, Gemma4UnifiedVisionConfig

    config.vision_config = Gemma4UnifiedVisionConfig()
    config.audio_config = Gemma4UnifiedAudioConfig()
    return ["vision_config", "audio_config"]


def _aya_heads(config: Any) -> list[str]:
    """Aya Vision's default SigLIP tower has 14 heads for its 1152 width (not divisible); its
    tower is SigLIP-so400m's, 16 heads of 72."""
    config.vision_config.num_attention_heads = 16
    return ["vision_config.num_attention_heads"]


def _head_dim(config: Any) -> list[str]:
    """HunYuan-VL's default leaves ``head_dim`` None, which its attention reads: width / heads."""
    text = config.get_text_config()
    text.head_dim = text.hidden_size // text.num_attention_heads
    return ["head_dim"]


def _mlp_layer_types(config: Any) -> list[str]:
    """DeepSeek-OCR 2's default leaves ``mlp_layer_types`` None, which its decoder indexes: a
    dense first layer, experts after it (DeepSeek-V2's layout); and the experts' top-k."""
    text = config.get_text_config()
    text.mlp_layer_types = ["dense"] + ["sparse"] * (text.num_hidden_layers - 1)
    text.num_experts_per_tok = 6  # its routing's top-k, None too (DeepSeek-OCR's: 6 of 64)
    return ["mlp_layer_types", "num_experts_per_tok"]


def _rope_per_layer_type(config: Any) -> list[str]:
    """Cohere Compass reads rotary parameters per layer type, but its default has none: the
    default rotary embedding (theta 10000) for each of its layer types."""
    text = config.get_text_config()
    rope = {"rope_type": "default", "rope_theta": 10000.0}
    text.rope_parameters = {kind: dict(rope) for kind in set(text.layer_types)}
    return ["rope_parameters"]


# type -> sets the fields its default config leaves unusable (the model does not build from it,
# or builds without its towers; a checkpoint's config sets them); returns the fields' names
UNBUILT_DEFAULTS: dict[str, Callable[[Any], list[str]]] = {
    "gemma4_unified": _towers,
    "aya_vision": _aya_heads,
    "hunyuan_vl": _head_dim,
    "deepseek_ocr2": _mlp_layer_types,
    "cohere_compass": _rope_per_layer_type,
}


def set_unbuilt_defaults(config: Any) -> list[str]:
    """Set what :data:`UNBUILT_DEFAULTS` sets for ``config``'s type; the fields set."""
    fix = UNBUILT_DEFAULTS.get(str(getattr(config, "model_type", "")))
    return fix(config) if fix else []


def _aria_queries(d: dict[str, Any]) -> None:
    """Aria's projector maps a tower's patch count to its query count: a tower of 7 x 7
    patches at the image processor's 490 px, half as many queries."""
    d["vision_config"].update(image_size=ARIA_SIZE, patch_size=ARIA_PATCH)
    patches = (ARIA_SIZE // ARIA_PATCH) ** 2
    d["projector_patch_to_query_dict"] = {patches: patches // 2}
    d["max_value_projector_patch_to_query_dict"] = patches // 2


def _pooled_tokens(d: dict[str, Any]) -> None:
    """Gemma 3's tower pools its patch grid to ``mm_tokens_per_image`` (a square): 2 x 2."""
    d["mm_tokens_per_image"] = 4


def _grid_tower(d: dict[str, Any]) -> None:
    """A tower merging 4 x 4 patches (Granite Docling's pixel shuffle, GOT-OCR 2.0's convolutions)
    at the :data:`GRID_SIZE` images its processor makes (position tables sized to them)."""
    d["vision_config"]["image_size"] = GRID_SIZE


def _sliding_window(d: dict[str, Any]) -> None:
    """Step3p7 builds a sliding-window mask on every forward, but its default config leaves
    ``sliding_window`` unset (a checkpoint sets it): a window shorter than the checks' prompts;
    its tower at the :data:`GRID_SIZE` images its processor makes."""
    d["text_config"]["sliding_window"] = 16
    _grid_tower(d)


def _audio_window(d: dict[str, Any]) -> None:
    """An encoder that takes exactly its window of mel frames (Voxtral: ``max_source_positions``
    x 2 frames, 30 s at full size) gets the borrowed extractor's window (2 s)."""
    from .audio import MAX_SOURCE_POSITIONS

    d["audio_config"]["max_source_positions"] = MAX_SOURCE_POSITIONS


def _high_res(d: dict[str, Any]) -> None:
    """DeepSeek-VL hybrid's SAM tower at the high-resolution view's size, its global-attention
    layer within the 2-layer tiny tower."""
    d["high_res_vision_config"].update(image_size=HIGH_RES_SIZE, global_attn_indexes=[1])


def _merged_width(d: dict[str, Any]) -> None:
    """Muse Glimmer's (and Muse Spark's) projection takes the tower's merged patches (width x merge^2) through a
    hidden layer of its own width, both named on the top-level config."""
    from .common import TEXT_HIDDEN

    vision = d["vision_config"]
    d["out_hidden_size"] = vision["hidden_size"] * vision["merge_size"] ** 2
    d["projector_hidden_size"] = 2 * TEXT_HIDDEN


def _radio_widths(d: dict[str, Any]) -> None:
    """Nemotron-H Omni names its tower's width and its projector's hidden width on the top-level
    config: the tiny tower's, and twice the tiny text width."""
    from .common import TEXT_HIDDEN

    d["vision_hidden_size"] = d["vision_config"]["hidden_size"]
    d["projector_hidden_size"] = 2 * TEXT_HIDDEN


def _adaptor_width(d: dict[str, Any]) -> None:
    """Fun-ASR-Nano's adaptor outputs the decoder's width (its hidden layer a quarter of it),
    which its config names again."""
    from .common import TEXT_HIDDEN

    d["adaptor_config"].update(hidden_size=TEXT_HIDDEN, intermediate_size=TEXT_HIDDEN // 4)


def _one_init(d: dict[str, Any]) -> None:
    """OmniASR checks its initializer range equals its audio encoder's (the tiny one's)."""
    d["initializer_range"] = d["audio_config"]["initializer_range"]


def _embedder_widths(d: dict[str, Any]) -> None:
    """Gemma 4 Unified's vision and audio embedders: tiny widths, 2 x 2 pooled patches (16 px
    model patches, a 32 px image is 2 x 2 of them), a small position table."""
    from .common import VISION_HIDDEN

    if isinstance(d.get("vision_config"), dict):  # None: a checkpoint without images
        d["vision_config"].update(
            mm_embed_dim=VISION_HIDDEN,
            output_proj_dims=VISION_HIDDEN,
            mm_posemb_size=16,
            pooling_kernel_size=2,
        )
    if isinstance(d.get("audio_config"), dict):
        d["audio_config"]["output_proj_dims"] = VISION_HIDDEN


def _projection_width(d: dict[str, Any]) -> None:
    """Kimi K2.5 names its projector's input width (the tower's) on the top-level config."""
    d["projection_hidden_size"] = d["vision_config"]["hidden_size"]


def _sam_then_encoder(d: dict[str, Any]) -> None:
    """A SAM tower at :data:`HIGH_RES_SIZE` (16 x 16 patches, 4 x 4 after its neck) feeding an
    encoder over those 4 x 4 positions (Unlimited-OCR's CLIP: 32 px of 8 px patches)."""
    vision = d["vision_config"]
    vision["sam_config"].update(image_size=HIGH_RES_SIZE, global_attn_indexes=[1])
    encoder = vision.get("encoder_config", {})
    if "image_size" in encoder:
        encoder.update(image_size=IMAGE_SIZE, patch_size=8)


# type -> a fix-up of the shrunk config dict for the tiny tower
CONFIG_FIXES: dict[str, Callable[[dict[str, Any]], None]] = {
    "deepseek_ocr2": _sam_then_encoder,
    "unlimited_ocr": _sam_then_encoder,
    "kimi_k25": _projection_width,
    "gemma4_unified": _embedder_widths,
    "fun_asr_nano": _adaptor_width,
    "omniasr": _one_init,
    "nemotron_h_omni": _radio_widths,
    "muse_glimmer": _merged_width,
    "muse_spark": _merged_width,
    "deepseek_vl_hybrid": _high_res,
    "aria": _aria_queries,
    "shieldgemma2": _pooled_tokens,
    "step3p7": _sliding_window,
    "granite_docling": _grid_tower,
    "got_ocr2": _grid_tower,
    "pp_chart2table": _grid_tower,
    "voxtral": _audio_window,
}


__all__ = ["CONFIG_FIXES", "UNBUILT_DEFAULTS", "set_unbuilt_defaults", "set_unset_ids"]
