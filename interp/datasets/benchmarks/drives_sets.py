"""The drives paper's video sets and its external validation set (Sec. 5, Table 1, Sec. 5.5,
Supplementary Sec. 12).

- **LLaVA-Video-178K** (``llava-video``; Table 1: "Supervised video QA", 100 samples): the
  published annotations (``lmms-lab/LLaVA-Video-178K``: per subset folder
  ``<subset>/<subset>_oe[_v0_1]_qa_processed.json``, a JSON list of ``{"id", "video",
  "conversations": [{"from": "human", "value": "<image>\\n..."}, {"from": "gpt", ...}, ...],
  "data_source"}``, videos extracted from ``<subset>_videos_k.tar.gz`` under the subset folder
  at the record's ``video`` path). The paper does not say which 100 samples or which question
  kind; the reader takes the open-ended files (``:mc`` the multiple-choice ones) in sorted path
  order, each record's first human/gpt turn, the first 100 (a declared choice).
- **MiraData** (``miradata``; "the first 500 MiraData samples with manually designed
  questions"): the published meta CSV (``miradata_v1_*.csv``: ``clip_id``, ``source``,
  ``video_url``, ``video_id``, ..., ``file_path``, ``short_caption``, ``dense_caption``, ...;
  the clips cut by MiraData's ``download_data.py`` to ``<copy>/<file_path>``): the first 500 rows.
  The questions were written by the paper's authors and are not released: give them as
  ``questions.jsonl`` / ``questions.csv`` beside the CSV (``clip_id``, ``question``) or one
  question for every clip with ``question=``. Reference-free (no answer); the captions go to
  ``meta``.
- **VLMBias** (``vlmbias``; ``anvo25/vlms-are-biased``, split ``main``: ``ID``, ``image``,
  ``prompt``, ``ground_truth``, ``expected_bias``, ``topic``, ``sub_topic``, ...): every row, the
  prompt verbatim (it asks for the answer in curly brackets), reference ``ground_truth``,
  ``meta["prior_answer"] = expected_bias`` (the answer knowledge of the unmodified subject gives).
  The paper used 200 rows it does not list (``--n 200`` takes the first 200: a declared choice);
  its labels are per generation — :func:`vlmbias_label` labels an answer ``prior_driven`` (it
  states ``expected_bias``), ``grounded`` (``ground_truth``) or ``other``, with VLMBias's own
  matching (braces stripped, case-insensitive, then the digits alone).
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

from ...errors import DataFormatError
from ...samples import Sample
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

LLAVA_VIDEO_FIRST = 100
LLAVA_VIDEO_KEYS = ("id", "video", "conversations")
MIRADATA_FIRST = 500
MIRADATA_COLUMNS = ("clip_id", "file_path", "short_caption", "dense_caption")
VLMBIAS_COLUMNS = ("ID", "image", "prompt", "ground_truth", "expected_bias", "topic", "sub_topic")


# -- LLaVA-Video-178K -------------------------------------------------------------------------------


def _first_turns(conversations: list[dict[str, Any]]) -> tuple[str, str] | None:
    human = next((c for c in conversations if c.get("from") == "human"), None)
    gpt = next((c for c in conversations if c.get("from") == "gpt"), None)
    if human is None or gpt is None:
        return None
    question = str(human.get("value") or "").replace("<image>", "").strip()
    return question, str(gpt.get("value") or "").strip()


def read_llava_video(root: Path | None, opts: Options) -> list[Sample]:
    kind = opts.variant or "oe"
    if root is None or not root.is_dir():
        raise BenchmarkSourceError(
            "llava-video: LLaVA-Video-178K is read from a local copy of lmms-lab/LLaVA-Video-178K "
            "(--data llava-video@DIR: DIR/<subset>/<subset>_oe[_v0_1]_qa_processed.json with the "
            "subset's videos extracted under DIR/<subset>/)"
        )
    files = sorted(root.rglob(f"*_{kind}_*qa_processed.json"))
    if not files:
        raise BenchmarkSourceError(
            f"llava-video: no *_{kind}_*qa_processed.json under {root} (the annotation files of "
            "lmms-lab/LLaVA-Video-178K)"
        )
    limit = LLAVA_VIDEO_FIRST if opts.n is None else min(opts.n, LLAVA_VIDEO_FIRST)
    out: list[Sample] = []
    for path in files:
        records = json.loads(path.read_text())
        if not isinstance(records, list):
            raise DataFormatError(f"{path}: a LLaVA-Video-178K annotation file is a JSON list")
        for rec in records:
            missing = [k for k in LLAVA_VIDEO_KEYS if k not in rec]
            if missing:
                raise DataFormatError(f"{path}: record {rec.get('id')!r} lacks {missing}")
            turns = _first_turns(rec["conversations"])
            if turns is None:
                continue
            meta = {
                "question_type": "multiple-choice" if kind == "mc" else "open",
                "category": rec.get("data_source"),
                "subset": path.parent.name,
                "turns": len(rec["conversations"]) // 2,
            }
            video = path.parent / str(rec["video"])
            out.append(Sample(turns[0], None, turns[1], str(rec["id"]), meta, video=str(video)))
            if len(out) >= limit:
                return out
    return out


# -- MiraData ---------------------------------------------------------------------------------------


def _miradata_questions(folder: Path, opts: Options) -> dict[str, str] | str:
    if opts.extra.get("question"):
        return str(opts.extra["question"])
    if (folder / "questions.jsonl").is_file():
        lines = (folder / "questions.jsonl").read_text().splitlines()
        rows = [json.loads(line) for line in lines if line.strip()]
    elif (folder / "questions.csv").is_file():
        with open(folder / "questions.csv", newline="") as f:
            rows = list(csv.DictReader(f))
    else:
        raise BenchmarkNotPublicError(
            "miradata: MiraData's meta CSV and clips are public, the paper's questions are not "
            '("manually designed questions", not released). Give them as questions.jsonl or '
            "questions.csv beside the CSV (clip_id, question), or one question for every clip "
            "with question='...'"
        )
    bad = [r for r in rows if not r.get("clip_id") or not r.get("question")]
    if bad:
        raise DataFormatError(f"miradata: question rows need clip_id and question, got {bad[0]}")
    return {str(r["clip_id"]): str(r["question"]) for r in rows}


def read_miradata(root: Path | None, opts: Options) -> list[Sample]:
    if root is None:
        raise BenchmarkSourceError(
            "miradata: give a local copy (--data miradata@DIR: a MiraData meta CSV, e.g. "
            "miradata_v1_9k.csv, with the clips download_data.py cut to DIR/<file_path>)"
        )
    if root.is_file():
        meta_csv, folder = root, root.parent
    else:
        found = sorted(root.glob("miradata*.csv")) or sorted(
            p for p in root.glob("*.csv") if p.name != "questions.csv"
        )
        if not found:
            raise BenchmarkSourceError(f"miradata: no meta CSV (miradata_v1_*.csv) in {root}")
        meta_csv, folder = found[0], root
    with open(meta_csv, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    require_columns(rows, MIRADATA_COLUMNS, f"MiraData ({meta_csv.name})")
    questions = _miradata_questions(folder, opts)
    out = []
    for row in rows[:MIRADATA_FIRST]:
        cid = str(row["clip_id"])
        question = questions if isinstance(questions, str) else questions.get(cid)
        if question is None:
            raise DataFormatError(f"miradata: no question for clip {cid} (one of the first 500)")
        meta = {
            "question_type": "open",
            "category": row.get("source"),
            "short_caption": row["short_caption"],
            "dense_caption": row["dense_caption"],
        }
        video = str(folder / row["file_path"])
        out.append(Sample(question, None, None, f"miradata-{cid}", meta, video=video))
        if opts.n is not None and len(out) >= opts.n:
            break
    return out


# -- VLMBias ----------------------------------------------------------------------------------------


def _unbrace(value: Any) -> str:
    return str(value if value is not None else "").strip().strip("{}").strip()


def _same(said: str, target: str) -> bool:
    """VLMBias's match: equal after stripping braces and case, else the same digits."""
    a, b = _unbrace(said).lower(), _unbrace(target).lower()
    if not b:
        return False
    if a == b:
        return True
    da, db = re.sub(r"\D", "", a), re.sub(r"\D", "", b)
    return bool(da) and da == db


