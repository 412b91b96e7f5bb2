"""POPE, MAVIS and the benchmarks that are not published.

- **POPE** (``pope:random|popular|adversarial``): POPE's own question files
  (``coco_pope_<setting>.json``: JSON lines with ``question_id``, ``image``, ``text``, ``label``)
  beside a COCO val2014 image folder, read by :func:`~interp.datasets.formats.read_pope`; or the
  ``lmms-lab/POPE`` table (split ``test``; ``question``, ``answer``, ``image``, ``category`` = the
  setting), filtered to the setting.
- **MAVIS** (the drives paper: "the first 500 image-question samples, using the first entry in
  the dataset's ``verifiable_facts`` field as the reference answer"): a local table with
  ``question``, ``image`` and ``verifiable_facts`` (a list); the first 500 rows, reference =
  ``verifiable_facts[0]``. The published layout beyond those three fields was not found in our
  sources; the reader checks only them.
- Not published — reading them raises :class:`BenchmarkNotPublicError` saying what to give
  instead (a JSONL file with the study's labels, read by ``--data file.jsonl``): the recall
  paper's entity QA pairs as one testbed (``recall-entities``: its images are public and read by
  ``cifar100``, ``food101``, ``landmarks`` with the user's ``qa.jsonl``; ``mnist`` needs none),
  the no-image ablation's 540-image, 4-wording benchmark (no release named in our copy) and
  Tri-PvP's 8,000 samples (the paper names github.com/MiuLab/Tri-PvP, whose layout is not in our
  sources).

The recall paper's sets are in :mod:`~interp.datasets.benchmarks.recall_sets`, the drives paper's video sets and VLMBias in
:mod:`~interp.datasets.benchmarks.drives_sets`.
"""

from __future__ import annotations

from pathlib import Path

from ...samples import Sample
from ..formats import POPE_SETTINGS, read_pope
from .registry import (
    Benchmark,
    BenchmarkNotPublicError,
    BenchmarkSourceError,
    Options,
    image_of,
    register_benchmark,
    require_columns,
    table_rows,
)

POPE_TABLE_COLUMNS = ("question", "answer", "image", "category")
MAVIS_COLUMNS = ("question", "image", "verifiable_facts")
MAVIS_FIRST = 500


def read_pope_benchmark(root: Path | None, opts: Options) -> list[Sample]:
    setting = opts.variant or "adversarial"
    if root is not None and root.is_dir():
        files = sorted(root.rglob(f"*pope_{setting}.json"))
        if files:
            images = next(
                (p for p in (root / "val2014", root / "images", files[0].parent) if p.is_dir()),
                files[0].parent,
            )
            samples = read_pope(files[0], images)
            for s in samples:
                s.meta.update(question_type="yes/no", category=setting)
            return samples
    rows, base = table_rows(BENCHMARKS_BY_NAME["pope"], root)
    require_columns(rows, POPE_TABLE_COLUMNS, "POPE")
    out = []
    for k, row in enumerate(rows):
        if str(row["category"]) != setting:
            continue
        label = str(row["answer"]).strip().lower()
        meta = {
            "question_type": "yes/no",
            "category": setting,
            "pope_negative": setting if label == "no" else None,
        }
        sid = str(row.get("question_id") or row.get("id") or k)
        out.append(
            Sample(
                str(row["question"]),
                image_of(row["image"], base, f"POPE row {k}"),
                label,
                f"pope-{setting}-{sid}",
                meta,
            )
        )
        if opts.n is not None and len(out) >= opts.n:
            break
    return out


def read_mavis(root: Path | None, opts: Options) -> list[Sample]:
    if root is None:
        raise BenchmarkSourceError(
            "mavis: give a local copy (--data mavis@DIR: a parquet file / folder or a "
            "save_to_disk folder with question, image and verifiable_facts)"
        )
    rows, base = table_rows(BENCHMARKS_BY_NAME["mavis"], root)
    require_columns(rows, MAVIS_COLUMNS, "MAVIS")
    out = []
    for k, row in enumerate(rows[:MAVIS_FIRST]):
        facts = list(row["verifiable_facts"] or [])
        out.append(
            Sample(
                str(row["question"]),
                image_of(row["image"], base, f"MAVIS row {k}"),
                str(facts[0]) if facts else None,
                f"mavis-{k}",
                {"question_type": "open", "verifiable_facts": facts},
            )
        )
    return out


def _not_public(name: str, title: str, expects: str):
    def read(root: Path | None, opts: Options) -> list[Sample]:
        raise BenchmarkNotPublicError(f"{name} ({title}): {expects}")

    return read


BENCHMARKS_BY_NAME: dict[str, Benchmark] = {}

_NOT_PUBLIC = {
    "recall-entities": (
        "recall",
        "the recall paper's entity QA testbed (CIFAR-100, Food-101, Landmarks, MNIST)",
        "the paper names no release of its generated QA pairs; the images are public: read "
        "cifar100, food101 or landmarks with the pairs as qa.jsonl beside the copy (mnist needs "
        "none), or give a JSONL file with one row per question and setting (meta: group, family, "
        "entity, setting) to --data file.jsonl",
    ),
    "ablation-540": (
        "ablation",
        "the no-image ablation's 540 images x 4 wordings",
        "our copy of the paper names no release; give a JSONL file (meta: variant, category) to "
        "--data file.jsonl",
    ),
    "tri-pvp": (
        "conflict",
        "Tri-PvP (8,000 samples; github.com/MiuLab/Tri-PvP)",
        "the repository's layout is not in our sources; give a JSONL file with the image / audio "
        "/ text labels (meta: order, evidence, the source labels) to --data file.jsonl",
    ),
}

for _name, (_paper, _title, _expects) in _NOT_PUBLIC.items():
    BENCHMARKS_BY_NAME[_name] = register_benchmark(
        Benchmark(
            _name,
            _paper,
            _title,
            None,
            _name,
            "not published",
            _not_public(_name, _title, _expects),
            note=_expects,
            public=False,
        ),
        overwrite=True,
    )

for _b in (
    Benchmark(
        "pope",
        "decoding",
        "POPE (MSCOCO)",
        ("lmms-lab/POPE", None, "test"),
        "POPE",
        "POPE's coco_pope_<setting>.json + val2014/ images, or the lmms-lab/POPE table",
        read_pope_benchmark,
        variants=POPE_SETTINGS,
        note="one negative-sampling setting (default adversarial)",
    ),
    Benchmark(
        "mavis",
        "drives",
        "MAVIS",
        None,
        "MAVIS",
        "a table with question, image, verifiable_facts",
        read_mavis,
        note="first 500 rows, reference = verifiable_facts[0]",
    ),
):
    BENCHMARKS_BY_NAME[_b.name] = register_benchmark(_b, overwrite=True)
