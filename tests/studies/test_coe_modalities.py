"""Chain of embedding on audio and video: ``full`` vs ``no_audio`` (where is the audio integrated?)
and ``full`` vs ``no_video``, on tiny models. The reference is HF ``output_hidden_states`` of the two
inputs built by hand with the stock processor (with and without the audio / video) and scipy's
cosine distance between them."""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
import pytest
import soundfile
import torch
from scipy.spatial.distance import cosine as scipy_cosine

import interp
import interp.model
from interp.cli import main
from interp.errors import ModalityError
from interp.studies.coe import chain_of_embedding
from interp.testing import make_samples, shared_tiny_vlm, tiny_vlm
from interp.testing.tolerance import assert_close

RATE = 16000
QUESTIONS = ["what is this sound ?", "who speaks here ?", "is it loud ?"]


def wave(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(0, 0.1, n).astype(np.float32)


def clip(t: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (t, 28, 28, 3), dtype=np.uint8)


@functools.cache
def vlm_for(arch: str) -> interp.VLM:
    return tiny_vlm(arch)


def hand_prompt(processor, content: list[dict]) -> str:
    return processor.apply_chat_template(
        [{"role": "user", "content": content}], add_generation_prompt=True, tokenize=False
    )


def last_token_states(vlm: interp.VLM, inputs: dict) -> np.ndarray:
    """HF's hidden states of the last prompt token, layers 0..L-1 (HF's last entry is after the
    final norm; the library reads the last layer's output before it)."""
    with torch.no_grad():
        hs = vlm.hf(**inputs, output_hidden_states=True).hidden_states
    return torch.stack([h[0, -1] for h in hs[: vlm.n_layers]]).double().numpy()


def reference_distances(vlm: interp.VLM, with_media: list[dict], without: list[dict]) -> np.ndarray:
    """Per-sample, per-layer 1 - cos between the two hand-built inputs."""
    out = []
    for a, b in zip(with_media, without):
        za, zb = last_token_states(vlm, a), last_token_states(vlm, b)
        out.append([scipy_cosine(x, y) for x, y in zip(za, zb)])
    return np.array(out)


def test_audio_coe_equals_hf_with_and_without_the_audio():
    vlm = vlm_for("qwen2_audio")
    waves = [wave(6400, 0), wave(8000, 1), wave(4800, 2)]
    samples = [
        interp.Sample(q, audio=(w, RATE), id=f"a{i}")
        for i, (q, w) in enumerate(zip(QUESTIONS, waves))
    ]
    coe = chain_of_embedding(
        vlm, samples, ("full", "no_audio"), max_new_tokens=2, batch_size=2, progress_bar=False
    )
    assert coe.conditions == ("full", "full+no_audio")  # the canonical spelling
    proc = vlm.processor
    with_audio, without = [], []
    for q, w in zip(QUESTIONS, waves):
        text = {"type": "text", "text": q}
        prompt = hand_prompt(proc, [{"type": "audio"}, text])
        with_audio.append(
            dict(proc(text=[prompt], audio=[w], sampling_rate=RATE, return_tensors="pt"))
        )
        without.append(dict(proc(text=[hand_prompt(proc, [text])], return_tensors="pt")))
    ref = reference_distances(vlm, with_audio, without)
    got = coe.distance("cosine")[:, : vlm.n_layers]
    assert_close(got, ref, dtype=torch.float32)
    assert ref[:, 1:].min() > 1e-3  # the audio changes the last token's states: the check has teeth
    meta = coe.meta_frame()
    assert {"answer_full", "answer_full+no_audio"} <= set(meta.columns)


def test_video_coe_equals_hf_with_and_without_the_video():
    vlm = vlm_for("qwen2_vl")
    clips = [clip(2, 0), clip(4, 1), clip(2, 2)]
    samples = [
        interp.Sample(q, video=v, id=f"v{i}") for i, (q, v) in enumerate(zip(QUESTIONS, clips))
    ]
    coe = chain_of_embedding(
        vlm, samples, ("full", "no_video"), max_new_tokens=2, batch_size=3, progress_bar=False
    )
    proc = vlm.processor
    with_video, without = [], []
    for q, v in zip(QUESTIONS, clips):
        text = {"type": "text", "text": q}
        prompt = hand_prompt(proc, [{"type": "video"}, text])
        with_video.append(dict(proc(text=[prompt], videos=[v], return_tensors="pt")))
        without.append(dict(proc(text=[hand_prompt(proc, [text])], return_tensors="pt")))
    ref = reference_distances(vlm, with_video, without)
    assert_close(coe.distance("cosine")[:, : vlm.n_layers], ref, dtype=torch.float32)
    assert ref[:, 1:].min() > 1e-3


def test_media_conditions_are_checked_before_compute():
    with pytest.raises(ModalityError, match="llava does not take"):
        chain_of_embedding(shared_tiny_vlm("llava"), make_samples(2), ("full", "no_audio"))
    text_only = [interp.Sample("hello", id="t0"), interp.Sample("again", id="t1")]
    with pytest.raises(ModalityError, match="no sample has video"):
        chain_of_embedding(vlm_for("qwen2_vl"), text_only, ("full", "frames:1"))


def _audio_table(tmp_path, n: int = 6) -> str:
    rows = []
    for i in range(n):
        soundfile.write(tmp_path / f"a{i}.wav", wave(4000 + 800 * i, 10 + i), RATE)
        rows.append({"question": f"what is sound {i} ?", "clip": f"a{i}.wav", "answer": "x"})
        rows[-1]["loud"] = bool(i % 2)
    pd.DataFrame(rows).to_parquet(tmp_path / "data.parquet")
    return str(tmp_path / "data.parquet")


def test_cli_coe_full_vs_no_audio(tmp_path, monkeypatch, capsys):
    """``interp coe --conditions full,no_audio`` on an audio table and an audio-language checkpoint
    folder; the per-layer distances it writes equal the library's."""
    tiny = vlm_for("qwen2_audio")  # saved and loaded from its folder, as a user's checkpoint
    tiny.hf.save_pretrained(tmp_path / "model")
    tiny.processor.save_pretrained(tmp_path / "model")
    vlm = interp.load(str(tmp_path / "model"))
    data = _audio_table(tmp_path)
    base = ["coe", "--model", str(tmp_path / "model"), "--data", data, "--no-progress"]
    opts = ["--split", "loud", "--vip", "2", "--max-new-tokens", "2"]
    out = tmp_path / "out"
    argv = [*base, *opts, "--columns", "audio=clip", "--conditions", "full,no_audio"]
    assert main([*argv, "--out", str(out)]) == 0
    per_sample = pd.read_csv(out / "per_sample.csv")
    assert "answer_full+no_audio" in per_sample.columns and len(per_sample) == 6
    samples = interp.read_dataset(data, columns="audio=clip")
    coe = chain_of_embedding(
        vlm, samples, ("full", "no_audio"), max_new_tokens=2, progress_bar=False
    )
    d = coe.distance("cosine")
    loud = np.array([s.meta["loud"] for s in samples])
    layers = pd.read_csv(out / "layers.csv")  # D_VT = the rows labelled True
    # cosine distances are <= 2, so S is the rule's floor 1: 1e-5, 10x the old bare 1e-6
    assert_close(layers["mean_vt"], d[loud].mean(0), dtype=torch.float32)
    assert_close(layers["mean_t"], d[~loud].mean(0), dtype=torch.float32)
    # without the audio column, a condition on audio is a usage error before the model loads
    capsys.readouterr()
    monkeypatch.setattr(interp.model, "load", lambda *a, **k: pytest.fail("model loaded"))
    argv = [*base, *opts, "--columns", "audio=none", "--conditions", "full,no_audio"]
    assert main([*argv, "--out", str(tmp_path / "out2")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no sample has audio" in err[0], err
