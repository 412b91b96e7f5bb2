"""Contrastive decoding against a brute-force reference: a per-step loop of plain HF forwards of
the expert and the amateur inputs (each encoded on its own, no KV cache, the sequence grown by one
token per step), the contrast formula written out by hand, the token taken by hand (argmax, or a
draw from a generator seeded as documented) — on tiny models of every family."""

from __future__ import annotations

import math
import zlib
from typing import Any

import pytest
import torch

import interp
from interp.encoding import encode
from interp.errors import DecodingError
from interp.testing import (
    ARCHITECTURES,
    build_tiny,
    grow_inputs,
    make_samples,
    refused,
    shared_tiny_vlm,
    tiny_vlm_with_attention,
)
from interp.testing.tolerance import assert_close, combination_scale
from interventions import AttentionBoost, Steer, SwapImage
from interventions.decoding import (
    DISTURBANCE,
    ContrastiveDecoding,
    contrast,
    icd,
    m3id,
    method,
    pai,
    vcd,
    vdd,
)

# Families that cannot batch a row with an image together with one without (Adapter.mixed_batches).
UNMIXED = [a for a in ARCHITECTURES if not shared_tiny_vlm(a).adapter.mixed_batches]
STEPS = 4


def last_logits(vlm: interp.VLM, inputs: dict[str, Any]) -> torch.Tensor:
    """A plain HF forward (with the family's declared position fix-up, as in test_reading)."""
    if vlm.adapter.forward_inputs is not None:
        inputs = vlm.adapter.forward_inputs(dict(inputs))
    with torch.no_grad():
        return vlm.hf(**inputs).logits[:, -1].float()


def by_hand(
    z: torch.Tensor, amateurs: list[torch.Tensor], alpha: float, beta: float, logprobs: bool
) -> torch.Tensor:
    """The contrast written out: (1 + α)·s(z) − α·mean s(z'), −inf where s(z) < log β + max s(z)."""
    s = (lambda x: x - torch.logsumexp(x, -1, keepdim=True)) if logprobs else (lambda x: x)
    zc = s(z)
    zu = sum(s(a) for a in amateurs) / len(amateurs)
    out = (1 + alpha) * zc - alpha * zu
    keep = zc >= math.log(beta) + zc.max(-1, keepdim=True).values
    return torch.where(keep, out, torch.full_like(out, -math.inf))


def reference(
    vlm: interp.VLM,
    samples: list[interp.Sample],
    expert: str,
    amateurs: list[str],
    weight: Any,
    beta: float,
    logprobs: bool = False,
    *,
    temperature: float | None = None,
    seed: int = 0,
    ref_vlm: interp.VLM | None = None,
    on_forward: Any = None,
) -> tuple[list[list[int]], list[torch.Tensor], list[float]]:
    """Tokens, per-step scores and per-step tolerance scales of the brute-force loop;
    ``weight(t)`` gives α at token t; ``on_forward(i)`` runs before the forward of input i (0: the
    expert, k: amateur k). The scale of a step is that of its contrast's operands
    (``(1 + α)·max|s(z)| + α·max|s(z′)|``, docs/conventions.md, Tolerances)."""
    ref_vlm = ref_vlm or vlm
    inputs = [dict(encode(vlm, samples, c).inputs) for c in [expert, *amateurs]]
    gens = None
    if temperature is not None:
        gens = [
            torch.Generator().manual_seed(zlib.crc32(f"{seed}:{s.id}".encode())) for s in samples
        ]
    tokens, scores, scales = [], [], []
    for t in range(1, STEPS + 1):
        logits = []
        for i, x in enumerate(inputs):
            if on_forward is not None:
                on_forward(i)
            with torch.no_grad():
                logits.append(last_logits(ref_vlm, x))
        step = by_hand(logits[0], logits[1:], weight(t), beta, logprobs)
        s = (lambda x: x - torch.logsumexp(x, -1, keepdim=True)) if logprobs else (lambda x: x)
        mean = sum(s(a) for a in logits[1:]) / len(logits[1:])
        scales.append(combination_scale([(1 + weight(t), s(logits[0])), (weight(t), mean)]))
        if gens is None:
            token = step.argmax(-1)
        else:
            probs = torch.softmax(step / temperature, -1)
            token = torch.cat(
                [torch.multinomial(probs[r], 1, generator=g) for r, g in enumerate(gens)]
            )
        tokens.append(token)
        scores.append(step)
        inputs = [grow_inputs(vlm, x, token) for x in inputs]
    return torch.stack(tokens, 1).tolist(), scores, scales


