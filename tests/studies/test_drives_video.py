"""Causal drives with the video as V (``visual="video"``), against plain Hugging Face forwards.

The reference builds each prompt by hand with the stock processor's chat template (with and
without the video, or with black frames), appends the answer tokens, runs one plain HF forward
and takes log2 of the softmax — no interp encoding, no nnsight, no batching.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import interp
from interp.errors import ConditionError, DriveError, VideoError
from interp.studies import drives as dr
from interp.testing import tiny_vlm
from interp.testing.tolerance import assert_close, logprob_scale

NULL_Q = "Please provide a response."
TARGETS = ["a red circle", "two", "blue sky"]
# the largest logprob_scale of the logits the reference forwards met: S of one log-probability
_LOGPROB_S = {"s": 1.0}


def clip(frames: int, h: int, w: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (frames, h, w, 3), dtype=np.uint8)


@pytest.fixture(scope="module")
def vlm() -> interp.VLM:
    return tiny_vlm("qwen2_vl")


@pytest.fixture(scope="module")
def samples() -> list[interp.Sample]:
    return [
        interp.Sample("what happens here ?", video=clip(4, 32, 32, 0), id="v0"),
        interp.Sample("what color is it ?", video=clip(2, 32, 48, 1), id="v1"),
        interp.Sample("how many are there ?", video=clip(4, 48, 32, 2), id="v2"),
    ]


def hand_logprobs2(vlm: interp.VLM, text: str, video: np.ndarray | None, target: list[int]):
    """log2 P(a_t | a_<t, prompt) for every t, from one plain HF teacher-forced forward."""
    proc = vlm.processor
    content = ([{"type": "video"}] if video is not None else []) + [{"type": "text", "text": text}]
    prompt = proc.apply_chat_template(
        [{"role": "user", "content": content}], add_generation_prompt=True, tokenize=False
    )
    kwargs = {"videos": [video]} if video is not None else {}
    inputs = dict(proc(text=[prompt], return_tensors="pt", **kwargs))
    n = inputs["input_ids"].shape[1]
    for key, value in list(inputs.items()):
        if not (isinstance(value, torch.Tensor) and value.dim() == 2 and value.shape == (1, n)):
            continue
        # the answer tokens are text: token ids, attention 1, token types 0
        tail = torch.tensor([target]) if key == "input_ids" else torch.zeros(1, len(target))
        if key == "attention_mask":
            tail = torch.ones(1, len(target))
        inputs[key] = torch.cat([value, tail.to(value.dtype)], dim=1)
    with torch.no_grad():
        logits = vlm.hf(**inputs).logits[0].double()
    used = logits[n - 1 : n - 1 + len(target)]
    _LOGPROB_S["s"] = max(_LOGPROB_S["s"], logprob_scale(used))
    lp = used.log_softmax(-1)
    return (lp[torch.arange(len(target)), torch.tensor(target)] / math.log(2)).numpy()


def drive_scale(targets: list[list[int]], name: str) -> float:
    """S of a drive in bits (docs/conventions.md, Tolerances): a signed sum of log-probabilities
    — T of a T-token target for log P0, 2T for the visual and question drives, T + 1 for the
    prefix drive — each rounded in proportion to its logits' S, so ``operands · S / ln 2``,
    compared at fp32's ε (the forwards are fp32). On this model (T = 7, S ≈ 10) that is
    1e-3 to 2e-3 bits, 10-20x the bare 1e-4 the file held: that was one CPU's rounding on a
    2-layer model, the rule bounds another CPU's too."""
    longest = max(len(a) for a in targets)
    operands = {"p0": longest, "visual_drive": 2 * longest, "question_drive": 2 * longest}
    operands["prefix_drive"] = longest + 1
    return operands[name] * _LOGPROB_S["s"] / math.log(2)


def close_bits(got, want, targets: list[list[int]], name: str) -> None:
    assert_close(got, want, scale=drive_scale(targets, name), dtype=torch.float32, msg=name)


def ids_of(vlm: interp.VLM, text: str) -> list[int]:
    return vlm.tokenizer(text, add_special_tokens=False)["input_ids"]


