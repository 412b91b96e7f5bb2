"""Benchmark files users already have, read as :class:`~interp.Sample` lists.

- **VLMEvalKit TSV** (:func:`read_vlmevalkit_tsv`): one row per question with columns ``index``,
  ``image`` (base64-encoded image bytes), ``question``, optional ``hint``, options ``A``–``D``
  (blank where absent), ``answer`` (an option letter) and optional ``category``. A multiple-choice
  row becomes a prompt with the hint, the question and the options that asks for the letter; its
  answer is the letter (``meta["options"]`` maps letters to texts, ``meta["answer_text"]`` is the
  right option's text).
- **POPE question files** (:func:`read_pope`): JSON lines (or a JSON list) with ``image`` (a file
  name in an image folder), ``text`` (the question) and ``label`` (``yes``/``no``); the negative
  type (``random`` / ``popular`` / ``adversarial``) comes from the file name, as POPE names its
  files, and becomes ``meta["pope_negative"]`` of the negatives.

:func:`extract_choice` reads a free answer to a multiple-choice prompt as an option (its letter or
its text). Malformed rows raise :class:`~interp.errors.DataFormatError` with the row number.
"""

from __future__ import annotations

import base64
import binascii
import csv
import io
import json
import re
import sys
from pathlib import Path
from typing import Any

from PIL import Image, UnidentifiedImageError

from ..errors import DataFormatError, EmptyInputError, MissingImageError
from ..samples import Sample

LETTERS = ("A", "B", "C", "D", "E", "F", "G", "H")
MC_INSTRUCTION = "Answer with the option's letter from the given choices directly."
POPE_SETTINGS = ("random", "popular", "adversarial")


def multiple_choice_prompt(question: str, options: dict[str, str], hint: str | None = None) -> str:
    """VLMEvalKit's multiple-choice layout: ``Hint: …`` (if any), the question, one ``X. option``
    line per option, then the instruction to answer with the letter."""
    lines = []
    if hint:
        lines.append(f"Hint: {hint}")
    lines.append(f"Question: {question}")
    lines.append("Options:")
    lines += [f"{k}. {v}" for k, v in options.items()]
    lines.append(MC_INSTRUCTION)
    return "\n".join(lines)


def extract_choice(answer: str, options: dict[str, str]) -> str | None:
    """The option a free answer chooses: a standalone option letter (``"B"``, ``"(B)"``,
    ``"B. cat"``), else the one option whose text the answer contains (case-insensitive), else
    None."""
    text = answer.strip()
    m = re.match(r"^\(?([A-H])\)?(?:[.:)\s]|$)", text)
    if m and m.group(1) in options:
        return m.group(1)
    lowered = text.lower()
    hits = [
        k for k, v in options.items() if v and re.search(rf"\b{re.escape(v.lower())}\b", lowered)
    ]
    return hits[0] if len(hits) == 1 else None


def _decode_image(value: str, where: str) -> Image.Image:
    try:
        raw = base64.b64decode(value, validate=True)
        image = Image.open(io.BytesIO(raw))
        image.load()
    except (binascii.Error, ValueError, UnidentifiedImageError, OSError) as err:
        raise DataFormatError(
            f"{where}: the 'image' column is not a base64-encoded image ({err})"
        ) from None
    return image.convert("RGB")


