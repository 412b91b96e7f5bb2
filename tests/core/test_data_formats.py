"""Benchmark data in the formats people have: Hugging Face ``datasets`` folders, parquet files
(written by ``datasets`` and by pandas, one file, a folder of split shards, a glob) and hub ids —
read through :func:`interp.read_dataset` and ``--data``. The reference is the rows the test
writes: question text, image pixels, answer, id and labels must come back unchanged."""

from __future__ import annotations

import base64
import io
import re
import socket
import sys
from typing import Any

import datasets
import numpy as np
import pandas as pd
import pytest
from PIL import Image

import interp
import interp.command as command_module
import interp.model
from interp.cli import main
from interp.errors import (
    DataSourceError,
    ImageError,
    MissingColumnError,
    MissingExtraError,
)

N = 6
# the sample fields under the default column names, and under names that need --columns
DEFAULT = {"question": "question", "image": "image", "answer": "answer", "id": "id"}
OTHER = {"question": "ask", "image": "picture", "answer": "gt", "id": "key"}
MAPPING = "question=ask,image=picture,answer=gt,id=key"


def _rows() -> list[dict[str, Any]]:
    """Six items with random images of varied sizes, a list of answers and three labels."""
    rng = np.random.default_rng(7)
    return [
        {
            "question": f"what is drawn in picture {i}?",
            "pixels": rng.integers(0, 256, (8 + i, 12 - i, 3), dtype=np.uint8),
            "answers": [f"answer{i}", f"other{i}"],
            "id": f"q{i}",
            "category": ("fruit", "tool", "animal")[i % 3],
            "flag": i % 2 == 0,
            "score": i / 2,
        }
        for i in range(N)
    ]


ROWS = _rows()
LABELS = ("category", "flag", "score")


def _png(pixels: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format="PNG")
    return buf.getvalue()


def _dataset(rows: list[dict[str, Any]], names: dict[str, str] = DEFAULT) -> datasets.Dataset:
    """A ``datasets.Dataset`` with an Image column of PIL images made here."""
    features = datasets.Features(
        {
            names["question"]: datasets.Value("string"),
            names["image"]: datasets.Image(),
            names["answer"]: datasets.Sequence(datasets.Value("string")),
            names["id"]: datasets.Value("string"),
            "category": datasets.Value("string"),
            "flag": datasets.Value("bool"),
            "score": datasets.Value("float64"),
        }
    )
    columns = {
        names["question"]: [r["question"] for r in rows],
        names["image"]: [Image.fromarray(r["pixels"]) for r in rows],
        names["answer"]: [r["answers"] for r in rows],
        names["id"]: [r["id"] for r in rows],
        **{k: [r[k] for r in rows] for k in LABELS},
    }
    return datasets.Dataset.from_dict(columns, features=features)


def _check(samples: list[interp.Sample], rows: list[dict[str, Any]], *, ids: bool = True) -> None:
    """The samples are the rows: question, pixels, first answer, id, every answer and labels."""
    assert len(samples) == len(rows)
    for i, (s, row) in enumerate(zip(samples, rows)):
        assert s.question == row["question"]
        np.testing.assert_array_equal(np.asarray(s.load_image()), row["pixels"])
        assert s.answer == row["answers"][0]
        assert s.id == (row["id"] if ids else str(i))
        assert s.meta == {"answers": row["answers"], **{k: row[k] for k in LABELS}}


# -- datasets folders ----------------------------------------------------------------------------


def test_saved_dataset_and_dataset_dict_read_back_as_the_rows(tmp_path):
    _dataset(ROWS).save_to_disk(str(tmp_path / "one"))
    _check(interp.read_dataset(tmp_path / "one"), ROWS)
    _check(interp.read_dataset(tmp_path / "one", n=3), ROWS[:3])

    test, train = ROWS[:4], ROWS[4:]
    splits = datasets.DatasetDict({"test": _dataset(test, OTHER), "train": _dataset(train, OTHER)})
    splits.save_to_disk(str(tmp_path / "dict"))
    _check(interp.read_dataset(f"{tmp_path / 'dict'}:test", columns=MAPPING), test)
    mapping = {"question": "ask", "image": "picture", "answer": "gt", "id": "key"}
    _check(interp.read_dataset(tmp_path / "dict", split="train", columns=mapping), train)

    with pytest.raises(DataSourceError, match=r"holds the splits test, train; pick one: .*:test"):
        interp.read_dataset(tmp_path / "dict", columns=MAPPING)
    with pytest.raises(DataSourceError, match=r"has no split 'val'; its splits are test, train"):
        interp.read_dataset(f"{tmp_path / 'dict'}:val", columns=MAPPING)