@pytest.mark.parametrize("null_image", ["blind", "black", "mismatched"])
def test_visual_drive_of_the_video_equals_hand_hf_log_probs(vlm, samples, null_image):
    targets = [ids_of(vlm, t) for t in TARGETS]
    got = dr.causal_drives(
        vlm,
        samples,
        support=samples[:2],
        targets=targets,
        null_image=null_image,
        null_question=NULL_Q,
        visual="video",
        pmi=False,
        batch_size=4,
        progress_bar=False,
    )
    assert got.null_image == null_image
    for i, (s, a) in enumerate(zip(samples, targets)):
        video = s.load_videos()[0]
        null = {
            "blind": None,
            "black": np.zeros_like(video),
            "mismatched": samples[(i + 1) % len(samples)].load_videos()[0],  # all differ
        }[null_image]
        with_v = hand_logprobs2(vlm, NULL_Q, video, a)
        without = hand_logprobs2(vlm, NULL_Q, null, a)
        want_vcd = np.cumsum(with_v - without)
        close_bits(got.visual_drive[i, : len(a)], want_vcd, targets, "visual_drive")
        close_bits(got.p0[i, : len(a)], np.cumsum(without), targets, "p0")
        assert np.isnan(got.visual_drive[i, len(a) :]).all()
    # the video matters: the check has teeth
    assert np.nanmax(np.abs(got.visual_drive)) > 1e-3


def test_question_drive_uses_the_support_videos(vlm, samples):
    """QCD_t = log2 mean_k Π_{i≤t} P(a_i | a_<i, v_k, q) − log2 P0, v_k the support's videos."""
    targets = [ids_of(vlm, t) for t in TARGETS[:1]]
    sup = samples[1:]
    got = dr.causal_drives(
        vlm,
        samples[:1],
        support=sup,
        targets=targets,
        null_question=NULL_Q,
        visual="video",
        pmi=False,
        progress_bar=False,
    )
    s, a = samples[0], targets[0]
    p0 = np.cumsum(hand_logprobs2(vlm, NULL_Q, None, a))
    per_k = [np.cumsum(hand_logprobs2(vlm, s.question, c.load_videos()[0], a)) for c in sup]
    want = np.log2(np.mean([2.0**x for x in per_k], axis=0)) - p0
    close_bits(got.question_drive[0, : len(a)], want, targets, "question_drive")


def test_video_drive_errors(vlm, samples):
    with pytest.raises(ConditionError, match="no video counterpart"):
        dr.causal_drives(vlm, samples, k=2, null_image="white", visual="video")
    with pytest.raises(ConditionError, match="unknown visual"):
        dr.causal_drives(vlm, samples, k=2, visual="audio")
    with pytest.raises(VideoError, match="has no video"):
        dr.causal_drives(vlm, [*samples, interp.Sample("hi", id="t")], k=2, visual="video")
    assert [s.id for s in dr.draw_support(samples, 2, visual="video")] != []
    with pytest.raises(VideoError, match="support sample"):
        dr.causal_drives(
            vlm, samples, support=[interp.Sample("hi", id="t")], visual="video", targets=TARGETS
        )


def test_source_removal_without_the_video_equals_hand_hf(vlm, samples):
    """The "no_image" column (V removed, question kept) is P(a_t | a_<t, q) without the video."""
    targets = [ids_of(vlm, t) for t in TARGETS[:2]]
    got = dr.source_removal(
        vlm, samples[:2], targets=targets, visual="video", batch_size=4, progress_bar=False
    )
    for i, (s, a) in enumerate(zip(samples[:2], targets)):
        full = 2.0 ** hand_logprobs2(vlm, s.question, s.load_videos()[0], a)
        without = 2.0 ** hand_logprobs2(vlm, s.question, None, a)
        assert_close(got.probs["full"][i, : len(a)], full, dtype=torch.float32)
        assert_close(got.probs["no_image"][i, : len(a)], without, dtype=torch.float32)


@pytest.fixture(scope="module")
def base(vlm, samples) -> dr.CausalDrives:
    """Video drives with the PMI baselines (V = ∅: no video), the support the first two samples."""
    targets = [ids_of(vlm, t) for t in TARGETS]
    return dr.causal_drives(
        vlm,
        samples,
        support=samples[:2],
        targets=targets,
        null_question=NULL_Q,
        visual="video",
        batch_size=8,
        progress_bar=False,
    )


def mean_frames(vlm: interp.VLM, video: np.ndarray) -> np.ndarray:
    """``null_video:mean`` as the condition defines it: every pixel the video processor's
    normalisation mean, scaled to 0..255 and rounded (0 after normalising)."""
    mean = np.asarray(vlm.processor.video_processor.image_mean, dtype=np.float64)
    return np.broadcast_to(np.round(255 * mean).astype(np.uint8), video.shape).copy()


