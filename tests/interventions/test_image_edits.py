"""Visual-token interventions (swap for a null image, ablation) against plain HF forwards, on every
tiny architecture.

References never come from the code under test: the null-image swap is compared with a real
``null:black`` run (HF forward and ``interp.residual_stream``); ablations with an HF forward whose
image-position vectors are built by hand (``inputs_embeds`` with zero or row-mean vectors at image
tokens; for Mllama ``cross_attention_states``; for Qwen3-VL the decoder called with hand-made
DeepStack features); image embeddings with HF ``hidden_states[0]`` and plain torch forward hooks.
Each comparison is rounding of an fp32 forward: ε·S with S = max |reference|
(``assert_close``; docs/conventions.md, Tolerances).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import nnsight
import pytest
import torch

import interp
from interp.encoding import Encoding, encode
from interp.testing import refused, shared_tiny_vlm
from interp.testing.tolerance import assert_close
from interp.tracing import read_states
from interventions import (
    ImageInputs,
    ablate_image_tokens,
    image_embeddings,
    read_image_inputs,
    replace_image_embeddings,
    swap_image,
)

# Two rows with images of different sizes (Mllama: one and two tiles) and prompts of different
# lengths, so that left padding and per-row grouping are exercised.
N_ROWS = 2


# -- independent references ----------------------------------------------------------------------


def hf_run(vlm: interp.VLM, enc: Encoding) -> dict[str, Any]:
    """A plain HF forward of ``enc``: last-token logits, HF ``hidden_states[0]`` and the output of
    the image-feature module, captured with a plain torch forward hook (DeepStack features are
    copied in the hook: HF re-packs them per image right after the module returns)."""
    seen: dict[str, Any] = {}

    def hook(module: torch.nn.Module, args: Any, out: Any) -> None:
        seen["features"] = out.clone() if isinstance(out, torch.Tensor) else None
        seen["deepstack"] = [f.clone() for f in getattr(out, "deepstack_features", None) or []]

    inputs = dict(enc.inputs)
    if vlm.adapter.forward_inputs is not None:  # InstructBLIP: mask-derived positions
        inputs = vlm.adapter.forward_inputs(inputs)
    handle = vlm.adapter.image_features_module(vlm.hf).register_forward_hook(hook)
    try:
        with torch.no_grad():
            out = vlm.hf(**inputs, output_hidden_states=True)
    finally:
        handle.remove()
    hidden = getattr(out, "hidden_states", None)
    if hidden is None:  # Q-Former families
        hidden = out.language_model_outputs.hidden_states
    rows = torch.arange(len(enc))
    return {
        "logits": out.logits[rows, enc.last_index].float(),
        "embeddings": hidden[0],
        "features": seen.get("features"),
        "deepstack": seen.get("deepstack", []),
    }


def reference_image_vectors(vlm: interp.VLM, enc: Encoding, run: dict[str, Any]) -> torch.Tensor:
    """The image's input to the decoder as HF computed it, ``[n, d]`` in row-major order."""
    if vlm.adapter.fusion == "cross_attention":
        return run["features"].reshape(-1, vlm.d_model)
    return run["embeddings"][enc.image_mask]


def row_means(vectors: torch.Tensor, counts: Sequence[int]) -> torch.Tensor:
    """Each vector replaced by the mean of its row's vectors, by explicit slicing."""
    out, start = [], 0
    for c in counts:
        block = vectors[start : start + c]
        out.append(block.mean(0, keepdim=True).expand_as(block))
        start += c
    return torch.cat(out)


