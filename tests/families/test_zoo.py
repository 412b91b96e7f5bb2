"""The zoo sweep: every type of transformers' multimodal mapping (read at test time) is supported or
refused with its reason, ``docs/families.md`` is the sweep's table, and layout-dependent features
run only where the layout is verified.

References: transformers' own mapping and configs, module trees built on the meta device, the
config attributes by hand (token ids, sub-configs), and a plain HF forward for the inferred entry.
"""

from __future__ import annotations

import re
import time

import pytest
import torch
from transformers import AutoConfig, LlavaConfig, PixtralVisionConfig, VoxtralConfig

import interp
import interp.layout_check
from interp.adapters import ADAPTERS
from interp.adapters.infer import invariants, pattern_of
from interp.testing import build_tiny, shared_tiny_vlm
from interp.testing.builders.zoo_configs import set_unbuilt_defaults, set_unset_ids
from interp.testing.samples import make_samples
from interp.testing.tolerance import assert_close
from tools.pins import check_made_under
from tools.zoo import DOC, TESTED, Row, classify, mapping_types, render

TYPES = mapping_types()
ROWS: dict[str, Row] = {}
WALL: list[float] = []


def row_of(model_type: str) -> Row:
    if model_type not in ROWS:
        start = time.perf_counter()
        ROWS[model_type] = classify(model_type)
        WALL.append(time.perf_counter() - start)
    return ROWS[model_type]


@pytest.mark.parametrize("model_type", TYPES)
def test_every_type_is_supported_or_refused_with_its_reason(model_type):
    row = row_of(model_type)
    config = AutoConfig.for_model(model_type)
    if not row.supported:
        assert row.reason
        if not row.adapter:  # refused by the adapter look-up: the same refusal from interp
            with pytest.raises(interp.UnsupportedArchitectureError) as err:
                interp.adapter_for(config)
            assert row.reason in str(err.value) and "Nearest supported pattern" in str(err.value)
            assert "--adapter module:name" in str(err.value)
            assert "?" not in str(err.value).split(" (config.model_type")[0]
        return
    assert not row.reason
    from interp.thinker import inner_config

    inner = inner_config(config).model_type
    if "inferred" in row.adapter:  # its pattern is the config's; layout features are refused
        filled = set_unset_ids(config)  # ids left None by the default, as checkpoints set them
        fixed = set_unbuilt_defaults(config)
        pattern, _ = pattern_of(config)
        note = f"; {' / '.join(filled)} set as its checkpoints set it (None by default)"
        unbuilt = (
            f"; {' / '.join(fixed)} set as a checkpoint sets it (unusable in the default config)"
        )
        assert row.adapter == (
            f"{model_type} (inferred: {pattern})"
            + (note if filled else "")
            + (unbuilt if fixed else "")
        )
        assert row.layout == "no image" or row.layout.startswith(CHECKED_AT_LOAD)
        assert_zoo_parity(row)
        kinds = [
            k
            for k in ("image", "audio", "video")
            if getattr(config, f"{k}_token_id", None) is not None
        ]
        assert row.modalities == ", ".join(["audio"] if pattern == "audio-lm" else kinds)
    elif inner in TESTED:  # a family the tiny-model tests run at HF parity
        assert row.parity == "tested"
        if ADAPTERS[inner].layout_verified:
            assert row.layout in ("verified", "none (no spatial layout)", "no image")
        else:  # at parity, its layout left to the check at load (Fuyu, Ovis2)
            assert row.layout.startswith(CHECKED_AT_LOAD)
    else:  # an entry with one fix: structure verified, its layout checked at load
        assert ADAPTERS[inner].name in row.adapter and not ADAPTERS[inner].layout_verified
        assert row.layout.startswith(CHECKED_AT_LOAD)
        assert_zoo_parity(row)


# the layout of a type no layout test checks: the verdict of the check at load on its tiny model
CHECKED_AT_LOAD = (
    "verified at load (",
    "none at load (",
    "refused at load (",
    "refused (not checked: ",
)


