"""The recall study's multiple-choice conversion (the paper's Fig. 4 setup: four options, the first
generated token is the option label) against hand checks, and its run on a tiny model, where the
logit lens reads the label token."""

from __future__ import annotations

import re

import pytest

from interp.datasets import demo_world
from interp.errors import RecallError
from interp.studies import recall as rc
from interp.testing import shared_tiny_vlm
from probes.text import normalize_text

OPTION = re.compile(r"\(([A-D])\) (\S+)")


@pytest.fixture(scope="module")
def items():
    return rc.recall_items(demo_world("test", n=90, qtypes=["recall", "digit_arith", "letters"]))


def test_four_options_one_of_them_right_and_the_answer_its_label(items):
    mc = rc.multiple_choice(items, seed=3)
    assert len(mc) == len(items)
    family_answers = {}
    for item in items:
        family_answers.setdefault(item.family, set()).add(item.answer)
    places = set()
    for old, new in zip(items, mc):
        for question, base in ((new.visual, old.visual), (new.textual, old.textual)):
            assert question.startswith(base + " (A) ")
            found = OPTION.findall(question)
            assert [lab for lab, _ in found] == ["A", "B", "C", "D"]
            options = [opt for _, opt in found]
            assert len(set(options)) == 4  # distinct
            assert dict(found)[new.answer] == old.answer  # the answer is the right option's label
            assert set(options) <= family_answers[old.family]  # distractors of the same family
        assert new.meta["options"] == options and new.meta["correct_option"] == old.answer
        places.add(new.answer)
    assert places == {"A", "B", "C", "D"}  # the right option's place varies
    assert [m.visual for m in rc.multiple_choice(items, seed=3)] == [m.visual for m in mc]
    assert [m.visual for m in rc.multiple_choice(items, seed=4)] != [m.visual for m in mc]


def test_too_few_answers_or_bad_labels_are_refused(items):
    few = [i for i in items if i.family == "facts"][:2]
    with pytest.raises(RecallError, match="too few for 4 options"):
        rc.multiple_choice(few)
    with pytest.raises(RecallError, match="distinct option labels"):
        rc.multiple_choice(items, labels=("A", "A"))
    with pytest.raises(RecallError, match="must contain"):
        rc.multiple_choice(items, template="{question}")


def test_the_converted_run_scores_the_label_and_the_lens_reads_the_first_token(items):
    vlm = shared_tiny_vlm("llava")
    mc = rc.multiple_choice(items, labels=("1", "2", "3", "4"))[:6]
    run = rc.run_recall(vlm, mc, identify=None, max_new_tokens=2, progress_bar=False)
    frame = run.to_frame()
    assert (frame["answer"] == [m.answer for m in mc]).all()  # the labels are the targets
    for row, tok in zip(frame.itertuples(), run.first_token):
        said = str(row.answer_visual)
        assert bool(row.visual_exact) == (normalize_text(said) == normalize_text(row.answer))
        assert said.startswith(vlm.tokenizer.decode([int(tok)]).strip())
