"""The recall paper's visual-reference QA sets (its Sec. 3, Sec. 6.2 and Appendix A).

The paper builds its testbed from image classification sets, each class label an entity: for
each entity it has Llama-3.1-8B write question-answer pairs from Wikipedia (not released), pairs
each pair with **5 randomly sampled images** of the entity, and asks every datapoint twice — a
*textual reference* question that names the entity and a *visual reference* question that refers
to the image. MNIST has rule-made questions instead: for each digit image an addition or a
multiplication with one other operand of at most two digits ("5 + 17 =" / "the digit in the image
+ 17 ="). OK-VQA is the out-of-domain set of the selective-prediction experiment (Table 1).

Every recall sample carries the labels ``interp recall`` builds items from
(:func:`interp.studies.recall.recall_items`): ``group`` (one datapoint), ``setting``
(``visual`` / ``full_info``), ``family`` (the dataset), ``entity`` and ``identify`` (the
identification question of the paper's first filter), and ``question_type = "open"``.

- ``cifar100`` (``uoft-cs/cifar100``, split ``test``: ``img``, ``fine_label``, ``coarse_label``),
  ``food101`` (``ethz/food101``, split ``validation``: ``image``, ``label``), ``landmarks``
  (Google Landmarks v2's original files: ``train.csv`` + ``train_label_to_category.csv`` +
  ``train/a/b/c/<id>.jpg``): the images and labels are public, the paper's QA pairs are not. Give
  them as ``qa.jsonl`` in the copy's folder (or ``qa=``), one row per pair: ``entity`` (the
  label name, underscores or spaces), ``question`` (naming the entity), ``answer`` and optionally
  ``visual_question`` (default: the question with the entity's name replaced by "the object in
  the image" — ours) and ``text`` (the Wikipedia passage, for the multiple-choice prompt).
- ``mnist`` (``ylecun/mnist``, split ``test``: ``image``, ``label``): every image gives one
  datapoint, its operation and operand drawn with ``random.Random(seed)``; operands 1–99 (the
  paper: "no more than 2 digits").
- ``okvqa`` (``lmms-lab/OK-VQA``, split ``val2014``: ``question_id``, ``image``, ``question``,
  ``answers`` — ten annotators' answers —, ``question_type``, ``answer_type``): visual-setting
  samples, reference = the most frequent annotator answer (ties: the first), all ten in
  ``meta["answers"]``.

Variants: ``:identify`` — one "what is this?" sample per image, the label name as the reference
(the paper's identification filter as a benchmark of its own); ``:mc`` — the paper's four-option
multiple-choice conversion (Sec. 6.1): with ``convert=`` the language-model hook is given
:data:`MCQA_PROMPT` (the paper's Appendix A.1 prompt) and its three "Incorrect Option k:" lines
are the distractors; without one the distractors are other answers of the same family, drawn
seeded (ours, as :func:`interp.studies.recall.multiple_choice`). The answer is the option letter.

Declared choices the paper leaves open: the splits above, the identification wordings
(:data:`IDENTIFY`) and the visual-reference wording for the classification sets.
"""

from __future__ import annotations

import csv
import json
import random
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from ...errors import DataFormatError
from ...samples import Sample
from .labels import CIFAR100_NAMES, FOOD101_NAMES
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

