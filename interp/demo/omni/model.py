"""Architecture, tokenizer and processor of ``demo-omni`` (built offline from config classes).

The model is a standard ``Qwen2_5OmniThinkerForConditionalGeneration`` (the text-generating
"thinker" of Qwen2.5-Omni; no speech "talker"): a Qwen2.5-VL-style ViT (patch 4, 2x2 merge: 16
tokens per 32x32 world image, two frames per temporal patch for videos), a Whisper-style audio
encoder, and a Qwen2 decoder with M-RoPE. Qwen2.5-Omni is the family whose stock processor,
``Qwen2_5OmniProcessor``, takes images, audio and videos here: its video processor needs
torchvision, which this project's CPU install lacks, so videos go through the torchvision-free
:class:`~interp.demo.omni.processors.FramesVideoProcessor` (frames through the stock image
processor, paired into temporal patches; compared with the stock video processor in
``docs/omni_families.md``). Gemma 4's video path is not wired (its video processor does not
import without torchvision).

Audio: the stock ``WhisperFeatureExtractor`` with 32 mel bins, a 20 ms hop (``hop_length=320``)
and 2 s clips (``chunk_length=2``), not Whisper's 30 s at 10 ms, so the processor pads every clip
to 100 mel frames (not 3000) and writes one ``<|AUDIO|>`` token per 80 ms of real audio
(8 for a 0.6 s sound, 24 for a 1.9 s sentence). The world's clips are 0.6-1.9 s.

The tokenizer is the demo model's word-level one over the world-v3 vocabulary
(``world_vocabulary(v3=True)``) plus the Qwen-Omni markup tokens; its chat template writes
``<|vision_bos|><|IMAGE|><|vision_eos|>``, ``<|audio_bos|><|AUDIO|><|audio_eos|>`` and
``<|vision_bos|><|VIDEO|><|vision_eos|>`` for image, audio and video items and has no system turn.

The saved folder cannot be read by ``AutoProcessor`` without torchvision (the processor needs a
video processor); :func:`load_processor` rebuilds it from the saved tokenizer, image processor
and feature extractor, and :func:`interp.load` uses it for such folders.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import (
    PreTrainedTokenizerFast,
    Qwen2_5OmniProcessor,
    Qwen2_5OmniThinkerConfig,
    Qwen2_5OmniThinkerForConditionalGeneration,
    WhisperFeatureExtractor,
)
from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

from ...datasets.render import IMAGE_SIZE
from ...datasets.world import world_vocabulary
from ...prompts import chat_content
from ...samples import Sample
from ..model import (
    IM_END,
    IM_START,
    LAST_PROMPT_TOKEN,
    PAD,
    ROLE_WORDS,
    UNK,
    greedy_generation,
    word_level_tokenizer,
)
from .processors import FramesVideoProcessor, omni_chat_template, processor_without_video

IMAGE, AUDIO, VIDEO = "<|IMAGE|>", "<|AUDIO|>", "<|VIDEO|>"
VISION_BOS, VISION_EOS, AUDIO_BOS, AUDIO_EOS = (
    "<|vision_bos|>",
    "<|vision_eos|>",
    "<|audio_bos|>",
    "<|audio_eos|>",
)
NAMED_TOKENS: dict[str, str] = {
    "image_token": IMAGE,
    "audio_token": AUDIO,
    "video_token": VIDEO,
    "vision_bos_token": VISION_BOS,
    "vision_eos_token": VISION_EOS,
    "audio_bos_token": AUDIO_BOS,
    "audio_eos_token": AUDIO_EOS,
}
SPECIAL_TOKENS: tuple[str, ...] = (PAD, UNK, IM_START, IM_END, *NAMED_TOKENS.values())
IMAGE_PLACEHOLDER = VISION_BOS + IMAGE + VISION_EOS
AUDIO_PLACEHOLDER = AUDIO_BOS + AUDIO + AUDIO_EOS
VIDEO_PLACEHOLDER = VISION_BOS + VIDEO + VISION_EOS

IMAGE_MEAN = (0.5, 0.5, 0.5)
IMAGE_STD = (0.5, 0.5, 0.5)
SAMPLING_RATE = 16000
MEL_BINS = 32
HOP_LENGTH = 320  # 20 ms mel frames: 4 frames per audio token
AUDIO_SECONDS = 2  # every world clip is shorter; the extractor pads to this
MERGE_SIZE = 2
TEMPORAL_PATCH = 2


@dataclass(frozen=True)
class OmniModelConfig:
    """Sizes of ``demo-omni``. ``patch_size * 2`` must divide the world's image size."""

    patch_size: int = 4
    vision_hidden: int = 128
    vision_layers: int = 3
    vision_heads: int = 4
    audio_hidden: int = 128
    audio_layers: int = 3
    audio_heads: int = 4
    hidden: int = 128
    layers: int = 12
    heads: int = 4
    mlp: int = 256
    max_positions: int = 256

    @property
    def image_tokens(self) -> int:
        return (IMAGE_SIZE // (self.patch_size * MERGE_SIZE)) ** 2

    @property
    def mrope_section(self) -> list[int]:
        """Temporal, height, width shares of the rotary half-dimension (sums to head_dim / 2)."""
        half = self.hidden // self.heads // 2
        t = half // 4
        h = (half - t) // 2
        return [t, h, half - t - h]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def build_tokenizer() -> PreTrainedTokenizerFast:
    """The demo model's word-level tokenizer (:func:`~interp.demo.model.word_level_tokenizer`) over
    the world-v3 vocabulary, with the Qwen-Omni markup tokens (matched whole, before punctuation
    splitting) and the omni chat template."""
    return word_level_tokenizer(
        [*SPECIAL_TOKENS, *ROLE_WORDS, *world_vocabulary(v3=True)],
        SPECIAL_TOKENS,
        NAMED_TOKENS,
        omni_chat_template(IMAGE_PLACEHOLDER, AUDIO_PLACEHOLDER, VIDEO_PLACEHOLDER),
    )


def image_processor(cfg: OmniModelConfig | None = None) -> Qwen2VLImageProcessorPil:
    """The stock PIL Qwen2-VL image processor at the world's image size (no resizing)."""
    cfg = cfg or OmniModelConfig()
    unit = cfg.patch_size * MERGE_SIZE
    return Qwen2VLImageProcessorPil(
        patch_size=cfg.patch_size,
        merge_size=MERGE_SIZE,
        temporal_patch_size=TEMPORAL_PATCH,
        min_pixels=unit * unit,
        max_pixels=IMAGE_SIZE * IMAGE_SIZE,
        image_mean=list(IMAGE_MEAN),
        image_std=list(IMAGE_STD),
    )


def feature_extractor() -> WhisperFeatureExtractor:
    """The stock Whisper log-mel front end, set for short clips (see the module docstring)."""
    return WhisperFeatureExtractor(
        feature_size=MEL_BINS,
        sampling_rate=SAMPLING_RATE,
        hop_length=HOP_LENGTH,
        n_fft=2 * HOP_LENGTH,
        chunk_length=AUDIO_SECONDS,
        return_attention_mask=True,
    )


def assemble_processor(
    tokenizer: PreTrainedTokenizerFast,
    images: Qwen2VLImageProcessorPil,
    features: WhisperFeatureExtractor,
) -> Qwen2_5OmniProcessor:
    """The stock ``Qwen2_5OmniProcessor`` around the parts, with the frames video processor
    (torchvision-free) and per-frame video sizes bounded by the world's frame size."""
    processor = processor_without_video(
        Qwen2_5OmniProcessor,
        image_processor=images,
        feature_extractor=features,
        tokenizer=tokenizer,
        chat_template=tokenizer.chat_template,
    )
    processor.video_processor = FramesVideoProcessor(images)
    unit = (images.patch_size * images.merge_size) ** 2
    # the class default (128-768 units of 28 px) would override the image processor's bounds
    processor.videos_kwargs = {
        "size": {"shortest_edge": unit, "longest_edge": IMAGE_SIZE * IMAGE_SIZE}
    }
    return processor


def build_processor(cfg: OmniModelConfig | None = None) -> Qwen2_5OmniProcessor:
    """``demo-omni``'s processor (see :func:`assemble_processor`)."""
    return assemble_processor(build_tokenizer(), image_processor(cfg), feature_extractor())


PROCESSOR_FILE = "processor_config.json"


def save_processor(processor: Qwen2_5OmniProcessor, out: str | Path) -> None:
    """``processor.save_pretrained(out)`` without the frames video processor (not a stock class,
    nothing of its own to save: the image processor's settings define it)."""
    to_dict = processor.to_dict
    processor.to_dict = lambda: {  # type: ignore[method-assign]
        k: v for k, v in to_dict().items() if k != "video_processor"
    }
    try:
        processor.save_pretrained(str(out))
    finally:
        del processor.to_dict


def is_frames_omni_folder(folder: str | Path) -> bool:
    """Whether ``folder`` holds a ``Qwen2_5OmniProcessor`` saved without a video processor (as
    :func:`save_processor` writes it), which ``AutoProcessor`` cannot load without torchvision."""
    path = Path(folder) / PROCESSOR_FILE
    if not path.is_file():
        return False
    saved = json.loads(path.read_text())
    return saved.get("processor_class") == "Qwen2_5OmniProcessor" and "video_processor" not in saved


def load_processor(folder: str | Path) -> Qwen2_5OmniProcessor:
    """The processor saved by :func:`save_processor`, rebuilt offline from its stock parts."""
    saved = json.loads((Path(folder) / PROCESSOR_FILE).read_text())
    tok = PreTrainedTokenizerFast.from_pretrained(str(folder))
    images = Qwen2VLImageProcessorPil(
        **{k: v for k, v in saved["image_processor"].items() if not k.startswith("image_processor")}
    )
    features = WhisperFeatureExtractor(
        **{k: v for k, v in saved["feature_extractor"].items() if k != "feature_extractor_type"}
    )
    if tok.chat_template is None:
        tok.chat_template = saved.get("chat_template")
    return assemble_processor(tok, images, features)


def build_model(
    tokenizer: PreTrainedTokenizerFast, cfg: OmniModelConfig | None = None
) -> Qwen2_5OmniThinkerForConditionalGeneration:
    """A randomly initialised ``demo-omni`` whose vocabulary matches ``tokenizer``."""
    cfg = cfg or OmniModelConfig()
    ids = {name: tokenizer.convert_tokens_to_ids(t) for name, t in NAMED_TOKENS.items()}
    text = {
        "vocab_size": len(tokenizer),
        "hidden_size": cfg.hidden,
        "intermediate_size": cfg.mlp,
        "num_hidden_layers": cfg.layers,
        "num_attention_heads": cfg.heads,
        "num_key_value_heads": cfg.heads,
        "max_position_embeddings": cfg.max_positions,
        "rope_parameters": {
            "rope_type": "default",
            "rope_theta": 10000.0,
            "mrope_section": cfg.mrope_section,
        },
        "tie_word_embeddings": False,
        "pad_token_id": tokenizer.pad_token_id,
        "bos_token_id": None,
        "eos_token_id": tokenizer.eos_token_id,
        "initializer_range": 0.02,
    }
    vision = {
        "depth": cfg.vision_layers,
        "hidden_size": cfg.vision_hidden,
        "intermediate_size": 2 * cfg.vision_hidden,
        "num_heads": cfg.vision_heads,
        "in_channels": 3,
        "patch_size": cfg.patch_size,
        "spatial_merge_size": MERGE_SIZE,
        "temporal_patch_size": TEMPORAL_PATCH,
        "window_size": IMAGE_SIZE,  # one window per world image: every block sees the whole image
        "fullatt_block_indexes": [cfg.vision_layers - 1],
        "out_hidden_size": cfg.hidden,
    }
    frames = AUDIO_SECONDS * SAMPLING_RATE // HOP_LENGTH
    audio = {
        "num_mel_bins": MEL_BINS,
        "encoder_layers": cfg.audio_layers,
        "encoder_attention_heads": cfg.audio_heads,
        "encoder_ffn_dim": 2 * cfg.audio_hidden,
        "d_model": cfg.audio_hidden,
        "output_dim": cfg.hidden,
        "n_window": frames // 2,  # a whole clip is one chunk of 2 * n_window mel frames
        "max_source_positions": frames // 2,
    }
    config = Qwen2_5OmniThinkerConfig(
        text_config=text,
        vision_config=vision,
        audio_config=audio,
        audio_token_index=ids["audio_token"],
        image_token_index=ids["image_token"],
        video_token_index=ids["video_token"],
        audio_start_token_id=ids["audio_bos_token"],
        audio_end_token_id=ids["audio_eos_token"],
        vision_start_token_id=ids["vision_bos_token"],
        vision_end_token_id=ids["vision_eos_token"],
    )
    config.architectures = [Qwen2_5OmniThinkerForConditionalGeneration.__name__]
    model = Qwen2_5OmniThinkerForConditionalGeneration._from_config(config, dtype=torch.float32)
    greedy_generation(model, eos=tokenizer.eos_token_id, pad=tokenizer.pad_token_id)
    return model


def sample_media(sample: Sample) -> tuple[list[Any], list[np.ndarray], list[np.ndarray]]:
    """A sample's images (RGB PIL), audio waveforms (16 kHz float32) and videos (``T x H x W x
    3`` uint8), each in prompt order."""
    from ...media import to_audio, to_video
    from ..model import sample_images

    return (
        sample_images(sample),
        [to_audio(a, sample.id).waveform for a in sample.audios],
        [to_video(v, sample.id) for v in sample.videos],
    )


def sample_prompt(processor: Qwen2_5OmniProcessor, sample: Sample, media: bool = True) -> str:
    """The chat prompt of a world sample (generation prompt appended, last token
    ``assistant``), its media placed by the question's slots as the library places them;
    ``media=False`` gives the prompt without any image, audio or video item."""
    images, audios, videos = sample_media(sample) if media else ([], [], [])
    content = chat_content(sample.question, len(images), len(audios), len(videos))
    return processor.apply_chat_template(
        [{"role": "user", "content": content}], add_generation_prompt=True, tokenize=False
    )


__all__ = [
    "AUDIO",
    "IMAGE",
    "LAST_PROMPT_TOKEN",
    "NAMED_TOKENS",
    "SPECIAL_TOKENS",
    "VIDEO",
    "OmniModelConfig",
    "assemble_processor",
    "build_model",
    "build_processor",
    "build_tokenizer",
    "feature_extractor",
    "image_processor",
    "is_frames_omni_folder",
    "load_processor",
    "sample_media",
    "sample_prompt",
    "save_processor",
]
