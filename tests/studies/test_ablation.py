"""The no-image ablation study (``interp ablation``, alias ``ablate``).

Every number is checked against an independent reference: answers against plain
``interp.generate`` calls (the mismatched image against a hand-built swap), accuracies, drops and
agreements against plain-Python counts over those answers, bootstrap intervals against a hand
resample with the same seed, the text-only baseline against values worked out by hand on a
hand-made dataset, in-context prompts against hand-written ones. Bad input is refused with a typed
error before any generation.
"""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest

import interp
import interp.generation
from interp.cli import main
from interp.datasets import VARIANTS, demo_world
from interp.errors import ConditionError, InterpError, TooFewSamplesError
from interp.studies.ablation import (
    DEMO_VARIANT_ORDER,
    PAPER_VARIANTS,
    ContextLengthWarning,
    ImageShownError,
    JudgeError,
    MissingLabelError,
    TooFewExamplesError,
    UnknownVariantError,
    exact_judge,
    in_context,
    make_judge,
    no_image_ablation,
    plot_ablation,
    plot_categories,
    plot_in_context,
    plot_main_table,
    select_examples,
    select_items,
    shot_sample,
    text_only_baseline,
)
from interp.testing import one_error_line, random_image, refused

N_BOOT = 200
CONDITIONS = ("blind", "null:black", "swap:next")


@pytest.fixture(scope="module")
def demo():
    return interp.load("demo")


@pytest.fixture(scope="module")
def worded():
    """12 images (6 colour, 6 identify), each in the four wordings: 48 items."""
    return demo_world("test", n=48, seed=3, qtypes=["color", "identify"])


@pytest.fixture(scope="module")
def ablation(demo, worded):
    return no_image_ablation(
        demo, worded, CONDITIONS, judge=exact_judge, n_boot=N_BOOT, seed=7, progress_bar=False
    )


@pytest.fixture
def no_compute(monkeypatch):
    """Fail the test if anything is generated: the error must come first."""

    def refuse(*args, **kwargs):
        raise AssertionError("generation started: the error should have been found up front")

    monkeypatch.setattr(interp.generation, "generate_batch", refuse)


def _same(a: str, b: str) -> bool:
    """The hand judge: equal words, case folded (the demo answers have no punctuation)."""
    return a.lower().split() == b.lower().split()


def _in_paper_order(samples):
    return [s for v in ("plain", "polite", "terse", "anchored") for s in samples if s.meta["variant"] == v]  # fmt: skip


# -- the variant mapping ---------------------------------------------------------------------------


def test_every_demo_wording_stands_for_one_paper_variant_leakiest_first():
    assert DEMO_VARIANT_ORDER == ("plain", "polite", "terse", "anchored")
    assert sorted(v.demo for v in PAPER_VARIANTS) == sorted(VARIANTS)
    assert PAPER_VARIANTS[-1].paper == "vision-anchored" and PAPER_VARIANTS[-1].demo == "anchored"
    # the demo wordings that leak (name the object or offer the options) come first
    for s in demo_world("test", n=16, qtypes=["identify", "count"]):
        assert s.meta["leaks"] == (DEMO_VARIANT_ORDER.index(s.meta["variant"]) < 2)


def test_custom_variant_labels_keys_and_order(worded):
    relabel = {"plain": "A", "polite": "B", "terse": "C", "anchored": "D"}
    samples = [
        replace(s, meta={**s.meta, "wording": relabel[s.meta["variant"]]}, image=s.image)
        for s in worded
    ]
    items = select_items(samples, ["D", "A"], variant_key="wording")
    assert items.order == ("D", "A")
    assert items.variants == ["D"] * 12 + ["A"] * 12  # other variants left out, D first
    expected = [s.id for s in worded if s.meta["variant"] == "anchored"]
    assert [s.id for s in items.samples[:12]] == expected  # given order kept within a variant
    # default: the demo wordings in the paper's order; other labels in order of appearance
    assert select_items(worded).order == DEMO_VARIANT_ORDER
    # (the demo world emits plain, polite, anchored, terse)
    assert select_items(samples, variant_key="wording").order == ("A", "B", "D", "C")