IMAGES_PER_PAIR = 5
"""Appendix A: "randomly sample 5 images of the entity and pair them with a single QA pair"."""
MNIST_OPERAND = (1, 99)
OKVQA_COLUMNS = ("question_id", "image", "question", "answers", "question_type", "answer_type")
QA_KEYS = ("entity", "question", "answer")
VISUAL_REFERENCE = "the object in the image"
IDENTIFY: dict[str, str] = {
    "cifar100": "What is the object in the image? Answer with its name.",
    "food101": "What dish is in the image? Answer with its name.",
    "landmarks": "What landmark is in the image? Answer with its name.",
    "mnist": "What digit is in the image? Answer with the digit.",
}
"""The identification questions (ours: the paper asks the model "to identify the object")."""
MCQA_PROMPT = (
    "You are a logical system tasked with generating incorrect options for multiple choice "
    "questions. You are given the text, question and answer. Come up with a numbered list of "
    "three plausible but incorrect options\n\n"
    "Text: The tench or doctor fish (Tinca tinca) is a fresh- and brackish-water fish of the "
    "order Cypriniformes.\nQuestion: What is the tench also known as?\nCorrect Answer: doctor "
    "fish\nIncorrect Option 1: miracle fish\nIncorrect Option 2: salmon\nIncorrect Option 3: "
    "hidden fish\n[STOP]\n\nText: {text}\nQuestion: {question}\nCorrect Answer: {answer}\n"
)
"""The paper's MCQA conversion prompt (Appendix A.1; its example passage shortened)."""
MC_LABELS = ("A", "B", "C", "D")
_OPTION_LINE = re.compile(r"Incorrect Option\s*\d+\s*:\s*(.+)", re.I)


def entity_name(label: str) -> str:
    """A class label as an entity name: underscores become spaces; the hub card's CIFAR-100 typo
    ``cra`` is ``crab``."""
    return "crab" if label == "cra" else label.replace("_", " ")


def _sample(
    family: str, group: str, setting: str, question: str, image: Any, answer: str, meta: dict
) -> Sample:
    meta = {
        **meta,
        "question_type": "open",
        "family": family,
        "group": group,
        "setting": setting,
        "identify": IDENTIFY.get(family),
    }
    return Sample(question, image, answer, f"{group}/{setting}", meta)


def _pair(family: str, group: str, image: Any, textual: str, visual: str, answer: str, meta: dict):
    return [
        _sample(family, group, "visual", visual, image, answer, meta),
        _sample(family, group, "full_info", textual, image, answer, meta),
    ]


# -- the classification sets: entity images ---------------------------------------------------------


def _class_images(
    name: str, root: Path | None, image_col: str, label_col: str, names: tuple[str, ...]
) -> list[tuple[Any, str, int]]:
    """``(image cell, entity, label index)`` of every row, images left undecoded."""
    rows, base = table_rows(BENCHMARKS_BY_NAME[name], root)
    require_columns(rows, (image_col, label_col), BENCHMARKS_BY_NAME[name].title)
    out = []
    for k, row in enumerate(rows):
        label = int(row[label_col])
        if not 0 <= label < len(names):
            raise DataFormatError(f"{name} row {k}: label {label} outside 0..{len(names) - 1}")
        out.append(((row[image_col], base, f"{name} row {k}"), entity_name(names[label]), label))
    return out


def _landmark_images(root: Path | None) -> list[tuple[Any, str, int]]:
    """Google Landmarks v2's original files: ``train.csv`` (id, url, landmark_id),
    ``train_label_to_category.csv`` (landmark_id, category = a Wikimedia Commons category URL)
    and the images at ``train/<id[0]>/<id[1]>/<id[2]>/<id>.jpg``."""
    if root is None or not (root / "train.csv").is_file():
        raise BenchmarkSourceError(
            "landmarks: Google Landmarks v2 is read from its original files: --data "
            "landmarks@DIR with DIR/train.csv, DIR/train_label_to_category.csv and "
            "DIR/train/<a>/<b>/<c>/<id>.jpg"
        )
    with open(root / "train_label_to_category.csv", newline="") as f:
        category = {int(r["landmark_id"]): r["category"] for r in csv.DictReader(f)}
    out = []
    with open(root / "train.csv", newline="") as f:
        for r in csv.DictReader(f):
            lid, iid = int(r["landmark_id"]), r["id"]
            tail = unquote(category.get(lid, "").rsplit("Category:", 1)[-1])
            path = root / "train" / iid[0] / iid[1] / iid[2] / f"{iid}.jpg"
            out.append(((str(path), root, f"landmarks {iid}"), entity_name(tail), lid))
    return out


