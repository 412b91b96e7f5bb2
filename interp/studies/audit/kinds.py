"""Kinds of sample several studies tell apart, so that one study leaves another's items alone
(a conflict item is no short-answer question for the chain of embedding, nor a description for
the drives)."""

from __future__ import annotations

from interp.samples import Sample


def is_conflict_item(s: Sample) -> bool:
    """A modality-conflict item: an input ``order`` and a ``caption`` in ``meta``."""
    return isinstance(s.meta.get("order"), str) and "caption" in s.meta


def is_yes_no(s: Sample) -> bool:
    """A question answered yes or no (POPE-style)."""
    return str(s.answer or "").strip().lower() in ("yes", "no")


__all__ = ["is_conflict_item", "is_yes_no"]
