"""The chain-of-embedding paper's six benchmarks and its controlled baseline (its Appendix C).

Every sample carries ``meta["question_type"]`` (``"yes/no"``, ``"multiple-choice"`` or
``"one-word"``, Table 7's B / M), ``meta["category"]`` where the benchmark has one, and the
reference answer as ``answer``. The paper's selection and conversion:

- **MME** (``lmms-lab/MME``, split ``test``, 2,374 rows): every row; the question already ends
  with "Please answer yes or no."; answer ``Yes`` / ``No``.
- **MMBench** (``lmms-lab/MMBench_EN``, split ``dev``, 4,377 rows — Table 7's ``|D|``): the hint, the
  question, the options A–D that are present, and the instruction to answer with the letter
  (:func:`~interp.datasets.formats.multiple_choice_prompt`); answer the letter.
- **MMStar** (``Lin-Chen/MMStar``, split ``val``, 1,500 rows): the question holds its options
  (``Options: A: ..., B: ...``); the letter instruction is appended; answer the letter.
- **MMMU** (``lmms-lab/MMMU``, split ``validation``, 900 rows): only multiple-choice questions with
  exactly one image (``image_1`` set, ``image_2``–``image_7`` empty, no ``<image k>`` with k > 1 in
  the question or options); the explanation is never used; ``<image 1>`` reads "the image".
- **VLind-Bench** (``klee972/VLind-Bench``: ``data.json`` and ``images/counterfactual/...``): each
  instance with at least one image of two or more human votes (VLind-Bench's own threshold) gives
  two questions on its best counterfactual image, its true statement (answer ``Yes``) and its false
  statement (answer ``No``), converted to Yes/No questions. The paper converted them with GPT-4o and
  a prompt our copy of the paper does not reproduce; ``convert=`` takes a language-model hook that
  is given :data:`VLIND_CONVERSION_PROMPT` (ours) filled with the statement; without one, the
  template :data:`VLIND_TEMPLATE` (ours) is used. Both are declared departures.
- **ViLP** (``ViLP/ViLP``, ``ViLP.parquet``, 300 rows): ``image3`` with ``answer3`` (the paper's
  counterfactual pair), asked as ViLP's own evaluation does: "Please answer with one word:
  {question}"; ``meta["prior_answer"]`` is ``answer1`` (the answer the language prior gives).
- **Controlled baseline** (Appendix C): CommonsenseQA (``tau/commonsense_qa``, split
  ``validation``) questions as multiple choice, each paired with a COCO val2017 image drawn with
  ``random.Random(seed)`` from the sorted file list: ``meta["needs_image"] = False`` (D_T by
  construction).
"""

from __future__ import annotations

import ast
import json
import random
import re
from pathlib import Path
from typing import Any

from ...errors import DataFormatError
from ...samples import Sample
from ..formats import LETTERS, MC_INSTRUCTION, multiple_choice_prompt
from .registry import (
    Benchmark,
    BenchmarkSourceError,
    Options,
    hub_rows,
    image_of,
    register_benchmark,
    require_columns,
    table_rows,
)

MME_COLUMNS = ("question_id", "image", "question", "answer", "category")
MMBENCH_COLUMNS = ("index", "question", "hint", "A", "B", "C", "D", "answer", "category", "image")
MMSTAR_COLUMNS = ("index", "question", "image", "answer", "category", "l2_category")
MMMU_COLUMNS = (
    "id",
    "question",
    "options",
    "explanation",
    *(f"image_{k}" for k in range(1, 8)),
    "img_type",
    "answer",
    "topic_difficulty",
    "question_type",
    "subfield",
)
VILP_COLUMNS = ("question", "image1", "answer1", "image2", "answer2", "image3", "answer3")
CSQA_COLUMNS = ("id", "question", "question_concept", "choices", "answerKey")
VLIND_KEYS = (
    "concept",
    "context",
    "context_id",
    "true_statement",
    "false_statement",
    "best_img_id",
    "aggregated_human_label_good_images",
)

VILP_PROMPT = "Please answer with one word: {question}"
VLIND_VOTES = 2
VLIND_TEMPLATE = 'Is the following statement true for this image: "{statement}"? Answer Yes or No.'
VLIND_CONVERSION_PROMPT = (
    "Rewrite the statement below as a question about an image that is answered with Yes when "
    "the statement holds and No when it does not. Keep every detail of the statement; write only "
    "the question, ending with 'Answer Yes or No.'\n\nStatement: {statement}"
)


def _text(value: Any) -> str | None:
    """A text cell, None for missing / blank / ``nan`` cells (MMBench stores absent options so)."""
    if value is None:
        return None
    text = str(value).strip()
    return None if text.lower() in ("", "nan", "none") else text