def _open(cell: tuple[Any, Path | None, str]) -> Any:
    return image_of(*cell)


def _qa_rows(name: str, root: Path | None, opts: Options) -> list[dict[str, Any]]:
    path = opts.extra.get("qa")
    if path is None and root is not None:
        folder = root if root.is_dir() else root.parent
        path = folder / "qa.jsonl" if (folder / "qa.jsonl").is_file() else None
    if path is None:
        raise BenchmarkNotPublicError(
            f"{name}: the images and labels are public, the paper's question-answer pairs are "
            "not (Llama-3.1-8B wrote them from Wikipedia; no release is named). Give them as "
            "qa.jsonl in the copy's folder (or qa=FILE): one row per pair with entity, question "
            "(naming the entity), answer and optionally visual_question and text; or read "
            f"'{name}:identify' for the identification questions"
        )
    if not Path(path).is_file():
        raise BenchmarkSourceError(f"{name}: the QA file {str(path)!r} does not exist")
    rows = []
    for k, line in enumerate(Path(path).read_text().splitlines()):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise DataFormatError(f"{path} line {k + 1}: not JSON ({err.msg})") from None
        missing = [key for key in QA_KEYS if not row.get(key)]
        if missing:
            raise DataFormatError(f"{path} line {k + 1}: no {', '.join(missing)}")
        rows.append(row)
    return rows


def visual_reference(question: str, entity: str) -> str:
    """The question with the entity's name (any case, optional article) replaced by
    :data:`VISUAL_REFERENCE`."""
    pattern = re.compile(rf"\b(?:the\s+|an?\s+)?{re.escape(entity)}\b", re.I)
    out, count = pattern.subn(VISUAL_REFERENCE, question, count=1)
    if not count:
        raise DataFormatError(
            f"the question {question!r} does not name its entity {entity!r}; the paper keeps "
            "only questions that do (Appendix A, step 3), or give visual_question"
        )
    return out


def _entity_recall(
    name: str, images: list[tuple[Any, str, int]], pairs: list[dict[str, Any]], opts: Options
) -> list[Sample]:
    by_entity: dict[str, list[int]] = {}
    for k, (_, entity, _) in enumerate(images):
        by_entity.setdefault(entity.lower(), []).append(k)
    out: list[Sample] = []
    for p, qa in enumerate(pairs):
        entity = entity_name(str(qa["entity"]).strip())
        pool = by_entity.get(entity.lower())
        if not pool:
            raise DataFormatError(
                f"{name}: the QA pair {p} names the entity {entity!r}, which no image has"
            )
        picked = random.Random(f"{opts.seed}|{name}|{p}").sample(
            pool, min(IMAGES_PER_PAIR, len(pool))
        )
        visual = qa.get("visual_question") or visual_reference(str(qa["question"]), entity)
        meta = {"entity": entity, "pair": p, "text": qa.get("text")}
        for k in picked:
            cell, _, label = images[k]
            group = f"{name}-{p}-{k}"
            meta_k = {**meta, "label": label, "row": k}
            out += _pair(name, group, _open(cell), qa["question"], visual, qa["answer"], meta_k)
        if opts.n is not None and len(out) >= opts.n:
            break
    return out


def _identify(name: str, images: list[tuple[Any, str, int]], opts: Options) -> list[Sample]:
    out = []
    for k, (cell, entity, label) in enumerate(images[: opts.n]):
        meta = {"entity": entity, "label": label, "row": k}
        out.append(
            _sample(name, f"{name}-{k}", "identify", IDENTIFY[name], _open(cell), entity, meta)
        )
    return out


# -- MNIST ------------------------------------------------------------------------------------------


