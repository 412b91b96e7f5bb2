"""The omni-modal and video families on the library's image path: Qwen2.5-Omni and Qwen3-Omni-MoE
thinkers, Gemma 4 and LLaVA-NeXT-Video, as image + text VLMs.

References are independent of the library: HF ``output_hidden_states`` of a plain forward, HF
``generate``, the tokenizer's own decode, and image-token counts of the stock processor on one image
alone. (Audio and video facts, on HF alone: ``test_omni_media.py``.)
"""

from __future__ import annotations

import re
from functools import cache

import nnsight
import numpy as np
import pytest
import torch
from transformers import (
    Gemma4ForConditionalGeneration,
    Gemma4Processor,
    LlavaNextVideoForConditionalGeneration,
    LlavaNextVideoProcessor,
    Qwen2_5OmniProcessor,
    Qwen2_5OmniThinkerForConditionalGeneration,
    Qwen3OmniMoeProcessor,
    Qwen3OmniMoeThinkerForConditionalGeneration,
)

import interp
from interp.encoding import encode, question_mask
from interp.testing import build_tiny, tiny_vlm
from interp.testing.tolerance import assert_close

CLASSES = {
    "qwen2_5_omni_thinker": (Qwen2_5OmniThinkerForConditionalGeneration, Qwen2_5OmniProcessor),
    "qwen3_omni_moe_thinker": (Qwen3OmniMoeThinkerForConditionalGeneration, Qwen3OmniMoeProcessor),
    "gemma4": (Gemma4ForConditionalGeneration, Gemma4Processor),
    "llava_next_video": (LlavaNextVideoForConditionalGeneration, LlavaNextVideoProcessor),
}
ARCHS = list(CLASSES)


@cache
def vlm_of(arch: str) -> interp.VLM:
    return tiny_vlm(arch, seed=0)


