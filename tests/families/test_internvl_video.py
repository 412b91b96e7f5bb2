"""Video on InternVL, whose processor writes a video's frames as image tokens
(``Frame<i>: <img><IMG_CONTEXT>...</img>``): rows holding an image and a video, where only the
processor's replacement offsets tell the two apart. The conditions on such a row equal plain HF
runs on prompts built by hand; feature swaps and pixel-stage conditions reach exactly one of
the two. The parametrised family tests (``test_audio_video.py``) cover the rest."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import interp
from interp.conditions import Condition
from interp.edits import Batch, EditContext
from interp.encoding import encode
from interp.testing import tiny_vlm
from interp.testing.tolerance import assert_close
from interventions import AblateFeatures, SwapFeatures


def clip(frames: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (frames, 32, 32, 3), dtype=np.uint8)


@pytest.fixture(scope="module")
def vlm() -> interp.VLM:
    return tiny_vlm("internvl")


@pytest.fixture(scope="module")
def both() -> interp.Sample:
    image = np.random.default_rng(3).integers(0, 256, (32, 48, 3), dtype=np.uint8)
    return interp.Sample("what is shown ?", image=image, video=clip(3, 4), id="b0")


def hand_last_states(vlm: interp.VLM, content: list[dict], **media) -> torch.Tensor:
    """Plain HF hidden states ``[layers, d]`` at the last prompt position of the stock
    processor's encoding of a prompt built by hand."""
    proc = vlm.processor
    prompt = proc.apply_chat_template(
        [{"role": "user", "content": content}], add_generation_prompt=True, tokenize=False
    )
    inputs = proc(text=[prompt], return_tensors="pt", **media)
    with torch.no_grad():
        hs = vlm.hf(**inputs, output_hidden_states=True).hidden_states
    return torch.stack([h[0, -1] for h in hs[: vlm.n_layers]])


@pytest.mark.parametrize("condition", ["full", "no_video", "null_video:black", "blind"])
def test_conditions_on_a_row_with_image_and_video_equal_hand_hf(vlm, both, condition):
    image, video = both.load_image(), both.load_videos()[0]
    text = {"type": "text", "text": both.question}
    content, media = {
        "full": (
            [{"type": "image"}, {"type": "video"}, text],
            {"images": [image], "videos": [video]},
        ),
        "no_video": ([{"type": "image"}, text], {"images": [image]}),
        "null_video:black": (
            [{"type": "image"}, {"type": "video"}, text],
            {"images": [image], "videos": [np.zeros_like(video)]},
        ),
        "blind": ([{"type": "video"}, text], {"videos": [video]}),
    }[condition]
    got = interp.residual_stream(vlm, [both], condition, progress_bar=False)[0, : vlm.n_layers]
    assert_close(got, hand_last_states(vlm, content, **media))


def test_positions_split_the_image_tokens_between_image_and_video(vlm, both):
    enc = encode(vlm, [both])
    tok = vlm.tokenizer
    context = tok.convert_tokens_to_ids("<IMG_CONTEXT>")
    all_context = enc.input_ids[0] == context
    image, video = enc.mask("image")[0], enc.mask("video")[0]
    assert not (image & video).any() and torch.equal(image | video, all_context)
    assert int(video.sum()) == 3 * 4  # 3 frames, one 32 px tile (4 tokens) each
    # the video's tokens are exactly those of the "Frame<i>:" runs, decoded back
    text = tok.decode(enc.input_ids[0])
    assert text.count("Frame") == 3
    video_runs = [run.split("</img>")[0] for run in text.split("Frame")[1:]]
    assert all(run.count("<IMG_CONTEXT>") == 4 for run in video_runs)
    image_run = text.split("<img>")[1].split("</img>")[0]
    assert image_run.count("<IMG_CONTEXT>") == int(image.sum())


def test_feature_edits_reach_only_their_modality(vlm, both):
    """SwapFeatures on the video (image) positions equals a real run with black frames (a black
    image); ablating the video leaves the image's input vectors as they are."""
    samples = [both, interp.Sample("and this ?", video=clip(3, 5), id="v1")]
    for kind, condition in (("video", "null_video:black"), ("image", "null:black")):
        swapped = interp.residual_stream(
            vlm, samples, edits=[SwapFeatures(kind, condition)], progress_bar=False
        )
        real = interp.residual_stream(vlm, samples, condition, progress_bar=False)
        # a row without the modality is left alone by the swap (null:black would give v1 an image)
        rows = slice(None) if kind == "video" else slice(0, 1)
        assert_close(swapped[rows], real[rows], msg=kind)
        full = interp.residual_stream(vlm, samples, progress_bar=False)
        assert (swapped - full).abs().max() > 1e-3
    # zeroing the video's input vectors equals a plain HF forward whose decoder input is zeroed
    # by hand at the IMG_CONTEXT tokens after the image's </img> (the frames come after it)
    ablated = interp.residual_stream(
        vlm, [both], edits=[AblateFeatures("video")], progress_bar=False
    )
    enc = encode(vlm, [both])
    ids = enc.input_ids[0]
    after = torch.arange(len(ids)) > int((ids == vlm.tokenizer.end_image_token_id).nonzero()[0])
    frames = (ids == vlm.image_token_id) & after

    def zero_frames(module, args, kwargs):
        kwargs["inputs_embeds"] = kwargs["inputs_embeds"].clone()
        kwargs["inputs_embeds"][0, frames] = 0
        return args, kwargs

    decoder = vlm.adapter.decoder(vlm.hf)
    handle = decoder.register_forward_pre_hook(zero_frames, with_kwargs=True)
    try:
        with torch.no_grad():
            hs = vlm.hf(**enc.inputs, output_hidden_states=True).hidden_states
    finally:
        handle.remove()
    want = torch.stack([h[0, -1] for h in hs[: vlm.n_layers]])
    assert_close(ablated[0, : vlm.n_layers], want)


