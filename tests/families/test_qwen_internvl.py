"""Tiny Qwen2-VL, Qwen2.5-VL, Qwen3-VL and InternVL builders: real classes that run end to end.

References are independent of the builders: HF's own auto mappings and ``output_hidden_states``,
forward hooks on the decoder and projector modules, single-row runs for batch invariance, and image
token counts derived by hand from the documented resize/tiling rules. A batch against single rows,
or SDPA against eager attention, is rounding of an fp32 forward: ε·S with S = max |logits|
(``assert_close``; docs/conventions.md, Tolerances), tighter than the bare 1e-4 it replaces.
"""

from __future__ import annotations

from collections.abc import Callable

import nnsight
import numpy as np
import pytest
import torch
from nnsight import NNsight
from PIL import Image
from transformers import (
    InternVLProcessor,
    PreTrainedModel,
    ProcessorMixin,
    Qwen2_5_VLProcessor,
    Qwen2VLProcessor,
    Qwen3VLProcessor,
)

from interp.testing.builders.internvl import build_internvl
from interp.testing.builders.qwen_vl import build_qwen2_5_vl, build_qwen2_vl, build_qwen3_vl
from interp.testing.builds import check_seeded, check_tiny_build
from interp.testing.tolerance import assert_close

Builder = Callable[..., tuple[PreTrainedModel, ProcessorMixin]]
BUILDERS: dict[str, Builder] = {
    "qwen2_vl": build_qwen2_vl,
    "qwen2_5_vl": build_qwen2_5_vl,
    "qwen3_vl": build_qwen3_vl,
    "internvl": build_internvl,
}
PROCESSORS: dict[str, type[ProcessorMixin]] = {
    "qwen2_vl": Qwen2VLProcessor,
    "qwen2_5_vl": Qwen2_5_VLProcessor,
    "qwen3_vl": Qwen3VLProcessor,
    "internvl": InternVLProcessor,
}
ARCHS = list(BUILDERS)
QUESTION = "what color is the banana?"
LONGER_QUESTION = "what shape is the object in the image? answer with one word please ."
# (width, height) of the test images.
SIZES = [(32, 32), (48, 40), (64, 32)]
# Image tokens per image, by hand. Qwen: sides rounded to multiples of 16 px (8 px patches, 2x2
# merge), one token per 16x16 block: 32x32 -> 2x2, 48x40 -> 3x2 (40/16 = 2.5 rounds to 2),
# 64x32 -> 4x2. InternVL: 4 tokens per 32 px tile; 32x32 and 48x40 fit one tile (aspect ratio
# closest to 1:1), 64x32 becomes 2x1 tiles plus a thumbnail tile.
EXPECTED_IMAGE_TOKENS = {
    "qwen2_vl": [4, 6, 8],
    "qwen2_5_vl": [4, 6, 8],
    "qwen3_vl": [4, 6, 8],
    "internvl": [4, 4, 12],
}


@pytest.fixture(scope="module", params=ARCHS)
def arch(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(scope="module")
def built(arch: str) -> tuple[PreTrainedModel, ProcessorMixin]:
    torch.set_num_threads(1)
    return BUILDERS[arch]()


def image(size: tuple[int, int], seed: int) -> Image.Image:
    w, h = size
    pixels = np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)
    return Image.fromarray(pixels)


def prompt(processor: ProcessorMixin, with_image: bool, question: str = QUESTION) -> str:
    content = ([{"type": "image"}] if with_image else []) + [{"type": "text", "text": question}]
    return processor.apply_chat_template(
        [{"role": "user", "content": content}], add_generation_prompt=True, tokenize=False
    )


def image_token_id(model: PreTrainedModel) -> int:
    return model.config.image_token_id


def forward(model: PreTrainedModel, enc: dict[str, torch.Tensor]) -> object:
    with torch.no_grad():
        return model(**enc, output_hidden_states=True)


def encode(
    processor: ProcessorMixin, texts: list[str], images: list[Image.Image] | None
) -> dict[str, torch.Tensor]:
    return processor(text=texts, images=images, padding=True, return_tensors="pt")


def image_feature_module(model: PreTrainedModel, arch: str) -> torch.nn.Module:
    """The module whose output rows are scattered into the image-token positions.

    For the Qwen family that is the whole vision model (its ``pooler_output``), not its merger:
    Qwen2.5-VL's merger emits rows in attention-window order and the vision model reorders them.
    """
    if arch == "internvl":
        return model.model.multi_modal_projector
    return model.model.visual


def feature_rows(output: object) -> torch.Tensor:
    """The feature rows of the image-feature module's output, flattened to ``[n, d]``.

    Read it inside the hook: Qwen's ``get_image_features`` later replaces the output's
    ``pooler_output`` (same object) with a per-image split tuple.
    """
    rows = output if isinstance(output, torch.Tensor) else output.pooler_output
    return rows.reshape(-1, rows.shape[-1])


