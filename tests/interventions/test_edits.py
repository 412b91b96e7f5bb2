"""Interventions as edits of every measurement, each against an independent reference: a plain HF
forward with the same change made by hand (a torch hook on the layer, a hand-written attention
function, hand-built inputs), or a brute-force per-step loop without the KV cache."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import interp
from interp.conditions import Condition
from interp.datasets import demo_world
from interp.encoding import encode
from interp.testing import (
    ARCHITECTURES,
    Recorder,
    add_to_layer,
    build_tiny,
    hf_forward,
    hf_hidden_states,
    make_samples,
    refused,
    shared_tiny_vlm,
    steering_vector,
    tiny_vlm_with_attention,
)
from interp.testing.tolerance import assert_close
from interventions import AblateImage, AttentionBoost, Knockout, Patch, Steer, SwapImage

TOKEN_FUSION = [a for a in ARCHITECTURES if a != "mllama"]


# -- the protocol --------------------------------------------------------------------------------


def test_edits_are_validated_before_compute(samples):
    vlm = shared_tiny_vlm("llava")
    with refused(interp.InterventionError, match="interp.Intervention"):
        interp.residual_stream(vlm, samples[:2], edits=["steer"], progress_bar=False)
    with pytest.raises(interp.InterventionError, match=r"valid indices are 0\.\.3"):
        interp.residual_stream(
            vlm, samples[:2], edits=[Steer(40, steering_vector(vlm))], progress_bar=False
        )
    with pytest.raises(interp.InterventionError, match="d_model"):
        interp.residual_stream(
            vlm, samples[:2], edits=[Steer(1, torch.zeros(3))], progress_bar=False
        )
    sdpa = interp.load(*build_tiny("llava", attn_implementation="sdpa"))
    sdpa.hf.config._attn_implementation = "flash_attention_2"  # its mask is 2-D
    for edit in (Knockout(), AttentionBoost()):
        with pytest.raises(interp.InterventionError, match="attn_implementation='sdpa'"):
            interp.residual_stream(sdpa, samples[:2], edits=[edit], progress_bar=False)
    with pytest.raises(interp.InterventionError, match="unknown position"):
        interp.residual_stream(
            vlm, samples[:2], edits=[Steer(1, steering_vector(vlm), "middle")], progress_bar=False
        )


def test_edits_compose_in_any_order(samples):
    """Two edits on different layers give the same result in either order, and equal the two
    hooks applied by hand."""
    vlm = shared_tiny_vlm("llava")
    a, b = steering_vector(vlm, 1), steering_vector(vlm, 2)
    one = [Steer(3, b, "last"), Steer(1, a, "all")]
    two = [Steer(1, a, "all"), Steer(3, b, "last")]
    x = interp.residual_stream(vlm, samples[:4], edits=one, progress_bar=False)
    y = interp.residual_stream(vlm, samples[:4], edits=two, progress_bar=False)
    torch.testing.assert_close(x, y, atol=0, rtol=0)
    enc = encode(vlm, samples[:4])
    last = torch.zeros_like(enc.attention_mask, dtype=torch.bool)
    last[torch.arange(4), enc.last_index] = True
    with add_to_layer(vlm, 1, a, enc.attention_mask.bool()), add_to_layer(vlm, 3, b, last):
        hs = hf_hidden_states(hf_forward(vlm, enc, output_hidden_states=True))
    ref = torch.stack([h[torch.arange(4), enc.last_index] for h in hs[: vlm.n_layers]], 1)
    assert_close(x[:, : vlm.n_layers], ref.float())


def test_a_user_written_edit_plugs_in(samples):
    """The README's example: a subclass with apply(ctx) reading and writing vlm.residual."""

    class ZeroLast(interp.Intervention):
        def __init__(self, layer: int) -> None:
            self.layer = layer

        def apply(self, ctx: interp.EditContext) -> None:
            h = ctx.vlm.residual[self.layer]
            h[ctx.positions("last")] = 0.0

    vlm = shared_tiny_vlm("qwen2_vl")
    states = interp.residual_stream(vlm, samples[:3], edits=[ZeroLast(2)], progress_bar=False)
    assert torch.all(states[:, 2] == 0)
    assert not torch.all(states[:, 3] == 0)


