"""Every user error of the ``interp`` command is one line ``error: ...`` with exit status 2.

Each case checks the exact shape of stderr (one line, ``error: `` prefix, no traceback), the exit
status, the words that name the problem, and — where the check is made up front — that the
model was never loaded and the output folder was not created. A few cases run the installed
``interp`` command in a subprocess (entry points, ``--version``, offline hub ids, progress bars);
the rest call :func:`interp.cli.main` in-process.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import interp
import interp.model
from interp.cli import main
from interp.datasets import demo_world
from interp.samples import write_jsonl
from interp.testing import INTERP, OFFLINE_ENV, one_error_line
from probes.vip import NoVIPWarning, VIPDetector

PROGRESS_MARKS = ("Loading weights", "it/s", "%|", "sample/s")


def _interp(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """Run the installed ``interp`` command."""
    return subprocess.run(
        [*INTERP, *args], cwd=cwd, env=OFFLINE_ENV, capture_output=True, text=True, timeout=300
    )


def _refused(capsys, argv: list[str], out: Path | None = None) -> str:
    """``main(argv)`` returns 2 with one ``error: ...`` line, and leaves no ``out`` behind."""
    capsys.readouterr()
    assert main(argv) == 2
    line = one_error_line(capsys.readouterr().err)
    if out is not None:
        assert not out.exists(), "a refused command created its output folder"
    return line


def _diagnose(out: Path | str, *extra: str) -> list[str]:
    return ["diagnose", "--model", "demo", "--data", "demo", "--n", "8", "--out", str(out), *extra]


# -- options checked before anything is loaded ------------------------------------------------------

OPTION_CASES = [
    (["--vip", "40"], r"UsageError: --vip 40 is outside the model's decoder layers 1\.\.12$"),
    (["--vip", "0"], r"--vip 0 is outside the model's decoder layers 1\.\.12$"),
    (["--fallback-vip", "40"], r"--fallback-vip 40 is outside the model's decoder layers 1\.\.12$"),
    (
        ["--group-by", "nope"],
        r"UsageError: --group-by 'nope': no sample has this label; labels in the data: .*\bqtype\b",
    ),
    (
        ["--split", "nope"],
        r"UsageError: --split 'nope': no sample has this label; labels in the data: .*\bneeds_image",
    ),
    (["--split", "qtype"], r"--split 'qtype': not a boolean label \(values such as 'color'\)"),
    (["--split", "needs_image"], r"--split 'needs_image': 8 samples are true and 0 false"),
    (["--split", "prior_answer"], r"--split 'prior_answer': \d+ of 8 samples have no value"),
    (["--conditions", "full"], r"UsageError: --conditions needs two conditions .*got 'full'"),
    (["--conditions", "full,full"], r"--conditions: the two conditions are the same \('full'\)"),
    (["--conditions", "full,nope"], r"ConditionError: unknown condition part 'nope'"),
    (["--n", "0"], r"UsageError: --n must be >= 1, got 0$"),
    (["--n", "3"], r"give at least 4 samples \(--data 'demo' gives 3\)$"),
    (["--seed", "-1"], r"--seed must be >= 0, got -1$"),
    (["--data", "demo:nope"], r"--data 'demo:nope': unknown demo question types \['nope'\]; "),
    (["--data", "demo:"], r"--data 'demo:': no question type given; choose from color, "),
    (
        ["--alpha", "1.5"],
        r"UsageError: --alpha must be in \[0, 1\) \(0 = no significance floor\), got 1\.5$",
    ),
    (["--beta", "0"], r"--beta must be > 0, got 0\.0$"),
    (["--vip-rule", "x"], r"--vip-rule 'x' is not a VIP rule: use one of eq9, effect, jump"),
    (["--min-fraction", "2"], r"--min-fraction must be in \[0, 1\], got 2\.0$"),
    (["--min-effect", "-1"], r"--min-effect must be >= 0 \(a Cohen's d\), got -1\.0$"),
    (["--vip-rule", "effect", "--min-fraction", "0"], r"effect needs an effect-size floor: --min-"),
    (["--batch-size", "0"], r"--batch-size must be >= 1, got 0$"),
    (["--max-new-tokens", "0"], r"--max-new-tokens must be >= 1, got 0$"),
    (["--shard", "bad"], r"--shard: a shard is 'i/n' \(e\.g\. '0/2'\), got 'bad'$"),
    (["--shard", "2/2"], r"--shard: shard 2/2: need n >= 1 and 0 <= i < n$"),
    (["--shard", "0/2", "--overwrite"], r"--overwrite cannot be combined with a sharded run"),
]


@pytest.mark.parametrize(
    ("extra", "message"), OPTION_CASES, ids=[" ".join(e) for e, _ in OPTION_CASES]
)
def test_bad_option_is_refused_before_the_model_loads(extra, message, tmp_path, capsys, no_model):
    out = tmp_path / "out"
    line = _refused(capsys, _diagnose(out, *extra), out)
    assert re.search(message, line), line


def _recall(out: Path | str, *extra: str) -> list[str]:
    return ["recall", "--model", "demo", "--data", "demo", "--n", "30", "--out", str(out), *extra]


RECALL_CASES = [
    (
        ["--families", "facts,nope"],
        r"UnknownFamilyError: unknown family 'nope'; the data holds: facts, arithmetic, words$",
    ),
    (["--families", "facts,facts"], r"RecallError: families \['facts', 'facts'\] name a family"),
    (["--cv", "1"], r"UsageError: --cv must be >= 2 folds, got 1$"),
    (["--inner-cv", "0"], r"UsageError: --inner-cv must be >= 2 folds, got 0$"),
    (["--cv", "20"], r"family 'facts' has 4 items, fewer than --cv 20 folds; give more samples"),
    (["--trivial", "full"], r"RecallError: trivial condition 'full' is not a trivial image"),
    (["--trivial", "null:black,swap:next"], r"trivial condition 'swap:next' is not a trivial"),
    (["--trivial", "null:nope"], r"ConditionError: .*null"),
    (["--trivial", ","], r"RecallError: trivial must be a non-empty list of conditions"),
    (["--max-new-tokens", "0"], r"UsageError: --max-new-tokens must be >= 1, got 0$"),
    (["--layer", "13"], r"UsageError: --layer 13 is outside the model's layers 0\.\.12$"),
    (["--shard", "0/2"], r"UsageError: interp recall runs in one process; drop --shard$"),
    (["--data", "demo:color"], r"RecallError: sample '.*' has no 'setting' label; recall items"),
    (["--n", "0"], r"UsageError: --n must be >= 1, got 0$"),
]


@pytest.mark.parametrize(
    ("extra", "message"), RECALL_CASES, ids=[" ".join(e) for e, _ in RECALL_CASES]
)
def test_bad_recall_option_is_refused_before_the_model_loads(
    extra, message, tmp_path, capsys, no_model
):
    out = tmp_path / "out"
    line = _refused(capsys, _recall(out, *extra), out)
    assert re.search(message, line), line


def test_recall_argparse_errors_are_one_line(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(_recall("o", "--groups", "nope"))
    assert exit_.value.code == 2
    line = one_error_line(capsys.readouterr().err)
    assert line.startswith("error: interp recall: argument --groups: invalid choice: 'nope'")


# -- data ---------------------------------------------------------------------------------------


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_bad_data_is_refused_before_the_model_loads(tmp_path, capsys, no_model):
    Image.new("RGB", (8, 8)).save(tmp_path / "ok.png")
    (tmp_path / "bad.png").write_bytes(b"not an image")
    row = {"image": "ok.png", "question": "What colour?", "answer": "red"}
    cases = {
        "missing.jsonl": r"DataFormatError: --data '.*missing\.jsonl': no such file or folder; "
        "give a JSONL file, a parquet file",
        ".": r"DataSourceError: '.*' is a folder, but neither a Hugging Face datasets folder",
        "malformed.jsonl": r"DataFormatError: .*malformed\.jsonl:2: not valid JSON",
        "no_question.jsonl": r"DataFormatError: .*no_question\.jsonl:1: .*at least a 'question' key",
        "empty.jsonl": r"EmptyInputError: .*empty\.jsonl holds no samples",
        "missing_image.jsonl": r"MissingImageError: Sample '1': image file not found: '.*nope\.png'",
        "bad_image.jsonl": r"ImageError: Sample '1': cannot read image '.*bad\.png'",
        "duplicate.jsonl": r"DuplicateSampleError: samples 0 and 1 share the id 'a'",
    }
    (tmp_path / "malformed.jsonl").write_text(json.dumps({**row, "id": "1"}) + '\n{"image": \n')
    _jsonl(tmp_path / "no_question.jsonl", [{"image": "ok.png", "id": "1"}])
    (tmp_path / "empty.jsonl").write_text("")
    _jsonl(tmp_path / "missing_image.jsonl", [{**row, "id": "1", "image": "nope.png"}])
    _jsonl(tmp_path / "bad_image.jsonl", [{**row, "id": "1", "image": "bad.png"}])
    _jsonl(tmp_path / "duplicate.jsonl", [{**row, "id": "a"}, {**row, "id": "a"}])
    for name, message in cases.items():
        out = tmp_path / f"out-{name}"
        data = str(tmp_path / name)
        argv = ["diagnose", "--model", "demo", "--data", data, "--out", str(out)]
        line = _refused(capsys, argv, out)
        assert re.search(message, line), (name, line)


# -- output folder --------------------------------------------------------------------------------


def test_unwritable_out_is_refused_before_the_model_loads(tmp_path, capsys, no_model):
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    line = _refused(capsys, _diagnose(a_file))
    assert line == f"error: UsageError: --out {str(a_file)!r} is a file; give a folder"
    under = a_file / "sub" / "out"
    line = _refused(capsys, _diagnose(under))
    assert line == (
        f"error: UsageError: --out {str(under)!r} lies under the file {a_file}; give a folder"
    )
    line = _refused(capsys, _diagnose(""))
    assert line == "error: UsageError: --out is empty; give an output folder"


def test_read_only_out_is_refused(tmp_path, capsys, no_model):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):
            pytest.skip("permissions are not enforced for this user (root)")
        line = _refused(capsys, _diagnose(locked))
        assert re.search(r"--out '.*locked' is not a writable folder \(no write permission", line)
        line = _refused(capsys, _diagnose(locked / "sub"))
        assert "is not a writable folder" in line
    finally:
        locked.chmod(0o700)


# -- model ----------------------------------------------------------------------------------------


def test_missing_model_folder_says_so(tmp_path, capsys, no_model):
    out = tmp_path / "out"
    argv = ["diagnose", "--model", "/nonexistent/folder", "--data", "demo", "--out", str(out)]
    line = _refused(capsys, argv, out)
    assert line == (
        "error: ModelNotFoundError: model folder not found: '/nonexistent/folder'. Give an "
        "existing folder holding config.json (and the weights), a hub id such as "
        "'llava-hf/llava-1.5-7b-hf', or 'demo'."
    )


def test_hub_id_without_network_is_a_clear_error(tmp_path):
    run = _interp(
        "diagnose", "--model", "someorg/somemodel", "--data", "demo", "--out", "o", cwd=tmp_path
    )
    assert run.returncode == 2
    line = one_error_line(run.stderr)
    assert line.startswith(
        "error: ModelNotFoundError: cannot load 'someorg/somemodel': it is not a local folder, "
        "and the Hugging Face hub did not provide it"
    ), line
    assert line.endswith("Without network access, give a local model folder or 'demo'.")
    assert not (tmp_path / "o").exists()


def test_bad_model_arguments_are_refused_before_loading(tmp_path, capsys, no_model):
    from transformers import LlamaConfig

    a_file = tmp_path / "weights.bin"
    a_file.write_bytes(b"")
    no_config = tmp_path / "no_config"
    no_config.mkdir()
    llama = tmp_path / "llama"
    LlamaConfig(
        hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2
    ).save_pretrained(llama)
    cases = {
        "": r"^error: UsageError: --model is empty; give 'demo', a local model folder or a hub id$",
        str(a_file): r"ModelNotFoundError: --model '.*weights\.bin' is a file; give the model's",
        str(no_config): r"ModelNotFoundError: '.*no_config' is a folder without config\.json",
        "bad id/x": r"model folder not found: 'bad id/x', and it is not a valid hub id either",
        "~no-such-user-xyz": r"ModelNotFoundError: model folder not found: '~no-such-user-xyz'",
        str(llama): r"UnsupportedArchitectureError: ",
    }
    for model, message in cases.items():
        out = tmp_path / "out"
        argv = ["diagnose", "--model", model, "--data", "demo", "--n", "8", "--out", str(out)]
        line = _refused(capsys, argv, out)
        assert re.search(message, line), (model, line)


# -- argparse, --version, progress bars ------------------------------------------------------------


def test_version(tmp_path):
    run = _interp("--version", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout == f"vlm-interp {interp.__version__}\n"


def test_unknown_option_is_one_line(tmp_path):
    run = _interp(
        "diagnose", "--model", "demo", "--data", "demo", "--out", "o", "--bogus", cwd=tmp_path
    )
    assert run.returncode == 2
    line = one_error_line(run.stderr)
    assert line == "error: interp: unrecognized arguments: --bogus (see interp --help)"
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["coe", "--data", "demo", "--out", "o"],
            "error: interp coe: the following arguments are required: --model "
            "(see interp coe --help)",
        ),
        (
            ["diagnose", "--model", "demo", "--data", "demo", "--out", "o", "--n", "many"],
            "error: interp coe: argument --n: invalid int value: 'many' (see interp coe --help)",
        ),
        (
            ["coe", "--model", "demo", "--data", "demo", "--out", "o", "--metric", "x"],
            "error: interp coe: argument --metric: invalid choice: 'x' (choose from cosine, "
            "l2, kl, js) (see interp coe --help)",
        ),
        ([], "error: interp: the following arguments are required: command (see interp --help)"),
    ],
)
def test_argparse_errors_are_one_line(argv, expected, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    line = one_error_line(capsys.readouterr().err)
    assert line.replace("'cosine', 'l2', 'kl', 'js'", "cosine, l2, kl, js") == expected


def test_no_progress_silences_every_bar(tmp_path):
    run = _interp(
        "diagnose", "--model", "demo", "--data", "demo", "--n", "32", "--out", "o", "--no-progress",
        cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    for mark in PROGRESS_MARKS:
        assert mark not in run.stderr, (mark, run.stderr)
    assert (tmp_path / "o" / "summary.txt").exists()


# -- stores ---------------------------------------------------------------------------------------


def test_store_of_another_run_suggests_overwrite(tmp_path, capsys):
    out = tmp_path / "out"
    base = ["diagnose", "--model", "demo", "--data", "demo", "--n", "32", "--out", str(out)]
    assert main([*base, "--no-progress"]) == 0
    other = [*base, "--no-progress", "--conditions", "full,null:black"]
    # the outputs of the first run are there: refused up front, before the model loads
    line = _refused(capsys, other)
    assert line == (
        f"error: UsageError: --out {str(out)!r} holds the outputs of `interp coe` with other "
        "options (--conditions 'full,blind' → 'full,null:black'); this run's would mix with "
        "them. Give --overwrite to replace them (and start the store over), or a new --out folder."
    )
    # only the store is left (as after a run killed before it wrote its outputs): the store
    # itself refuses
    for path in out.iterdir():
        if path.name != "store":
            path.unlink()
    line = _refused(capsys, other)
    assert line == (
        f"error: StoreError: the store at {str(out / 'store')!r} holds results of a different run "
        "(differs in: conditions). Use another output folder, or overwrite it (overwrite=True; "
        "CLI: --overwrite) to start over."
    )
    assert main([*other, "--overwrite"]) == 0
    assert (
        "null:black"
        in json.loads((out / "store" / "manifest.json").read_text())["config"]["conditions"][1]
    )


# -- no VIP -----------------------------------------------------------------------------------------


def _synthetic(t: list[float], n: int = 20) -> tuple[np.ndarray, np.ndarray]:
    """Distances ``[2n, L+1]`` whose two-sample statistic at layer l is exactly ``t[l]``: both
    groups share one standardised noise pattern, and D_VT is shifted by ``t[l]·sqrt(2/n)``."""
    z = np.linspace(-1.0, 1.0, n)
    z = (z - z.mean()) / z.std(ddof=1)
    shift = np.asarray(t) * np.sqrt(2.0 / n)
    d_t = np.repeat((1.0 + z)[:, None], len(t), axis=1)
    d_vt = d_t + shift[None, :]
    return np.vstack([d_vt, d_t]), np.r_[np.ones(n, bool), np.zeros(n, bool)]


def _fit(distances: np.ndarray, in_vt: np.ndarray, alpha: float | None) -> VIPDetector:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NoVIPWarning)
        return VIPDetector(beta=2.0, alpha=alpha, rule="eq9").fit(distances, in_vt)


def test_no_vip_error_names_eq9_as_the_cause():
    """t is flat (3.0 at every layer): no layer doubles its history's mean, whatever alpha."""
    from interp.studies.coe.diagnosis import _no_vip_error

    distances, in_vt = _synthetic([0.0] + [3.0] * 12)
    for alpha in (0.05, None):
        detector = _fit(distances, in_vt, alpha)
        np.testing.assert_allclose(detector.statistic_[1:], 3.0)
        assert detector.layer_ is None
        err = _no_vip_error(detector, 2.0, alpha)
        assert isinstance(err, interp.NoVIPError) and err.cause == "eq9"
        assert str(err).startswith("the automatic rule (Eq. 9) found no VIP: no layer's two-sample")
        assert "--vip" in str(err) and "--fallback-vip" in str(err)


