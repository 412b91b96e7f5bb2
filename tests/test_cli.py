"""The main command, ``interp diagnose``: outputs, JSONL input, and resuming after a real kill."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from interp.cli import main
from interp.datasets import demo_world
from interp.samples import write_jsonl

ARGS = ["--model", "demo", "--data", "demo", "--n", "160", "--batch-size", "4", "--no-progress"]
OUTPUTS = ("per_sample.csv", "layers.csv", "correlations.csv", "summary.txt")


def _command(out: Path) -> list[str]:
    return [sys.executable, "-m", "interp.cli", "diagnose", *ARGS, "--out", str(out)]


def _shards(out: Path) -> int:
    manifest = out / "store" / "manifest.json"
    try:
        return len(json.loads(manifest.read_text())["shards"])
    except (FileNotFoundError, json.JSONDecodeError, KeyError):
        return 0


def test_killed_run_resumes_with_identical_outputs(tmp_path):
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    assert main(["diagnose", *ARGS, "--out", str(whole)]) == 0
    for name in (*OUTPUTS, "fig2_distance_curves.png", "fig4_tvi_by_group.png"):
        assert (whole / name).stat().st_size > 0

    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        _command(killed), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    deadline = time.time() + 120
    while _shards(killed) < 2 and proc.poll() is None and time.time() < deadline:
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done = _shards(killed)
    assert 2 <= done < 40, f"the run was not interrupted mid-way ({done} of 40 batches stored)"
    assert not (killed / "summary.txt").exists()

    rerun = subprocess.run(_command(killed), env=env, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert _shards(killed) == 40  # the finished batches were kept, the rest appended
    for name in OUTPUTS:
        assert (killed / name).read_text() == (whole / name).read_text(), name


def test_jsonl_input_and_summary(tmp_path):
    samples = demo_world("test", n=48, qtypes=["color", "arith"])
    data = write_jsonl(samples, tmp_path / "data" / "items.jsonl")
    out = tmp_path / "out"
    assert (
        main(
            [
                "diagnose",
                "--model",
                "demo",
                "--data",
                str(data),
                "--out",
                str(out),
                "--no-progress",
                "--fallback-vip",
                "4",
                "--group-by",
                "qtype",
            ]
        )
        == 0
    )
    frame = pd.read_csv(out / "per_sample.csv")
    assert list(frame["sample_id"].astype(str)) == [s.id for s in samples]
    assert set(frame["qtype"]) == {"color", "arith"}
    summary = (out / "summary.txt").read_text()
    assert "VIP: layer" in summary and "Spearman(TVI (post-VIP), correct)" in summary


def test_bad_data_file_is_a_clear_error(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"image": "x.png"}\n')
    assert (
        main(["diagnose", "--model", "demo", "--data", str(bad), "--out", str(tmp_path / "o")]) == 2
    )
    assert "DataFormatError" in capsys.readouterr().err


def test_bad_options_are_rejected(tmp_path, capsys):
    with pytest.raises(SystemExit):  # argparse knows the metrics
        main(
            [
                "diagnose",
                "--model",
                "demo",
                "--data",
                "demo",
                "--out",
                str(tmp_path),
                "--metric",
                "nonsense",
            ]
        )
    code = main(
        [
            "diagnose",
            "--model",
            "demo",
            "--data",
            "demo",
            "--n",
            "8",
            "--out",
            str(tmp_path),
            "--conditions",
            "full,nonsense",
        ]
    )
    assert code == 2 and "ConditionError" in capsys.readouterr().err