def test_distort_noises_the_image_tiles_and_not_the_frames(vlm, both):
    """``distort`` (VCD's pixel noise) works on the images' tiles; the videos' frames share
    ``pixel_values`` with them, in placement order, and stay as they are."""
    image2 = np.random.default_rng(6).integers(0, 256, (48, 32, 3), dtype=np.uint8)
    other = interp.Sample("and {video} or {image} ?", image=image2, video=clip(3, 5), id="o1")
    alone = [interp.Sample("q", image=s.load_image(), id=s.id) for s in (both, other)]
    tiles = [int(encode(vlm, [s]).inputs["pixel_values"].shape[0]) for s in alone]
    batch = [both, other]
    clean = encode(vlm, batch).inputs["pixel_values"]
    noisy = encode(vlm, batch, "distort:500").inputs["pixel_values"]
    # placement order: both's image tiles, its 3 frames, other's 3 frames, its image tiles
    t0, t1 = tiles
    image_rows = [list(range(t0)), list(range(t0 + 6, t0 + 6 + t1))]
    frame_rows = list(range(t0, t0 + 6))
    assert noisy.shape[0] == t0 + 6 + t1
    torch.testing.assert_close(noisy[frame_rows], clean[frame_rows], atol=0, rtol=0)
    for s, rows in zip(alone, image_rows):
        want = encode(vlm, [s], "distort:500").inputs["pixel_values"]
        torch.testing.assert_close(noisy[rows], want, atol=0, rtol=0)
        assert (noisy[rows] - clean[rows]).abs().max() > 0.1


def test_real_tokenizer_video_and_image_positions_decode_back():
    """With InternVL3's real Qwen2.5 BPE and chat template: the video positions are the
    ``<IMG_CONTEXT>`` tokens of the ``Frame<i>:`` runs, the image's the rest, and the question
    decodes to its own words."""
    from tools.real import RealTokenizerMissing
    from tools.real_models import real_vlm

    try:
        vlm = real_vlm("internvl")
    except RealTokenizerMissing as err:
        pytest.skip(str(err))
    image = np.random.default_rng(3).integers(0, 256, (32, 48, 3), dtype=np.uint8)
    samples = [
        interp.Sample(
            "Compare {image} with {video} please.", image=image, video=clip(3, 7), id="b"
        ),
        interp.Sample("¿Qué pasa en el vídeo?", video=clip(3, 8), id="v"),
    ]
    enc = encode(vlm, samples)
    tok = vlm.tokenizer
    for row, s in enumerate(samples):
        ids = enc.input_ids[row]
        video = enc.mask("video")[row]
        assert int(video.sum()) == 4 * len(s.load_videos()[0])
        pieces = tok.decode(ids[enc.attention_mask[row].bool()]).split("Frame")[1:]
        assert len(pieces) == len(s.load_videos()[0])
        for k, piece in enumerate(pieces):  # "Frame<k>: <img>" + 4 x <IMG_CONTEXT> + "</img>"
            assert piece.startswith(f"{k + 1}: <img>" + "<IMG_CONTEXT>" * 4 + "</img>")
        first = int(video.nonzero()[0])
        assert tok.decode(ids[:first]).endswith("Frame1: <img>")
        image_pos = enc.mask("image")[row]
        assert bool(image_pos.any()) == s.has_image and not (image_pos & video).any()
        context = ids == tok.convert_tokens_to_ids("<IMG_CONTEXT>")
        assert torch.equal(image_pos | video, context)
        ctx = EditContext(vlm, Batch(vlm, enc, samples, Condition.parse("full")), None)
        question = ctx.positions("question")[row]
        want = "".join(s.question.replace("{image}", " ").replace("{video}", " ").split())
        assert "".join(tok.decode(ids[question]).split()) == want


def test_without_character_offsets_the_split_is_refused(vlm, both):
    """Telling a video's image tokens from an image's needs the offsets: without them the library
    raises rather than guesses."""
    from interp.encoding.codec import codec_of
    from interp.encoding.mask import _expanded_positions
    from interp.encoding.process import Processed
    from interp.errors import ModalityError

    enc = encode(vlm, [both])
    processed = Processed(dict(enc.inputs), enc.texts, None, None)
    with pytest.raises(ModalityError, match="fast tokenizer"):
        _expanded_positions(codec_of(vlm), processed, enc.spans, enc.image_mask.cpu(), "video")
