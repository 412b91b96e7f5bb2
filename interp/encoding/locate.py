"""Stage 5, locate: the rendered prompts' character spans moved to the text the tokenizer read,
and each expanded placeholder's span, as one :class:`RowSpans` per row.

Three texts are involved for each row: the *question pieces* (the question split at its input
slots, each stripped); the *prompt* P the render stage built; the *tokenized text* S the processor
handed its tokenizer — P with every placeholder expanded (one token per feature vector, tile
markers, ...), and for some processors with text added around it (PaliGemma's BOS and newline).
P-spans move to S through the processor's text-replacement offsets, or — where a processor changes
the text in other ways — by taking the same occurrence counted from the end of the text, ignoring
occurrences inside special tokens. Token positions are then the tokens whose character offsets
overlap a span (:func:`span_tokens`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from jaxtyping import Bool, Int
from torch import Tensor

from .codec import Codec
from .process import Processed
from .render import Rendered, Span, question_pieces


def special_token_pattern(tokenizer: Any) -> re.Pattern[str] | None:
    """A regex matching the tokenizer's added special tokens in text (longest first)."""
    tokens = sorted(
        {str(t) for t in getattr(tokenizer, "all_special_tokens", []) if str(t)}
        | {
            str(t.content)
            for t in getattr(tokenizer, "added_tokens_decoder", {}).values()
            if getattr(t, "special", False) and str(t.content)
        },
        key=len,
        reverse=True,
    )
    if not tokens:
        return None
    return re.compile("|".join(re.escape(t) for t in tokens))


def _occurrences(text: str, piece: str, blocked: list[Span]) -> list[int]:
    """Start indices of ``piece`` in ``text`` (non-overlapping, left to right), skipping those
    that overlap a blocked span."""
    found, start = [], text.find(piece)
    while start >= 0:
        end = start + len(piece)
        if not any(a < end and b > start for a, b in blocked):
            found.append(start)
        start = text.find(piece, end)
    return found


def _blocked(text: str, pattern: re.Pattern[str] | None) -> list[Span]:
    return [] if pattern is None else [m.span() for m in pattern.finditer(text)]


def map_spans(
    spans: Sequence[Span],
    texts: Sequence[str],
    prompt: str,
    tokenized: str,
    replacements: Sequence[dict[str, Any]] | None,
    special: re.Pattern[str] | None,
) -> list[Span] | None:
    """Move character spans of ``prompt`` to the text the tokenizer read.

    First through the processor's replacement offsets (each expanded placeholder's old and new
    span); where that does not land on the same text, the occurrence of the text at the same
    rank counted from the end of each string, ignoring occurrences inside special tokens.
    """
    out: list[Span] = []
    for (a, b), text in zip(spans, texts):
        shift = 0
        for r in replacements or ():
            old, new = r["span"], r["new_span"]
            if old[1] <= a:
                shift += (new[1] - new[0]) - (old[1] - old[0])
        if tokenized[a + shift : b + shift] == text:
            out.append((a + shift, b + shift))
            continue
        in_prompt = _occurrences(prompt, text, _blocked(prompt, special))
        if a not in in_prompt:
            return None
        rank = len(in_prompt) - in_prompt.index(a)  # 1 = last occurrence
        in_text = _occurrences(tokenized, text, _blocked(tokenized, special))
        if len(in_text) < rank:
            return None
        start = in_text[-rank]
        out.append((start, start + len(text)))
    return out


def span_tokens(
    offsets: Int[Tensor, "seq 2"], spans: Sequence[Span], exclude: Bool[Tensor, " seq"]
) -> Bool[Tensor, " seq"]:
    """Positions whose character offsets overlap any of ``spans`` (tokens with an empty offset,
    such as padding and BOS, never do), less ``exclude``."""
    start, end = offsets[:, 0], offsets[:, 1]
    mask = torch.zeros(offsets.shape[0], dtype=torch.bool)
    for a, b in spans:
        mask |= (start < b) & (end > a) & (end > start)
    return mask & ~exclude


def uncovered(offsets: Int[Tensor, "n 2"], spans: Sequence[Span], text: str) -> str:
    """The non-space characters of ``spans`` (in ``text``) that no token's offsets cover."""
    covered = set()
    for a, b in offsets.tolist():
        covered.update(range(a, b))
    return "".join(
        text[i] for a, b in spans for i in range(a, b) if i not in covered and not text[i].isspace()
    )


def comparable(tokenizer: Any, text: str) -> str:
    """``text`` as the tokenizer's normaliser sees it (lower-casing, Unicode forms, SentencePiece's
    word marker) without whitespace: how decoded tokens are compared with their source text."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    normalizer = getattr(backend, "normalizer", None)
    if normalizer is not None:
        text = normalizer.normalize_str(text)
    return "".join(text.replace("\u2581", " ").split())


@dataclass
class RowSpans:
    """Where the named parts of one row's prompt are, as character spans of the tokenized text.

    Attributes:
        question: spans of the question text (one per run of text between images).
        question_text: the text of each question span.
        images: per image of the row, the span its placeholder expanded to (empty when the
            processor reports no replacement offsets).
        problem: why the question could not be located, or None.
        audio / video: per audio input / video, the span its placeholder expanded to.
    """

    question: list[Span] = field(default_factory=list)
    question_text: list[str] = field(default_factory=list)
    images: list[Span] = field(default_factory=list)
    problem: str | None = None
    audio: list[Span] = field(default_factory=list)
    video: list[Span] = field(default_factory=list)

    def of(self, kind: str) -> list[Span]:
        """The spans of ``kind``: ``"image"``, ``"audio"`` or ``"video"``."""
        return {"image": self.images, "audio": self.audio, "video": self.video}[kind]


def locate_spans(
    rendered: Rendered,
    tokenized: str | None,
    replacements: Sequence[dict[str, Any]] | None,
    special: re.Pattern[str] | None,
) -> RowSpans:
    """The :class:`RowSpans` of one rendered row (see the module docstring)."""
    found_media = {
        kind: [tuple(r["new_span"]) for r in replacements or () if r.get("type") == kind]
        for kind in ("image", "audio", "video")
    }
    spans = RowSpans(
        images=found_media["image"],  # type: ignore[arg-type]
        audio=found_media["audio"],  # type: ignore[arg-type]
        video=found_media["video"],  # type: ignore[arg-type]
    )
    if not question_pieces(rendered.question):
        return spans
    if tokenized is None:
        spans.problem = "the processor did not expose the text it tokenized"
    elif rendered.problem is not None:
        spans.problem = rendered.problem
    else:
        moved = map_spans(
            rendered.spans, rendered.texts, rendered.prompt, tokenized, replacements, special
        )
        if moved is None:
            spans.problem = "the question text is not in the text the processor tokenized"
        else:
            spans.question, spans.question_text = moved, list(rendered.texts)
    return spans


def locate(codec: Codec, rendered: Sequence[Rendered], processed: Processed) -> list[RowSpans]:
    """One :class:`RowSpans` per row."""
    special = special_token_pattern(codec.tokenizer)
    return [
        locate_spans(
            r,
            text,
            processed.replacements[row] if processed.replacements else None,
            special,
        )
        for row, (r, text) in enumerate(zip(rendered, processed.texts))
    ]


__all__ = [
    "RowSpans",
    "comparable",
    "locate",
    "locate_spans",
    "map_spans",
    "span_tokens",
    "special_token_pattern",
    "uncovered",
]