def assert_zoo_parity(row: Row) -> None:
    """A type outside the tiny-model tests is forward tested by the zoo's checks, or says which
    step failed; never plain "tested"."""
    if row.parity.startswith("forward tested"):
        assert row.parity in (
            f"forward tested ({p} processor)" for p in ("llava", "qwen3_vl", "qwen2_audio")
        )
    else:
        why = row.parity.removeprefix("text tested; ")
        assert why.startswith("not tested: ") and len(why) > len("not tested: ")


def test_the_sweep_covers_the_mapping_and_supports_most_of_it():
    rows = [row_of(t) for t in TYPES]
    from transformers.models.auto import modeling_auto

    assert [r.model_type for r in rows] == list(modeling_auto.MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES)
    supported = sum(r.supported for r in rows)
    assert supported >= 60, supported
    # every family whose parity the tiny-model tests check is supported, with a verified layout
    by_type = {r.model_type: r for r in rows}
    for t in TESTED:
        if t in by_type:
            assert by_type[t].supported and by_type[t].parity == "tested", t
    # zero types where a layout-dependent feature runs without a verified layout: a layout test
    # (the tiny-model families) or the check at load
    for r in rows:
        if r.supported and r.layout == "verified":
            assert r.parity == "tested", r.model_type
    images = [r for r in rows if r.supported and "image" in r.modalities.split(", ")]
    verified = [r for r in images if r.layout.startswith("verified")]
    assert len(verified) >= 50, len(verified)
    assert sum(WALL) < 240, f"the sweep took {sum(WALL):.0f} s"


def test_the_real_tokenizer_column_names_the_conformance_suites_checkpoints():
    """Every family of the conformance suite is filed under a supported type of the mapping, and
    the column says exact or stand-in as the suite's entry does (hand-picked rows)."""
    from tools.real_models import REAL_FAMILIES, real_model_type

    by_type = {r.model_type: r for r in (row_of(t) for t in TYPES)}
    for name in REAL_FAMILIES:
        row = by_type[real_model_type(name)]
        assert row.supported and REAL_FAMILIES[name].checkpoint.split(" (")[0] in row.real_tokenizer
    assert "mistral-community/pixtral-12b (exact)" in by_type["llava"].real_tokenizer
    assert by_type["mistral3"].real_tokenizer.endswith("(stand-in)")
    assert by_type["gemma3"].real_tokenizer == "google/gemma-3-4b-it (stand-in)"
    assert by_type["aria"].real_tokenizer == ""


def test_docs_families_is_the_sweeps_table():
    made_under = re.search(r"transformers ([0-9][^ ']*)'s", DOC.read_text()).group(1)
    check_made_under(made_under, "docs/families.md", "python -m tools.zoo")
    rows = [row_of(t) for t in TYPES]
    assert DOC.read_text() == render(rows), "run: python -m tools.zoo"


def test_a_placeholder_id_left_unset_by_the_default_config_is_named_and_a_set_one_loads():
    """Voxtral's default config leaves ``audio_token_id`` None (its checkpoints set it): the
    refusal names the field and says to set it; with the field set the audio-LM pattern serves
    it, and the sweep's stand-in fills only fields declared and unset."""
    with pytest.raises(interp.UnsupportedArchitectureError, match="audio_token_id unset") as err:
        interp.adapter_for(VoxtralConfig())
    assert "set it to the placeholder token's id" in str(err.value)
    adapter = interp.adapter_for(VoxtralConfig(audio_token_id=24))
    assert adapter.inferred == "audio-lm" and adapter.modalities == ("audio",)
    config = VoxtralConfig()
    assert set_unset_ids(config) == ["audio_token_id"] and config.audio_token_id is not None
    llava = LlavaConfig()
    assert set_unset_ids(llava) == [] and llava.image_token_id == 32000  # set already: kept