# -- answers and accuracy against independent references ----------------------------------------


def test_answers_equal_plain_generate_calls_and_swap_shows_the_next_same_wording_image(
    demo, worded, ablation
):
    ordered = _in_paper_order(worded)
    assert ablation.baseline["sample_id"].tolist() == [s.id for s in ordered]
    for cond in ("full", "blind", "null:black"):
        gen = interp.generate(demo, ordered, cond, max_new_tokens=12, progress_bar=False)
        got = ablation.answers[ablation.answers["condition"] == cond]
        assert got["answer"].tolist() == gen.texts, cond
    # swap:next by hand: each item shown the image of the next item in that order (cyclic), which
    # is the next image of the same wording, never its own
    swapped = [replace(s, image=ordered[(i + 1) % len(ordered)].image) for i, s in enumerate(ordered)]  # fmt: skip
    for s, t in zip(ordered, swapped):
        assert s.image is not t.image
    gen = interp.generate(demo, swapped, "full", max_new_tokens=12, progress_bar=False)
    got = ablation.answers[ablation.answers["condition"] == "swap:next"]
    assert got["answer"].tolist() == gen.texts


def test_accuracy_drop_and_agreement_equal_a_hand_count(worded, ablation):
    ordered = _in_paper_order(worded)
    by_cond = {
        c: dict(zip(part["sample_id"], part["answer"]))
        for c, part in ablation.answers.groupby("condition")
    }
    frame = ablation.to_frame()
    checked = 0
    for variant in (*DEMO_VARIANT_ORDER, "all"):
        for category in ("attribute", "recognition", "all"):
            cell = [
                s
                for s in ordered
                if variant in ("all", s.meta["variant"]) and category in ("all", s.meta["category"])
            ]
            right_full = 0
            for s in cell:
                if _same(by_cond["full"][s.id], s.answer):
                    right_full += 1
            for cond in CONDITIONS:
                right, same = 0, 0
                for s in cell:
                    if _same(by_cond[cond][s.id], s.answer):
                        right += 1
                    if _same(by_cond[cond][s.id], by_cond["full"][s.id]):
                        same += 1
                row = frame[
                    (frame["variant"] == variant)
                    & (frame["category"] == category)
                    & (frame["condition"] == cond)
                ].iloc[0]
                assert row["n"] == len(cell)
                assert row["with_image"] == pytest.approx(right_full / len(cell))
                assert row["without"] == pytest.approx(right / len(cell))
                assert row["drop"] == pytest.approx((right_full - right) / len(cell))
                assert row["agreement"] == pytest.approx(same / len(cell))
                baseline = dict(zip(ablation.baseline["sample_id"], ablation.baseline["text_only"]))
                total = 0.0
                for s in cell:
                    total += baseline[s.id]
                assert row["text_only"] == pytest.approx(total / len(cell))
                checked += 1
    assert checked == 5 * 3 * len(CONDITIONS)
    table = ablation.main_table()
    assert list(table.index) == [
        "plain (question-guided)",
        "polite (sub-question-guided)",
        "terse (multi-signal)",
        "anchored (vision-anchored)",
        "all",
    ]
    assert list(table.columns) == ["n", "with image", *CONDITIONS, "text-only baseline"]


def test_bootstrap_intervals_equal_a_hand_resample_with_the_same_seed(ablation):
    frame = ablation.to_frame()
    answers = ablation.answers
    for variant, category, cond in [("plain", "all", "blind"), ("all", "recognition", "swap:next")]:
        rows = ablation.baseline
        keep = np.ones(len(rows), bool)
        if variant != "all":
            keep &= (rows["variant"] == variant).to_numpy()
        if category != "all":
            keep &= (rows["category"] == category).to_numpy()
        full = answers[answers["condition"] == "full"]["correct"].to_numpy(float)[keep]
        without = answers[answers["condition"] == cond]["correct"].to_numpy(float)[keep]
        rng = np.random.default_rng(7)
        n = len(full)
        acc, drop = [], []
        for _ in range(N_BOOT):
            idx = rng.integers(0, n, size=n)
            acc.append(without[idx].mean())
        rng = np.random.default_rng(7)
        for _ in range(N_BOOT):
            idx = rng.integers(0, n, size=n)
            drop.append(full[idx].mean() - without[idx].mean())
        row = frame[
            (frame["variant"] == variant)
            & (frame["category"] == category)
            & (frame["condition"] == cond)
        ].iloc[0]
        assert (row["without_low"], row["without_high"]) == pytest.approx(
            tuple(np.percentile(acc, [2.5, 97.5]))
        )
        assert (row["drop_low"], row["drop_high"]) == pytest.approx(
            tuple(np.percentile(drop, [2.5, 97.5]))
        )


