"""The demo VLM: processor conventions, the shipped checkpoint's accuracies, the training script."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForImageTextToText, AutoProcessor

from interp.datasets import CO_OCCURRENCE, PRIOR_COLORS, demo_world, text_corpus
from interp.demo import CHECKPOINT_DIR
from interp.demo.model import (
    build_model,
    build_processor,
    image_token_count,
    messages,
    sample_images,
    sample_prompt,
)
from tools.demo.evaluate import (
    evaluate,
    follows,
    greedy_answers,
    pope_table,
    prior_table,
    summarize,
)
from tools.demo.train import SMOKE, encode, train

ROOT = Path(__file__).resolve().parents[2]


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
    """What training feeds the model is what ``interp.encode`` builds, two-image samples too."""
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
    """Held-out test items: 30 draws of every question type (each wording, reference setting,
    POPE question and conflict order), plus 100 draws each of colour, conflict, existence and
    description questions."""
    model, proc = demo
    mixed = demo_world("test", 1350, seed=7)
    colour = demo_world("test", 400, seed=8, qtypes=["color"])
    conflict = demo_world("test", 600, seed=9, qtypes=["conflict"])
    exist = demo_world("test", 400, seed=10, qtypes=["exist"])
    describe = demo_world("test", 400, seed=11, qtypes=["describe"])
    return evaluate(model, proc, mixed + colour + conflict + exist + describe)


def test_checkpoint_architecture(demo) -> None:
    model, proc = demo
    cfg = model.config
    assert type(model).__name__ == "LlavaForConditionalGeneration"
    assert type(proc).__name__ == "LlavaProcessor"
    assert type(proc.image_processor).__name__ == "SiglipImageProcessorPil"
    assert cfg.vision_feature_select_strategy == "full"
    assert cfg.vision_config.vision_use_head is False
    assert cfg.text_config.num_hidden_layers >= 12
    weights = CHECKPOINT_DIR / "model.safetensors"
    assert weights.stat().st_size <= 20 * 2**20
    n = sum(t.numel() for t in load_file(weights).values())
    assert n == sum(p.numel() for p in model.parameters())
    # the shipped tokenizer lowercases and splits punctuation off words
    ids = proc.tokenizer("What colour is the banana?", add_special_tokens=False)["input_ids"]
    assert proc.tokenizer.convert_ids_to_tokens(ids) == "what colour is the banana ?".split()


def test_greedy_answers_do_not_depend_on_batching(demo) -> None:
    model, proc = demo
    samples = demo_world("test", 45, seed=9)  # every question type, two-image conflicts included
    one = greedy_answers(model, proc, samples, batch_size=1)
    many = greedy_answers(model, proc, samples, batch_size=45)
    assert one == many


def test_accuracy_with_and_without_image(frame: pd.DataFrame) -> None:
    acc = summarize(frame)["accuracy"].set_index("group")
    dep = acc.loc["ALL vision-dependent"]
    ind = acc.loc["ALL vision-independent"]
    assert dep["with_image"] >= 0.7
    assert dep["without_image"] <= 0.35  # naming wordings leak: see the wording test
    assert ind["with_image"] >= 0.95 and ind["without_image"] >= 0.9
    for q in ("color", "identify", "count", "position", "digit", "conflict"):
        assert acc.loc[q, "with_image"] >= acc.loc[q, "chance"] + 0.35, q
    # without the image, a question that names nothing is a guess
    for q in ("color", "identify", "digit"):
        blind = frame[(frame["qtype"] == q) & frame["variant"].isin(["anchored", "terse"])]
        assert blind["correct_blind"].mean() <= 0.3, q


def test_language_prior_gap(frame: pd.DataFrame) -> None:
    col = frame[(frame["qtype"] == "color") & frame["entity"].isin(list(PRIOR_COLORS))]
    canonical = col[~col["counterfactual"].astype(bool)]
    cf = col[col["counterfactual"].astype(bool)]
    assert len(cf) >= 140
    gap = canonical["correct_image"].mean() - cf["correct_image"].mean()
    assert gap >= 0.1
    wrong = cf[cf["correct_image"] == 0]
    expected = wrong["entity"].map(PRIOR_COLORS)
    # errors on counterfactual objects mostly answer the canonical colour
    assert (wrong["pred_image"] == expected).mean() >= 0.6
    # the prior bites where the evidence is faint: a counterfactual colour is answered less often
    # than a colour of a kind without a prior at the same visibility
    control = frame[(frame["qtype"] == "color") & ~frame["entity"].isin(list(PRIOR_COLORS))]
    assert (
        cf.loc[cf["opacity"] < 0.25, "correct_image"].mean()
        <= control[control["opacity"] < 0.25]["correct_image"].mean() - 0.1
    )
    # blind, the plain wording answers the prior: right on canonical, wrong on counterfactual
    plain = col[col["variant"] == "plain"]
    assert plain[~plain["counterfactual"].astype(bool)]["correct_blind"].mean() >= 0.8
    assert plain[plain["counterfactual"].astype(bool)]["correct_blind"].mean() <= 0.2


def test_pope_hallucination_gap(frame: pd.DataFrame) -> None:
    """Absent kinds that co-occur with a present one are affirmed more often than random ones."""
    ex = frame[frame["qtype"] == "exist"]
    neg = ex[ex["answer"] == "no"]
    yes = {k: (g["pred_image"] == "yes").mean() for k, g in neg.groupby("pope_negative")}
    assert len(neg) >= 350 and set(yes) == {"random", "popular", "adversarial"}
    assert yes["adversarial"] >= yes["random"] + 0.15
    # the adversarial negatives are exactly the absent partners of present kinds
    for _, r in neg[neg["pope_negative"] == "adversarial"].iterrows():
        present = {o["kind"] for o in r["objects"]}
        assert r["entity"] not in present
        assert any(CO_OCCURRENCE.get(k) == r["entity"] for k in present)
    # present kinds are affirmed far more often than random absent ones (recall is weak: ~0.5)
    assert (ex[ex["answer"] == "yes"]["pred_image"] == "yes").mean() >= yes["random"] + 0.25


def _share(g: pd.DataFrame, source: str) -> float:
    """Share of conflict answers equal to ``source``'s label (ground truth from meta)."""
    col = {"perceptual": "image_label", "propositional": "propositional_label"}.get(
        source, "text_label"
    )
    return float((g["pred_image"] == g[col]).mean())