@pytest.mark.parametrize(
    "model_type", ["aya_vision", "hunyuan_vl", "deepseek_ocr2", "cohere_compass"]
)
def test_a_default_config_the_model_does_not_build_from_gets_its_unusable_fields_set(model_type):
    """transformers' own default config of these types does not build its model (a tower width
    its heads do not divide, a None ``head_dim`` / ``mlp_layer_types``, no rotary parameters for
    a layer type); with the fields a checkpoint sets, it builds and the row names them."""
    from transformers import AutoModelForMultimodalLM

    from tools.zoo import shrink

    config = AutoConfig.for_model(model_type)
    with pytest.raises((ValueError, TypeError, KeyError)), torch.device("meta"):
        AutoModelForMultimodalLM.from_config(shrink(config))
    config = AutoConfig.for_model(model_type)
    fixed = set_unbuilt_defaults(config)
    with torch.device("meta"):
        AutoModelForMultimodalLM.from_config(shrink(config))
    assert (
        fixed
        and f"{' / '.join(fixed)} set as a checkpoint sets it (unusable"
        in row_of(model_type).adapter
    )


def test_a_default_config_without_towers_gets_the_ones_its_documented_example_builds():
    """Gemma 4 Unified's default config has image and audio token ids but no towers (its model
    builds none); with the default tower configs, as its own docstring example builds it, the
    feature sites are its vision and audio embedders."""
    from interp.adapters.infer import complete

    config = AutoConfig.for_model("gemma4_unified")
    assert config.vision_config is None and config.audio_config is None
    assert set_unbuilt_defaults(config) == ["vision_config", "audio_config"]
    row = row_of("gemma4_unified")
    assert row.supported and "vision_config / audio_config set as a checkpoint" in row.adapter
    model = _meta_of(config)
    adapter = complete(interp.adapter_for(config), model)
    assert (adapter.image_features, adapter.audio_features) == (
        "model.embed_vision",
        "model.embed_audio",
    )


def test_a_llava_config_with_a_pixtral_tower_is_detected_not_assumed():
    plain = interp.adapter_for(LlavaConfig())
    assert plain is ADAPTERS["llava"] and plain.layout_verified
    pixtral = interp.adapter_for(LlavaConfig(vision_config=PixtralVisionConfig()))
    assert pixtral.name == "llava (pixtral tower)" and not pixtral.layout_verified
    assert pixtral.token_layout is None
    with pytest.raises(interp.LayoutNotMappedError, match="pixtral"):
        pixtral.require_layout("distort")


def test_layout_features_are_refused_before_compute_where_the_layout_is_not_verified(
    monkeypatch,
):
    base = shared_tiny_vlm("llava")
    model, processor = build_tiny("llava")  # the same weights (seed 0), its own module
    monkeypatch.setattr(interp.layout_check, "CANDIDATES", ())  # the check at load finds none
    unverified = ADAPTERS["llava"].replace(
        name="my_llava", layout_verified=False, token_layout=None
    )
    vlm = interp.load(model, processor, adapter=unverified)
    samples = make_samples(2)
    calls: list[int] = []
    hook = vlm.hf.register_forward_hook(lambda *a: calls.append(1))
    try:
        with pytest.raises(interp.LayoutNotMappedError, match="my_llava.*model types llava"):
            interp.residual_stream(vlm, samples, "distort:500", progress_bar=False)
        with pytest.raises(interp.LayoutNotMappedError, match="my_llava"):
            interp.token_regions(vlm, samples[0])
    finally:
        hook.remove()
    assert not calls  # nothing ran
    # reads still run, and equal the verified entry's
    states = interp.residual_stream(vlm, samples, progress_bar=False)
    torch.testing.assert_close(states, interp.residual_stream(base, samples, progress_bar=False))


def test_load_time_invariants_name_the_field_to_set():
    vlm = shared_tiny_vlm("llava")
    assert all(c.ok for c in invariants(vlm.adapter, vlm.hf))
    wrong = ADAPTERS["llava"].replace(name="wrong", norm_attr="rotary_emb")
    checks = {c.name: c for c in invariants(wrong, vlm.hf)}
    assert not checks["final norm feeds the head"].ok
    assert checks["final norm feeds the head"].field == "norm_attr"
    with pytest.raises(interp.AdapterCheckError, match="set image_features"):
        interp.load(
            vlm.hf, vlm.processor, adapter=ADAPTERS["llava"].replace(image_features="model.nope")
        )
    with pytest.raises(interp.AdapterCheckError, match="set decoder_path"):
        interp.load(
            vlm.hf,
            vlm.processor,
            adapter=ADAPTERS["llava"].replace(decoder_path="model.vision_tower"),
        )


