"""What a new user hits first: a broken model folder, bad data refused before any heavy import and
without a file left behind, and one CPU-thread policy for the command and Python.

References: ``json`` itself for a broken config.json, ``sys.modules`` of the refused process for
what it imported, the output folder's listing, and ``torch.get_num_threads`` in a fresh process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from interp.errors import ModelConfigError
from interp.testing import OFFLINE_ENV, one_error_line, refused

ROOT = Path(__file__).resolve().parents[2]
ENV = {**OFFLINE_ENV, "PYTHONPATH": str(ROOT)}


def _cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "interp.cli", *args],
        cwd=cwd,
        env=env or ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_broken_config_json_is_named_as_such_not_as_a_network_problem(tmp_path):
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "llava", ')
    with pytest.raises(json.JSONDecodeError):  # the reference: the file is not JSON
        json.loads((folder / "config.json").read_text())
    from interp.model import model_config

    with refused(ModelConfigError, match=r"config\.json is not valid JSON"):
        model_config(folder)
    (folder / "config.json").write_text("[1, 2]")
    with refused(ModelConfigError, match="not a JSON object"):
        model_config(folder)
    (folder / "config.json").write_text("{")
    run = _cli(
        "coe", "--model", str(folder), "--data", "demo", "--n", "4", "--out", "o", cwd=tmp_path
    )
    line = one_error_line(run.stderr)
    assert run.returncode == 2 and "ModelConfigError" in line and "hub" not in line
    assert not (tmp_path / "o").exists()


def _bad_inputs(folder: Path) -> dict[str, list[str]]:
    from PIL import Image

    Image.new("RGB", (8, 8)).save(folder / "ok.png")
    (folder / "corrupt.wav").write_bytes(b"RIFF\x00\x00\x00\x00WAVEjunk")
    rows = {
        "missing.jsonl": {"question": "q", "image": "nope.png"},
        "long.jsonl": {"question": "q", "image": "a" * 300 + ".png"},
        "wav.jsonl": {"question": "q", "answer": "red", "audio": "corrupt.wav"},
        "bad.jsonl": None,
    }
    for name, row in rows.items():
        (folder / name).write_text(json.dumps(row) + "\n" if row else '{"question": \n')
    return {
        "typo'd --data": ["coe", "--model", "demo", "--data", "dat.jsonl"],
        "missing image": ["coe", "--model", "demo", "--data", "missing.jsonl"],
        "long image name": ["coe", "--model", "demo", "--data", "long.jsonl"],
        "corrupt wav": ["flow", "--model", "demo-omni", "--data", "wav.jsonl"],
        "broken JSONL": ["ablation", "--model", "demo", "--data", "bad.jsonl"],
        "unknown demo type": ["coe", "--model", "demo", "--data", "demo:colour"],
        # options named wrong: checked by name, before the modules that would run them
        "unknown condition": ["coe", "--model", "demo", "--data", "demo", "--conditions", "full,x"],
        "bad condition argument": [
            *("coe", "--model", "demo", "--data", "demo", "--conditions", "full,distort:5000")
        ],
        "unknown ablation condition": [
            *("ablation", "--model", "demo", "--data", "demo", "--conditions", "blind,x")
        ],
        "unknown decoding method": [
            *("decoding", "--model", "demo", "--data", "pope", "--methods", "greedy,x")
        ],
        "unknown amateur": [
            *("decoding", "--model", "demo", "--data", "pope", "--methods", "contrast"),
            *("--amateur", "x"),
        ],
    }


CHECK = """
import json, sys
from interp.cli import main
status = main(json.loads(sys.argv[1]))
heavy = sorted(m for m in ("torch", "transformers", "nnsight") if m in sys.modules)
print(json.dumps([status, heavy]))
"""


@pytest.mark.parametrize(
    "case",
    [
        "typo'd --data",
        "missing image",
        "long image name",
        "corrupt wav",
        "broken JSONL",
        "unknown demo type",
        "unknown condition",
        "bad condition argument",
        "unknown ablation condition",
        "unknown decoding method",
        "unknown amateur",
    ],
)
def test_bad_data_is_refused_before_torch_is_imported_and_leaves_nothing(case, tmp_path):
    argv = [*_bad_inputs(tmp_path)[case], "--out", "out", "--no-progress"]
    run = subprocess.run(
        [sys.executable, "-c", CHECK, json.dumps(argv)],
        cwd=tmp_path,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )
    one_error_line(run.stderr)
    status, heavy = json.loads(run.stdout.strip().splitlines()[-1])
    assert status == 2
    assert heavy == [], f"{case}: imported {heavy} before refusing"
    assert not (tmp_path / "out").exists()
    if case == "long image name":
        assert "longer than the file system allows" in run.stderr and len(run.stderr) < 600


def test_the_decoding_commands_light_list_of_methods_is_the_one_the_methods_module_takes():
    from interp.studies.decoding.cli import METHOD_NAMES
    from interventions.decoding import METHODS, PLAIN

    assert set(METHOD_NAMES) == set(PLAIN) | set(METHODS)


def test_a_failed_run_removes_the_empty_store_it_created(tmp_path):
    from interp.outputs import OutputRun

    out = tmp_path / "new"
    out.mkdir()
    run = OutputRun(command="flow", config={}, overwrite=False, out_arg=str(out), created=True)
    staging = run.stage(out)
    measurement = staging / "store" / "generate_full"
    measurement.mkdir(parents=True)
    (measurement / ".lock").write_text("")
    (measurement / "manifest.json").write_text(json.dumps({"complete": False, "shards": []}))
    assert run.fail() is None
    assert not out.exists()  # nothing of the run is left: not even the folder it made


def test_a_failed_run_keeps_a_store_that_holds_results(tmp_path):
    from interp.outputs import OutputRun

    out = tmp_path / "kept"
    out.mkdir()
    run = OutputRun(command="flow", config={}, overwrite=False, out_arg=str(out), created=True)
    staging = run.stage(out)
    measurement = staging / "store" / "generate_full"
    measurement.mkdir(parents=True)
    (measurement / "manifest.json").write_text(json.dumps({"shards": [{"file": "shard-0"}]}))
    (measurement / "shard-0.safetensors").write_bytes(b"x")
    run.fail()
    assert (out / "store" / "generate_full" / "shard-0.safetensors").exists()


THREADS = """
import torch, interp
before = torch.get_num_threads()
interp.load("demo")
from interp.threads import default_threads
print(before, torch.get_num_threads(), default_threads())
"""


def test_the_python_api_applies_the_command_lines_thread_policy():
    env = {k: v for k, v in ENV.items() if k not in ("OMP_NUM_THREADS", "INTERP_THREADS")}
    out = subprocess.run(
        [sys.executable, "-c", THREADS], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    _, after, policy = map(int, out.stdout.split())
    assert after == policy
    env["INTERP_THREADS"] = "1"
    out = subprocess.run(
        [sys.executable, "-c", THREADS], env=env, capture_output=True, text=True, timeout=300
    )
    assert int(out.stdout.split()[1]) == 1


def test_set_threads_sets_torchs_count_and_refuses_nonsense():
    import torch

    import interp
    from interp.threads import ThreadsError

    before = torch.get_num_threads()
    try:
        assert interp.set_threads(1) == 1 == torch.get_num_threads()
        for bad in (0, -2, 1.5, True):
            with refused(ThreadsError, match="integer >= 1"):
                interp.set_threads(bad)
    finally:
        torch.set_num_threads(before)
        os.environ.pop("MKL_NUM_THREADS", None)


def test_every_option_with_a_default_shows_it_in_help():
    import argparse

    from interp.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    missing = []
    for name, command in sub.choices.items():
        text = " ".join(command.format_help().split())  # unwrapped
        for action in command._actions:
            if not action.option_strings or action.default in (None, False, argparse.SUPPRESS):
                continue
            if isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
                continue
            shown = f"default: {action.default}" in text or "default" in (action.help or "")
            if not shown:
                missing.append(f"{name} {action.option_strings[0]}")
    assert not missing, missing


def test_the_audit_prints_why_a_number_is_missing_beside_it():
    from interp.studies.audit.cli import terminal_lines

    parts = {
        "conflict": {
            "ran": True,
            "status": "ran",
            "numbers": {"winner": "none", "accuracy": None},
            "reason": "no item where every source differs",
        },
        "flow": {"ran": False, "status": "skipped", "reason": "needs two samples"},
    }
    lines = terminal_lines(parts)
    at = lines.index("conflict: winner none, accuracy n/a")
    assert lines[at + 1] == "  note: no item where every source differs"
    assert "  flow (skipped): needs two samples" in lines


def test_doctor_shows_its_answer_with_its_spaces():
    import interp
    from interp.doctor import doctor

    vlm = interp.load("demo")
    report = doctor(vlm)  # the default answer, "A red square."
    full = report.prompts["full"]
    shown = full.split("⟦answer", 1)[1].split("⟧", 1)[0]
    # the reference: the tokenizer decoding the answer's tokens together
    ids = vlm.tokenizer(" A red square.", add_special_tokens=False).input_ids
    want = vlm.tokenizer.decode(ids)
    assert " ".join(shown.split()) == " ".join(want.split()), (shown, want)
