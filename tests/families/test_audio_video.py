"""Audio (Qwen2-Audio, Qwen2.5-Omni, Qwen3-Omni, Gemma 4) and video (Qwen2-VL, the two Qwen-Omni
thinkers), end to end on tiny models, against plain HF references: residual reads equal ``output_hidden_states``, a null audio equals a real run with a
silent waveform built by hand, batches mixing rows with and without audio/video equal single rows
(in any order), the audio/video positions decode to exactly the placeholder tokens the processor
expanded, and generation equals HF ``generate``."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
import torch
from scipy.signal import resample_poly

import interp
from interp.conditions import Condition
from interp.edits import Batch, EditContext
from interp.encoding import encode
from interp.testing import tiny_vlm
from interp.testing.chat_reference import assert_same_inputs
from interp.testing.tolerance import assert_close

RATE = 16000
AUDIO_FAMILIES = ["qwen2_audio", "qwen2_5_omni_thinker", "qwen3_omni_moe_thinker", "gemma4"]
VIDEO_FAMILIES = [
    "qwen2_vl",
    "qwen2_5_vl",
    "qwen3_vl",
    "qwen2_5_omni_thinker",
    "qwen3_omni_moe_thinker",
    "llava_next_video",
    "llava_onevision",
    "internvl",
    "gemma4",
]
KINDS = [("audio", a) for a in AUDIO_FAMILIES] + [("video", v) for v in VIDEO_FAMILIES]
STACKED_VIDEOS = {"llava_next_video", "llava_onevision", "internvl"}
# the placeholder token the processor repeats per feature vector, and the tokens around each run
AUDIO_TOKENS = {
    "qwen2_audio": ("<|AUDIO|>", "<|audio_bos|>", "<|audio_eos|>"),
    "qwen2_5_omni_thinker": ("<|AUDIO|>", "<|audio_bos|>", "<|audio_eos|>"),
    "qwen3_omni_moe_thinker": ("<|AUDIO|>", "<|audio_bos|>", "<|audio_eos|>"),
    "gemma4": ("<|audio|>", "<|audio>", "<audio|>"),
}
VIDEO_TOKENS = {
    "qwen2_vl": ("<|video_pad|>", "<|vision_start|>", "<|vision_end|>"),
    "qwen2_5_vl": ("<|video_pad|>", "<|vision_start|>", "<|vision_end|>"),
    "qwen3_vl": ("<|video_pad|>", "<|vision_start|>", "<|vision_end|>"),
    "qwen2_5_omni_thinker": ("<|VIDEO|>", "<|vision_bos|>", "<|vision_eos|>"),
    "qwen3_omni_moe_thinker": ("<|VIDEO|>", "<|vision_bos|>", "<|vision_eos|>"),
    "llava_next_video": ("<video>", None, None),  # the run stands in the text, no delimiters
    "llava_onevision": ("<video>", None, None),
    # InternVL: a video is one "Frame<i>: <img>...</img>" run of image tokens per frame
    "internvl": ("<IMG_CONTEXT>", "<img>", "</img>"),
    # Gemma 4: one "mm:ss <|image>...<image|>" run of <|video|> tokens per frame
    "gemma4": ("<|video|>", "<|image>", "<image|>"),
}


def wave(seconds: float, seed: int, rate: int = RATE) -> np.ndarray:
    return np.random.default_rng(seed).normal(0, 0.1, int(seconds * rate)).astype(np.float32)


def clip(frames: int, h: int, w: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (frames, h, w, 3), dtype=np.uint8)


@functools.cache
def vlm_for(arch: str) -> interp.VLM:
    return tiny_vlm(arch)


@pytest.fixture(scope="module")
def audio_vlm() -> interp.VLM:
    return vlm_for("qwen2_audio")


@pytest.fixture(scope="module")
def video_vlm() -> interp.VLM:
    return vlm_for("qwen2_vl")


def case(kind: str, arch: str) -> tuple[interp.VLM, list[interp.Sample]]:
    return vlm_for(arch), audio_samples() if kind == "audio" else video_samples(arch)


def audio_lengths(vlm: interp.VLM, enc: interp.Encoding) -> list[int]:
    """Feature vectors per audio clip, from HF's own encoder arithmetic (Gemma 4: the encoder's
    output mask)."""
    model, name = vlm.hf.model, vlm.adapter.name
    if name == "gemma4":
        out = model.audio_tower(enc.inputs["input_features"], enc.inputs["input_features_mask"])
        return out.attention_mask.sum(-1).tolist()
    frames = enc.inputs["feature_attention_mask"].sum(-1)
    if name == "qwen3_omni_moe_thinker":
        from transformers.models.qwen3_omni_moe import modeling_qwen3_omni_moe as m

        n_window = vlm.hf.config.audio_config.n_window
        return m._get_feat_extract_output_lengths(frames, n_window).tolist()
    return model.audio_tower._get_feat_extract_output_lengths(frames)[1].tolist()


def audio_samples() -> list[interp.Sample]:
    """Rows with one audio, two audios in slots, audio at another rate, and no audio."""
    return [
        interp.Sample("what is this sound ?", audio=(wave(0.4, 0), RATE), id="a0"),
        interp.Sample(
            "is {audio} the same as {audio} ?",
            audio=[(wave(0.3, 1), RATE), (wave(0.6, 2), RATE)],
            id="a1",
        ),
        interp.Sample("what color is the sky ?", id="t0"),
        interp.Sample("describe it", audio=(wave(0.5, 3, 8000), 8000), id="a2"),
        interp.Sample("two plus three", id="t1"),
    ]


def video_samples(arch: str = "qwen2_vl") -> list[interp.Sample]:
    """Rows with a video in a slot, an image, a video of odd length, nothing; on an omni family
    also a row with image, video and audio together."""
    rng = np.random.default_rng(5)
    # LLaVA-style processors stack a batch's videos, so their frame counts must agree
    odd = 4 if arch in STACKED_VIDEOS else 3
    image = rng.integers(0, 256, (32, 48, 3), dtype=np.uint8)
    rows = [
        interp.Sample("what happens {video} here ?", video=clip(4, 32, 32, 0), id="v0"),
        interp.Sample("what is it ?", image=image, id="i0"),
        interp.Sample("describe the video", video=clip(odd, 32, 48, 1), id="v1"),
        interp.Sample("what color is the sky ?", id="t0"),
    ]
    if arch == "internvl":  # its videos are image tokens: a row with both tells them apart
        rows.append(
            interp.Sample(
                "compare {image} with {video}", image=image, video=clip(4, 32, 32, 2), id="m0"
            )
        )
    if "audio" in vlm_for(arch).adapter.modalities:
        rows.append(
            interp.Sample(
                "all at once",
                image=image,
                video=clip(2, 32, 32, 2),
                audio=(wave(0.3, 4), RATE),
                id="m0",
            )
        )
    return rows


def hf_states(vlm: interp.VLM, inputs: dict) -> tuple[torch.Tensor, ...]:
    with torch.no_grad():
        return vlm.hf(**inputs, output_hidden_states=True).hidden_states


def check_residuals_equal_hf(vlm: interp.VLM, samples: list[interp.Sample]) -> None:
    states = interp.residual_stream(vlm, samples, batch_size=len(samples), progress_bar=False)
    enc = encode(vlm, samples)
    inputs = dict(enc.inputs)
    if vlm.adapter.name == "gemma4":  # positions over attended tokens, as HF's generate counts
        inputs["position_ids"] = (inputs["attention_mask"].cumsum(-1) - 1).clamp(min=0)
    hs = hf_states(vlm, inputs)
    rows = torch.arange(len(samples))
    ref = torch.stack([h[rows, enc.last_index] for h in hs[: vlm.n_layers]], dim=1)
    assert_close(states[:, : vlm.n_layers], ref.float())


@pytest.mark.parametrize("kind,arch", KINDS)
def test_residuals_equal_hf_hidden_states(kind, arch):
    check_residuals_equal_hf(*case(kind, arch))


def hand_prompt(processor, content: list[dict]) -> str:
    return processor.apply_chat_template(
        [{"role": "user", "content": content}], add_generation_prompt=True, tokenize=False
    )


@pytest.mark.parametrize("arch", AUDIO_FAMILIES)
def test_null_audio_silence_equals_a_real_silent_run(arch):
    """Each audio replaced by zeros of its length; a row without audio gets one second of zeros
    (as ``null`` gives a row without an image one null image)."""
    audio_vlm = vlm_for(arch)
    samples = audio_samples()[:3]
    null = interp.residual_stream(
        audio_vlm, samples, "null_audio:silence", batch_size=1, progress_bar=False
    )
    proc = audio_vlm.processor
    refs = []
    # by hand: the stock processor on a zero waveform of each audio's length
    prompts = [
        hand_prompt(proc, [{"type": "audio"}, {"type": "text", "text": "what is this sound ?"}]),
        hand_prompt(
            proc,
            [
                {"type": "text", "text": "is"},
                {"type": "audio"},
                {"type": "text", "text": "the same as"},
                {"type": "audio"},
                {"type": "text", "text": "?"},
            ],
        ),
    ]
    prompts.append(
        hand_prompt(proc, [{"type": "audio"}, {"type": "text", "text": "what color is the sky ?"}])
    )
    silences = [
        [np.zeros(int(0.4 * RATE), np.float32)],
        [np.zeros(4800, np.float32), np.zeros(9600, np.float32)],
        [np.zeros(RATE, np.float32)],
    ]
    for prompt, audio in zip(prompts, silences):
        inputs = proc(
            text=[prompt],
            audio=audio,
            sampling_rate=RATE,
            return_tensors="pt",
        )
        hs = hf_states(audio_vlm, dict(inputs))
        refs.append(torch.stack([h[0, -1] for h in hs[: audio_vlm.n_layers]]))
    assert_close(null[:, : audio_vlm.n_layers], torch.stack(refs))
    full = interp.residual_stream(audio_vlm, samples[:2], progress_bar=False)
    assert (full - null[:2]).abs().max() > 1e-3  # the audio matters: the check has teeth


@pytest.mark.parametrize("arch", VIDEO_FAMILIES)
def test_null_video_black_equals_a_real_black_video(arch):
    video_vlm = vlm_for(arch)
    samples = [video_samples(arch)[0], video_samples(arch)[2]]
    null = interp.residual_stream(video_vlm, samples, "null_video:black", progress_bar=False)
    black = [
        interp.Sample(s.question, video=np.zeros_like(s.load_videos()[0]), id=s.id) for s in samples
    ]
    real = interp.residual_stream(video_vlm, black, progress_bar=False)
    torch.testing.assert_close(null, real, atol=0, rtol=0)
    full = interp.residual_stream(video_vlm, samples, progress_bar=False)
    assert (full - null).abs().max() > 1e-3


@pytest.mark.parametrize("kind,arch", KINDS)
@pytest.mark.parametrize("condition", ["full", "blind+no_audio", "frames:2+no_question"])
def test_mixed_batches_equal_single_rows_in_any_order(kind, arch, condition):
    vlm, samples = case(kind, arch)
    if kind == "audio" and "frames" in condition:
        condition = "null_audio:noise+no_question"
    if arch == "qwen3_omni_moe_thinker":  # clips of one length (see the next test)
        samples = [s for s in samples if all(a.duration == 0.4 for a in s.load_audios())]
        samples.append(interp.Sample("again", audio=(wave(0.4, 9), RATE), id="a3"))
    if kind == "video" and "frames" in condition:
        samples = [s for s in samples if s.has_video]  # frames:<k> needs a video
    one = interp.residual_stream(vlm, samples, condition, batch_size=1, progress_bar=False)
    many = interp.residual_stream(
        vlm, samples, condition, batch_size=len(samples), progress_bar=False
    )
    back = interp.residual_stream(
        vlm, samples[::-1], condition, batch_size=len(samples), progress_bar=False
    )
    assert_close(one, many)
    assert_close(one, back.flip(0))


def test_qwen3_omni_audio_features_depend_on_the_batch_in_hf_itself():
    """Qwen3-Omni's audio encoder pads each clip's last chunk to the batch's longest chunk, and its
    stride-2 convolutions see that padding: a clip's features differ (slightly) with the other
    clips in its batch in plain HF, so the library's reads equal HF's batch by batch (see
    ``test_residuals_equal_hf_hidden_states``) but not across batch compositions."""
    vlm = vlm_for("qwen3_omni_moe_thinker")
    short, long_ = (
        interp.Sample("a", audio=(wave(0.5, 1), RATE)),
        interp.Sample("b", audio=(wave(1.0, 2), RATE)),
    )

    def last(samples):
        enc = encode(vlm, samples)
        return hf_states(vlm, enc.inputs)[-1][0, -1]

    assert (last([short]) - last([short, long_])).abs().max() > 1e-4


def positions(vlm: interp.VLM, samples: list[interp.Sample], name: str) -> tuple:
    enc = encode(vlm, samples)
    ctx = EditContext(vlm, Batch(vlm, enc, samples, Condition.parse("full")), None)
    return enc, ctx.positions(name)


@pytest.mark.parametrize("arch", AUDIO_FAMILIES)
def test_audio_positions_decode_to_the_expanded_placeholders(arch):
    audio_vlm = vlm_for(arch)
    token, bos, eos = AUDIO_TOKENS[arch]
    samples = audio_samples()
    enc, mask = positions(audio_vlm, samples, "audio")
    tok = audio_vlm.tokenizer
    # the encoder's own output length for each audio
    per_audio = iter(audio_lengths(audio_vlm, enc))
    for row, s in enumerate(samples):
        expected = [next(per_audio) for _ in range(s.n_audio)]
        ids = enc.input_ids[row][mask[row]].tolist()
        assert ids == [tok.convert_tokens_to_ids(token)] * sum(expected)
        for k, n in enumerate(expected):
            _, slot = positions(audio_vlm, [s], f"audio:{k}")
            where = slot[0].nonzero().flatten()
            assert len(where) == n and (where.diff() == 1).all()  # one contiguous run each
            before = tok.decode(enc_one(audio_vlm, s).input_ids[0][: int(where[0])])
            assert before.endswith(bos)
            after = tok.decode(enc_one(audio_vlm, s).input_ids[0][int(where[-1]) + 1 :])
            assert after.startswith(eos)
        _, q = positions(audio_vlm, [s], "question")
        decoded = tok.decode(enc_one(audio_vlm, s).input_ids[0][q[0]])
        assert decoded.replace(" ", "") == s.question.replace("{audio}", "").replace(" ", "")


def enc_one(vlm: interp.VLM, sample: interp.Sample) -> interp.Encoding:
    return encode(vlm, [sample])


def video_lengths(vlm: interp.VLM, enc: interp.Encoding, frames: list[int]) -> list[int]:
    """Feature vectors per video (``frames``: each video's frame count): from the processor's
    (t, h, w) patch grid (2x2 merge), for LLaVA-style ``[videos, frames, 3, H, W]`` pixels
    frames x (side / patch / pool stride)^2 from the model config, for InternVL frames x the
    tokens of one tile ((tile / patch)^2 x downsample ratio^2, from the config)."""
    cfg = vlm.hf.config
    if vlm.adapter.name == "gemma4":  # HF's count: real (unpadded) patches / pooling kernel²
        real = (enc.inputs["video_position_ids"] != -1).all(-1).sum(-1)
        per_frame = real // cfg.vision_config.pooling_kernel_size**2
        split = enc.inputs["num_frames_per_video"].tolist()
        return [int(part.sum()) for part in torch.split(per_frame, split)]
    if vlm.adapter.name == "internvl":
        side = cfg.vision_config.image_size[0] // cfg.vision_config.patch_size[0]
        return [int(f * side * side * cfg.downsample_ratio**2) for f in frames]
    if "video_grid_thw" in enc.inputs:
        return [int(np.prod(g)) // 4 for g in enc.inputs["video_grid_thw"].tolist()]
    pixels = enc.inputs["pixel_values_videos"]
    if vlm.adapter.name == "llava_onevision":  # 2x2 bilinear pooling (ceil), one newline
        side = math.ceil(pixels.shape[-1] // cfg.vision_config.patch_size / 2)
        return [pixels.shape[1] * side * side + 1] * pixels.shape[0]
    side = pixels.shape[-1] // cfg.vision_config.patch_size // cfg.spatial_pool_stride
    return [pixels.shape[1] * side * side] * pixels.shape[0]


@pytest.mark.parametrize("arch", VIDEO_FAMILIES)
def test_video_positions_decode_to_the_expanded_placeholders(arch):
    video_vlm = vlm_for(arch)
    samples = video_samples(arch)
    enc, mask = positions(video_vlm, samples, "video")
    frames = [len(v) for s in samples for v in s.load_videos()]
    lengths = iter(video_lengths(video_vlm, enc, frames))
    token, bos, eos = VIDEO_TOKENS[arch]
    tok = video_vlm.tokenizer
    pad = tok.convert_tokens_to_ids(token)
    for row, s in enumerate(samples):
        n = next(lengths) if s.has_video else 0
        assert enc.input_ids[row][mask[row]].tolist() == [pad] * n
        if s.has_video:  # "video:0": contiguous runs between the vision start and end tokens
            ids = enc_one(video_vlm, s).input_ids[0]
            _, slot = positions(video_vlm, [s], "video:0")
            where = slot[0].nonzero().flatten()
            assert len(where) == n
            runs = torch.tensor_split(where, (where.diff() > 1).nonzero().flatten() + 1)
            # Qwen3-VL: one run per temporal patch (2 frames), after its "<t seconds>" stamp;
            # InternVL and Gemma 4: one run per frame, after its "Frame<i>: " / "mm:ss " label
            frames = len(s.load_videos()[0])
            want = {"qwen3_vl": (frames + 1) // 2, "internvl": frames, "gemma4": frames}
            want = want.get(arch, 1)
            assert len(runs) == want
            for k, run in enumerate(runs):
                before = tok.decode(ids[: int(run[0])])
                if arch == "qwen3_vl":  # raw frames read as 24 fps; the stamp is the pair's mean
                    bos_k = f"<{(2 * k + 2 * k + 1) / 2 / 24:.1f} seconds>{bos}"
                    assert before.endswith(bos_k)
                elif arch == "internvl":
                    assert before.endswith(f"Frame{k + 1}: {bos}")
                elif arch == "gemma4":  # raw frames read as 24 fps: every stamp is 00:00 here
                    assert before.endswith(f"00:00 {bos}")
                elif bos is not None:
                    assert before.endswith(bos)
                if eos is not None:
                    assert tok.decode(ids[int(run[-1]) + 1 :]).startswith(eos)
    _, image = positions(video_vlm, samples, "image")
    assert not (image & mask).any()
    if arch == "internvl":  # the image's run: its tiles' tokens, between <img> and </img>
        ids = enc.input_ids
        for row, s in enumerate(samples):
            if not s.has_image:
                assert not image[row].any()
                continue
            tiles = int(video_vlm.processor.image_processor([s.load_image()])["num_patches"][0])
            where = image[row].nonzero().flatten()
            assert len(where) == tiles * 4 and (where.diff() == 1).all()
            assert ids[row][where].tolist() == [tok.convert_tokens_to_ids(token)] * len(where)
            assert tok.decode(ids[row][: int(where[0])]).endswith(bos)
            assert not tok.decode(ids[row][: int(where[0])]).endswith(f": {bos}")  # no frame label
            assert tok.decode(ids[row][int(where[-1]) + 1 :]).startswith(eos)
    _, text = positions(video_vlm, samples, "text")
    assert not (text & mask).any()


@pytest.mark.parametrize("kind,arch", KINDS)
def test_generate_equals_hf_generate(kind, arch):
    vlm, samples = case(kind, arch)
    samples = samples if kind == "audio" else samples[:3]
    gen = interp.generate(
        vlm, samples, max_new_tokens=4, batch_size=len(samples), progress_bar=False
    )
    for s, ids in zip(samples, gen.token_ids):
        enc = encode(vlm, [s])
        with torch.no_grad():
            out = vlm.hf.generate(
                **enc.inputs,
                max_new_tokens=4,
                do_sample=False,
                pad_token_id=vlm.tokenizer.pad_token_id,
            )
        assert ids == out[0, enc.input_ids.shape[1] :].tolist()[: len(ids)]


def test_resampled_audio_reaches_the_feature_extractor(audio_vlm):
    """An 8 kHz waveform is encoded as the feature extractor's features of the scipy-resampled
    16 kHz waveform."""
    low = wave(0.5, 3, 8000)
    enc = encode(audio_vlm, [interp.Sample("q", audio=(low, 8000))])
    ref = audio_vlm.processor.feature_extractor(
        [resample_poly(low, 2, 1).astype(np.float32)],
        sampling_rate=RATE,
        padding="max_length",
        return_tensors="pt",
    )["input_features"]
    # the same extractor on the same resampled samples: bit for bit
    torch.testing.assert_close(enc.inputs["input_features"], ref, atol=0, rtol=0)


def test_frames_processor_lays_out_frame_pairs_like_the_image_processor(video_vlm):
    """Each patch row of a video holds frame 2t's patch in temporal slot 0 and frame 2t+1's in
    slot 1, where the stock image processor's patch of a single frame has that frame in both."""
    frames = clip(3, 32, 48, 7)  # odd: the last frame is repeated
    proc = video_vlm.processor
    video = proc.video_processor([frames])
    t, gh, gw = video["video_grid_thw"][0].tolist()
    assert t == 2
    n, p = gh * gw, proc.image_processor.patch_size
    rows = video["pixel_values_videos"].reshape(t, n, 3, 2, p, p)
    padded = [frames[0], frames[1], frames[2], frames[2]]
    for k, frame in enumerate(padded):
        image = proc.image_processor([frame], return_tensors="pt")["pixel_values"]
        ref = image.reshape(n, 3, 2, p, p)[:, :, 0]
        torch.testing.assert_close(rows[k // 2, :, :, k % 2], ref, atol=0, rtol=0)


def test_audio_family_refuses_images_and_groups_nothing_it_need_not(audio_vlm):
    image = np.zeros((32, 32, 3), np.uint8)
    with pytest.raises(interp.errors.ModalityError, match="qwen2_audio takes audio inputs"):
        interp.residual_stream(audio_vlm, [interp.Sample("q", image=image)], progress_bar=False)
    states = interp.residual_stream(
        audio_vlm, [interp.Sample("q", image=image)], "blind", progress_bar=False
    )
    assert states.shape[0] == 1


# -- real tokenizers -----------------------------------------------------------------------------

REAL_QUESTIONS = [
    "What is happening in {media} this clip?",
    "Describe it in 3 words.",
    "Yes",
    "¿Qué pasa?",
]


def decoded_pieces(tok, ids: list[int]) -> str:
    return "".join(tok.decode(ids).split())


def real_audio_vlm() -> interp.VLM:
    """Tiny Qwen2-Audio around the real Qwen2 BPE with Qwen2-Audio's three audio tokens added
    (their checkpoint ids differ; the text around them is tokenized as the real model's is)."""
    from tokenizers import AddedToken

    from interp.testing.builders.audio import build_qwen2_audio
    from tools.real import RealTokenizerMissing, load_tokenizer

    try:
        tok = load_tokenizer("qwen")
    except RealTokenizerMissing as err:
        pytest.skip(str(err))
    tok.add_tokens(
        [
            AddedToken(t, special=True, normalized=False)
            for t in ("<|AUDIO|>", "<|audio_bos|>", "<|audio_eos|>")
        ]
    )
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = "left"
    return interp.load(*build_qwen2_audio(tokenizer=tok))


def real_video_vlm() -> interp.VLM:
    from tools.real import RealTokenizerMissing
    from tools.real_models import real_vlm

    try:
        return real_vlm("qwen2_vl")
    except RealTokenizerMissing as err:
        pytest.skip(str(err))


@pytest.mark.parametrize("kind", ["audio", "video"])
def test_real_tokenizer_positions_decode_to_placeholders_and_question(kind):
    vlm = real_audio_vlm() if kind == "audio" else real_video_vlm()
    tok = vlm.tokenizer
    placeholder = "<|AUDIO|>" if kind == "audio" else "<|video_pad|>"
    pad = tok.convert_tokens_to_ids(placeholder)
    samples = []
    for i, q in enumerate(REAL_QUESTIONS):
        question = q.replace("{media}", "{" + kind + "}")
        if kind == "audio":
            samples.append(interp.Sample(question, audio=(wave(0.3 + 0.1 * i, i), RATE), id=str(i)))
        else:
            samples.append(interp.Sample(question, video=clip(2 + i, 32, 32, i), id=str(i)))
    samples.append(interp.Sample("No media here.", id="plain"))
    enc, media = positions(vlm, samples, kind)
    _, question = positions(vlm, samples, "question")
    for row, s in enumerate(samples):
        ids = enc.input_ids[row]
        n = int((ids == pad).sum())
        assert ids[media[row]].tolist() == [pad] * n and (n > 0) == (s.n_audio + s.n_video > 0)
        want = "".join(s.question.replace("{" + kind + "}", " ").split())
        assert decoded_pieces(tok, ids[question[row]].tolist()) == want
        assert not (question[row] & media[row]).any()


@pytest.mark.parametrize("kind,arch", KINDS)
def test_feature_sites_hold_what_the_decoder_reads(kind, arch):
    """The adapter's audio / video feature module outputs exactly the embeddings at the audio /
    video positions (HF ``hidden_states[0]``)."""
    vlm = vlm_for(arch)
    sample = audio_samples()[1] if kind == "audio" else video_samples()[0]
    module = vlm.features(kind)._module
    seen: list = []
    handle = module.register_forward_hook(lambda m, a, o, seen=seen: seen.append(o))
    try:
        enc = encode(vlm, [sample])
        hs = hf_states(vlm, enc.inputs)
    finally:
        handle.remove()
    at = hs[0][0][enc.mask(kind)[0]]
    out = seen[0]
    if kind == "audio" and hasattr(out, "last_hidden_state"):  # flat, in placement order
        feats = out.last_hidden_state
    elif kind == "audio":  # [audios, max tokens, d], padded past each audio's length
        n = audio_lengths(vlm, enc)
        feats = torch.cat([out[i, :k] for i, k in enumerate(n)])
    elif arch == "llava_onevision":  # [frames, patches, d], then HF's pooling and newline
        model = vlm.hf.model
        pooled = model.apply_pooling(out).reshape(-1, out.shape[-1])
        feats = torch.cat([pooled, model.image_newline[None]])
    elif isinstance(out, torch.Tensor):  # LLaVA-NeXT-Video: [frames, tokens per frame, d]
        feats = out.reshape(-1, out.shape[-1])
    else:  # merged features, one tensor per video or one for all
        pooled = out.pooler_output
        feats = torch.cat(list(pooled)) if isinstance(pooled, (tuple, list)) else pooled
    # the tower's outputs scattered into the embeddings unchanged: bit for bit
    torch.testing.assert_close(at, feats, atol=0, rtol=0)
    for other in {"image", "audio", "video"} - set(vlm.adapter.modalities):
        with pytest.raises(interp.errors.ModalityError):
            vlm.features(other)


def test_a_family_that_cannot_mix_audio_rows_runs_them_apart(audio_vlm):
    """With ``mixed_audio=False`` rows with and without audio go to separate forwards (grouped
    before compute, as images are for Mllama) and the results do not change; contrastive
    decoding, which needs both in one forward, is refused before compute."""
    from dataclasses import replace

    from interp.encoding import batch_indices
    from interp.generation import check_decoding

    apart = interp.load(
        audio_vlm.hf, audio_vlm.processor, adapter=replace(audio_vlm.adapter, mixed_audio=False)
    )
    samples = audio_samples()
    assert list(batch_indices(apart, samples, "full", 8)) == [[0, 1, 3], [2, 4]]
    assert list(batch_indices(apart, samples, "no_audio", 8)) == [[0, 1, 2, 3, 4]]
    grouped = interp.residual_stream(apart, samples, batch_size=8, progress_bar=False)
    single = interp.residual_stream(audio_vlm, samples, batch_size=1, progress_bar=False)
    assert_close(grouped, single)

    class WithoutAudio(interp.Decoding):
        amateurs = (Condition.parse("no_audio"),)

    decoding = WithoutAudio()
    with pytest.raises(interp.DecodingError, match="cannot run rows with and without audio"):
        check_decoding(apart, Condition.parse("full"), decoding, samples)


@pytest.mark.parametrize("kind,arch", KINDS)
def test_teacher_forced_scores_equal_a_manual_log_softmax(kind, arch):
    vlm, samples = case(kind, arch)
    samples = samples[:3]
    targets = ["the sky is blue", "two", "a red circle"]
    scores = interp.score(vlm, samples, targets, batch_size=3, progress_bar=False)
    for i, (s, target) in enumerate(zip(samples, targets)):
        tgt = vlm.tokenizer(target, add_special_tokens=False)["input_ids"]
        enc = encode(vlm, [s])
        inputs = dict(enc.inputs)
        for key, value in enc.inputs.items():  # every per-token field grows with the target
            if isinstance(value, torch.Tensor) and value.shape[:2] == enc.input_ids.shape:
                tail = (
                    torch.tensor([tgt]) if key == "input_ids" else value[:, -1:].repeat(1, len(tgt))
                )
                inputs[key] = torch.cat([value, tail.to(value.dtype)], dim=1)
        with torch.no_grad():
            logits = vlm.hf(**inputs).logits[0].float().log_softmax(-1)
        n = enc.input_ids.shape[1]
        ref = torch.stack([logits[n - 1 + j, t] for j, t in enumerate(tgt)])
        assert_close(scores.logprobs[i, : len(tgt)], ref)


@pytest.mark.parametrize("arch", ["qwen2_5_omni_thinker", "qwen3_omni_moe_thinker"])
def test_null_parts_give_a_row_without_the_modality_one_null_input(arch):
    """One rule for every modality: ``null`` (images), ``null_audio`` and ``null_video`` replace
    each input of the sample by its null form, and give a row without that modality one null
    input (an image of the processor's nominal size, one second of audio at its rate, four
    frames of the nominal size) — the ``V = ∅`` input of the drives paper. Each equals a run on
    that input given explicitly."""
    from interp.conditions import nominal_size

    vlm = vlm_for(arch)
    text = interp.Sample("what color is the sky ?", id="t0")
    w, h = nominal_size(vlm.processor)
    explicit = {
        "null:black": interp.Sample(text.question, image=np.zeros((h, w, 3), np.uint8), id="t0"),
        "null_audio:silence": interp.Sample(
            text.question, audio=(np.zeros(RATE, np.float32), RATE), id="t0"
        ),
        "null_video:black": interp.Sample(
            text.question, video=np.zeros((4, h, w, 3), np.uint8), id="t0"
        ),
    }
    for condition, given in explicit.items():
        enc = encode(vlm, [text], condition)
        assert [enc.n_images[0], enc.n_audio[0], enc.n_video[0]] == [
            len(given.load_images()),
            given.n_audio,
            given.n_video,
        ]
        null = interp.residual_stream(vlm, [text], condition, progress_bar=False)
        real = interp.residual_stream(vlm, [given], progress_bar=False)
        torch.testing.assert_close(null, real, atol=0, rtol=0)


CHAT_VIDEO = [
    "qwen2_vl",
    "qwen2_5_vl",
    "qwen3_vl",
    "qwen2_5_omni_thinker",
    "llava_onevision",
    "gemma4",
]


def _chat_wave(seconds: float, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(0, 0.1, int(seconds * RATE)).astype(np.float32)


def _chat_clip(frames: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (frames, 32, 32, 3), dtype=np.uint8)


@pytest.mark.parametrize(
    ("kind", "arch"), [("audio", a) for a in AUDIO_FAMILIES] + [("video", v) for v in CHAT_VIDEO]
)
def test_audio_and_video_rows_equal_the_processors_chat_pipeline(kind, arch):
    """Audio and video rows (the tiny families' own templates), with and without a question."""
    vlm = vlm_for(arch)
    media = (
        [_chat_wave(1.0 + 0.5 * k, k) for k in range(2)]
        if kind == "audio"
        else [_chat_clip(4, k) for k in range(2)]
    )
    questions = (
        ["What do you hear?", "Describe it in one word."]
        if kind == "audio"
        else ["What happens?", "Describe the motion."]
    )
    for condition in ("full", "no_question"):
        samples = [
            interp.Sample(
                question=q, id=f"s{k}", **({kind: (m, RATE)} if kind == "audio" else {kind: m})
            )
            for k, (q, m) in enumerate(zip(questions, media))
        ]
        enc = encode(vlm, samples, condition)
        convs = []
        for s, m in zip(samples, media):
            item = {"type": kind, kind: m}
            text = "" if condition == "no_question" else s.question
            content = [item] + ([{"type": "text", "text": text}] if text else [])
            convs.append([{"role": "user", "content": content}])
        extra = {"sampling_rate": RATE} if kind == "audio" else {}
        want = dict(
            vlm.processor.apply_chat_template(
                convs,
                add_generation_prompt=True,
                tokenize=True,
                return_dict=True,
                padding=True,
                return_tensors="pt",
                **extra,
            )
        )
        want.pop("offset_mapping", None)
        assert_same_inputs(vlm, dict(enc.inputs), want, f"{arch} {kind} under {condition!r}")
