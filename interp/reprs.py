"""Short summaries of the library's objects: a ``repr`` of at most :data:`MAX_LINES` lines and an
HTML table for Jupyter (``_repr_html_``).

A result holds tensors, arrays and tables of every sample; printing them whole buries the facts a
reader wants — what it is, how many samples, which shapes, the headline numbers. :class:`Summary`
is the mixin every result uses: its ``repr`` is one head line (the class name and the headline
facts of :meth:`Summary._repr_head`) and one line per field, each value described in a few words by
:func:`describe` (a tensor or an array by its shape and dtype, a table by its size and columns, a
long list by its length and first items, a nested result by its head line). A dataclass result
declares ``@dataclass(repr=False)`` so that the generated ``repr`` does not replace the mixin's.

A leaf module: it imports nothing heavy (tensors, arrays and tables are recognised by their
attributes), so the core and the studies can all use it.
"""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any, ClassVar

MAX_LINES = 20  # a summary's lines, head line included
WIDTH = 100  # a line's characters, at most
_ITEMS = 3  # a list's or a mapping's items shown before "…"
_SMALL = 6  # an array with at most this many numbers shows them
_SHORT = 80  # an object whose repr is longer is shown by its type's name


def _cut(text: str, width: int = WIDTH) -> str:
    """``text`` on one line (its line breaks as spaces), cut to ``width`` characters with an
    ellipsis."""
    text = text.replace("\r", " ").replace("\n", " ")
    return text if len(text) <= width else text[: width - 1] + "…"


def _number(value: Any) -> str:
    """A number, a bool or None in a few characters (floats to four significant digits)."""
    if isinstance(value, float):
        return f"{value:.4g}"
    if value is None or isinstance(value, bool | int):
        return repr(value)
    name = type(value).__name__  # numpy and torch scalars
    try:
        if "bool" in name:
            return repr(bool(value))
        return str(int(value)) if "int" in name else f"{float(value):.4g}"
    except (TypeError, ValueError):
        return repr(value)


def _is_table(value: Any) -> bool:
    """A pandas table or series (they index by ``iloc``)."""
    return hasattr(value, "shape") and hasattr(value, "iloc")


def _is_array(value: Any) -> bool:
    """A tensor or an array (torch, numpy): it has a shape and a dtype, and is not a table."""
    return hasattr(value, "shape") and hasattr(value, "dtype") and not _is_table(value)


def _shape(value: Any) -> str:
    return "[" + ", ".join(str(int(s)) for s in value.shape) + "]"


def _dtype(value: Any) -> str:
    return str(value.dtype).removeprefix("torch.")


def _array(value: Any) -> str:
    """``Tensor[12, 17, 64] float32``; the numbers themselves when there are a few."""
    text = f"{type(value).__name__}{_shape(value)} {_dtype(value)}"
    try:
        size = int(value.numel()) if hasattr(value, "numel") else int(value.size)
        if 0 < size <= _SMALL and str(getattr(value, "device", "cpu")) != "meta":
            text += " [" + ", ".join(_number(v) for v in value.reshape(-1).tolist()) + "]"
    except Exception:  # an array that cannot give its numbers: its shape says enough
        pass
    return text


def _table(value: Any) -> str:
    """``DataFrame 120×7: sample_id, condition, …`` (a Series: its length and dtype)."""
    name = type(value).__name__
    if not hasattr(value, "columns"):
        return f"{name}[{len(value)}] {getattr(value, 'dtype', '')}".rstrip()
    rows, cols = value.shape
    names = ", ".join(str(c) for c in list(value.columns)[:8])
    more = ", …" if cols > 8 else ""
    return f"{name} {rows}×{cols}: {names}{more}"


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _item(value: Any) -> str:
    return repr(_cut(value, 24)) if isinstance(value, str) else _number(value)


def _ends(value: list[Any] | tuple[Any, ...]) -> list[Any]:
    """The items a summary shows: all of a few, else the first ones and the last."""
    return list(value) if len(value) <= _ITEMS + 1 else [*value[:_ITEMS], value[-1]]


def _first(items: list[str], n: int) -> str:
    """Items of :func:`_ends` of a sequence of ``n``, an ellipsis before the last where some
    were left out."""
    if n <= _ITEMS + 1:
        return ", ".join(items)
    return ", ".join(items[:_ITEMS]) + ", …, " + items[-1]


def _sequence(value: list[Any] | tuple[Any, ...], depth: int) -> str:
    """``list[12] of str: 'a', 'b', 'c', …, 'z'``; a short one as its ``repr``."""
    n = len(value)
    sample = value[:64]
    flat = all(_scalar(v) for v in sample)
    pairs = all(isinstance(v, tuple) and len(v) <= 4 and all(map(_scalar, v)) for v in value)
    if n <= 8 and (pairs or all(_scalar(v) for v in value)):
        text = repr(value)  # a few numbers, words or pairs: as written
        if len(text) <= 60:
            return text
    kinds = {type(v).__name__ for v in sample}
    head = f"{type(value).__name__}[{n}] of {kinds.pop() if len(kinds) == 1 else 'mixed'}"
    if flat:
        return head + ": " + _first([_item(v) for v in _ends(value)], n)
    if all(isinstance(v, list | tuple) for v in sample):
        lengths = [len(v) for v in value]
        low, high = min(lengths), max(lengths)
        head += f", lengths {low}" if low == high else f", lengths {low}–{high}"
        firsts = [v[0] for v in _ends(value) if v]
        if len(firsts) == min(n, _ITEMS + 1) and all(isinstance(f, str) for f in firsts):
            return head + ", first items " + _first([_item(f) for f in firsts], n)  # captions
        return head
    ids = [getattr(v, "id", None) for v in _ends(value)]
    if all(isinstance(i, str) for i in ids):  # samples, items: their ids
        return head + ", ids " + _first([_item(i) for i in ids], n)
    return head + ", e.g. " + describe(value[0], depth + 1)


