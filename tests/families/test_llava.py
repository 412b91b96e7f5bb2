"""Tiny LLaVA-family and InstructBLIP builders: real processors, real models, consistent wiring.

Each check compares two independent paths (processor vs model, batch vs single row, HF hidden states
vs module hooks vs nnsight reads, forward argmax vs ``generate``), never numbers from one path alone.
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

from interp.adapters import chat_prompt
from interp.testing import random_image
from interp.testing.builders.instructblip import NUM_QUERY_TOKENS, build_instructblip
from interp.testing.builders.llava import (
    IMAGE_PLACEHOLDER,
    build_llava,
    build_llava_next,
    build_llava_onevision,
    build_llava_siglip,
)
from interp.testing.builds import check_attn_implementation, check_seeded, check_tiny_build
from interp.testing.tolerance import assert_close

Builder = Callable[..., tuple[PreTrainedModel, ProcessorMixin]]

BUILDERS: dict[str, Builder] = {
    "llava": build_llava,
    "llava_siglip": build_llava_siglip,
    "llava_next": build_llava_next,
    "llava_onevision": build_llava_onevision,
    "instructblip": build_instructblip,
}
# Module whose output is exactly the sequence of vectors placed at image-token positions. LLaVA-NeXT
# and OneVision unpad the projector output and append newline vectors first, so they have none.
FEATURE_MODULE: dict[str, str | None] = {
    "llava": "model.multi_modal_projector",
    "llava_siglip": "model.multi_modal_projector",
    "llava_next": None,
    "llava_onevision": None,
    "instructblip": "language_projection",
}
# InstructBLIP has no placeholder in the text: the processor prepends the query tokens.
PLACEHOLDER: dict[str, str] = {
    "llava": "<image>\n",
    "llava_siglip": "<image>\n",
    "llava_next": "<image>\n",
    "llava_onevision": "<image>\n",
    "instructblip": "",
}
QUESTION = "what color is the banana?"
LONG_QUESTION = "what color is the banana in the image? answer with one word."
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


def _prompt(processor: ProcessorMixin, question: str = QUESTION, image: bool = True) -> str:
    return chat_prompt(processor, question, image)


def _encode(
    b: Built, questions: list[str], images: list[Image.Image] | None, image: bool = True
) -> BatchFeature:
    texts = [_prompt(b.processor, q, image=image) for q in questions]
    return b.processor(text=texts, images=images, padding=True, return_tensors="pt")


def _forward(b: Built, enc: BatchFeature, **kwargs: Any) -> Any:
    """Model forward; blind InstructBLIP rows go to its language model (the VLM needs pixels)."""
    inputs = dict(enc)
    if b.name == "instructblip":
        # Rows read [image tokens][pads][text]: RoPE positions must skip the pads (see quirk test).
        mask = inputs["attention_mask"]
        kwargs.setdefault("position_ids", (mask.cumsum(-1) - 1).clamp(min=0))
        if "pixel_values" not in inputs:
            text_only = {k: v for k, v in inputs.items() if not k.startswith("qformer_")}
            with torch.no_grad():
                return b.model.language_model(**text_only, **kwargs)
    with torch.no_grad():
        return b.model(**inputs, **kwargs)


def _hidden_states(b: Built, out: Any) -> tuple[torch.Tensor, ...]:
    if b.name == "instructblip" and hasattr(out, "language_model_outputs"):
        return out.language_model_outputs.hidden_states
    return out.hidden_states


def _image_features(b: Built, enc: BatchFeature) -> torch.Tensor:
    """The feature vectors the model computes for the encoded images, one row per vector."""
    with torch.no_grad():
        if b.name == "instructblip":
            feats = b.model.get_image_features(
                pixel_values=enc["pixel_values"],
                qformer_input_ids=enc["qformer_input_ids"],
                qformer_attention_mask=enc["qformer_attention_mask"],
            ).pooler_output
            return feats.flatten(0, 1)
        extra = {k: enc[k] for k in ("image_sizes", "batch_num_images") if k in enc}
        feats = b.model.model.get_image_features(pixel_values=enc["pixel_values"], **extra)
        return torch.cat(list(feats.pooler_output), dim=0)


def _decoder_inputs_embeds(b: Built, enc: BatchFeature) -> torch.Tensor:
    """``inputs_embeds`` as the decoder receives them (after image features are scattered in)."""
    seen: list[torch.Tensor] = []

    def grab(_module: torch.nn.Module, _args: tuple, kwargs: dict) -> None:
        seen.append(kwargs["inputs_embeds"])

    handle = b.model.get_decoder().register_forward_pre_hook(grab, with_kwargs=True)
    try:
        _forward(b, enc)
    finally:
        handle.remove()
    assert len(seen) == 1
    return seen[0]


# --- construction ---------------------------------------------------------------------------


def test_built_model_is_tiny_fp32_eval_and_auto_mapped(built: Built) -> None:
    check_tiny_build(built.model, built.processor)
    # The class a checkpoint with this config would load through AutoModelForImageTextToText.
    assert MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING[type(built.model.config)] is type(built.model)
    assert built.model.config.text_config.vocab_size == len(built.processor.tokenizer)


def test_same_seed_same_weights_other_seed_other_weights(built: Built) -> None:
    check_seeded(BUILDERS[built.name])


@pytest.mark.parametrize("name", list(BUILDERS))
def test_attn_implementation_is_applied(name: str) -> None:
    check_attn_implementation(BUILDERS[name])


def test_the_build_checks_fail_where_they_should() -> None:
    model, processor = build_llava()
    model.train()
    with pytest.raises(AssertionError, match="training mode"):
        check_tiny_build(model, processor)
    with pytest.raises(AssertionError, match="another seed built the same weights"):
        check_seeded(lambda seed=0, **kw: build_llava(seed=0, **kw))


# --- 1. chat template -------------------------------------------------------------------------


def test_chat_template_image_item_renders_the_placeholder(built: Built) -> None:
    prompt = _prompt(built.processor)
    blind = _prompt(built.processor, image=False)
    expected_blind = (
        f"<|im_start|>user\n{QUESTION}<|im_end|>\n<|im_start|>assistant\n"  # ChatML by hand
    )
    assert blind == expected_blind
    assert prompt == expected_blind.replace("user\n", "user\n" + PLACEHOLDER[built.name])
    image_id = built.model.config.image_token_id
    blind_ids = _encode(built, [QUESTION], None, image=False)["input_ids"]
    assert not (blind_ids == image_id).any()


# --- 2. batches of two, forward and generate -------------------------------------------------


def test_batch_with_images_of_different_sizes_forward_and_generate(built: Built) -> None:
    images = [random_image(32, 32, 0), random_image(40, 48, 1)]
    enc = _encode(built, [QUESTION, LONG_QUESTION], images)
    assert enc["input_ids"].shape[0] == 2
    assert (enc["attention_mask"] == 0).any()  # the rows really have different lengths
    out = _forward(built, enc, output_hidden_states=True)
    seq = enc["input_ids"].shape[1]
    assert out.logits.shape == (2, seq, built.model.config.text_config.vocab_size)
    assert len(_hidden_states(built, out)) == built.model.config.text_config.num_hidden_layers + 1

    gen = built.model.generate(**enc, max_new_tokens=3, do_sample=False, min_new_tokens=3)
    assert gen.shape == (2, seq + 3)
    assert torch.equal(gen[:, :seq], enc["input_ids"])
    # Greedy step one is the argmax of the forward pass (left padding handled the same way).
    assert torch.equal(gen[:, seq], out.logits[:, -1].argmax(-1))


def test_blind_batch_forward_and_generate(built: Built) -> None:
    enc = _encode(built, [QUESTION, LONG_QUESTION], None, image=False)
    assert "pixel_values" not in enc
    assert (enc["attention_mask"] == 0).any()
    out = _forward(built, enc, output_hidden_states=True)
    seq = enc["input_ids"].shape[1]
    assert out.logits.shape[:2] == (2, seq)
    gen_model = built.model.language_model if built.name == "instructblip" else built.model
    text_only = {k: v for k, v in enc.items() if not k.startswith("qformer_")}
    gen = gen_model.generate(**text_only, max_new_tokens=3, do_sample=False, min_new_tokens=3)
    assert gen.shape == (2, seq + 3)
    assert torch.equal(gen[:, seq], out.logits[:, -1].argmax(-1))


# --- 3. image-token positions vs image features -----------------------------------------------


def test_image_token_positions_receive_exactly_the_image_features(built: Built) -> None:
    # A 4:1 image gets fewer any-res tokens than the near-square ones (its crops are unpadded).
    images = [random_image(32, 32, 0), random_image(40, 48, 1), random_image(16, 64, 2)]
    enc = _encode(built, [QUESTION, LONG_QUESTION, "describe the image."], images)
    mask = enc["input_ids"] == built.model.config.image_token_id
    feats = _image_features(built, enc)
    assert int(mask.sum()) == feats.shape[0]
    per_row = mask.sum(-1).tolist()
    if built.name == "instructblip":
        assert per_row == [NUM_QUERY_TOKENS] * 3
    elif built.name in ("llava_next", "llava_onevision"):
        assert len(set(per_row)) > 1
    else:
        assert per_row == [16] * 3  # (32 px / patch 8)^2
    embeds = _decoder_inputs_embeds(built, enc)
    # ε·S ≈ 1.2e-5..1.8e-5, 12-18x the old bare 1e-6 (S = the features' magnitude, up to ~1.8);
    # a feature row in the wrong place differs by O(1)
    assert_close(embeds[mask], feats)
    # Text positions keep their token embeddings.
    token_embeds = built.model.get_input_embeddings()(enc["input_ids"])
    torch.testing.assert_close(embeds[~mask], token_embeds[~mask], rtol=0, atol=0)


def test_feature_module_output_is_what_gets_placed(built: Built) -> None:
    path = FEATURE_MODULE[built.name]
    if path is None:
        pytest.skip(f"{built.name}: placed features are the projector output unpadded + newlines")
    enc = _encode(built, [QUESTION], [random_image(32, 32, 0)])
    captured: list[torch.Tensor] = []
    module = built.model.get_submodule(path)
    handle = module.register_forward_hook(lambda _m, _i, o: captured.append(o))
    try:
        embeds = _decoder_inputs_embeds(built, enc)
    finally:
        handle.remove()
    mask = enc["input_ids"] == built.model.config.image_token_id
    torch.testing.assert_close(embeds[mask], captured[0].flatten(0, 1), rtol=0, atol=0)


# --- 4. the image matters; batching does not ------------------------------------------------


def test_different_images_give_different_logits(built: Built) -> None:
    a = _forward(built, _encode(built, [QUESTION], [random_image(32, 32, 0)])).logits[0, -1]
    b = _forward(built, _encode(built, [QUESTION], [random_image(32, 32, 7)])).logits[0, -1]
    assert (a - b).abs().max() > 1e-2


@pytest.mark.parametrize("with_image", [True, False])
def test_left_padded_batch_matches_rows_alone(built: Built, with_image: bool) -> None:
    questions = [QUESTION, LONG_QUESTION]
    images = [random_image(32, 32, 0), random_image(40, 48, 1)]
    enc = _encode(built, questions, images if with_image else None, image=with_image)
    assert (enc["attention_mask"] == 0).any()
    batched = _forward(built, enc).logits[:, -1]
    for row, question in enumerate(questions):
        alone_images = [images[row]] if with_image else None
        alone = _forward(built, _encode(built, [question], alone_images, image=with_image))
        assert (batched[row] - alone.logits[0, -1]).abs().max() <= TOL


def test_instructblip_padding_quirk_needs_mask_based_positions() -> None:
    """Rows read [image tokens][pads][text]: default positions 0..T-1 shift the text by the pads."""
    torch.set_num_threads(1)
    model, processor = build_instructblip()
    b = Built("instructblip", model, processor)
    questions = [QUESTION, LONG_QUESTION]
    images = [random_image(32, 32, 0), random_image(40, 48, 1)]
    enc = _encode(b, questions, images)
    mask = enc["attention_mask"]
    short = int(mask.sum(-1).argmin())
    assert (enc["input_ids"][short, :NUM_QUERY_TOKENS] == model.config.image_token_id).all()
    assert mask[short, NUM_QUERY_TOKENS] == 0  # the pads come right after the image tokens
    # The Q-Former's instruction is right padded: its absolute positions start at 0 in every row.
    assert enc["qformer_attention_mask"][:, 0].all()
    alone = _forward(b, _encode(b, [questions[short]], [images[short]])).logits[0, -1]
    with torch.no_grad():
        default_positions = model(**enc).logits[short, -1]
    assert (default_positions - alone).abs().max() > TOL


# --- hidden states and layer outputs ---------------------------------------------------------


def test_hidden_states_are_layer_outputs_except_last_which_is_post_norm(built: Built) -> None:
    decoder = built.model.get_decoder()
    assert hasattr(decoder, "layers") and hasattr(decoder, "norm")
    outputs: list[Any] = []
    handles = [
        layer.register_forward_hook(lambda _m, _i, o: outputs.append(o)) for layer in decoder.layers
    ]
    try:
        enc = _encode(
            built, [QUESTION, LONG_QUESTION], [random_image(32, 32, 0), random_image(40, 48, 1)]
        )
        hs = _hidden_states(built, _forward(built, enc, output_hidden_states=True))
    finally:
        for h in handles:
            h.remove()
    n_layers = len(decoder.layers)
    assert len(hs) == n_layers + 1
    assert all(isinstance(o, torch.Tensor) for o in outputs)  # plain tensors, not tuples
    torch.testing.assert_close(hs[0], _decoder_inputs_embeds(built, enc), rtol=0, atol=0)
    for i in range(n_layers - 1):
        assert torch.equal(hs[i + 1], outputs[i])
    with torch.no_grad():
        assert torch.equal(hs[-1], decoder.norm(outputs[-1]))
    assert not torch.allclose(hs[-1], outputs[-1])


def test_nnsight_layer_reads_equal_hidden_states(built: Built) -> None:
    enc = _encode(
        built, [QUESTION, LONG_QUESTION], [random_image(32, 32, 0), random_image(40, 48, 1)]
    )
    hs = _hidden_states(built, _forward(built, enc, output_hidden_states=True))
    path = {m: n for n, m in built.model.named_modules()}[built.model.get_decoder()]
    lm = NNsight(built.model)
    envoy = lm
    for part in path.split("."):
        envoy = getattr(envoy, part)
    inputs = dict(enc)
    if built.name == "instructblip":
        inputs["position_ids"] = (enc["attention_mask"].cumsum(-1) - 1).clamp(min=0)
    reads: list[torch.Tensor] = []
    with lm.trace(**inputs):
        for i in range(len(envoy.layers)):
            reads.append(envoy.layers[i].output[:, -1].save())
    for i in range(len(reads) - 1):
        assert torch.equal(reads[i], hs[i + 1][:, -1])


# --- 5. mixed batches (one row with an image, one without) ----------------------------------


def test_mixed_batch(built: Built) -> None:
    image = random_image(40, 48, 1)
    texts = [_prompt(built.processor, QUESTION), _prompt(built.processor, LONG_QUESTION, False)]
    if built.name == "instructblip":
        # No per-row placeholder: the processor prepends image tokens to every row, so a row
        # without an image cannot be expressed, and one image for two rows fails in the Q-Former.
        enc = built.processor(text=texts, images=[image], padding=True, return_tensors="pt")
        image_rows = (enc["input_ids"] == built.model.config.image_token_id).sum(-1)
        assert image_rows.tolist() == [NUM_QUERY_TOKENS, NUM_QUERY_TOKENS]
        with pytest.raises(RuntimeError):
            built.model(**enc)
        return
    # Flat list holding only the images that occur (rows without <image> take none).
    enc = built.processor(text=texts, images=[image], padding=True, return_tensors="pt")
    batched = _forward(built, enc).logits[:, -1]
    with_image = _forward(built, _encode(built, [QUESTION], [image])).logits[0, -1]
    blind = _forward(built, _encode(built, [LONG_QUESTION], None, image=False)).logits[0, -1]
    assert (batched[0] - with_image).abs().max() <= TOL
    assert (batched[1] - blind).abs().max() <= TOL
    # The nested per-row form, with [] for a row without an image, gives the same encoding.
    nested = built.processor(text=texts, images=[[image], []], padding=True, return_tensors="pt")
    assert nested.keys() == enc.keys()
    assert all(torch.equal(nested[k], enc[k]) for k in enc)


def test_slot_pieces_are_joined_by_a_space_where_the_template_puts_images_first() -> None:
    """LLaVA-NeXT-Mistral's published template renders every image, then the text items back to
    back; the tiny chatml template interleaves them in place."""
    from tools.real_models import FIXTURES

    template = (FIXTURES / "llava-v1.6-mistral-7b-hf" / "chat_template.jinja").read_text()
    _, images_first = build_llava_next(chat_template=template)
    question = "What is the object in {image} made of?"
    got = chat_prompt(images_first, question, 1)
    assert got == "[INST] <image>\nWhat is the object in made of? [/INST]"
    _, interleaving = build_llava_next()
    got = chat_prompt(interleaving, question, 1)
    before, after = got.split(IMAGE_PLACEHOLDER)
    assert before.endswith("What is the object in") and after.startswith("made of?")
