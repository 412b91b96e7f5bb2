"""Answer-matching metrics of the visual-reference paper ("Can VLMs Recall Factual Associations From
Visual References?", Section 4 and Appendix C): for a model response r and a gold answer a,

- exact match: ``a = r``;
- two-way inclusion: ``r ∈ a ∨ a ∈ r`` (∈ = substring), the paper's main metric;
- BLEU (Papineni et al.), a continuous n-gram overlap score, computed by ``sacrebleu``.

Exact match and inclusion compare answers after :func:`normalize_text` (SQuAD-style: lower-case,
no punctuation, no articles, single spaces) unless given another normaliser. A reference may also
be a list of acceptable answers; a prediction then matches when it matches any of them.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence

import pandas as pd

from .errors import EmptyInputError, ProbeError
from .split import normalize_answer

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_SPACES = re.compile(r"\s+")

Normalizer = Callable[[str], str]
Reference = str | Sequence[str]


def normalize_text(text: str) -> str:
    """SQuAD-style answer normalisation: :func:`probes.split.normalize_answer` (collapse
    whitespace, lower-case), then delete every Unicode punctuation character (``"U.S."`` ->
    ``"us"``), drop the English articles a/an/the as whole words, and collapse spaces again.

    An answer that is only an article (e.g. the option letter ``"(A)"`` -> ``"a"``) keeps it, so a
    multiple-choice letter never normalises to the empty string.
    """
    out = normalize_answer(text)
    out = "".join(ch for ch in out if not unicodedata.category(ch).startswith("P"))
    out = _SPACES.sub(" ", out).strip()
    without = _SPACES.sub(" ", _ARTICLES.sub(" ", out)).strip()
    return without or out


def _refs(ref: Reference) -> list[str]:
    refs = [ref] if isinstance(ref, str) else list(ref)
    if not refs:
        raise EmptyInputError("no reference answer was given")
    for r in refs:
        if not isinstance(r, str):
            raise TypeError(f"a reference answer must be a str, got {type(r).__name__}")
    return refs


def _check_pred(pred: str) -> str:
    if not isinstance(pred, str):
        raise TypeError(f"a predicted answer must be a str, got {type(pred).__name__}")
    return pred


def exact_match(pred: str, ref: Reference, normalize: Normalizer = normalize_text) -> bool:
    """``normalize(pred) == normalize(ref)`` for some reference; an empty normalised answer never
    matches."""
    p = normalize(_check_pred(pred))
    return bool(p) and any(p == normalize(r) for r in _refs(ref))


def inclusion_match(
    pred: str,
    ref: Reference,
    normalize: Normalizer = normalize_text,
    whole_words: bool = False,
) -> bool:
    """Two-way inclusion ``r in p or p in r`` (substring) of the normalised answers, for some
    reference. Empty strings never match (the empty string is a substring of everything).

    The paper's metric is character-level, so a short answer also matches inside a longer word
    (``"cat"`` in ``"cathedral"``); ``whole_words=True`` only accepts matches on word boundaries
    (the inclusion of ``" p "`` in ``" r "``).
    """
    p = normalize(_check_pred(pred))
    if not p:
        return False
    for r in map(normalize, _refs(ref)):
        if not r:
            continue
        a, b = (f" {p} ", f" {r} ") if whole_words else (p, r)
        if a in b or b in a:
            return True
    return False


def bleu(pred: str, ref: Reference, lowercase: bool = True) -> float:
    """Sentence-level BLEU of one response against its reference(s), in [0, 100], from
    ``sacrebleu.sentence_bleu`` with its defaults (13a tokenisation, exponential smoothing,
    effective n-gram order — short answers have no 4-grams).

    ``BLEU = BP * exp(sum_{n=1..N} (1/N) log p_n)``, ``p_n`` the clipped n-gram precisions,
    ``BP = min(1, exp(1 - |ref| / |pred|))``. ``lowercase`` folds case inside sacrebleu; no other
    normalisation is applied.
    """
    import sacrebleu  # lazily: importing probes must stay light

    return float(sacrebleu.sentence_bleu(_check_pred(pred), _refs(ref), lowercase=lowercase).score)


def corpus_bleu(preds: Sequence[str], refs: Sequence[Reference], lowercase: bool = True) -> float:
    """Corpus-level BLEU in [0, 100] (n-gram counts pooled over all pairs before the precisions
    are taken), from ``sacrebleu.corpus_bleu``. Every item may have several references; items with
    fewer references than others are padded with ``None`` as sacrebleu expects."""
    import sacrebleu  # lazily: importing probes must stay light

    if len(preds) != len(refs):
        raise ProbeError(f"{len(preds)} predictions but {len(refs)} references; give one each")
    if not preds:
        raise EmptyInputError("no predictions were given")
    per_item = [_refs(r) for r in refs]
    width = max(map(len, per_item))
    # sacrebleu takes one stream per reference position: streams[k][i] = k-th reference of item i
    streams = [[r[k] if k < len(r) else None for r in per_item] for k in range(width)]
    hyps = [_check_pred(p) for p in preds]
    return float(sacrebleu.corpus_bleu(hyps, streams, lowercase=lowercase).score)


def score_answers(
    preds: Sequence[str], refs: Sequence[Reference], normalize: Normalizer = normalize_text
) -> pd.DataFrame:
    """One row per item: ``exact`` and ``inclusion`` (bool) and sentence ``bleu`` (0-100); the
    column means are the paper's per-dataset scores (Figure 3 and Appendix C)."""
    if len(preds) != len(refs):
        raise ProbeError(f"{len(preds)} predictions but {len(refs)} references; give one each")
    return pd.DataFrame(
        {
            "exact": [exact_match(p, r, normalize) for p, r in zip(preds, refs, strict=True)],
            "inclusion": [
                inclusion_match(p, r, normalize) for p, r in zip(preds, refs, strict=True)
            ],
            "bleu": [bleu(p, r) for p, r in zip(preds, refs, strict=True)],
        }
    )


__all__ = [
    "bleu",
    "corpus_bleu",
    "exact_match",
    "inclusion_match",
    "normalize_text",
    "score_answers",
]
