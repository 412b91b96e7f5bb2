"""Full omni checkpoints as users load them: a ``qwen2_5_omni`` / ``qwen3_omni_moe`` folder loads
its thinker alone (the talker and speech decoder are never built).

References: the thinker built directly by the tiny builder (its weights and HF
``output_hidden_states``), the full model's own children (parameter counts), the saved config.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
import torch
from transformers import (
    Qwen2_5OmniThinkerForConditionalGeneration,
    Qwen3OmniMoeConfig,
    Qwen3OmniMoeThinkerForConditionalGeneration,
)

import interp
from interp.cli import main
from interp.doctor import default_sample
from interp.encoding import encode
from interp.model import model_config
from interp.testing.builders.qwen_omni import (
    build_qwen2_5_omni_thinker,
    build_qwen3_omni_moe_thinker,
    save_qwen2_5_omni_checkpoint,
)
from interp.testing.tolerance import assert_close
from interp.thinker import skipped_parameters


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, torch.nn.Module]:
    folder = tmp_path_factory.mktemp("qwen2_5_omni")
    full = save_qwen2_5_omni_checkpoint(folder, seed=0)
    return folder, full


@cache
def direct() -> torch.nn.Module:
    return build_qwen2_5_omni_thinker(seed=0)[0]


def test_the_folder_is_a_full_checkpoint(checkpoint):
    folder, full = checkpoint
    whole = model_config(folder, whole=True)
    assert whole.model_type == "qwen2_5_omni" and whole.enable_audio_output
    assert {"thinker", "talker", "token2wav"} <= {n for n, _ in full.named_children()}
    assert model_config(folder).model_type == "qwen2_5_omni_thinker"


def test_load_builds_the_thinker_alone_with_its_weights(checkpoint):
    folder, _ = checkpoint
    vlm = interp.load(folder)
    assert type(vlm.hf) is Qwen2_5OmniThinkerForConditionalGeneration
    assert vlm.adapter.name == "qwen2_5_omni_thinker"
    names = {n.split(".")[0] for n, _ in vlm.hf.named_modules() if n}
    assert not names & {"talker", "token2wav", "thinker"}
    ref = direct().state_dict()
    got = vlm.hf.state_dict()
    assert set(got) == set(ref)
    assert all(torch.equal(got[k], ref[k]) for k in ref)


def test_reads_equal_the_thinker_built_directly(checkpoint):
    folder, _ = checkpoint
    vlm = interp.load(folder)
    sample = default_sample(vlm)  # image, audio and video
    assert sample.has_audio and sample.has_video
    states = interp.residual_stream(vlm, [sample], progress_bar=False)[0]
    enc = encode(vlm, [sample], "full")
    with torch.no_grad():
        hidden = direct()(**enc.inputs, output_hidden_states=True).hidden_states
    L = vlm.n_layers
    ref = torch.stack([h[0, -1] for h in hidden[:L]])
    assert_close(states[:L], ref)
    final = vlm.adapter.final_norm(direct())(states[L])
    assert_close(final, hidden[L][0, -1])


def test_lazy_load_is_the_thinker_on_meta_and_the_skipped_parts_are_counted(checkpoint):
    folder, full = checkpoint
    vlm = interp.load(folder, dispatch=False)
    assert type(vlm.hf) is Qwen2_5OmniThinkerForConditionalGeneration and not vlm.dispatched
    assert vlm.n_layers == direct().config.text_config.num_hidden_layers
    counts = skipped_parameters(model_config(folder, whole=True))
    by_hand = {
        name: sum(p.numel() for p in getattr(full, name).parameters())
        for name in ("talker", "token2wav")
    }
    assert counts == by_hand and all(n > 0 for n in counts.values())


def test_a_qwen3_omni_configuration_loads_its_thinker_on_meta(tmp_path):
    thinker = build_qwen3_omni_moe_thinker(seed=0)[0]
    config = Qwen3OmniMoeConfig(thinker_config=thinker.config.to_dict())
    assert config.model_type == "qwen3_omni_moe" and config.enable_audio_output
    config.save_pretrained(tmp_path)  # the configuration alone
    vlm = interp.load(tmp_path, dispatch=False)
    assert type(vlm.hf) is Qwen3OmniMoeThinkerForConditionalGeneration
    assert vlm.adapter.name == "qwen3_omni_moe_thinker"
    assert (vlm.n_layers, vlm.d_model) == (3, 64)
    assert not any(n.startswith(("talker", "code2wav")) for n, _ in vlm.hf.named_modules())


def test_a_built_full_model_is_read_through_its_thinker(checkpoint):
    folder, full = checkpoint
    vlm = interp.load(full, interp.load(folder, dispatch=False).processor)
    assert vlm.hf is full.thinker


def test_the_conflict_command_accepts_the_full_checkpoint(checkpoint, tmp_path):
    folder, _ = checkpoint
    out = tmp_path / "run"
    argv = ["conflict", "--model", str(folder), "--data", "demo:trimodal", "--n", "8"]
    opts = ["--cv", "2", "--max-new-tokens", "1", "--no-progress", "--out", str(out)]
    assert main([*argv, *opts]) == 0
    assert (out / "responses.csv").is_file()


def test_doctor_names_the_parts_left_unbuilt(checkpoint):
    from interp.doctor import doctor

    folder, full = checkpoint
    vlm = interp.load(folder, dispatch=False)
    fact = doctor(vlm, forward_checks=False, conditions=("full",)).facts["checkpoint"]
    talker = sum(p.numel() for p in full.talker.parameters())
    assert fact.startswith("qwen2_5_omni: its thinker is loaded")
    assert f"talker ({talker / 1e6:.1f} M params" in fact and "token2wav (" in fact