# -- steering ------------------------------------------------------------------------------------


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_steer_equals_a_forward_hook(arch, samples):
    vlm = shared_tiny_vlm(arch)
    batch = samples[:4]
    v = steering_vector(vlm, scale=0.5)
    layer = 1
    states = interp.residual_stream(
        vlm, batch, edits=[Steer(layer, v, "all")], batch_size=4, progress_bar=False
    )
    enc = encode(vlm, batch)
    with add_to_layer(vlm, layer, v, enc.attention_mask.bool()):
        hs = hf_hidden_states(hf_forward(vlm, enc, output_hidden_states=True))
    n = vlm.n_layers
    ref = torch.stack([h[torch.arange(4), enc.last_index] for h in hs[:n]], 1)
    assert_close(states[:, :n], ref.float())
    plain = interp.residual_stream(vlm, batch, batch_size=4, progress_bar=False)
    assert (states[:, n] - plain[:, n]).abs().max() > 1e-3  # the edit did something


def _per_token_growth(vlm: interp.VLM, inputs: dict[str, Any], token: torch.Tensor) -> dict:
    """Grow every per-token input by one generated (text) token, as generation does."""
    out = dict(inputs)
    batch = token.shape[0]
    out["input_ids"] = torch.cat([inputs["input_ids"], token[:, None]], 1)
    out["attention_mask"] = torch.cat(
        [inputs["attention_mask"], torch.ones(batch, 1, dtype=inputs["attention_mask"].dtype)], 1
    )
    for key in ("mm_token_type_ids", "token_type_ids"):
        if key in inputs:
            out[key] = torch.cat([inputs[key], torch.zeros_like(inputs[key][:, :1])], 1)
    return out


@pytest.mark.parametrize("arch", ["demo", "llava", "qwen2_vl", "gemma3"])
def test_steering_changes_step_3_logits_as_a_brute_force_loop(arch, samples):
    """Generation with a steering edit on every position (prompt and generated tokens): the
    logits of step 3 equal a loop of plain HF forwards without the KV cache, each over the whole
    sequence so far with the same hook."""
    vlm = interp.load("demo") if arch == "demo" else shared_tiny_vlm(arch)
    batch = demo_world("test", n=3, qtypes=["describe"]) if arch == "demo" else samples[:3]
    v = steering_vector(vlm, 3, scale=0.3)
    recorder = Recorder()
    gen = interp.generate(
        vlm,
        batch,
        max_new_tokens=4,
        edits=[Steer(2, v, "all"), recorder],
        batch_size=3,
        progress_bar=False,
    )
    enc = encode(vlm, batch)
    inputs = dict(enc.inputs)
    ref_logits = []
    for _ in range(4):
        with add_to_layer(vlm, 2, v, lambda h, m=inputs["attention_mask"]: m.bool()):
            with torch.no_grad():
                out = vlm.hf(**inputs)
        step = out.logits[:, -1].float()
        ref_logits.append(step)
        inputs = _per_token_growth(vlm, inputs, step.argmax(-1))
    assert len(recorder.logits) >= 4
    ref_tokens = torch.stack([s.argmax(-1) for s in ref_logits], 1).tolist()
    stops = interp.generation.stop_ids(vlm)
    # rows still generating at step 3 (a finished row continues with padding in HF's loop)
    live = [r for r, toks in enumerate(ref_tokens) if not stops.intersection(toks[:3])]
    assert live, "every row stopped before step 3: pick longer answers"
    assert_close(recorder.logits[3][live].float(), ref_logits[3][live])
    for row, ids in enumerate(gen.token_ids):
        assert ids == ref_tokens[row][: len(ids)]
    plain = Recorder()
    interp.generate(vlm, batch, max_new_tokens=4, edits=[plain], batch_size=3, progress_bar=False)
    assert (plain.logits[0] - recorder.logits[0]).abs().max() > 1e-2  # the edit did something


# -- patching ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "arch", [a for a in TOKEN_FUSION if a not in ("qwen3_vl", "qwen3_omni_moe_thinker")]
)
def test_patching_every_prompt_position_of_the_embeddings_gives_the_source_run(arch, samples):
    """(Not Qwen3-VL / Qwen3-Omni: DeepStack adds the real image's features after early layers, which a patch
    of the embeddings does not reach; SwapImage swaps those too.)"""
    vlm = shared_tiny_vlm(arch)
    batch = samples[:3]
    patched = interp.residual_stream(
        vlm, batch, edits=[Patch("null:black", 0, "prompt")], batch_size=3, progress_bar=False
    )
    real = interp.residual_stream(vlm, batch, "null:black", batch_size=3, progress_bar=False)
    assert_close(patched, real)