def test_no_vip_error_names_the_significance_floor_as_the_cause():
    """Eq. 9 holds at layer 5 (t 1.0 >= 2 × 0.1), but t stays under the floor z ≈ 2.58."""
    from interp.studies.coe.diagnosis import _no_vip_error

    distances, in_vt = _synthetic([0.0] + [0.1] * 4 + [1.0] * 8)
    assert _fit(distances, in_vt, None).layer_ == 5  # Eq. 9 alone finds it
    detector = _fit(distances, in_vt, 0.05)
    assert detector.layer_ is None
    err = _no_vip_error(detector, 2.0, 0.05)
    assert isinstance(err, interp.NoVIPError) and err.cause == "alpha"
    assert str(err).startswith(
        "Eq. 9 is met at layer 5 (t = 1.00), but no layer meeting it passes the significance "
        "floor alpha=0.05 (t >= 2.58"
    ), str(err)
    assert "--alpha 0" in str(err)


def test_cli_without_vip_prints_the_cause_and_still_writes_the_curves(tmp_path, capsys):
    """Each sample twice, once per side of the ``twin`` split: the groups are identical, the gap and
    t are 0 at every layer. The default rule (changepoint) finds no rise; Eq. 9 holds (0 >= 0) and
    the floor does not: NoVIPError(cause="alpha")."""
    plain = write_jsonl(demo_world("test", n=6), tmp_path / "plain.jsonl")
    rows = [json.loads(line) for line in plain.read_text().splitlines()]
    data = _jsonl(
        tmp_path / "twins.jsonl",
        [{**r, "id": f"{r['id']}-{int(t)}", "twin": t} for r in rows for t in (True, False)],
    )
    out = tmp_path / "out"
    argv = ["diagnose", "--model", "demo", "--data", str(data), "--out", str(out), "--no-progress"]
    default = [str(tmp_path / "default") if a == str(out) else a for a in argv]
    line = _refused(capsys, [*default, "--split", "twin"])  # the default rule: changepoint
    assert line.startswith(
        "error: NoVIPError: the automatic rule 'changepoint' found no VIP: the best two-segment "
        "fit splits before layer 2, but the gap does not rise there"
    ), line
    line = _refused(capsys, [*argv, "--split", "twin", "--vip-rule", "eq9"])
    assert line.startswith("error: NoVIPError: Eq. 9 is met at layer 2 (t = 0.00), but no layer")
    assert "significance floor alpha=0.05" in line
    assert (out / "fig2_distance_curves.png").stat().st_size > 0
    assert (out / "layers.csv").read_text().startswith("layer,")
    assert not (out / "summary.txt").exists()
    # --alpha 0 is Eq. 9 alone: it now finds layer 2, from the stored run
    assert main([*argv, "--split", "twin", "--alpha", "0", "--vip-rule", "eq9"]) == 0
    summary = (out / "summary.txt").read_text()
    assert "VIP: layer 2 (automatic)" in summary and "\nVIP rule: eq9 — Eq. 9 plus" in summary
    argv[argv.index(str(out))] = str(tmp_path / "jump")  # rule jump: the gap never rises
    line = _refused(capsys, [*argv, "--split", "twin", "--alpha", "0", "--vip-rule", "jump"])
    assert line.startswith("error: NoVIPError: the automatic rule 'jump' found no VIP: the gap")


