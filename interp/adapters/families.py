"""The built-in adapter entries: one :class:`~interp.adapters.Adapter` per supported family.

Each entry holds what the inference rules of :mod:`interp.adapters.infer` cannot see for its family
(a pixel or token layout verified against the stock processor, a prompt quirk, a batching limit,
a differently named feature site); :mod:`interp.adapters` registers them on import. A new
architecture is a few lines here, or a :func:`~interp.register_adapter` call in user code.
"""

from __future__ import annotations

from typing import Any

from .. import region_layouts as rl
from ..errors import UnsupportedArchitectureError
from ..prompts import chat_prompt
from ..samples import IMAGE_SLOT
from .base import Adapter
from .registry import register_adapter, register_variant


def _prefix_prompt(processor: Any, question: str, n_images: int | bool) -> str:
    """PaliGemma has no chat markup: the prompt is the question (the processor adds image tokens and
    BOS); a processor that does carry a chat template uses it."""
    if getattr(processor, "chat_template", None):
        return chat_prompt(processor, question, n_images)
    return " ".join(p.strip() for p in question.split(IMAGE_SLOT) if p.strip())


def _mask_positions(inputs: dict[str, Any]) -> dict[str, Any]:
    """Positions counted over attended tokens only, as ``generate`` derives them."""
    if "position_ids" in inputs or "attention_mask" not in inputs:
        return inputs
    mask = inputs["attention_mask"]
    return {**inputs, "position_ids": (mask.cumsum(-1) - 1).clamp(min=0)}


_LLAVA_ANYRES = (
    "the projector output is per crop; the model then unpads it and appends image_newline, so the "
    "vectors at image-token positions are layers[0].input there, not the projector output itself"
)
_QWEN_VISUAL = (
    "image_features is the vision model; its output's pooler_output holds the merged image features "
    "in placement order"
)

_QWEN_OMNI_AUDIO = (
    "audio_features is the audio encoder; its last_hidden_state holds every audio's features, "
    "flat, in placement order; video_features is the vision model (shared with images)"
)

