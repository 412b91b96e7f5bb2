"""``interp doctor`` (interp/doctor.py): the report on tiny models and the demo model, its
problem path, the lazy mode and the command's exit status."""

from __future__ import annotations

import dataclasses
import re

import pytest
import torch

import interp
from interp.cli import main
from interp.doctor import default_sample, doctor
from interp.testing import random_image, shared_tiny_vlm


@pytest.mark.parametrize(
    "arch", ["llava", "qwen2_vl", "idefics3", "paligemma", "mllama", "instructblip"]
)
def test_doctor_finds_no_problem_on_tiny_models(arch):
    vlm = shared_tiny_vlm(arch)
    sample = interp.Sample(image=random_image(32, 40, 0), question="Which color is it?", id="x")
    report = doctor(vlm, sample, answer="Red.")
    assert report.ok, report.render()
    statuses = {c.name: c.status for c in report.checks}
    assert statuses["positions"] == "ok" and statuses["residual reads"] == "ok"
    assert statuses["batch invariance"] == "ok" and statuses["logits"] == "ok"
    full = report.prompts["full"]
    assert "⟦question" in full and "⟦answer" in full and "⟦image 1:" in full
    # the marked image count is the encoding's own count of image-token ids
    enc = interp.encode(vlm, [sample], "full")
    assert f"⟦image 1: {int(enc.image_mask.sum())} tokens⟧" in full
    assert "⟦image" not in report.prompts.get("blind", "")


@pytest.mark.parametrize("arch", ["qwen2_5_omni_thinker", "gemma4"])
def test_doctor_shows_audio_and_video_spans_on_omni_models(arch):
    """The default sample carries audio (and video) on an omni family: the marked prompt shows one
    span per input with the encoding's own token count, ``no_audio`` / ``no_video`` drop them."""
    vlm = shared_tiny_vlm(arch)
    report = doctor(vlm)
    assert report.ok, report.render()
    sample = default_sample(vlm)
    enc = interp.encode(vlm, [sample], "full")
    full = report.prompts["full"]
    for kind in ("image", "audio", "video"):
        if kind not in vlm.adapter.modalities:
            assert f"⟦{kind}" not in full
            continue
        n = int(enc.mask(kind).sum())  # the placeholder-token ids the processor wrote
        ids = enc.input_ids[enc.mask(kind)].unique().tolist()
        assert ids == [vlm.adapter.token_id(vlm.hf, kind)]
        # one span per run of placeholder tokens (Gemma 4 writes one run per video frame)
        runs = re.findall(f"⟦{kind} 1: (\\d+) tokens⟧", full)
        assert runs and sum(int(k) for k in runs) == n
        assert f"{kind} tokens" in {c.name for c in report.checks} or kind == "image"
    assert "⟦audio" not in report.prompts["no_audio"] and "⟦audio 1:" in report.prompts["blind"]
    if "video" in vlm.adapter.modalities:
        assert "⟦video" not in report.prompts["no_video"]


def test_doctor_runs_on_an_audio_language_model():
    """An audio-only family: no image token among the facts, no image condition, its audio
    token named, and the checks hold."""
    vlm = shared_tiny_vlm("qwen2_audio")
    report = doctor(vlm)
    assert report.ok, report.render()
    assert "image token" not in report.facts and "audio token" in report.facts
    assert "null:black" not in report.prompts and "no_audio" in report.prompts


def test_doctor_checks_the_logits_against_the_forwards():
    """Mistral Large 4's forward soft-caps its head's output: the doctor names the transform and
    its logits check (the lens of the last state against HF's own ``logits``) is ok; with the
    transform dropped the check is a problem that names the cause."""
    from interp.testing.builders.inferred import tiny_inferred

    model, processor, _ = tiny_inferred("mistral_large4")
    vlm = interp.load(model, processor)
    sample = interp.Sample(image=random_image(32, 40, 0), question="Which color is it?", id="x")
    report = doctor(vlm, sample, conditions=("full",))
    assert report.facts["logits"].startswith("30 · tanh(z / 30)")
    logits = {c.name: c for c in report.checks}["logits"]
    assert logits.status == "ok", logits.line()
    vlm.head_transform = None
    report = doctor(vlm, sample, conditions=("full",))
    logits = {c.name: c for c in report.checks}["logits"]
    assert logits.status == "problem" and "transforms its head's output" in logits.fix
    assert report.facts["logits"] == "the head's output"


def test_doctor_reports_a_rewritten_question(monkeypatch):
    """A prompt builder that changes the question's text: positions become a problem with a fix."""
    vlm = shared_tiny_vlm("llava")

    def shouting(processor, question, n_images):
        content = [{"type": "image"}] * int(n_images) + [{"type": "text", "text": question.upper()}]
        return processor.apply_chat_template(
            [{"role": "user", "content": content}], add_generation_prompt=True, tokenize=False
        )

    monkeypatch.setattr(vlm, "adapter", dataclasses.replace(vlm.adapter, build_prompt=shouting))
    sample = interp.Sample(image=random_image(32, 32, 1), question="what is it?", id="odd")
    report = doctor(vlm, sample, forward_checks=False)
    assert not report.ok
    [check] = [c for c in report.checks if c.name == "positions"]
    assert check.status == "problem" and check.fix


def test_doctor_lazy_reads_no_weight():
    vlm = interp.load("demo", dispatch=False)
    report = doctor(vlm, forward_checks=False)
    assert report.ok, report.render()
    assert all(p.device.type == "meta" for p in vlm.hf.parameters())
    assert any(c.name == "forward checks" and "skipped" in c.detail for c in report.checks)


def test_doctor_command_on_the_demo_model(capsys, tmp_path):
    image = tmp_path / "square.png"
    random_image(48, 48, 2).save(image)
    status = main(["doctor", "--model", "demo", "--image", str(image), "--no-progress"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "ok       positions" in out and "ok       residual reads" in out
    assert "ok       batch invariance" in out
    assert "decoder layers         12" in out


def test_doctor_command_missing_image_is_one_error_line(capsys, tmp_path):
    status = main(["doctor", "--model", "demo", "--image", str(tmp_path / "none.png")])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1 and err[0].startswith("error:")


def test_memory_estimate_counts_the_kv_cache():
    from interp.doctor import _memory

    vlm = shared_tiny_vlm("llava")
    config = vlm.hf.config.get_text_config()
    heads = config.num_attention_heads
    kv = getattr(config, "num_key_value_heads", None) or heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    expected = 2 * config.num_hidden_layers * kv * head_dim * (100 + 10) * 4 * 4 / 1024**3
    assert f"KV cache {expected:.2f} GiB" in _memory(vlm, 100, 4, 10)
    assert torch.finfo(vlm.dtype).bits == 32