@pytest.mark.parametrize("arch", ["llava", "qwen2_vl", "idefics3", "gemma3"])
def test_patching_the_last_token_from_the_blind_run_equals_hooks(arch, samples):
    """Patch layer k's last-token state from the blind run: equal to capturing it with a hook in a
    plain blind forward and writing it with a hook in a plain full forward."""
    vlm = shared_tiny_vlm(arch)
    batch = samples[:3]
    k = 2
    states = interp.residual_stream(
        vlm, batch, edits=[Patch("blind", k)], batch_size=3, progress_bar=False
    )
    blind, full = encode(vlm, batch, "blind"), encode(vlm, batch)
    captured: dict[str, torch.Tensor] = {}
    module = vlm.adapter.layers(vlm.hf)[k - 1]

    def capture(m: Any, a: Any, out: Any) -> None:
        h = out[0] if isinstance(out, tuple) else out
        captured["h"] = h[torch.arange(3), blind.last_index].detach().clone()

    handle = module.register_forward_hook(capture)
    hf_forward(vlm, blind)
    handle.remove()

    def write(m: Any, a: Any, out: Any) -> Any:
        h = (out[0] if isinstance(out, tuple) else out).clone()
        h[torch.arange(3), full.last_index] = captured["h"]
        return (h, *out[1:]) if isinstance(out, tuple) else h

    handle = module.register_forward_hook(write, prepend=True)
    hs = hf_hidden_states(hf_forward(vlm, full, output_hidden_states=True))
    handle.remove()
    n = vlm.n_layers
    ref = torch.stack([h[torch.arange(3), full.last_index] for h in hs[:n]], 1)
    assert_close(states[:, :n], ref.float())
    # the same patch from given states (what residual_stream returns for the blind run)
    given = interp.residual_stream(vlm, batch, "blind", layers=[k], progress_bar=False)
    again = interp.residual_stream(
        vlm, batch, edits=[Patch(given, k)], batch_size=2, progress_bar=False
    )
    assert_close(again, states)


def test_patch_positions_must_correspond(samples):
    vlm = shared_tiny_vlm("llava")
    with pytest.raises(interp.InterventionError, match="positions"):
        interp.residual_stream(
            vlm, samples[:2], edits=[Patch("blind", 1, "image")], progress_bar=False
        )


# -- attention -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "arch, impl, n",
    [
        ("llava", "eager", 3),
        ("qwen2_vl", "eager", 3),
        ("idefics3", "eager", 3),
        ("llava", "sdpa", 3),  # SDPA's boolean mask (left padding)
        ("llava", "sdpa", 1),  # SDPA's causal shortcut (no mask at all)
        ("qwen2_vl", "sdpa", 3),
    ],
)
def test_knockout_equals_a_hand_written_attention_with_the_mask(arch, impl, n, samples):
    """The knockout is an edit of the attention mask (interp.plain.cut): with eager or SDPA
    attention it equals eager attention written by hand whose scores are set to the minimum at
    the knocked-out [query, key] pairs."""
    vlm = interp.load(*build_tiny(arch, attn_implementation=impl))
    batch = samples[:n]
    layers = [1, 2]
    edit = Knockout(keys="image", queries="last", layers=layers)
    got = interp.score(vlm, batch, edits=[edit], batch_size=3, progress_bar=False)
    enc = encode(vlm, batch)
    from interp.encoding import append_targets, target_ids

    ext, positions, valid = append_targets(vlm, enc, target_ids(vlm, [s.answer for s in batch]))
    image = ext.image_mask

    def knock(scores: torch.Tensor, layer_idx: int) -> torch.Tensor:
        if layer_idx + 1 not in layers:
            return scores
        block = torch.zeros_like(scores, dtype=torch.bool)
        block[torch.arange(n), :, ext.last_index] = image[:, None, :]
        return scores.masked_fill(block, torch.finfo(scores.dtype).min)

    ref_vlm = tiny_vlm_with_attention(arch, knock)
    want = interp.score(ref_vlm, batch, batch_size=3, progress_bar=False)
    assert_close(got.logprobs, want.logprobs)
    plain = interp.score(vlm, batch, batch_size=3, progress_bar=False)
    assert (plain.logprobs - got.logprobs).abs().max() > 1e-4


