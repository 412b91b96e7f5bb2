"""The benchmark registry on rows written in each benchmark's published layout (no network).

Layouts come from ``tests/fixtures/benchmarks/schemas.json`` (each with its source named); the
expected prompts, answers and selections are written out by hand below.
"""

from __future__ import annotations

import io
import json
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

import interp
from interp.data_spec import load_data
from interp.datasets.benchmarks import (
    BenchmarkNotPublicError,
    BenchmarkSourceError,
    coe_sets,
    judge_answer,
    list_benchmarks,
    parse_benchmark_spec,
    read_benchmark,
)
from interp.errors import DataFormatError, MissingColumnError

SCHEMAS = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "benchmarks" / "schemas.json").read_text()
)
IMAGE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])


def png(color: tuple[int, int, int]) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (8, 8), color).save(buf, format="PNG")
    return buf.getvalue()


def arrow_type(dtype: str) -> pa.DataType:
    if dtype == "string":
        return pa.string()
    if dtype == "int64":
        return pa.int64()
    if dtype == "binary":
        return pa.binary()
    if dtype == "image":
        return IMAGE
    if dtype.startswith("struct<"):
        fields = dtype[len("struct<") : -1].split(",")
        return pa.struct([(f.split(":")[0], arrow_type(f.split(":")[1])) for f in fields])
    if dtype.startswith("sequence<{"):
        fields = dtype[len("sequence<{") : -2].split(",")
        return pa.struct([(f.split(":")[0], pa.list_(arrow_type(f.split(":")[1]))) for f in fields])
    raise AssertionError(dtype)


def write_table(path: Path, name: str, rows: list[dict]) -> Path:
    """Rows in the published columns and arrow types of ``name`` (every column present)."""
    columns = SCHEMAS[name]["columns"]
    schema = pa.schema([(c, arrow_type(t)) for c, t in columns.items()])
    table = pa.Table.from_pylist([{c: r.get(c) for c in columns} for r in rows], schema=schema)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return path


def img(color: tuple[int, int, int]) -> dict:
    return {"bytes": png(color), "path": None}


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("INTERP_DATA_ROOT", raising=False)


def test_the_readers_read_the_published_columns():
    """Each converter's column list is the published one (the fixture), not an invention."""
    for name, cols in (
        ("mme", coe_sets.MME_COLUMNS),
        ("mmbench", coe_sets.MMBENCH_COLUMNS),
        ("mmstar", coe_sets.MMSTAR_COLUMNS),
        ("mmmu", coe_sets.MMMU_COLUMNS),
        ("vilp", coe_sets.VILP_COLUMNS),
        ("csqa", coe_sets.CSQA_COLUMNS),
    ):
        assert set(cols) <= set(SCHEMAS[name]["columns"]), name
    assert set(coe_sets.VLIND_KEYS) - {"aggregated_human_label_good_images"} <= set(
        SCHEMAS["vlind"]["keys"]
    )


def test_mme(tmp_path):
    rows = [
        {
            "question_id": "color/000.png",
            "image": img((255, 0, 0)),
            "category": "color",
            "question": "Is the car red? Please answer yes or no.",
            "answer": "Yes",
        },
        {
            "question_id": "color/000.png",
            "image": img((255, 0, 0)),
            "category": "color",
            "question": "Is the car blue? Please answer yes or no.",
            "answer": "No",
        },
    ]
    write_table(tmp_path / "MME" / "data" / "test-00000-of-00001.parquet", "mme", rows)
    samples = read_benchmark("mme", tmp_path / "MME")
    assert [s.answer for s in samples] == ["Yes", "No"]
    assert samples[1].question == "Is the car blue? Please answer yes or no."
    assert samples[0].id != samples[1].id  # the two questions of one image
    assert samples[0].meta["category"] == "color"
    assert samples[0].meta["question_type"] == "yes/no"
    assert samples[0].load_images()[0].getpixel((0, 0)) == (255, 0, 0)