def test_conflict_bias_depends_on_form_and_order(frame: pd.DataFrame) -> None:
    con = frame[frame["qtype"] == "conflict"]
    agree = con[con["agreement"] == "all_agree"]
    assert (agree["pred_image"] == agree["text_label"]).mean() >= 0.9
    differ = con[con["agreement"] == "all_differ"]
    assert len(differ) >= 200
    follows_a_source = sum(_share(differ, s) for s in ("perceptual", "propositional", "text"))
    assert follows_a_source >= 0.75  # answers name one of the three labels
    # evidence form: a drawn object is followed more than its written label
    assert _share(differ, "perceptual") >= _share(differ, "propositional") + 0.2
    # order: a source placed last (next to the question) is followed more than placed first
    place = {p: differ["order"].str.split(",").str[i] for i, p in enumerate(("first", "2", "last"))}
    for source, margin in (("perceptual", 0.2), ("propositional", 0.1), ("text", 0.1)):
        last = differ[place["last"] == source]
        first = differ[place["first"] == source]
        assert _share(last, source) >= _share(first, source) + margin, source


def test_wording_drop_is_larger_when_the_wording_leaks_nothing(frame: pd.DataFrame) -> None:
    """No-image ablation: naming wordings keep accuracy without the image, the others lose it."""
    worded = frame[frame["variant"].isin(["plain", "polite", "anchored", "terse"])]
    worded = worded[worded["qtype"] != "exist"]
    # colour questions leak only for kinds with a prior
    worded = worded[(worded["qtype"] != "color") | worded["entity"].isin(list(PRIOR_COLORS))]

    def drop(g: pd.DataFrame) -> float:
        return g["correct_image"].mean() - g["correct_blind"].mean()

    # averaged over the six categories (each counts once, whatever its number of items)
    by_category = worded.groupby("qtype")
    mean_drop = {
        flag: np.mean(
            [drop(q[q["variant"].isin(["plain", "polite"]) == flag]) for _, q in by_category]
        )
        for flag in (True, False)
    }
    assert mean_drop[False] >= mean_drop[True] + 0.08
    for qtype in ("color", "identify", "count", "digit"):
        q = worded[worded["qtype"] == qtype]
        named = q["variant"].isin(["plain", "polite"])
        assert drop(q[~named]) >= drop(q[named]) + 0.05, qtype
    # in every category the naming wordings are answered better without the image
    for qtype, q in worded.groupby("qtype"):
        named = q["variant"].isin(["plain", "polite"])
        assert q[named]["correct_blind"].mean() >= q[~named]["correct_blind"].mean() + 0.05, qtype


