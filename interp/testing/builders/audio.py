"""Tiny random audio-language models: Qwen2-Audio.

:func:`build_qwen2_audio` returns ``(model, processor)``: the real
``Qwen2AudioForConditionalGeneration`` in fp32 and eval mode, deterministic from ``seed``, and the
stock ``Qwen2AudioProcessor`` built offline around a stock ``WhisperFeatureExtractor`` (16 kHz,
16 mel bins, 2-second window) and the tiny tokenizer with Qwen2-Audio's ``<|AUDIO|>``,
``<|audio_bos|>`` and ``<|audio_eos|>`` tokens. The chat template is the processor's own default
(``Audio 1: <|audio_bos|><|AUDIO|><|audio_eos|>`` per audio item, a ChatML system turn first). The
processor expands ``<|AUDIO|>`` into one token per audio feature vector: 25 per second of audio
(mel frames at 100/s, halved by the encoder's strided convolution and again by its pooling), so a
0.4-second waveform gives 10 audio tokens; waveforms longer than the 2-second window are cut.
"""

from __future__ import annotations

import torch
from transformers import (
    PreTrainedTokenizerBase,
    PreTrainedTokenizerFast,
    Qwen2AudioConfig,
    Qwen2AudioForConditionalGeneration,
    Qwen2AudioProcessor,
    WhisperFeatureExtractor,
)

from ..tokenizer import tiny_tokenizer
from .common import INIT_STD, finish, text_kwargs

AUDIO_TOKEN = "<|AUDIO|>"
AUDIO_BOS = "<|audio_bos|>"
AUDIO_EOS = "<|audio_eos|>"
SAMPLING_RATE = 16000
MEL_BINS = 16
WINDOW_SECONDS = 2
AUDIO_HIDDEN = 32
# mel frames per window (100 per second) = 2 x the encoder's positions (stride-2 convolution)
MAX_SOURCE_POSITIONS = WINDOW_SECONDS * 100 // 2


def qwen2_audio_tokenizer() -> PreTrainedTokenizerFast:
    """The tiny tokenizer with Qwen2-Audio's audio tokens as named special tokens."""
    return tiny_tokenizer(
        extra_special_tokens={
            "audio_token": AUDIO_TOKEN,
            "audio_bos_token": AUDIO_BOS,
            "audio_eos_token": AUDIO_EOS,
        }
    )


def qwen2_audio_feature_extractor() -> WhisperFeatureExtractor:
    """A stock Whisper log-mel feature extractor at 16 kHz with a short window (tiny encoder)."""
    return WhisperFeatureExtractor(
        feature_size=MEL_BINS,
        sampling_rate=SAMPLING_RATE,
        hop_length=160,
        chunk_length=WINDOW_SECONDS,
        n_fft=400,
    )


def build_qwen2_audio(
    seed: int = 0,
    attn_implementation: str = "eager",
    *,
    tokenizer: PreTrainedTokenizerBase | None = None,
    chat_template: str | None = None,
) -> tuple[Qwen2AudioForConditionalGeneration, Qwen2AudioProcessor]:
    """Qwen2-Audio: a 2-layer Whisper-style encoder (d 32) + linear projector into a 3-layer
    Qwen2 decoder. ``tokenizer`` (with the three audio tokens) and ``chat_template`` replace the
    tiny ones; the default template is ``Qwen2AudioProcessor``'s own."""
    tok = tokenizer or qwen2_audio_tokenizer()
    config = Qwen2AudioConfig(
        audio_config={
            "model_type": "qwen2_audio_encoder",
            "num_mel_bins": MEL_BINS,
            "encoder_layers": 2,
            "encoder_attention_heads": 2,
            "encoder_ffn_dim": 2 * AUDIO_HIDDEN,
            "d_model": AUDIO_HIDDEN,
            "max_source_positions": MAX_SOURCE_POSITIONS,
            "initializer_range": INIT_STD,
        },
        text_config={"model_type": "qwen2", **text_kwargs(tok)},
        audio_token_index=tok.convert_tokens_to_ids(AUDIO_TOKEN),
    )
    config.architectures = [Qwen2AudioForConditionalGeneration.__name__]
    torch.manual_seed(seed)
    model = Qwen2AudioForConditionalGeneration._from_config(
        config, attn_implementation=attn_implementation, dtype=torch.float32
    )
    processor = Qwen2AudioProcessor(
        feature_extractor=qwen2_audio_feature_extractor(),
        tokenizer=tok,
        chat_template=chat_template,
    )
    return finish(model, tok, attn_implementation), processor


__all__ = [
    "AUDIO_TOKEN",
    "SAMPLING_RATE",
    "build_qwen2_audio",
    "qwen2_audio_feature_extractor",
    "qwen2_audio_tokenizer",
]