@pytest.mark.parametrize("arch", TOKEN_FUSION)
def test_text_knocked_out_from_the_image_never_sees_it(arch, samples):
    """With every text position blocked from the image tokens in every layer, nothing of the
    image reaches the last token: its states are the same whatever the image (real or black)."""
    vlm = shared_tiny_vlm(arch)  # eager or SDPA: the cut is in the attention mask
    edit = Knockout(keys="image", queries="text")
    a = interp.residual_stream(vlm, samples[:3], edits=[edit], progress_bar=False)
    b = interp.residual_stream(vlm, samples[:3], "null:black", edits=[edit], progress_bar=False)
    c = interp.residual_stream(vlm, samples[:3], "null:black", progress_bar=False)
    assert_close(a, b)
    assert (a - c).abs().max() > 1e-4


@pytest.mark.parametrize(
    "arch, impl",
    [("llava", "eager"), ("qwen2_vl", "eager"), ("llava", "sdpa"), ("qwen2_vl", "sdpa")],
)
def test_attention_boost_equals_a_hand_written_attention(arch, impl, samples):
    """PAI: a + α|a| on image columns of the last query row in layers 3..L, at the prompt forward
    and at every generated step (the generated token's row), against a hand-written attention in
    a brute-force no-cache loop. The boost recomputes each layer's attention from its attention
    call's inputs (interp.plain.boost), under eager or SDPA attention alike."""
    vlm = interp.load(*build_tiny(arch, attn_implementation=impl))
    batch = samples[:2]
    alpha = 0.5
    recorder = Recorder()
    gen = interp.generate(
        vlm,
        batch,
        max_new_tokens=3,
        edits=[AttentionBoost(alpha), recorder],
        batch_size=2,
        progress_bar=False,
    )
    enc = encode(vlm, batch)
    image = enc.image_mask

    def boost(scores: torch.Tensor, layer_idx: int) -> torch.Tensor:
        if layer_idx + 1 < 3:
            return scores
        cols = torch.zeros_like(scores, dtype=torch.bool)
        cols[:, :, -1, : image.shape[1]] = image[:, None, :]  # last row, prompt image columns
        return torch.where(cols, scores + alpha * scores.abs(), scores)

    ref_vlm = tiny_vlm_with_attention(arch, boost)
    inputs = dict(enc.inputs)
    # the boost alone lowers: the generation block applies it (the recorder above, a local edit,
    # ran every edit in this process through run_writes); both equal the reference
    plain = interp.generate(
        vlm, batch, max_new_tokens=3, edits=[AttentionBoost(alpha)], output_scores=True
    )
    assert plain.scores is not None
    for step in range(3):
        with torch.no_grad():
            logits = ref_vlm.hf(**inputs).logits[:, -1].float()
        assert_close(recorder.logits[step].float(), logits)
        for row, ids in enumerate(plain.token_ids):
            if step < len(ids):
                assert_close(plain.scores[row][step], logits[row])
        inputs = _per_token_growth(vlm, inputs, logits.argmax(-1))
    assert len(gen.token_ids) == 2
    # a residual read (its own block): the last prompt row boosted in layers 3..L
    got_states = interp.residual_stream(vlm, batch, edits=[AttentionBoost(alpha)])
    assert_close(got_states, interp.residual_stream(ref_vlm, batch))
    # teacher-forced scoring: the boost on the rows that predict the answer, in the scoring block
    edit = AttentionBoost(alpha, queries="answer")
    got = interp.score(vlm, batch, edits=[AttentionBoost(alpha), edit], progress_bar=False)
    from interp.encoding import append_targets, target_ids

    ext, positions, valid = append_targets(vlm, enc, target_ids(vlm, [s.answer for s in batch]))
    rows = torch.zeros_like(ext.image_mask)
    rows[torch.arange(2), ext.last_index] = True
    rows[torch.arange(2)[:, None].expand_as(positions)[valid], positions[valid]] = True

    def boost_rows(scores: torch.Tensor, layer_idx: int) -> torch.Tensor:
        if layer_idx + 1 < 3:
            return scores
        hit = rows[:, None, :, None] & ext.image_mask[:, None, None, :]
        return torch.where(hit, scores + alpha * scores.abs(), scores)

    want = interp.score(tiny_vlm_with_attention(arch, boost_rows), batch, progress_bar=False)
    assert_close(got.logprobs, want.logprobs)


