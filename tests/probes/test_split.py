"""Answer normalisation, the agreement split and correctness."""

from __future__ import annotations

import numpy as np
import pytest

from interp.errors import EmptyInputError
from interp.testing import refused
from probes import agreement_split, is_correct, normalize_answer


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("  Yes.\n", "yes"),
        ("The  Eiffel\tTower!", "the eiffel tower"),
        ("B) banana ?!", "b) banana"),
        ("(A)", "(a)"),
        ("是。", "是"),
        ("...", ""),
        ("3.5", "3.5"),
    ],
)
def test_normalize_answer(raw: str, expected: str) -> None:
    assert normalize_answer(raw) == expected
    assert normalize_answer(expected) == expected  # idempotent


def test_agreement_split_marks_changed_answers() -> None:
    with_image = ["Yes.", "Red", "two", "A cat", "No"]
    without = ["yes", "blue", "Two!", "a  cat.", "No "]
    np.testing.assert_array_equal(
        agreement_split(with_image, without), [False, True, False, False, False]
    )
    # Raw comparison: only identical strings agree.
    np.testing.assert_array_equal(
        agreement_split(with_image, without, normalize=None), [True, True, True, True, True]
    )
    custom = agreement_split(["1", "2"], ["one", "2"], normalize=lambda s: s.replace("one", "1"))
    assert custom.dtype == bool and custom.tolist() == [False, False]


def test_agreement_split_errors() -> None:
    with pytest.raises(ValueError, match="one of each per sample"):
        agreement_split(["a", "b"], ["a"])
    with pytest.raises(EmptyInputError, match="no answers"):
        agreement_split([], [])
    with pytest.raises(TypeError, match="str"):
        agreement_split(["a", None], ["a", "b"])  # type: ignore[list-item]


def test_is_correct_exact_and_inclusion() -> None:
    assert is_correct("Paris.", "paris")
    assert not is_correct("The capital is Paris", "Paris")
    assert is_correct("The capital is Paris", "Paris", mode="inclusion")  # r in a
    assert is_correct("Paris", "Paris, France", mode="inclusion")  # a in r
    assert not is_correct("Lyon", "Paris", mode="inclusion")
    # The empty answer is a substring of everything but is never correct.
    assert not is_correct("", "Paris", mode="inclusion")
    assert not is_correct("...", "Paris", mode="inclusion")
    assert not is_correct("Paris", "", mode="exact")
    assert not is_correct("PARIS", "paris", normalize=None)
    with refused(ValueError, match="'exact' or 'inclusion'"):
        is_correct("a", "a", mode="fuzzy")  # type: ignore[arg-type]
