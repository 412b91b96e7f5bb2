"""Tiny random Qwen omni-modal thinkers: Qwen2.5-Omni and Qwen3-Omni-MoE (the text-generating
"thinker"; the speech "talker" is not built).

Each builder returns ``(model, processor)``: the real ``...ThinkerForConditionalGeneration`` in fp32
and eval mode, deterministic from ``seed``, and the stock processor class (``Qwen2_5OmniProcessor``
/ ``Qwen3OmniMoeProcessor``) built offline around the tiny tokenizer, a
``Qwen2VLImageProcessorPil``, a ``WhisperFeatureExtractor`` (16 kHz, 32 mel bins, 2 s clips) and a
``Qwen2VLVideoProcessor`` where torchvision imports (Qwen2-VL's torchvision-free
:class:`~interp.demo.omni.processors.FramesVideoProcessor` otherwise: the Qwen-Omni vision model
takes Qwen2-VL's patch layout).

Placeholders, as the checkpoints' chat templates write them and the processor expands them:

- image: ``<|vision_bos|><|IMAGE|><|vision_eos|>``; ``<|IMAGE|>`` becomes one token per merged 2x2
  patch group (4 for a 32x32 image, at most 16), as in Qwen2.5-VL;
- audio: ``<|audio_bos|><|AUDIO|><|audio_eos|>``; ``<|AUDIO|>`` becomes one token per 40 ms of
  (padded) audio for Qwen2.5-Omni (25 for 1 s), per Qwen3-Omni's chunked count for Qwen3-Omni;
- video: ``<|vision_bos|><|VIDEO|><|vision_eos|>``; ``<|VIDEO|>`` becomes one token per merged
  patch group per 2 frames.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import (
    PreTrainedTokenizerBase,
    PreTrainedTokenizerFast,
    Qwen2_5OmniProcessor,
    Qwen2_5OmniThinkerConfig,
    Qwen2_5OmniThinkerForConditionalGeneration,
    Qwen3OmniMoeProcessor,
    Qwen3OmniMoeThinkerConfig,
    Qwen3OmniMoeThinkerForConditionalGeneration,
)

from ..tokenizer import tiny_tokenizer
from .common import HEAD_DIM, INIT_STD, TEXT_HIDDEN, VISION_HIDDEN, finish, text_kwargs
from .omni_common import (
    MEL_BINS,
    has_video_processor,
    omni_chat_template,
    omni_processor,
    whisper_features,
)
from .qwen_vl import (
    MERGE_SIZE,
    MROPE_SECTION,
    PATCH_SIZE,
    FramesVideoProcessor,
    qwen_vl_image_processor,
)

NAMED_TOKENS = {
    "image_token": "<|IMAGE|>",
    "audio_token": "<|AUDIO|>",
    "video_token": "<|VIDEO|>",
    "vision_bos_token": "<|vision_bos|>",
    "vision_eos_token": "<|vision_eos|>",
    "audio_bos_token": "<|audio_bos|>",
    "audio_eos_token": "<|audio_eos|>",
}
IMAGE_PLACEHOLDER = "<|vision_bos|><|IMAGE|><|vision_eos|>"
AUDIO_PLACEHOLDER = "<|audio_bos|><|AUDIO|><|audio_eos|>"
VIDEO_PLACEHOLDER = "<|vision_bos|><|VIDEO|><|vision_eos|>"
# The checkpoints' templates add a default system turn; Qwen2.5-Omni's speaks of a virtual human.
SYSTEM_PROMPT = "you are a helpful assistant ."


def omni_tokenizer() -> PreTrainedTokenizerFast:
    """The tiny tokenizer with the Qwen-Omni named tokens and the omni chat template."""
    tok = tiny_tokenizer(extra_special_tokens=dict(NAMED_TOKENS))
    tok.chat_template = omni_chat_template(
        IMAGE_PLACEHOLDER, AUDIO_PLACEHOLDER, VIDEO_PLACEHOLDER, SYSTEM_PROMPT
    )
    return tok


def _ids(tok: PreTrainedTokenizerBase) -> dict[str, int]:
    return {name: tok.convert_tokens_to_ids(token) for name, token in NAMED_TOKENS.items()}


def _video_processor(patch_size: int) -> Any:
    from transformers import Qwen2VLVideoProcessor

    return Qwen2VLVideoProcessor(
        patch_size=patch_size,
        merge_size=MERGE_SIZE,
        temporal_patch_size=2,
        min_pixels=(patch_size * MERGE_SIZE) ** 2,
        max_pixels=64 * 64,
    )


def _small_videos(processor: Any) -> Any:
    """Scale the processor's own video size default (128 to 768 merge units of 28 px per frame,
    which overrides the video processor's settings at call time) down to the tiny 16 px units, at
    most 64x64 px per frame. Without torchvision, frames go through the image processor
    (:class:`FramesVideoProcessor`), whose own pixel bounds apply."""
    if not has_video_processor(processor):
        processor.video_processor = FramesVideoProcessor(processor.image_processor)
    unit = (PATCH_SIZE * MERGE_SIZE) ** 2
    processor.videos_kwargs = {"size": {"shortest_edge": unit, "longest_edge": 64 * 64}}
    return processor


def _vision(patch_size: int) -> dict[str, Any]:
    return {
        "depth": 2,
        "hidden_size": VISION_HIDDEN,
        "intermediate_size": 2 * VISION_HIDDEN,
        "num_heads": 2,
        "in_channels": 3,
        "patch_size": patch_size,
        "spatial_merge_size": MERGE_SIZE,
        "temporal_patch_size": 2,
        "out_hidden_size": TEXT_HIDDEN,
        "initializer_range": INIT_STD,
    }


def _audio(**extra: Any) -> dict[str, Any]:
    return {
        "num_mel_bins": MEL_BINS,
        "encoder_layers": 2,
        "encoder_attention_heads": 2,
        "encoder_ffn_dim": 2 * VISION_HIDDEN,
        "d_model": VISION_HIDDEN,
        "output_dim": TEXT_HIDDEN,
        "initializer_range": INIT_STD,
        **extra,
    }


def _rope(interleaved: bool = False) -> dict[str, Any]:
    rope: dict[str, Any] = {
        "rope_type": "default",
        "rope_theta": 10000.0,
        "mrope_section": list(MROPE_SECTION),
    }
    if interleaved:
        rope["mrope_interleaved"] = True
    return rope


def _build(
    model_cls: Any,
    processor_cls: Any,
    config: Any,
    tok: PreTrainedTokenizerBase,
    seed: int,
    attn_implementation: str,
    chat_template: str | None,
) -> tuple[Any, Any]:
    """Seeded fp32 construction (``architectures`` set before it) and the stock processor with
    the Qwen-VL image processor, the Whisper feature extractor and the frames video processor."""
    config.architectures = [model_cls.__name__]
    torch.manual_seed(seed)
    model = model_cls._from_config(
        config, attn_implementation=attn_implementation, dtype=torch.float32
    )
    processor = omni_processor(
        processor_cls,
        lambda: _video_processor(PATCH_SIZE),
        image_processor=qwen_vl_image_processor(),
        feature_extractor=whisper_features(),
        tokenizer=tok,
        chat_template=chat_template or tok.chat_template,
    )
    return finish(model, tok, attn_implementation), _small_videos(processor)


def build_qwen2_5_omni_thinker(
    seed: int = 0,
    attn_implementation: str = "eager",
    *,
    tokenizer: PreTrainedTokenizerBase | None = None,
    chat_template: str | None = None,
) -> tuple[Qwen2_5OmniThinkerForConditionalGeneration, Qwen2_5OmniProcessor]:
    """Qwen2.5-Omni thinker: Qwen2.5-VL-style windowed ViT + Whisper-style audio encoder (2 layers,
    width 32, 2x average pooling) into a 3-layer M-RoPE decoder."""
    tok = tokenizer or omni_tokenizer()
    ids = _ids(tok)
    config = Qwen2_5OmniThinkerConfig(
        text_config=text_kwargs(tok, rope_parameters=_rope()),
        vision_config={
            **_vision(PATCH_SIZE),
            "window_size": 2 * PATCH_SIZE * MERGE_SIZE,
            "fullatt_block_indexes": [1],
        },
        # chunks of 2 * n_window mel frames; positions up to max_source_positions per chunk
        audio_config=_audio(n_window=10, max_source_positions=100),
        audio_token_index=ids["audio_token"],
        image_token_index=ids["image_token"],
        video_token_index=ids["video_token"],
        audio_start_token_id=ids["audio_bos_token"],
        audio_end_token_id=ids["audio_eos_token"],
        vision_start_token_id=ids["vision_bos_token"],
        vision_end_token_id=ids["vision_eos_token"],
        initializer_range=INIT_STD,
    )
    return _build(
        Qwen2_5OmniThinkerForConditionalGeneration,
        Qwen2_5OmniProcessor,
        config,
        tok,
        seed,
        attn_implementation,
        chat_template,
    )


def build_qwen3_omni_moe_thinker(
    seed: int = 0,
    attn_implementation: str = "eager",
    *,
    tokenizer: PreTrainedTokenizerBase | None = None,
    chat_template: str | None = None,
) -> tuple[Qwen3OmniMoeThinkerForConditionalGeneration, Qwen3OmniMoeProcessor]:
    """Qwen3-Omni-MoE thinker: Qwen3-VL-style ViT with one DeepStack feature (after decoder layer
    0) + audio encoder with a conv downsampler, into a 3-layer mixture-of-experts decoder (4
    experts, 2 per token) with interleaved M-RoPE."""
    tok = tokenizer or omni_tokenizer()
    ids = _ids(tok)
    config = Qwen3OmniMoeThinkerConfig(
        text_config=text_kwargs(
            tok,
            head_dim=HEAD_DIM,
            rope_parameters=_rope(interleaved=True),
            moe_intermediate_size=TEXT_HIDDEN,
            num_experts=4,
            num_experts_per_tok=2,
        ),
        vision_config={
            **_vision(PATCH_SIZE),
            "num_position_embeddings": 16,
            "deepstack_visual_indexes": [0],
        },
        # the processor counts audio tokens with its own n_window (50, the checkpoint's)
        audio_config=_audio(
            n_window=50,
            n_window_infer=100,
            max_source_positions=100,
            downsample_hidden_size=16,
            conv_chunksize=50,
        ),
        audio_token_id=ids["audio_token"],
        image_token_id=ids["image_token"],
        video_token_id=ids["video_token"],
        audio_start_token_id=ids["audio_bos_token"],
        vision_start_token_id=ids["vision_bos_token"],
        initializer_range=INIT_STD,
    )
    return _build(
        Qwen3OmniMoeThinkerForConditionalGeneration,
        Qwen3OmniMoeProcessor,
        config,
        tok,
        seed,
        attn_implementation,
        chat_template,
    )


# The full checkpoint's speech parts, as small as their classes build (they are saved, never loaded).
_TALKER = {
    "vocab_size": 64,
    "embedding_size": TEXT_HIDDEN,
    "hidden_size": TEXT_HIDDEN,
    "intermediate_size": TEXT_HIDDEN,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "head_dim": TEXT_HIDDEN // 2,
    "rope_parameters": _rope(),
}
_TOKEN2WAV = {
    "dit_config": {
        "hidden_size": 32,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "ff_mult": 1,
        "emb_dim": 16,
        "head_dim": 16,
        "enc_emb_dim": 16,
        "enc_dim": 16,
        "enc_channels": [16, 16, 16, 16, 32],
        "enc_attention_channels": 8,
        "enc_res2net_scale": 2,
        "enc_se_channels": 8,
        "mel_dim": 16,
        "repeats": 1,
        "num_embeds": 64,
    },
    "bigvgan_config": {
        "mel_dim": 16,
        "upsample_initial_channel": 16,
        "resblock_kernel_sizes": [3],
        "resblock_dilation_sizes": [[1, 3, 5]],
        "upsample_rates": [2],
        "upsample_kernel_sizes": [4],
    },
}


def save_qwen2_5_omni_checkpoint(folder: Any, seed: int = 0) -> Any:
    """Save a tiny *full* Qwen2.5-Omni checkpoint (``model_type='qwen2_5_omni'``: thinker, talker
    and token2wav, as every ``Qwen/Qwen2.5-Omni-*`` folder holds them) with its processor to
    ``folder``; its thinker is :func:`build_qwen2_5_omni_thinker`'s of the same ``seed``. Returns
    the full model."""
    from transformers import Qwen2_5OmniConfig, Qwen2_5OmniForConditionalGeneration

    from ...demo.omni.model import save_processor

    thinker, processor = build_qwen2_5_omni_thinker(seed=seed)
    config = Qwen2_5OmniConfig(
        thinker_config=thinker.config.to_dict(), talker_config=_TALKER, token2wav_config=_TOKEN2WAV
    )
    config.architectures = [Qwen2_5OmniForConditionalGeneration.__name__]
    full = Qwen2_5OmniForConditionalGeneration(config).eval()
    full.thinker.load_state_dict(thinker.state_dict())
    full.save_pretrained(str(folder))
    save_processor(processor, folder)
    return full


__all__ = [
    "AUDIO_PLACEHOLDER",
    "IMAGE_PLACEHOLDER",
    "VIDEO_PLACEHOLDER",
    "build_qwen2_5_omni_thinker",
    "build_qwen3_omni_moe_thinker",
    "omni_tokenizer",
    "save_qwen2_5_omni_checkpoint",
]
