"""Interventions on audio and video (``SwapFeatures``, ``AblateFeatures``, ``Knockout`` keyed by
modality, contrastive decoding with an amateur that drops or degrades a modality) against plain HF
references, on Qwen2-Audio (audio) and Qwen2-VL (video) tiny models.

References never come from the code under test: a swap for the null input is compared with a plain
HF forward of inputs whose waveforms / frames were zeroed by hand; an ablation with an HF forward
whose first decoder layer gets the zero or row-mean vectors at the placeholder positions through a
plain torch pre-hook; a knockout with a hand-written eager attention applying the mask; contrastive
decoding with a per-step loop of plain HF forwards and the formula written out. Each batch mixes a
row without the modality, which the edits must leave alone.

Each comparison is rounding of an fp32 forward, ε·S (``assert_close``; docs/conventions.md,
Tolerances): S = max |reference| for states, logits and log-probabilities; for a contrast score
``(1 + α)·z − α·z'`` the operands' ``(1 + α)·max|z| + α·max|z'|`` (``combination_scale``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import torch

import interp
from interp.encoding import encode
from interp.errors import (
    ConditionError,
    DecodingError,
    ImageTokenMismatchError,
    InterventionError,
    ModalityError,
)
from interp.testing import (
    grow_inputs,
    make_samples,
    refused,
    shared_tiny_vlm,
    tiny_vlm_with_attention,
)
from interp.testing.tolerance import assert_close, combination_scale
from interventions import AblateFeatures, AblateImage, Knockout, SwapFeatures, SwapImage
from interventions.decoding import contrast

RATE = 16000
STEPS = 3


def wave(seconds: float, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(0, 0.1, int(seconds * RATE)).astype(np.float32)


def clip(frames: int, h: int, w: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (frames, h, w, 3), dtype=np.uint8)


@dataclass(frozen=True)
class Case:
    kind: str
    arch: str
    null: str  # the null-input condition of the modality

    def samples(self) -> list[interp.Sample]:
        """Two rows with the modality (one audio / two audios; videos of two sizes) and one
        without."""
        if self.kind == "audio":
            return [
                interp.Sample("what is this sound ?", audio=(wave(0.4, 0), RATE), id="a0"),
                interp.Sample(
                    "is {audio} the same as {audio} ?",
                    audio=[(wave(0.3, 1), RATE), (wave(0.6, 2), RATE)],
                    id="a1",
                ),
                interp.Sample("two plus three", id="t0"),
            ]
        return [
            interp.Sample("what happens {video} here ?", video=clip(4, 32, 32, 0), id="v0"),
            interp.Sample("describe the video", video=clip(3, 32, 48, 1), id="v1"),
            interp.Sample("two plus three", id="t0"),
        ]

    def zeroed(self, s: interp.Sample) -> interp.Sample:
        """The sample with its audio / video replaced by hand: zero waveforms of the same
        lengths, black frames of the same size and count."""
        if self.kind == "audio" and s.has_audio:
            silent = [(np.zeros_like(a.waveform), a.sampling_rate) for a in s.load_audios()]
            return interp.Sample(s.question, audio=silent, id=s.id)
        if self.kind == "video" and s.has_video:
            return interp.Sample(s.question, video=np.zeros_like(s.load_videos()[0]), id=s.id)
        return s


CASES = [
    Case("audio", "qwen2_audio", "null_audio:silence"),
    Case("video", "qwen2_vl", "null_video:black"),
    Case("audio", "qwen2_5_omni_thinker", "null_audio:silence"),
    Case("audio", "qwen3_omni_moe_thinker", "null_audio:silence"),
    Case("audio", "gemma4", "null_audio:silence"),
    Case("video", "qwen2_5_omni_thinker", "null_video:black"),
]
IDS = [f"{c.kind}-{c.arch}" for c in CASES]
KW: dict[str, Any] = {"progress_bar": False, "batch_size": 3}


def hf_last_states(
    vlm: interp.VLM, samples: list[interp.Sample], pre_hook: Any = None
) -> torch.Tensor:
    """``[n, L, d]``: HF ``hidden_states[0..L-1]`` at each row's last prompt token, of a plain HF
    forward (``pre_hook`` optionally on the first decoder layer)."""
    enc = encode(vlm, samples)
    # residual index 0: the first layer's input, or the decoder's embeddings keyword (Gemma 4
    # projects its per-layer inputs from it)
    first = (
        vlm.adapter.decoder(vlm.hf)
        if vlm.adapter.embeddings_kwarg
        else vlm.adapter.layers(vlm.hf)[0]
    )
    handle = (
        None if pre_hook is None else first.register_forward_pre_hook(pre_hook, with_kwargs=True)
    )
    try:
        with torch.no_grad():
            hs = vlm.hf(**enc.inputs, output_hidden_states=True).hidden_states
    finally:
        if handle is not None:
            handle.remove()
    rows = torch.arange(len(samples))
    return torch.stack([h[rows, enc.last_index] for h in hs[: vlm.n_layers]], dim=1).float()


# -- swap ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_swapped_features_equal_a_real_run_with_the_null_input(case):
    vlm, samples = shared_tiny_vlm(case.arch), case.samples()
    got = interp.residual_stream(vlm, samples, edits=[SwapFeatures(case.kind, case.null)], **KW)
    want = hf_last_states(vlm, [case.zeroed(s) for s in samples])
    assert_close(got[:, : vlm.n_layers], want)
    # the default source is the modality's null input
    default = interp.residual_stream(vlm, samples, edits=[SwapFeatures(case.kind)], **KW)
    torch.testing.assert_close(default, got, atol=0, rtol=0)
    plain = interp.residual_stream(vlm, samples, **KW)
    assert (plain[:2] - got[:2]).abs().max() > 1e-3  # the input matters: the check has teeth
    torch.testing.assert_close(plain[2], got[2], atol=0, rtol=0)  # the row without it: untouched


def test_image_classes_are_the_image_case_with_their_old_fingerprints():
    """SwapImage / AblateImage keep the store keys they had before SwapFeatures existed."""
    swap, ablate = SwapImage("null:white"), AblateImage("mean")
    assert isinstance(swap, SwapFeatures) and swap.kind == "image"
    assert isinstance(ablate, AblateFeatures) and ablate.kind == "image"
    assert swap.fingerprint() == {
        "type": "interventions.image.SwapImage",
        "params": {"source": "null:white"},
    }
    assert ablate.fingerprint() == {
        "type": "interventions.image.AblateImage",
        "params": {"mode": "mean"},
    }
    assert repr(swap) == "SwapImage(source='null:white')"
    # and they behave as the generic class on images
    vlm = shared_tiny_vlm("llava")
    samples = make_samples(2)
    for a, b in [
        (swap, SwapFeatures("image", "null:white")),
        (ablate, AblateFeatures("image", "mean")),
    ]:
        x = interp.residual_stream(vlm, samples, edits=[a], **KW)
        y = interp.residual_stream(vlm, samples, edits=[b], **KW)
        torch.testing.assert_close(x, y, atol=0, rtol=0)


# -- ablation ------------------------------------------------------------------------------------


def positions_hook(mask: torch.Tensor, mode: str) -> Any:
    """A torch pre-hook of the first decoder layer (of the decoder, on its ``inputs_embeds``, where
    that is residual index 0): the vectors at ``mask`` set to 0, or each to the mean over its
    row's masked vectors (explicit loop over rows)."""

    def hook(module: Any, args: tuple, kwargs: dict) -> Any:
        key = "inputs_embeds" if "inputs_embeds" in kwargs else "hidden_states"
        hidden = args[0] if args else kwargs[key]
        hidden = hidden.clone()
        for row in range(hidden.shape[0]):
            where = mask[row]
            if not bool(where.any()):
                continue
            if mode == "zero":
                hidden[row, where] = 0.0
            else:
                hidden[row, where] = hidden[row, where].mean(0)
        if args:
            return (hidden, *args[1:]), kwargs
        return args, {**kwargs, key: hidden}

    return hook


