"""CPU threads under sharing: ``interp coe`` alone, two at once, and next to busy processes.

Each run is the command a user types (``interp coe --model demo --data demo --n N``, a fresh
process, a fresh store), timed wall to wall. For each thread setting:

- ``alone``: one run on the machine (as idle as it is);
- ``two at once``: two runs started together (each into its own folder), mean of their times;
- ``next to busy``: one run beside ``--busy`` processes that spin on the CPU.

Settings: ``cores`` (every usable CPU: what torch picks by itself, the earlier behaviour),
``1``, and ``policy`` (no option: the command's default, half the usable CPUs, see
``interp.threads.default_threads``). Prints the times and the ratios to ``alone`` (never asserts).

``--api``: the Python API against the command on the same job, each a fresh process timed wall to
wall (import, model load, data, the chain of embedding over ``--n`` demo samples, batch 16): the
command (``interp coe``, which also finds the VIP and writes its files), a script calling
``interp.chain_of_embedding`` as the quick start does (the thread policy applies at
``interp.load``), and the same script keeping torch's own thread count (what the Python API did
before the policy applied to it). Run it with ``nice``: the machine is shared.

    python bench/threads.py [--n 256] [--busy 2] [--settings cores,1,policy]
    python bench/threads.py --api [--n 64] [--repeat 3]
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


SCRIPT = """
import sys, torch
torch_default = torch.get_num_threads()
import interp
from interp.datasets import demo_world
from interp.studies.coe import chain_of_embedding
if sys.argv[2] == "torch":
    interp.set_threads(torch_default)  # keep torch's own count, as before the policy
vlm = interp.load("demo")
samples = demo_world("test", n=int(sys.argv[1]), qtypes=["color"])
chain_of_embedding(vlm, samples, batch_size=16, progress_bar=False)
print(torch.get_num_threads())
"""


def api(n: int, repeat: int) -> None:
    """The Python API and the command on the same job, fresh processes, medians of ``repeat``."""
    import statistics

    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "job.py"
        script.write_text(SCRIPT)
        jobs = {
            "interp coe (command)": command(Path(tmp) / "out", n, "policy")
            + ["--batch-size", "16"],
            "python, policy (now)": [sys.executable, str(script), str(n), "policy"],
            "python, torch's own (before)": [sys.executable, str(script), str(n), "torch"],
        }
        times: dict[str, list[float]] = {name: [] for name in jobs}
        threads: dict[str, str] = {}
        for _ in range(repeat):  # interleaved, so that a change of load hits every job alike
            for name, argv in jobs.items():
                start = time.perf_counter()
                proc = subprocess.run(argv, env=environment(), capture_output=True, text=True)
                if proc.returncode != 0:
                    raise SystemExit(f"{name} failed:\n{proc.stderr[-2000:]}")
                times[name].append(time.perf_counter() - start)
                threads[name] = proc.stdout.strip().splitlines()[-1] if "python" in name else ""
        for name, values in times.items():
            shown = f"{threads[name]} threads" if threads[name] else "policy"
            print(
                f"{name:30s} {statistics.median(values):6.1f} s  (runs {', '.join(f'{v:.1f}' for v in values)}; {shown})",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=256)
    parser.add_argument("--busy", type=int, default=2, help="spinning processes beside a run")
    parser.add_argument("--settings", default="cores,1,policy")
    parser.add_argument("--api", action="store_true", help="the Python API against the command")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if args.api:
        print(f"{len(os.sched_getaffinity(0))} usable CPUs; load {os.getloadavg()}")
        api(args.n, args.repeat)
        print(f"load after {os.getloadavg()}")
        return
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
