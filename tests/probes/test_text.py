"""probes.text: BLEU against sacrebleu called directly; the match metrics on worked cases."""

from __future__ import annotations

import pytest
import sacrebleu

from probes.errors import EmptyInputError, ProbeError
from probes.text import (
    bleu,
    corpus_bleu,
    exact_match,
    inclusion_match,
    normalize_text,
    score_answers,
)

PAIRS = [
    ("The Eiffel Tower", "Eiffel Tower"),
    ("it was built in 1889 for the world fair", "It was built in 1889."),
    ("a red apple", "green pear"),
    ("", "Paris"),
    ("Paris, France", "Paris"),
]


@pytest.mark.parametrize(("pred", "ref"), PAIRS)
def test_bleu_is_sacrebleus_sentence_bleu(pred, ref):
    assert bleu(pred, ref) == sacrebleu.sentence_bleu(pred, [ref], lowercase=True).score
    assert bleu(pred, ref, lowercase=False) == sacrebleu.sentence_bleu(pred, [ref]).score


def test_bleu_with_several_references():
    refs = ["the big cat sat", "a large cat was sitting"]
    assert (
        bleu("a big cat sat", refs)
        == sacrebleu.sentence_bleu("a big cat sat", refs, lowercase=True).score
    )


def test_corpus_bleu_is_sacrebleus_corpus_bleu():
    preds = ["the cat sat on the mat today", "a dog ran in the big park"]
    refs = [["The cat sat on the mat", "cat sat on a mat today"], ["a dog ran in the park"]]
    expected = sacrebleu.corpus_bleu(
        preds,
        [["The cat sat on the mat", "a dog ran in the park"], ["cat sat on a mat today", None]],
        lowercase=True,
    ).score
    assert corpus_bleu(preds, refs) == pytest.approx(expected)
    assert corpus_bleu(preds, [r[0] for r in refs]) == pytest.approx(
        sacrebleu.corpus_bleu(preds, [[r[0] for r in refs]], lowercase=True).score
    )
    with pytest.raises(ProbeError, match="2 predictions but 1 references"):
        corpus_bleu(preds, refs[:1])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("  The  Eiffel Tower!\n", "eiffel tower"),
        ("U.S.", "us"),
        ("(A)", "a"),  # an option letter is not dropped as an article
        ("an apple, a pear", "apple pear"),
        ("Theatre", "theatre"),  # articles only as whole words
    ],
)
def test_normalize_text(text, expected):
    assert normalize_text(text) == expected


@pytest.mark.parametrize(
    ("pred", "ref", "expected"),
    [
        ("The Eiffel Tower.", "eiffel tower", True),
        ("Paris", "Paris, France", False),
        ("(A)", "a", True),
        ("U.S.", "US", True),
        ("", "", False),
        ("the", "a", False),
        ("Lyon", ["Paris", "lyon"], True),
    ],
)
def test_exact_match(pred, ref, expected):
    assert exact_match(pred, ref) is expected


@pytest.mark.parametrize(
    ("pred", "ref", "expected"),
    [
        ("paris", "Paris, France", True),  # prediction inside the reference
        ("It is in Paris, France.", "paris", True),  # reference inside the prediction
        ("London", "Paris", False),
        ("", "Paris", False),  # the empty string is never a match
        ("Paris", "...", False),  # nor one that normalises to empty
        ("cat", "cathedral", True),  # the paper's character-level inclusion
        ("Rome", ["Paris", "the city of Rome"], True),
    ],
)
def test_inclusion_match(pred, ref, expected):
    assert inclusion_match(pred, ref) is expected


def test_inclusion_on_whole_words():
    assert not inclusion_match("cat", "cathedral", whole_words=True)
    assert inclusion_match("cat", "the black cat", whole_words=True)


def test_score_answers_table():
    frame = score_answers(["The Eiffel Tower", "Rome"], ["eiffel tower", "Paris"])
    assert list(frame.columns) == ["exact", "inclusion", "bleu"]
    assert frame["exact"].tolist() == [True, False]
    assert frame["inclusion"].tolist() == [True, False]
    assert frame.loc[1, "bleu"] == sacrebleu.sentence_bleu("Rome", ["Paris"], lowercase=True).score


def test_bad_inputs():
    with pytest.raises(TypeError, match="str"):
        exact_match(3, "3")  # type: ignore[arg-type]
    with pytest.raises(EmptyInputError):
        inclusion_match("a", [])
    with pytest.raises(EmptyInputError):
        corpus_bleu([], [])