def _mapping(value: Mapping[Any, Any], depth: int) -> str:
    n = len(value)
    if n == 0:
        return "{}"
    items = list(value.items())
    if depth > 1:
        return (
            f"{type(value).__name__}[{n}]: "
            + ", ".join(str(k) for k, _ in items[:_ITEMS])
            + (", …" if n > _ITEMS else "")
        )
    parts = [f"{k}: {describe(v, depth + 1)}" for k, v in items[:_ITEMS]]
    if n <= _ITEMS:
        return "{" + ", ".join(parts) + "}"
    return f"{type(value).__name__}[{n}] {{" + ", ".join(parts) + ", …}"


def describe(value: Any, depth: int = 0) -> str:
    """``value`` in a few words, on one line: a tensor or an array by its shape and dtype, a table
    by its size and columns, a sequence by its length and first items, a mapping by its first keys
    and values, a nested result (:class:`Summary`) by its head line, anything else by a short
    ``repr`` (or its type's name when the ``repr`` is long)."""
    try:
        if isinstance(value, Summary):
            return value._repr_line()
        if value is None or isinstance(value, bool | int | float):
            return _number(value)
        if isinstance(value, str):
            return repr(_cut(value, 60))
        if isinstance(value, PurePath):
            return repr(_cut(str(value), 60))
        if _is_array(value):
            return _array(value)
        if _is_table(value):
            return _table(value)
        if isinstance(value, list | tuple):
            return _cut(_sequence(value, depth))
        if isinstance(value, Mapping):
            return _cut(_mapping(value, depth))
        if callable(value) and hasattr(value, "__qualname__"):
            return f"<{type(value).__name__} {value.__qualname__}>"
        text = repr(value)
        return text if len(text) <= _SHORT and "\n" not in text else f"<{type(value).__name__}>"
    except Exception:  # a summary never fails: the type's name says the least
        return f"<{type(value).__name__}>"


def _head(name: str, facts: Mapping[str, Any]) -> str:
    inner = ", ".join(f"{k}={describe(v, 2)}" for k, v in facts.items())
    return f"{name}({inner})"


def summary_text(name: str, facts: Mapping[str, Any], rows: list[tuple[str, Any]]) -> str:
    """The text summary: ``name(facts)`` and one line per ``(label, value)`` row, at most
    :data:`MAX_LINES` lines of at most :data:`WIDTH` characters."""
    lines = [_cut(_head(name, facts))]
    room = MAX_LINES - 1
    shown = rows if len(rows) <= room else rows[: room - 1]
    pad = max((len(label) for label, _ in shown), default=0)
    for label, value in shown:
        lines.append(_cut(f"  {label.ljust(pad)}  {describe(value, 1)}"))
    if len(shown) < len(rows):
        rest = [label for label, _ in rows[len(shown) :]]
        lines.append(_cut(f"  … {len(rest)} more: {', '.join(rest)}"))
    return "\n".join(lines)


def summary_html(name: str, facts: Mapping[str, Any], rows: list[tuple[str, Any]]) -> str:
    """The HTML summary: a small table, its caption ``name(facts)``, a row per ``(label,
    value)``; every text escaped."""
    cells = "".join(
        "<tr><th style='text-align:left'>"
        + html.escape(label)
        + "</th><td style='text-align:left'><code>"
        + html.escape(describe(value, 1))
        + "</code></td></tr>"
        for label, value in rows
    )
    caption = html.escape(_cut(_head(name, facts), 2 * WIDTH))
    return (
        "<table class='interp-summary'><caption style='text-align:left'><b>"
        + caption
        + "</b></caption>"
        + cells
        + "</table>"
    )


class Summary:
    """Mixin: a short ``repr`` and a Jupyter HTML table built from the object's fields.

    Override :meth:`_repr_head` for the headline facts (its default: ``n``, the length, where the
    object has one) and, for a class that is not a dataclass, :meth:`_repr_rows`. Fields whose
    names start with ``_``, fields declared ``repr=False`` and the names in ``_repr_hidden`` are
    left out.
    """

    _repr_hidden: ClassVar[tuple[str, ...]] = ()

    def _repr_head(self) -> dict[str, Any]:
        """The facts of the head line (the class name's parentheses)."""
        try:
            return {"n": len(self)}  # type: ignore[arg-type]
        except TypeError:
            return {}

    def _repr_rows(self) -> list[tuple[str, Any]]:
        """``(label, value)`` per line; a dataclass: its fields."""
        if not dataclasses.is_dataclass(self):
            return []
        return [
            (f.name, getattr(self, f.name, None))
            for f in dataclasses.fields(self)
            if f.repr and not f.name.startswith("_") and f.name not in self._repr_hidden
        ]

    def _safe_head(self) -> dict[str, Any]:
        try:
            return self._repr_head()
        except Exception:  # a summary never fails: the head line goes without its facts
            return {}

    def _safe_rows(self) -> list[tuple[str, Any]]:
        try:
            return self._repr_rows()
        except Exception:  # a summary never fails: the head line goes alone
            return []

    def _repr_line(self) -> str:
        """The head line alone (how a result nested in another is shown)."""
        return _cut(_head(type(self).__name__, self._safe_head()))

    def __repr__(self) -> str:
        return summary_text(type(self).__name__, self._safe_head(), self._safe_rows())

    def _repr_html_(self) -> str:
        return summary_html(type(self).__name__, self._safe_head(), self._safe_rows())


__all__ = ["MAX_LINES", "WIDTH", "Summary", "describe", "summary_html", "summary_text"]