def assert_equal_to_reference(
    gen: interp.Generation, vlm, ref_tokens, ref_scores, ref_scales
) -> None:
    stops = interp.generation.stop_ids(vlm)
    for row, ids in enumerate(gen.token_ids):
        expected = ref_tokens[row]
        cut = next((i for i, t in enumerate(expected) if t in stops), len(expected))
        assert ids == expected[:cut], f"row {row}"
        got = gen.scores[row]
        want = torch.stack([s[row] for s in ref_scores[: got.shape[0]]])
        finite = torch.isfinite(want)
        assert torch.equal(finite, torch.isfinite(got)), f"row {row}: the cut differs"
        for step in range(got.shape[0]):  # each step at the scale of its own operands
            fin = finite[step]
            assert_close(got[step][fin], want[step][fin], scale=ref_scales[step], msg=f"row {row}")


def expert_changed(gen: interp.Generation, plain: interp.Generation) -> bool:
    """The contrast is not silently skipped: its first-step scores differ from the raw logits
    (beyond the cut) or the tokens differ."""
    for a, b in zip(gen.scores, plain.scores):
        finite = torch.isfinite(a[0])
        if (a[0][finite] - b[0][finite]).abs().max() > 1e-3:
            return True
    return gen.token_ids != plain.token_ids


def amateur_for(arch: str) -> str:
    """The no-image amateur where the family can batch it with image rows, else a black image."""
    return "null:black" if arch in UNMIXED else "blind"


@pytest.fixture(scope="module")
def samples() -> list[interp.Sample]:
    return make_samples(3)


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_greedy_contrast_equals_the_brute_force_loop(arch, samples):
    vlm = shared_tiny_vlm(arch)
    dec = contrast([amateur_for(arch)], alpha=1.0, beta=0.1)
    gen = interp.generate(
        vlm, samples, decoding=dec, max_new_tokens=STEPS, output_scores=True, progress_bar=False
    )
    tokens, scores, scales = reference(
        vlm, samples, "full", [amateur_for(arch)], lambda t: 1.0, 0.1
    )
    assert_equal_to_reference(gen, vlm, tokens, scores, scales)
    plain = interp.generate(
        vlm, samples, max_new_tokens=STEPS, output_scores=True, progress_bar=False
    )
    assert expert_changed(gen, plain)


@pytest.mark.parametrize("arch", ["llava", "qwen2_vl", "idefics3", "mllama", "paligemma"])
def test_sampled_vcd_equals_the_brute_force_loop_with_the_same_seeds(arch, samples):
    vlm = shared_tiny_vlm(arch)
    gen = interp.generate(
        vlm,
        samples,
        decoding=vcd(noise_step=500),
        do_sample=True,
        temperature=0.7,
        seed=3,
        max_new_tokens=STEPS,
        output_scores=True,
        progress_bar=False,
    )
    tokens, scores, scales = reference(
        vlm, samples, "full", ["distort:500"], lambda t: 1.0, 0.1, temperature=0.7, seed=3
    )
    assert_equal_to_reference(gen, vlm, tokens, scores, scales)


@pytest.mark.parametrize("arch", ["llava", "qwen2_5_vl", "gemma3"])
def test_m3id_and_two_averaged_amateurs_equal_the_formula(arch, samples):
    vlm = shared_tiny_vlm(arch)
    lam = 0.3  # large enough that the weight visibly grows over four tokens
    gen = interp.generate(
        vlm,
        samples,
        decoding=m3id(lam=lam),
        max_new_tokens=STEPS,
        output_scores=True,
        progress_bar=False,
    )
    tokens, scores, scales = reference(
        vlm, samples, "full", ["blind"], lambda t: math.exp(lam * t) - 1, 0.1, logprobs=True
    )
    assert_equal_to_reference(gen, vlm, tokens, scores, scales)
    two = vdd(amateur=("blind", "null:white"), alpha=0.7, beta=0.2)
    gen = interp.generate(
        vlm, samples, decoding=two, max_new_tokens=STEPS, output_scores=True, progress_bar=False
    )
    tokens, scores, scales = reference(
        vlm, samples, "full", ["blind", "null:white"], lambda t: 0.7, 0.2
    )
    assert_equal_to_reference(gen, vlm, tokens, scores, scales)