def _meta_of(config) -> torch.nn.Module:
    from transformers import AutoModelForMultimodalLM

    from tools.zoo import shrink

    with torch.device("meta"):
        return AutoModelForMultimodalLM.from_config(shrink(config))


def _meta(model_type: str) -> torch.nn.Module:
    return _meta_of(AutoConfig.for_model(model_type))


def test_a_tower_is_the_feature_site_only_where_it_projects_into_the_decoder():
    """With no projector module, a vision tower whose last linear (or convolution) layer gives
    the decoder's width is the feature site (dots3: its merger is inside the tower; the zoo's
    check then counts one vector per placeholder in a plain HF forward); Ovis2's tower ends in
    its visual-vocabulary head, whose features a table lookup outside it makes: not taken by the
    inference rules (its written entry names the table)."""
    from interp.adapters.infer import complete, infer_adapter

    model = _meta("dots3_note")
    adapter = complete(interp.adapter_for(model.config), model)
    assert adapter.image_features == "model.vision_tower"
    last = [m for m in model.model.vision_tower.modules() if isinstance(m, torch.nn.Linear)][-1]
    assert last.out_features == model.config.get_text_config().hidden_size
    assert row_of("dots3_note").parity == "forward tested (qwen3_vl processor)"
    model = _meta("ovis2")
    head = [m for m in model.model.vision_tower.modules() if isinstance(m, torch.nn.Linear)][-1]
    assert head.out_features != model.config.get_text_config().hidden_size
    inferred, _ = infer_adapter(model.config)
    with pytest.raises(interp.AdapterCheckError, match="no image-feature module found"):
        complete(inferred, model)
    written = complete(interp.adapter_for(model.config), model)
    assert written.image_features == "model.visual_embeddings_table" and not written.inferred


def test_a_head_the_model_does_not_offer_is_named_by_its_path():
    """Nemotron-H Omni keeps its causal LM whole (``language_model``): ``get_output_embeddings()``
    gives None, so its entry names ``head_path``; without it the load-time check names the field."""
    from transformers import AutoModelForMultimodalLM

    from interp.adapters.infer import invariants
    from tools.zoo import shrink

    config = AutoConfig.for_model("nemotron_h_omni")
    set_unset_ids(config)
    with torch.device("meta"):
        model = AutoModelForMultimodalLM.from_config(shrink(config))
    assert model.get_output_embeddings() is None
    entry = ADAPTERS["nemotron_h_omni"]
    assert all(c.ok for c in invariants(entry, model))
    assert entry.lm_head(model) is model.language_model.lm_head
    checks = {c.name: c for c in invariants(entry.replace(head_path=None), model)}
    assert not checks["final norm feeds the head"].ok
    assert checks["final norm feeds the head"].field == "head_path"


@pytest.mark.parametrize(
    ("model_type", "reason"),
    [
        ("chameleon", "VQ codes of the text vocabulary (vq_config)"),
        ("kyutai_speech_to_text", "codec frames added to the text embeddings (codec_config)"),
        ("pi0", "a vision-language-action model (a VLM in vlm_config"),
        ("evolla", "protein sequences"),
        ("idefics", "a tower (vision_config) but no placeholder-token id"),
        ("mistral4", "no image or audio tower and no placeholder-token id"),
    ],
)
def test_a_type_outside_the_patterns_is_refused_with_what_its_config_shows(model_type, reason):
    """Types with no placeholder-token id are refused with what their config shows instead (an
    image tokenizer, an audio codec, an action model, protein inputs, a tower fused otherwise)."""
    config = AutoConfig.for_model(model_type)
    assert getattr(config, "image_token_id", None) is None
    with pytest.raises(interp.UnsupportedArchitectureError, match=re.escape(reason)):
        interp.adapter_for(config)


