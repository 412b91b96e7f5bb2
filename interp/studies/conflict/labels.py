"""Labelling responses (the paper's Sec. 4.2): which sources' labels a response matches.

The paper labels free-form responses with an LLM judge. Here a **judge** is any
``judge(response, labels, sample) -> label``: :func:`rule_judge` ships (word matching that drops
negated mentions and recognises a response that acknowledges the conflict, so ``NO_BIAS`` is
measurable on free-form answers), :class:`LLMJudge` is the hook for a language-model judge (the
caller passes the completion function; nothing here calls a model or a network)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from interp.conditions import Condition
from interp.errors import DataFormatError
from interp.samples import Sample

from .items import DEMO_SOURCES, HALLUCINATION, NO_BIAS, Source, item_order

Matcher = Callable[[str, str], bool]
Judge = Callable[[str, dict[str, str], Sample], str]
"""``judge(response, labels, sample) -> label``: ``labels`` maps each shown source's name to its
label, in source order; the result is one of :func:`allowed_labels` ``(labels)``."""

_ACKNOWLEDGE = re.compile(
    r"\b(conflict\w*|contradict\w*|disagree\w*|inconsistent|mismatch\w*|cannot tell|unclear)\b"
)


def word_match(response: str, label: str, synonyms: dict[str, Sequence[str]] | None = None) -> bool:
    """Whether ``label`` (or one of its synonyms) occurs in ``response`` as whole words, after
    lower-casing and removing punctuation."""

    def norm(text: str) -> str:
        return " " + re.sub(r"[^\w\s]", " ", text.lower()).strip() + " "

    words = re.sub(r"\s+", " ", norm(response))
    forms = [label, *(synonyms or {}).get(label, ())]
    return any(re.sub(r"\s+", " ", norm(f)) in words for f in forms if f.strip())


def bias_label(
    response: str,
    labels: dict[str, str],
    *,
    matcher: Matcher | None = None,
    synonyms: dict[str, Sequence[str]] | None = None,
) -> str:
    """The response label of the paper's Sec. 4.2 for one response.

    Args:
        labels: source name → the label it shows, in source order (``{"image": "leaf", ...}``).
        matcher: ``(response, label) -> bool`` (default :func:`word_match` with ``synonyms``).

    Returns:
        ``BIAS_<A>`` when exactly one source matches, ``BIAS_<A>_<B>`` for two (in the order of
        ``labels``), ``NO_BIAS`` when every source matches or the response acknowledges the
        conflict, ``HALLUCINATION`` when none does.
    """
    match = matcher or (lambda r, lab: word_match(r, lab, synonyms))
    matched = [name for name, lab in labels.items() if match(response, lab)]
    if len(matched) == len(labels) or _ACKNOWLEDGE.search(response.lower()):
        return NO_BIAS
    if not matched:
        return HALLUCINATION
    return "BIAS_" + "_".join(n.upper() for n in matched)


_NEGATED = re.compile(
    r"\b(?:not|no|never|isn t|is not|rather than|instead of)\s+(?:(?:a|an|the)\s+)?\w+"
)


def allowed_labels(labels: dict[str, str]) -> list[str]:
    """The labels a response to an item showing ``labels``' sources can get: each source's
    ``BIAS_<A>``, each pair's ``BIAS_<A>_<B>`` (source order), ``NO_BIAS``, ``HALLUCINATION``."""
    names = [n.upper() for n in labels]
    pairs = [f"BIAS_{a}_{b}" for i, a in enumerate(names) for b in names[i + 1 :]]
    return [f"BIAS_{n}" for n in names] + pairs + [NO_BIAS, HALLUCINATION]


