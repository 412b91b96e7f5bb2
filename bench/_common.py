"""Shared helpers of the bench scripts: timing, peak memory, the workload."""

from __future__ import annotations

import json
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable


def timed(fn: Callable[[], object], repeats: int = 3) -> float:
    """Median wall time of ``fn`` over ``repeats`` runs, after one warm-up run."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far (MiB; Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def current_rss_mib() -> float:
    """Resident memory of this process now (MiB), from /proc (Linux)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def workload(n: int, seed: int = 0, model: str = "demo"):
    """A model (default: the demo model) and ``n`` items of the demo world's test split."""
    import interp
    from interp.datasets import demo_world

    vlm = interp.load(model)
    return vlm, demo_world(split="test", n=n, seed=seed)


def run_child(script: str, *args: str) -> dict:
    """Run ``script`` in a fresh Python process (so peak memory is its own); parse its last line as
    JSON."""
    out = subprocess.run(
        [sys.executable, script, *args], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])