def hf_logits_with_image_vectors(
    vlm: interp.VLM,
    enc: Encoding,
    vectors: torch.Tensor,
    deepstack: Sequence[torch.Tensor] = (),
) -> torch.Tensor:
    """Last-token logits of a plain HF forward in which the image positions hold ``vectors``.

    Token fusion: ``inputs_embeds`` = the token embeddings with ``vectors`` at image tokens, no
    pixels. M-RoPE families get the positions from HF's ``get_rope_index``; Gemma 4 its per-layer
    inputs from the token ids (pad at image positions) and mask-derived positions; InstructBLIP (whose
    top-level forward requires pixels) runs its ``language_model``; Qwen3-VL runs its decoder with
    the given DeepStack features. Mllama: ``cross_attention_states`` = ``vectors``.
    """
    rows = torch.arange(len(enc))
    ids, mask = enc.input_ids, enc.attention_mask
    with torch.no_grad():
        if vlm.adapter.fusion == "cross_attention":
            states = vectors.reshape(len(enc), -1, vlm.d_model)
            out = vlm.hf(
                input_ids=ids,
                attention_mask=mask,
                cross_attention_mask=enc.inputs["cross_attention_mask"],
                cross_attention_states=states,
            )
            return out.logits[rows, enc.last_index].float()
        embeds = vlm.hf.get_input_embeddings()(ids).clone()
        embeds[enc.image_mask] = vectors.to(embeds.dtype)
        kwargs: dict[str, Any] = {"inputs_embeds": embeds, "attention_mask": mask}
        if "token_type_ids" in enc.inputs:  # Gemma3 / PaliGemma: bidirectional image attention
            kwargs["token_type_ids"] = enc.inputs["token_type_ids"]
        if "mm_token_type_ids" in enc.inputs and "image_grid_thw" in enc.inputs:
            # M-RoPE positions follow the image grid
            kwargs["position_ids"], _ = vlm.hf.model.get_rope_index(
                ids,
                enc.inputs["mm_token_type_ids"],
                image_grid_thw=enc.inputs["image_grid_thw"],
                attention_mask=mask,
            )
        elif "image_grid_thw" in enc.inputs:  # Qwen-Omni: M-RoPE from the token ids
            kwargs["position_ids"], _ = vlm.hf.model.get_rope_index(
                ids, image_grid_thw=enc.inputs["image_grid_thw"], attention_mask=mask
            )
        if vlm.adapter.name == "gemma4":
            # per-layer inputs come from the token ids, with the pad id at image positions
            text_ids = ids.masked_fill(enc.image_mask, vlm.hf.config.text_config.pad_token_id)
            kwargs["per_layer_inputs"] = vlm.hf.model.language_model.get_per_layer_inputs(text_ids)
            kwargs = vlm.adapter.forward_inputs(kwargs)  # mask-derived positions
        if deepstack:
            hidden = vlm.hf.model.language_model(
                **kwargs,
                visual_pos_masks=enc.image_mask,
                deepstack_visual_embeds=list(deepstack),
            ).last_hidden_state
            return vlm.hf.lm_head(hidden)[rows, enc.last_index].float()
        if vlm.adapter.name == "instructblip":
            kwargs["position_ids"] = (mask.cumsum(-1) - 1).clamp(min=0)
            return vlm.hf.language_model(**kwargs).logits[rows, enc.last_index].float()
        return vlm.hf(**kwargs).logits[rows, enc.last_index].float()


def hf_generate(vlm: interp.VLM, enc: Encoding, max_new_tokens: int) -> list[list[int]]:
    """New token ids of a plain HF greedy ``generate``."""
    with torch.no_grad():
        out = vlm.hf.generate(
            **enc.inputs,
            max_new_tokens=max_new_tokens,
            do_sample=False,
            pad_token_id=vlm.tokenizer.pad_token_id,
        )
    return out[:, enc.input_ids.shape[1] :].tolist()