def rule_judge(
    response: str,
    labels: dict[str, str],
    sample: Sample | None = None,
    *,
    synonyms: dict[str, Sequence[str]] | None = None,
) -> str:
    """The shipped judge for free-form responses: :func:`bias_label` after removing negated
    mentions — the word after ``not``, ``no``, ``never``, ``isn't``, ``rather than``,
    ``instead of`` (an article skipped) — so "a heart, not a leaf" follows the heart only.
    ``NO_BIAS`` when the response names every source's label (reports all of them without a
    conclusion) or acknowledges the conflict (``conflict``, ``contradict``, ``disagree``,
    ``inconsistent``, ``mismatch``, ``cannot tell``, ``unclear``). ``sample`` is unused (the
    judge signature's third argument)."""
    text = re.sub(r"[^\w\s]", " ", response.lower())
    if _ACKNOWLEDGE.search(text):
        return NO_BIAS
    return bias_label(_NEGATED.sub(" ", text), labels, synonyms=synonyms)


JUDGE_PROMPT = """You label how a model answered a question whose inputs disagree.
Question: {question}
Each input names a different answer: {sources}.
The model answered: {response}
Reply with exactly one of these labels:
{choices}
BIAS_<X>: the answer follows input X only; BIAS_<X>_<Y>: it follows exactly those two inputs;
NO_BIAS: it explicitly acknowledges the conflict, or reports every input without concluding;
HALLUCINATION: it matches none of the inputs and does not acknowledge the conflict.
Label:"""
"""The :class:`LLMJudge` prompt (the paper's label definitions, Sec. 4.2; its own prompt, in its
Appendix E.1, is not in our text of the paper)."""


class LLMJudge:
    """The hook for a language-model judge, the paper's labelling (Sec. 4.2: an LLM classifies
    each response given the question and the sources' labels).

    Args:
        complete: ``prompt -> reply`` (the caller's model or API client).
        prompt: a template with ``{question}``, ``{sources}`` (``image: heart; audio: bell``),
            ``{response}`` and ``{choices}`` (the allowed labels, one a line).

    Calling it returns the first allowed label found in the reply.

    Raises:
        DataFormatError: a reply naming no allowed label (naming the reply).
    """

    def __init__(self, complete: Callable[[str], str], prompt: str = JUDGE_PROMPT) -> None:
        if not callable(complete):
            raise TypeError(f"complete must be a function prompt -> reply, got {complete!r}")
        self.complete = complete
        self.prompt = prompt

    def __call__(self, response: str, labels: dict[str, str], sample: Sample) -> str:
        allowed = allowed_labels(labels)
        text = self.prompt.format(
            question=sample.question,
            sources="; ".join(f"{k}: {v}" for k, v in labels.items()),
            response=response,
            choices="\n".join(allowed),
        )
        reply = str(self.complete(text))
        for token in re.findall(r"[A-Z_]+", reply.upper()):
            if token in allowed:
                return token
        raise DataFormatError(
            f"the judge's reply {reply[:80]!r} names none of the labels {', '.join(allowed)}"
        )


def judged(judge: Judge, response: str, labels: dict[str, str], sample: Sample) -> str:
    """``judge``'s label for one response, checked to be one of :func:`allowed_labels`.

    Raises:
        DataFormatError: any other value, naming the judge and the sample.
    """
    label = judge(response, labels, sample)
    allowed = allowed_labels(labels)
    if label not in allowed:
        name = getattr(judge, "__name__", type(judge).__name__)
        raise DataFormatError(
            f"the judge {name} returned {label!r} for sample {sample.id!r}; a judge returns one "
            f"of {', '.join(allowed)}"
        )
    return label


def source_labels(sample: Sample, sources: Sequence[Source] = DEMO_SOURCES) -> dict[str, str]:
    """The labels of the sources the item shows, in the canonical source order."""
    shown = set(item_order(sample, sources))
    return {s.name: str(sample.meta[s.label_key]) for s in sources if s in shown}


def dropped_source(condition: str) -> str | None:
    """The source a condition removes (its image part ``without:<source>``), or None."""
    cond = Condition.parse(condition)
    return cond.image.arg if cond.image.name == "without" else None


def _config_labels(sample: Sample, condition: str, sources: Sequence[Source]) -> dict[str, str]:
    labels = source_labels(sample, sources)
    gone = dropped_source(condition)
    if gone is not None:
        labels.pop(gone, None)
    image = Condition.parse(condition).image
    if image.name == "only":  # one source alone
        labels = {k: v for k, v in labels.items() if k == image.arg}
    return labels
