"""Measurements on every family with its real tokenizer, chat template and processor settings
equal plain Hugging Face: residual reads, generation, teacher-forced scores, and edits on the
question's positions (steering, attention knockout) against the same change made by hand.

A few questions per family (a forward over a real vocabulary costs more than the position checks,
which run every question: tests/families/test_real_positions.py). The question positions an edit uses are
first checked by decoding them with the tokenizer, so the by-hand reference edits exactly the
question's tokens.
"""

from __future__ import annotations

import pytest
import torch
from transformers import AttentionInterface
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, eager_mask

import interp
from interp.encoding import append_targets, encode, target_ids
from interp.testing import (
    add_to_layer,
    hf_forward,
    hf_hidden_states,
    hf_target_logprobs,
    last_layer_raw,
    reference_attention,
    steering_vector,
)
from interp.testing.tolerance import assert_close
from interventions import Knockout, Steer
from tools.conformance import (
    FAMILIES,
    decoded_runs,
    edit_positions,
    expected_question,
    get_real,
    samples_for,
)
from tools.real_models import build_real, real_model_type

# "Describe the image." and a capitalised first word broke question positions under
# SentencePiece; the slot question puts the question around the image.
PARITY_QUESTIONS = ["Which color is the flag?", "Describe the image."]


def _batch(arch: str) -> list[interp.Sample]:
    return samples_for(arch, PARITY_QUESTIONS)


def _verified_question_mask(vlm: interp.VLM, batch: list[interp.Sample]) -> torch.Tensor:
    ctx, ids = edit_positions(vlm, batch, "full", with_answers=False)
    mask = ctx.positions("question")
    for row, s in enumerate(batch):
        got = decoded_runs(vlm.tokenizer, ids[row].tolist(), mask[row])
        assert got == expected_question(s.question, "full"), got
    return mask


@pytest.mark.parametrize("arch", FAMILIES)
def test_reads_generation_and_scores_equal_plain_hf(arch):
    vlm = get_real(arch)
    # docs/families.md's real-tokenizer column files the family under this type
    assert vlm.hf.config.model_type == real_model_type(arch)
    batch = _batch(arch)
    n, rows = vlm.n_layers, torch.arange(len(batch))
    states = interp.residual_stream(vlm, batch, batch_size=len(batch), progress_bar=False)
    enc = encode(vlm, batch)
    hs = hf_hidden_states(hf_forward(vlm, enc, output_hidden_states=True))
    ref = torch.stack([h[rows, enc.last_index] for h in hs[:n]], dim=1)
    assert_close(states[:, :n], ref.float())
    raw = last_layer_raw(vlm, enc)[rows, enc.last_index]
    assert_close(states[:, n], raw.float())

    gen = interp.generate(vlm, batch, max_new_tokens=3, batch_size=len(batch), progress_bar=False)
    scores = interp.score(vlm, batch, batch_size=len(batch), progress_bar=False)
    for i, s in enumerate(batch):
        one = encode(vlm, [s])
        with torch.no_grad():
            out = vlm.hf.generate(
                **one.inputs,
                max_new_tokens=3,
                do_sample=False,
                pad_token_id=vlm.tokenizer.pad_token_id,
            )
        want = out[0, one.input_ids.shape[1] :].tolist()
        assert gen.token_ids[i] == want[: len(gen.token_ids[i])]
        tgt = vlm.tokenizer(s.answer, add_special_tokens=False)["input_ids"]
        assert_close(scores.logprobs[i, : len(tgt)], hf_target_logprobs(vlm, one, tgt))


@pytest.mark.parametrize("arch", FAMILIES)
def test_steering_the_question_equals_a_hook_on_its_tokens(arch):
    vlm = get_real(arch)
    batch = _batch(arch)
    question = _verified_question_mask(vlm, batch)
    v = steering_vector(vlm, scale=0.5)
    got = interp.residual_stream(
        vlm, batch, edits=[Steer(1, v, "question")], batch_size=len(batch), progress_bar=False
    )
    enc = encode(vlm, batch)
    with add_to_layer(vlm, 1, v, question):
        hs = hf_hidden_states(hf_forward(vlm, enc, output_hidden_states=True))
    n, rows = vlm.n_layers, torch.arange(len(batch))
    ref = torch.stack([h[rows, enc.last_index] for h in hs[:n]], 1)
    assert_close(got[:, :n], ref.float())
    plain = interp.residual_stream(vlm, batch, batch_size=len(batch), progress_bar=False)
    assert (got[:, n] - plain[:, n]).abs().max() > 1e-3


@pytest.mark.parametrize(
    "arch", ["llava", "llava_next_mistral", "qwen2_vl", "smolvlm", "mllama", "pixtral"]
)
def test_knocking_out_the_question_equals_a_hand_written_attention(arch):
    """The last prompt token may not attend to the question in layers 1-2 (teacher-forced
    scores), against a hand-written eager attention given the same mask."""
    vlm = get_real(arch)
    batch = _batch(arch)
    layers = [1, 2]
    edit = Knockout(keys="question", queries="last", layers=layers)
    got = interp.score(vlm, batch, edits=[edit], batch_size=len(batch), progress_bar=False)
    enc = encode(vlm, batch)
    ext, _, _ = append_targets(vlm, enc, target_ids(vlm, [s.answer for s in batch]))
    ctx, ids = edit_positions(vlm, batch, "full", with_answers=True)
    question = ctx.positions("question")
    assert torch.equal(ids, ext.input_ids)
    for row, s in enumerate(batch):  # the reference blocks exactly the question's tokens
        assert decoded_runs(vlm.tokenizer, ids[row].tolist(), question[row]) == s.question

    def knock(scores: torch.Tensor, layer_idx: int) -> torch.Tensor:
        seq = ext.input_ids.shape[1]
        if layer_idx + 1 not in layers or tuple(scores.shape[-2:]) != (seq, seq):
            return scores
        block = torch.zeros_like(scores, dtype=torch.bool)
        block[torch.arange(len(batch)), :, ext.last_index] = question[:, None, :]
        return scores.masked_fill(block, torch.finfo(scores.dtype).min)

    name = f"interp_real_ref_{arch}"
    AttentionInterface.register(name, reference_attention(knock))
    ALL_MASK_ATTENTION_FUNCTIONS.register(name, eager_mask)
    model, processor = build_real(arch)
    model.set_attn_implementation(name)
    want = interp.score(
        interp.load(model, processor), batch, batch_size=len(batch), progress_bar=False
    )
    assert_close(got.logprobs, want.logprobs)
    plain = interp.score(vlm, batch, batch_size=len(batch), progress_bar=False)
    assert (plain.logprobs - got.logprobs).abs().max() > 1e-4