def test_visual_reference_is_weaker_than_textual(frame: pd.DataFrame) -> None:
    for qtype in ("recall", "digit_arith", "letters"):
        q = frame[frame["qtype"] == qtype]
        text = q[q["setting"] == "text_only"]["correct_image"].mean()
        visual = q[q["setting"] == "visual"]
        assert text >= 0.9
        assert visual["correct_image"].mean() <= text - 0.2, qtype
        linked = visual[visual["linked"] == True]["correct_image"].mean()  # noqa: E712
        unlinked = visual[visual["linked"] == False]["correct_image"].mean()  # noqa: E712
        assert linked >= unlinked + 0.2, qtype


def test_long_answers_are_prior_driven_or_grounded(frame: pd.DataFrame) -> None:
    """Counterfactual descriptions (4-9 tokens) labelled from meta alone, checked by hand here."""
    desc = frame[(frame["qtype"] == "describe") & frame["counterfactual"].astype(bool)]
    desc = desc[desc["variant"].isin(["plain", "polite"])]
    prior, grounded = 0, 0
    for _, r in desc.iterrows():
        said = dict(re.findall(r"the (\w+) is (\w+)", r["pred_image"]))
        cf = [o for o in r["objects"] if o["kind"] in PRIOR_COLORS]
        cf = [o for o in cf if o["color"] != PRIOR_COLORS[o["kind"]]]
        if any(said.get(o["kind"]) == PRIOR_COLORS[o["kind"]] for o in cf):
            prior += 1
            assert r["generation"] == "prior_driven"
        elif r["pred_image"] == r["answer"]:
            grounded += 1
            assert r["generation"] == "grounded"
    assert len(desc) >= 40
    assert prior >= 0.1 * len(desc) and grounded >= 0.3 * len(desc)
    assert all(4 <= len(a.split()) <= 12 for a in desc["answer"])


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
    run = [sys.executable, "-m", "tools.demo.train", "--smoke", "--seed", "1", "--out", str(out)]
    subprocess.run(run, cwd=ROOT, check=True, timeout=60, capture_output=True)
    model = AutoModelForImageTextToText.from_pretrained(out)
    proc = AutoProcessor.from_pretrained(out)
    answers = greedy_answers(model, proc, demo_world("test", 4, seed=0), max_new_tokens=3)
    assert len(answers) == 4 and all(isinstance(a, str) for a in answers)
    md, csv = tmp_path / "table.md", tmp_path / "table.csv"
    cmd = [sys.executable, "-m", "tools.demo.evaluate", "--checkpoint", str(out), "--n", "40"]
    cmd += ["--markdown", str(md), "--csv", str(csv)]
    subprocess.run(cmd, cwd=ROOT, check=True, timeout=60, capture_output=True)
    assert "### accuracy" in md.read_text() and "### colour prior" in md.read_text()
    table = pd.read_csv(csv)
    details = {"accuracy", "prior", "wording", "pope", "conflict", "reference", "generation"}
    assert details <= set(table["table"])
    assert any(t.startswith("planted: ") for t in table["table"])
    assert np.isfinite(table["n"].dropna()).all()
