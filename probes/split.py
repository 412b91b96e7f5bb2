"""Answer comparison: the agreement split D_VT / D_T and answer correctness.

- :func:`agreement_split` (Section 3.2 of the VIP/TVI paper): a sample is in D_VT when the
  greedy answer with the image differs from the one without it, D_T otherwise.
- :func:`is_correct`: exact match or two-way substring inclusion (the visual-reference paper's answer metric).

Both compare answers after :func:`normalize_answer` unless told otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np
from jaxtyping import Bool

from .errors import EmptyInputError

# Sentence-level punctuation only: closing brackets and quotes stay, so "(A)" keeps its shape.
_TRAILING = ".,!?;:…。，！？；：、"
_SPACES = re.compile(r"\s+")


def normalize_answer(text: str) -> str:
    """Normalise an answer for comparison: collapse whitespace runs to one space, strip,
    lower-case, then drop trailing sentence punctuation (``.,!?;:…`` and CJK ``。，！？；：、``).

    ``"  Yes.\\n"`` -> ``"yes"``; ``"The  Eiffel Tower!"`` -> ``"the eiffel tower"``.
    Idempotent: ``normalize_answer(normalize_answer(s)) == normalize_answer(s)``.
    """
    if not isinstance(text, str):
        raise TypeError(f"an answer must be a str, got {type(text).__name__}")
    out = _SPACES.sub(" ", text).strip().lower()
    while out and (out[-1] in _TRAILING or out[-1] == " "):
        out = out[:-1]
    return out


Normalizer = Callable[[str], str]


def agreement_split(
    answers_with: Sequence[str],
    answers_without: Sequence[str],
    normalize: Normalizer | None = normalize_answer,
) -> Bool[np.ndarray, " n"]:
    """``in_vt[i] = norm(answers_with[i]) != norm(answers_without[i])``: True = D_VT.

    ``answers_with`` are the greedy answers to (image, question), ``answers_without`` those to
    the blind prompt (no image). ``normalize=None`` compares the raw strings.

    Raises:
        ValueError: the two lists differ in length.
        EmptyInputError: no answers.
        TypeError: an answer is not a str.
    """
    if len(answers_with) != len(answers_without):
        raise ValueError(
            f"answers_with has {len(answers_with)} answers, answers_without has "
            f"{len(answers_without)}; give one of each per sample"
        )
    if len(answers_with) == 0:
        raise EmptyInputError("no answers were given to split")
    norm = normalize if normalize is not None else _check_str
    return np.array(
        [norm(a) != norm(b) for a, b in zip(answers_with, answers_without, strict=True)],
        dtype=bool,
    )


def _check_str(text: str) -> str:
    if not isinstance(text, str):
        raise TypeError(f"an answer must be a str, got {type(text).__name__}")
    return text


def is_correct(
    pred: str,
    ref: str,
    mode: Literal["exact", "inclusion"] = "exact",
    normalize: Normalizer | None = normalize_answer,
) -> bool:
    """Whether a predicted answer matches the reference, after ``normalize``.

    ``mode="exact"``: ``p == r``. ``mode="inclusion"``: two-way substring inclusion
    ``r in p or p in r``. An empty prediction or reference (after normalisation) is never
    correct, since the empty string is a substring of everything.

    Raises:
        ValueError: unknown ``mode``.
    """
    if mode not in ("exact", "inclusion"):
        raise ValueError(f"mode must be 'exact' or 'inclusion', got {mode!r}")
    norm = normalize if normalize is not None else _check_str
    p, r = norm(pred), norm(ref)
    if not p or not r:
        return False
    if mode == "exact":
        return p == r
    return r in p or p in r


__all__ = ["agreement_split", "is_correct", "normalize_answer"]
