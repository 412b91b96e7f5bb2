"""The recall and drives papers' benchmarks on rows written in their published layouts (no
network). Layouts: ``tests/fixtures/benchmarks/schemas.json`` (sources named there); every
expected prompt, answer, count and selection below is written out by hand."""

from __future__ import annotations

import csv
import io
import json
import random
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from interp.data_spec import load_data
from interp.datasets.benchmarks import (
    BenchmarkNotPublicError,
    BenchmarkSourceError,
    drives_sets,
    list_benchmarks,
    read_benchmark,
    recall_sets,
)
from interp.datasets.benchmarks.labels import CIFAR100_NAMES, FOOD101_NAMES
from interp.errors import DataFormatError
from interp.studies.recall import recall_items

SCHEMAS = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "benchmarks" / "schemas.json").read_text()
)
IMAGE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
TYPES = {
    "string": pa.string(),
    "int64": pa.int64(),
    "image": IMAGE,
    "list<string>": pa.list_(pa.string()),
}


def write_table(path: Path, name: str, rows: list[dict]) -> Path:
    """Rows in the published columns and arrow types of ``name`` (every column present)."""
    columns = SCHEMAS[name]["columns"]
    schema = pa.schema([(c, TYPES[t]) for c, t in columns.items()])
    table = pa.Table.from_pylist([{c: r.get(c) for c in columns} for r in rows], schema=schema)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return path


def img(shade: int) -> dict:
    buf = io.BytesIO()
    Image.new("RGB", (8, 8), (shade, shade, shade)).save(buf, format="PNG")
    return {"bytes": buf.getvalue(), "path": None}


def shade(sample) -> int:
    return sample.image.convert("RGB").getpixel((0, 0))[0]


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("INTERP_DATA_ROOT", raising=False)


def test_readers_follow_the_published_layouts():
    """Columns, keys and label names the readers use are the fixture's (the published ones)."""
    assert set(recall_sets.OKVQA_COLUMNS) <= set(SCHEMAS["okvqa"]["columns"])
    assert set(drives_sets.VLMBIAS_COLUMNS) <= set(SCHEMAS["vlmbias"]["columns"])
    assert set(drives_sets.MIRADATA_COLUMNS) <= set(SCHEMAS["miradata"]["columns"])
    assert set(drives_sets.LLAVA_VIDEO_KEYS) <= set(SCHEMAS["llava-video"]["keys"])
    for names, name, col in (
        (CIFAR100_NAMES, "cifar100", "fine_label"),
        (FOOD101_NAMES, "food101", "label"),
    ):
        facts = dict(SCHEMAS[name]["labels"][col])
        assert len(names) == facts.pop("count") == len(set(names))
        assert {int(k): v for k, v in facts.items()} == {int(k): names[int(k)] for k in facts}
    names = {b.name for b in list_benchmarks()}
    assert {"cifar100", "food101", "landmarks", "mnist", "okvqa"} <= names
    assert {"llava-video", "miradata", "vlmbias"} <= names
    public = {b.name: b.public for b in list_benchmarks()}
    assert public["vlmbias"] and public["mnist"] and not public["tri-pvp"]


# -- recall -----------------------------------------------------------------------------------------


def _mnist(root: Path, labels: list[int]) -> Path:
    rows = [{"image": img(10 * k), "label": d} for k, d in enumerate(labels)]
    write_table(root / "mnist" / "test-00000-of-00001.parquet", "mnist", rows)
    return root


def test_mnist_arithmetic_questions_and_recall_items(tmp_path):
    root = _mnist(tmp_path / "mnist", [5, 0, 7])
    samples = read_benchmark("mnist", root, seed=3)
    assert len(samples) == 6  # two settings per image
    assert [s.meta["setting"] for s in samples] == ["visual", "full_info"] * 3
    rng = random.Random(3)  # the documented draw: operation, then operand, per image in order
    for k, digit in enumerate([5, 0, 7]):
        visual, textual = samples[2 * k], samples[2 * k + 1]
        op, operand = rng.choice(("+", "*")), rng.randint(1, 99)
        assert textual.question == f"{digit} {op} {operand} ="
        assert visual.question == f"the digit in the image {op} {operand} ="
        assert visual.answer == textual.answer == str(eval(f"{digit}{op}{operand}"))
        assert visual.meta["entity"] == str(digit) and shade(visual) == 10 * k
        assert visual.meta["identify"] == "What digit is in the image? Answer with the digit."
    items = recall_items(samples)
    assert [i.family for i in items] == ["mnist"] * 3 and items[2].entity == "7"
    assert items[1].textual.startswith("0 ") and items[1].visual.startswith("the digit")
    ident = read_benchmark("mnist:identify", root)
    assert [s.answer for s in ident] == ["5", "0", "7"]
    assert {s.meta["setting"] for s in ident} == {"identify"}


