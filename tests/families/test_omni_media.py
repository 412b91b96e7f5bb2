"""Audio and video facts of the omni and video families, on HF alone (no library code), for wiring
the library's audio / video path (docs/modalities.md lists them).

For each family: the stock processor's audio kwargs and sampling rate, how many placeholder tokens
an input expands to, which module's output lands at those positions (the "features site": its rows
equal the decoder input there), and whether rows with and without audio batch to the rows' lone
results. Videos go through hand-made processor outputs where torchvision (needed by every video
processor) does not import; the processor itself is tested where it does.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
import pytest
import torch
from transformers import PreTrainedModel

from interp.testing import build_tiny
from interp.testing.builders.omni_common import SAMPLING_RATE, has_video_processor
from interp.testing.tolerance import assert_close

AUDIO_FAMILIES = ["qwen2_5_omni_thinker", "qwen3_omni_moe_thinker", "gemma4"]
# where each family's audio features come from: (module path, output field)
AUDIO_SITE = {
    "qwen2_5_omni_thinker": "model.audio_tower",
    "qwen3_omni_moe_thinker": "model.audio_tower",
    "gemma4": "model.embed_audio",
}
QUESTION = "what is said in the clip ?"


@cache
def built(arch: str) -> tuple[PreTrainedModel, Any]:
    return build_tiny(arch)


def wave(seconds: float, seed: int) -> np.ndarray:
    n = int(seconds * SAMPLING_RATE)
    return (0.1 * np.random.default_rng(seed).standard_normal(n)).astype(np.float32)


def prompt(processor: Any, kinds: list[str]) -> str:
    content = [{"type": k} for k in kinds] + [{"type": "text", "text": QUESTION}]
    return processor.apply_chat_template(
        [{"role": "user", "content": content}], add_generation_prompt=True, tokenize=False
    )


def module(model: PreTrainedModel, path: str) -> torch.nn.Module:
    out: Any = model
    for part in path.split("."):
        out = getattr(out, part)
    return out


def forward_capturing(model: PreTrainedModel, inputs: dict, path: str) -> tuple[Any, list]:
    seen: list = []

    def keep(output: Any) -> Any:
        # read inside the hook: Qwen's get_*_features later replaces pooler_output by a split
        if isinstance(output, torch.Tensor):
            return output
        return {
            k: getattr(output, k, None)
            for k in ("last_hidden_state", "pooler_output", "attention_mask")
        }

    handle = module(model, path).register_forward_hook(lambda m, a, o: seen.append(keep(o)))
    try:
        with torch.no_grad():
            out = model(**inputs, output_hidden_states=True)
    finally:
        handle.remove()
    return out, seen


def expected_audio_tokens(arch: str, mel_frames: int) -> int:
    """Placeholder count by hand from the audio encoders' documented down-sampling."""
    if arch == "qwen2_5_omni_thinker":  # conv stride 2, then 2x average pooling
        after_conv = (mel_frames - 1) // 2 + 1
        return (after_conv - 2) // 2 + 1
    if arch == "qwen3_omni_moe_thinker":  # three stride-2 convs per 100-frame chunk (13 each)
        chunk, rest = divmod(mel_frames, 100)
        t = rest
        for _ in range(3):
            t = (t - 1) // 2 + 1
        return t + 13 * chunk
    t = mel_frames  # gemma4: two stride-2 convs (40 ms per token)
    for _ in range(2):
        t = (t + 2 - 3) // 2 + 1
    return t


@pytest.mark.parametrize("arch", AUDIO_FAMILIES)
def test_audio_placeholders_and_features_site(arch: str) -> None:
    model, processor = built(arch)
    fe = processor.feature_extractor
    assert fe.sampling_rate == SAMPLING_RATE
    defaults = getattr(processor, "audio_kwargs", {})  # Gemma 4's processor has none
    assert defaults.get("sampling_rate", SAMPLING_RATE) == SAMPLING_RATE
    inputs = processor(
        text=[prompt(processor, ["audio"])], audio=[wave(1.0, 0)], return_tensors="pt"
    )
    mask_key = "input_features_mask" if arch == "gemma4" else "feature_attention_mask"
    assert {"input_features", mask_key} <= set(inputs)
    frames = int(inputs[mask_key][0].sum())
    audio_id = processor.audio_token_id
    audio_mask = inputs["input_ids"][0] == audio_id
    assert int(audio_mask.sum()) == expected_audio_tokens(arch, frames)
    # the placeholder run is wrapped in the begin/end-of-audio tokens
    ids = inputs["input_ids"][0].tolist()
    first = ids.index(audio_id)
    bos = getattr(processor, "audio_bos_token", None) or processor.boa_token  # Qwen / Gemma 4
    eos = getattr(processor, "audio_eos_token", None) or processor.eoa_token
    start, end = processor.tokenizer.convert_tokens_to_ids([bos, eos])
    assert ids[first - 1] == start and ids[first + int(audio_mask.sum())] == end

    out, seen = forward_capturing(model, dict(inputs), AUDIO_SITE[arch])
    assert len(seen) == 1
    if arch == "gemma4":  # embed_audio's rows at the encoder's valid (unpadded) positions
        _, tower = forward_capturing(model, dict(inputs), "model.audio_tower")
        rows = seen[0][tower[0]["attention_mask"]]
    else:
        rows = seen[0]["last_hidden_state"]
    torch.testing.assert_close(out.hidden_states[0][0][audio_mask], rows, rtol=0, atol=0)