def _table(
    name: str, root: Path | None, columns: tuple[str, ...], what: str
) -> tuple[list[dict[str, Any]], Path | None]:
    """Benchmark ``name``'s rows (checked to hold ``columns``; ``what`` names it in the error)
    and the folder its relative image paths start from: how every table reader here begins."""
    rows, base = table_rows(BENCHMARKS_BY_NAME[name], root)
    require_columns(rows, columns, what)
    return rows, base


# -- MME --------------------------------------------------------------------------------------------


def read_mme(root: Path | None, opts: Options) -> list[Sample]:
    rows, base = _table("mme", root, MME_COLUMNS, "MME")
    out = []
    for k, row in enumerate(rows):
        answer = _text(row["answer"])
        if answer is None or answer.lower() not in ("yes", "no"):
            raise DataFormatError(f"MME row {k}: answer {row['answer']!r} is not Yes / No")
        out.append(
            Sample(
                str(row["question"]).strip(),
                image_of(row["image"], base, f"MME row {k}"),
                answer.capitalize(),
                f"mme-{k}",  # question_id names the image, shared by its two questions
                {
                    "question_type": "yes/no",
                    "category": row["category"],
                    "image_id": row["question_id"],
                },
            )
        )
        if opts.n is not None and len(out) >= opts.n:
            break
    return out


# -- MMBench ----------------------------------------------------------------------------------------


def read_mmbench(root: Path | None, opts: Options) -> list[Sample]:
    rows, base = _table("mmbench", root, MMBENCH_COLUMNS, "MMBench")
    out = []
    for k, row in enumerate(rows):
        options = {c: t for c in LETTERS[:4] if (t := _text(row.get(c))) is not None}
        answer = _text(row["answer"])
        if answer not in options:
            raise DataFormatError(f"MMBench index {row['index']}: answer {answer!r} not an option")
        meta = {
            "question_type": "multiple-choice",
            "category": row["category"],
            "l2_category": row.get("l2-category", row.get("L2-category")),
            "options": options,
            "answer_text": options[answer],
        }
        prompt = multiple_choice_prompt(str(row["question"]).strip(), options, _text(row["hint"]))
        out.append(
            Sample(
                prompt,
                image_of(row["image"], base, f"MMBench row {k}"),
                answer,
                f"mmbench-{row['index']}",
                meta,
            )
        )
        if opts.n is not None and len(out) >= opts.n:
            break
    return out


# -- MMStar -----------------------------------------------------------------------------------------

_MMSTAR_OPTION = re.compile(r"(?:^|,\s*|\n\s*)([A-F])\s*[:.]\s*")


def mmstar_options(question: str) -> dict[str, str]:
    """The options MMStar writes into its question after ``Options:`` (``A: x, B: y, ...``)."""
    _, sep, tail = question.partition("Options:")
    tail = tail.strip()
    if not sep:
        return {}
    marks = list(_MMSTAR_OPTION.finditer(tail))
    options = {}
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(tail)
        options[m.group(1)] = tail[m.end() : end].strip().rstrip(",").strip()
    return options


def read_mmstar(root: Path | None, opts: Options) -> list[Sample]:
    rows, base = _table("mmstar", root, MMSTAR_COLUMNS, "MMStar")
    out = []
    for k, row in enumerate(rows):
        question = str(row["question"]).strip()
        options = mmstar_options(question)
        answer = _text(row["answer"])
        if options and answer not in options:
            raise DataFormatError(f"MMStar index {row['index']}: answer {answer!r} not an option")
        meta = {
            "question_type": "multiple-choice",
            "category": row["category"],
            "l2_category": row["l2_category"],
            "options": options,
            "answer_text": options.get(answer or ""),
        }
        out.append(
            Sample(
                f"{question}\n{MC_INSTRUCTION}",
                image_of(row["image"], base, f"MMStar row {k}"),
                answer,
                f"mmstar-{row['index']}",
                meta,
            )
        )
        if opts.n is not None and len(out) >= opts.n:
            break
    return out


# -- MMMU -------------------------------------------------------------------------------------------

_IMAGE_REF = re.compile(r"<image (\d+)>")


def mmmu_single_image(row: dict[str, Any]) -> bool:
    """The paper's MMMU filter: a multiple-choice question with exactly one image, referring to
    no image but the first."""
    if str(row.get("question_type")) != "multiple-choice" or row.get("image_1") is None:
        return False
    if any(row.get(f"image_{k}") is not None for k in range(2, 8)):
        return False
    refs = {int(m) for m in _IMAGE_REF.findall(f"{row['question']} {row['options']}")}
    return refs <= {1}