def test_placeholder_ids_kept_in_the_tower_configs_are_named():
    """Phi-4-multimodal keeps its ids in its tower configs (200010 and 200011 in transformers'
    default) and merges the features inside its embedding module: the refusal names both."""
    config = AutoConfig.for_model("phi4_multimodal")
    assert (config.vision_config.image_token_id, config.audio_config.audio_token_id) == (
        200010,
        200011,
    )
    with pytest.raises(interp.UnsupportedArchitectureError) as err:
        interp.adapter_for(config)
    assert "vision_config.image_token_id / audio_config.audio_token_id" in str(err.value)


def test_a_decoder_with_several_residual_streams_is_refused():
    """GLM-5 Next and HY-V4 carry ``hc_mult`` residual streams per position (their decoder
    layers take and give ``[batch, seq, hc_mult, d]``), Qwen4-Exp ``hc_count`` (mixed by its
    ``hyper_connection_mixer``): refused, naming the field."""
    for model_type, field in (
        ("glm5_next", "hc_mult"),
        ("hy_v4_vl", "hc_mult"),
        ("qwen4_exp", "hc_count"),
    ):
        config = AutoConfig.for_model(model_type)
        assert getattr(config.get_text_config(), field) == 4
        with pytest.raises(interp.UnsupportedArchitectureError, match=f"4 residual .*{field}"):
            interp.adapter_for(config)


# -- inferred entries at HF parity, on tiny models around stock processors --------------------


def _qwen3_vl_moe() -> tuple[torch.nn.Module, object]:
    """A tiny Qwen3-VL-MoE: the qwen3_vl builder's config and processor, experts in the MLPs."""
    from transformers import Qwen3VLMoeConfig, Qwen3VLMoeForConditionalGeneration

    dense, processor = build_tiny("qwen3_vl")
    c = dense.config
    text = {
        **c.text_config.to_dict(),
        "num_experts": 4,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 64,
        "decoder_sparse_step": 1,
    }
    ids = {k: getattr(c, k) for k in ("image_token_id", "video_token_id", "vision_start_token_id")}
    config = Qwen3VLMoeConfig(text_config=text, vision_config=c.vision_config.to_dict(), **ids)
    torch.manual_seed(0)
    model = Qwen3VLMoeForConditionalGeneration(config).float().eval()
    model.generation_config = dense.generation_config
    return model, processor


def _vipllava() -> tuple[torch.nn.Module, object]:
    """A tiny VipLLaVA: the llava (CLIP) builder's towers and processor, features from 2 layers."""
    from transformers import VipLlavaConfig, VipLlavaForConditionalGeneration

    llava, processor = build_tiny("llava")
    c = llava.config
    config = VipLlavaConfig(
        text_config=c.text_config.to_dict(),
        vision_config=c.vision_config.to_dict(),
        image_token_index=c.image_token_id,
        vision_feature_layers=[-2, -1],
    )
    torch.manual_seed(0)
    model = VipLlavaForConditionalGeneration(config).float().eval()
    model.generation_config = llava.generation_config
    return model, processor


@pytest.mark.parametrize("build", [_qwen3_vl_moe, _vipllava], ids=["qwen3_vl_moe", "vipllava"])
def test_an_inferred_entry_reads_and_generates_at_hf_parity(build):
    from interp.encoding import encode

    model, processor = build()
    vlm = interp.load(model, processor)
    # inferred, its layout verified by the check at load (interp.layout_check)
    assert vlm.adapter.inferred and vlm.adapter.layout_verified, vlm.adapter.layout_refusal
    samples = make_samples(3)
    states = interp.residual_stream(vlm, samples, progress_bar=False)
    enc = encode(vlm, samples, "full")
    with torch.no_grad():
        hidden = model(**enc.inputs, output_hidden_states=True).hidden_states
    L = vlm.n_layers
    ref = torch.stack([h[:, -1] for h in hidden[:L]], 1)
    assert_close(states[:, :L], ref)
    # the feature site returns one vector per image placeholder
    seen: list = []
    hook = vlm.adapter.image_features_module(model).register_forward_hook(
        lambda _m, _a, out: seen.append(out)
    )
    with torch.no_grad():
        model(**enc.inputs)
    hook.remove()
    out = getattr(seen[0], "pooler_output", None)
    out = seen[0] if out is None else out
    parts = out if isinstance(out, tuple) else (out,)  # Qwen3-VL-MoE: one tensor per image
    assert sum(p.numel() for p in parts) // vlm.d_model == int(enc.image_mask.sum())
    gen = interp.generate(vlm, samples, max_new_tokens=3, progress_bar=False)
    with torch.no_grad():
        ids = model.generate(**enc.inputs, max_new_tokens=3, do_sample=False)
    n = enc.inputs["input_ids"].shape[1]
    assert gen.texts == processor.batch_decode(ids[:, n:], skip_special_tokens=True)
    noisy = interp.residual_stream(vlm, samples, "distort:500", progress_bar=False)
    assert (noisy - states).abs().amax() > 1e-4