@pytest.fixture(params=ARCHS)
def arch(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def vlm(arch: str) -> interp.VLM:
    return vlm_of(arch)


def hf_forward(vlm: interp.VLM, inputs: dict) -> tuple[torch.Tensor, ...]:
    """HF hidden states of a plain forward, with the family's declared position fix-up."""
    inputs = dict(inputs)
    if vlm.adapter.forward_inputs is not None:
        inputs = vlm.adapter.forward_inputs(inputs)
    with torch.no_grad():
        return vlm.hf(**inputs, output_hidden_states=True).hidden_states


def test_builder_gives_the_stock_classes_tiny_and_seeded(arch: str) -> None:
    model, processor = build_tiny(arch, seed=3)
    model_cls, processor_cls = CLASSES[arch]
    assert type(model) is model_cls and type(processor) is processor_cls
    assert model.config.model_type == arch
    assert model.config.architectures == [model_cls.__name__]
    assert not model.training and all(p.dtype == torch.float32 for p in model.parameters())
    text = model.config.get_text_config()
    assert (text.hidden_size, text.num_hidden_layers) == (64, 3)
    assert sum(p.numel() for p in model.parameters()) < 500_000
    again, other = (
        build_tiny(arch, seed=3)[0].state_dict(),
        build_tiny(arch, seed=4)[0].state_dict(),
    )
    state = model.state_dict()
    assert all(torch.equal(state[k], again[k]) for k in state)
    assert any(not torch.equal(state[k], other[k]) for k in state)
    assert interp.adapter_for(model) is interp.ADAPTERS[arch]


def test_residual_reads_equal_hf_hidden_states(vlm: interp.VLM, samples) -> None:
    batch = samples[:4]
    for condition in ("full", "blind"):
        states = interp.residual_stream(vlm, batch, condition, batch_size=4, progress_bar=False)
        enc = encode(vlm, batch, condition)
        hs = hf_forward(vlm, enc.inputs)
        n, rows = vlm.n_layers, torch.arange(len(batch))
        ref = torch.stack([h[rows, enc.last_index] for h in hs[:n]], dim=1)
        assert_close(states[:, :n], ref)


def test_blind_drops_the_image_and_changes_the_answer_state(vlm: interp.VLM, samples) -> None:
    batch = samples[:4]
    blind = encode(vlm, batch, "blind")
    assert not blind.image_mask.any() and blind.has_image == [False] * 4
    assert "pixel_values" not in blind.inputs
    assert all(s.question in p for s, p in zip(batch, blind.prompts))
    full = interp.residual_stream(vlm, batch, "full", progress_bar=False)
    none = interp.residual_stream(vlm, batch, "blind", progress_bar=False)
    assert (full[:, -1] - none[:, -1]).abs().amax() > 1e-3


def test_mixed_image_and_blind_rows_equal_single_runs(vlm: interp.VLM, samples) -> None:
    """The adapter's ``mixed_batches`` holds: in one stock-processor batch of two image rows and
    two blind rows, each row's residual reads equal the library's run of that row alone."""
    assert vlm.adapter.mixed_batches
    batch = samples[:4]
    full = interp.residual_stream(vlm, batch[:2], "full", batch_size=1, progress_bar=False)
    blind = interp.residual_stream(vlm, batch[2:], "blind", batch_size=1, progress_bar=False)
    prompts = encode(vlm, batch[:2], "full").prompts + encode(vlm, batch[2:], "blind").prompts
    images = [[s.load_image()] for s in batch[:2]] + [[], []]
    inputs = vlm.processor(
        text=prompts,
        images=vlm.adapter.processor_images(images),
        padding=True,
        return_tensors="pt",
    )
    assert inputs["attention_mask"][:, -1].all()  # left padded: the last column is every row's
    hs = hf_forward(vlm, inputs)
    got = torch.stack([h[:, -1] for h in hs[: vlm.n_layers]], dim=1)
    assert_close(got[:2], full[:, : vlm.n_layers])
    assert_close(got[2:], blind[:, : vlm.n_layers])


def test_generate_equals_hf_generate(vlm: interp.VLM, samples) -> None:
    gen = interp.generate(vlm, samples[:3], max_new_tokens=4, batch_size=3, progress_bar=False)
    for sample, ids in zip(samples[:3], gen.token_ids):
        enc = encode(vlm, [sample], "full")
        with torch.no_grad():
            out = vlm.hf.generate(
                **enc.inputs,
                max_new_tokens=4,
                do_sample=False,
                pad_token_id=vlm.tokenizer.pad_token_id,
            )
        assert ids == out[0, enc.input_ids.shape[1] :].tolist()[: len(ids)]


def squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def test_image_and_question_positions_decode_to_their_tokens(vlm: interp.VLM, samples) -> None:
    batch = samples[:3]
    enc = encode(vlm, batch, "full")
    image_token = vlm.tokenizer.convert_ids_to_tokens(vlm.image_token_id)
    qmask = question_mask(vlm, enc)
    for row, sample in enumerate(batch):
        ids = enc.input_ids[row]
        image_ids = ids[enc.image_mask[row]].tolist()
        assert image_ids and set(image_ids) == {vlm.image_token_id}
        # as many image tokens as the stock processor gives this image alone
        alone = vlm.processor(
            text=[vlm.adapter.build_prompt(vlm.processor, sample.question, 1)],
            images=vlm.adapter.processor_images([[sample.load_image()]]),
            return_tensors="pt",
        )
        assert len(image_ids) == int((alone["input_ids"] == vlm.image_token_id).sum())
        assert vlm.tokenizer.decode(image_ids) == image_token * len(image_ids)
        got = vlm.tokenizer.decode(ids[qmask[row]].tolist())
        assert squash(got) == squash(sample.question)
        assert not bool((qmask[row] & enc.image_mask[row]).any())


def test_gemma4_residual_0_is_the_decoder_input_the_per_layer_inputs_come_from(samples) -> None:
    """Gemma 4 projects per-layer inputs from the decoder's ``inputs_embeds`` before layer 0: an
    edit of residual index 0 equals a plain forward whose decoder input is edited by a torch
    pre-hook, and differs from the same edit at layer 0's input (which misses them)."""
    vlm = vlm_of("gemma4")
    enc = encode(vlm, samples[:2], "full")
    rows = torch.arange(2)
    v = torch.randn(vlm.d_model, generator=torch.Generator().manual_seed(0))
    with torch.no_grad(), vlm.trace_encoding(enc):
        read = nnsight.save(vlm.residual[0].clone())
        vlm.residual[0][:, -1] += v
        got = nnsight.save(vlm.lm_head.output[rows, enc.last_index])
    torch.testing.assert_close(read, hf_forward(vlm, enc.inputs)[0], atol=0, rtol=0)

    def pre(module: torch.nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        embeds = kwargs["inputs_embeds"].clone()
        embeds[:, -1] += v
        return args, {**kwargs, "inputs_embeds": embeds}

    handle = vlm.hf.get_decoder().register_forward_pre_hook(pre, with_kwargs=True)
    try:
        with torch.no_grad():
            ref = vlm.hf(**vlm.adapter.forward_inputs(dict(enc.inputs))).logits
    finally:
        handle.remove()
    assert_close(got, ref[rows, enc.last_index])
    with torch.no_grad(), vlm.trace_encoding(enc):
        vlm.layers[0].input[:, -1] += v
        other = nnsight.save(vlm.lm_head.output[rows, enc.last_index])
    assert (other - got).abs().amax() > 1e-3


def test_gemma4_real_tokenizer_has_the_checkpoint_ids_and_template() -> None:
    """Gemma 4's real vocabulary carries its multimodal tokens at the ids Gemma4Config defaults to
    (the checkpoint's), and its own chat template writes the image item as the processor expects."""
    from transformers import Gemma4Config

    from tools.real import RealTokenizerMissing
    from tools.real_models import real_vlm

    try:
        vlm = real_vlm("gemma4")
    except RealTokenizerMissing as err:
        pytest.skip(str(err))
    defaults = Gemma4Config()
    tok = vlm.tokenizer
    assert vlm.image_token_id == defaults.image_token_id
    assert tok.convert_tokens_to_ids("<|audio|>") == defaults.audio_token_id
    assert tok.convert_tokens_to_ids("<|video|>") == defaults.video_token_id
    assert tok.convert_tokens_to_ids("<|image>") == defaults.boi_token_id
    prompt = vlm.adapter.build_prompt(vlm.processor, "What is it?", 1)
    assert "\n\n<|image|>\n\n" in prompt and prompt.startswith("<bos><|turn>user")


def test_an_audio_language_checkpoint_loads_lazily_and_from_its_config_alone(tmp_path):
    """Qwen2-Audio is outside image-text-to-text: the lazy (meta-device) load and the config-only
    load build it through its own auto class and pipeline task, and the lazy model's reads equal
    the eager model's."""
    import shutil

    model, processor = build_tiny("qwen2_audio", seed=0)
    model.save_pretrained(tmp_path / "full")
    processor.save_pretrained(tmp_path / "full")
    lazy = interp.load(tmp_path / "full", dispatch=False)
    assert type(lazy.hf).__name__ == "Qwen2AudioForConditionalGeneration"
    wave = np.random.default_rng(0).standard_normal(16000).astype("float32") * 0.1
    samples = [interp.Sample("{audio} what is it ?", audio=(wave, 16000))]
    got = interp.residual_stream(lazy, samples, progress_bar=False)
    eager = interp.residual_stream(interp.load(model, processor), samples, progress_bar=False)
    assert_close(got, eager)

    (tmp_path / "config").mkdir()
    shutil.copy(tmp_path / "full" / "config.json", tmp_path / "config" / "config.json")
    facts = interp.load(tmp_path / "config", dispatch=False)
    assert type(facts.hf).__name__ == "Qwen2AudioForConditionalGeneration"
    assert facts.n_layers == model.config.text_config.num_hidden_layers