# -- image edits as objects ----------------------------------------------------------------------


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_swap_image_edit_equals_the_null_condition(arch, samples):
    vlm = shared_tiny_vlm(arch)
    batch = samples[:3]
    swapped = interp.residual_stream(
        vlm, batch, edits=[SwapImage("null:black")], batch_size=3, progress_bar=False
    )
    real = interp.residual_stream(vlm, batch, "null:black", batch_size=3, progress_bar=False)
    assert_close(swapped, real)


def test_image_edits_apply_in_scoring_and_generation(samples):
    vlm = shared_tiny_vlm("llava")
    batch = samples[:3]
    s1 = interp.score(vlm, batch, edits=[SwapImage("null:white")], progress_bar=False)
    s2 = interp.score(vlm, batch, condition="null:white", progress_bar=False)
    assert_close(s1.logprobs, s2.logprobs)
    g1 = interp.generate(
        vlm, batch, edits=[SwapImage("null:white")], max_new_tokens=4, progress_bar=False
    )
    g2 = interp.generate(vlm, batch, "null:white", max_new_tokens=4, progress_bar=False)
    assert g1.token_ids == g2.token_ids
    zero = interp.residual_stream(vlm, batch, edits=[AblateImage("zero")], progress_bar=False)
    assert zero.shape == (3, vlm.n_layers + 1, vlm.d_model)


def test_edits_key_the_store(tmp_path):
    vlm = shared_tiny_vlm("llava")
    batch = make_samples(3)
    v = steering_vector(vlm)
    interp.residual_stream(vlm, batch, edits=[Steer(1, v)], store=tmp_path, progress_bar=False)
    with pytest.raises(interp.StoreError, match="edits"):
        interp.residual_stream(
            vlm, batch, edits=[Steer(1, 2 * v)], store=tmp_path, progress_bar=False
        )


@pytest.mark.parametrize(
    "queries, impl",
    [("last", "eager"), ("text", "eager"), ("text", "sdpa"), ("all", "eager"), ("all", "sdpa")],
)
def test_knockout_in_generation_equals_a_no_cache_loop(queries, impl, samples):
    """A per-step edit that touches nothing at generated steps (the knocked-out rows are prompt
    rows) still lets generation run; with ``queries="all"`` every generated token is cut from
    the image too. The answers equal a loop of plain forwards without the KV cache through the
    hand-written attention, the chosen rows knocked out at every step."""
    vlm = interp.load(*build_tiny("llava", attn_implementation=impl))
    batch = samples[:2]
    edit = Knockout(keys="image", queries=queries, layers=[1, 2])
    gen = interp.generate(
        vlm, batch, max_new_tokens=3, edits=[edit], output_scores=True, progress_bar=False
    )
    enc = encode(vlm, batch)
    from interp.edits import Batch as EditBatch
    from interp.edits import EditContext

    rows = EditContext(vlm, EditBatch(vlm, enc, batch, Condition.parse("full")), None).positions(
        queries
    )
    image = enc.image_mask

    def knock(scores: torch.Tensor, layer_idx: int) -> torch.Tensor:
        if layer_idx + 1 not in (1, 2):
            return scores
        q = torch.full((scores.shape[0], scores.shape[2]), queries == "all", dtype=torch.bool)
        q[:, : rows.shape[1]] = rows
        k = torch.zeros(scores.shape[0], scores.shape[3], dtype=torch.bool)
        k[:, : image.shape[1]] = image
        block = q[:, None, :, None] & k[:, None, None, :]
        return scores.masked_fill(block, torch.finfo(scores.dtype).min)

    ref_vlm = tiny_vlm_with_attention("llava", knock)
    inputs = dict(enc.inputs)
    tokens, scores = [], []
    for _ in range(3):
        with torch.no_grad():
            logits = ref_vlm.hf(**inputs).logits[:, -1].float()
        tokens.append(logits.argmax(-1))
        scores.append(logits)
        inputs = _per_token_growth(vlm, inputs, tokens[-1])
    ref = torch.stack(tokens, 1).tolist()
    assert gen.scores is not None
    for row, ids in enumerate(gen.token_ids):
        assert ids == ref[row][: len(ids)]
        for step in range(len(ids)):  # the logits each token was chosen from
            assert_close(gen.scores[row][step], scores[step][row])
    plain = interp.generate(vlm, batch, max_new_tokens=1, output_scores=True, progress_bar=False)
    assert plain.scores is not None
    assert (plain.scores[0][0] - gen.scores[0][0]).abs().max() > 1e-4  # the cut is in effect