def mnist_question(digit: int, rng: random.Random) -> tuple[str, str, str]:
    """``(textual, visual, answer)`` for one digit: ``+`` or ``*`` and an operand in
    :data:`MNIST_OPERAND`, drawn from ``rng`` in that order."""
    op = rng.choice(("+", "*"))
    operand = rng.randint(*MNIST_OPERAND)
    value = digit + operand if op == "+" else digit * operand
    return f"{digit} {op} {operand} =", f"the digit in the image {op} {operand} =", str(value)


def _mnist(images: list[tuple[Any, str, int]], opts: Options) -> list[Sample]:
    rng = random.Random(opts.seed)
    out: list[Sample] = []
    for k, (cell, entity, label) in enumerate(images):
        textual, visual, answer = mnist_question(label, rng)
        meta = {"entity": entity, "label": label, "row": k}
        out += _pair("mnist", f"mnist-{k}", _open(cell), textual, visual, answer, meta)
        if opts.n is not None and len(out) >= opts.n:
            break
    return out


# -- the multiple-choice conversion -----------------------------------------------------------------


def distractors_from(reply: str) -> list[str]:
    """The three "Incorrect Option k: ..." lines of a reply to :data:`MCQA_PROMPT`."""
    found = [m.group(1).split("[STOP]")[0].strip() for m in _OPTION_LINE.finditer(reply)]
    return [f for f in found if f][:3]


def multiple_choice(
    samples: list[Sample], seed: int, convert: Callable[[str], str] | None
) -> list[Sample]:
    """Four options per datapoint (Sec. 6.1), the same for its visual and textual question; the
    answer becomes the letter. Distractors: the hook's reply to :data:`MCQA_PROMPT`, else other
    answers of the family."""
    pools: dict[str, list[str]] = {}
    for s in samples:
        pool = pools.setdefault(s.meta["family"], [])
        if s.answer not in pool:
            pool.append(str(s.answer))
    chosen: dict[str, tuple[list[str], int]] = {}
    out = []
    for s in samples:
        group, answer = s.meta["group"], str(s.answer)
        if group not in chosen:
            rng = random.Random(f"{seed}|{group}")
            if convert is not None:
                prompt = MCQA_PROMPT.format(
                    text=s.meta.get("text") or "", question=s.question, answer=answer
                )
                wrong = distractors_from(str(convert(prompt)))
                if len(wrong) < 3:
                    raise DataFormatError(
                        f"the conversion hook's reply for {group!r} has {len(wrong)} "
                        "'Incorrect Option k:' lines; the prompt asks for three"
                    )
            else:
                others = [a for a in pools[s.meta["family"]] if a != answer]
                if len(others) < 3:
                    raise BenchmarkSourceError(
                        f"{s.meta['family']}: {len(others) + 1} distinct answers, too few for "
                        "four options without a conversion hook (convert=)"
                    )
                wrong = rng.sample(others, 3)
            chosen[group] = (wrong, rng.randrange(4))
        wrong, where = chosen[group]
        options = wrong[:where] + [answer] + wrong[where:]
        shown = " ".join(f"({lab}) {opt}" for lab, opt in zip(MC_LABELS, options))
        meta = {
            **s.meta,
            "question_type": "multiple-choice",
            "options": dict(zip(MC_LABELS, options)),
            "answer_text": answer,
            "format": "multiple_choice",
        }
        out.append(Sample(f"{s.question} {shown}", s.image, MC_LABELS[where], s.id, meta))
    return out


# -- the readers ------------------------------------------------------------------------------------


def _reader(name: str, load: Callable[[Path | None], list[tuple[Any, str, int]]]):
    def read(root: Path | None, opts: Options) -> list[Sample]:
        needs_pairs = name != "mnist" and opts.variant != "identify"
        # without a local copy the user's QA pairs are checked before the hub copy is fetched
        pairs = _qa_rows(name, root, opts) if needs_pairs and root is None else None
        images = load(root)
        if opts.variant == "identify":
            return _identify(name, images, opts)
        if not needs_pairs:
            samples = _mnist(images, opts)
        else:
            pairs = pairs if pairs is not None else _qa_rows(name, root, opts)
            samples = _entity_recall(name, images, pairs, opts)
        if opts.variant == "mc":
            samples = multiple_choice(samples, opts.seed, opts.convert)
        return samples

    return read