# -- the judge -------------------------------------------------------------------------------------


def test_default_judge_is_normalised_exact_or_whole_word_inclusion():
    s = interp.Sample("q", random_image(8, 8, 0), "top left", id="x")
    default, exact = make_judge(), exact_judge
    assert default("Top left.", s) and exact("Top left.", s)
    assert default("the top left", s) and exact("the top left", s)  # articles dropped
    assert default("top", s) and not exact("top", s)  # two-way inclusion, whole words
    assert default("it is at the top left corner", s) and not exact("it is at the top left", s)
    assert not default("to", s)  # not inside a word
    assert make_judge(whole_words=False)("to", s)  # character-level inclusion
    assert not default("", s)
    with pytest.raises(JudgeError):
        make_judge("llm")


def test_a_replacement_judge_is_the_one_used(demo, worded, ablation):
    calls = []

    def first_letter(prediction: str, sample: interp.Sample) -> bool:
        calls.append(sample.id)
        return prediction[:1] == str(sample.answer)[:1]

    first_letter.__name__ = "first_letter"
    mine = no_image_ablation(
        demo, worded[:24], ("blind",), judge=first_letter, n_boot=N_BOOT, progress_bar=False
    )
    assert mine.judge == "first_letter"
    counts = {sid: calls.count(sid) for sid in {s.id for s in worded[:24]}}
    assert min(counts.values()) >= 2  # every item judged with and without the image
    answers = mine.answers
    for cond in ("full", "blind"):
        part = answers[answers["condition"] == cond]
        by_id = {s.id: s for s in worded}
        hand = [a[:1] == by_id[i].answer[:1] for a, i in zip(part["answer"], part["sample_id"])]
        assert part["correct"].tolist() == hand
    # rescoring without generating: a judge that accepts everything gives 1 everywhere
    lenient = ablation.with_judge(lambda p, s: True)
    frame = lenient.to_frame()
    assert (frame["with_image"] == 1).all() and (frame["without"] == 1).all()
    assert (frame["text_only"] == 1).all()
    assert lenient.answers["answer"].tolist() == ablation.answers["answer"].tolist()
    with pytest.raises(JudgeError, match="returned 'yes'"):
        ablation.with_judge(lambda p, s: "yes")


# -- the text-only baseline ------------------------------------------------------------------------


def _item(sid, group, variant, question, answer, options=None, category="attr"):
    meta = {"group": group, "variant": variant, "category": category, "options": options}
    return interp.Sample(question, random_image(8, 8, hash(group) % 1000), answer, sid, meta)


