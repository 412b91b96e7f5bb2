"""The core's composite measurements against independent references: :func:`interp.generate_states`
(greedy answers + the prompt's states in one generate trace) against Hugging Face ``generate`` and
``output_hidden_states`` by hand, and :func:`interp.score_contexts` against a plain per-context
loop of :func:`interp.score`."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

import interp
import interp.scoring
from interp.encoding import encode
from interp.testing.tolerance import assert_close


@pytest.fixture(scope="module", params=["llava", "qwen2_vl"])
def tiny(request) -> interp.VLM:
    return interp.testing.tiny_vlm(request.param, seed=0)


@pytest.fixture(scope="module")
def eager_llava() -> interp.VLM:
    return interp.load(*interp.testing.build_tiny("llava", attn_implementation="eager"))


def _samples(n: int) -> list[interp.Sample]:
    rng = np.random.default_rng(7)
    questions = ["what color is the banana?", "how many objects?", "where is the red square?"]
    out = []
    for i in range(n):
        h, w = (32, 32) if i % 2 == 0 else (48, 40)
        pixels = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        q = questions[i % len(questions)]
        out.append(interp.Sample(q, Image.fromarray(pixels, "RGB"), answer="yellow", id=f"m{i}"))
    return out


def _eos(vlm: interp.VLM) -> set[int]:
    ids = {vlm.tokenizer.eos_token_id}
    value = vlm.hf.generation_config.eos_token_id
    ids |= set(value) if isinstance(value, list) else {value}
    return {i for i in ids if i is not None}


def _hf_reference(vlm: interp.VLM, sample: interp.Sample, condition: str, steps: int):
    """One row alone: HF greedy ``generate`` (tokens and each step's raw logits) and the prompt's
    hidden states (``output_hidden_states``; the last layer through a forward hook, because HF's
    last entry is after the final norm)."""
    enc = encode(vlm, [sample], condition)
    with torch.no_grad():
        out = vlm.hf.generate(
            **enc.inputs,
            max_new_tokens=steps,
            do_sample=False,
            pad_token_id=vlm.tokenizer.pad_token_id,
            output_logits=True,
            return_dict_in_generate=True,
        )
    new = out.sequences[0, enc.input_ids.shape[1] :].tolist()
    logps = [logits[0].float().log_softmax(-1) for logits in out.logits]
    seen: dict[str, torch.Tensor] = {}
    last = vlm.adapter.layers(vlm.hf)[-1]
    handle = last.register_forward_hook(
        lambda m, a, o: seen.setdefault("raw", o[0] if isinstance(o, tuple) else o)
    )
    try:
        with torch.no_grad():
            hs = vlm.hf(**enc.inputs, output_hidden_states=True).hidden_states
    finally:
        handle.remove()
    at = int(enc.last_index[0])
    states = torch.stack([h[0, at] for h in hs[: vlm.n_layers]] + [seen["raw"][0, at]])
    return new, logps, states.float()


def test_generate_states_equals_hf_generate_and_hidden_states(tiny):
    samples = _samples(3)
    got = interp.generate_states(
        tiny,
        samples,
        ("full", "blind"),
        max_new_tokens=3,
        token_logprobs=True,
        batch_size=2,
        progress_bar=False,
    )
    assert got.conditions == ["full", "blind"] and got.layers == list(range(tiny.n_layers + 1))
    assert got.logprobs is not None and got.first_token is not None
    stops = _eos(tiny)
    for cond in got.conditions:
        assert got.states[cond].shape == (3, tiny.n_layers + 1, tiny.d_model)
        for i, s in enumerate(samples):
            new, logps, states = _hf_reference(tiny, s, cond, 3)
            ids = got.token_ids[cond][i]
            cut = next((k for k, t in enumerate(new) if t in stops), len(new))
            assert ids == new[:cut]
            assert (
                got.texts[cond][i] == tiny.tokenizer.decode(ids, skip_special_tokens=True).strip()
            )
            assert got.first_token[cond][i] == new[0]
            want = [float(logps[k][t]) for k, t in enumerate(new[: min(cut + 1, len(new))])]
            assert_close(got.logprobs[cond][i], want, dtype=torch.float32)
            assert_close(got.states[cond][i], states)
    assert got.visual_attention is None


def test_generate_states_layers_store_and_visual_attention(eager_llava, tmp_path, monkeypatch):
    samples = _samples(3)
    kw = dict(layers=[0, 2], max_new_tokens=2, visual_attention=True, progress_bar=False)
    got = interp.generate_states(eager_llava, samples, "full", store=tmp_path, **kw)
    assert got.states["full"].shape == (3, 2, eager_llava.d_model)
    assert got.logprobs is None and got.first_token is None
    # Eq. 10 by hand: mean over layers and heads of the last prompt token's attention on image tokens
    enc = encode(eager_llava, samples, "full")
    with torch.no_grad():
        out = eager_llava.hf(**enc.inputs, output_attentions=True, output_hidden_states=True)
    rows = torch.arange(3)
    masses = [
        (att[rows, :, enc.last_index] * enc.image_mask[:, None, :]).sum(-1).mean(-1)
        for att in out.attentions
    ]
    expected = torch.stack(masses, 1).mean(1)
    # attention shares are <= 1, so S is the rule's floor 1: 1e-5, 10x the old bare 1e-6
    assert_close(got.visual_attention, expected.float())
    ref = torch.stack([out.hidden_states[0], out.hidden_states[2]], 1)[rows, :, enc.last_index]
    assert_close(got.states["full"], ref.float())

    def fail(*args, **kwargs):
        raise AssertionError("a stored result was recomputed")

    monkeypatch.setattr(interp.generation, "generate_batch", fail)
    again = interp.generate_states(eager_llava, samples, "full", store=tmp_path, **kw)
    assert again.token_ids == got.token_ids
    assert torch.equal(again.states["full"], got.states["full"])


def test_generate_states_refuses_bad_requests(tiny):
    samples = _samples(2)
    with pytest.raises(interp.ConditionError, match="different conditions"):
        interp.generate_states(tiny, samples, ("full", "full"), progress_bar=False)
    with pytest.raises(interp.ConditionError, match="no_prefix"):
        interp.generate_states(tiny, samples, "full+no_prefix", progress_bar=False)


def test_visual_attention_under_sdpa_equals_eager_and_flash_is_refused(eager_llava):
    """SDPA returns no weights: the read recomputes eager's from the attention call's inputs."""
    samples = _samples(3)
    kw = dict(layers=[2], max_new_tokens=2, visual_attention=True, progress_bar=False)
    want = interp.generate_states(eager_llava, samples, "full", **kw)
    sdpa = interp.load(*interp.testing.build_tiny("llava", attn_implementation="sdpa"))
    got = interp.generate_states(sdpa, samples, "full", **kw)
    assert_close(got.visual_attention, want.visual_attention)
    sdpa.hf.config._attn_implementation = "flash_attention_2"
    with pytest.raises(interp.InterpError, match="attn_implementation='sdpa'"):
        interp.generate_states(sdpa, _samples(2), visual_attention=True, progress_bar=False)


def _contexts(samples: list[interp.Sample]):
    """Four contexts per sample: itself with and without its image, its question on the next
    sample's image, and a black image."""

    def contexts(i: int, s: interp.Sample) -> list[tuple[interp.Sample, str]]:
        other = samples[(i + 1) % len(samples)]
        swapped = interp.Sample(s.question, other.image, id=f"{s.id}|swap")
        return [(s, "full"), (s, "blind"), (swapped, "full"), (s, "null:black")]

    return contexts


def test_score_contexts_equals_a_loop_of_score(tiny, tmp_path, monkeypatch):
    samples = _samples(5)
    targets = ["yellow", "two red squares", [5, 9, 11]]
    targets = [targets[i % 3] for i in range(5)]
    contexts = _contexts(samples)
    got = interp.score_contexts(
        tiny, samples, targets, contexts, batch_size=3, store=tmp_path, progress_bar=False
    )
    assert len(got) == 5
    for i, s in enumerate(samples):
        rows = contexts(i, s)
        assert got[i].shape[0] == len(rows) and got[i].dtype == torch.float64
        for c, (ctx, cond) in enumerate(rows):
            ref = interp.score(tiny, [ctx], [targets[i]], cond, progress_bar=False)
            n = int(ref.mask[0].sum())
            assert got[i].shape[1] == n
            assert_close(got[i][c].float(), ref.logprobs[0, :n])

    def fail(*args, **kwargs):
        raise AssertionError("a stored result was recomputed")

    monkeypatch.setattr(interp.scoring, "trace_target_logprobs", fail)
    again = interp.score_contexts(
        tiny, samples, targets, contexts, batch_size=3, store=tmp_path, progress_bar=False
    )
    assert all(torch.equal(a, b) for a, b in zip(again, got))


def test_score_contexts_refuses_bad_requests(tiny):
    samples = _samples(3)
    with pytest.raises(interp.ContextError, match="one per sample"):
        interp.score_contexts(tiny, samples, ["a"], _contexts(samples), progress_bar=False)

    def uneven(i: int, s: interp.Sample) -> list[tuple[interp.Sample, str]]:
        return [(s, "full")] * (1 + i)

    with pytest.raises(interp.ContextError, match="same number of contexts"):
        interp.score_contexts(tiny, samples, ["a"] * 3, uneven, batch_size=3, progress_bar=False)