def okvqa_reference(answers: list[str]) -> str:
    """The most frequent annotator answer; ties go to the one given first."""
    counts = Counter(answers)
    return max(answers, key=lambda a: (counts[a], -answers.index(a)))


def read_okvqa(root: Path | None, opts: Options) -> list[Sample]:
    rows, base = table_rows(BENCHMARKS_BY_NAME["okvqa"], root)
    require_columns(rows, OKVQA_COLUMNS, "OK-VQA")
    out = []
    for k, row in enumerate(rows):
        answers = [str(a) for a in (row["answers"] or [])]
        if not answers:
            raise DataFormatError(f"OK-VQA {row['question_id']}: no answers")
        qid = str(row["question_id"])
        meta = {
            "question_type": "open",
            "family": "okvqa",
            "group": f"okvqa-{qid}",
            "setting": "visual",
            "category": row["question_type"],
            "answer_type": row["answer_type"],
            "answers": answers,
        }
        image = image_of(row["image"], base, f"OK-VQA row {k}")
        out.append(Sample(str(row["question"]), image, okvqa_reference(answers), qid, meta))
        if opts.n is not None and len(out) >= opts.n:
            break
    return out


BENCHMARKS_BY_NAME: dict[str, Benchmark] = {}

_TABLE = "a parquet file, a folder of parquet files (a hub snapshot) or a save_to_disk folder"
_QA = "; the paper's QA pairs as qa.jsonl beside it (not released)"

for _b in (
    Benchmark(
        "cifar100",
        "recall",
        "CIFAR100",
        ("uoft-cs/cifar100", None, "test"),
        "cifar100",
        _TABLE + _QA,
        _reader(
            "cifar100", lambda r: _class_images("cifar100", r, "img", "fine_label", CIFAR100_NAMES)
        ),
        variants=("identify", "mc"),
        note="5 images per QA pair, visual / textual reference; the QA pairs are the user's",
    ),
    Benchmark(
        "food101",
        "recall",
        "Food101",
        ("ethz/food101", None, "validation"),
        "food101",
        _TABLE + _QA,
        _reader("food101", lambda r: _class_images("food101", r, "image", "label", FOOD101_NAMES)),
        variants=("identify", "mc"),
        note="5 images per QA pair, visual / textual reference; the QA pairs are the user's",
    ),
    Benchmark(
        "landmarks",
        "recall",
        "Landmarks (Google Landmarks v2)",
        None,
        "landmarks",
        "GLDv2's train.csv, train_label_to_category.csv and train/a/b/c/<id>.jpg" + _QA,
        _reader("landmarks", _landmark_images),
        variants=("identify", "mc"),
        note="5 images per QA pair; the entity is the Wikimedia category's name",
    ),
    Benchmark(
        "mnist",
        "recall",
        "MNIST",
        ("ylecun/mnist", None, "test"),
        "mnist",
        _TABLE,
        _reader(
            "mnist", lambda r: _class_images("mnist", r, "image", "label", tuple("0123456789"))
        ),
        variants=("identify", "mc"),
        note="'d + k =' / 'the digit in the image + k =' (or *), k in 1..99, seeded",
    ),
    Benchmark(
        "okvqa",
        "recall",
        "OK-VQA",
        ("lmms-lab/OK-VQA", None, "val2014"),
        "OK-VQA",
        _TABLE,
        read_okvqa,
        note="val2014, reference = the most frequent of the ten answers",
    ),
):
    BENCHMARKS_BY_NAME[_b.name] = register_benchmark(_b, overwrite=True)