def shift_scores(monkeypatch, by: float) -> None:
    """Make :func:`interp.score` return log-probabilities off by ``by`` (a departure the zoo's
    score checks must name)."""
    score = interp.score

    def shifted(*a, **k):
        out = score(*a, **k)
        out.logprobs.add_(by)
        return out

    monkeypatch.setattr(interp, "score", shifted)


def test_the_zoo_parity_check_names_the_step_that_fails(monkeypatch):
    """zoo_parity.check passes a type at parity and names the failing step when a measurement
    departs from plain HF (a read off by 1e-3; a score off by 1e-3; a swap that does nothing;
    a batch that changes a row's generated tokens)."""
    from interp.testing.zoo_parity import check

    assert check("qwen3_vl_moe") == ("qwen3_vl", "")
    read = interp.residual_stream
    monkeypatch.setattr(interp, "residual_stream", lambda *a, **k: read(*a, **k) + 1e-3)
    processor, why = check("qwen3_vl_moe")
    assert processor == "qwen3_vl" and why.startswith("reads fails (AssertionError")
    monkeypatch.setattr(interp, "residual_stream", read)
    score = interp.score
    shift_scores(monkeypatch, 1e-3)
    assert check("qwen3_vl_moe")[1] == (
        "score fails (log-probabilities 1e-03 from a teacher-forced forward's)"
    )
    monkeypatch.setattr(interp, "score", score)

    # a swap that leaves the real image's vectors, and a batch that changes a row's tokens
    def no_swap(*a, **k):
        edits = [e for e in k.pop("edits", None) or [] if type(e).__name__ != "SwapImage"]
        return read(*a, **k, edits=edits or None)

    monkeypatch.setattr(interp, "residual_stream", no_swap)
    assert check("qwen3_vl_moe")[1].startswith("swap fails (AssertionError")
    monkeypatch.setattr(interp, "residual_stream", read)
    generate = interp.generate

    def batch_dependent(vlm, samples, *a, **k):
        out = generate(vlm, samples, *a, **k)
        if len(samples) > 1 and k.get("decoding") is not None:
            out.token_ids[0] = [*out.token_ids[0][:-1], out.token_ids[0][-1] + 1]
        return out

    monkeypatch.setattr(interp, "generate", batch_dependent)
    assert check("qwen3_vl_moe")[1] == (
        "batch invariance fails (contrastive decoding generates other tokens in the batch)"
    )


def test_a_padded_audio_site_counts_as_one_row_per_clip():
    """An audio site whose output is one row per clip padded to the longest clip's placeholders
    (OmniASR's projector: 0.4 s and 0.6 s give 19 and 29 frames, [2, 29, d]) passes the
    features step; a site padded to a whole window (GLM-ASR's [2, 15, d] for 5 and 7) does not,
    nor does a flat output of another count."""
    from interp.testing.zoo_parity import _padded, check

    d = 8
    assert _padded([torch.zeros(2, 29, d)], [19, 29], d)
    assert not _padded([torch.zeros(2, 15, d)], [5, 7], d)
    assert not _padded([torch.zeros(58, d)], [19, 29], d)
    assert not _padded([torch.zeros(1, 29, d), torch.zeros(1, 29, d)], [19, 29], d)
    assert not check("omniasr")[1].startswith("features fails")
    assert check("glmasr")[1] == "features fails (30 feature vectors, 12 placeholders)"


