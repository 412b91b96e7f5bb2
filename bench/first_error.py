"""How long a refused ``interp`` command takes to print its ``error:`` line.

Five bad inputs a new user types (a typo'd ``--data`` path, a JSONL naming a missing image, one
whose image name is too long for the file system, a JSONL pointing at a corrupt WAV, an
unknown condition); each is run as the command a user types (a fresh process) and timed from
start to the first ``error:`` line on stderr. Also reports whether anything was left in
``--out``. Prints a table (never asserts; the test-suite checks the 2 s bound on one case).

    python bench/first_error.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def fixtures(folder: Path) -> dict[str, list[str]]:
    """The five bad invocations (arguments after ``interp``), with their files in ``folder``."""
    from PIL import Image

    Image.new("RGB", (8, 8)).save(folder / "ok.png")
    (folder / "corrupt.wav").write_bytes(b"RIFF\x00\x00\x00\x00WAVEjunk")
    rows = {
        "missing_image.jsonl": {"question": "q", "image": "nope.png"},
        "long_name.jsonl": {"question": "q", "image": "a" * 300 + ".png"},
        "corrupt_wav.jsonl": {"question": "q", "answer": "red", "audio": "corrupt.wav"},
    }
    for name, row in rows.items():
        (folder / name).write_text(json.dumps(row) + "\n")
    # two rows: the flow study needs two samples
    row = rows["corrupt_wav.jsonl"]
    lines = [json.dumps(row | {"id": "a"}), json.dumps(row | {"id": "b", "audio": "ok.wav"})]
    (folder / "corrupt_wav.jsonl").write_text("\n".join(lines) + "\n")
    _wav(folder / "ok.wav")
    out = str(folder / "out")
    common = ["--out", out, "--no-progress"]
    return {
        "typo'd --data path": ["coe", "--model", "demo", "--data", str(folder / "dat.jsonl")],
        "missing image file": ["coe", "--model", "demo", "--data", str(folder / rows_name(0))],
        "image name > 255 chars": ["coe", "--model", "demo", "--data", str(folder / rows_name(1))],
        "corrupt WAV": ["flow", "--model", "demo-omni", "--data", str(folder / rows_name(2))],
        "unknown condition": [
            "ablation",
            "--model",
            "demo",
            "--data",
            "demo",
            "--conditions",
            "ful",
        ],
    } | {"": common}


def _wav(path: Path) -> None:
    import numpy as np
    import soundfile

    soundfile.write(str(path), np.zeros(1600, dtype=np.float32), 16000)


def rows_name(i: int) -> str:
    return ["missing_image.jsonl", "long_name.jsonl", "corrupt_wav.jsonl"][i]


def first_error(argv: list[str]) -> tuple[float, str, int]:
    """Seconds to the first ``error:`` line, that line, and the exit status."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "interp.cli", *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stderr is not None
    seconds, line = float("nan"), ""
    for text in proc.stderr:
        if text.startswith("error:"):
            seconds, line = time.perf_counter() - start, text.strip()
            break
    proc.communicate()
    return seconds, line, proc.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"load {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        cases = fixtures(folder)
        common = cases.pop("")
        for name, argv in cases.items():
            times, line, status = [], "", 0
            for _ in range(args.repeat):
                seconds, line, status = first_error([*argv, *common])
                times.append(seconds)
            left = (
                sorted(p.name for p in (folder / "out").rglob("*"))
                if (folder / "out").exists()
                else []
            )
            print(
                f"{name:24s} median {statistics.median(times):5.2f} s  exit {status}  "
                f"left {left or 'nothing'}\n    {line[:150]}"
            )
            if (folder / "out").exists():
                import shutil

                shutil.rmtree(folder / "out")


if __name__ == "__main__":
    main()