def patched_run(vlm: interp.VLM, enc: Encoding, edit: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """One trace of ``enc`` with ``edit()`` applied: residual stream [B, L+1, d] and logits at the
    last prompt token."""
    rows = torch.arange(len(enc))
    layers = list(range(vlm.n_layers + 1))
    with torch.no_grad(), vlm.trace_encoding(enc):
        edit()
        states = nnsight.save(read_states(vlm, layers, rows, enc.last_index)[0])
        logits = nnsight.save(vlm.lm_head.output[rows, enc.last_index])
    return states.float(), logits.float()


_RUNS: dict[tuple[str, str], tuple[Encoding, dict[str, Any]]] = {}


def reference(arch: str, vlm: interp.VLM, samples: list[interp.Sample], condition: str):
    """Cached (encoding, HF run) of the first rows under ``condition``."""
    key = (arch, condition)
    if key not in _RUNS:
        enc = encode(vlm, samples[:N_ROWS], condition)
        _RUNS[key] = (enc, hf_run(vlm, enc))
    return _RUNS[key]


# -- tests ---------------------------------------------------------------------------------------


def test_image_inputs_equal_what_hf_feeds_the_decoder(arch, vlm, samples):
    enc, run = reference(arch, vlm, samples, "full")
    inputs = read_image_inputs(vlm, enc)
    ref = reference_image_vectors(vlm, enc, run)
    assert inputs.embeddings.shape == ref.shape and ref.shape[0] > 0
    assert_close(inputs.embeddings, ref)
    if vlm.adapter.fusion == "tokens":
        assert inputs.counts == tuple(enc.image_mask.sum(1).tolist())
    else:  # every tile slot of every image slot, whether the image fills it or not
        tile_slots = enc.inputs["aspect_ratio_mask"][0].numel()
        assert inputs.counts == (ref.shape[0] // len(enc),) * len(enc)
        assert ref.shape[0] % (len(enc) * tile_slots) == 0
    assert len(inputs.deepstack) == len(run["deepstack"])
    for mine, theirs in zip(inputs.deepstack, run["deepstack"]):
        assert_close(mine, theirs)


def test_null_image_swap_equals_a_real_null_image_run(arch, vlm, samples):
    batch = samples[:N_ROWS]
    swap = swap_image(vlm, batch, "null:black")
    states, logits = patched_run(vlm, swap.encoding, swap)
    null_enc, null_run = reference(arch, vlm, samples, "null:black")
    _, full_run = reference(arch, vlm, samples, "full")
    assert_close(logits, null_run["logits"])
    null_states = interp.residual_stream(vlm, batch, "null:black", progress_bar=False)
    assert_close(states, null_states)
    # the swap changed something: the unpatched run differs
    assert (full_run["logits"] - null_run["logits"]).abs().max() > 1e-3
    assert swap.source == "null:black" and len(swap.inputs) > 0


def test_qwen3_vl_swap_needs_the_deepstack_features(samples):
    vlm = shared_tiny_vlm("qwen3_vl")
    batch = samples[:N_ROWS]
    swap = swap_image(vlm, batch, "null:black")
    assert len(swap.inputs.deepstack) == 1
    enc = swap.encoding
    _, partial = patched_run(
        vlm, enc, lambda: replace_image_embeddings(vlm, enc, swap.inputs.embeddings)
    )
    _, exact = patched_run(vlm, enc, swap)
    null = reference("qwen3_vl", vlm, samples, "null:black")[1]["logits"]
    assert_close(exact, null)
    # the input embeddings alone leave the real image's DeepStack features in place
    assert (partial - null).abs().max() > 1e-3


@pytest.mark.parametrize("mode", ["zero", "mean"])
def test_ablation_equals_hf_forward_with_hand_built_image_vectors(arch, vlm, samples, mode):
    enc, run = reference(arch, vlm, samples, "full")
    _, logits = patched_run(vlm, enc, lambda: ablate_image_tokens(vlm, enc, mode))
    vectors = reference_image_vectors(vlm, enc, run)
    if vlm.adapter.fusion == "tokens":
        counts = enc.image_mask.sum(1).tolist()
    else:  # every row has the same number of cross-attention states
        counts = [vectors.shape[0] // len(enc)] * len(enc)
    if mode == "zero":
        new = torch.zeros_like(vectors)
        deepstack = [torch.zeros_like(f) for f in run["deepstack"]]
    else:
        new = row_means(vectors, counts)
        deepstack = [row_means(f, counts) for f in run["deepstack"]]
    ref = hf_logits_with_image_vectors(vlm, enc, new, deepstack)
    assert_close(logits, ref)
    assert (logits - run["logits"]).abs().max() > 1e-3  # the image mattered


@pytest.mark.parametrize("arch_name", ["llava", "mllama", "instructblip"])
def test_text_only_batches_have_no_image_positions(arch_name, samples):
    vlm = shared_tiny_vlm(arch_name)
    enc = encode(vlm, samples[:N_ROWS], "blind")
    assert image_embeddings(vlm, enc).shape == (0, vlm.d_model)
    rows = torch.arange(len(enc))
    with torch.no_grad(), vlm.trace_encoding(enc):
        ablate_image_tokens(vlm, enc, "zero")
        ablated = nnsight.save(vlm.lm_head.output[rows, enc.last_index])
    with torch.no_grad(), vlm.trace_encoding(enc):
        plain = nnsight.save(vlm.lm_head.output[rows, enc.last_index])
    torch.testing.assert_close(ablated, plain, atol=0, rtol=0)


# -- errors --------------------------------------------------------------------------------------


@pytest.mark.parametrize("arch_name", ["llava", "qwen3_vl", "mllama"])
def test_wrong_replacement_shape_is_an_image_token_mismatch(arch_name, samples):
    vlm = shared_tiny_vlm(arch_name)
    enc = encode(vlm, samples[:N_ROWS], "full")
    inputs = read_image_inputs(vlm, enc)
    n = len(inputs)
    too_few = inputs.embeddings[: n - 1]
    with pytest.raises(interp.ImageTokenMismatchError, match=rf"expected \({n}, {vlm.d_model}\)"):
        replace_image_embeddings(vlm, enc, too_few)
    with pytest.raises(interp.ImageTokenMismatchError):
        replace_image_embeddings(vlm, enc, inputs.embeddings[:, :-1])
    moved = ImageInputs(inputs.embeddings, tuple(reversed(inputs.counts)), inputs.deepstack)
    if moved.counts != inputs.counts:
        with pytest.raises(interp.ImageTokenMismatchError, match="per-row counts"):
            replace_image_embeddings(vlm, enc, moved)
    if inputs.deepstack:
        with pytest.raises(interp.ImageTokenMismatchError, match="DeepStack"):
            replace_image_embeddings(vlm, enc, ImageInputs(inputs.embeddings, inputs.counts))
    # also raised from inside a trace, before the model is touched
    with pytest.raises(interp.ImageTokenMismatchError):
        with torch.no_grad(), vlm.trace_encoding(enc):
            replace_image_embeddings(vlm, enc, too_few)


@pytest.mark.parametrize("arch_name", ["qwen2_vl", "mllama"])
def test_swap_between_images_of_different_layouts_is_refused(arch_name, samples):
    vlm = shared_tiny_vlm(arch_name)
    # s0 is 32x32 (Qwen: 4 tokens; Mllama: one tile), s1 is 48x40 (6 tokens; two tiles)
    with pytest.raises(interp.ImageTokenMismatchError, match="'s0'"):
        swap_image(vlm, samples[:1], "swap:s1", all_samples=samples)


def test_bad_sources_and_modes(samples):
    vlm = shared_tiny_vlm("llava")
    with pytest.raises(interp.ConditionError, match="no image"):
        swap_image(vlm, samples[:1], "blind")
    with pytest.raises(interp.ConditionError):
        swap_image(vlm, samples[:1], "null:purple")
    enc = encode(vlm, samples[:1], "full")
    with refused(ValueError, match="zero"):
        ablate_image_tokens(vlm, enc, "random")  # type: ignore[arg-type]


@pytest.mark.parametrize("arch_name", ["llava", "qwen3_vl", "mllama"])
def test_swap_inside_generate_equals_null_image_generation(arch_name, samples):
    vlm = shared_tiny_vlm(arch_name)
    batch = samples[:N_ROWS]
    swap = swap_image(vlm, batch, "null:black")
    enc = swap.encoding
    pad = vlm.tokenizer.pad_token_id
    with (
        torch.no_grad(),
        vlm.trace_encoding(
            enc, generate=True, max_new_tokens=4, do_sample=False, pad_token_id=pad
        ) as tracer,
    ):
        swap()  # edits the prompt's forward, the only step with image positions
        result = nnsight.save(tracer.result)
    swapped = result[:, enc.input_ids.shape[1] :].tolist()
    null = encode(vlm, batch, "null:black")
    full_ids = hf_generate(vlm, enc, 4)
    null_ids = hf_generate(vlm, null, 4)
    assert swapped == null_ids
    assert null_ids != full_ids