def test_drive_sensitivity_over_null_videos_equals_hand_hf(vlm, samples, base):
    """Each variant's P0 and visual drive from plain-HF forwards on prompts built by hand with
    black frames, mean frames, the next sample's video, and (null question) no video."""
    assert base.visual == "video"
    sens = dr.drive_sensitivity(
        vlm,
        samples,
        base,
        null_images=("black", "mean", "mismatched"),
        null_questions=("describe it",),
        batch_size=8,
        progress_bar=False,
    )
    assert list(sens.variants) == [f"{n} | {NULL_Q}" for n in ("black", "mean", "mismatched")] + [
        "blind | describe it"
    ]
    mean_video = mean_frames(vlm, samples[0].load_videos()[0])
    assert len(set(mean_video[0, 0, 0].tolist())) == 3  # not black, not grey: one value a channel
    for key, variant in sens.variants.items():
        assert variant.visual == "video"
        nimg, nq = key.split(" | ")
        for i, (s, a) in enumerate(zip(samples, base.token_ids)):
            video = s.load_videos()[0]
            null = {
                "blind": None,
                "black": np.zeros_like(video),
                "mean": mean_frames(vlm, video),
                "mismatched": samples[(i + 1) % len(samples)].load_videos()[0],
            }[nimg]
            without = hand_logprobs2(vlm, nq, null, a)
            with_v = hand_logprobs2(vlm, nq, video, a)
            n = len(a)
            ids = base.token_ids
            close_bits(variant.p0[i, :n], np.cumsum(without), ids, "p0")
            close_bits(
                variant.visual_drive[i, :n], np.cumsum(with_v - without), ids, "visual_drive"
            )
            # the prefix drive's numerator is the base's (re-referenced to the new P0)
            assert_close(
                variant.prefix_drive[i, :n] + variant.p0[i, :n],
                base.prefix_drive[i, :n] + base.p0[i, :n],
            )
    # mean frames are not black frames: the two variants differ
    black, mean = sens.variants[f"black | {NULL_Q}"], sens.variants[f"mean | {NULL_Q}"]
    assert np.nanmax(np.abs(black.p0 - mean.p0)) > 1e-4
    with pytest.raises(ConditionError, match="no video counterpart"):
        dr.drive_sensitivity(vlm, samples, base, null_images=("noise",), progress_bar=False)
    with pytest.raises(DriveError, match="visual='video'"):
        dr.drive_sensitivity(vlm, samples, base, visual="image", progress_bar=False)


def test_recovery_error_with_video_equals_hand_hf(vlm, samples, base):
    """G_Q and G_P (Eq. 15) over held-out contexts' videos from plain-HF forwards by hand."""
    ctx = samples[1:]
    rec = dr.recovery_error(vlm, samples, base, contexts=ctx, batch_size=8, progress_bar=False)
    assert rec.context_ids == [c.id for c in ctx]
    for i, (s, a) in enumerate(zip(samples, base.token_ids)):
        n = len(a)
        pq = [2.0 ** hand_logprobs2(vlm, s.question, c.load_videos()[0], a) for c in ctx]
        pp = [2.0 ** hand_logprobs2(vlm, c.question, c.load_videos()[0], a) for c in ctx]
        p0 = base.p0[i, :n]
        g_q = np.log2(np.mean([np.cumprod(p) for p in pq], axis=0)) - p0
        g_p = np.log2(np.mean(pp, axis=0)) - p0
        # g_q is formed as the question drive is, g_p as the prefix drive is; an error |d − g|
        # moves by at most g's bound (d is the library's in both)
        ids = base.token_ids
        close_bits(rec.g_q[i, :n], g_q, ids, "question_drive")
        close_bits(rec.g_p[i, :n], g_p, ids, "prefix_drive")
        for name, g, like in (
            ("question_drive", g_q, "question_drive"),
            ("pmi_q", g_q, "question_drive"),
            ("prefix_drive", g_p, "prefix_drive"),
        ):
            want = np.abs(getattr(base, name)[i, :n] - g)
            close_bits(rec.errors[name][i, :n], want, ids, like)
    # the contexts' videos matter: G_Q differs from the video-free P0 reference
    assert np.nanmax(np.abs(rec.g_q)) > 1e-3
    with pytest.raises(DriveError, match="visual='video'"):
        dr.recovery_error(vlm, samples, base, contexts=ctx, visual="image", progress_bar=False)
    with pytest.raises(VideoError, match="held-out context"):
        dr.recovery_error(vlm, samples, base, contexts=[interp.Sample("hi", id="t")])


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--visual", "video"], "has no video"),
        (["--visual", "video", "--null-image", "white"], "no video counterpart"),
    ],
)
def test_the_command_refuses_video_drives_it_cannot_run(tmp_path, capsys, extra, message):
    from interp.cli import main

    argv = ["drives", "--model", "demo", "--data", "demo", "--n", "4", "--k", "2", "--m", "0"]
    argv += ["--out", str(tmp_path / "run"), "--no-progress", *extra]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and message in err
