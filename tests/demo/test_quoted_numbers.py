"""Every number registered under ``docs/quoted_numbers/`` is quoted in its document exactly as the
stored output it comes from says (a bench JSON, a notebook's output, a stored text file).

The registry is declarative (``docs/conventions.md``, "Quoted numbers"): JSON files, one per topic,
each a list of entries, one per number, naming the document, the quoted text with ``{}`` where the
number stands, the stored source and where in it the number is. A number that changes in its
source and not in the document (or the other way round) fails here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = ROOT / "docs" / "quoted_numbers"


def load_registry(folder: Path = REGISTRY) -> list[dict[str, Any]]:
    """Every entry of every ``*.json`` file of the registry folder, in file order."""
    entries = []
    for path in sorted(folder.glob("*.json")):
        entries += json.loads(path.read_text())
    return entries


def _json_value(data: Any, key: str) -> Any:
    """``a.b.0.c`` → data["a"]["b"][0]["c"] (an integer part indexes a list)."""
    for part in key.split("."):
        data = data[int(part)] if isinstance(data, list) else data[part]
    return data


def _notebook_text(path: Path) -> str:
    """Every text output of a notebook's cells (stream and plain-text results), joined."""
    cells = json.loads(path.read_text())["cells"]
    out = []
    for cell in cells:
        for o in cell.get("outputs", []):
            if "text" in o:
                out.append("".join(o["text"]))
            elif "text/plain" in o.get("data", {}):
                out.append("".join(o["data"]["text/plain"]))
    return "\n".join(out)


def stored_value(entry: dict[str, Any], root: Path = ROOT) -> Any:
    """The number as the source stores it: a JSON ``key``, or the first group of ``pattern``
    (a regular expression) in a notebook's outputs or a text file."""
    path = root / entry["source"]
    if "key" in entry:
        return _json_value(json.loads(path.read_text()), entry["key"])
    text = _notebook_text(path) if path.suffix == ".ipynb" else path.read_text()
    match = re.search(entry["pattern"], text)
    if match is None:
        raise AssertionError(f"{entry['source']}: no match for {entry['pattern']!r}")
    return match.group(1)


def rendered(entry: dict[str, Any], value: Any) -> str:
    """The quoted text with the stored number in it: ``scale`` multiplies it (e.g. 100 for a
    per cent), ``fmt`` formats it (a format spec such as ``.3f``; default: as stored)."""
    if "scale" in entry or "fmt" in entry:
        value = float(value) * float(entry.get("scale", 1))
        value = format(value, entry.get("fmt", "g"))
    return entry["text"].replace("{}", str(value))


def check(entry: dict[str, Any], root: Path = ROOT) -> None:
    text = rendered(entry, stored_value(entry, root))
    doc = (root / entry["doc"]).read_text()
    # a quote may wrap across lines; a typeset minus (U+2212) reads as "-"
    flat = " ".join(doc.replace("\u2212", "-").split())
    if " ".join(text.replace("\u2212", "-").split()) not in flat:
        raise AssertionError(
            f"{entry['doc']} should quote {text!r} (from {entry['source']}); it does not"
        )


ENTRIES = load_registry()


def test_registry_entries_are_complete():
    assert ENTRIES
    for e in ENTRIES:
        assert {"doc", "text", "source"} <= e.keys() and ("key" in e) != ("pattern" in e), e
        assert e["text"].count("{}") == 1, e
        assert (ROOT / e["doc"]).is_file() and (ROOT / e["source"]).is_file(), e


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: f"{e['doc']}:{e['text'][:40]}")
def test_quoted_number_equals_the_stored_one(entry):
    check(entry)


def test_a_changed_stored_number_fails(tmp_path):
    """The mutation check: edit one stored number in a copy of its source and the entry fails."""
    entry = next(e for e in ENTRIES if "key" in e)
    source = tmp_path / entry["source"]
    source.parent.mkdir(parents=True)
    data = json.loads((ROOT / entry["source"]).read_text())
    *path, last = entry["key"].split(".")
    holder = _json_value(data, ".".join(path)) if path else data
    holder[int(last) if isinstance(holder, list) else last] = _json_value(data, entry["key"]) + 1
    source.write_text(json.dumps(data))
    (tmp_path / entry["doc"]).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / entry["doc"]).write_text((ROOT / entry["doc"]).read_text())
    check(entry)  # the copy as stored passes
    with pytest.raises(AssertionError, match="should quote"):
        check(entry, tmp_path)