def test_icd_disturbs_the_instruction_of_the_amateur_only(samples):
    vlm = shared_tiny_vlm("qwen2_vl")
    gen = interp.generate(
        vlm, samples, decoding=icd(), max_new_tokens=STEPS, output_scores=True, progress_bar=False
    )
    tokens, scores, scales = reference(
        vlm, samples, "full", [f"full+instruct:{DISTURBANCE}"], lambda t: 1.0, 0.1
    )
    assert_equal_to_reference(gen, vlm, tokens, scores, scales)


@pytest.mark.parametrize("arch", ["llava", "qwen2_vl"])
def test_pai_boost_and_guidance_equal_a_hand_written_attention_loop(arch, samples):
    """PAI: the boost a + α|a| on image columns of the last query row (layers 3..L) inside a
    hand-written attention, and the guidance γ·(l_c − l_u) + l_u against the image-free input."""
    vlm = interp.load(*build_tiny(arch, attn_implementation="eager"))
    alpha, gamma = 0.5, 1.3
    gen = interp.generate(
        vlm,
        samples,
        decoding=pai(alpha=alpha, gamma=gamma),
        max_new_tokens=STEPS,
        output_scores=True,
        progress_bar=False,
    )
    image_cols = {"mask": None}

    def boost(scores: torch.Tensor, layer_idx: int) -> torch.Tensor:
        mask = image_cols["mask"]
        if layer_idx + 1 < 3 or mask is None or not mask.any():
            return scores
        cols = torch.zeros_like(scores, dtype=torch.bool)
        cols[:, :, -1, : mask.shape[1]] = mask[:, None, :]
        return torch.where(cols, scores + alpha * scores.abs(), scores)

    ref_vlm = tiny_vlm_with_attention(arch, boost)
    expert_mask = encode(vlm, samples).image_mask

    def on_forward(i: int) -> None:  # the expert's image columns; the amateur has none
        image_cols["mask"] = expert_mask if i == 0 else None

    tokens, scores, scales = reference(
        vlm,
        samples,
        "full",
        ["blind"],
        lambda t: gamma - 1,
        0.1,
        logprobs=True,
        ref_vlm=ref_vlm,
        on_forward=on_forward,
    )
    assert_equal_to_reference(gen, vlm, tokens, scores, scales)


@pytest.mark.parametrize("arch", ["llava", "qwen2_vl"])
def test_plain_scores_are_the_model_logits(arch, samples):
    """Without a method, the returned scores are the raw next-token logits of each step (not the
    one-hot the library writes back to force its token)."""
    vlm = shared_tiny_vlm(arch)
    gen = interp.generate(
        vlm, samples, max_new_tokens=STEPS, output_scores=True, progress_bar=False
    )
    for row in range(len(samples)):
        inputs = dict(encode(vlm, samples[row : row + 1]).inputs)
        assert_close(gen.scores[row][0], last_logits(vlm, inputs)[0])
        assert torch.isfinite(gen.scores[row]).all()


def test_batch_size_and_order_do_not_change_the_answers():
    vlm = shared_tiny_vlm("llava")
    many = make_samples(9, seed=4)
    kw = dict(decoding=vcd(), max_new_tokens=STEPS, progress_bar=False, output_scores=True)
    for sampled in (False, True):
        one = [
            interp.generate(vlm, [s], do_sample=sampled, seed=1, batch_size=1, **kw) for s in many
        ]
        all_ = interp.generate(vlm, many, do_sample=sampled, seed=1, batch_size=16, **kw)
        rev = interp.generate(vlm, many[::-1], do_sample=sampled, seed=1, batch_size=4, **kw)
        assert [g.token_ids[0] for g in one] == all_.token_ids == rev.token_ids[::-1]
        for g, s in zip(one, all_.scores):
            fin = torch.isfinite(s)
            assert_close(g.scores[0][fin], s[fin])


