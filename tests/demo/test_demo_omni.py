"""demo-omni's pipeline: the smoke-trained Qwen2.5-Omni thinker saves, loads offline through
``interp.load`` and runs the library's measurements on a tri-modal item (image + audio + caption).

References are independent of the library: plain HF forwards / ``generate`` of the saved model
through its processor, the tokenizer's own decode, and trust-rule answers worked by hand.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file
from transformers import Qwen2_5OmniThinkerForConditionalGeneration

import interp
from interp.datasets.world import control_answer, demo_world
from interp.datasets.world.generate import V3_QTYPES
from interp.demo.omni import model as omni
from interp.encoding import encode as library_encode
from interp.errors import ModelNotFoundError
from interp.samples import Sample
from interp.testing.checks import OFFLINE_ENV
from interp.testing.tolerance import assert_close
from tools.demo.omni.train import SMOKE, encode, joint_batch, train


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return train(SMOKE, tmp_path_factory.mktemp("omni") / "ckpt")


@pytest.fixture(scope="module")
def trimodal() -> Sample:
    items = demo_world("test", 28, seed=0, qtypes=["trimodal"])
    return next(s for s in items if s.meta["agreement"] == "all_differ")


@pytest.fixture(scope="module")
def vlm(checkpoint: Path) -> interp.VLM:
    with pytest.MonkeyPatch.context() as mp:
        for key, value in OFFLINE_ENV.items():
            mp.setenv(key, value)
        return interp.load(checkpoint)


def _hf(checkpoint: Path) -> Qwen2_5OmniThinkerForConditionalGeneration:
    return Qwen2_5OmniThinkerForConditionalGeneration.from_pretrained(checkpoint).eval()


def test_the_saved_processor_loads_offline_and_equals_the_built_one(checkpoint, trimodal):
    assert omni.is_frames_omni_folder(checkpoint)
    built, loaded = omni.build_processor(SMOKE.model), omni.load_processor(checkpoint)
    a, b = encode(built, [trimodal], False), encode(loaded, [trimodal], False)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_training_prompts_are_the_library_prompts(vlm, trimodal):
    enc = library_encode(vlm, [trimodal])
    assert enc.prompts[0] == omni.sample_prompt(vlm.processor, trimodal)
    ours = encode(vlm.processor, [trimodal], with_answer=False)
    assert torch.equal(enc.inputs["input_ids"].cpu(), ours["input_ids"])


def test_media_positions_decode_to_their_placeholders(vlm, trimodal):
    enc = library_encode(vlm, [trimodal])
    ids = enc.inputs["input_ids"][0].cpu()
    tokens = vlm.tokenizer.convert_ids_to_tokens
    audio, image = ids[enc.mask("audio")[0].cpu()], ids[enc.mask("image")[0].cpu()]
    # one audio token per 4 mel frames of 20 ms (two stride-2 stages), one per merged 2x2 patch
    frames = len(trimodal.audios[0].waveform) // omni.HOP_LENGTH
    assert abs(len(audio) - frames / 4) <= 1
    assert set(tokens(audio.tolist())) == {omni.AUDIO}
    assert len(image) == SMOKE.model.image_tokens and set(tokens(image.tolist())) == {omni.IMAGE}
    text = vlm.tokenizer.decode(ids)
    assert omni.AUDIO_BOS + omni.AUDIO in text.replace(" ", "")
    assert text.split()[-1] == omni.LAST_PROMPT_TOKEN


def test_residual_stream_and_generate_equal_plain_hf(checkpoint, vlm, trimodal):
    states = interp.residual_stream(vlm, [trimodal], progress_bar=False)
    inputs = encode(vlm.processor, [trimodal], with_answer=False)
    hf = _hf(checkpoint)
    with torch.no_grad():
        ref = hf(**inputs, output_hidden_states=True).hidden_states
    n_layers = SMOKE.model.layers
    assert states.shape == (1, n_layers + 1, SMOKE.model.hidden)
    for layer in range(n_layers):  # HF's last entry is after the final norm
        assert_close(states[0, layer], ref[layer][0, -1])
    out = interp.generate(vlm, [trimodal], max_new_tokens=4, progress_bar=False)
    with torch.no_grad():
        gen = hf.generate(**inputs, max_new_tokens=4, do_sample=False)
    new = gen[0, inputs["input_ids"].shape[1] :].tolist()
    eos = vlm.tokenizer.eos_token_id
    assert out.token_ids[0] == (new[: new.index(eos)] if eos in new else new)


def test_training_is_deterministic_and_the_control_shares_pretraining(checkpoint, tmp_path):
    a = load_file(checkpoint / "model.safetensors")
    again = train(SMOKE, tmp_path / "again", control_out=tmp_path / "control")
    b = load_file(again / "model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    record = json.loads((tmp_path / "control" / "training.json").read_text())
    assert record["train_config"]["control"] is True
    assert interp.load(tmp_path / "control").n_layers == SMOKE.model.layers


def test_the_control_rule_drops_the_audio_form_by_hand():
    # PropI-PercA, order image, text, audio; world rule: image 0.8, text 0.6 + 0.12 = 0.72,
    # sound 0.5 + 0.25 = 0.75 -> image; control (sound trusted as speech): 0.7 + 0.25 -> audio
    meta = {
        "qtype": "trimodal",
        "image_label": "banana",
        "audio_label": "circle",
        "text_label": "leaf",
        "image_form": "propositional",
        "audio_form": "perceptual",
        "order": "image,text,audio",
    }
    assert control_answer(Sample("q", None, "banana", None, meta)) == "circle"
    # with a perceptual image the image wins under both rules (1.0 > 0.95)
    meta = {**meta, "image_form": "perceptual"}
    assert control_answer(Sample("q", None, "banana", None, meta)) == "banana"


def test_joint_batches_mix_v3_v2_and_text_and_follow_the_rule():
    batch = joint_batch(SMOKE, 0)
    kinds = {s.meta.get("qtype") for s in batch}
    assert {"trimodal", "hear", "motion"} & kinds and len(batch) == SMOKE.batch
    for s in demo_world("train", 40, seed=0, qtypes=list(V3_QTYPES)):
        if s.meta["qtype"] == "trimodal" and s.meta["audio_form"] == "propositional":
            assert control_answer(s) == s.answer  # speech keeps its trust under both rules


def test_demo_omni_without_a_checkpoint_says_how_to_train(monkeypatch, tmp_path):
    import interp.demo.omni as package

    monkeypatch.setattr(package, "CHECKPOINT_DIR", tmp_path / "checkpoint")
    monkeypatch.setattr(package, "CONTROL_DIR", tmp_path / "control")
    for name in ("demo-omni", "demo-omni-control"):
        with pytest.raises(ModelNotFoundError, match="make train-demo-omni"):
            interp.load(name)


def test_evaluation_tables(checkpoint):
    from tools.demo.omni.evaluate import evaluate

    tables = evaluate(checkpoint, n=8)
    acc = tables["accuracy"].set_index("qtype")
    assert {"trimodal", "hear", "motion"} <= set(acc.index)
    assert acc.loc["hear", "n"] == 8 and 0.0 <= acc.loc["hear", "without_modality"] <= 1.0
    by_evidence = tables["trimodal by evidence"]
    rule = by_evidence.filter(like="rule:").sum(axis=1)
    # every disagreeing item's rule answer is one source
    assert_close(rule.to_numpy(), np.ones(len(rule)))


def test_v3_items_tokenize_without_unknowns():
    tok = omni.build_tokenizer()
    for s in demo_world("test", 60, seed=0, qtypes=list(V3_QTYPES)):
        text = re.sub(r"\{(image|audio|video)\}", " ", s.question) + " " + s.answer
        ids = tok(text)["input_ids"]
        assert tok.unk_token_id not in ids, s.question