def read_vlmevalkit_tsv(path: str | Path) -> list[Sample]:
    """Read a VLMEvalKit benchmark TSV (see the module docstring).

    Raises:
        DataFormatError: a missing column, an undecodable image, an answer letter that names no
            option, or an empty question — naming the row (``file:row``).
    """
    path = Path(path)
    if not path.is_file():
        raise MissingImageError(f"data file not found: {str(path)!r}")
    csv.field_size_limit(sys.maxsize)  # base64 images exceed csv's default field size
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f, delimiter="\t")
        missing = {"image", "question"} - set(reader.fieldnames or [])
        if missing:
            raise DataFormatError(
                f"{path}: a VLMEvalKit TSV needs the columns {sorted(missing)} (found "
                f"{reader.fieldnames})"
            )
        rows = list(reader)
    samples = []
    for row_no, row in enumerate(rows, start=2):  # row 1 is the header
        where = f"{path}:{row_no}"
        question = (row.get("question") or "").strip()
        if not question:
            raise DataFormatError(f"{where}: empty 'question'")
        image = _decode_image((row.get("image") or "").strip(), where)
        options = {k: row[k].strip() for k in LETTERS if (row.get(k) or "").strip() and k in row}
        hint = (row.get("hint") or "").strip()
        hint = None if hint.lower() in ("", "nan", "none") else hint
        answer = (row.get("answer") or "").strip() or None
        meta: dict[str, Any] = {
            k: v
            for k, v in row.items()
            if k not in ("image", "question", "hint", "answer", *LETTERS)
        }
        if options:
            if answer is not None and answer not in options:
                raise DataFormatError(
                    f"{where}: answer {answer!r} is not one of the options {sorted(options)}"
                )
            meta.update(options=options, answer_text=options[answer] if answer else None)
            prompt = multiple_choice_prompt(question, options, hint)
        else:
            prompt = f"{hint}\n{question}" if hint else question
        sid = str(row.get("index") or row_no - 1)
        samples.append(Sample(prompt, image, answer, sid, meta))
    if not samples:
        raise EmptyInputError(f"{path} holds no rows")
    return samples


def pope_setting(path: str | Path) -> str | None:
    """The POPE negative type a file name states (``coco_pope_adversarial.json`` →
    ``"adversarial"``), or None."""
    name = Path(path).name.lower()
    found = [s for s in POPE_SETTINGS if s in name]
    return found[0] if len(found) == 1 else None


def read_pope(path: str | Path, images: str | Path | None = None) -> list[Sample]:
    """Read a POPE question file (see the module docstring); ``images`` is the folder its image
    names are relative to (default: the file's folder).

    Raises:
        DataFormatError: a row that is not an object with ``image``, ``text`` and a yes/no
            ``label`` (naming the row), or an image folder that does not exist.
    """
    path = Path(path)
    if not path.is_file():
        raise MissingImageError(f"data file not found: {str(path)!r}")
    folder = Path(images) if images is not None else path.parent
    if not folder.is_dir():
        raise DataFormatError(f"image folder not found: {str(folder)!r} (give --images)")
    text = path.read_text()
    try:
        parsed = json.loads(text)
        rows = parsed if isinstance(parsed, list) else [parsed]
        numbered = list(enumerate(rows, start=1))
    except json.JSONDecodeError:
        numbered = []
        for row_no, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                numbered.append((row_no, json.loads(line)))
            except json.JSONDecodeError as err:
                raise DataFormatError(f"{path}:{row_no}: not valid JSON ({err})") from None
    setting = pope_setting(path)
    samples = []
    for row_no, obj in numbered:
        where = f"{path}:{row_no}"
        if not isinstance(obj, dict) or not {"image", "text", "label"} <= set(obj):
            raise DataFormatError(f"{where}: a POPE row is an object with image, text and label")
        label = str(obj["label"]).strip().lower()
        if label not in ("yes", "no"):
            raise DataFormatError(f"{where}: label must be 'yes' or 'no', got {obj['label']!r}")
        meta = {k: v for k, v in obj.items() if k not in ("image", "text", "label")}
        meta["pope_negative"] = setting if label == "no" else None
        sid = str(obj.get("question_id", row_no))
        samples.append(Sample(str(obj["text"]), folder / str(obj["image"]), label, sid, meta))
    if not samples:
        raise EmptyInputError(f"{path} holds no questions")
    return samples


__all__ = [
    "LETTERS",
    "MC_INSTRUCTION",
    "extract_choice",
    "multiple_choice_prompt",
    "pope_setting",
    "read_pope",
    "read_vlmevalkit_tsv",
]