def test_text_only_baseline_worked_out_by_hand():
    q_named, q_anchored = "what colour is the banana ?", "what colour is the object ?"
    samples = [
        # named wording, same text for the four images: yellow, yellow, yellow, red
        _item("n1", "g1", "named", q_named, "yellow"),
        _item("n2", "g2", "named", q_named, "yellow"),
        _item("n3", "g3", "named", q_named, "yellow"),
        _item("n4", "g4", "named", q_named, "red"),
        # anchored wording with the same answers (the other wording of each image)
        _item("a1", "g1", "anchored", q_anchored, "yellow"),
        _item("a2", "g2", "anchored", q_anchored, "yellow"),
        _item("a3", "g3", "anchored", q_anchored, "yellow"),
        _item("a4", "g4", "anchored", q_anchored, "red"),
        # choice wordings, texts no other item shares: fall back to the variant's answers
        _item("c1", "g1", "choice", "yellow or blue ?", "yellow", ["yellow", "blue"]),
        _item("c2", "g2", "choice", "green or pink ?", "pink", ["green", "pink"]),
        _item("c4", "g4", "choice", "red or white ?", "red", ["red", "white"]),
    ]
    items = select_items(samples, ["named", "anchored", "choice"])
    base = dict(zip([s.id for s in items.samples], text_only_baseline(items)))
    # n1: neighbours n2, n3 (yellow) and n4 (red) -> yellow -> right; n4: yellow x3 -> wrong
    assert [base[f"n{i}"] for i in range(1, 5)] == [1.0, 1.0, 1.0, 0.0]
    assert [base[f"a{i}"] for i in range(1, 5)] == [1.0, 1.0, 1.0, 0.0]
    # c1: other choice answers pink, red: neither option seen -> tie yellow/blue -> 1/2
    assert base["c1"] == 0.5
    # c2: others yellow, red -> green/pink tie -> 1/2; c4: others yellow, pink -> red/white tie
    assert base["c2"] == 0.5 and base["c4"] == 0.5
    # without group labels the images still tell the wordings of one image apart
    no_groups = select_items(samples, ["named"], group_key=None)
    assert list(text_only_baseline(no_groups)) == [1.0, 1.0, 1.0, 0.0]


# -- in-context examples ---------------------------------------------------------------------------


def test_examples_are_other_images_of_the_same_variant_and_category(worded):
    items = select_items(worded)
    two = select_examples(items, 2, seed=1)
    one = select_examples(items, 1, seed=1)
    other = select_examples(items, 2, "mismatched", seed=1)
    for i, s in enumerate(items.samples):
        assert len(set(two[i])) == 2 and one[i] == two[i][:1]  # k = 1 is a prefix of k = 2
        for j in two[i]:
            e = items.samples[j]
            assert e.id != s.id and e.meta["group"] != s.meta["group"]
            assert e.meta["variant"] == s.meta["variant"]
            assert e.meta["category"] == s.meta["category"]
        for j in other[i]:
            e = items.samples[j]
            assert e.meta["group"] != s.meta["group"] and e.meta["variant"] != s.meta["variant"]
    assert select_examples(items, 2, seed=1) == two  # seeded


def test_in_context_prompts_and_accuracy_by_hand(demo, worded):
    small = worded[:24]  # 3 colour and 3 identify images
    result = in_context(
        demo, small, (0, 2), ("full", "blind"), n_boot=N_BOOT, seed=2, progress_bar=False
    )
    by_id = {s.id: s for s in small}
    ordered = _in_paper_order(small)
    prompts = []
    for s in ordered:
        shots = [by_id[e] for e in result.examples["matched"][s.id]]
        text = " ".join(f"{e.question} {e.answer} ." for e in shots) + " " + s.question
        assert shot_sample(s, shots).question == text
        prompts.append(replace(s, question=text))
    for cond in ("full", "blind"):
        gen = interp.generate(demo, prompts, cond, max_new_tokens=12, progress_bar=False)
        a = result.answers
        got = a[(a["k"] == 2) & (a["condition"] == cond)]
        assert got["answer"].tolist() == gen.texts
        zero = a[(a["k"] == 0) & (a["condition"] == cond)]
        right2 = sum(_same(t, s.answer) for t, s in zip(gen.texts, ordered))
        right0 = sum(_same(t, s.answer) for t, s in zip(zero["answer"], ordered))
        frame = result.to_frame()
        row = frame[(frame["variant"] == "all") & (frame["condition"] == cond) & (frame["k"] == 2)]
        assert row["accuracy"].item() == pytest.approx(right2 / len(ordered))
        assert row["gain"].item() == pytest.approx((right2 - right0) / len(ordered))
        if cond == "full":
            full0 = right0
        else:  # the share of the no-image drop that the examples win back
            drop = (full0 - right0) / len(ordered)
            assert row["recovered"].item() == pytest.approx((right2 - right0) / len(ordered) / drop)