for _adapter in (
    Adapter(
        layout_verified=True,
        name="llava",
        layer_resume=True,
        prefix_sharing=True,
        model_types=("llava",),
        image_features="model.multi_modal_projector",
        token_layout=rl.llava_layout,
    ),
    Adapter(
        layout_verified=True,
        name="llava_next",
        layer_resume=True,
        prefix_sharing=True,
        token_layout=rl.anyres_layout,
        model_types=("llava_next",),
        image_features="model.multi_modal_projector",
        notes=_LLAVA_ANYRES,
    ),
    Adapter(
        layout_verified=True,
        name="llava_onevision",
        layer_resume=True,
        prefix_sharing=True,
        stacked_videos=True,
        # nested per row, as apply_chat_template passes them: a row of several images then gets
        # the base view of each (the image processor's multi-image rule), not any-res tiles
        images_per_row=True,
        token_layout=rl.anyres_layout,
        model_types=("llava_onevision",),
        image_features="model.multi_modal_projector",
        notes=_LLAVA_ANYRES + "; video frames pass the same projector [frames, patches, d], then "
        "2x2 bilinear pooling and one image_newline per video (outside any module)",
        modalities=("image", "video"),
        video_features="model.multi_modal_projector",
    ),
    Adapter(
        layout_verified=True,
        name="qwen2_vl",
        layer_resume=True,
        prefix_sharing=True,
        token_layout=rl.qwen_layout,
        model_types=("qwen2_vl",),
        image_features="model.visual",
        pixel_layout="patches",
        notes=_QWEN_VISUAL,
        modalities=("image", "video"),
        video_features="model.visual",
    ),
    Adapter(
        layout_verified=True,
        name="qwen2_5_vl",
        layer_resume=True,
        prefix_sharing=True,
        token_layout=rl.qwen_layout,
        model_types=("qwen2_5_vl",),
        image_features="model.visual",
        pixel_layout="patches",
        notes=_QWEN_VISUAL,
        modalities=("image", "video"),
        video_features="model.visual",
    ),
    Adapter(
        layout_verified=True,
        name="qwen3_vl",
        prefix_sharing=True,
        token_layout=rl.qwen_layout,
        model_types=("qwen3_vl",),
        image_features="model.visual",
        pixel_layout="patches",
        notes=_QWEN_VISUAL + "; DeepStack also adds image features to the residual stream after "
        "early decoder layers (outside the layer modules), at image and video positions; a video "
        "expands to one '<t seconds><|vision_start|>...<|vision_end|>' run per temporal patch",
        modalities=("image", "video"),
        video_features="model.visual",
    ),
    Adapter(
        layout_verified=True,
        name="qwen2_audio",
        model_types=("qwen2_audio",),
        image_features="",
        modalities=("audio",),
        audio_features="model.multi_modal_projector",
        notes="audio-language model: the audio features are the projector output "
        "[audios, max tokens, d], padded past each audio's token count; the processor expands "
        "<|AUDIO|> to one token per feature vector (25 per second of audio)",
    ),
    Adapter(
        layout_verified=True,
        name="qwen2_5_omni_thinker",
        layer_resume=True,
        prefix_sharing=True,
        token_layout=rl.qwen_layout,
        model_types=("qwen2_5_omni_thinker",),
        image_features="model.visual",
        pixel_layout="patches",
        notes=_QWEN_VISUAL + "; " + _QWEN_OMNI_AUDIO,
        modalities=("image", "audio", "video"),
        audio_features="model.audio_tower",
        video_features="model.visual",
    ),
    Adapter(
        layout_verified=True,
        name="qwen3_omni_moe_thinker",
        prefix_sharing=True,
        token_layout=rl.qwen_layout,
        model_types=("qwen3_omni_moe_thinker",),
        image_features="model.visual",
        pixel_layout="patches",
        notes=_QWEN_VISUAL + "; DeepStack also adds image features to the residual stream after "
        "early decoder layers (outside the layer modules), at image and video positions; "
        + _QWEN_OMNI_AUDIO
        + "; the audio encoder pads each clip's last 1 s chunk to the batch's longest chunk and its "
        "convolutions see that padding, so a row's audio features depend slightly on the other "
        "clips in its batch (HF's behaviour; rows without audio are unaffected)",
        modalities=("image", "audio", "video"),
        audio_features="model.audio_tower",
        video_features="model.visual",
    ),
    Adapter(
        layout_verified=True,
        name="gemma4",
        prefix_sharing=True,
        token_layout=rl.gemma4_layout,
        model_types=("gemma4",),
        image_features="model.embed_vision",
        images_per_row=True,
        embeddings_kwarg="inputs_embeds",
        forward_inputs=_mask_positions,
        notes="single forwards get mask-derived position_ids, as generate derives them (the plain "
        "forward counts padding); residual index 0 is the decoder's inputs_embeds, from which Gemma 4 also projects "
        "its per-layer inputs; image_features (embed_vision) also projects video frames; the audio features are "
        "embed_audio's output at its valid (unpadded) positions, [clips, max tokens, d]; a video "
        "expands to one 'mm:ss <|image>...<image|>' run of <|video|> tokens per frame, its "
        "features embed_vision's output (flat, real tokens only)",
        modalities=("image", "audio", "video"),
        audio_features="model.embed_audio",
        video_features="model.embed_vision",
    ),
    Adapter(
        layout_verified=True,
        name="llava_next_video",
        layer_resume=True,
        prefix_sharing=True,
        stacked_videos=True,
        token_layout=rl.anyres_layout,
        model_types=("llava_next_video",),
        image_features="model.multi_modal_projector",
        notes=_LLAVA_ANYRES + "; video frames pass the same projector after 2x2 pooling",
        modalities=("image", "video"),
        video_features="model.multi_modal_projector",
    ),
    Adapter(
        layout_verified=True,
        name="internvl",
        layer_resume=True,
        prefix_sharing=True,
        stacked_videos=True,
        token_layout=rl.internvl_layout,
        model_types=("internvl",),
        image_features="model.multi_modal_projector",
        pixel_layout="tiles",
        notes="a video's frames are image tiles: the processor writes 'Frame<i>: <img>"
        "<IMG_CONTEXT>...</img>' per frame, and the projector's output [tiles and frames, tokens, "
        "d] holds images and frames in placement order; video positions are told from image "
        "positions by the processor's replacement offsets (a fast tokenizer is needed)",
        modalities=("image", "video"),
        video_features="model.multi_modal_projector",
        video_token_attrs=("image_token_id",),
        video_in_image_tokens=True,
    ),
    Adapter(
        layout_verified=True,
        name="idefics3",
        layer_resume=True,
        prefix_sharing=True,
        token_layout=rl.idefics3_layout,
        model_types=("idefics3", "smolvlm"),
        image_features="model.connector",
        images_per_row=True,
        pixel_layout="rows",
    ),
    Adapter(
        layout_verified=True,
        name="gemma3",
        layer_resume=True,
        prefix_sharing=True,
        token_layout=rl.gemma3_layout,
        model_types=("gemma3",),
        image_features="model.multi_modal_projector",
        images_per_row=True,
    ),
    Adapter(
        layout_verified=True,
        name="paligemma",
        layer_resume=True,
        token_layout=rl.llava_layout,
        model_types=("paligemma",),
        image_features="model.multi_modal_projector",
        build_prompt=_prefix_prompt,
        target_fields={"token_type_ids": 1},
        blind_by_stripping=True,
        notes="the prompt is a bidirectional prefix; teacher-forced answers are marked as suffix "
        "(token_type_ids = 1) so they do not leak into the prefix; the stock processor needs an "
        "image, so a blind prompt is the image prompt with its image tokens removed",
    ),
    Adapter(
        layout_verified=True,
        name="mllama",
        prefix_sharing=True,
        no_layout="the image reaches the text through cross-attention layers; the sequence "
        "holds one <|image|> marker, no image tokens",
        model_types=("mllama",),
        image_features="model.multi_modal_projector",
        fusion="cross_attention",
        images_per_row=True,
        mixed_batches=False,
        pixel_layout="cross_tiles",
        cross_attention_layers_attr="cross_attention_layers",
        notes="cross-attention fusion: image_token_mask marks the single <|image|> token; a text-only "
        "batch skips the cross-attention layers, so blind rows are never batched with image rows "
        "(blind rows batched with image rows would run those layers and differ)",
    ),
    Adapter(
        layout_verified=True,
        name="instructblip",
        layer_resume=True,
        no_layout="the image tokens are Q-Former query tokens, each attending to the whole image",
        model_types=("instructblip",),
        image_features="language_projection",
        mixed_batches=False,
        text_only_module="language_model",
        forward_inputs=_mask_positions,
        notes="Q-Former fusion: the processor prepends the query tokens before left padding, so single "
        "forwards get mask-derived position_ids; text-only batches run the language model alone",
    ),
    Adapter(
        layout_verified=True,
        name="blip2",
        no_layout="the image tokens are Q-Former query tokens, each attending to the whole image",
        model_types=("blip-2",),
        image_features="language_projection",
        decoder_path="language_model.model.decoder",
        mixed_batches=False,
        text_only_module="language_model",
        notes="Q-Former fusion: the processor prepends the query tokens before left padding; the "
        "OPT decoder counts its positions over attended tokens itself; text-only batches run the "
        "language model alone (the full forward needs pixels)",
    ),
    # families needing one fix the inference rules cannot see; their layouts are not verified
    Adapter(
        name="fuyu",
        model_types=("fuyu",),
        image_features="model.vision_embed_tokens",
        mixed_batches=False,
        forward_inputs=_mask_positions,
        pixel_input="image_patches",  # the patches, flattened: no pixel_values
        pixel_layout="token_patches",
        notes="no vision tower: each image patch, flattened, goes through one linear projection "
        "(vision_embed_tokens), whose output is placed at the |SPEAKER| tokens; the processor "
        "writes them as a row-major grid, each row closed by a |NEWLINE| token (a vocabulary "
        "embedding), and pads on the left, so single forwards get mask-derived position_ids, as "
        "generate derives them; its processor pairs the texts with a flat image list, so rows with "
        "and without an image run apart; the grid's place in the image is checked at load "
        "(fuyu_layout)",
    ),
    Adapter(
        name="ovis2",
        model_types=("ovis2",),
        image_features="model.visual_embeddings_table",
        notes="visual vocabulary: the visual tokenizer (vision_tower) gives each visual token a "
        "probability over a visual vocabulary, and image_features, the visual embedding table, "
        "weights its rows by them: its first call's output [crops, tokens, d] holds the vectors "
        "placed at <IMG_ATOM> tokens; it runs again on the indicator ids, whose rows are placed at "
        "the <IMG_START> / <IMG_GRID> / <IMG_COL> / <IMG_ROW> / <IMG_END> tokens (outside the "
        "image positions); the layout of a tiled image's crops is not verified",
    ),
    Adapter(
        name="lfm2_vl",
        model_types=("lfm2_vl", "lfm3_vl"),
        image_features="model.multi_modal_projector",
        norm_attr="embedding_norm",
        notes="LFM2's final norm is named embedding_norm (applied after the last layer)",
    ),
    Adapter(
        name="idefics2",
        model_types=("idefics2",),
        image_features="model.connector",
        images_per_row=True,
        pixel_layout="rows",
        notes="the image processor lays a flat image list out as one row of every image: images "
        "go nested per row, pixel_values are [rows, images, ...] (padding images all zero), as "
        "Idefics3's",
    ),
    Adapter(
        name="granite_docling",
        model_types=("granite_docling",),
        image_features="model.vision_model",
        images_per_row=True,
        pixel_layout="rows",
        notes="as Idefics2's, the image processor lays a flat image list out as one row of pages: "
        "images go nested per row, pixel_values are [rows, tiles, ...] with pixel_attention_mask "
        "marking real tiles; image_features is the vision model, whose connector projects into "
        "the decoder (its pooler_output, one tensor per row); its DeepStack features are added "
        "to the residual stream after early decoder layers (outside the layer modules)",
    ),
    Adapter(
        name="nemotron_h_omni",
        model_types=("nemotron_h_omni",),
        image_features="multi_modal_projector",
        decoder_path="language_model.model",
        head_path="language_model.lm_head",
        pixel_layout="patches",
        modalities=("image", "video"),
        video_features="multi_modal_projector",
        notes="the hybrid Mamba-attention decoder sits inside a causal LM (language_model.model, "
        "final norm norm_f, head language_model.lm_head), beside the RADIO vision model and the "
        "projector, which takes the pixel-shuffled image patches (flat, with image_grid_hw) and "
        "video tubelets alike; the audio branch of checkpoints with an audio_config "
        "(embed_audio) is not mapped",
    ),
    Adapter(
        name="hunyuan_vl",
        model_types=("hunyuan_vl",),
        image_features="model.vision_tower",
        pixel_layout="patches",
        batch_dependent="its rotary image index counts the images of the whole batch, so a row's "
        "positions depend on the rows before it",
        notes="HunYuan-VL's get_rope_index numbers images across the batch's rows (a row's image "
        "is index k after k images in earlier rows): each row runs alone; its merged image rows "
        "carry one token more and the image two around it",
    ),
    Adapter(
        name="llama4",
        model_types=("llama4",),
        image_features="multi_modal_projector",
        decoder_path="language_model.model",
        notes="the decoder sits inside a causal LM (language_model.model), which get_decoder "
        "returns whole",
    ),
):
    register_adapter(_adapter)


