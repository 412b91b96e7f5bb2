"""A seeded fuzz of the ``interp`` command: malformed JSONL rows, paths, media bytes and options.

Every run must end with status 0 (every check passed: the model load is stubbed to stop there) or 2
with exactly one ``error: ...`` line on stderr and no traceback, quote no more than a short
excerpt of what it was given, and leave no file behind (no ``--out`` folder, no store, nothing
beside the data). Bounded (a fixed number of cases from one seed) and in-process, so it is fast.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
import soundfile
from PIL import Image

import interp.model
from interp.cli import main
from interp.testing import one_error_line

SEED = 37
CASES = 80


class _Loaded(SystemExit):
    """The command passed every check and asked for the model: stop there, status 0."""


def _stub_load(*args: object, **kwargs: object) -> None:
    raise _Loaded(0)


def _media(folder: Path) -> dict[str, Path]:
    Image.new("RGB", (16, 16), (200, 30, 30)).save(folder / "ok.png")
    soundfile.write(str(folder / "ok.wav"), np.zeros(800, np.float32), 16000)
    (folder / "junk.png").write_bytes(bytes(range(256)) * 4)
    (folder / "junk.wav").write_bytes(b"RIFF\x00\x00\x00\x00WAVEfmt junk")
    (folder / "empty.png").write_bytes(b"")
    (folder / "sub").mkdir()
    return {p.name: p for p in folder.iterdir()}


IMAGES = ["ok.png", "junk.png", "empty.png", "nope.png", "sub", "a" * 300 + ".png", "x\x00y.png"]
AUDIO = ["ok.wav", "junk.wav", "nope.wav", "clip.mp3", "ok.png"]


def _row(rng: random.Random, i: int) -> str:
    """One JSONL line: mostly a usable row, often with one thing wrong."""
    row: dict = {"question": "what color is the square ?", "answer": "red", "id": f"s{i}"}
    row["image"] = "ok.png"
    fault = rng.randrange(12)
    if fault == 0:
        return '{"question": "unterminated'
    if fault == 1:
        return json.dumps(["a", "list"])
    if fault == 2:
        del row["question"]
    elif fault == 3:
        row["image"] = rng.choice(IMAGES)
    elif fault == 4:
        row["image"] = rng.choice([3, {"path": "ok.png"}, [1, 2], True])
    elif fault == 5:
        row["audio"] = rng.choice(AUDIO)
    elif fault == 6:
        row["video"] = rng.choice(["nope.mp4", "ok.png", 5])
    elif fault == 7:
        row["question"] = rng.choice([5, None, ["q"], "{image} {image}"])
    elif fault == 8:
        row["id"] = "dup"
    elif fault == 10:
        row["answer"] = rng.choice([3, 2.5, ["red"], {"a": 1}, None])
    elif fault == 9:
        row["image"] = [rng.choice(IMAGES), "ok.png"]
    return json.dumps(row)


def _options(rng: random.Random) -> list[str]:
    pick = rng.randrange(10)
    return [
        [],
        ["--n", rng.choice(["0", "-3", "2"])],
        ["--batch-size", rng.choice(["0", "-1", "4"])],
        ["--seed", "-1"],
        ["--shard", rng.choice(["x", "3/2", "0/1"])],
        ["--threads", rng.choice(["0", "1"])],
        ["--conditions", rng.choice(["full", "ful,blind", "full,full", "blind,null:black", ""])],
        ["--columns", "question=q"],
        ["--vip", rng.choice(["0", "99", "2"])],
        ["--n", "99999999999"],
    ][pick]


def _data(rng: random.Random, folder: Path, case: int) -> str:
    kind = rng.randrange(10)
    if kind == 0:
        return rng.choice(["", "nope.jsonl", "sub", "a" * 300 + ".jsonl", "demo:colour", "demo:"])
    path = folder / f"data{case}.jsonl"
    lines = [_row(rng, i) for i in range(rng.randrange(0, 7))]
    if kind == 1:
        lines = ["", "   "]
    path.write_text("\n".join(lines) + ("\n" if lines else ""))
    return path.name


@pytest.mark.parametrize("case", range(CASES))
def test_every_run_exits_0_or_2_with_one_line_and_leaves_nothing(
    case, tmp_path, monkeypatch, capsys
):
    rng = random.Random(SEED * 1000 + case)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(interp.model, "load", _stub_load)
    _media(tmp_path)
    data = _data(rng, tmp_path, case)
    before = sorted(p.name for p in tmp_path.iterdir())
    command = rng.choice(["coe", "flow", "ablation", "decoding"])
    argv = [command, "--model", "demo", "--data", data, "--out", "out", "--no-progress"]
    argv += _options(rng)
    try:
        status = main(argv)
    except _Loaded:
        status = 0
    except SystemExit as exit_:  # argparse's own errors
        status = exit_.code
    err = capsys.readouterr().err
    if status == 0:
        return
    assert status == 2, f"{argv}: status {status}\n{err[-3000:]}"
    line = one_error_line(err)
    assert len(line) < 1500, f"{argv}: an error line of {len(line)} characters"
    assert sorted(p.name for p in tmp_path.iterdir()) == before, f"{argv}: left a file"
