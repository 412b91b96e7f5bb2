"""Question parts of a condition: ``no_question``, ``ask:<text>``, ``instruct:<text>`` (see
:mod:`interp.conditions`), and :func:`register_question_condition` for new ones."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .registry import (
    QUESTION_CONDITIONS,
    QuestionCondition,
    QuestionFn,
    register_part,
)


def register_question_condition(
    name: str,
    question: QuestionFn | None = None,
    *,
    check: Callable[[str | None], Any] | None = None,
    usage: str | None = None,
    overwrite: bool = False,
) -> Any:
    """Register a question part ``name[:arg]``; usable as a decorator of
    ``question(text, arg, sample) -> new text`` (image slots in the new text place the images)."""

    return register_part(
        QUESTION_CONDITIONS, QuestionCondition, "question", name, question, check, usage, overwrite
    )


register_question_condition("no_question", lambda text, arg, sample: "", usage="no_question")
register_question_condition(
    "ask", lambda text, arg, sample: str(arg), check=str, usage="ask:<text>"
)
register_question_condition(
    "instruct",
    lambda text, arg, sample: f"{str(arg).strip()} {text.lstrip()}".strip(),
    check=str,
    usage="instruct:<text>",
)


__all__ = ["register_question_condition"]