# -- bad input: typed errors before any compute ----------------------------------------------------


def test_bad_input_is_refused_before_any_generation(demo, worded, no_compute):
    def run(samples=worded, conditions=("blind",), **kw):
        return no_image_ablation(demo, samples, conditions, progress_bar=False, **kw)

    cases = [
        (dict(variants=["plain", "formal"]), UnknownVariantError, r"\['formal'\].*holds \["),
        (dict(variants=["plain", "plain"]), UnknownVariantError, "listed twice"),
        (dict(variant_names={"formal": "x"}), UnknownVariantError, "formal"),
        (dict(variant_key="wording"), MissingLabelError, r"48 of 48 items have no variant"),
        (dict(conditions=("full",)), ImageShownError, "'full' shows the image"),
        (dict(conditions=("distort:500",)), ImageShownError, "distort keeps the real image"),
        (dict(conditions=("blind+no_question",)), ConditionError, "changes the question"),
        (dict(conditions=("blind", "blind")), ConditionError, "listed twice"),
        (dict(conditions=("nope",)), ConditionError, "unknown condition part"),
        (dict(n_boot=0), InterpError, "n_boot"),
    ]
    for kw, error, message in cases:
        with pytest.raises(error, match=message):
            run(**kw)
    with refused(JudgeError, match="judge must be a function"):
        run(judge="exact")
    mixed = demo_world("test", n=40, qtypes=["color", "arith"])
    with pytest.raises(MissingLabelError, match=r"no variant label meta\['variant'\]"):
        run(mixed)
    no_category = [replace(s, meta={**s.meta, "category": None}) for s in worded]
    with pytest.raises(MissingLabelError, match="no category label"):
        run(no_category)
    no_answer = [replace(worded[0], answer=None), *worded[1:]]
    with pytest.raises(MissingLabelError, match="no reference answer"):
        run(no_answer)
    no_image = [replace(worded[0], image=None), *worded[1:]]
    with pytest.raises(MissingLabelError, match="no image"):
        run(no_image)
    one_picture = [replace(s, image=worded[0].image) for s in worded]
    with pytest.raises(ImageShownError, match=r"'swap:next' still shows 48 of 48 items"):
        run(one_picture, ("swap:next",))
    # two pictures of one group (two crops of one image, say): swapping within it is refused
    crops = [
        interp.Sample("q ?", random_image(8, 8, 10 * g + k), "a", f"{g}{k}",
                      {"variant": "v", "category": "c", "group": str(g)})
        for g in range(3) for k in range(2)
    ]  # fmt: skip
    with pytest.raises(ImageShownError, match=r"'swap:next' still shows 3 of 6 items"):
        run(crops, ("swap:next",))
    with pytest.raises(ImageShownError, match=r"'swap:00' still shows 2 of 6 items"):
        run(crops, ("swap:00",))  # item 00 itself and 01, the other picture of its group
    with pytest.raises(TooFewExamplesError, match=r"has 5 eligible matched .* k = 6"):
        in_context(demo, worded, (6,), progress_bar=False)
    with pytest.raises(ImageShownError, match="distort"):
        in_context(demo, worded, (1,), ("full", "distort:900"), progress_bar=False)
    with pytest.raises(ConditionError, match="changes the question"):
        in_context(demo, worded, (1,), ("full", "full+no_question"), progress_bar=False)
    # four two-object descriptions before a description overflow the demo model's 96 positions
    describe = demo_world("test", n=40, qtypes=["describe"])
    with pytest.warns(ContextLengthWarning, match="more than the model's 96"):
        with pytest.raises(AssertionError, match="generation started"):
            in_context(demo, describe, (4,), ("full",), progress_bar=False)
    for err in (UnknownVariantError, MissingLabelError, TooFewExamplesError, ImageShownError):
        assert issubclass(err, InterpError) and issubclass(err, ValueError)
    assert issubclass(TooFewExamplesError, TooFewSamplesError)


# -- figures ---------------------------------------------------------------------------------------