# -- interp drives --------------------------------------------------------------------------------


def _drives(out: Path | str, *extra: str) -> list[str]:
    return ["drives", "--model", "demo", "--data", "demo", "--n", "8", "--out", str(out), *extra]


DRIVES_CASES = [
    (["--k", "0"], r"UsageError: --k must be >= 1 \(the support size K\), got 0$"),
    (["--k", "9"], r"SupportError: --k 9 is larger than the 8 samples .*lower --k or raise --n$"),
    (["--m", "-1"], r"UsageError: --m must be >= 0 \(held-out contexts; 0 skips the recovery\)"),
    (
        ["--k", "4", "--m", "5"],
        r"SupportError: --m 5 held-out contexts asked, but only 4 samples lie outside the support "
        r"of K=4; lower --m",
    ),
    (["--clusters", "0"], r"UsageError: --clusters must be >= 1, got 0$"),
    (["--k", "2", "--m", "2", "--clusters", "9"], r"--clusters 9 is more than the 8 samples$"),
    (["--max-new-tokens", "0"], r"UsageError: --max-new-tokens must be >= 1, got 0$"),
    (
        ["--k", "2", "--m", "2", "--labels", "nope"],
        r"UsageError: --labels 'nope': no sample has this label; labels in",
    ),
    (["--shard", "0/2"], r"UsageError: interp drives runs in one process; drop --shard$"),
    (["--batch-size", "0"], r"--batch-size must be >= 1, got 0$"),
    (["--data", "demo:nope"], r"--data 'demo:nope': unknown demo question types \['nope'\]; "),
]


