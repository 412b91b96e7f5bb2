"""bf16 on the CPU: measurements of a model loaded with ``interp.load(folder, dtype=torch.bfloat16)``
against Hugging Face run in bf16 by hand.

Tolerance: exact (``atol=0, rtol=0``), measured. bf16 keeps 8 significant bits, so one rounding
step moves a value by up to 2^-8 ≈ 4e-3 relative; two computations that round in a different order
drift apart by that much per operation. The library does not recompute anything: it reads the
tensors the model's own forward produces (nnsight hooks on the same modules), casts edit vectors to
the model dtype before adding them exactly where the hand-made hook adds them, and converts bf16
to fp32 only on the way out (exact). Same operations in the same order give the same bits, and the
tests below measured a maximum difference of 0.0 on every family; anything looser would hide a
change of operation order.

Scores are the one deliberate difference from a naive bf16 pipeline: ``interp.score`` takes the
log-softmax in fp32 of the bf16 logits (as a careful user would). A bf16 log-softmax rounds the
log-normaliser itself and was measured 0.013-0.022 nats away on these models; the test checks both
the equality with the fp32 reference and that the choice matters.

Loading: the folder path is the one to use. ``from_pretrained(dtype=torch.bfloat16)`` keeps the
rotary-embedding frequencies in fp32, whereas ``model.to(torch.bfloat16)`` rounds them too (a
different model, whose states differed by up to 0.03 on tiny LLaVA).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from transformers import AttentionInterface
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, eager_mask

import interp
from interp.encoding import append_targets, encode, target_ids
from interp.testing import (
    Recorder,
    add_to_layer,
    build_tiny,
    hf_forward,
    hf_hidden_states,
    last_layer_raw,
    make_samples,
    reference_attention,
    steering_vector,
)
from interventions import Knockout, Steer, SwapImage

ARCHS = ["llava", "qwen2_vl", "idefics3", "gemma3"]
EXACT = {"atol": 0.0, "rtol": 0.0}
_CACHE: dict[tuple[str, str], interp.VLM] = {}


def bf16_vlm(arch: str, tmp: Path, attention: str = "eager") -> interp.VLM:
    """The tiny model of ``arch`` saved with its fp32 weights and loaded back in bf16, the way a
    user loads a checkpoint (``attention`` may name a registered reference implementation)."""
    key = (arch, attention)
    if key not in _CACHE:
        model, processor = build_tiny(arch, attn_implementation="eager")
        folder = tmp / f"{arch}-{attention}"
        model.save_pretrained(folder)
        vlm = interp.load(folder, processor, dtype=torch.bfloat16, attn_implementation="eager")
        if attention != "eager":
            vlm.hf.set_attn_implementation(attention)
        _CACHE[key] = vlm
    return _CACHE[key]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bf16")


@pytest.fixture(scope="module")
def samples() -> list[interp.Sample]:
    return make_samples(4)


def last_states(vlm: interp.VLM, enc: interp.Encoding, out: Any) -> torch.Tensor:
    """[batch, L+1, d] last-token states from a plain HF forward: hidden_states[0..L-1] and the
    raw output of the last layer (HF's hidden_states[-1] is after the final norm)."""
    rows = torch.arange(len(enc))
    hs = hf_hidden_states(out)[: vlm.n_layers]
    states = [h[rows, enc.last_index] for h in hs]
    states.append(last_layer_raw(vlm, enc)[rows, enc.last_index])
    return torch.stack(states, 1).float()


@pytest.mark.parametrize("arch", ARCHS)
def test_load_in_bf16(arch, folder):
    vlm = bf16_vlm(arch, folder)
    assert vlm.dtype == torch.bfloat16
    assert {p.dtype for p in vlm.hf.parameters()} == {torch.bfloat16}


@pytest.mark.parametrize("arch", ARCHS)
def test_residual_stream_equals_hf_hidden_states(arch, folder, samples):
    vlm = bf16_vlm(arch, folder)
    got = interp.residual_stream(vlm, samples, batch_size=4, progress_bar=False)
    enc = encode(vlm, samples)
    assert enc.inputs["pixel_values"].dtype == torch.bfloat16
    want = last_states(vlm, enc, hf_forward(vlm, enc, output_hidden_states=True))
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, want, **EXACT)


@pytest.mark.parametrize("arch", ARCHS)
def test_generate_equals_hf_generate(arch, folder, samples):
    vlm = bf16_vlm(arch, folder)
    gen = interp.generate(vlm, samples[:3], max_new_tokens=4, batch_size=3, progress_bar=False)
    for sample, ids in zip(samples[:3], gen.token_ids):
        enc = encode(vlm, [sample])
        with torch.no_grad():
            out = vlm.hf.generate(
                **enc.inputs,
                max_new_tokens=4,
                do_sample=False,
                pad_token_id=vlm.tokenizer.pad_token_id,
            )
        assert ids == out[0, enc.input_ids.shape[1] :].tolist()[: len(ids)]


