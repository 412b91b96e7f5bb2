"""Labelling responses (the paper's Sec. 4.2, its "judge" replaced by a matching function the
user can swap): which sources' labels a response matches."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from interp.conditions import Condition
from interp.samples import Sample

from .items import DEMO_SOURCES, HALLUCINATION, NO_BIAS, Source, item_order

Matcher = Callable[[str, str], bool]

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
    return labels