def test_builder_gives_real_tiny_classes(arch: str, built) -> None:
    model, processor = built
    check_tiny_build(model, processor)
    assert type(processor) is PROCESSORS[arch]
    assert processor.tokenizer.convert_ids_to_tokens(image_token_id(model)) == processor.image_token


def test_deterministic_from_seed(arch: str) -> None:
    check_seeded(BUILDERS[arch], seeds=(3, 4))


def test_chat_template_image_and_blind_prompts(built) -> None:
    model, processor = built
    with_image, blind = prompt(processor, True), prompt(processor, False)
    assert with_image.count(processor.image_token) == 1
    assert processor.image_token not in blind
    assert QUESTION in with_image and QUESTION in blind
    assert blind.endswith("<|im_start|>assistant\n")
    ids = processor.tokenizer(blind)["input_ids"]
    assert image_token_id(model) not in ids


def test_batch_forward_and_generate(built) -> None:
    model, processor = built
    texts = [prompt(processor, True), prompt(processor, True, LONGER_QUESTION)]
    enc = encode(processor, texts, [image(SIZES[0], 0), image(SIZES[1], 1)])
    assert enc["attention_mask"][0, 0] == 0 and enc["attention_mask"][:, -1].all()  # left padded
    out = forward(model, enc)
    n_layers = model.config.get_text_config().num_hidden_layers
    assert len(out.hidden_states) == n_layers + 1
    assert out.logits.shape[:2] == enc["input_ids"].shape
    with torch.no_grad():
        gen = model.generate(**enc, max_new_tokens=3, do_sample=False)
    assert gen.shape == (2, enc["input_ids"].shape[1] + 3)
    assert torch.equal(gen[:, : enc["input_ids"].shape[1]], enc["input_ids"])
    # greedy: the first new token is the argmax of the prompt's last logits
    assert torch.equal(gen[:, enc["input_ids"].shape[1]], out.logits[:, -1].argmax(-1))

    blind = encode(
        processor, [prompt(processor, False), prompt(processor, False, LONGER_QUESTION)], None
    )
    assert "pixel_values" not in blind
    assert not (blind["input_ids"] == image_token_id(model)).any()
    out_blind = forward(model, blind)
    assert len(out_blind.hidden_states) == n_layers + 1
    with torch.no_grad():
        gen_blind = model.generate(**blind, max_new_tokens=3, do_sample=False)
    assert gen_blind.shape == (2, blind["input_ids"].shape[1] + 3)


def test_image_tokens_match_scattered_features(arch: str, built) -> None:
    model, processor = built
    texts = [
        prompt(processor, True),
        prompt(processor, True, LONGER_QUESTION),
        prompt(processor, True),
    ]
    enc = encode(processor, texts, [image(s, i) for i, s in enumerate(SIZES)])
    mask = enc["input_ids"] == image_token_id(model)
    assert mask.sum(1).tolist() == EXPECTED_IMAGE_TOKENS[arch]

    with torch.no_grad():
        if arch == "internvl":
            feats = model.model.get_image_features(pixel_values=enc["pixel_values"]).pooler_output
            per_tile = feats.shape[1]
            assert feats.shape[0] * per_tile == mask.sum()
        else:
            feats = model.model.get_image_features(
                enc["pixel_values"], enc["image_grid_thw"]
            ).pooler_output
            assert [f.shape[0] for f in feats] == mask.sum(1).tolist()

    captured: list[torch.Tensor] = []
    module = image_feature_module(model, arch)
    handle = module.register_forward_hook(lambda m, i, o: captured.append(feature_rows(o)))
    try:
        out = forward(model, enc)
    finally:
        handle.remove()
    assert len(captured) == 1
    rows = captured[0]
    # hidden_states[0] is the decoder input: the projector rows sit at the image positions in order
    torch.testing.assert_close(out.hidden_states[0][mask], rows, rtol=0, atol=0)


def test_image_changes_logits(built) -> None:
    model, processor = built
    texts = [prompt(processor, True), prompt(processor, True)]
    a = forward(model, encode(processor, texts, [image(SIZES[0], 0), image(SIZES[1], 1)]))
    b = forward(model, encode(processor, texts, [image(SIZES[0], 10), image(SIZES[1], 11)]))
    diff = (a.logits[:, -1] - b.logits[:, -1]).abs().amax(-1)
    assert (diff > 1e-2).all(), diff


