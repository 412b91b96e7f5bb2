"""Named prompt positions from character spans — now the render, locate, mask and select stages of
:mod:`interp.encoding` (see there); this path keeps working for the names it gave."""

from __future__ import annotations

from .encoding.locate import (
    RowSpans,
    comparable,
    locate_spans,
    map_spans,
    span_tokens,
    special_token_pattern,
    uncovered,
)
from .encoding.mask import expansion_mask
from .encoding.render import Span, prompt_spans, question_pieces, search_spans
from .encoding.select import slot_mask

__all__ = [
    "RowSpans",
    "Span",
    "comparable",
    "expansion_mask",
    "locate_spans",
    "map_spans",
    "prompt_spans",
    "question_pieces",
    "search_spans",
    "slot_mask",
    "span_tokens",
    "special_token_pattern",
    "uncovered",
]