def test_mmbench_prompt_hint_and_missing_options(tmp_path):
    rows = [
        {
            "index": 7,
            "question": "What is shown?",
            "hint": "Look closely.",
            "A": "a cat",
            "B": "a dog",
            "C": "nan",
            "D": None,
            "answer": "B",
            "category": "object",
            "image": img((0, 0, 255)),
            "l2-category": "perception",
        },
        {
            "index": 8,
            "question": "Which colour?",
            "hint": None,
            "A": "red",
            "B": "blue",
            "C": "green",
            "D": "pink",
            "answer": "A",
            "category": "attr",
            "image": img((1, 2, 3)),
        },
    ]
    write_table(tmp_path / "mmb.parquet", "mmbench", rows)
    s = read_benchmark("mmbench", tmp_path / "mmb.parquet")
    assert s[0].question == (
        "Hint: Look closely.\nQuestion: What is shown?\nOptions:\nA. a cat\nB. a dog\n"
        "Answer with the option's letter from the given choices directly."
    )
    assert s[0].answer == "B" and s[0].meta["answer_text"] == "a dog"
    assert s[0].meta["l2_category"] == "perception"
    assert list(s[1].meta["options"]) == ["A", "B", "C", "D"]
    assert s[1].question.startswith("Question: Which colour?")


def test_mmstar_options_parsed_from_the_question(tmp_path):
    q = "Which animal is this?\nOptions: A: a cat, B: a dog, C: a horse, D: a cow"
    rows = [
        {
            "index": 3,
            "question": q,
            "image": img((9, 9, 9)),
            "answer": "C",
            "category": "coarse perception",
            "l2_category": "image scene",
            "meta_info": {"source": "x", "split": "val", "image_path": "3.jpg"},
        }
    ]
    write_table(tmp_path / "MMStar" / "mmstar.parquet", "mmstar", rows)
    (s,) = read_benchmark("mmstar", tmp_path / "MMStar")
    assert s.meta["options"] == {"A": "a cat", "B": "a dog", "C": "a horse", "D": "a cow"}
    assert s.meta["answer_text"] == "a horse"
    assert s.question == q + "\nAnswer with the option's letter from the given choices directly."


def test_mmmu_single_image_multiple_choice_only(tmp_path):
    base = {
        "explanation": "the solution says X",
        "img_type": "['Diagrams']",
        "topic_difficulty": "Easy",
        "subfield": "Optics",
    }
    rows = [
        {
            **base,
            "id": "validation_Physics_1",
            "question": "What does <image 1> show?",
            "options": "['a lens', 'a mirror']",
            "image_1": img((5, 5, 5)),
            "answer": "A",
            "question_type": "multiple-choice",
        },
        {
            **base,
            "id": "validation_Physics_2",
            "question": "Compare <image 1> and <image 2>.",
            "options": "['same', 'different']",
            "image_1": img((5, 5, 5)),
            "image_2": img((6, 6, 6)),
            "answer": "B",
            "question_type": "multiple-choice",
        },
        {
            **base,
            "id": "validation_Physics_3",
            "question": "How far? <image 1>",
            "options": "[]",
            "image_1": img((5, 5, 5)),
            "answer": "3 m",
            "question_type": "open",
        },
        {
            **base,
            "id": "validation_Physics_4",
            "question": "Which option matches <image 1>?",
            "options": "['<image 2>', '<image 3>']",
            "image_1": img((5, 5, 5)),
            "answer": "A",
            "question_type": "multiple-choice",
        },
        {
            **base,
            "id": "validation_Art_Theory_5",
            "question": "Style of the painting?",
            "options": "['baroque', 'cubist', 'gothic']",
            "image_1": img((7, 7, 7)),
            "answer": "C",
            "question_type": "multiple-choice",
        },
    ]
    write_table(tmp_path / "MMMU" / "data" / "validation-00000-of-00001.parquet", "mmmu", rows)
    write_table(tmp_path / "MMMU" / "data" / "dev-00000-of-00001.parquet", "mmmu", rows[:1])
    samples = read_benchmark("mmmu", tmp_path / "MMMU")
    assert [s.id for s in samples] == ["validation_Physics_1", "validation_Art_Theory_5"]
    assert samples[0].question == (
        "Question: What does the image show?\nOptions:\nA. a lens\nB. a mirror\n"
        "Answer with the option's letter from the given choices directly."
    )
    assert "solution" not in samples[0].question  # no explanations
    assert samples[1].meta["category"] == "Art_Theory" and samples[1].answer == "C"


def _vlind_copy(root: Path) -> Path:
    data = root / "data"
    instances = []
    for cid, (concept, votes) in enumerate((("color", {"0": 3, "1": 1}), ("diet", {"0": 1}))):
        context = f"ctx {cid}"
        folder = data / "images" / "counterfactual" / concept / f"{cid}_{context}"
        folder.mkdir(parents=True)
        Image.new("RGB", (8, 8), (cid, 0, 0)).save(folder / "1.jpg")
        instances.append(
            {
                "concept": concept,
                "context": context,
                "context_id": str(cid),
                "factual_context": "f",
                "true_statement": f"Bananas are purple {cid}.",
                "false_statement": f"Bananas are yellow {cid}.",
                "existent_noun": "banana",
                "non-existent_noun": "apple",
                "best_img_id": "1",
                "aggregated_human_label_good_images": votes,
            }
        )
    (data / "data.json").write_text(json.dumps(instances))
    return root