@pytest.mark.parametrize("arch", ARCHS)
def test_score_is_an_fp32_log_softmax_of_the_bf16_logits(arch, folder, samples):
    vlm = bf16_vlm(arch, folder)
    got = interp.score(vlm, samples, batch_size=4, progress_bar=False)
    enc = encode(vlm, samples)
    ids = target_ids(vlm, [s.answer for s in samples])
    ext, positions, valid = append_targets(vlm, enc, ids)
    logits = hf_forward(vlm, ext).logits
    assert logits.dtype == torch.bfloat16
    rows = torch.arange(len(samples))[:, None]
    tokens = ext.input_ids.gather(1, positions)[..., None]

    def pick(logprobs: torch.Tensor) -> torch.Tensor:
        return logprobs[rows, positions - 1].gather(-1, tokens)[..., 0].float() * valid

    want = pick(logits.float().log_softmax(-1))
    torch.testing.assert_close(got.logprobs, want, **EXACT)
    naive = pick(logits.log_softmax(-1))  # normalised in bf16
    assert (got.logprobs - naive).abs().max() > 1e-3


@pytest.mark.parametrize("arch", ARCHS)
def test_steer_equals_a_forward_hook(arch, folder, samples):
    vlm = bf16_vlm(arch, folder)
    v = steering_vector(vlm, scale=0.5)
    got = interp.residual_stream(
        vlm, samples, edits=[Steer(1, v, "all")], batch_size=4, progress_bar=False
    )
    enc = encode(vlm, samples)
    with add_to_layer(vlm, 1, v, enc.attention_mask.bool()):
        want = last_states(vlm, enc, hf_forward(vlm, enc, output_hidden_states=True))
    torch.testing.assert_close(got, want, **EXACT)
    plain = interp.residual_stream(vlm, samples, batch_size=4, progress_bar=False)
    assert (got - plain).abs().max() > 1e-2  # the edit did something


@pytest.mark.parametrize("arch", ["llava", "gemma3"])
def test_steered_generation_equals_hf_generate_with_the_hook(arch, folder, samples):
    """Steer at every position, prompt and generated tokens: HF's own cached generate with the
    same hook on every forward (one row at a time, so no padding position is touched)."""
    vlm = bf16_vlm(arch, folder)
    v = steering_vector(vlm, 3, scale=0.3)
    gen = interp.generate(
        vlm, samples[:2], max_new_tokens=4, edits=[Steer(2, v)], batch_size=2, progress_bar=False
    )
    plain = interp.generate(vlm, samples[:2], max_new_tokens=4, batch_size=2, progress_bar=False)
    for sample, ids in zip(samples[:2], gen.token_ids):
        enc = encode(vlm, [sample])
        everywhere = lambda h: torch.ones(h.shape[:2], dtype=torch.bool)  # noqa: E731
        with add_to_layer(vlm, 2, v, everywhere), torch.no_grad():
            out = vlm.hf.generate(
                **enc.inputs,
                max_new_tokens=4,
                do_sample=False,
                pad_token_id=vlm.tokenizer.pad_token_id,
            )
        assert ids == out[0, enc.input_ids.shape[1] :].tolist()[: len(ids)]
    assert gen.token_ids != plain.token_ids  # the edit did something


@pytest.mark.parametrize("arch", ARCHS)
def test_knockout_equals_a_hand_written_attention(arch, folder, samples):
    vlm = bf16_vlm(arch, folder)
    layers = [1, 2]
    got = interp.score(
        vlm,
        samples[:3],
        edits=[Knockout(keys="image", queries="last", layers=layers)],
        batch_size=3,
        progress_bar=False,
    )
    enc = encode(vlm, samples[:3])
    ext, _, _ = append_targets(vlm, enc, target_ids(vlm, [s.answer for s in samples[:3]]))

    def knock(scores: torch.Tensor, layer_idx: int) -> torch.Tensor:
        if layer_idx + 1 not in layers:
            return scores
        block = torch.zeros_like(scores, dtype=torch.bool)
        block[torch.arange(3), :, ext.last_index] = ext.image_mask[:, None, :]
        return scores.masked_fill(block, torch.finfo(scores.dtype).min)

    name = f"interp_bf16_knockout_{arch}"
    AttentionInterface.register(name, reference_attention(knock))
    ALL_MASK_ATTENTION_FUNCTIONS.register(name, eager_mask)
    reference = bf16_vlm(arch, folder, attention=name)
    want = interp.score(reference, samples[:3], batch_size=3, progress_bar=False)
    torch.testing.assert_close(got.logprobs, want.logprobs, **EXACT)
    plain = interp.score(vlm, samples[:3], batch_size=3, progress_bar=False)
    assert (plain.logprobs - got.logprobs).abs().max() > 1e-3


@pytest.mark.parametrize("arch", ARCHS)
def test_swap_image_equals_a_forward_of_the_black_image(arch, folder, samples):
    vlm = bf16_vlm(arch, folder)
    got = interp.residual_stream(
        vlm, samples, edits=[SwapImage("null:black")], batch_size=4, progress_bar=False
    )
    black = encode(vlm, samples, "null:black")
    want = last_states(vlm, black, hf_forward(vlm, black, output_hidden_states=True))
    torch.testing.assert_close(got, want, **EXACT)


def test_recorded_logits_stay_in_the_model_dtype(folder, samples):
    """What an edit reads inside a trace is the model's own bf16 tensor, not a copy upcast by the
    library."""
    vlm = bf16_vlm("llava", folder)
    recorder = Recorder()
    interp.generate(vlm, samples[:2], max_new_tokens=2, edits=[recorder], progress_bar=False)
    assert recorder.logits and {x.dtype for x in recorder.logits} == {torch.bfloat16}