def test_edits_compose_with_the_contrast(samples):
    """A steering edit on every position applies to the expert and the amateur rows alike: the
    same as the brute-force loop of the steered model."""
    vlm = shared_tiny_vlm("llava")
    v = torch.randn(vlm.d_model, generator=torch.Generator().manual_seed(0)) * 0.5
    gen = interp.generate(
        vlm,
        samples,
        decoding=vdd(),
        edits=[Steer(2, v, "all")],
        max_new_tokens=STEPS,
        output_scores=True,
        progress_bar=False,
    )
    layer = vlm.adapter.layers(vlm.hf)[1]

    def hook(module: Any, args: Any, out: Any) -> Any:
        h = out[0] if isinstance(out, tuple) else out
        h = h + v.to(h.dtype)  # every position: padding too, which no attended row reads
        return (h, *out[1:]) if isinstance(out, tuple) else h

    handle = layer.register_forward_hook(hook, prepend=True)
    try:
        tokens, scores, scales = reference(vlm, samples, "full", ["blind"], lambda t: 1.0, 0.1)
    finally:
        handle.remove()
    assert_equal_to_reference(gen, vlm, tokens, scores, scales)
    # an image swap on the expert's rows leaves the image-free amateur rows alone
    swapped = interp.generate(
        vlm,
        samples,
        decoding=vdd(),
        edits=[SwapImage("null:black")],
        max_new_tokens=STEPS,
        output_scores=True,
        progress_bar=False,
    )
    tokens, scores, scales = reference(vlm, samples, "null:black", ["blind"], lambda t: 1.0, 0.1)
    assert_equal_to_reference(swapped, vlm, tokens, scores, scales)


def test_store_keys_on_the_method(tmp_path, samples):
    vlm = shared_tiny_vlm("llava")
    a = interp.generate(
        vlm, samples, decoding=vcd(), max_new_tokens=3, store=tmp_path / "s", progress_bar=False
    )
    again = interp.generate(
        vlm, samples, decoding=vcd(), max_new_tokens=3, store=tmp_path / "s", progress_bar=False
    )
    assert a.token_ids == again.token_ids
    with pytest.raises(interp.StoreError):
        interp.generate(
            vlm,
            samples,
            decoding=vcd(alpha=2.0),
            max_new_tokens=3,
            store=tmp_path / "s",
            progress_bar=False,
        )


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: method("beam"), "unknown decoding method 'beam'"),
        (lambda: ContrastiveDecoding("blind", alpha=-0.1), "alpha must be"),
        (lambda: ContrastiveDecoding("blind", beta=0.0), r"beta must be in \(0, 1\]"),
        (lambda: ContrastiveDecoding("blind", beta=1.5), r"beta must be in \(0, 1\]"),
        (lambda: ContrastiveDecoding("nowhere"), "bad amateur condition"),
        (lambda: vcd(noise_step=1000), "noise_step"),
        (lambda: method("vcd", gamma=2), "unexpected keyword"),
        (lambda: pai(gamma=0.5), "gamma"),
    ],
)
def test_bad_methods_are_typed_errors(make, match):
    with pytest.raises(DecodingError, match=match):
        make()


def test_bad_runs_are_refused_before_any_compute(samples, monkeypatch):
    vlm = shared_tiny_vlm("llava")
    calls = {"n": 0}
    original = interp.generation.generate_batch

    def counting(*a: Any, **k: Any) -> Any:
        calls["n"] += 1
        return original(*a, **k)

    monkeypatch.setattr(interp.generation, "generate_batch", counting)
    with pytest.raises(DecodingError, match="equals the expert"):
        interp.generate(vlm, samples, "blind", decoding=vdd(), progress_bar=False)
    with pytest.raises(DecodingError, match="cannot run rows with and without an image"):
        interp.generate(shared_tiny_vlm("mllama"), samples, decoding=m3id(), progress_bar=False)
    flash = interp.load(*build_tiny("llava", attn_implementation="sdpa"))
    flash.hf.config._attn_implementation = "flash_attention_2"  # no 4-D mask: PAI cannot run
    with pytest.raises(interp.InterventionError, match="attn_implementation='sdpa'"):
        interp.generate(flash, samples, decoding=pai(), progress_bar=False)
    with refused(DecodingError, match="interp.Decoding"):
        interp.generate(vlm, samples, decoding="vcd", progress_bar=False)
    assert calls["n"] == 0


def test_plain_names_and_presets():
    assert method("greedy") is None
    assert method("VCD").amateurs == (interp.Condition.parse("distort:500"),)
    assert str(method("icd").amateurs[0]).startswith("full+instruct:You are a confused")
    assert method("pai").edits and isinstance(method("pai").edits[0], AttentionBoost)
    assert method("contrast", amateur="blind").alpha == 0.5