def test_vlind_statements_become_yes_no_questions(tmp_path):
    root = _vlind_copy(tmp_path / "VLind-Bench")
    samples = read_benchmark("vlind", root)
    # the second instance has no image with two votes (VLind-Bench's threshold)
    assert [(s.answer, s.meta["statement_kind"]) for s in samples] == [
        ("Yes", "true"),
        ("No", "false"),
    ]
    assert samples[0].question == (
        'Is the following statement true for this image: "Bananas are purple 0."? Answer Yes or No.'
    )
    assert (
        samples[0].image
        == root / "data" / "images" / "counterfactual" / "color" / "0_ctx 0" / "1.jpg"
    )
    assert samples[0].meta["counterfactual"] is True
    seen = []

    def llm(prompt: str) -> str:
        seen.append(prompt)
        return "Are the bananas purple? Answer Yes or No."

    converted = read_benchmark("vlind", root, convert=llm)
    assert converted[0].question == "Are the bananas purple? Answer Yes or No."
    assert seen[0] == coe_sets.VLIND_CONVERSION_PROMPT.format(statement="Bananas are purple 0.")


def test_vilp_takes_image3_and_answer3(tmp_path):
    rows = [
        {
            "question": "Lemons are sour. What colour is this lemon?",
            "image1": png((255, 255, 0)),
            "answer1": "yellow",
            "image2": png((0, 255, 0)),
            "answer2": "green",
            "image3": png((0, 0, 255)),
            "answer3": "blue",
        }
    ]
    write_table(tmp_path / "ViLP" / "ViLP.parquet", "vilp", rows)
    (s,) = read_benchmark("vilp", tmp_path / "ViLP")
    assert s.question == "Please answer with one word: Lemons are sour. What colour is this lemon?"
    assert s.answer == "blue" and s.meta["prior_answer"] == "yellow"
    assert s.load_images()[0].getpixel((0, 0)) == (0, 0, 255)


def test_controlled_baseline_pairs_seeded_coco_images(tmp_path):
    root = tmp_path / "csqa-coco"
    (root / "val2017").mkdir(parents=True)
    names = [f"{k:012d}.jpg" for k in (139, 285, 632, 724)]
    for k, name in enumerate(names):
        Image.new("RGB", (8, 8), (k, k, k)).save(root / "val2017" / name)
    rows = [
        {
            "id": f"q{k}",
            "question": f"Where is a thing {k}?",
            "question_concept": "thing",
            "choices": {"label": list("ABCDE"), "text": ["home", "shop", "park", "bank", "sea"]},
            "answerKey": "C",
        }
        for k in range(5)
    ]
    rows.append({**rows[0], "id": "qtest", "answerKey": ""})  # the test split's blank answer
    write_table(
        root / "commonsense_qa" / "data" / "validation-00000-of-00001.parquet", "csqa", rows
    )
    samples = read_benchmark("csqa-coco", root, seed=3)
    rng = random.Random(3)
    assert [s.meta["image_id"] for s in samples] == [names[rng.randrange(4)] for _ in range(5)]
    assert all(s.meta["needs_image"] is False for s in samples)
    assert samples[0].question == (
        "Question: Where is a thing 0?\nOptions:\nA. home\nB. shop\nC. park\nD. bank\nE. sea\n"
        "Answer with the option's letter from the given choices directly."
    )
    other = read_benchmark("csqa-coco", root, seed=4)
    assert [s.meta["image_id"] for s in other] != [s.meta["image_id"] for s in samples]


