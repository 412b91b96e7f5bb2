"""Bad input gets a typed error whose message names the problem and the fix."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image
from transformers import LlamaConfig, LlamaForCausalLM

import interp
from interp.store import ResultStore
from interp.studies.coe import chain_of_embedding, diagnose
from interp.testing import make_samples, refused, shared_tiny_vlm, tiny_tokenizer


@pytest.fixture(scope="module")
def llava():
    return shared_tiny_vlm("llava")


def test_missing_image_file(llava, tmp_path):
    sample = interp.Sample("what color?", image=tmp_path / "nope.png", id="x")
    with pytest.raises(interp.MissingImageError, match="nope.png"):
        interp.residual_stream(llava, [sample], progress_bar=False)
    with pytest.raises(FileNotFoundError):  # also the built-in a caller would catch
        interp.residual_stream(llava, [sample], progress_bar=False)


def test_unreadable_image_file(llava, tmp_path):
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"not an image")
    with pytest.raises(interp.ImageError, match="cannot read image"):
        interp.residual_stream(llava, [interp.Sample("q", image=bad)], progress_bar=False)


def test_image_of_wrong_type():
    with pytest.raises(interp.ImageError, match="PIL.Image"):
        interp.Sample("q", image=12)
    with pytest.raises(interp.ImageError, match=r"H×W×3"):
        interp.Sample("q", image=np.zeros((4, 4, 5), dtype=np.uint8))
    with pytest.raises(interp.ImageError, match=r"\[0, 1\]"):
        interp.Sample("q", image=np.full((4, 4, 3), 2.0))


def test_unsupported_architecture_lists_supported_and_how_to_register():
    tok = tiny_tokenizer()
    model = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=len(tok),
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
        )
    )
    with pytest.raises(interp.UnsupportedArchitectureError) as err:
        interp.load(model, tok)
    message = str(err.value)
    assert "model_type='llama'" in message and "llava" in message and "qwen2_vl" in message
    assert "register_adapter" in message


def test_registering_an_adapter_makes_a_model_loadable(samples):
    model, processor = interp.testing.build_tiny("llava")
    model.config.model_type = "my_llava_variant"
    with pytest.raises(interp.UnsupportedArchitectureError):
        interp.load(model, processor)
    adapter = interp.Adapter(
        name="my_llava",
        model_types=("my_llava_variant",),
        image_features="model.multi_modal_projector",
    )
    interp.register_adapter(adapter)
    try:
        vlm = interp.load(model, processor)
        # the registered entry, its layout (set by no test) checked at load on these weights
        assert vlm.adapter.name == "my_llava" and vlm.adapter.features == adapter.features
        assert not adapter.layout_verified and vlm.adapter.layout_verified
        assert vlm.adapter.token_layout is interp.region_layouts.llava_layout
        states = interp.residual_stream(vlm, samples[:2], progress_bar=False)
        ref = interp.residual_stream(shared_tiny_vlm("llava"), samples[:2], progress_bar=False)
        torch.testing.assert_close(states, ref)  # same seed, same weights
        with pytest.raises(ValueError, match="already registered"):
            interp.register_adapter(
                interp.Adapter(name="other", model_types=("my_llava_variant",), image_features="x")
            )
    finally:
        interp.ADAPTERS.pop("my_llava_variant")


def test_placeholder_in_question_is_an_image_token_mismatch(llava):
    sample = interp.Sample("what is <image> here?", image=Image.new("RGB", (32, 32)), id="dup")
    with pytest.raises(interp.ImageTokenMismatchError, match="image"):
        interp.residual_stream(llava, [sample], progress_bar=False)
    blind = interp.Sample("what is <image> here?", id="blind-dup")
    with pytest.raises(interp.ImageTokenMismatchError, match="blind-dup"):
        interp.residual_stream(llava, [blind], "blind", progress_bar=False)


def test_empty_sample_list(llava):
    for fn in (interp.residual_stream, interp.generate, interp.score):
        with pytest.raises(interp.EmptyInputError, match="no samples"):
            fn(llava, [], progress_bar=False)


def test_target_that_tokenises_to_nothing(llava, samples):
    with pytest.raises(interp.EmptyTargetError, match="target 1"):
        interp.score(llava, samples[:2], ["yellow", ""], progress_bar=False)
    with pytest.raises(interp.EmptyInputError, match="no answer"):
        interp.score(
            llava, [interp.Sample("q", image=Image.new("RGB", (32, 32)))], progress_bar=False
        )


@pytest.mark.parametrize("bad", ["nul:black", "null:grey", "blind:x", "swap", 3])
def test_unknown_condition(llava, samples, bad):
    with refused(interp.ConditionError):
        interp.residual_stream(llava, samples[:1], bad, progress_bar=False)


def test_swap_to_unknown_sample(llava, samples):
    with pytest.raises(interp.ConditionError, match="no sample with id 'zz'"):
        interp.residual_stream(llava, samples[:2], "swap:zz", progress_bar=False)


def test_layer_out_of_range(llava, samples):
    with pytest.raises(ValueError, match="0..3"):
        interp.residual_stream(llava, samples[:1], layers=[7], progress_bar=False)


def test_empty_group_in_split(llava):
    batch = make_samples(4)
    coe = chain_of_embedding(llava, batch, max_new_tokens=2, progress_bar=False)
    with pytest.raises(interp.EmptyGroupError, match="D_T empty"):
        diagnose(coe, split=np.ones(4, dtype=bool))
    with pytest.raises(interp.EmptyGroupError, match="D_VT empty"):
        diagnose(coe, split=np.zeros(4, dtype=bool))


def test_store_of_another_run_is_refused(tmp_path):
    ResultStore(tmp_path, {"model": "a"})
    with pytest.raises(interp.StoreError, match="differs in: model"):
        ResultStore(tmp_path, {"model": "b"})


def test_unsupported_checkpoint_folder_fails_before_loading_weights(tmp_path):
    tok = tiny_tokenizer()
    LlamaConfig(
        vocab_size=len(tok),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
    ).save_pretrained(tmp_path)  # a config without weights
    with pytest.raises(interp.UnsupportedArchitectureError, match="model_type='llama'"):
        interp.load(tmp_path)
