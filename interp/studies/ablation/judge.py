"""The judge: ``judge(prediction, sample) -> bool``, replaceable (the paper uses an LLM judge);
the default is the normalised two-way inclusion match of :mod:`probes.text`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from interp.samples import Sample
from probes.text import exact_match, inclusion_match

from .errors import JudgeError

Judge = Callable[[str, Sample], bool]


def make_judge(mode: str = "inclusion", *, whole_words: bool = True) -> Judge:
    """A judge ``judge(prediction, sample) -> bool`` against ``sample.answer``.

    - ``"exact"``: :func:`probes.text.exact_match` — ``norm(p) = norm(a)``;
    - ``"inclusion"`` (default): exact **or** two-way inclusion — ``norm(p) ⊂ norm(a)`` or
      ``norm(a) ⊂ norm(p)`` (:func:`probes.text.inclusion_match`; an exact match is included), on
      whole words unless ``whole_words=False`` (``"2"`` does not match inside ``"12"``).

    ``norm`` is :func:`probes.text.normalize_text` (lower case, no punctuation or articles). Any
    function of the same signature — an LLM judge — can be passed instead.
    """
    if mode == "exact":

        def judge(prediction: str, sample: Sample) -> bool:
            """Normalised exact match of the prediction with the sample's answer."""
            return exact_match(prediction, str(sample.answer))

    elif mode == "inclusion":

        def judge(prediction: str, sample: Sample) -> bool:
            """Normalised exact match, or two-way inclusion of prediction and answer."""
            answer = str(sample.answer)
            return exact_match(prediction, answer) or inclusion_match(
                prediction, answer, whole_words=whole_words
            )

    else:
        raise JudgeError(f"unknown judge mode {mode!r}; use 'exact' or 'inclusion'")
    judge.__name__ = f"{mode}_match" + ("" if whole_words or mode == "exact" else "_chars")
    return judge


#: The default judge: normalised exact match or two-way inclusion of the reference answer.
default_judge: Judge = make_judge("inclusion")
#: Normalised exact match only.
exact_judge: Judge = make_judge("exact")


def _judge_name(judge: Judge) -> str:
    return getattr(judge, "__name__", type(judge).__name__)


def _check_judge(judge: Any) -> Judge:
    if not callable(judge):
        raise JudgeError(
            f"judge must be a function judge(prediction, sample) -> bool, got {type(judge).__name__}"
        )
    return judge


def _judged(judge: Judge, prediction: str, sample: Sample) -> bool:
    verdict = judge(prediction, sample)
    if not isinstance(verdict, (bool, np.bool_)):
        raise JudgeError(
            f"the judge {_judge_name(judge)} returned {verdict!r} ({type(verdict).__name__}) for "
            f"sample {sample.id!r}; a judge returns True or False"
        )
    return bool(verdict)


__all__ = ["Judge", "default_judge", "exact_judge", "make_judge"]
