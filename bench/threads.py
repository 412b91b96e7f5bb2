"""CPU threads under sharing: ``interp coe`` alone, two at once, and next to busy processes.

Each run is the command a user types (``interp coe --model demo --data demo --n N``, a fresh
process, a fresh store), timed wall to wall. For each thread setting:

- ``alone``: one run on the machine (as idle as it is);
- ``two at once``: two runs started together (each into its own folder), mean of their times;
- ``next to busy``: one run beside ``--busy`` processes that spin on the CPU.

Settings: ``cores`` (every usable CPU: what torch picks by itself, the earlier behaviour),
``1``, and ``policy`` (no option: the command's default, half the usable CPUs, see
``interp.threads.default_threads``). Prints the times and the ratios to ``alone`` (never asserts).

    python bench/threads.py [--n 256] [--busy 2] [--settings cores,1,policy]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPIN = "while True: pass"


def command(out: Path, n: int, threads: str) -> list[str]:
    argv = [sys.executable, "-m", "interp.cli", "coe", "--model", "demo", "--data", "demo"]
    argv += ["--n", str(n), "--out", str(out), "--no-progress", "--overwrite"]
    if threads != "policy":
        argv += ["--threads", threads]
    return argv


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "INTERP_THREADS")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    return env


def runs(outs: list[Path], n: int, threads: str) -> list[float]:
    """Start one run per folder at once; the wall time of each."""
    start = time.perf_counter()
    procs = [
        subprocess.Popen(
            command(out, n, threads),
            env=environment(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for out in outs
    ]
    times = []
    for proc in procs:
        _, err = proc.communicate()
        if proc.returncode != 0:
            raise SystemExit(f"a run failed:\n{err[-2000:]}")
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=256)
    parser.add_argument("--busy", type=int, default=2, help="spinning processes beside a run")
    parser.add_argument("--settings", default="cores,1,policy")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # so the spinners are stopped
    cores = len(os.sched_getaffinity(0))
    sys.path.insert(0, str(ROOT))
    from interp.threads import default_threads

    print(f"{cores} usable CPUs; policy = {default_threads()} threads; load {os.getloadavg()}")
    print(
        f"{'threads':>8} {'alone':>8} {'two at once':>12} {'ratio':>6} {'next to busy':>13} {'ratio':>6}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for setting in args.settings.split(","):
            threads = str(cores) if setting == "cores" else setting
            runs([folder / "warm"], args.n, threads)  # caches warm, store created
            alone = runs([folder / "a"], args.n, threads)[0]
            pair = runs([folder / "b1", folder / "b2"], args.n, threads)
            spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(args.busy)]
            try:
                busy = runs([folder / "c"], args.n, threads)[0]
            finally:
                for proc in spinners:
                    proc.kill()
                    proc.wait()
            two = sum(pair) / len(pair)
            label = f"{setting}={threads}" if setting in ("cores", "policy") else setting
            if setting == "policy":
                label = f"policy={default_threads()}"
            print(
                f"{label:>8} {alone:7.1f}s {two:11.1f}s {two / alone:5.2f}x "
                f"{busy:12.1f}s {busy / alone:5.2f}x",
                flush=True,
            )


if __name__ == "__main__":
    main()