def test_figures_are_returned(ablation, demo, worded):
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    figures = [
        plot_main_table(ablation),
        plot_ablation(ablation),
        plot_categories(ablation),
        plot_categories(ablation, ["blind"]),
    ]
    assert all(isinstance(f, Figure) for f in figures)
    assert sum(ax.has_data() for ax in figures[2].axes) == 2  # one panel per category
    shots = in_context(demo, worded[:16], (0, 1), ("full",), n_boot=20, progress_bar=False)
    assert isinstance(plot_in_context(shots), Figure)
    with pytest.raises(ConditionError):
        plot_categories(ablation, ["null:white"])


# -- another architecture --------------------------------------------------------------------------


def test_runs_on_a_tiny_model_that_cannot_batch_image_and_blind_rows():
    from interp.testing import tiny_vlm

    vlm = tiny_vlm("mllama")
    samples = [
        interp.Sample(
            "what color is the banana?",
            random_image(32, 32, g),
            "yellow",
            f"{g}-{v}",
            {"variant": v, "category": "attr", "group": str(g)},
        )
        for g in range(3)
        for v in ("named", "anchored")
    ]
    result = no_image_ablation(vlm, samples, ("blind", "null:white"), max_new_tokens=3, n_boot=20, progress_bar=False)  # fmt: skip
    assert len(result.answers) == 3 * len(samples)
    gen = interp.generate(vlm, [s for s in samples if s.meta["variant"] == "named"], "blind", max_new_tokens=3, progress_bar=False)  # fmt: skip
    got = result.answers[(result.answers["condition"] == "blind") & (result.answers["variant"] == "named")]  # fmt: skip
    assert got["answer"].tolist() == gen.texts


# -- the command -----------------------------------------------------------------------------------


def test_command_writes_the_tables_and_figures(tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["ablate", "--model", "demo", "--data", "demo:color,identify", "--n", "24"]
    argv += [
        "--out",
        str(out),
        "--no-progress",
        "--n-boot",
        "50",
        "--shots",
        "1",
        "--conditions",
        "blind,swap:next",
    ]
    assert main(argv) == 0
    names = {p.name for p in out.iterdir()}
    for name in ("answers.csv", "table.csv", "main_table.csv", "main_table.png", "categories.png"):
        assert name in names
    assert {"in_context.csv", "in_context.png", "summary.txt", "store"} <= names
    text = (out / "summary.txt").read_text()
    assert "plain (question-guided)" in text and "in-context examples matched" in text
    main_table = (out / "main_table.csv").read_text().splitlines()
    assert main_table[0] == "variant,n,with image,blind,swap:next,text-only baseline"
    assert len(main_table) == 1 + 5


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--variants", "plain,formal"], r"UnknownVariantError: unknown variant name\(s\) \['formal'\]"),
        (["--conditions", "full"], r"ImageShownError: condition 'full' shows the image"),
        (["--conditions", "blind,nope"], r"ConditionError: unknown condition part 'nope'"),
        (["--shots", "9"], r"TooFewExamplesError: sample '.*' has \d+ eligible matched"),
        (["--shots", "0"], r"UsageError: --shots: each k must be >= 1"),
        (["--data", "demo:arith"], r"MissingLabelError: \d+ of \d+ items have no variant label"),
        (["--variant-key", "wording"], r"MissingLabelError: .*no variant label meta\['wording'\]"),
        (["--shard", "0/2"], r"UsageError: interp ablation runs in one process; drop --shard"),
        (["--ci", "1.5"], r"UsageError: --ci must lie in \(0, 1\), got 1\.5"),
    ],
)  # fmt: skip
def test_command_errors_are_one_line_before_the_model_loads(
    extra,
    message,
    tmp_path,
    capsys,
    no_model,
):
    out = tmp_path / "out"
    argv = ["ablate", "--model", "demo", "--data", "demo", "--n", "24", "--out", str(out), *extra]
    capsys.readouterr()
    assert main(argv) == 2
    line = one_error_line(capsys.readouterr().err)
    assert re.search(message, line), line
    assert not out.exists()