def test_a_missing_column_names_the_columns_and_the_fix(tmp_path):
    _dataset(ROWS, OTHER).save_to_disk(str(tmp_path / "d"))
    with pytest.raises(MissingColumnError) as err:  # 'ask' is no default question name ...
        interp.read_dataset(tmp_path / "d", columns="image=picture")
    message = str(err.value)
    assert "no question column" in message and "--columns question=<column>" in message
    assert "ask, picture, gt, key, category, flag, score" in message
    with pytest.raises(MissingColumnError, match=r"no column 'photo' \(--columns image=\.\.\.\)"):
        interp.read_dataset(tmp_path / "d", columns="question=ask,image=photo")
    # ... and 'image=none' reads text-only items
    samples = interp.read_dataset(tmp_path / "d", columns="question=ask,image=none,id=key")
    assert [s.image for s in samples] == [None] * N
    assert [s.question for s in samples] == [r["question"] for r in ROWS]


def test_an_image_list_is_a_multi_image_sample_and_class_labels_read_as_names(tmp_path):
    features = datasets.Features(
        {
            "prompt": datasets.Value("string"),
            "images": datasets.Sequence(datasets.Image()),
            "label": datasets.ClassLabel(names=["no", "yes"]),
        }
    )
    pixels = [[r["pixels"], ROWS[-1 - i]["pixels"]] for i, r in enumerate(ROWS)]
    columns = {
        "prompt": [r["question"] for r in ROWS],
        "images": [[Image.fromarray(p) for p in pair] for pair in pixels],
        "label": [i % 2 for i in range(N)],
    }
    datasets.Dataset.from_dict(columns, features=features).save_to_disk(str(tmp_path / "d"))
    samples = interp.read_dataset(tmp_path / "d")
    for i, (s, pair) in enumerate(zip(samples, pixels)):
        assert s.question == ROWS[i]["question"] and s.id == str(i) and s.meta == {}
        assert s.answer == ("no", "yes")[i % 2]
        assert s.n_images == 2
        for image, expected in zip(s.load_images(), pair):
            np.testing.assert_array_equal(np.asarray(image), expected)


def test_a_folder_of_no_known_layout_is_a_clear_error(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(DataSourceError, match="neither a Hugging Face datasets folder"):
        interp.read_dataset(tmp_path)


# -- parquet ---------------------------------------------------------------------------------------


def _frame(rows: list[dict[str, Any]], image_cells: list[Any]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "question": [r["question"] for r in rows],
            "image": image_cells,
            "answers": [r["answers"] for r in rows],
            "id": [r["id"] for r in rows],
            **{k: [r[k] for r in rows] for k in LABELS},
        }
    )


def test_parquet_written_by_datasets_and_by_pandas(tmp_path):
    _dataset(ROWS).to_parquet(str(tmp_path / "hf.parquet"))
    _check(interp.read_dataset(tmp_path / "hf.parquet"), ROWS)

    (tmp_path / "images").mkdir()
    for r in ROWS:
        Image.fromarray(r["pixels"]).save(tmp_path / "images" / f"{r['id']}.png")
    encodings = {
        "struct": [{"bytes": _png(r["pixels"]), "path": None} for r in ROWS],
        "bytes": [_png(r["pixels"]) for r in ROWS],
        "base64": [base64.b64encode(_png(r["pixels"])).decode() for r in ROWS],
        "path": [f"images/{r['id']}.png" for r in ROWS],  # relative to the parquet file
    }
    for name, cells in encodings.items():
        path = tmp_path / f"pandas-{name}.parquet"
        _frame(ROWS, cells).to_parquet(path)
        samples = interp.read_dataset(path)
        _check(samples, ROWS)
        if name == "path":
            assert samples[0].image == tmp_path / "images" / "q0.png"