def _cifar(root: Path) -> Path:
    # labels: six cattle (19), one crab (26, spelled "cra" on the card), one bear (3)
    labels = [19, 26, 19, 19, 3, 19, 19, 19]
    rows = [{"img": img(k), "fine_label": lab, "coarse_label": 0} for k, lab in enumerate(labels)]
    write_table(root / "cifar100" / "test-00000-of-00001.parquet", "cifar100", rows)
    return root


QA = [
    {"entity": "cattle", "question": "What do cattle mostly eat?", "answer": "grass"},
    {
        "entity": "crab",
        "question": "How many legs does a crab have?",
        "answer": "ten",
        "visual_question": "How many legs does the animal in the image have?",
    },
]


def test_cifar100_pairs_each_qa_pair_with_five_images_of_its_entity(tmp_path):
    root = _cifar(tmp_path / "cifar")
    with pytest.raises(BenchmarkNotPublicError, match=r"qa\.jsonl.*cifar100:identify"):
        read_benchmark("cifar100", root)
    with pytest.raises(BenchmarkNotPublicError, match="question-answer pairs are not"):
        read_benchmark("cifar100")  # asked for before the hub copy would be fetched
    write_jsonl(root / "qa.jsonl", QA)
    samples = read_benchmark("cifar100", root)
    assert len(samples) == 2 * 5 + 2 * 1  # 5 of the 6 cattle images; the only crab image
    cattle = [s for s in samples if s.meta["entity"] == "cattle"]
    assert {s.meta["row"] for s in cattle} < {0, 2, 3, 5, 6, 7}
    assert len({s.meta["row"] for s in cattle}) == 5
    visual = [s.question for s in cattle if s.meta["setting"] == "visual"]
    assert set(visual) == {"What do the object in the image mostly eat?"}
    textual = {s.question for s in cattle if s.meta["setting"] == "full_info"}
    assert textual == {"What do cattle mostly eat?"}
    crab = [s for s in samples if s.meta["entity"] == "crab"]
    assert [s.meta["row"] for s in crab] == [1, 1] and shade(crab[0]) == 1
    assert crab[0].question == "How many legs does the animal in the image have?"
    assert {s.answer for s in crab} == {"ten"}
    assert len(recall_items(samples)) == 6
    ident = read_benchmark("cifar100:identify", root)
    assert [s.answer for s in ident] == ["cattle", "crab", "cattle", "cattle", "bear"] + [
        "cattle"
    ] * 3
    with pytest.raises(BenchmarkSourceError, match="does not exist"):
        read_benchmark("cifar100", root, qa=tmp_path / "none.jsonl")
    (root / "qa.jsonl").write_text('{"entity": "cattle"\n')
    with pytest.raises(DataFormatError, match="line 1: not JSON"):
        read_benchmark("cifar100", root)
    write_jsonl(root / "qa.jsonl", [{"entity": "lion", "question": "q lion", "answer": "a"}])
    with pytest.raises(DataFormatError, match="'lion', which no image has"):
        read_benchmark("cifar100", root)


def test_multiple_choice_conversion(tmp_path):
    root = _cifar(tmp_path / "cifar")
    write_jsonl(root / "qa.jsonl", QA)
    with pytest.raises(BenchmarkSourceError, match="2 distinct answers, too few"):
        read_benchmark("cifar100:mc", root)
    prompts = []

    def hook(prompt: str) -> str:
        prompts.append(prompt)
        return "Incorrect Option 1: hay\nIncorrect Option 2: meat\nIncorrect Option 3: fish\n[STOP]"

    samples = read_benchmark("cifar100:mc", root, convert=hook)
    assert len(prompts) == 6  # one per datapoint (group), shared by its two questions
    assert "Question: How many legs does the animal in the image have?" in prompts[-1]
    assert "Correct Answer: ten" in prompts[-1] and "Incorrect Option 3: hidden fish" in prompts[0]
    for s in samples:
        options = s.meta["options"]
        assert sorted(options.values()) == sorted(["hay", "meat", "fish", s.meta["answer_text"]])
        assert options[s.answer] == s.meta["answer_text"]
        shown = " ".join(f"({k}) {v}" for k, v in options.items())
        assert s.question.endswith(shown) and s.meta["question_type"] == "multiple-choice"
    by_group: dict[str, set] = {}
    for s in samples:
        by_group.setdefault(s.meta["group"], set()).add(tuple(s.meta["options"].values()))
    assert all(len(v) == 1 for v in by_group.values())