def read_mmmu(root: Path | None, opts: Options) -> list[Sample]:
    rows, base = _table("mmmu", root, MMMU_COLUMNS, "MMMU")
    out = []
    for row in rows:
        if not mmmu_single_image(row):
            continue
        try:
            raw = ast.literal_eval(str(row["options"]))
        except (ValueError, SyntaxError):
            raise DataFormatError(
                f"MMMU {row['id']}: options {row['options']!r} not a list"
            ) from None
        options = {LETTERS[i]: _IMAGE_REF.sub("the image", str(t)) for i, t in enumerate(raw)}
        answer = _text(row["answer"])
        if answer not in options:
            continue  # an answer outside the options is no multiple-choice item
        question = _IMAGE_REF.sub("the image", str(row["question"]).strip())
        subject = str(row["id"]).split("_")[1:-1]
        meta = {
            "question_type": "multiple-choice",
            "category": "_".join(subject),
            "subfield": row["subfield"],
            "topic_difficulty": row["topic_difficulty"],
            "img_type": row["img_type"],
            "options": options,
            "answer_text": options[answer],
        }
        out.append(
            Sample(
                multiple_choice_prompt(question, options),
                image_of(row["image_1"], base, f"MMMU {row['id']}"),
                answer,
                str(row["id"]),
                meta,
            )
        )
        if opts.n is not None and len(out) >= opts.n:
            break
    return out


# -- VLind-Bench ------------------------------------------------------------------------------------


def vlind_question(statement: str, convert: Any = None) -> str:
    """A Yes/No question from a VLind-Bench statement: through ``convert`` (a language-model hook
    given :data:`VLIND_CONVERSION_PROMPT`), else :data:`VLIND_TEMPLATE`."""
    if convert is None:
        return VLIND_TEMPLATE.format(statement=statement.strip())
    question = str(convert(VLIND_CONVERSION_PROMPT.format(statement=statement.strip()))).strip()
    if not question:
        raise DataFormatError(f"the conversion hook returned an empty question for {statement!r}")
    return question


VLIND_HUB = "klee972/VLind-Bench"


def _vlind_files(root: Path | None) -> tuple[Path, Path]:
    if root is None:
        from ..tabular import hub_offline

        reason = hub_offline()
        if reason is not None:
            raise BenchmarkSourceError(
                f"vlind: VLind-Bench's release ({VLIND_HUB}: a data.json and an image folder) "
                f"needs a network ({reason}); give a local copy: --data vlind@DIR (DIR/data.json "
                "or DIR/data/data.json, images under DIR/images/counterfactual or "
                "DIR/data/images/counterfactual)"
            )
        from huggingface_hub import snapshot_download  # only online

        root = Path(snapshot_download(VLIND_HUB, repo_type="dataset"))
    for base in (root, root / "data"):
        if (base / "data.json").is_file():
            for images in (base / "images" / "counterfactual", base / "counterfactual"):
                if images.is_dir():
                    return base / "data.json", images
            raise BenchmarkSourceError(f"vlind: {base} has data.json but no images/counterfactual")
    raise BenchmarkSourceError(f"vlind: no data.json in {root} or {root / 'data'}")


def read_vlind(root: Path | None, opts: Options) -> list[Sample]:
    data, images = _vlind_files(root)
    instances = json.loads(data.read_text())
    if not isinstance(instances, list) or not instances:
        raise DataFormatError(f"{data}: VLind-Bench's data.json is a non-empty list of instances")
    missing = [k for k in VLIND_KEYS if k not in instances[0]]
    if missing:
        raise DataFormatError(f"{data}: instances lack {', '.join(missing)}")
    out = []
    for inst in instances:
        votes = inst["aggregated_human_label_good_images"] or {}
        if not any(int(v) >= VLIND_VOTES for v in votes.values()):
            continue
        folder = images / str(inst["concept"]) / f"{inst['context_id']}_{inst['context']}"
        image = folder / f"{inst['best_img_id']}.jpg"
        for kind, answer in (("true", "Yes"), ("false", "No")):
            statement = str(inst[f"{kind}_statement"])
            meta = {
                "question_type": "yes/no",
                "category": inst["concept"],
                "counterfactual": True,
                "statement": statement,
                "statement_kind": kind,
                "context_id": str(inst["context_id"]),
            }
            sid = f"vlind-{inst['concept']}-{inst['context_id']}-{kind}"
            out.append(Sample(vlind_question(statement, opts.convert), image, answer, sid, meta))
        if opts.n is not None and len(out) >= opts.n:
            break
    return out


# -- ViLP -------------------------------------------------------------------------------------------


