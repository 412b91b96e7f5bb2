"""The chain of embedding at the last generated token (``read_at="generated"``, the wording of the
paper's Appendix C) against a plain Hugging Face forward of prompt + answer with ``output_hidden_states``,
indexed by hand."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.spatial.distance import cosine as scipy_cosine

import interp
from interp.generation import stop_ids
from interp.studies.coe import chain_of_embedding, diagnose
from interp.testing import make_samples, shared_tiny_vlm, tiny_vlm
from interp.testing.tolerance import assert_close


def _hf_forward(vlm, sample, condition, answer):
    """One sample alone (no padding): prompt ids + answer ids, every hidden state and attention."""
    enc = interp.encode(vlm, [sample], condition)
    inputs = dict(enc.inputs)
    extra = torch.tensor([answer], dtype=inputs["input_ids"].dtype)
    inputs["input_ids"] = torch.cat([inputs["input_ids"], extra], 1)
    inputs["attention_mask"] = torch.cat(
        [inputs["attention_mask"], torch.ones_like(extra, dtype=inputs["attention_mask"].dtype)], 1
    )
    for key in ("mm_token_type_ids", "token_type_ids"):  # text tokens after the prompt
        if key in inputs:
            inputs[key] = torch.cat([inputs[key], torch.zeros_like(extra)], 1)
    image = torch.cat([enc.image_mask[0], torch.zeros(len(answer), dtype=torch.bool)])
    with torch.no_grad():
        out = vlm.hf(**inputs, output_hidden_states=True, output_attentions=True)
    return out, image


@pytest.mark.parametrize("arch", ["llava", "qwen2_vl"])
def test_generated_states_equal_a_plain_forward_of_prompt_and_answer(arch):
    vlm = shared_tiny_vlm(arch)
    samples = make_samples(5)
    coe = chain_of_embedding(
        vlm,
        samples,
        read_at="generated",
        max_new_tokens=3,
        batch_size=3,
        visual_attention=True,
        progress_bar=False,
    )
    assert coe.read_at == "generated"
    gen = {
        c: interp.generate(vlm, samples, c, max_new_tokens=3, batch_size=5, progress_bar=False)
        for c in ("full", "blind")
    }
    L = vlm.n_layers
    for c in ("full", "blind"):
        assert coe.answer_ids[c] == gen[c].token_ids  # each condition's own greedy answer
        for i, sample in enumerate(samples):
            answer = gen[c].token_ids[i]
            out, image = _hf_forward(vlm, sample, c, answer)
            hs = out.hidden_states
            # position -1: the answer's last token (the prompt's last one for an empty answer)
            for layer in range(L):  # index l < L equals HF's hidden_states[l]
                assert_close(coe.states[c][i, layer], hs[layer][0, -1].float())
            # Z^L of Eq. 10 is HF's last hidden state, after the final norm
            assert_close(coe.final_states[c][i], hs[-1][0, -1].float())
            if c == "full":  # Eq. 10's attention from the same position
                mass = torch.stack(
                    [(a[0, :, -1] * image).sum(-1).mean() for a in out.attentions]
                ).mean()
                # fp32 rounding of a mean of attention probabilities (<= 1): ε·S with S = 1,
                # 1e-5 — 10x the bare 1e-6 this held, which was one machine's rounding (a
                # padded batch against one unpadded row), not a bound another CPU keeps
                assert_close(coe.visual_attention[i], float(mass), dtype=torch.float32)
    # the output divergence is the cosine distance of the final (normed) states
    diag = diagnose(coe, split=np.arange(5) % 2 == 0, vip=2)
    assert "states at the last generated token" in diag.summary()
    expected = [
        scipy_cosine(
            coe.final_states["full"][i].double().numpy(),
            coe.final_states["blind"][i].double().numpy(),
        )
        for i in range(5)
    ]
    assert_close(diag.output_divergence, expected)


def test_one_token_answers_and_an_answer_that_is_only_the_end_token():
    """max_new_tokens=1: every answer is one token, read at that token (prompt + 1). A model whose
    end-of-sequence token is one row's first choice gives that row an empty answer, read at the
    last prompt token."""
    vlm = tiny_vlm("llava", seed=3)  # its own copy: the test changes its end token
    samples = make_samples(4)
    first = interp.generate(vlm, samples, "full", max_new_tokens=1, progress_bar=False)
    one = chain_of_embedding(
        vlm, samples, read_at="generated", max_new_tokens=1, batch_size=4, progress_bar=False
    )
    for i, sample in enumerate(samples):
        assert len(one.answer_ids["full"][i]) == 1
        out, _ = _hf_forward(vlm, sample, "full", first.token_ids[i])
        assert_close(one.states["full"][i, 1], out.hidden_states[1][0, -1].float())
    eos = first.token_ids[0][0]
    vlm.hf.generation_config.eos_token_id = eos
    assert eos in stop_ids(vlm)
    coe = chain_of_embedding(
        vlm, samples, read_at="generated", max_new_tokens=3, batch_size=4, progress_bar=False
    )
    prompt = interp.residual_stream(vlm, samples, "full", progress_bar=False)
    assert coe.answer_ids["full"][0] == []  # the end token came first: nothing was generated
    for i, sample in enumerate(samples):
        answer = coe.answer_ids["full"][i]
        assert eos not in answer  # the end token is never fed back
        if not answer:  # read at the last prompt token
            assert_close(coe.states["full"][i], prompt[i])
        else:  # fed back and read at the answer's last token
            out, _ = _hf_forward(vlm, sample, "full", answer)
            assert_close(coe.states["full"][i, 2], out.hidden_states[2][0, -1].float())


def test_prompt_reads_are_the_default_and_bad_read_at_is_refused():
    vlm = shared_tiny_vlm("llava")
    samples = make_samples(3)
    coe = chain_of_embedding(vlm, samples, max_new_tokens=2, progress_bar=False)
    ref = interp.residual_stream(vlm, samples, "blind", progress_bar=False)
    assert_close(coe.states["blind"], ref)
    assert coe.read_at == "prompt"
    with pytest.raises(ValueError, match="read_at must be 'prompt'"):
        chain_of_embedding(vlm, samples, read_at="answer", progress_bar=False)


def test_batch_size_does_not_change_generated_reads():
    vlm = shared_tiny_vlm("llava")
    samples = make_samples(8)
    kw = {"read_at": "generated", "max_new_tokens": 3, "progress_bar": False}
    a = chain_of_embedding(vlm, samples, batch_size=1, **kw)
    b = chain_of_embedding(vlm, samples, batch_size=8, **kw)
    for c in a.conditions:
        assert_close(a.states[c], b.states[c])


def test_cli_read_at(tmp_path, capsys):
    from interp.cli import main

    base = ["coe", "--model", "demo", "--data", "demo", "--n", "24", "--no-progress", "--vip", "8"]
    assert main([*base, "--read-at", "generated", "--out", str(tmp_path / "g")]) == 0
    assert "states at the last generated token" in (tmp_path / "g" / "summary.txt").read_text()
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main([*base, "--read-at", "answer", "--out", str(tmp_path / "x")])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--read-at" in err and "generated" in err and "Traceback" not in err
