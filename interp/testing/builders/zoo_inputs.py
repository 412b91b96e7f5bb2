"""The inputs a zoo type's stock processor gives beyond plain ``pixel_values``, for the types whose
feature site needs them (:func:`interp.testing.builders.inferred.tiny_inferred`).

The stock processors of these types do not build offline (each needs its checkpoint's tokenizer
files; Pixtral's also needs torchvision), but their *image* processors do (the PIL ones). The
borrowed LLaVA processor then takes the type's own PIL image processor, sized to the tiny tower,
so a batch carries what the stock processor would put in it (``image_sizes`` for Pixtral towers,
``pixel_attention_mask`` and 5-D ``pixel_values`` for Idefics2, ``pixel_mask`` for Aria), and
:class:`CountingProcessor` expands each ``<image>`` into as many placeholders as the model's
feature site gives for that image.

:data:`IMAGE_PROCESSORS` is the one place these per-type inputs are named;
:data:`CONFIG_FIXES` the one place a shrunk config's image-size-dependent fields are set to the
tiny tower (the defaults are sized for the checkpoint's image size).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch
from transformers import LlavaProcessor, Qwen2AudioProcessor, Qwen3VLProcessor

IMAGE_SIZE = 32
HIGH_RES_SIZE = 256  # DeepSeek-VL hybrid's SAM view: 16 x 16 patches, 4 x 4 after its neck
ARIA_SIZE, ARIA_PATCH = 490, 70  # 7 x 7 patches


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


def _pixtral(vision: dict[str, Any]) -> Any:
    """Pixtral's image processor: longest edge :data:`IMAGE_SIZE`, the tower's patch; gives
    ``image_sizes`` (Mistral 3 and LightOnOCR crop each padded image to it)."""
    from transformers import PixtralImageProcessorPil

    p = int(vision["patch_size"])
    return PixtralImageProcessorPil(
        patch_size={"height": p, "width": p}, size={"longest_edge": IMAGE_SIZE}
    )


def _idefics2(vision: dict[str, Any]) -> Any:
    """Idefics2's image processor without splitting: 5-D ``pixel_values`` ``[rows, images, 3,
    H, W]`` and ``pixel_attention_mask``."""
    from transformers import Idefics2ImageProcessorPil

    return Idefics2ImageProcessorPil(
        size={"longest_edge": IMAGE_SIZE, "shortest_edge": IMAGE_SIZE}, do_image_splitting=False
    )


def _aria(vision: dict[str, Any]) -> Any:
    """Aria's image processor at its smaller size (490 px, the only sizes it takes are 490 and
    980), no split: padded square images and ``pixel_mask``."""
    from transformers import AriaImageProcessorPil

    return AriaImageProcessorPil(max_image_size=ARIA_SIZE, split_image=False)


def _square(name: str) -> Callable[[dict[str, Any]], Any]:
    """An image processor ``name`` that resizes to a :data:`IMAGE_SIZE` square."""

    def build(vision: dict[str, Any]) -> Any:
        import transformers

        return getattr(transformers, name)(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE})

    return build


def _granite_docling(vision: dict[str, Any]) -> Any:
    """Granite Docling's image processor without tiling: one :data:`IMAGE_SIZE` square tile per
    page, ``pixel_values`` ``[pages, tiles, 3, H, W]`` and ``pixel_attention_mask`` (real tiles)."""
    from transformers import GraniteDoclingImageProcessorPil

    return GraniteDoclingImageProcessorPil(
        size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}, crop_to_patches=False
    )


def _deepseek_vl_hybrid(vision: dict[str, Any]) -> Any:
    """DeepSeek-VL hybrid's image processor: the low-resolution view at :data:`IMAGE_SIZE`, the
    high-resolution one at :data:`HIGH_RES_SIZE` (whose SAM features, pooled 4 x 4, give the
    low-resolution view's token count)."""
    from transformers import DeepseekVLHybridImageProcessorPil

    return DeepseekVLHybridImageProcessorPil(
        size={"height": IMAGE_SIZE, "width": IMAGE_SIZE},
        high_res_size={"height": HIGH_RES_SIZE, "width": HIGH_RES_SIZE},
    )


def _radio_patches(vision: dict[str, Any]) -> Any:
    """Nemotron-H Omni's image processor needs torchvision: a CLIP one at :data:`IMAGE_SIZE`
    whose images are cut into the tower's patches as its own processor cuts them — flat
    ``[patches, 3 * p * p]`` (channel, then row and column within the patch) over all images,
    with ``image_grid_hw`` per image."""
    import numpy as np
    from transformers import BatchFeature, CLIPImageProcessorPil

    p = int(vision["patch_size"])

    class RadioPatches(CLIPImageProcessorPil):
        model_input_names = ["pixel_values", "image_grid_hw"]  # noqa: RUF012

        def __call__(self, images: Any, **kwargs: Any) -> BatchFeature:
            kwargs.pop("return_tensors", None)
            pixels = np.asarray(super().__call__(images, **kwargs)["pixel_values"])
            n, c, h, w = pixels.shape
            patches = pixels.reshape(n, c, h // p, p, w // p, p).transpose(0, 2, 4, 1, 3, 5)
            grid = np.array([[h // p, w // p]] * n)
            return BatchFeature(
                {"pixel_values": patches.reshape(-1, c * p * p), "image_grid_hw": grid},
                tensor_type="pt",
            )

    return RadioPatches(
        size={"shortest_edge": IMAGE_SIZE}, crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}
    )


def _minicpm(mode: str) -> Callable[[dict[str, Any]], Any]:
    """MiniCPM-V 4.6's PIL image processor (4.7 and MiniCPM-OCR take the same inputs; theirs need
    torchvision) without slicing, at the tiny tower's patch and the type's downsampling ``mode``,
    each image one :data:`IMAGE_SIZE` view: ``pixel_values`` of the whole batch side by side
    ``[1, 3, p, patches * p]`` and ``target_sizes`` (patch rows and columns per view)."""

    def build(vision: dict[str, Any]) -> Any:
        from transformers import MiniCPMV4_6ImageProcessorPil

        return MiniCPMV4_6ImageProcessorPil(
            patch_size=int(vision["patch_size"]),
            scale_resolution=IMAGE_SIZE,
            slice_mode=False,
            max_slice_nums=1,
            downsample_mode=mode,
        )

    return build


def _merged_blocks(vision: dict[str, Any]) -> Any:
    """Inkling 2's image processor needs torchvision: a CLIP one at :data:`IMAGE_SIZE` whose
    images are cut into merged blocks as its tower reads them — ``[blocks, (m·p)², 3]``, each
    block's pixels row by row, channels last — with ``image_grid_thw`` in merged units."""
    import numpy as np
    from transformers import BatchFeature, CLIPImageProcessorPil

    p, m = int(vision["patch_size"]), int(vision["spatial_merge_size"])
    side = m * p

    class MergedBlocks(CLIPImageProcessorPil):
        model_input_names = ["pixel_values", "image_grid_thw"]  # noqa: RUF012

        def __call__(self, images: Any, **kwargs: Any) -> BatchFeature:
            kwargs.pop("return_tensors", None)
            pixels = np.asarray(super().__call__(images, **kwargs)["pixel_values"])
            n, c, h, w = pixels.shape
            blocks = pixels.transpose(0, 2, 3, 1).reshape(n, h // side, side, w // side, side, c)
            blocks = blocks.transpose(0, 1, 3, 2, 4, 5).reshape(-1, side * side, c)
            grid = np.array([[1, h // side, w // side]] * n)
            return BatchFeature({"pixel_values": blocks, "image_grid_thw": grid}, tensor_type="pt")

    return MergedBlocks(
        size={"shortest_edge": IMAGE_SIZE}, crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}
    )


def _hmlp_patches(vision: dict[str, Any]) -> Any:
    """Inkling's vision tower (an MLP over each patch) reads ``[patches, t, p, p, 3]``: a CLIP
    image processor at :data:`IMAGE_SIZE` whose images are cut into patches row by row, each
    repeated over the tower's ``t`` frames; ``image_grid_hw`` (patches per side) only slices
    the batch per image for the count and is dropped (:data:`DROPPED`)."""
    import numpy as np
    from transformers import BatchFeature, CLIPImageProcessorPil

    p, t = int(vision["patch_size"]), int(vision["temporal_patch_size"])

    class FramePatches(CLIPImageProcessorPil):
        model_input_names = ["pixel_values"]  # noqa: RUF012

        def __call__(self, images: Any, **kwargs: Any) -> BatchFeature:
            kwargs.pop("return_tensors", None)
            pixels = np.asarray(super().__call__(images, **kwargs)["pixel_values"])
            n, c, h, w = pixels.shape
            patches = pixels.transpose(0, 2, 3, 1).reshape(n, h // p, p, w // p, p, c)
            patches = patches.transpose(0, 1, 3, 2, 4, 5).reshape(-1, 1, p, p, c)
            grid = np.array([[h // p, w // p]] * n)
            return BatchFeature(
                {"pixel_values": np.repeat(patches, t, axis=1), "image_grid_hw": grid},
                tensor_type="pt",
            )

    return FramePatches(
        size={"shortest_edge": IMAGE_SIZE}, crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}
    )


def _model_patches(vision: dict[str, Any]) -> Any:
    """Gemma 4 Unified's image processor needs torchvision: a CLIP one at :data:`IMAGE_SIZE` whose
    images are cut into model patches (``patch_size · pooling_kernel_size`` pixels a side) row by
    row, each flattened channels last — ``[images, patches, side² · 3]`` — with their
    ``image_position_ids`` (x, y)."""
    import numpy as np
    from transformers import BatchFeature, CLIPImageProcessorPil

    side = int(vision["patch_size"]) * int(vision["pooling_kernel_size"])

    class ModelPatches(CLIPImageProcessorPil):
        model_input_names = ["pixel_values", "image_position_ids"]  # noqa: RUF012

        def __call__(self, images: Any, **kwargs: Any) -> BatchFeature:
            kwargs.pop("return_tensors", None)
            pixels = np.asarray(super().__call__(images, **kwargs)["pixel_values"])
            n, c, h, w = pixels.shape
            rows, cols = h // side, w // side
            patches = pixels.transpose(0, 2, 3, 1).reshape(n, rows, side, cols, side, c)
            patches = patches.transpose(0, 1, 3, 2, 4, 5).reshape(n, rows * cols, -1)
            ys, xs = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
            positions = np.stack([xs.ravel(), ys.ravel()], -1)
            return BatchFeature(
                {"pixel_values": patches, "image_position_ids": np.stack([positions] * n)},
                tensor_type="pt",
            )

    return ModelPatches(
        size={"shortest_edge": IMAGE_SIZE}, crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}
    )


def _conv_patches(vision: dict[str, Any]) -> Any:
    """Kimi K2.5's image processor needs torchvision: a CLIP one at :data:`IMAGE_SIZE` whose
    images are cut into the tower's patches row by row, ``[patches, 3, p, p]`` (its patch
    embedding is a convolution over each), with ``image_grid_thw`` in patches."""
    import numpy as np
    from transformers import BatchFeature, CLIPImageProcessorPil

    p = int(vision["patch_size"])

    class ConvPatches(CLIPImageProcessorPil):
        model_input_names = ["pixel_values", "image_grid_thw"]  # noqa: RUF012

        def __call__(self, images: Any, **kwargs: Any) -> BatchFeature:
            kwargs.pop("return_tensors", None)
            pixels = np.asarray(super().__call__(images, **kwargs)["pixel_values"])
            n, c, h, w = pixels.shape
            patches = pixels.reshape(n, c, h // p, p, w // p, p).transpose(0, 2, 4, 1, 3, 5)
            grid = np.array([[1, h // p, w // p]] * n)
            return BatchFeature(
                {"pixel_values": patches.reshape(-1, c, p, p), "image_grid_thw": grid},
                tensor_type="pt",
            )

    return ConvPatches(
        size={"shortest_edge": IMAGE_SIZE}, crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}
    )


def _sam_view(vision: dict[str, Any]) -> Any:
    """DeepSeek-OCR 2's and Unlimited-OCR's image processors need torchvision: one global view,
    a CLIP image processor at the tiny SAM tower's :data:`HIGH_RES_SIZE` (no local crops)."""
    from transformers import CLIPImageProcessorPil

    return CLIPImageProcessorPil(
        size={"shortest_edge": HIGH_RES_SIZE},
        crop_size={"height": HIGH_RES_SIZE, "width": HIGH_RES_SIZE},
    )


def _siglip2(vision: dict[str, Any]) -> Any:
    """LFM2-VL's image processor (torchvision only) is Siglip2's with a smart resize: Siglip2's
    PIL one at the tower's patch, at most a 4 x 4 patch grid; gives patch-flattened
    ``pixel_values``, ``spatial_shapes`` and ``pixel_attention_mask``."""
    from transformers import Siglip2ImageProcessorPil

    return Siglip2ImageProcessorPil(
        patch_size=int(vision["patch_size"]),
        max_num_patches=(IMAGE_SIZE // int(vision["patch_size"])) ** 2,
    )


def _video_llama_3(vision: dict[str, Any]) -> Any:
    """VideoLLaMA 3's image processor at the tower's patch, at most :data:`IMAGE_SIZE` squared
    pixels: patch-flattened ``pixel_values``, ``image_grid_thw`` and ``image_merge_sizes``."""
    from transformers import VideoLlama3ImageProcessorPil

    p = int(vision["patch_size"])
    return VideoLlama3ImageProcessorPil(
        patch_size=p, size={"longest_edge": IMAGE_SIZE**2, "shortest_edge": (2 * p) ** 2}
    )


def _paddleocr_vl(vision: dict[str, Any]) -> Any:
    """PaddleOCR-VL's image processor at the tiny tower's patch and merge (in the Qwen-VL
    processor it borrows): patches kept 2-D, ``[patches, 3, p, p]``, as its tower takes them."""
    from transformers import PaddleOCRVLImageProcessorPil

    p, m = int(vision["patch_size"]), int(vision["spatial_merge_size"])
    return PaddleOCRVLImageProcessorPil(
        patch_size=p,
        merge_size=m,
        size={"shortest_edge": (p * m) ** 2, "longest_edge": IMAGE_SIZE**2},
    )


# type -> its own PIL image processor, sized to the tiny tower's vision config
IMAGE_PROCESSORS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "mistral3": _pixtral,
    "lighton_ocr": _pixtral,
    "mistral_large4": _pixtral,
    "idefics2": _idefics2,
    "aria": _aria,
    "shieldgemma2": _square("Gemma3ImageProcessorPil"),
    "deepseek_vl": _square("DeepseekVLImageProcessorPil"),
    "lfm2_vl": _siglip2,
    "granite_docling": _granite_docling,
    "deepseek_vl_hybrid": _deepseek_vl_hybrid,
    "nemotron_h_omni": _radio_patches,
    "inkling2": _merged_blocks,
    "inkling_mm_model": _hmlp_patches,
    "gemma4_unified": _model_patches,
    "kimi_k25": _conv_patches,
    "deepseek_ocr2": _sam_view,
    "unlimited_ocr": _sam_view,
    "inkling2_loop": _merged_blocks,
    "minicpmv4_6": _minicpm("16x"),
    "minicpmv4_7": _minicpm("16x"),
    "minicpm_ocr": _minicpm("4x"),
    "video_llama_3": _video_llama_3,
    "paddleocr_vl": _paddleocr_vl,
}


# type -> image-processor outputs its stock processor drops (its ``unused_input_names``)
# (Voxtral's gives ``input_features`` alone: its encoder takes the whole padded window)
DROPPED: dict[str, tuple[str, ...]] = {
    "aria": ("num_crops",),
    "shieldgemma2": ("num_crops",),
    "voxtral": ("feature_attention_mask",),
    "granite_docling": ("rows", "cols"),  # the tile grid, which only builds the prompt
    "inkling_mm_model": ("image_grid_hw",),  # the hand-cut patches' grid, for the count only
    "minicpmv4_6": ("grids", "num_patches_per_image"),  # slicing, which only builds the prompt
    "minicpmv4_7": ("grids", "num_patches_per_image"),
    "minicpm_ocr": ("grids", "num_patches_per_image"),
}
# type -> outputs its stock processor renames (Gemma 3's marks image tokens in token_type_ids,
# which its forward reads for bidirectional attention over each image; Qwen3-ASR's names the
# Whisper frames' mask input_features_mask)
RENAMED: dict[str, dict[str, str]] = {
    "shieldgemma2": {"mm_token_type_ids": "token_type_ids"},
    "qwen3_asr": {"feature_attention_mask": "input_features_mask"},
    "fun_asr_nano": {"feature_attention_mask": "input_features_mask"},
}


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


def _sliding_window(d: dict[str, Any]) -> None:
    """Step3p7 builds a sliding-window mask on every forward, but its default config leaves
    ``sliding_window`` unset (a checkpoint sets it): a window shorter than the checks' prompts."""
    d["text_config"]["sliding_window"] = 16


# type -> a fix-up of the shrunk config dict for the tiny tower's image size
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
    "voxtral": _audio_window,
}


def _glmasr(borrowed: Any) -> Any:
    """GLM-ASR's own processor (it builds offline: no image processor) around the borrowed
    Qwen2-Audio processor's Whisper features, tokenizer and template: ``input_features_mask``
    and its own audio-token count per audio."""
    from transformers import GlmAsrProcessor

    from .audio import AUDIO_TOKEN

    return GlmAsrProcessor(
        feature_extractor=borrowed.feature_extractor,
        tokenizer=borrowed.tokenizer,
        chat_template=borrowed.chat_template,
        audio_token=AUDIO_TOKEN,
    )


# type -> its stock processor class built around the borrowed processor's parts (where it
# builds offline)
def _omniasr(borrowed: Any) -> Any:
    """OmniASR's own processor (it builds offline): its waveform feature extractor
    (``input_values``, ``padding_mask``) and its count of encoder frames per audio, around the
    borrowed tokenizer, template and audio token."""
    from transformers import OmniASRFeatureExtractor, OmniASRProcessor

    from .audio import AUDIO_TOKEN

    return OmniASRProcessor(
        feature_extractor=OmniASRFeatureExtractor(),
        tokenizer=borrowed.tokenizer,
        chat_template=borrowed.chat_template,
        audio_token=AUDIO_TOKEN,
    )


STOCK_PROCESSORS: dict[str, Callable[[Any], Any]] = {"glmasr": _glmasr, "omniasr": _omniasr}


def _one(inputs: dict[str, Any], idx: int, n: int) -> dict[str, Any]:
    """Image ``idx``'s slice of a batch of ``n`` images' processor outputs."""
    import numpy as np

    out = {}
    for key, value in inputs.items():
        batched = isinstance(value, (torch.Tensor, np.ndarray, list, tuple))
        if batched and getattr(value, "ndim", 1) > 0 and len(value) == n:
            value = value[idx : idx + 1]
            value = value if isinstance(value, torch.Tensor) else torch.as_tensor(np.stack(value))
        out[key] = value
    return out


def _batch_wide(inputs: Mapping[str, Any], idx: int) -> dict[str, Any]:
    """Image ``idx``'s inputs where the batch's views lie side by side in one ``pixel_values``
    ``[1, 3, p, patches * p]`` (MiniCPM-V): its views' ``target_sizes`` rows and their patches."""
    import numpy as np

    sizes = np.asarray(inputs["target_sizes"])
    views = np.cumsum([0, *inputs["num_patches_per_image"]])
    first, last = int(views[idx]), int(views[idx + 1])
    patches = sizes.prod(-1)
    p = int(np.asarray(inputs["pixel_values"]).shape[-2])
    start, stop = int(patches[:first].sum()) * p, int(patches[:last].sum()) * p
    return {
        "pixel_values": torch.as_tensor(np.asarray(inputs["pixel_values"])[..., start:stop]),
        "target_sizes": torch.as_tensor(sizes[first:last]),
    }


class _Counting:
    """What both counting processors share: the model's per-item feature count (``counter``),
    the type's dropped outputs (:data:`DROPPED`) and renamed ones (:data:`RENAMED`)."""

    counter: Callable[[dict[str, Any]], int] | None = None
    dropped: tuple[str, ...] = ()
    renamed: dict[str, str] = {}  # noqa: RUF012 - replaced per instance, never mutated

    def count_for(self, model_type: str, counter: Callable[[dict[str, Any]], int]) -> None:
        """Count with ``counter``; drop and rename ``model_type``'s outputs as its processor does."""
        self.counter = counter
        self.dropped = DROPPED.get(model_type, ())
        self.renamed = RENAMED.get(model_type, {})

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        out = super().__call__(*args, **kwargs)  # type: ignore[misc]
        for old, new in self.renamed.items():
            if old in out:
                out[new] = out.pop(old)
        return out

    def _counted(self, one: dict[str, Any]) -> int:
        if self.counter is None:
            raise RuntimeError(f"{type(self).__name__}.counter is not set")
        return self.counter(one)


class _CountedImages(_Counting):
    """An image placeholder that expands to the feature count the model's ``get_image_features``
    gives for that image (its own inputs, as the image processor made them): the placeholder
    count matches the features by construction, whatever the image size; the zoo's
    ``features`` check then checks the forward's feature site."""

    def replace_image_token(
        self, image_inputs: Mapping[str, Any], image_idx: int, **kwargs: Any
    ) -> str:
        import numpy as np

        grid = image_inputs.get("image_grid_thw", image_inputs.get("image_grid_hw"))
        if grid is not None:  # patch-flattened pixel_values: image_idx's rows of patches
            sizes = [int(torch.as_tensor(np.asarray(g)).prod()) for g in grid]
            start = sum(sizes[:image_idx])
            patches = image_inputs["pixel_values"][start : start + sizes[image_idx]]
            one = {
                k: torch.as_tensor(np.asarray(v[image_idx : image_idx + 1]))
                for k, v in image_inputs.items()
            }
            one["pixel_values"] = torch.as_tensor(np.asarray(patches))
            return self.image_token * self._counted(one)
        if "target_sizes" in image_inputs and "num_patches_per_image" in image_inputs:
            return self.image_token * self._counted(_batch_wide(image_inputs, image_idx))
        n = len(image_inputs["pixel_values"])
        return self.image_token * self._counted(_one(dict(image_inputs), image_idx, n))


class CountingProcessor(_CountedImages, LlavaProcessor):
    """A LLaVA processor whose ``<image>`` expands to the model's feature count."""

    @property
    def unused_input_names(self) -> list[str]:
        return list(self.dropped)


class CountingGridProcessor(_CountedImages, Qwen3VLProcessor):
    """The tiny Qwen3-VL processor whose image placeholder expands to the model's feature count
    for a type whose grid gives another count than Qwen's (HunYuan-VL adds a token per merged
    row and two around the image; Inkling 2's grid is in merged units): its
    :data:`GRID_COUNTED` types."""


# qwen-vl-like types whose image token count is not Qwen's grid / merge² (counted on the model)
GRID_COUNTED = ("hunyuan_vl", "inkling2", "inkling2_loop")


class CountingAudioProcessor(_Counting, Qwen2AudioProcessor):
    """The tiny Qwen2-Audio processor whose ``<|AUDIO|>`` expands to the feature count the
    model's ``get_audio_features`` gives for that clip (its own features, as the extractor made
    them): an encoder with its own pooling or a fixed window (Voxtral: one vector per pair of
    encoder positions over the whole padded window) gets as many placeholders as it gives
    vectors; the ``features`` check then checks the forward's feature site."""

    @property
    def unused_input_names(self) -> list[str]:
        return ["num_audio_tokens", *self.dropped]

    def replace_audio_token(
        self, audio_inputs: Mapping[str, Any], audio_idx: int, **kwargs: Any
    ) -> str:
        n = len(audio_inputs["input_features"])
        one = {
            self.renamed.get(k, k): v for k, v in audio_inputs.items() if k != "num_audio_tokens"
        }
        return self.audio_token * self._counted(_one(one, audio_idx, n))


__all__ = [
    "CONFIG_FIXES",
    "CountingAudioProcessor",
    "DROPPED",
    "RENAMED",
    "IMAGE_PROCESSORS",
    "IMAGE_SIZE",
    "CountingProcessor",
]
