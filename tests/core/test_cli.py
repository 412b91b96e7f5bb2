"""The main command, ``interp coe`` (alias ``diagnose``): outputs, JSONL input, and resuming after a
real kill."""

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


def _twins(tmp_path: Path) -> Path:
    """Each demo sample twice, once per side of a ``twin`` label: the two groups are identical,
    so the automatic VIP fails its significance floor (NoVIPError) and ``--alpha 0`` finds one."""
    rows = [
        {**json.loads(line), "twin": t}
        for line in write_jsonl(demo_world("test", n=6), tmp_path / "plain.jsonl")
        .read_text()
        .splitlines()
        for t in (True, False)
    ]
    for r in rows:
        r["id"] = f"{r['id']}-{int(r['twin'])}"
    data = tmp_path / "twins.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return data


def _snapshot(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.is_file()}


def test_a_failed_or_refused_rerun_leaves_the_outputs_as_they_were(tmp_path, capsys):
    data = _twins(tmp_path)
    out = tmp_path / "out"
    base = ["diagnose", "--model", "demo", "--data", str(data), "--out", str(out)]
    # Eq. 9 without its floor (--alpha 0) finds a VIP on these all-equal gaps, with the floor it
    # finds none: one rule, two outcomes, as this test needs (the default rule finds none either way)
    base += ["--split", "twin", "--no-progress", "--vip-rule", "eq9"]
    old = os.umask(0o022)
    try:
        assert main([*base, "--alpha", "0"]) == 0
    finally:
        os.umask(old)
    before = _snapshot(out)
    assert {"summary.txt", "layers.csv", "per_sample.csv", "interp-run.json"} <= set(before)
    # every output, the store's files included, is rw-r--r-- under umask 022
    modes = {p.relative_to(out): p.stat().st_mode & 0o777 for p in out.rglob("*") if p.is_file()}
    assert set(modes.values()) == {0o644}, modes
    capsys.readouterr()

    # another configuration into the same folder: refused up front, nothing touched
    assert main(base) == 2
    err = capsys.readouterr().err
    assert "holds the outputs of `interp coe` with other options (--alpha 0.0 → 0.05)" in err
    assert "--overwrite" in err and "new --out folder" in err
    assert _snapshot(out) == before

    # the same with --overwrite fails (no automatic VIP): the earlier outputs stay byte for
    # byte; the failed run's curves are kept apart
    assert main([*base, "--overwrite"]) == 2
    captured = capsys.readouterr()
    assert "NoVIPError" in captured.err
    assert f"partial outputs are in {out / 'failed-run'}" in captured.out
    assert _snapshot(out) == before
    assert sorted(p.name for p in (out / "failed-run").iterdir()) == [
        "fig2_distance_curves.png",
        "layers.csv",
    ]
    assert not list(out.glob(".interp-staging-*"))

    # another study into the folder is refused too
    ablate = ["ablate", "--model", "demo", "--data", "demo", "--n", "8", "--out", str(out)]
    assert main(ablate) == 2
    assert "holds the outputs of `interp coe`" in capsys.readouterr().err
    assert _snapshot(out) == before

    # a successful re-run replaces the outputs as one unit and says that it resumed
    assert main([*base, "--alpha", "0"]) == 0
    captured = capsys.readouterr()
    assert "resuming: 12 of 12 done" in captured.err
    assert _snapshot(out) == before
    assert not (out / "failed-run").exists()


@pytest.mark.parametrize(
    ("alias", "command"), [("diagnose", "coe"), ("ablate", "ablation"), ("decode", "decoding")]
)
def test_an_earlier_name_is_an_alias_that_records_the_command_name(alias, command):
    """The earlier command names run the same command; the run record names the command (the
    study package and entry-point key) whichever was typed."""
    from interp.cli import build_parser

    argv = ["--model", "demo", "--data", "demo", "--out", "unused"]
    for typed in (alias, command):
        args = build_parser([typed]).parse_args([typed, *argv])
        assert args.command == command
        assert args.func.name == command and alias in args.func.aliases


def test_outputs_recorded_under_an_earlier_name_are_the_same_commands(tmp_path):
    """A folder written by `interp diagnose` before the rename takes an `interp coe` run with the
    same options; another command's outputs are still refused."""
    from interp.outputs import MANIFEST, mixing_problem

    config = {"metric": "cosine"}
    record = {"command": "diagnose", "configuration": config, "files": [], "complete": True}
    (tmp_path / MANIFEST).write_text(json.dumps(record))
    assert mixing_problem(tmp_path, "coe", config, aliases=("diagnose",)) is None
    assert "`interp diagnose`" in str(mixing_problem(tmp_path, "coe", config))
    assert "`interp diagnose`" in str(mixing_problem(tmp_path, "ablation", config, ("ablate",)))
