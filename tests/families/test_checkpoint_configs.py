"""Published checkpoint configurations, one or more per supported family, loaded on the meta device.

Each fixture under ``tests/fixtures/configs`` is a checkpoint's ``config.json`` as published
(``SOURCES.md`` says where each came from). ``interp.load(folder, dispatch=False)`` on a folder
holding only that file builds the full-size model skeleton on the meta device, reads no weights,
and must report the checkpoint's real facts. The expected values are read from the JSON here,
independently of transformers and of the library.
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch

import interp
from interp.adapters import get_path
from interp.errors import ModalityError, ModelNotFoundError, ProcessorMissingError
from interp.model import config_only

CONFIGS = Path(__file__).resolve().parents[1] / "fixtures" / "configs"
FIXTURES = sorted(CONFIGS.glob("*.json"))

# Decoder facts a published file leaves to its language model's own configuration: LLaVA-1.5,
# LLaVA-NeXT (vicuna) and ViP-LLaVA give only the text model's name. lmsys/vicuna-7b-v1.5's
# config.json has 32 layers of width 4096 (the Llama-2-7B shape).
BASE_MODEL_FACTS = {"lmsys/vicuna-7b-v1.5": {"num_hidden_layers": 32, "hidden_size": 4096}}

# Decoder facts a published file leaves to transformers' defaults, per fixture, with the public
# statement of the real size: Qwen2-Audio-7B-Instruct's text_config names no size (Qwen2Config
# builds 32 layers of width 4096); fine-tunes re-saving its configuration state hidden_size 4096
# (AGI-Eval/Auto-ATT, chenhaodev/qwen2-audio-7b-aishell1) and the model card calls it a 7B model.
# HuggingFaceM4/idefics2-8b-base's text_config (model_type mistral) names no size either: MistralConfig
# builds 32 layers of width 4096, Mistral-7B-v0.1's shape, the decoder the model card names.
OMITTED_FACTS = {
    "Qwen--Qwen2-Audio-7B-Instruct": {"num_hidden_layers": 32, "hidden_size": 4096},
    "HuggingFaceM4--idefics2-8b-base": {"num_hidden_layers": 32, "hidden_size": 4096},
}

# Placeholder-token ids a published file leaves to transformers' defaults, per fixture. Kimi-K2.5
# (and Kimi-K2.6, the same layout)
# names its image placeholder ``media_placeholder_token_id`` (163605, the id Kimi_K25Config's
# ``image_token_id`` defaults to; the test checks the two agree) and its video placeholder only as
# a string (``video_placeholder``), for which Kimi_K25Config's ``video_token_id`` default (163840)
# stands. adept/fuyu-8b's file names no image placeholder: FuyuConfig's ``image_token_id`` default
# (71011, the ``|SPEAKER|`` token Fuyu's processor writes for each image patch) stands.
DEFAULT_TOKENS = {
    "moonshotai--Kimi-K2.5": {"image": 163605, "video": 163840},
    "moonshotai--Kimi-K2.6": {"image": 163605, "video": 163840},
    "adept--fuyu-8b": {"image": 71011},
}

# Types that take images with no vision tower, hence no ``vision_config``: Fuyu projects the raw
# patches (``patch_size`` / ``image_size`` at the top level) straight into the decoder.
TOWERLESS_IMAGE = {"fuyu"}

# Module paths in the transformers 5 layout, per model_type: decoder layers, final norm,
# unembedding, and the feature module of each modality the family's checkpoints take (a checkpoint
# without one of the towers, as gemma-4-31B-it without audio, takes fewer).
LLAVA_LIKE = ("model.language_model.layers", "model.language_model.norm", "lm_head")
PROJECTOR = "model.multi_modal_projector"
MODULE_PATHS: dict[str, tuple[str, str, str, dict[str, str]]] = {
    "llava": (*LLAVA_LIKE, {"image": PROJECTOR}),
    "llava_next": (*LLAVA_LIKE, {"image": PROJECTOR}),
    "vipllava": (*LLAVA_LIKE, {"image": PROJECTOR}),
    "aya_vision": (*LLAVA_LIKE, {"image": PROJECTOR}),
    "gemma3": (*LLAVA_LIKE, {"image": PROJECTOR}),
    "paligemma": (*LLAVA_LIKE, {"image": PROJECTOR}),
    "mllama": (*LLAVA_LIKE, {"image": PROJECTOR}),
    "got_ocr2": (*LLAVA_LIKE, {"image": PROJECTOR}),
    "qwen2_vl": (*LLAVA_LIKE, {"image": "model.visual", "video": "model.visual"}),
    "qwen2_5_vl": (*LLAVA_LIKE, {"image": "model.visual", "video": "model.visual"}),
    "qwen2_audio": (*LLAVA_LIKE, {"audio": PROJECTOR}),
    "voxtral": (*LLAVA_LIKE, {"audio": PROJECTOR}),
    "instructblip": (
        "language_model.model.layers",
        "language_model.model.norm",
        "language_model.lm_head",
        {"image": "language_projection"},
    ),
    "gemma4": (
        *LLAVA_LIKE,
        {
            "image": "model.embed_vision",
            "audio": "model.embed_audio",
            "video": "model.embed_vision",
        },
    ),
    "mistral3": (*LLAVA_LIKE, {"image": PROJECTOR}),
    "lfm2_vl": (
        "model.language_model.layers",
        "model.language_model.embedding_norm",
        "lm_head",
        {"image": PROJECTOR},
    ),
    "qwen3_5": (*LLAVA_LIKE, {"image": "model.visual", "video": "model.visual"}),
    "exaone4_5": (*LLAVA_LIKE, {"image": "model.visual", "video": "model.visual"}),
    "kimi_k25": (*LLAVA_LIKE, {"image": "model.mm_projector", "video": "model.mm_projector"}),
    "glm4v": (*LLAVA_LIKE, {"image": "model.visual", "video": "model.visual"}),
    "qwen3_vl": (*LLAVA_LIKE, {"image": "model.visual", "video": "model.visual"}),
    "minicpmv4_6": (*LLAVA_LIKE, {"image": "model.merger", "video": "model.merger"}),
    "qwen2_5_omni": (
        *LLAVA_LIKE,
        {"image": "model.visual", "audio": "model.audio_tower", "video": "model.visual"},
    ),
    "qwen3_asr": (*LLAVA_LIKE, {"audio": PROJECTOR}),
    "smolvlm": (
        "model.text_model.layers",
        "model.text_model.norm",
        "lm_head",
        {"image": "model.connector"},
    ),
    "idefics2": (
        "model.text_model.layers",
        "model.text_model.norm",
        "lm_head",
        {"image": "model.connector"},
    ),
    "fuyu": (
        "model.language_model.layers",
        "model.language_model.final_layernorm",
        "lm_head",
        {"image": "model.vision_embed_tokens"},
    ),
    "video_llava": (*LLAVA_LIKE, {"image": PROJECTOR, "video": PROJECTOR}),
    "aria": (*LLAVA_LIKE, {"image": PROJECTOR}),
    "blip-2": (
        "language_model.model.decoder.layers",
        "language_model.model.decoder.final_layer_norm",
        "language_model.lm_head",
        {"image": "language_projection"},
    ),
}

# Types a library entry of another name serves (docs/families.md: smolvlm -> idefics3, blip-2 -> blip2).
ENTRY_OF = {"smolvlm": "idefics3", "blip-2": "blip2"}

# Published files transformers 5 reads differently from what they state, per fixture: the test
# expects the file's own facts and marks these strict xfail, so a fix shows up as an XPASS.
# Qwen/Qwen3-ASR-0.6B publishes the qwen-asr package's layout (``thinker_config`` holding
# ``text_config`` / ``audio_config`` of types ``qwen3_asr_text`` / ``qwen3_asr_audio_encoder``);
# transformers 5.25's Qwen3ASRConfig reads only top-level ``text_config`` / ``audio_config``, so
# transformers drops the thinker's keys without a word and the skeleton takes the class
# defaults: 28 layers of width 2048 (Qwen3-ASR-1.7B's decoder) instead of the file's 28 x 1024;
# interp.load names it (ConfigMisreadWarning, test_a_misread_file_is_named_when_it_loads).
MISREAD = {
    "Qwen--Qwen3-ASR-0.6B": "transformers 5.25's Qwen3ASRConfig ignores the published "
    "thinker_config: the 0.6B file (width 1024) builds the default width-2048 decoder",
}

# Published files whose ``model_type`` names another family than their ``architectures``: the
# Auto classes build the family the type names, so the decoder's facts are right (no
# ConfigMisreadWarning) but the other family's modality is dropped. Strict xfail, as MISREAD.
# llava-hf/LLaVA-NeXT-Video-7B-hf at revision 6ae32f6 saved ``model_type: llava_next`` with
# ``architectures: [LlavaNextVideoForConditionalGeneration]`` and a ``video_token_index``: it loads
# as LLaVA-NeXT (images only); the hub's PR #4 later renamed the type to ``llava_next_video``.
MISTYPED = {
    "llava-hf--LLaVA-NeXT-Video-7B-hf": "model_type llava_next (a LlavaNextVideo file saved before "
    "hub PR #4): transformers builds LLaVA-NeXT, which takes no video",
}


def _token(raw: dict[str, Any], *keys: str) -> int | None:
    for key in keys:
        if raw.get(key) is not None:
            return int(raw[key])
    return None


def thinker(raw: dict[str, Any]) -> dict[str, Any]:
    """The part of a published file that describes the model reading the media: an Omni or ASR
    file (Qwen2.5-Omni, Qwen3-ASR) nests it in ``thinker_config`` beside its talker."""
    return raw.get("thinker_config") or raw


def expected_facts(name: str, raw: dict[str, Any]) -> dict[str, Any]:
    """Layer count, width, placeholder-token ids and modalities as the published JSON states
    them. Qwen2-VL, Qwen2.5-VL and the first GOT-OCR 2.0 files keep the decoder's keys at the top level (transformers 5
    moves them into ``text_config``); the others nest them in ``text_config``. A checkpoint takes
    images when its file has a vision tower (or is of a ``TOWERLESS_IMAGE`` type, as Fuyu), audio
    when it has an audio tower, and video when it also names a video placeholder token."""
    raw = thinker(raw)
    text = raw.get("text_config") or {}
    base = BASE_MODEL_FACTS.get(text.get("_name_or_path", ""), {})

    def fact(key: str) -> int:
        for source in (text, raw, base, OMITTED_FACTS.get(name, {})):
            if key in source:
                return int(source[key])
        raise KeyError(f"{key} is neither in {name} nor in BASE_MODEL_FACTS / OMITTED_FACTS")

    vision = raw.get("vision_config") is not None or raw["model_type"] in TOWERLESS_IMAGE
    audio = raw.get("audio_config") is not None
    tokens = {
        "image": _token(raw, "image_token_index", "image_token_id"),
        "audio": _token(raw, "audio_token_index", "audio_token_id"),
        "video": _token(raw, "video_token_index", "video_token_id"),
    }
    for modality, token in DEFAULT_TOKENS.get(name, {}).items():
        if tokens[modality] is None:
            tokens[modality] = token
    modalities = tuple(
        m
        for m, present in (
            ("image", vision),
            ("audio", audio),
            ("video", vision and tokens["video"] is not None),
        )
        if present
    )
    return {
        "n_layers": fact("num_hidden_layers"),
        "d_model": fact("hidden_size"),
        "modalities": modalities,
        "tokens": {m: tokens[m] for m in modalities},
    }


@pytest.fixture(scope="module", params=FIXTURES, ids=[p.stem for p in FIXTURES])
def loaded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple:
    folder = tmp_path_factory.mktemp(request.param.stem)
    shutil.copy(request.param, folder / "config.json")
    raw = json.loads(request.param.read_text())
    return request.param.stem, raw, folder, interp.load(folder, dispatch=False)


def test_the_fixtures_cover_the_families() -> None:
    types = {json.loads(p.read_text())["model_type"] for p in FIXTURES}
    assert types == set(MODULE_PATHS)
    assert len(FIXTURES) >= len(types)


def test_every_fixture_is_recorded_in_sources() -> None:
    sources = (CONFIGS / "SOURCES.md").read_text()
    missing = [p.name for p in FIXTURES if f"`{p.name}`" not in sources]
    assert not missing, f"fixtures with no entry in SOURCES.md: {missing}"


def _known_misread(request: pytest.FixtureRequest, name: str) -> None:
    reason = MISREAD.get(name) or MISTYPED.get(name)
    if reason:
        request.applymarker(pytest.mark.xfail(strict=True, reason=reason))


def test_facts_match_the_published_config(loaded: tuple, request: pytest.FixtureRequest) -> None:
    name, raw, _, vlm = loaded
    _known_misread(request, name)
    want = expected_facts(name, raw)
    assert vlm.n_layers == want["n_layers"]
    assert vlm.d_model == want["d_model"]
    # an Omni file loads its thinker (the talker speaks, it reads no media)
    entry = vlm.adapter.name.split(" ")[0]
    assert entry in {ENTRY_OF.get(raw["model_type"], raw["model_type"]), thinker(raw)["model_type"]}
    assert tuple(vlm.adapter.modalities) == want["modalities"]
    for modality, token in want["tokens"].items():
        assert vlm.adapter.token_id(vlm.hf, modality) == token, modality
    if "image" in want["modalities"]:
        assert vlm.image_token_id == want["tokens"]["image"]
    if "media_placeholder_token_id" in raw:  # Kimi-K2.5's own name for its image placeholder
        assert vlm.image_token_id == raw["media_placeholder_token_id"]
    # a llava file with a Pixtral vision tower (Pixtral 12B / Large) gets the Pixtral variant,
    # whose variable image grid is not llava's fixed layout
    pixtral = (
        raw["model_type"] == "llava"
        and (raw.get("vision_config") or {}).get("model_type") == "pixtral"
    )
    assert ("pixtral tower" in vlm.adapter.name) == pixtral
    if pixtral:
        assert not vlm.adapter.layout_verified


def test_module_paths_on_the_meta_device(loaded: tuple, request: pytest.FixtureRequest) -> None:
    name, raw, _, vlm = loaded
    _known_misread(request, name)
    want = expected_facts(name, raw)
    layers, norm, head, features = MODULE_PATHS[raw["model_type"]]
    assert (vlm._layers_path, vlm._norm_path, vlm._head_path) == (layers, norm, head)
    assert set(want["modalities"]) <= set(features)
    assert len(get_path(vlm.hf, layers)) == want["n_layers"]
    assert get_path(vlm.hf, norm).weight.shape[-1] == want["d_model"]
    assert get_path(vlm.hf, head) is vlm.hf.get_output_embeddings()
    # the envoys resolve to the same modules
    assert vlm.layers._module is get_path(vlm.hf, layers)
    for modality in want["modalities"]:
        path = features[modality]
        assert vlm.adapter.features_path(modality) == path
        assert vlm.features(modality)._module is get_path(vlm.hf, path)


def test_no_weight_is_read(loaded: tuple) -> None:
    *_, vlm = loaded
    params = list(vlm.hf.parameters())
    assert params and all(p.device.type == "meta" for p in params)
    assert not vlm.dispatched
    assert vlm.processor is None and vlm.tokenizer is None


def test_running_a_bare_config_is_refused_clearly(loaded: tuple) -> None:
    _, _, folder, vlm = loaded
    with pytest.raises(ProcessorMissingError, match="configuration only"):
        interp.encode(vlm, [interp.Sample(question="What is this?")])
    with pytest.raises(ModelNotFoundError, match="no weights"):
        vlm.nn.dispatch()
    with pytest.raises(ModelNotFoundError, match="dispatch=False"):
        interp.load(folder)


def test_dtype_reaches_the_meta_skeleton(tmp_path: Path) -> None:
    shutil.copy(CONFIGS / "llava-hf--llava-1.5-7b-hf.json", tmp_path / "config.json")
    vlm = interp.load(tmp_path, dispatch=False, dtype=torch.bfloat16)
    assert {p.dtype for p in vlm.hf.parameters()} == {torch.bfloat16}


def test_a_folder_with_a_tokenizer_is_not_config_only(tmp_path: Path) -> None:
    shutil.copy(CONFIGS / "llava-hf--llava-1.5-7b-hf.json", tmp_path / "config.json")
    assert config_only(tmp_path)
    (tmp_path / "tokenizer_config.json").write_text("{}")
    assert not config_only(tmp_path)


def test_a_tower_the_published_config_leaves_out_drops_its_modality(tmp_path: Path) -> None:
    """google/gemma-4-31B-it publishes ``"audio_config": null``: transformers builds no audio
    tower (``embed_audio`` is None), so the checkpoint takes images and video (its vision tower
    embeds both), not audio; asking for the audio features or its token id is refused naming
    the modality, and the command line reads the same modalities from the config."""
    from interp.cli import model_modalities

    fixture = CONFIGS / "google--gemma-4-31B-it.json"
    raw = json.loads(fixture.read_text())
    assert raw["audio_config"] is None and raw["vision_config"] is not None
    assert raw["audio_token_id"] and raw["video_token_id"]  # the ids stay in the file
    shutil.copy(fixture, tmp_path / "config.json")
    vlm = interp.load(tmp_path, dispatch=False)
    assert vlm.hf.model.embed_audio is None and vlm.hf.model.audio_tower is None
    assert vlm.adapter.modalities == ("image", "video")
    assert vlm.adapter.dropped == (("audio", "audio_config"),)
    assert vlm.adapter.audio_features is None
    assert vlm.features("video")._module is get_path(vlm.hf, "model.embed_vision")
    with pytest.raises(ModalityError, match=r"not audio \(.*audio_config is None\)"):
        vlm.features("audio")
    with pytest.raises(ModalityError, match="not audio"):
        vlm.adapter.token_id(vlm.hf, "audio")
    assert model_modalities(str(tmp_path)) == ("image", "video")


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_a_misread_file_is_named_when_it_loads(path: Path, tmp_path: Path) -> None:
    """A file transformers reads to another decoder size than it states warns at load
    (:class:`interp.ConfigMisreadWarning`, naming the key and both values); the others do not."""
    shutil.copy(path, tmp_path / "config.json")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        vlm = interp.load(tmp_path, dispatch=False)
    misread = [w for w in seen if issubclass(w.category, interp.ConfigMisreadWarning)]
    if path.stem not in MISREAD:
        assert not misread
        return
    raw = thinker(json.loads(path.read_text()))["text_config"]
    assert str(misread[0].message).count("hidden_size") == 2
    assert f"hidden_size={raw['hidden_size']}" in str(misread[0].message)
    assert f"hidden_size={vlm.d_model}" in str(misread[0].message)