def read_vilp(root: Path | None, opts: Options) -> list[Sample]:
    rows, base = _table("vilp", root, VILP_COLUMNS, "ViLP")
    out = []
    for k, row in enumerate(rows):
        if row["image3"] is None or _text(row["answer3"]) is None:
            continue
        meta = {
            "question_type": "one-word",
            "counterfactual": True,
            "image_slot": 3,
            "prior_answer": _text(row["answer1"]),
        }
        question = VILP_PROMPT.format(question=str(row["question"]).strip())
        out.append(
            Sample(
                question,
                image_of(row["image3"], base, f"ViLP row {k} image3"),
                _text(row["answer3"]),
                f"vilp-{k}",
                meta,
            )
        )
        if opts.n is not None and len(out) >= opts.n:
            break
    return out


# -- the controlled baseline ------------------------------------------------------------------------


def _coco_images(root: Path | None) -> list[Path]:
    folder = None
    if root is not None:
        for cand in (root / "val2017", root / "coco" / "val2017", root):
            if cand.is_dir() and any(cand.glob("*.jpg")):
                folder = cand
                break
    if folder is None:
        raise BenchmarkSourceError(
            "csqa-coco: the COCO val2017 images are read from a local folder: --data "
            "csqa-coco@DIR with DIR/val2017/*.jpg (and CommonsenseQA as DIR/commonsense_qa, a "
            "parquet folder or a save_to_disk folder; without it, tau/commonsense_qa from the hub)"
        )
    return sorted(folder.glob("*.jpg"))


def read_csqa_coco(root: Path | None, opts: Options) -> list[Sample]:
    images = _coco_images(root)
    bench = BENCHMARKS_BY_NAME["csqa-coco"]
    csqa = None
    if root is not None:
        csqa = next((p for p in (root / "commonsense_qa", root / "csqa") if p.exists()), None)
    if csqa is None:
        rows = hub_rows(bench)
    else:
        rows, _ = table_rows(bench, csqa)
    require_columns(rows, CSQA_COLUMNS, "CommonsenseQA")
    rng = random.Random(opts.seed)
    out = []
    for row in rows:
        choices = row["choices"]
        options = dict(zip(choices["label"], choices["text"]))
        answer = _text(row["answerKey"])
        if answer not in options:
            continue  # the test split has no answers
        meta = {
            "question_type": "multiple-choice",
            "category": row["question_concept"],
            "needs_image": False,
            "options": options,
            "answer_text": options[answer],
        }
        image = images[rng.randrange(len(images))]
        meta["image_id"] = image.name
        out.append(
            Sample(
                multiple_choice_prompt(str(row["question"]).strip(), options),
                image,
                answer,
                f"csqa-{row['id']}",
                meta,
            )
        )
        if opts.n is not None and len(out) >= opts.n:
            break
    return out


BENCHMARKS_BY_NAME: dict[str, Benchmark] = {}

_TABLE = "a parquet file, a folder of parquet files (a hub snapshot) or a save_to_disk folder"

for _b in (
    Benchmark(
        "mme",
        "coe",
        "MME",
        ("lmms-lab/MME", None, "test"),
        "MME",
        _TABLE,
        read_mme,
        note="all 2,374 Yes/No questions",
    ),
    Benchmark(
        "mmbench",
        "coe",
        "MMBench",
        ("lmms-lab/MMBench_EN", None, "dev"),
        "MMBench_EN",
        _TABLE,
        read_mmbench,
        note="dev split, options A-D, answer with the letter",
    ),
    Benchmark(
        "mmstar",
        "coe",
        "MMStar",
        ("Lin-Chen/MMStar", None, "val"),
        "MMStar",
        _TABLE,
        read_mmstar,
        note="options inside the question, answer with the letter",
    ),
    Benchmark(
        "mmmu",
        "coe",
        "MMMU",
        ("lmms-lab/MMMU", None, "validation"),
        "MMMU",
        _TABLE,
        read_mmmu,
        note="validation, multiple choice with one image, no explanations",
    ),
    Benchmark(
        "vlind",
        "coe",
        "VLind-Bench",
        (VLIND_HUB, None, None),
        "VLind-Bench",
        "VLind-Bench's release: data.json + images/counterfactual/<concept>/<id>_<context>/",
        read_vlind,
        note="true/false statements on the counterfactual image → Yes/No",
    ),
    Benchmark(
        "vilp",
        "coe",
        "ViLP",
        ("ViLP/ViLP", None, "train"),
        "ViLP",
        "ViLP.parquet (or its folder)",
        read_vilp,
        note="image3 with answer3",
    ),
    Benchmark(
        "csqa-coco",
        "coe",
        "CommonsenseQA + COCO val2017 (controlled baseline)",
        ("tau/commonsense_qa", None, "validation"),
        "csqa-coco",
        "DIR/val2017/*.jpg and DIR/commonsense_qa (parquet / save_to_disk)",
        read_csqa_coco,
        note="seeded irrelevant image per question: D_T by construction",
    ),
):
    BENCHMARKS_BY_NAME[_b.name] = register_benchmark(_b, overwrite=True)
