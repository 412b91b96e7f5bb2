"""Checkpoints whose config leaves a tower out: an entry takes the modalities of the towers the
config has (issue #45: Gemma 4 31B publishes ``"audio_config": null``).

The families whose tower configs transformers keeps None when a checkpoint sets them so (and whose
models then build no tower): Gemma 4 and Gemma 4 Unified (vision and audio), Nemotron-H Omni
(audio, which its entry does not map). Gemma 3n and the Qwen-Omni thinkers get the default tower
instead (their models cannot be built without one). References: transformers' configs and module
trees built on the meta device, and plain HF ``output_hidden_states`` on tiny models.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from transformers import AutoConfig, AutoModelForMultimodalLM

import interp
from interp.adapters.infer import complete, invariants
from interp.encoding import encode
from interp.testing import hf_last_states
from interp.testing.builders.gemma_omni import build_gemma4
from interp.testing.builders.zoo_configs import set_unbuilt_defaults, set_unset_ids
from interp.testing.tolerance import assert_close
from interp.testing.zoo_parity import check, text_check
from tools.digests import media_samples
from tools.zoo import shrink

KINDS = ("image", "audio", "video")
# (type, towers left None, the modalities its entry keeps)
OPTIONAL = [
    ("gemma4", ("audio_config",), ("image", "video")),
    ("gemma4", ("vision_config",), ("audio",)),
    ("gemma4_unified", ("audio_config",), ("image", "video")),
    ("gemma4_unified", ("vision_config",), ("audio",)),
    ("nemotron_h_omni", ("audio_config",), ("image", "video")),
]
ALWAYS_BUILT = [
    (t, tower)
    for t in ("gemma3n", "qwen2_5_omni_thinker", "qwen3_omni_moe_thinker")
    for tower in ("vision_config", "audio_config")
]


def config_without(model_type: str, without: tuple[str, ...]) -> Any:
    """``model_type``'s config with its towers (Gemma 4's default has none: the tiny builder's;
    the zoo's fixes of a default elsewhere), then ``without`` left None as a checkpoint
    publishes them."""
    if model_type == "gemma4":
        return build_gemma4(without=without)[0].config
    config = AutoConfig.for_model(model_type)
    set_unset_ids(config)
    set_unbuilt_defaults(config)
    for tower in without:
        setattr(config, tower, None)
    return config


@pytest.mark.parametrize(
    ("model_type", "without", "kept"),
    OPTIONAL,
    ids=[f"{t}-no_{w[0].removesuffix('_config')}" for t, w, _ in OPTIONAL],
)
def test_a_config_without_a_tower_takes_the_others(
    model_type: str, without: tuple[str, ...], kept: tuple[str, ...]
) -> None:
    config = config_without(model_type, without)
    assert all(getattr(config, tower) is None for tower in without)  # transformers keeps it out
    adapter = interp.adapter_for(config)
    assert adapter.modalities == kept
    with torch.device("meta"):
        model = AutoModelForMultimodalLM.from_config(shrink(config))
    adapter = complete(adapter, model)
    assert adapter.modalities == kept
    assert all(c.ok for c in invariants(adapter, model))
    for kind in KINDS:
        if kind in kept:
            assert adapter.features_path(kind)  # type: ignore[arg-type]
            continue
        with pytest.raises(interp.ModalityError, match=f"not {kind}"):
            adapter.features_path(kind)  # type: ignore[arg-type]
        with pytest.raises(interp.ModalityError, match=f"not {kind}"):
            adapter.token_id(model, kind)  # type: ignore[arg-type]


@pytest.mark.parametrize("model_type", ["gemma4", "gemma4_unified"])
def test_a_config_without_any_tower_is_refused_as_text_only(model_type: str) -> None:
    config = config_without(model_type, ("vision_config", "audio_config"))
    with pytest.raises(interp.UnsupportedArchitectureError, match="text-only checkpoint"):
        interp.adapter_for(config)


@pytest.mark.parametrize(("model_type", "tower"), ALWAYS_BUILT)
def test_a_tower_transformers_always_builds_keeps_its_modality(model_type: str, tower: str) -> None:
    """These configs fill a tower set None with its default config (their models cannot be built
    without it), so no checkpoint of these types lacks it: every modality stays."""
    config = AutoConfig.for_model(model_type, **{tower: None})
    assert getattr(config, tower) is not None
    whole = interp.adapter_for(AutoConfig.for_model(model_type))
    assert interp.adapter_for(config).modalities == whole.modalities
    assert {"image", "audio"} <= set(whole.modalities)


@pytest.mark.parametrize(
    "without", [("audio_config",), ("vision_config",)], ids=["31B", "no_vision"]
)
def test_a_tiny_gemma4_without_a_tower_reads_at_hf_parity(without: tuple[str, ...]) -> None:
    """A tiny Gemma 4 built without the tower (its stock processor unchanged): the kept
    modalities' rows (and text alone) read the residual stream at parity with HF
    ``output_hidden_states``; rows with the dropped modality are refused, naming it, before any
    forward."""
    model, processor = build_gemma4(without=without)
    vlm = interp.load(model, processor)
    kept = vlm.adapter.modalities
    dropped = "audio" if "audio" not in kept else "image"
    rows = [r for r in media_samples(kept) if getattr(r, dropped) is None]
    assert {k for k in KINDS if any(getattr(r, k) is not None for r in rows)} == set(kept)
    states = interp.residual_stream(vlm, rows, progress_bar=False)
    assert_close(states[:, : vlm.n_layers], hf_last_states(vlm, encode(vlm, rows, "full")))
    refused = [r for r in media_samples(KINDS) if getattr(r, dropped) is not None]
    calls: list[int] = []
    hook = model.register_forward_hook(lambda *_: calls.append(1))
    try:
        with pytest.raises(interp.ModalityError, match=f"not {dropped} .*_config is None"):
            interp.residual_stream(vlm, refused, progress_bar=False)
    finally:
        hook.remove()
    assert not calls


def test_a_tiny_gemma4_unified_without_a_tower_runs_at_hf_parity() -> None:
    """Gemma 4 Unified (an inferred entry) without audio passes the zoo's eight parity checks on
    images; without vision, text rows read and score at parity (its audio embedder takes raw
    waveform frames, which no tiny processor here makes)."""
    assert check("gemma4_unified", without=("audio_config",)) == ("llava", "")
    assert text_check("gemma4_unified", without=("vision_config",)) == ""