def test_food101_labels_and_identification(tmp_path):
    rows = [{"image": img(k), "label": lab} for k, lab in enumerate([16, 17, 100])]
    write_table(tmp_path / "data" / "validation-00000-of-00001.parquet", "food101", rows)
    ident = read_benchmark("food101:identify", tmp_path)
    assert [s.answer for s in ident] == ["cheesecake", "cheese plate", "waffles"]
    assert ident[0].question == "What dish is in the image? Answer with its name."
    assert [s.meta["label"] for s in ident] == [16, 17, 100]


def test_landmarks_original_files(tmp_path):
    root = tmp_path / "gldv2"
    root.mkdir()
    (root / "train.csv").write_text(
        "id,url,landmark_id\nabc001,http://x/1.jpg,7\nabd002,http://x/2.jpg,7\nbcd003,u,9\n"
    )
    (root / "train_label_to_category.csv").write_text(
        "landmark_id,category\n"
        "7,http://commons.wikimedia.org/wiki/Category:Niagara_Falls\n"
        "9,http://commons.wikimedia.org/wiki/Category:Stonehenge\n"
    )
    for k, iid in enumerate(["abc001", "abd002", "bcd003"]):
        folder = root / "train" / iid[0] / iid[1] / iid[2]
        folder.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (4, 4), (k, k, k)).save(folder / f"{iid}.jpg")
    write_jsonl(
        root / "qa.jsonl",
        [
            {
                "entity": "Niagara Falls",
                "question": "Which river feeds Niagara Falls?",
                "answer": "the Niagara",
            }
        ],
    )
    samples = read_benchmark("landmarks", root)
    assert len(samples) == 4  # both Niagara Falls images, two settings each
    assert {Path(s.image).name for s in samples} == {"abc001.jpg", "abd002.jpg"}
    assert samples[0].question == "Which river feeds the object in the image?"
    ident = read_benchmark("landmarks:identify", root)
    assert [s.answer for s in ident] == ["Niagara Falls", "Niagara Falls", "Stonehenge"]
    with pytest.raises(BenchmarkSourceError, match="train.csv"):
        read_benchmark("landmarks", tmp_path)


def test_okvqa_reference_is_the_most_frequent_answer(tmp_path):
    rows = [
        {
            "question_id": "2971475",
            "image": img(0),
            "question": "What sport can you use this for?",
            "answers": ["race"] * 4 + ["motocross"] * 6,
            "question_type": "one",
            "answer_type": "other",
        },
        {
            "question_id": "5",
            "image": img(1),
            "question": "q",
            "answers": ["a", "b", "b", "a"],
            "question_type": "eight",
            "answer_type": "other",
        },
    ]
    write_table(tmp_path / "data" / "val2014-00000-of-00002.parquet", "okvqa", rows)
    samples = read_benchmark("okvqa", tmp_path)
    assert [s.answer for s in samples] == ["motocross", "a"]  # tie: the first given
    assert samples[0].meta["answers"][:4] == ["race"] * 4 and len(samples[0].meta["answers"]) == 10
    assert samples[1].meta["category"] == "eight" and samples[0].meta["setting"] == "visual"


# -- drives -----------------------------------------------------------------------------------------


def _record(rid: str, video: str, question: str, answer: str) -> dict:
    conv = [{"from": "human", "value": f"<image>\n{question}"}, {"from": "gpt", "value": answer}]
    return {"id": rid, "video": video, "conversations": conv, "data_source": "0_30_s_nextqa"}


def test_llava_video_first_records_of_the_open_ended_files(tmp_path):
    nextqa = tmp_path / "0_30_s_nextqa"
    academic = tmp_path / "0_30_s_academic_v0_1"
    nextqa.mkdir()
    academic.mkdir()
    json.dump(
        [
            _record("n1", "NextQA/1.mp4", "What does the boy do?", "He jumps."),
            {
                "id": "n0",
                "video": "NextQA/0.mp4",
                "conversations": [{"from": "human", "value": "x"}],
            },
            _record("n2", "NextQA/2.mp4", "Why?", "To win."),
        ],
        open(nextqa / "0_30_s_nextqa_oe_qa_processed.json", "w"),
    )
    json.dump(
        [_record("a1", "academic/a1.mp4", "Describe the scene.", "A lab.")],
        open(academic / "0_30_s_academic_oe_v0_1_qa_processed.json", "w"),
    )
    json.dump(
        [_record("m1", "NextQA/9.mp4", "Pick one.\nA. x\nB. y", "A.")],
        open(nextqa / "0_30_s_nextqa_mc_qa_processed.json", "w"),
    )
    samples = read_benchmark("llava-video", tmp_path)
    assert [s.id for s in samples] == ["a1", "n1", "n2"]  # sorted files; n0 has no answer turn
    assert samples[1].question == "What does the boy do?" and samples[1].answer == "He jumps."
    assert samples[1].video == str(nextqa / "NextQA" / "1.mp4") and samples[1].image is None
    assert [s.id for s in read_benchmark("llava-video", tmp_path, n=2)] == ["a1", "n1"]
    mc = read_benchmark("llava-video:mc", tmp_path)
    assert [s.id for s in mc] == ["m1"] and mc[0].meta["question_type"] == "multiple-choice"
    with pytest.raises(BenchmarkSourceError, match="LLaVA-Video-178K"):
        read_benchmark("llava-video")