def test_pope_original_files_and_table(tmp_path):
    root = tmp_path / "POPE"
    (root / "val2014").mkdir(parents=True)
    Image.new("RGB", (8, 8)).save(root / "val2014" / "COCO_val2014_000000000042.jpg")
    for setting in ("random", "adversarial"):
        lines = [
            {
                "question_id": 1,
                "image": "COCO_val2014_000000000042.jpg",
                "text": "Is there a dog in the image?",
                "label": "yes",
            },
            {
                "question_id": 2,
                "image": "COCO_val2014_000000000042.jpg",
                "text": f"Is there a {setting} in the image?",
                "label": "no",
            },
        ]
        (root / f"coco_pope_{setting}.json").write_text("\n".join(map(json.dumps, lines)))
    s = read_benchmark("pope:adversarial", root)
    assert [x.answer for x in s] == ["yes", "no"]
    assert s[1].question == "Is there a adversarial in the image?"
    assert s[1].meta["pope_negative"] == "adversarial" and s[0].meta["pope_negative"] is None
    table = [
        {
            "question_id": str(k),
            "question": f"Is there a cat {k}?",
            "answer": a,
            "image_source": "x",
            "image": img((0, 0, 0)),
            "category": c,
        }
        for k, (a, c) in enumerate([("yes", "random"), ("no", "popular"), ("no", "popular")])
    ]
    write_table(tmp_path / "lmms" / "data" / "test-00000-of-00001.parquet", "pope", table)
    popular = read_benchmark("pope:popular", tmp_path / "lmms")
    assert [x.question for x in popular] == ["Is there a cat 1?", "Is there a cat 2?"]
    with pytest.raises(BenchmarkSourceError, match="variants are random, popular, adversarial"):
        read_benchmark("pope:hard", root)


def test_offline_without_a_copy_is_a_clear_error():
    with pytest.raises(BenchmarkSourceError, match=r"lmms-lab/MME.*network.*HF_HUB_OFFLINE"):
        read_benchmark("mme")
    with pytest.raises(BenchmarkSourceError, match="data.json"):
        read_benchmark("vlind")
    with pytest.raises(BenchmarkNotPublicError, match="MiuLab/Tri-PvP"):
        read_benchmark("tri-pvp", ".")
    with pytest.raises(BenchmarkSourceError, match="no benchmark named 'mmx'"):
        read_benchmark("mmx")


def test_a_copy_of_the_wrong_layout_names_the_missing_columns(tmp_path):
    path = tmp_path / "x.parquet"
    pq.write_table(pa.table({"question": ["q"], "answer": ["Yes"]}), path)
    with pytest.raises(MissingColumnError, match="lacks question_id, image, category"):
        read_benchmark("mme", path)
    bad = [
        {
            "question_id": "a",
            "image": img((0, 0, 0)),
            "question": "q",
            "answer": "maybe",
            "category": "c",
        }
    ]
    write_table(tmp_path / "bad.parquet", "mme", bad)
    with pytest.raises(DataFormatError, match="not Yes / No"):
        read_benchmark("mme", tmp_path / "bad.parquet")


def test_judge_by_answer_format_and_the_hook():
    yn = interp.Sample("Is it red?", answer="Yes", meta={"question_type": "yes/no"})
    assert judge_answer("Yes, it is.", yn) and not judge_answer("No.", yn)
    assert not judge_answer("I cannot tell", yn)
    mc = interp.Sample(
        "q",
        answer="B",
        meta={"question_type": "multiple-choice", "options": {"A": "a cat", "B": "a dog"}},
    )
    assert judge_answer("B", mc) and judge_answer("It is a dog.", mc)
    assert not judge_answer("A", mc)
    word = interp.Sample("q", answer="blue", meta={"question_type": "one-word"})
    assert judge_answer("Blue.", word) and not judge_answer("yellow", word)
    calls = []
    assert judge_answer("x", word, judge=lambda a, r, s: calls.append((a, r)) or True)
    assert calls == [("x", "blue")]


def test_data_spec_and_root_env(tmp_path, monkeypatch):
    rows = [
        {
            "question_id": "a",
            "image": img((0, 0, 0)),
            "question": "Is it dark?",
            "answer": "Yes",
            "category": "c",
        }
    ]
    write_table(tmp_path / "MME" / "data" / "test-00000-of-00001.parquet", "mme", rows)
    assert parse_benchmark_spec("pope:random@/x") == ("pope", "random", "/x")
    assert parse_benchmark_spec("data.jsonl") is None
    samples = load_data(f"mme@{tmp_path / 'MME'}", None, 0, default_qtypes=())
    assert samples[0].question == "Is it dark?"
    monkeypatch.setenv("INTERP_DATA_ROOT", str(tmp_path))
    assert interp.read_benchmark("mme")[0].answer == "Yes"
    assert {b.name for b in list_benchmarks()} >= {
        "mme",
        "mmbench",
        "mmstar",
        "mmmu",
        "vlind",
        "vilp",
        "csqa-coco",
        "pope",
    }
