"""Tiny Idefics3, SmolVLM, Gemma3, PaliGemma and Mllama builders: real processors, real models.

Every check compares two independent paths (processor text vs a hand-written prompt, batch vs
single rows, decoder inputs vs the feature module's output, HF hidden states vs layer hooks and
nnsight reads, forward argmax vs ``generate``), never numbers from one path alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import torch
from nnsight import NNsight
from PIL import Image
from transformers import BatchFeature, PreTrainedModel, ProcessorMixin
from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING

import interp
from interp.adapters import chat_prompt
from interp.testing import random_image
from interp.testing.builders import gemma, idefics3, mllama
from interp.testing.builds import check_attn_implementation, check_seeded, check_tiny_build

Builder = Callable[..., tuple[PreTrainedModel, ProcessorMixin]]

BUILDERS: dict[str, Builder] = {
    "idefics3": idefics3.build_idefics3,
    "smolvlm": idefics3.build_smolvlm,
    "gemma3": gemma.build_gemma3,
    "paligemma": gemma.build_paligemma,
    "mllama": mllama.build_mllama,
}
# What the chat template writes for {"type": "image"}.
PLACEHOLDER = {
    "idefics3": "<image>",
    "smolvlm": "<image>",
    "gemma3": "<start_of_image>",
    "paligemma": "<image>",
    "mllama": "<|image|>",
}
# Image-token ids per image in input_ids after the processor's expansion.
TOKENS_PER_IMAGE = {
    "idefics3": (48 // 8) ** 2 // 2**2,  # 6 x 6 patches, pixel shuffle by 2
    "smolvlm": (48 // 8) ** 2 // 2**2,
    "gemma3": 16,  # 8 x 8 patches average-pooled to 4 x 4
    "paligemma": (32 // 8) ** 2,  # 4 x 4 patches, no pooling
    "mllama": 1,  # cross-attention: one marker token, features stay outside the sequence
}
# The module whose output are the image features (for Mllama: the cross-attention states).
FEATURE_MODULE = {
    "idefics3": "model.connector",
    "smolvlm": "model.connector",
    "gemma3": "model.multi_modal_projector",
    "paligemma": "model.multi_modal_projector",
    "mllama": "model.multi_modal_projector",
}
SCATTERS = ["idefics3", "smolvlm", "gemma3", "paligemma"]  # features placed at image tokens
QUESTION = "what color is the banana?"
LONG_QUESTION = "what shape is the object in the image? answer with one word."
TOL = 1e-4


@dataclass
class Built:
    name: str
    model: PreTrainedModel
    processor: ProcessorMixin


@pytest.fixture(scope="module", params=list(BUILDERS))
def built(request: pytest.FixtureRequest) -> Built:
    torch.set_num_threads(1)
    model, processor = BUILDERS[request.param]()
    return Built(request.param, model, processor)


IMAGES = [random_image(32, 32, 0), random_image(40, 48, 1)]  # different sizes (height x width)


def _prompt(processor: ProcessorMixin, question: str = QUESTION, image: bool = True) -> str:
    return chat_prompt(processor, question, image)


def _encode(b: Built, questions: list[str], images: list[Image.Image] | None) -> BatchFeature:
    """One row per question; with images, one image per row, passed as a nested list. Without
    images, the library's blind encoding (the stock PaliGemma processor refuses a batch without
    images; the adapter then encodes the image prompt and strips the image)."""
    if images is None:
        vlm = interp.load(b.model, b.processor)
        enc = interp.encode(vlm, [interp.Sample(q) for q in questions], "blind")
        return BatchFeature(dict(enc.inputs))
    texts = [_prompt(b.processor, q) for q in questions]
    nested = [[im] for im in images]
    return b.processor(text=texts, images=nested, padding=True, return_tensors="pt")


def _forward(b: Built, enc: BatchFeature, **kwargs: Any) -> Any:
    with torch.no_grad():
        return b.model(**enc, **kwargs)


def _last_logits(b: Built, enc: BatchFeature) -> torch.Tensor:
    return _forward(b, enc).logits[:, -1]


def _decoder_inputs_embeds(b: Built, enc: BatchFeature) -> torch.Tensor:
    """``inputs_embeds`` as the decoder receives them (image features already placed).

    Mllama's decoder is given ``input_ids`` and embeds them itself (nothing is placed).
    """
    seen: list[torch.Tensor] = []

    def grab(_module: torch.nn.Module, _args: tuple, kwargs: dict) -> None:
        if kwargs.get("inputs_embeds") is None:
            seen.append(b.model.get_input_embeddings()(kwargs["input_ids"]))
        else:
            seen.append(kwargs["inputs_embeds"])

    handle = b.model.get_decoder().register_forward_pre_hook(grab, with_kwargs=True)
    try:
        _forward(b, enc)
    finally:
        handle.remove()
    assert len(seen) == 1
    return seen[0]


def _captured_output(b: Built, path: str, enc: BatchFeature) -> torch.Tensor:
    captured: list[torch.Tensor] = []
    handle = b.model.get_submodule(path).register_forward_hook(
        lambda _m, _i, out: captured.append(out)
    )
    try:
        _forward(b, enc)
    finally:
        handle.remove()
    assert len(captured) == 1
    return captured[0]


# --- construction ---------------------------------------------------------------------------


def test_built_model_is_tiny_fp32_eval_and_auto_mapped(built: Built) -> None:
    check_tiny_build(built.model, built.processor)
    assert MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING[type(built.model.config)] is type(built.model)


def test_processor_is_the_architectures_processor(built: Built) -> None:
    expected = {
        "idefics3": "Idefics3Processor",
        "smolvlm": "SmolVLMProcessor",
        "gemma3": "Gemma3Processor",
        "paligemma": "PaliGemmaProcessor",
        "mllama": "MllamaProcessor",
    }[built.name]
    assert expected in [cls.__name__ for cls in type(built.processor).__mro__]
    assert built.processor.tokenizer.padding_side == "left"


def test_same_seed_same_weights_other_seed_other_weights(built: Built) -> None:
    check_seeded(BUILDERS[built.name])


@pytest.mark.parametrize("name", list(BUILDERS))
def test_attn_implementation_is_applied(name: str) -> None:
    check_attn_implementation(BUILDERS[name])


def test_parameters_hf_initialises_to_zero_are_random() -> None:
    model, _ = gemma.build_gemma3()
    assert model.model.multi_modal_projector.mm_input_projection_weight.abs().min() > 0
    model, _ = mllama.build_mllama()
    layers = model.model.language_model.layers
    for i in mllama.CROSS_ATTENTION_LAYERS:
        assert layers[i].cross_attn_attn_gate.abs().item() > 0.2
        assert layers[i].cross_attn_mlp_gate.abs().item() > 0.2
    assert model.model.vision_model.gated_positional_embedding.gate.abs().item() > 0.2


# --- 1. chat template -------------------------------------------------------------------------


def test_chat_template_renders_the_image_placeholder(built: Built) -> None:
    prompt = _prompt(built.processor)
    blind = _prompt(built.processor, image=False)
    if built.name == "paligemma":
        # A prefix, not a chat: the processor adds <bos> and the closing "\n" itself.
        expected_blind, expected = QUESTION, PLACEHOLDER["paligemma"] + QUESTION
    else:
        expected_blind = f"<|im_start|>user\n{QUESTION}<|im_end|>\n<|im_start|>assistant\n"
        expected = expected_blind.replace("user\n", "user\n" + PLACEHOLDER[built.name])
    assert (prompt, blind) == (expected, expected_blind)
    image_id = built.model.config.image_token_id
    assert not (_encode(built, [QUESTION], None)["input_ids"] == image_id).any()
    with_image = _encode(built, [QUESTION], IMAGES[:1])["input_ids"]
    assert int((with_image == image_id).sum()) == TOKENS_PER_IMAGE[built.name]


def test_paligemma_rows_have_the_stock_prefix_layout() -> None:
    model, processor = gemma.build_paligemma()
    tok = processor.tokenizer
    b = Built("paligemma", model, processor)
    n = TOKENS_PER_IMAGE["paligemma"]
    for images in (IMAGES[:1], None):
        ids = _encode(b, [QUESTION], images)["input_ids"][0].tolist()
        text_ids = tok(tok.bos_token + QUESTION + "\n", add_special_tokens=False)["input_ids"]
        assert ids == ([model.config.image_token_id] * n if images else []) + text_ids
    # The stock processor refuses rows without an image, and in a mixed batch would put <bos> at
    # character 6 of such a row: the library never batches them with image rows.
    assert not interp.adapter_for(model).mixed_batches


# --- 2. batches of two, forward and generate -------------------------------------------------


def test_batch_with_images_of_different_sizes_forward_and_generate(built: Built) -> None:
    enc = _encode(built, [QUESTION, LONG_QUESTION], IMAGES)
    assert enc["input_ids"].shape[0] == 2
    assert (enc["attention_mask"][:, 0] == 0).any()  # left padded, rows of different lengths
    out = _forward(built, enc, output_hidden_states=True)
    seq = enc["input_ids"].shape[1]
    assert out.logits.shape[:2] == (2, seq)
    assert torch.isfinite(out.logits).all()
    assert len(out.hidden_states) == 3 + 1
    gen = built.model.generate(**enc, max_new_tokens=3, min_new_tokens=3, do_sample=False)
    assert gen.shape == (2, seq + 3)
    assert torch.equal(gen[:, :seq], enc["input_ids"])
    # The first greedy token is the forward pass's argmax.
    assert torch.equal(gen[:, seq], out.logits[:, -1].argmax(-1))


def test_blind_batch_forward_and_generate(built: Built) -> None:
    enc = _encode(built, [QUESTION, LONG_QUESTION], None)
    assert "pixel_values" not in enc
    assert (enc["attention_mask"][:, 0] == 0).any()
    out = _forward(built, enc, output_hidden_states=True)
    seq = enc["input_ids"].shape[1]
    assert out.logits.shape[:2] == (2, seq)
    gen = built.model.generate(**enc, max_new_tokens=3, min_new_tokens=3, do_sample=False)
    assert gen.shape == (2, seq + 3)
    assert torch.equal(gen[:, seq], out.logits[:, -1].argmax(-1))


def test_image_list_forms() -> None:
    """Nested lists (one list per row) work everywhere; a flat list only for some processors."""
    torch.set_num_threads(1)
    accepts_flat = {"idefics3": True, "paligemma": True, "smolvlm": False}
    accepts_flat |= {"gemma3": False, "mllama": False}
    for name, builder in BUILDERS.items():
        _, processor = builder()
        texts = [_prompt(processor), _prompt(processor, LONG_QUESTION)]
        nested = processor(text=texts, images=[[im] for im in IMAGES], padding=True)
        if accepts_flat[name]:
            flat = processor(text=texts, images=IMAGES, padding=True)
            assert flat["input_ids"] == nested["input_ids"]
        else:
            # The flat list is read as all images for the first row.
            with pytest.raises(ValueError, match="number of"):
                processor(text=texts, images=IMAGES, padding=True)


# --- 3. image-token positions vs image features -----------------------------------------------


@pytest.mark.parametrize("name", SCATTERS)
def test_image_token_positions_receive_exactly_the_feature_module_output(name: str) -> None:
    torch.set_num_threads(1)
    b = Built(name, *BUILDERS[name]())
    enc = _encode(b, [QUESTION, LONG_QUESTION], IMAGES)
    mask = enc["input_ids"] == b.model.config.image_token_id
    assert mask.sum(-1).tolist() == [TOKENS_PER_IMAGE[name]] * 2
    feats = _captured_output(b, FEATURE_MODULE[name], enc)
    assert feats.shape == (2, TOKENS_PER_IMAGE[name], 64)  # [images, vectors, d_model]
    embeds = _decoder_inputs_embeds(b, enc)
    torch.testing.assert_close(embeds[mask], feats.flatten(0, 1), rtol=0, atol=0)
    # The public accessor returns the same vectors.
    with torch.no_grad():
        extra = {k: enc[k] for k in ("pixel_attention_mask",) if k in enc}
        pooled = b.model.model.get_image_features(enc["pixel_values"], **extra).pooler_output
    pooled = torch.cat([p.reshape(-1, 64) for p in pooled])
    torch.testing.assert_close(pooled, feats.flatten(0, 1), rtol=0, atol=0)
    # Text positions keep their token embeddings.
    token_embeds = b.model.get_input_embeddings()(enc["input_ids"])
    torch.testing.assert_close(embeds[~mask], token_embeds[~mask], rtol=0, atol=0)


def test_mllama_image_reaches_the_text_through_cross_attention_states() -> None:
    torch.set_num_threads(1)
    b = Built("mllama", *mllama.build_mllama())
    enc = _encode(b, [QUESTION, LONG_QUESTION], IMAGES)
    ids = enc["input_ids"]
    image_pos = (ids == b.model.config.image_token_id).int().argmax(-1)
    assert (ids == b.model.config.image_token_id).sum(-1).tolist() == [1, 1]
    # The 32 x 32 image is one tile; the 40 x 48 one is two (1 x 2 layout).
    tiles = enc["aspect_ratio_mask"][:, 0].sum(-1)
    assert tiles.tolist() == [1, 2]
    feats = _captured_output(b, FEATURE_MODULE["mllama"], enc)
    assert feats.shape == (2, 1, mllama.MAX_TILES, mllama.VECTORS_PER_TILE, 64)
    # Reference mask: a token sees the image's real tiles from the <|image|> token on.
    seq = ids.shape[1]
    expected = torch.zeros(2, seq, 1, mllama.MAX_TILES, dtype=torch.long)
    for row in range(2):
        expected[row, image_pos[row] :, 0, : tiles[row]] = 1
    assert torch.equal(enc["cross_attention_mask"], expected)


# --- 4. the image matters; batching does not ------------------------------------------------


def test_different_images_give_different_logits(built: Built) -> None:
    a = _last_logits(built, _encode(built, [QUESTION], [random_image(32, 32, 0)]))
    b = _last_logits(built, _encode(built, [QUESTION], [random_image(32, 32, 7)]))
    assert (a - b).abs().max() > 1e-2


@pytest.mark.parametrize("with_image", [True, False])
def test_left_padded_batch_matches_rows_alone(built: Built, with_image: bool) -> None:
    questions = [QUESTION, LONG_QUESTION]
    images = IMAGES if with_image else None
    enc = _encode(built, questions, images)
    assert (enc["attention_mask"] == 0).any()
    batched = _last_logits(built, enc)
    for row, question in enumerate(questions):
        alone = _last_logits(built, _encode(built, [question], images and [images[row]]))
        assert (batched[row] - alone[0]).abs().max() <= TOL


# --- hidden states and layer outputs ---------------------------------------------------------


def _hooked_forward(b: Built, enc: BatchFeature) -> tuple[Any, dict[int, Any]]:
    outputs: dict[int, Any] = {}
    layers = b.model.get_decoder().layers
    handles = [
        layer.register_forward_hook(lambda _m, _i, o, i=i: outputs.__setitem__(i, o))
        for i, layer in enumerate(layers)
    ]
    try:
        out = _forward(b, enc, output_hidden_states=True)
    finally:
        for h in handles:
            h.remove()
    return out, outputs


def test_hidden_states_are_layer_outputs_except_last_which_is_post_norm(built: Built) -> None:
    decoder = built.model.get_decoder()
    assert hasattr(decoder, "layers") and hasattr(decoder, "norm")
    enc = _encode(built, [QUESTION, LONG_QUESTION], IMAGES)
    out, outputs = _hooked_forward(built, enc)
    hs, n = out.hidden_states, len(decoder.layers)
    assert len(hs) == n + 1 and sorted(outputs) == list(range(n))
    assert all(isinstance(o, torch.Tensor) for o in outputs.values())  # not tuples
    torch.testing.assert_close(hs[0], _decoder_inputs_embeds(built, enc), rtol=0, atol=0)
    for i in range(n - 1):
        assert torch.equal(hs[i + 1], outputs[i])
    with torch.no_grad():
        assert torch.equal(hs[-1], decoder.norm(outputs[n - 1]))
    assert not torch.allclose(hs[-1], outputs[n - 1])


def test_mllama_blind_run_skips_cross_attention_layers() -> None:
    """Without an image the cross-attention layers do not run: fewer hidden states."""
    torch.set_num_threads(1)
    b = Built("mllama", *mllama.build_mllama())
    out, outputs = _hooked_forward(b, _encode(b, [QUESTION, LONG_QUESTION], None))
    self_layers = [i for i in range(3) if i not in mllama.CROSS_ATTENTION_LAYERS]
    assert sorted(outputs) == self_layers
    assert len(out.hidden_states) == 1 + len(self_layers)
    assert torch.equal(out.hidden_states[1], outputs[self_layers[0]])


def test_nnsight_layer_reads_equal_hidden_states(built: Built) -> None:
    enc = _encode(built, [QUESTION, LONG_QUESTION], IMAGES)
    hs = _forward(built, enc, output_hidden_states=True).hidden_states
    path = {m: n for n, m in built.model.named_modules()}[built.model.get_decoder()]
    lm = NNsight(built.model)
    envoy = lm
    for part in path.split("."):
        envoy = getattr(envoy, part)
    reads: list[torch.Tensor] = []
    with lm.trace(**enc):
        for i in range(len(envoy.layers)):
            reads.append(envoy.layers[i].output[:, -1].save())
    assert len(reads) == len(hs) - 1
    for i in range(len(reads) - 1):
        assert torch.equal(reads[i], hs[i + 1][:, -1])


# --- 5. mixed batches (one row with an image, one without) ----------------------------------


def test_mixed_batch(built: Built) -> None:
    image = IMAGES[1]
    texts = [_prompt(built.processor, QUESTION), _prompt(built.processor, LONG_QUESTION, False)]
    enc = built.processor(text=texts, images=[[image], []], padding=True, return_tensors="pt")
    batched = _last_logits(built, enc)
    with_image = _last_logits(built, _encode(built, [QUESTION], [image]))[0]
    blind = _last_logits(built, _encode(built, [LONG_QUESTION], None))[0]
    assert (batched[0] - with_image).abs().max() <= TOL
    if built.name == "mllama":
        # The blind row now runs the cross-attention layer (its text attends to padding tiles):
        # Mllama blind rows must not be batched with image rows.
        assert (batched[1] - blind).abs().max() > 1e-2
    elif built.name == "paligemma":
        # The stock processor lays the blind row out wrongly (<bos> inside the text): PaliGemma
        # blind rows must not be batched with image rows either.
        assert not interp.adapter_for(built.model).mixed_batches
    else:
        assert (batched[1] - blind).abs().max() <= TOL