def _miradata(root: Path) -> Path:
    root.mkdir()
    columns = list(SCHEMAS["miradata"]["columns"])
    with open(root / "miradata_v1_9k.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns)
        w.writeheader()
        for k in range(3):
            row = {c: "" for c in columns}
            row.update(clip_id=f"{k}.0", file_path=f"clips/{k}.mp4", short_caption=f"s{k}")
            row.update(dense_caption=f"d{k}", source="youtube_city")
            w.writerow(row)
    return root


def test_miradata_needs_the_authors_questions(tmp_path):
    root = _miradata(tmp_path / "mira")
    with pytest.raises(BenchmarkNotPublicError, match=r"meta CSV and clips are public.*questions"):
        read_benchmark("miradata", root)
    samples = read_benchmark("miradata", root, question="What happens in the video?")
    assert [s.video for s in samples] == [str(root / "clips" / f"{k}.mp4") for k in range(3)]
    assert {s.question for s in samples} == {"What happens in the video?"}
    assert samples[2].meta["dense_caption"] == "d2" and samples[0].answer is None
    write_jsonl(root / "questions.jsonl", [{"clip_id": "0.0", "question": "Where is it?"}])
    with pytest.raises(DataFormatError, match="no question for clip 1.0"):
        read_benchmark("miradata", root)
    assert read_benchmark("miradata", root, n=1)[0].question == "Where is it?"


def test_vlmbias_rows_and_generation_labels(tmp_path):
    rows = [
        {
            "ID": "animals_1",
            "image": img(0),
            "prompt": "How many legs does this animal have? Answer with a number in curly brackets, e.g., {9}.",
            "ground_truth": "{5}",
            "expected_bias": "{4}",
            "topic": "Animals",
            "sub_topic": "Mammals",
        },
        {
            "ID": "logos_2",
            "image": img(1),
            "prompt": "How many stripes?",
            "ground_truth": "4",
            "expected_bias": "3",
            "topic": "Logos",
            "sub_topic": "Shoes",
        },
    ]
    write_table(tmp_path / "data" / "main-00000-of-00001.parquet", "vlmbias", rows)
    samples = read_benchmark("vlmbias", tmp_path)
    assert [s.answer for s in samples] == ["5", "4"]
    assert [s.meta["prior_answer"] for s in samples] == ["4", "3"]
    assert samples[0].meta["category"] == "Animals" and samples[0].meta["counterfactual"]
    assert samples[0].question == rows[0]["prompt"]
    label = drives_sets.vlmbias_label
    assert label("The animal has {5} legs.", samples[0]) == "grounded"
    assert label("{4}", samples[0]) == "prior_driven"
    assert label("It has 4 legs", samples[0]) == "prior_driven"  # the digits alone
    assert label("{six}", samples[0]) == "other"
    assert label("There are {3} stripes", samples[1]) == "prior_driven"
    with pytest.raises(BenchmarkSourceError, match=r"anvo25/vlms-are-biased.*network"):
        read_benchmark("vlmbias")


def test_data_spec_reads_the_new_sets(tmp_path):
    root = _mnist(tmp_path / "m", [3, 8])
    samples = load_data(f"mnist@{root}", None, 0, default_qtypes=())
    assert len(samples) == 4 and re.fullmatch(r"3 [+*] \d+ =", samples[1].question)


def test_studies_use_the_new_sets(tmp_path):
    """The drives study labels VLMBias generations itself; the recall recipe runs MNIST."""
    from interp.studies.drives.report import _labels
    from interp.studies.reproduce.recipes import RECIPES
    from interp.studies.reproduce.run import run_data

    rows = [
        {
            "ID": str(k),
            "image": img(k),
            "prompt": "How many?",
            "ground_truth": "{5}",
            "expected_bias": "{4}",
            "topic": "Animals",
            "sub_topic": "Birds",
        }
        for k in range(3)
    ]
    write_table(tmp_path / "v" / "main.parquet", "vlmbias", rows)
    samples = read_benchmark("vlmbias", tmp_path / "v" / "main.parquet")
    texts = ["{4}", "{5}", "{7}"]
    assert _labels(samples, texts, None) == ["prior_driven", "grounded", "other"]
    recall = RECIPES["recall"]
    assert run_data(recall, recall.runs[0], "org/model", None, None) == "mnist"
    assert run_data(recall, recall.runs[0], "demo", None, None) == "demo"