@pytest.mark.parametrize("mode", ["zero", "mean"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_ablation_edits_exactly_the_feature_positions(case, mode):
    vlm, samples = shared_tiny_vlm(case.arch), case.samples()
    got = interp.residual_stream(vlm, samples, edits=[AblateFeatures(case.kind, mode)], **KW)
    mask = encode(vlm, samples).mask(case.kind)
    assert mask[:2].any(dim=1).all() and not mask[2].any()
    want = hf_last_states(vlm, samples, positions_hook(mask, mode))
    # index 0 is what HF recorded before the hook; layers 1.. carry the ablation
    assert_close(got[:, 1 : vlm.n_layers], want[:, 1:])
    plain = interp.residual_stream(vlm, samples, **KW)
    assert (plain[:2] - got[:2]).abs().max() > 1e-3
    torch.testing.assert_close(plain[2], got[2], atol=0, rtol=0)


# -- attention knockout keyed by modality --------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_knockout_by_modality_equals_a_hand_masked_attention(case):
    vlm, samples = shared_tiny_vlm(case.arch), case.samples()
    layers = [1, 2]
    got = interp.residual_stream(
        vlm, samples, edits=[Knockout(keys=case.kind, queries="last", layers=layers)], **KW
    )
    enc = encode(vlm, samples)
    keys = enc.mask(case.kind)

    def knock(scores: torch.Tensor, layer_idx: int) -> torch.Tensor:
        if layer_idx + 1 not in layers:
            return scores
        block = torch.zeros_like(scores, dtype=torch.bool)
        block[torch.arange(len(samples)), :, enc.last_index] = keys[:, None, :]
        return scores.masked_fill(block, torch.finfo(scores.dtype).min)

    want = interp.residual_stream(tiny_vlm_with_attention(case.arch, knock), samples, **KW)
    assert_close(got, want)
    plain = interp.residual_stream(vlm, samples, **KW)
    assert (plain[:2] - got[:2]).abs().max() > 1e-4


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_text_knocked_out_from_the_modality_never_hears_or_sees_it(case):
    """Every text position blocked from the audio / video positions in every layer: the last
    token's states are the same whatever the audio / video (real or null)."""
    vlm, samples = shared_tiny_vlm(case.arch), case.samples()[:2]
    edit = Knockout(keys=case.kind, queries="text")
    a = interp.residual_stream(vlm, samples, edits=[edit], **KW)
    b = interp.residual_stream(vlm, samples, case.null, edits=[edit], **KW)
    c = interp.residual_stream(vlm, samples, case.null, **KW)
    assert_close(a, b)
    assert (a - c).abs().max() > 1e-4


# -- contrastive decoding with a modality-degrading amateur ---------------------------------------


def brute_force(
    vlm: interp.VLM, samples: list[interp.Sample], amateur: str, alpha: float, beta: float
) -> tuple[list[list[int]], list[torch.Tensor], float]:
    """Greedy contrastive decoding by hand: expert and amateur inputs encoded apart, one full HF
    forward each per step (no cache), ``(1 + α)·z − α·z'`` cut at ``log β + max z``; also the
    scores' rounding scale, ``combination_scale`` of the operands over every step."""
    inputs = [dict(encode(vlm, samples, c).inputs) for c in ("full", amateur)]
    tokens, scores, scale = [], [], 0.0
    for _ in range(STEPS):
        with torch.no_grad():
            z, zp = (vlm.hf(**x).logits[:, -1].float() for x in inputs)
        step = (1 + alpha) * z - alpha * zp
        scale = max(scale, combination_scale([(1 + alpha, z), (alpha, zp)]))
        step = step.masked_fill(z < math.log(beta) + z.max(-1, keepdim=True).values, -math.inf)
        token = step.argmax(-1)
        tokens.append(token)
        scores.append(step)
        inputs = [grow_inputs(vlm, x, token) for x in inputs]
    return torch.stack(tokens, 1).tolist(), scores, scale


AMATEURS = [
    ("audio", "no_audio"),
    ("audio", "null_audio:noise"),
    ("video", "no_video"),
    ("video", "null_video:black"),
]


@pytest.mark.parametrize(("kind", "amateur"), AMATEURS)
def test_contrast_with_a_modality_amateur_equals_the_brute_force_loop(kind, amateur):
    case = next(c for c in CASES if c.kind == kind)
    vlm, samples = shared_tiny_vlm(case.arch), case.samples()
    dec = contrast(amateur, alpha=1.0, beta=0.1)
    gen = interp.generate(
        vlm, samples, decoding=dec, max_new_tokens=STEPS, output_scores=True, **KW
    )
    tokens, scores, scale = brute_force(vlm, samples, amateur, 1.0, 0.1)
    stops = interp.generation.stop_ids(vlm)
    for row, ids in enumerate(gen.token_ids):
        expected = tokens[row]
        cut = next((i for i, t in enumerate(expected) if t in stops), len(expected))
        assert ids == expected[:cut], f"row {row}"
        got = gen.scores[row]
        want = torch.stack([s[row] for s in scores[: got.shape[0]]])
        finite = torch.isfinite(want)
        assert torch.equal(finite, torch.isfinite(got)), f"row {row}: the cut differs"
        assert_close(got[finite], want[finite], scale=scale)
    # the contrast is in effect on the rows with the modality
    plain = interp.generate(vlm, samples, max_new_tokens=STEPS, output_scores=True, **KW)
    first = [
        (a[0] - b[0])[torch.isfinite(a[0])].abs().max() for a, b in zip(gen.scores, plain.scores)
    ]
    assert max(first[:2]) > 1e-3


# -- checks before compute -----------------------------------------------------------------------


def counting(vlm: interp.VLM) -> tuple[dict[str, int], Any]:
    calls = {"n": 0}

    def hook(module: Any, args: Any) -> None:
        calls["n"] += 1

    return calls, vlm.hf.get_input_embeddings().register_forward_pre_hook(hook)


@pytest.mark.parametrize(
    ("arch", "edit", "match"),
    [
        ("llava", lambda: SwapFeatures("audio"), r"llava.* not audio"),
        ("llava", lambda: AblateFeatures("video"), r"llava.* not video"),
        ("llava", lambda: Knockout(keys="audio:0"), r"llava.* not audio"),
        ("qwen2_audio", lambda: SwapFeatures("video"), r"qwen2_audio.* not video"),
        ("qwen2_audio", lambda: Knockout(), r"qwen2_audio.* not image"),
        ("qwen2_audio", lambda: Knockout(keys="text", queries="video"), r"qwen2_audio.* not video"),
    ],
)
def test_a_family_without_the_modality_is_refused_before_compute(arch, edit, match):
    vlm = shared_tiny_vlm(arch)
    samples = Case("audio", "", "").samples()[2:]  # a text-only row: every family takes it
    calls, handle = counting(vlm)
    try:
        with refused(ModalityError, match=match):
            interp.residual_stream(vlm, samples, edits=[edit()], progress_bar=False)
        with refused(ModalityError, match=match):
            interp.generate(vlm, samples, edits=[edit()], max_new_tokens=2, progress_bar=False)
        for amateur in ("no_audio", "null_video:black") if arch == "llava" else ("blind",):
            with refused(DecodingError, match=rf"{arch}.* not (audio|video|image)"):
                interp.generate(
                    vlm, samples, decoding=contrast(amateur), max_new_tokens=2, progress_bar=False
                )
    finally:
        handle.remove()
    assert calls["n"] == 0


def test_bad_constructions_are_typed():
    with refused(InterventionError, match="unknown modality"):
        SwapFeatures("smell")  # type: ignore[arg-type]
    with refused(ConditionError, match="carries no audio"):
        SwapFeatures("audio", "no_audio")
    with refused(ConditionError, match="carries no video"):
        SwapFeatures("video", "no_video+no_question")
    with refused(InterventionError, match="unknown ablation mode"):
        AblateFeatures("audio", "median")  # type: ignore[arg-type]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_swap_in_generate_and_score_equals_the_null_condition(case):
    """At the prompt forward only, the swap reaches every generated token through the cache:
    greedy tokens and teacher-forced scores equal those of a real run under the null condition."""
    vlm, samples = shared_tiny_vlm(case.arch), case.samples()[:2]
    edit = [SwapFeatures(case.kind, case.null)]
    kw = {**KW, "max_new_tokens": 4, "output_scores": True}
    got = interp.generate(vlm, samples, edits=edit, **kw)
    want = interp.generate(vlm, samples, case.null, **kw)
    assert got.token_ids == want.token_ids
    for a, b in zip(got.scores, want.scores):
        assert_close(a, b)
    targets = ["a red circle", "two"]
    scored = interp.score(vlm, samples, targets, edits=edit, **KW)
    ref = interp.score(vlm, samples, targets, case.null, **KW)
    assert_close(scored.logprobs, ref.logprobs)


def test_a_source_of_another_length_is_refused_naming_the_samples():
    vlm = shared_tiny_vlm("qwen2_audio")
    samples = [
        interp.Sample("what is this sound ?", audio=(wave(0.4, 0), RATE), id="short"),
        interp.Sample("what is this sound ?", audio=(wave(0.9, 1), RATE), id="long"),
    ]
    with refused(ImageTokenMismatchError, match=r"'short'.*audio positions"):
        interp.residual_stream(vlm, samples, edits=[SwapFeatures("audio", "swap_audio:next")], **KW)


def test_video_edits_are_refused_where_deepstack_mixes_image_and_video():
    """Qwen3-VL adds per-layer DeepStack features at image and video positions together: a
    video-only swap could not be exact, so it is refused before compute."""
    from dataclasses import replace

    base = shared_tiny_vlm("qwen3_vl")
    with_video = replace(base.adapter, modalities=("image", "video"), video_features="model.visual")
    vlm = interp.load(base.hf, base.processor, adapter=with_video)
    for edit in (SwapFeatures("video"), AblateFeatures("video")):
        with refused(InterventionError, match="DeepStack"):
            edit.check(vlm)
    SwapFeatures("image").check(vlm)  # the image case handles DeepStack itself