def test_parquet_split_shards_in_a_folder_and_a_glob(tmp_path):
    data = tmp_path / "snapshot" / "data"
    data.mkdir(parents=True)
    test = _dataset(ROWS[:5]).remove_columns("id")  # no id column: ids are row positions
    test.select(range(3)).to_parquet(str(data / "test-00000-of-00002.parquet"))
    test.select(range(3, 5)).to_parquet(str(data / "test-00001-of-00002.parquet"))
    _dataset(ROWS[5:]).to_parquet(str(data / "train-00000-of-00001.parquet"))

    expected = ROWS[:5]
    _check(interp.read_dataset(f"{tmp_path / 'snapshot'}:test"), expected, ids=False)
    _check(interp.read_dataset(str(data / "test-*.parquet")), expected, ids=False)
    _check(interp.read_dataset(tmp_path / "snapshot", split="test", n=4), expected[:4], ids=False)
    _check(interp.read_dataset(f"{tmp_path / 'snapshot'}:train"), ROWS[5:])
    with pytest.raises(DataSourceError, match=r"holds the splits test, train"):
        interp.read_dataset(tmp_path / "snapshot")


def test_an_undecodable_image_cell_names_its_row(tmp_path):
    cells = [{"bytes": _png(r["pixels"]), "path": None} for r in ROWS]
    cells[2] = {"bytes": b"not an image", "path": None}
    _frame(ROWS, cells).to_parquet(tmp_path / "bad.parquet")
    with pytest.raises(
        ImageError, match=r"bad\.parquet row 2 \(id 'q2'\): the image cell does not"
    ):
        interp.read_dataset(tmp_path / "bad.parquet")
    paths = [f"{r['id']}.png" for r in ROWS]
    for r in ROWS:
        Image.fromarray(r["pixels"]).save(tmp_path / f"{r['id']}.png")
    paths[2] = "neither/a/file.png"
    _frame(ROWS, paths).to_parquet(tmp_path / "missing.parquet")
    with pytest.raises(ImageError, match=r"row 2 \(id 'q2'\).*neither an image file"):
        interp.read_dataset(tmp_path / "missing.parquet")


def test_without_the_datasets_package(tmp_path, monkeypatch):
    _dataset(ROWS).to_parquet(str(tmp_path / "hf.parquet"))
    _dataset(ROWS).save_to_disk(str(tmp_path / "saved"))
    monkeypatch.setitem(sys.modules, "datasets", None)  # `import datasets` raises ImportError
    _check(interp.read_dataset(tmp_path / "hf.parquet"), ROWS)  # pyarrow reads parquet
    with pytest.raises(MissingExtraError, match=r"pip install 'vlm-interp\[data\]'"):
        interp.read_dataset(tmp_path / "saved")
    with pytest.raises(MissingExtraError, match=r"pip install 'vlm-interp\[data\]'"):
        interp.read_dataset("org/name:test")
    for module in ("pyarrow", "pyarrow.parquet", "fastparquet"):  # no parquet engine at all
        monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(MissingExtraError, match=r"parquet needs pyarrow"):
        interp.read_dataset(tmp_path / "hf.parquet")


# -- hub ids -----------------------------------------------------------------------------------------


