"""Reading the model (residual stream, generation, scoring) against independent HF references, on
every tiny architecture."""

from __future__ import annotations

import torch
from PIL import Image

import interp
from interp.encoding import encode
from interp.testing import hf_forward, hf_hidden_states, hf_target_logprobs, last_layer_raw
from interp.testing.tolerance import assert_close


def test_accessors_are_consistent(vlm):
    layers = vlm.adapter.layers(vlm.hf)
    assert vlm.n_layers == len(layers) == len(vlm.layers)
    assert vlm.d_model == vlm.hf.config.get_text_config().hidden_size
    assert vlm.lm_head._module is vlm.hf.get_output_embeddings()
    assert vlm.final_norm._module is vlm.adapter.final_norm(vlm.hf)
    assert vlm.image_features._module is vlm.adapter.image_features_module(vlm.hf)
    assert isinstance(vlm.image_token_id, int)
    assert repr(vlm).startswith("VLM(")


def test_residual_stream_equals_hf_hidden_states(vlm, samples):
    batch = samples[:8]
    states = interp.residual_stream(vlm, batch, "full", batch_size=8, progress_bar=False)
    enc = encode(vlm, batch, "full")
    hs = hf_hidden_states(hf_forward(vlm, enc, output_hidden_states=True))
    n = vlm.n_layers
    assert states.shape == (8, n + 1, vlm.d_model)
    assert len(hs) == n + 1
    rows = torch.arange(8)
    ref = torch.stack([h[rows, enc.last_index] for h in hs[:n]], dim=1)
    assert_close(states[:, :n], ref)
    raw = last_layer_raw(vlm, enc)[rows, enc.last_index]
    assert_close(states[:, n], raw)
    # index L is pre-norm: it must differ from HF's post-norm hidden_states[-1]
    assert (states[:, n] - hs[n][rows, enc.last_index]).abs().max() > 1e-3


def test_layer_subset_and_position(vlm, samples):
    full = interp.residual_stream(vlm, samples[:3], "full", progress_bar=False)
    sub = interp.residual_stream(
        vlm, samples[:3], "full", layers=[0, 2, vlm.n_layers], progress_bar=False
    )
    torch.testing.assert_close(sub, full[:, [0, 2, vlm.n_layers]])
    enc = encode(vlm, samples[:3], "full")
    hs = hf_hidden_states(hf_forward(vlm, enc, output_hidden_states=True))
    prev = interp.residual_stream(
        vlm, samples[:3], "full", layers=[1], position=-2, progress_bar=False
    )
    rows = torch.arange(3)
    assert_close(prev[:, 0], hs[1][rows, enc.last_index - 1])


def test_batch_invariance(vlm, samples):
    for condition in ("full", "blind"):
        one = interp.residual_stream(vlm, samples, condition, batch_size=1, progress_bar=False)
        eight = interp.residual_stream(vlm, samples, condition, batch_size=8, progress_bar=False)
        assert_close(one, eight)
    g1 = interp.generate(vlm, samples, max_new_tokens=4, batch_size=1, progress_bar=False)
    g8 = interp.generate(vlm, samples, max_new_tokens=4, batch_size=8, progress_bar=False)
    assert g1.token_ids == g8.token_ids
    s1 = interp.score(vlm, samples, batch_size=1, progress_bar=False)
    s8 = interp.score(vlm, samples, batch_size=8, progress_bar=False)
    assert_close(s1.logprobs, s8.logprobs)


def test_null_black_equals_real_black_image(vlm, samples):
    batch = samples[:4]
    null = interp.residual_stream(vlm, batch, "null:black", progress_bar=False)
    black = [
        interp.Sample(s.question, Image.new("RGB", s.load_image().size, (0, 0, 0)), id=s.id)
        for s in batch
    ]
    real = interp.residual_stream(vlm, black, "full", progress_bar=False)
    assert torch.equal(null, real)
    full = interp.residual_stream(vlm, batch, "full", progress_bar=False)
    assert (full - null).abs().max() > 1e-3  # the image matters, so the check has teeth


def test_blind_has_no_image_tokens(vlm, samples):
    enc = encode(vlm, samples[:4], "blind")
    assert not enc.image_mask.any() and enc.has_image == [False] * 4
    full = encode(vlm, samples[:4], "full")
    assert full.image_mask.sum(1).min() > 0
    # the blind prompt is the full prompt with the image removed: same question text at the end
    assert all(s.question in p for s, p in zip(samples[:4], enc.prompts))


def test_generate_matches_hf_generate(vlm, samples):
    gen = interp.generate(vlm, samples[:3], max_new_tokens=4, batch_size=3, progress_bar=False)
    for s, ids in zip(samples[:3], gen.token_ids):
        enc = encode(vlm, [s], "full")
        with torch.no_grad():
            out = vlm.hf.generate(
                **enc.inputs,
                max_new_tokens=4,
                do_sample=False,
                pad_token_id=vlm.tokenizer.pad_token_id,
            )
        ref = out[0, enc.input_ids.shape[1] :].tolist()
        assert ids == ref[: len(ids)]


def test_score_equals_manual_log_softmax(vlm, samples):
    targets = ["yellow banana", "two", "a red circle and a blue square"]
    scores = interp.score(vlm, samples[:3], targets, batch_size=3, progress_bar=False)
    for i, (s, target) in enumerate(zip(samples[:3], targets)):
        tgt = vlm.tokenizer(target, add_special_tokens=False)["input_ids"]
        ref = hf_target_logprobs(vlm, encode(vlm, [s], "full"), tgt)
        assert_close(scores.logprobs[i, : len(tgt)], ref)
        assert scores.mask[i].sum() == len(tgt)


def test_the_head_runs_on_the_targets_tail_only(vlm, samples):
    """A teacher-forced read gives the forward ``logits_to_keep``: the head's input holds the
    positions that predict a target (and the scores still equal HF's full forward's)."""
    import inspect

    targets = ["yellow banana", "two", "a red circle and a blue square"]
    seen: list[int] = []
    head = vlm.adapter.lm_head(vlm.hf)
    handle = head.register_forward_hook(lambda m, args, out: seen.append(args[0].shape[1]))
    try:
        scores = interp.score(
            vlm, samples[:3], targets, batch_size=3, share_prefix=False, progress_bar=False
        )
    finally:
        handle.remove()
    tgt = [vlm.tokenizer(t, add_special_tokens=False)["input_ids"] for t in targets]
    for i, s in enumerate(samples[:3]):
        ref = hf_target_logprobs(vlm, encode(vlm, [s], "full"), tgt[i])
        assert_close(scores.logprobs[i, : len(tgt[i])], ref)
    if "logits_to_keep" in inspect.signature(vlm.hf.forward).parameters:
        # the longest target's predicting positions, from the prompt's last on, and the last one
        assert seen == [max(len(t) for t in tgt) + 1]
    else:
        assert len(seen) == 1 and seen[0] > max(len(t) for t in tgt)