def test_text_rows_are_checked_where_the_media_steps_fail(monkeypatch):
    """Molmo2's image inputs need its own processor's pooling indices (not offline), so its image
    steps fail; text-only rows still pass reads and score against plain HF, and the row says
    ``text tested``. A score off by 1e-3 is named as the text step that fails."""
    from interp.testing.zoo_parity import check, text_check

    assert check("molmo2")[1].startswith("its feature site does not take")
    assert text_check("molmo2") == ""
    assert row_of("molmo2").parity.startswith("text tested; not tested: its feature site")
    shift_scores(monkeypatch, 1e-3)
    assert text_check("molmo2") == (
        "text score fails (log-probabilities 1e-03 from a teacher-forced forward's)"
    )


def test_a_forward_that_depends_on_the_batch_runs_each_row_alone():
    """HunYuan-VL's rotary image index counts images across the batch's rows (its
    ``get_rope_index``): row 1's image is index 1 in a batch of two, 0 alone, so plain HF's own
    logits of that row differ alone and batched (the zoo's batch step names it). Its entry
    declares it (``batch_dependent``): the library runs each row alone, with a warning, so a
    batch's reads equal plain HF's forward of each row by itself."""
    from interp.encoding import encode
    from interp.testing.reference import hf_last_states
    from interp.testing.zoo_parity import ParityError, _hf_batch_invariant, check

    vlm = shared_tiny_vlm("hunyuan_vl")
    model = vlm.hf
    samples = make_samples(2)
    both, alone = encode(vlm, samples, "full"), encode(vlm, samples[1:], "full")

    def image_index(enc, row):
        inputs = enc.inputs
        pos, _ = model.model.get_rope_index(
            inputs["input_ids"],
            inputs["mm_token_type_ids"],
            inputs["image_grid_thw"],
            inputs["attention_mask"],
        )
        return set(pos[-1, row][inputs["mm_token_type_ids"][row] == 1].tolist())

    # the image's grid tokens take the image index (the two around it keep their positions)
    batched, single = image_index(both, 1), image_index(alone, 0)
    assert batched - single == {1} and single - batched == {0}
    with pytest.raises(ParityError, match="row 1 alone and in the batch differ"):
        _hf_batch_invariant(vlm, samples, both)
    assert vlm.adapter.batch_dependent
    with pytest.warns(interp.BatchDependentWarning, match="each row runs alone"):
        states = interp.residual_stream(vlm, samples, batch_size=2, progress_bar=False)
    for i, sample in enumerate(samples):
        ref = hf_last_states(vlm, encode(vlm, [sample], "full"))[0]
        assert_close(states[i, : vlm.n_layers], ref)
    assert check("hunyuan_vl") == ("qwen3_vl", "")


def test_logits_are_the_forwards_where_it_transforms_the_heads_output():
    """Mistral Large 4's forward soft-caps its head's output (``30 · tanh(z / 30)``): the first
    generated step's scores (``output_scores``) equal the plain forward's last logits, and
    ``unembed`` of the last layer's output (a torch hook's) gives them too; the zoo's checks (score against a
    teacher-forced forward included) pass. Cohere 2 Vision keeps ``logit_scale`` in its config,
    but its forward does not apply it: nothing is transformed, and its checks pass too."""
    from interp.encoding import encode
    from interp.testing.builders.inferred import tiny_inferred
    from interp.testing.reference import hf_forward, last_layer_raw
    from interp.testing.zoo_parity import check

    model, processor, _ = tiny_inferred("mistral_large4")
    vlm = interp.load(model, processor)
    assert (vlm.head_transform.scale, vlm.head_transform.softcap) == (1.0, 30.0)
    samples = make_samples(2)
    enc = encode(vlm, samples, "full")
    out = hf_forward(vlm, enc, output_hidden_states=True)
    want = out.logits[:, -1].float()
    assert want.abs().max() < 30  # capped: the reference is the forward's own output
    gen = interp.generate(vlm, samples, max_new_tokens=1, output_scores=True, progress_bar=False)
    got = torch.stack([s[0] for s in gen.scores])
    assert_close(got, want)
    # the last layer's output by a torch hook (its hidden_states[-1] is already normed)
    lens = vlm.unembed(last_layer_raw(vlm, enc)[:, -1]).float()
    assert_close(lens, want)
    assert check("mistral_large4") == ("llava", "")
    model, processor, _ = tiny_inferred("cohere2_vision")
    assert model.config.get_text_config().logit_scale != 1.0
    assert interp.load(model, processor).head_transform is None
    assert check("cohere2_vision") == ("llava", "")