def _llava_tower(config: Any, entry: Adapter) -> Adapter:
    """A ``llava`` config with a Pixtral vision tower (Pixtral / Mistral-style checkpoints saved as
    ``llava``): the processor is Pixtral's (variable image sizes, ``[IMG_BREAK]`` per row), not
    the fixed grid ``llava_layout`` assumes, so the layouts are not the entry's."""
    vision = getattr(getattr(config, "vision_config", None), "model_type", None)
    if vision != "pixtral":
        return entry
    return entry.replace(
        name="llava (pixtral tower)",
        token_layout=None,
        layout_verified=False,
        notes="a llava config with a Pixtral vision tower: image tokens follow Pixtral's "
        "variable grid with [IMG_BREAK] rows, not llava's fixed grid; layout-dependent "
        "features are refused",
    )


register_variant("llava", _llava_tower)


def _blip2_decoder(config: Any, entry: Adapter) -> Adapter:
    """BLIP-2 checkpoints with a Flan-T5 language model (``Salesforce/blip2-flan-t5-*``) are
    encoder-decoders, which the library does not read: refused here, before any module path."""
    text = getattr(config, "text_config", None)
    if getattr(text, "is_encoder_decoder", False):
        raise UnsupportedArchitectureError(
            f"a BLIP-2 config whose language model is an encoder-decoder "
            f"({getattr(text, 'model_type', '?')}): the library reads decoder-only models "
            "(the OPT checkpoints of BLIP-2 load)"
        )
    return entry


register_variant("blip-2", _blip2_decoder)
