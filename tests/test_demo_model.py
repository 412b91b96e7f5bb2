"""The demo VLM: processor conventions, the shipped checkpoint's accuracies, the training script."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForImageTextToText, AutoProcessor

from interp.datasets import PRIOR_COLORS, demo_world, text_corpus
from interp.demo import CHECKPOINT_DIR
from interp.demo.evaluate import (
    evaluate,
    follows,
    greedy_answers,
    pope_table,
    prior_table,
    summarize,
)
from interp.demo.model import (
    build_model,
    build_processor,
    image_token_count,
    messages,
    sample_images,
    sample_prompt,
)
from interp.demo.train import SMOKE, encode, train

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def processor():
    return build_processor()


def test_encode_matches_the_processor(processor) -> None:
    samples = demo_world("test", 90, seed=0)  # every question type, conflicts with two images
    assert any(isinstance(s.image, list) for s in samples)
    texts = [sample_prompt(processor, s) for s in samples]
    images = [im for s in samples for im in sample_images(s)]
    ref = processor(text=texts, images=images, padding=True, return_tensors="pt")
    ours = encode(processor, samples, with_answer=False)
    for key in ("input_ids", "attention_mask", "pixel_values"):
        assert torch.equal(ours[key], ref[key]), key


def test_processor_conventions(processor) -> None:
    tok = processor.tokenizer
    assert tok.padding_side == "left"
    assert image_token_count(processor) == (32 // 8) ** 2
    samples = demo_world("test", 90, seed=0)
    enc = processor(
        text=[sample_prompt(processor, s) for s in samples],
        images=[im for s in samples for im in sample_images(s)],
        padding=True,
        return_tensors="pt",
    )
    ids = enc["input_ids"]
    n_images = torch.tensor([len(s.image) if isinstance(s.image, list) else 1 for s in samples])
    assert ((ids == tok.image_token_id).sum(dim=1) == 16 * n_images).all()
    assert (ids[:, -1] == tok.convert_tokens_to_ids("assistant")).all()  # last prompt token
    lengths = enc["attention_mask"].sum(dim=1)
    for row, n in zip(enc["attention_mask"], lengths, strict=True):  # pads on the left
        assert row[: len(row) - n].sum() == 0 and row[len(row) - n :].all()
    blind = tok(sample_prompt(processor, samples[0], with_image=False))["input_ids"]
    assert tok.image_token_id not in blind
    assert tok.convert_ids_to_tokens(blind)[-2:] == ["<|im_start|>", "assistant"]


def test_tokenizer_lowercases_and_splits_punctuation(processor) -> None:
    tok = processor.tokenizer
    ids = tok("What colour is the banana?", add_special_tokens=False)["input_ids"]
    assert tok.unk_token_id not in ids
    assert tok.convert_ids_to_tokens(ids) == ["what", "colour", "is", "the", "banana", "?"]
    assert (
        tok("WHERE is the Leaf ?.", add_special_tokens=False)["input_ids"]
        == tok("where is the leaf ? .", add_special_tokens=False)["input_ids"]
    )
    # markup is matched verbatim, before lowercasing
    marked = tok("<|im_start|>user\n<image>Hi", add_special_tokens=False)["input_ids"]
    assert tok.convert_ids_to_tokens(marked)[:3] == ["<|im_start|>", "user", "<image>"]


def test_answers_tokenize_without_unknowns(processor) -> None:
    tok = processor.tokenizer
    for s in demo_world("test", 450, seed=0) + text_corpus(200):
        text = s.question.replace("{image}", " ") + " " + (s.answer or "")
        ids = tok(text, add_special_tokens=False)["input_ids"]
        assert tok.unk_token_id not in ids
        assert len(ids) == len(text.split())  # one word, one token


def test_multi_image_messages() -> None:
    """Slots place the images; pieces are stripped, empty ones dropped; blind joins the text."""
    q = "{image} the caption says leaf . {image}  which object is it ?"
    assert messages(q, 2)[0]["content"] == [
        {"type": "image"},
        {"type": "text", "text": "the caption says leaf ."},
        {"type": "image"},
        {"type": "text", "text": "which object is it ?"},
    ]
    assert messages(q, 0)[0]["content"] == [
        {"type": "text", "text": "the caption says leaf . which object is it ?"}
    ]
    assert messages("what color is the leaf ?", 2)[0]["content"] == [
        {"type": "image"},
        {"type": "image"},
        {"type": "text", "text": "what color is the leaf ?"},
    ]
    assert messages("digit ?", True) == messages("digit ?", 1)


def test_training_prompts_are_the_library_prompts(processor) -> None:
    """What training feeds the model is what ``interp.encode`` builds, two-image samples included."""
    import interp

    model = build_model(processor.tokenizer, SMOKE.model)
    vlm = interp.load(model, processor)
    samples = demo_world("test", 90, seed=0)
    assert sum(isinstance(s.image, list) for s in samples) >= 6
    for condition, with_image in (("full", True), ("blind", False)):
        enc = interp.encode(vlm, samples, condition)
        ours = encode(processor, samples, with_answer=False, with_image=with_image)
        assert enc.prompts == [sample_prompt(processor, s, with_image) for s in samples]
        for key in ("input_ids", "attention_mask", *(("pixel_values",) if with_image else ())):
            assert torch.equal(enc.inputs[key], ours[key]), (condition, key)


def test_prior_table_by_hand() -> None:
    """Hand-counted: two canonical (both right), four counterfactual (one right, two prior)."""
    rows = []
    for cf, pred, answer in [
        (False, "yellow", "yellow"),
        (False, "yellow", "yellow"),
        (True, "blue", "blue"),
        (True, "yellow", "blue"),
        (True, "yellow", "red"),
        (True, "green", "red"),
    ]:
        rows.append(
            {
                "qtype": "color",
                "variant": "plain",
                "entity": "banana",
                "counterfactual": cf,
                "opacity": 0.9,
                "correct_image": float(pred == answer),
                "correct_blind": 0.0,
                "prior_image": float(pred == "yellow"),
            }
        )
    t = prior_table(pd.DataFrame(rows)).set_index("group")
    assert t.loc["color plain: canonical", "with_image"] == 1.0
    assert t.loc["color plain: counterfactual", "with_image"] == 0.25
    assert t.loc["color plain: gap (canonical - counterfactual)", "with_image"] == 0.75
    assert t.loc["color plain: counterfactual", "prior_of_errors"] == pytest.approx(2 / 3)


def test_pope_table_by_hand() -> None:
    """Four present kinds (three answered yes), two absent kinds per way of drawing them."""
    rows = [("yes", "yes", None)] * 3 + [("yes", "no", None)]
    rows += [("no", "no", "random")] * 2
    rows += [("no", "yes", "popular"), ("no", "no", "popular")]
    rows += [("no", "yes", "adversarial")] * 2
    frame = pd.DataFrame(
        [
            {
                "qtype": "exist",
                "answer": a,
                "pred_image": p,
                "pred_blind": "no",
                "pope_negative": n,
                "correct_image": float(a == p),
            }
            for a, p, n in rows
        ]
    )
    t = pope_table(frame).set_index("setting")
    assert t.loc["random", "n"] == 6 and t.loc["random", "precision"] == 1.0
    assert t.loc["random", "recall"] == 0.75 and t.loc["random", "negatives_yes"] == 0.0
    assert t.loc["popular", "negatives_yes"] == 0.5 and t.loc["popular", "yes_ratio"] == 4 / 6
    assert t.loc["adversarial", "precision"] == pytest.approx(3 / 5)
    assert t.loc["adversarial", "accuracy"] == pytest.approx(3 / 6)
    assert t.loc["adversarial", "negatives_yes"] == 1.0


def test_follows_by_hand() -> None:
    meta = {"image_label": "leaf", "propositional_label": "drop", "text_label": "leaf"}
    assert follows("leaf", meta) == "perceptual+text"
    assert follows("drop", meta) == "propositional"
    assert follows("heart", meta) == "other"


# ----------------------------------------------------------------------------------------------
# the shipped checkpoint


@pytest.fixture(scope="module")
def demo():
    if not (CHECKPOINT_DIR / "model.safetensors").is_file():
        pytest.fail(f"the demo checkpoint is missing from {CHECKPOINT_DIR}")
    torch.set_num_threads(1)
    model = AutoModelForImageTextToText.from_pretrained(CHECKPOINT_DIR).eval()
    proc = AutoProcessor.from_pretrained(CHECKPOINT_DIR)
    return model, proc


@pytest.fixture(scope="module")
def frame(demo) -> pd.DataFrame:
    """Held-out test items: 30 draws of every question type plus 150 colour pairs."""
    model, proc = demo
    mixed = demo_world("test", 510, seed=7)
    colour = demo_world("test", 300, seed=8, qtypes=["color"])
    return evaluate(model, proc, mixed + colour)


def test_checkpoint_architecture(demo) -> None:
    model, proc = demo
    cfg = model.config
    assert type(model).__name__ == "LlavaForConditionalGeneration"
    assert type(proc).__name__ == "LlavaProcessor"
    assert type(proc.image_processor).__name__ == "SiglipImageProcessorPil"
    assert cfg.vision_feature_select_strategy == "full"
    assert cfg.vision_config.vision_use_head is False
    assert cfg.text_config.num_hidden_layers >= 8
    weights = CHECKPOINT_DIR / "model.safetensors"
    assert weights.stat().st_size <= 20 * 2**20
    n = sum(t.numel() for t in load_file(weights).values())
    assert n == sum(p.numel() for p in model.parameters())


def test_greedy_answers_do_not_depend_on_batching(demo) -> None:
    model, proc = demo
    samples = demo_world("test", 24, seed=9)
    one = greedy_answers(model, proc, samples, batch_size=1)
    many = greedy_answers(model, proc, samples, batch_size=24)
    assert one == many


def test_accuracy_with_and_without_image(frame: pd.DataFrame) -> None:
    acc = summarize(frame)["accuracy"].set_index("group")
    dep = acc.loc["ALL vision-dependent"]
    ind = acc.loc["ALL vision-independent"]
    assert dep["with_image"] >= 0.7
    assert dep["without_image"] <= 0.25
    assert ind["with_image"] >= 0.95 and ind["without_image"] >= 0.9
    for q in ("color", "identify", "count", "position", "digit", "conflict"):
        # far above a uniform guess with the image (position is the hardest: ~0.63-0.70)
        assert acc.loc[q, "with_image"] >= acc.loc[q, "chance"] + 0.35, q
    # without the image, a colour question that does not name the kind is a guess
    anchored = frame[(frame["qtype"] == "color") & (frame["variant"] == "anchored")]
    assert anchored["correct_blind"].mean() <= 0.3


def test_language_prior_gap(frame: pd.DataFrame) -> None:
    col = frame[(frame["qtype"] == "color") & frame["entity"].isin(list(PRIOR_COLORS))]
    canonical = col[~col["counterfactual"].astype(bool)]
    cf = col[col["counterfactual"].astype(bool)]
    assert len(cf) >= 80
    gap = canonical["correct_image"].mean() - cf["correct_image"].mean()
    assert gap >= 0.05
    wrong = cf[cf["correct_image"] == 0]
    expected = wrong["entity"].map(PRIOR_COLORS)
    # errors on counterfactual objects mostly answer the canonical colour
    assert (wrong["pred_image"] == expected).mean() >= 0.5
    # blind, the plain wording answers the prior: right on canonical, wrong on counterfactual
    plain = col[col["variant"] == "plain"]
    assert plain[~plain["counterfactual"].astype(bool)]["correct_blind"].mean() >= 0.8
    assert plain[plain["counterfactual"].astype(bool)]["correct_blind"].mean() <= 0.2


def test_visual_reference_is_weaker_than_textual(frame: pd.DataFrame) -> None:
    for qtype in ("recall", "digit_arith"):
        q = frame[frame["qtype"] == qtype]
        text = q[q["setting"] == "text_only"]["correct_image"].mean()
        visual = q[q["setting"] == "visual"]
        assert text >= 0.9
        assert visual["correct_image"].mean() <= text - 0.2
        linked = visual[visual["linked"] == True]["correct_image"].mean()  # noqa: E712
        unlinked = visual[visual["linked"] == False]["correct_image"].mean()  # noqa: E712
        assert linked >= unlinked + 0.2


def test_conflicts_mostly_follow_a_modality(frame: pd.DataFrame) -> None:
    con = frame[frame["qtype"] == "conflict"]
    assert len(con) >= 25
    assert (con["outcome_image"] == "image").mean() >= 0.5
    assert (con["outcome_image"] != "other").mean() >= 0.7


# ----------------------------------------------------------------------------------------------
# training


def test_training_is_deterministic(tmp_path: Path) -> None:
    a = load_file(train(SMOKE, tmp_path / "a") / "model.safetensors")
    b = load_file(train(SMOKE, tmp_path / "b") / "model.safetensors")
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.slow
def test_smoke_training_and_evaluation_cli(tmp_path: Path) -> None:
    out = tmp_path / "ckpt"
    run = [sys.executable, "-m", "interp.demo.train", "--smoke", "--seed", "1", "--out", str(out)]
    subprocess.run(run, cwd=ROOT, check=True, timeout=60, capture_output=True)
    model = AutoModelForImageTextToText.from_pretrained(out)
    proc = AutoProcessor.from_pretrained(out)
    answers = greedy_answers(model, proc, demo_world("test", 4, seed=0), max_new_tokens=3)
    assert len(answers) == 4 and all(isinstance(a, str) for a in answers)
    md, csv = tmp_path / "table.md", tmp_path / "table.csv"
    cmd = [sys.executable, "-m", "interp.demo.evaluate", "--checkpoint", str(out), "--n", "40"]
    cmd += ["--markdown", str(md), "--csv", str(csv)]
    subprocess.run(cmd, cwd=ROOT, check=True, timeout=60, capture_output=True)
    assert "### accuracy" in md.read_text()
    table = pd.read_csv(csv)
    assert {"accuracy", "prior", "wording", "reference", "conflict"} == set(table["table"])
    assert np.isfinite(table["n"].dropna()).all()