def vlmbias_answer(text: str) -> str:
    """The answer a generation gives: the last ``{...}`` (the prompt's format), else the text."""
    braced = re.findall(r"\{([^{}]*)\}", text)
    return braced[-1] if braced else text.strip()


def vlmbias_label(text: str, sample: Sample) -> str:
    """``"grounded"`` (the answer is ``ground_truth``), ``"prior_driven"`` (it is
    ``expected_bias``) or ``"other"``: Sec. 5.5's two generation patterns and the rest."""
    said = vlmbias_answer(text)
    if _same(said, str(sample.answer or "")):
        return "grounded"
    if _same(said, str(sample.meta.get("prior_answer") or "")):
        return "prior_driven"
    return "other"


def read_vlmbias(root: Path | None, opts: Options) -> list[Sample]:
    rows, base = table_rows(BENCHMARKS_BY_NAME["vlmbias"], root)
    require_columns(rows, VLMBIAS_COLUMNS, "VLMBias")
    out = []
    for k, row in enumerate(rows):
        meta = {
            "question_type": "open",
            "counterfactual": True,
            "prior_answer": _unbrace(row["expected_bias"]) or None,
            "category": row["topic"],
            "sub_topic": row["sub_topic"],
        }
        for key in ("type_of_question", "with_title", "pixel"):
            if key in row:
                meta[key] = row[key]
        out.append(
            Sample(
                str(row["prompt"]),
                image_of(row["image"], base, f"VLMBias row {k}"),
                _unbrace(row["ground_truth"]),
                f"vlmbias-{row['ID']}",
                meta,
            )
        )
        if opts.n is not None and len(out) >= opts.n:
            break
    return out


BENCHMARKS_BY_NAME: dict[str, Benchmark] = {}

for _b in (
    Benchmark(
        "llava-video",
        "drives",
        "LLaVA-Video-178K",
        None,
        "LLaVA-Video-178K",
        "lmms-lab/LLaVA-Video-178K's <subset>/*_qa_processed.json with the videos extracted",
        read_llava_video,
        variants=("oe", "mc"),
        note="the first 100 open-ended records (the paper does not say which 100)",
    ),
    Benchmark(
        "miradata",
        "drives",
        "MiraData",
        None,
        "MiraData",
        "a MiraData meta CSV + clips at <file_path>; questions.jsonl (not released)",
        read_miradata,
        note="first 500 clips; the authors' questions are the user's",
    ),
    Benchmark(
        "vlmbias",
        "drives",
        "VLMBias",
        ("anvo25/vlms-are-biased", None, "main"),
        "VLMBias",
        "a parquet file, a folder of parquet files (a hub snapshot) or a save_to_disk folder",
        read_vlmbias,
        note="prompt verbatim, reference ground_truth, prior_answer expected_bias",
    ),
):
    BENCHMARKS_BY_NAME[_b.name] = register_benchmark(_b, overwrite=True)