@pytest.mark.parametrize("with_image", [True, False])
def test_batch_equals_single_rows(built, with_image: bool) -> None:
    model, processor = built
    texts = [prompt(processor, with_image), prompt(processor, with_image, LONGER_QUESTION)]
    images = [image(SIZES[0], 0), image(SIZES[1], 1)] if with_image else None
    enc = encode(processor, texts, images)
    assert enc["attention_mask"][0].sum() < enc["attention_mask"][1].sum()  # row 0 is padded
    batch = forward(model, enc).logits[:, -1]
    for row, text in enumerate(texts):
        alone = encode(processor, [text], [images[row]] if images else None)
        assert_close(forward(model, alone).logits[0, -1], batch[row])


@pytest.mark.parametrize("form", ["flat", "nested"])
def test_mixed_image_and_blind_batch(built, form: str) -> None:
    """A row without an image is absent from the flat list, or an empty list in the nested form."""
    model, processor = built
    texts = [prompt(processor, True), prompt(processor, False, LONGER_QUESTION)]
    img = image(SIZES[1], 1)
    enc = encode(processor, texts, [img] if form == "flat" else [[img], []])
    assert (enc["input_ids"][1] == image_token_id(model)).sum() == 0
    batch = forward(model, enc).logits[:, -1]
    alone_image = forward(model, encode(processor, texts[:1], [img])).logits[0, -1]
    alone_blind = forward(model, encode(processor, texts[1:], None)).logits[0, -1]
    assert_close(batch[0], alone_image)
    assert_close(batch[1], alone_blind)


def test_hidden_states_are_layer_outputs_then_final_norm(built) -> None:
    model, processor = built
    decoder = model.get_decoder()
    assert decoder is model.model.language_model
    layers, norm = decoder.layers, decoder.norm
    outputs: list[object] = []
    handles = [layer.register_forward_hook(lambda m, i, o: outputs.append(o)) for layer in layers]
    handles.append(norm.register_forward_hook(lambda m, i, o: outputs.append(o)))
    enc = encode(processor, [prompt(processor, True)], [image(SIZES[1], 1)])
    try:
        out = forward(model, enc)
    finally:
        for h in handles:
            h.remove()
    n = len(layers)
    assert len(outputs) == n + 1
    assert all(isinstance(o, torch.Tensor) for o in outputs)  # plain tensors, not tuples
    hidden = out.hidden_states
    for i in range(n - 1):
        assert torch.equal(hidden[i + 1], outputs[i])
    assert not torch.allclose(hidden[n], outputs[n - 1])  # the last entry is post-norm ...
    assert torch.equal(hidden[n], outputs[n])  # ... the final norm's output
    assert_close(model.lm_head(hidden[n]), out.logits)


def test_nnsight_reads_equal_hidden_states(arch: str) -> None:
    model, processor = BUILDERS[arch]()
    texts = [prompt(processor, True), prompt(processor, True, LONGER_QUESTION)]
    enc = encode(processor, texts, [image(SIZES[0], 0), image(SIZES[2], 2)])
    ref = forward(model, enc).hidden_states
    lm = NNsight(model)
    decoder = lm.model.language_model
    n = len(model.get_decoder().layers)
    with lm.trace(**enc):
        reads = nnsight.save([decoder.layers[i].output[:, -1] for i in range(n)])
        final = decoder.norm.output[:, -1].save()
    for i in range(n - 1):
        assert torch.equal(reads[i], ref[i + 1][:, -1])
    assert torch.equal(final, ref[n][:, -1])


def test_qwen3_deepstack_adds_image_features_after_layer_0() -> None:
    """Qwen3-VL quirk: layer 1's input = layer 0's output + DeepStack rows at image positions."""
    model, processor = build_qwen3_vl()
    enc = encode(processor, [prompt(processor, True)], [image(SIZES[0], 0)])
    mask = enc["input_ids"][0] == image_token_id(model)
    inputs: list[torch.Tensor] = []
    layer1 = model.get_decoder().layers[1]
    handle = layer1.register_forward_pre_hook(
        lambda m, a, k: inputs.append(a[0] if a else k["hidden_states"]), with_kwargs=True
    )
    try:
        out = forward(model, enc)
    finally:
        handle.remove()
    layer0_out = out.hidden_states[1][0]
    layer1_in = inputs[0][0]
    assert torch.equal(layer1_in[~mask], layer0_out[~mask])
    assert (layer1_in[mask] - layer0_out[mask]).abs().amax() > 1e-2


def test_sdpa_matches_eager(arch: str, built) -> None:
    model, processor = built
    sdpa, _ = BUILDERS[arch](attn_implementation="sdpa")
    assert sdpa.config._attn_implementation == "sdpa"
    assert sdpa.config.get_text_config()._attn_implementation == "sdpa"
    assert model.config._attn_implementation == "eager"
    texts = [prompt(processor, True), prompt(processor, True, LONGER_QUESTION)]
    enc = encode(processor, texts, [image(SIZES[0], 0), image(SIZES[1], 1)])
    assert_close(forward(sdpa, enc).logits[:, -1], forward(model, enc).logits[:, -1])
