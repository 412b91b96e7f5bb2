"""The audit's data: ``--data`` read into samples (the demo mix, JSONL, VLMEvalKit TSV, POPE
question files, parquet / Hugging Face datasets), ``--n`` samples per question kind."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from interp.cli import UsageError
from interp.data_spec import load_data
from interp.samples import Sample, ensure_samples


def demo_data(n: int, seed: int = 0, audio: bool = False) -> list[Sample]:
    """The demo world's audit mix, ``n`` per question kind: colour questions (the language-prior
    benchmark), visual-reference recall items (whole items of three questions: ``n`` rounded
    down to a multiple of 3, at least 12), POPE-style existence questions and conflict items;
    descriptions, which cost the most, a third as many (at least 8).

    The conflict items are the two-image set (drawn object, written label, caption), or, for a
    model that takes ``audio``, the tri-modal set (image, audio and caption, world v3)."""
    from interp.datasets import demo_world

    recall = max(3 * (n // 3), 12)
    return [
        *demo_world("test", n=n, seed=seed, qtypes=["color"]),
        *demo_world("test", n=max(n // 3, 8), seed=seed + 3, qtypes=["describe"]),
        *demo_world("test", n=recall, seed=seed + 4, qtypes=["recall", "digit_arith", "letters"]),
        *demo_world("test", n=n, seed=seed + 1, qtypes=["exist"]),
        *demo_world("test", n=n, seed=seed + 2, qtypes=["trimodal" if audio else "conflict"]),
    ]


DEMO_N = 120


def per_kind(samples: Sequence[Sample], n: int | None) -> list[Sample]:
    """The first ``n`` samples of each question kind (the ``qtype`` label; samples without one
    are one kind), in their order; all of them when ``n`` is None."""
    if n is None:
        return list(samples)
    seen: dict[str, int] = {}
    kept = []
    for s in samples:
        kind = str(s.meta.get("qtype"))
        seen[kind] = seen.get(kind, 0) + 1
        if seen[kind] <= n:
            kept.append(s)
    return kept


def read_data(
    spec: str,
    n: int | None,
    seed: int,
    images: str | None = None,
    columns: str | None = None,
    audio: bool = False,
) -> list[Sample]:
    """``demo``, a JSONL file, a VLMEvalKit ``.tsv``, a POPE question file (``.json`` /
    ``.jsonl`` whose rows hold ``text`` and ``label``), or parquet / Hugging Face datasets data
    read through ``columns``; every image is opened up front. ``n`` is the number of samples
    per question kind (:func:`demo_data`, :func:`per_kind`; default: 120 for the demo, every
    sample of a file); ``audio``: the model takes audio (the demo mix's conflict items are then
    the tri-modal ones)."""
    from interp.datasets.formats import read_pope, read_vlmevalkit_tsv

    path = Path(spec)
    if columns is not None and (spec == "demo" or path.suffix.lower() in (".tsv", ".json")):
        raise UsageError("--columns applies to parquet and Hugging Face datasets data")
    if spec == "demo":
        return ensure_samples(demo_data(n or DEMO_N, seed, audio))
    if path.suffix.lower() == ".tsv":
        samples = read_vlmevalkit_tsv(path)
    elif (
        path.is_file() and path.suffix.lower() not in (".parquet", ".pq") and _looks_like_pope(path)
    ):
        samples = read_pope(path, images)
    else:
        if images is not None:
            raise UsageError("--images is for POPE question files (rows with text and label)")
        if spec.startswith("demo:"):
            return load_data(spec, n, seed, default_qtypes=("color",), columns=columns)
        return load_data(
            spec,
            None,
            seed,
            default_qtypes=("color",),
            columns=columns,
            keep=lambda samples: per_kind(samples, n),
        )
    samples = per_kind(samples, n)
    for s in samples:
        s.load_images()
    return ensure_samples(samples)


def _looks_like_pope(path: Path) -> bool:
    head = path.read_text(errors="replace").lstrip()[:2000]
    first = head.splitlines()[0] if head else ""
    try:
        obj = json.loads(first)
    except json.JSONDecodeError:
        try:
            obj = json.loads(head if head.startswith("[") else "null")
        except json.JSONDecodeError:
            return head.startswith("[") and '"label"' in head
        obj = obj[0] if isinstance(obj, list) and obj else obj
    return isinstance(obj, dict) and "text" in obj and "label" in obj and "question" not in obj


__all__ = ["DEMO_N", "demo_data", "per_kind", "read_data"]