@pytest.fixture
def no_network_call(monkeypatch):
    """Fail the test if anything opens a connection or asks the hub for a dataset."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a network call was attempted")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(datasets, "load_dataset", refuse)


def _online(monkeypatch) -> None:
    """No offline switch, endpoint or proxy variable: the hub is probed directly."""
    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HF_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)
    for var in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)


def test_a_hub_id_offline_fails_at_once_without_a_network_call(monkeypatch, no_network_call):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DataSourceError) as err:
        interp.read_dataset("some-org/some-bench:test")
    message = str(err.value)
    assert "is no local file or folder" in message and "use a local copy" in message
    assert "as a hub dataset id it needs a network (HF_HUB_OFFLINE is set)" in message


def test_a_hub_id_with_an_unreachable_host_is_refused_after_one_probe(monkeypatch):
    _online(monkeypatch)
    probes: list[tuple[Any, ...]] = []

    def unreachable(address: tuple[str, int], timeout: float | None = None) -> Any:
        probes.append((address, timeout))
        raise OSError(101, "Network is unreachable")

    def load_dataset(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("load_dataset was called without a network")

    monkeypatch.setattr(socket, "create_connection", unreachable)
    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    with pytest.raises(DataSourceError, match="cannot be reached .*use a local copy"):
        interp.read_dataset("some-org/some-bench")
    assert probes == [(("huggingface.co", 443), 3)]


def test_a_hub_id_with_a_network_loads_through_load_dataset(monkeypatch):
    _online(monkeypatch)

    class Connection:
        def close(self) -> None:
            pass

    calls: list[tuple[Any, ...]] = []

    def load_dataset(*args: Any, **kwargs: Any) -> datasets.Dataset:
        calls.append((args, kwargs))
        return _dataset(ROWS[:3], OTHER)

    monkeypatch.setattr(socket, "create_connection", lambda *a, **k: Connection())
    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    samples = interp.read_dataset("some-org/some-bench:main:test", columns=MAPPING, n=3)
    assert calls == [(("some-org/some-bench",), {"name": "main", "split": "test[:3]"})]
    _check(samples, ROWS[:3])

    def not_found(*args: Any, **kwargs: Any) -> Any:
        raise datasets.exceptions.DatasetNotFoundError("Dataset 'some-org/nope' doesn't exist")

    monkeypatch.setattr(datasets, "load_dataset", not_found)
    with pytest.raises(
        DataSourceError, match=r"'some-org/nope' cannot be loaded \(DatasetNotFound"
    ):
        interp.read_dataset("some-org/nope:test")


# -- the command line -------------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore::interp.errors.UnknownTokenWarning")  # words of no demo item
def test_diagnose_reads_a_dataset_folder_with_a_column_mapping(tmp_path, monkeypatch):
    datasets.DatasetDict({"test": _dataset(ROWS, OTHER)}).save_to_disk(str(tmp_path / "bench"))
    loaded: list[list[interp.Sample]] = []  # what the command read, to compare with the rows
    original = command_module.load_data

    def load_data(*args: Any, **kwargs: Any) -> list[interp.Sample]:
        loaded.append(original(*args, **kwargs))
        return loaded[-1]

    monkeypatch.setattr(command_module, "load_data", load_data)
    out = tmp_path / "out"
    argv = ["diagnose", "--model", "demo", "--data", f"{tmp_path / 'bench'}:test"]
    argv += ["--columns", MAPPING, "--n", "4", "--out", str(out), "--no-progress"]
    argv += ["--split", "flag", "--fallback-vip", "4", "--max-new-tokens", "2"]
    assert main(argv) == 0
    _check(loaded[0], ROWS[:4])
    frame = pd.read_csv(out / "per_sample.csv")
    assert list(frame["sample_id"]) == [r["id"] for r in ROWS[:4]]
    assert list(frame["category"]) == [r["category"] for r in ROWS[:4]]


def _error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def test_data_errors_on_the_command_line_come_before_the_model(
    tmp_path, monkeypatch, capsys, no_network_call
):
    def load(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the model was loaded: the error should have been found up front")

    monkeypatch.setattr(interp.model, "load", load)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    _dataset(ROWS, OTHER).to_parquet(str(tmp_path / "bench.parquet"))
    cases = {
        (str(tmp_path / "bench.parquet"), "image=picture"): r"^error: MissingColumnError: .*"
        r"no question column .*the columns are: ask, picture, gt, key, .*--columns question=",
        ("some-org/some-bench:test", None): r"^error: DataSourceError: 'some-org/some-bench' is no "
        r"local file or folder, and as a hub dataset id it needs a network .*use a local copy",
        ("demo", MAPPING): r"^error: UsageError: --columns applies to parquet",
    }
    for (data, columns), message in cases.items():
        out = tmp_path / "out"
        argv = ["diagnose", "--model", "demo", "--data", data, "--out", str(out)]
        argv += ["--columns", columns] if columns else []
        capsys.readouterr()
        assert main(argv) == 2
        line = _error_line(capsys)
        assert re.search(message, line), line
        assert not out.exists()
    argv = ["audit", "--model", "demo", "--data", "demo", "--columns", MAPPING, "--out", str(out)]
    assert main(argv) == 2
    assert _error_line(capsys).startswith("error: UsageError: --columns applies to parquet")