def test_residual_assignment_replaces_the_layer_output(samples):
    """``vlm.residual[l] = h`` (assignment, not in place) gives what a hook returning h gives."""

    class Double(interp.Intervention):
        def apply(self, ctx: interp.EditContext) -> None:
            ctx.vlm.residual[2] = 2 * ctx.vlm.residual[2]

    vlm = shared_tiny_vlm("qwen2_vl")
    batch = samples[:3]
    got = interp.residual_stream(vlm, batch, edits=[Double()], progress_bar=False)
    enc = encode(vlm, batch)
    module = vlm.adapter.layers(vlm.hf)[1]
    handle = module.register_forward_hook(
        lambda m, a, o: (2 * o[0], *o[1:]) if isinstance(o, tuple) else 2 * o, prepend=True
    )
    try:
        hs = hf_hidden_states(hf_forward(vlm, enc, output_hidden_states=True))
    finally:
        handle.remove()
    n = vlm.n_layers
    ref = torch.stack([h[torch.arange(3), enc.last_index] for h in hs[:n]], 1)
    assert_close(got[:, :n], ref.float())


class _HeadToZero(interp.Intervention):
    """An edit past the decoder layers that does not declare it (it cannot change a read)."""

    def apply(self, ctx: interp.EditContext) -> None:
        ctx.vlm.lm_head.output[:] = 0


class _DeclaredHead(_HeadToZero):
    needs_logits = True


def test_reads_with_edits_stop_before_the_head(samples):
    """A read stops after its last layer with or without edits (the head is never run), and its
    values equal a plain HF forward with the same steering hook; an edit of the head still runs
    (declared: one pass to the end; undeclared: run again to the end) and leaves reads as they
    were."""
    vlm = shared_tiny_vlm("llava")
    calls: list[int] = []
    handle = vlm.hf.lm_head.register_forward_hook(lambda m, i, o: calls.append(1))
    vector = torch.linspace(-1, 1, vlm.d_model)
    try:
        steered = interp.residual_stream(
            vlm, samples[:3], edits=[Steer(1, vector, "last", 2.0)], progress_bar=False
        )
        assert calls == [], "the LM head ran during a read with an edit"
        plain = interp.residual_stream(vlm, samples[:3], progress_bar=False)
        assert calls == []
        for edit, runs in ((_DeclaredHead(), 1), (_HeadToZero(), 1)):
            calls.clear()
            got = interp.residual_stream(vlm, samples[:3], edits=[edit], progress_bar=False)
            assert len(calls) == runs
            torch.testing.assert_close(got, plain, rtol=0, atol=0)
    finally:
        handle.remove()
    # the steered read equals HF hidden states with the vector added by a hook at residual index 1
    enc = encode(vlm, samples[:3], "full")
    last = torch.zeros_like(enc.image_mask)
    last[torch.arange(3), enc.last_index] = True
    with add_to_layer(vlm, 1, 2.0 * vector, last):
        hs = hf_hidden_states(hf_forward(vlm, enc, output_hidden_states=True))
    ref = torch.stack([h[torch.arange(3), enc.last_index] for h in hs[:-1]], 1)
    assert_close(steered[:, :-1], ref)


@pytest.mark.parametrize("name", [*interp.edits.POSITION_NAMES, "image:0", -2])
def test_every_named_position_means_one_thing_at_a_generated_step(name):
    """At a generated step (one new token) 'all' and 'answer' are that token; every other spec
    names prompt tokens, which that forward does not hold: it raises rather than selecting
    nothing, and ctx.reaches says so beforehand."""
    vlm = shared_tiny_vlm("llava")
    samples = make_samples(2)
    batch = interp.edits.Batch(vlm, encode(vlm, samples, "full"), samples, Condition.parse("full"))
    prompt = interp.EditContext(vlm, batch, None, 0)
    assert prompt.reaches(name) and prompt.positions(name).shape == batch.encoding.input_ids.shape
    step = interp.EditContext(vlm, batch, None, 3)
    if name in ("all", "answer"):
        assert step.reaches(name)
        assert step.positions(name).tolist() == [[True], [True]]
    else:
        assert not step.reaches(name)
        with pytest.raises(interp.InterventionError, match="at generated step 3: it names prompt"):
            step.positions(name)