@pytest.mark.parametrize(
    ("extra", "message"), DRIVES_CASES, ids=[" ".join(e) for e, _ in DRIVES_CASES]
)
def test_drives_bad_option_is_refused_before_the_model_loads(
    extra, message, tmp_path, capsys, no_model
):
    out = tmp_path / "out"
    line = _refused(capsys, _drives(out, *extra), out)
    assert re.search(message, line), line


def test_drives_refuses_samples_without_an_image_before_the_model_loads(tmp_path, capsys, no_model):
    Image.new("RGB", (8, 8)).save(tmp_path / "ok.png")
    rows = [{"image": "ok.png", "question": "what is it?", "id": str(i)} for i in range(3)]
    rows.append({"image": None, "question": "what is two plus two?", "id": "text"})
    data = _jsonl(tmp_path / "data.jsonl", rows)
    out = tmp_path / "out"
    argv = ["drives", "--model", "demo", "--data", str(data), "--k", "2", "--out", str(out)]
    line = _refused(capsys, argv, out)
    assert re.search(r"ImageError: sample 'text' has no image: causal drives intervene", line)


def test_drives_argparse_errors_are_one_line(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(_drives("o", "--null-image", "grey"))
    assert exit_.value.code == 2
    line = one_error_line(capsys.readouterr().err)
    assert line.startswith("error: interp drives: argument --null-image: invalid choice: 'grey'")


@pytest.mark.parametrize(
    "command", ["decoding", "conflict", "drives", "recall", "ablation", "audit"]
)
def test_single_process_commands_refuse_a_shard(command, tmp_path, capsys, no_model):
    """The refusal shared through ``check_common_arguments(one_process=...)``: one line naming the
    command, before the model loads, no output folder left."""
    out = tmp_path / "out"
    data = "pope" if command == "decoding" else "demo"
    argv = [command, "--model", "demo", "--data", data, "--out", str(out), "--shard", "0/2"]
    line = _refused(capsys, argv, out)
    assert line == f"error: UsageError: interp {command} runs in one process; drop --shard"


# -- help, threads, offline -------------------------------------------------------------------------


def test_top_level_help_imports_no_study_and_lists_every_command():
    """`interp --help` registers the commands from the entry points' source alone: no study
    module (and so no torch) is imported, and each command shows its one-line help."""
    code = (
        "import sys\n"
        "from interp.cli import build_parser\n"
        "text = build_parser(['--help']).format_help()\n"
        "print(text)\n"
        "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('interp.studies.')))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], env=OFFLINE_ENV, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    *help_lines, loaded = run.stdout.strip().splitlines()
    # a study package's lazy __init__ may be imported (to find its cli module; the audit is a
    # package too), nothing more
    modules = eval(loaded)
    assert "torch" not in modules, modules
    assert not [m for m in modules if m.count(".") >= 3], modules
    text = "\n".join(help_lines)
    for command in (
        "coe",
        "audit",
        "ablation",
        "conflict",
        "decoding",
        "drives",
        "recall",
        "doctor",
    ):
        assert re.search(rf"^    {command} +\S", text, flags=re.M), (command, text)
    for command, alias in (("coe", "diagnose"), ("ablation", "ablate"), ("decoding", "decode")):
        assert re.search(rf"^    {command} \({alias}\) +\S", text, flags=re.M), (alias, text)


def test_command_help_is_a_short_plain_description_then_the_options(tmp_path):
    run = _interp("audit", "--help", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    head, _, options = run.stdout.partition("\noptions:\n")
    description = head.split("\n\n", 1)[1]
    assert "one report" in description and len(description.splitlines()) <= 4, description
    assert "``" not in run.stdout and ":func:" not in run.stdout and ":mod:" not in run.stdout
    assert "--n N" in options and "per question kind" in options


def test_thread_count_follows_option_then_environment_then_policy(monkeypatch):
    from interp.threads import ThreadsError, default_threads, thread_count

    monkeypatch.delenv("INTERP_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert thread_count(None) == (max(1, len(os.sched_getaffinity(0)) // 2), "default")
    assert default_threads() >= 1
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert thread_count(None) == (None, "$OMP_NUM_THREADS")  # torch's own setting stands
    monkeypatch.setenv("INTERP_THREADS", "2")
    assert thread_count(None) == (2, "$INTERP_THREADS")
    assert thread_count(5) == (5, "--threads")
    with pytest.raises(ThreadsError, match="--threads must be >= 1"):
        thread_count(0)
    monkeypatch.setenv("INTERP_THREADS", "many")
    with pytest.raises(ThreadsError, match=r"\$INTERP_THREADS must be an integer >= 1"):
        thread_count(None)


def test_a_hub_id_without_the_hub_fails_at_once(tmp_path):
    """With the hub unreachable (an endpoint that refuses connections) and no HF_HUB_OFFLINE,
    the hub id is refused with the same one line, without the hub client's retries."""
    env = {
        k: v for k, v in OFFLINE_ENV.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    }
    env["HF_ENDPOINT"] = "http://127.0.0.1:9"
    run = subprocess.run(
        [*INTERP, "diagnose", "--model", "someorg/somemodel", "--data", "demo", "--out", "o"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 2
    line = one_error_line(run.stderr)  # no "Retrying in 1s [Retry 1/5]" lines before it
    assert line.startswith("error: ModelNotFoundError: cannot load 'someorg/somemodel'")