def test_a_cap_applied_by_a_child_module_the_forward_calls_is_applied_too():
    """Inkling 2's forward caps its logits through ``self.logit_softcap(logits)`` (a module built
    from ``final_logit_softcapping``; the forward never names the field): the library finds it,
    and text-only scores equal a teacher-forced plain forward's (without the cap they are
    1e-3 off)."""
    from interp.encoding import encode
    from interp.samples import Sample
    from interp.testing.builders.inferred import tiny_inferred
    from interp.testing.reference import hf_target_logprobs

    model, processor, _ = tiny_inferred("inkling2")
    vlm = interp.load(model, processor)
    assert vlm.head_transform is not None and vlm.head_transform.softcap == 30.0
    samples = [Sample("what colour is a banana ?", id="t0"), Sample("how many legs ?", id="t1")]
    targets = ["yellow banana", "two"]
    gaps = []
    for transform in (vlm.head_transform, None):
        vlm.head_transform = transform
        scores = interp.score(vlm, samples, targets, progress_bar=False)
        for i, (sample, target) in enumerate(zip(samples, targets)):
            tgt = vlm.tokenizer(target, add_special_tokens=False)["input_ids"]
            want = hf_target_logprobs(vlm, encode(vlm, [sample], "full"), tgt)
            gaps.append(float((scores.logprobs[i, : len(tgt)] - want).abs().max()))
    assert max(gaps[:2]) < 1e-5 and min(gaps[2:]) > 1e-4, gaps


def test_a_zoo_type_gets_the_inputs_its_stock_processor_gives():
    """Mistral 3's batch carries Pixtral's ``image_sizes`` and each row holds one placeholder per
    merged patch of its own image (hand count: ``(h // patch // merge) * (w // patch // merge)``,
    Pixtral's formula); Idefics2's images go nested per row (``pixel_values`` ``[rows, images,
    3, H, W]``, as its processor lays them out); ShieldGemma 2's carries Gemma 3's
    ``token_type_ids``."""
    from interp.encoding import encode
    from interp.testing.builders.inferred import tiny_inferred
    from interp.testing.samples import random_image

    model, processor, _ = tiny_inferred("mistral3")
    vlm = interp.load(model, processor)
    wide = [
        interp.Sample("what is it ?", image=random_image(32, w, i)) for i, w in enumerate((32, 16))
    ]
    enc = encode(vlm, wide, "full")
    p, m = model.config.vision_config.patch_size, model.config.spatial_merge_size
    want = [(h // p // m) * (w // p // m) for h, w in enc.inputs["image_sizes"].tolist()]
    got = (enc.inputs["input_ids"] == model.config.image_token_id).sum(1).tolist()
    assert got == want and want[0] > want[1] > 0  # the narrower image has fewer
    model, processor, _ = tiny_inferred("idefics2")
    vlm = interp.load(model, processor)
    assert vlm.adapter.name == "idefics2" and vlm.adapter.pixel_layout == "rows"
    assert encode(vlm, make_samples(2), "full").inputs["pixel_values"].shape[:2] == (2, 1)
    # ShieldGemma 2 (Gemma 3's processor): token_type_ids mark exactly the image tokens
    model, processor, _ = tiny_inferred("shieldgemma2")
    inputs = encode(interp.load(model, processor), make_samples(2), "full").inputs
    marks = inputs["input_ids"] == model.config.image_token_id
    assert marks.any() and torch.equal(inputs["token_type_ids"].bool(), marks)