@pytest.mark.parametrize("arch", AUDIO_FAMILIES)
def test_audio_changes_the_output_and_mixed_rows_batch(arch: str) -> None:
    """Rows with and without audio in one batch give each row's lone logits."""
    model, processor = built(arch)
    with_audio, text_only = prompt(processor, ["audio"]), prompt(processor, [])

    def last_logits(texts: list[str], audio: list[np.ndarray] | None) -> torch.Tensor:
        inputs = processor(text=texts, audio=audio, padding=True, return_tensors="pt")
        with torch.no_grad():
            return model(**inputs).logits[:, -1]

    a = last_logits([with_audio], [wave(1.0, 1)])
    b = last_logits([with_audio], [wave(1.0, 2)])
    assert (a - b).abs().amax() > 1e-3
    mixed = last_logits([with_audio, text_only], [wave(1.0, 1)])
    assert_close(mixed[0], a[0])
    assert_close(mixed[1], last_logits([text_only], None)[0])


@pytest.mark.parametrize("arch", ["qwen2_5_omni_thinker", "qwen3_omni_moe_thinker"])
def test_qwen_omni_video_tokens_and_features_site(arch: str) -> None:
    """A 4-frame 32x32 video: grid (2, 4, 4) patches, (2 x 4 x 4) / 2^2 = 8 ``<|VIDEO|>`` tokens,
    filled with the vision model's output (the image features site serves videos too)."""
    model, processor = built(arch)
    grid = torch.tensor([[2, 4, 4]])
    if has_video_processor(processor):
        frames = np.random.default_rng(0).integers(0, 256, (4, 32, 32, 3), dtype=np.uint8)
        inputs = dict(
            processor(text=[prompt(processor, ["video"])], videos=[frames], return_tensors="pt")
        )
        assert torch.equal(inputs["video_grid_thw"], grid)
    else:  # the video processor's output by hand: one row per patch, 3 x 2 frames x 8 x 8 values
        text = prompt(processor, ["video"]).replace(
            processor.video_token, processor.video_token * 8
        )
        inputs = dict(processor.tokenizer([text], return_tensors="pt"))
        inputs["pixel_values_videos"] = torch.randn(int(grid.prod()), 3 * 2 * 8 * 8)
        inputs["video_grid_thw"] = grid
        # seconds per temporal patch: temporal_patch_size / fps (2 frames at the default 2 fps)
        inputs["video_second_per_grid"] = torch.tensor([1.0])
    video_mask = inputs["input_ids"][0] == processor.video_token_id
    assert int(video_mask.sum()) == 8
    out, seen = forward_capturing(model, inputs, "model.visual")
    rows = seen[0]["pooler_output"]
    torch.testing.assert_close(out.hidden_states[0][0][video_mask], rows, rtol=0, atol=0)


def test_llava_next_video_tokens_and_features_site() -> None:
    """A 3-frame 16 px video: 4x4 patches pooled 2x2 = 4 ``<video>`` tokens per frame, 12 in all,
    each the projector's output (the image features site serves videos too)."""
    model, processor = built("llava_next_video")
    if has_video_processor(processor):
        frames = np.random.default_rng(0).integers(0, 256, (3, 16, 16, 3), dtype=np.uint8)
        inputs = dict(
            processor(text=[prompt(processor, ["video"])], videos=[frames], return_tensors="pt")
        )
    else:
        text = prompt(processor, ["video"]).replace(
            processor.video_token, processor.video_token * 12
        )
        inputs = dict(processor.tokenizer([text], return_tensors="pt"))
        inputs["pixel_values_videos"] = torch.randn(1, 3, 3, 16, 16)
    video_mask = inputs["input_ids"][0] == model.config.video_token_id
    assert int(video_mask.sum()) == 12
    out, seen = forward_capturing(model, inputs, "model.multi_modal_projector")
    rows = seen[0].reshape(-1, seen[0].shape[-1])
    torch.testing.assert_close(out.hidden_states[0][0][video_mask], rows, rtol=0, atol=0)


def test_gemma4_video_tokens_and_features_site() -> None:
    """Two 16 px frames of 4 px patches, pooled 2x2: per frame ``"mm:ss <|image>"`` + 4
    ``<|video|>`` + ``<image|>`` (the processor's expansion, written by hand), filled with
    ``embed_vision``'s output (the image features site serves videos too). The inputs are the
    video processor's layout: patches ``[frames, patches, 3·4·4]``, their (x, y) positions and the
    frame count per video."""
    model, processor = built("gemma4")
    frame = "<|image>" + processor.video_token * 4 + "<image|>"
    text = prompt(processor, ["video"]).replace(
        "\n\n" + processor.video_token + "\n\n", f"00:00 {frame} 00:01 {frame}"
    )
    inputs = dict(processor.tokenizer([text], return_tensors="pt"))
    ys, xs = torch.meshgrid(torch.arange(4), torch.arange(4), indexing="ij")
    positions = torch.stack([xs.flatten(), ys.flatten()], -1)
    inputs["pixel_values_videos"] = torch.rand(2, 16, 3 * 4 * 4)
    inputs["video_position_ids"] = positions.expand(2, 16, 2).clone()
    inputs["num_frames_per_video"] = torch.tensor([2])
    video_mask = inputs["input_ids"][0] == processor.video_token_id
    assert int(video_mask.sum()) == 8
    out, seen = forward_capturing(model, inputs, "model.embed_vision")
    rows = seen[0].reshape(-1, seen[0].shape[-1])
    torch.testing.assert_close(out.hidden_states[0][0][video_mask], rows, rtol=0, atol=0)
