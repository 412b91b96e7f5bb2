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


def paired(
    ours: Callable[[], object], bare: Callable[[], object], repeats: int = 3
) -> tuple[float, float, float]:
    """Median times of ``ours`` and ``bare`` and the median of their per-pair ratios, timed in
    alternating pairs after one warm-up each, so that load from other processes drifting over the
    run falls on both sides of each ratio alike."""
    ours()
    bare()
    a, b, ratios = [], [], []
    for k in range(repeats):
        pair = {}
        for name, fn in (("ours", ours), ("bare", bare))[:: 1 if k % 2 == 0 else -1]:
            start = time.perf_counter()
            fn()
            pair[name] = time.perf_counter() - start
        a.append(pair["ours"])
        b.append(pair["bare"])
        ratios.append(pair["ours"] / pair["bare"])
    return statistics.median(a), statistics.median(b), statistics.median(ratios)


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


def hf_generate(vlm, enc, max_new_tokens: int, hooks=()) -> None:
    """Bare HF greedy ``generate`` on one encoded batch, with torch hooks registered for the call:
    ``hooks`` holds (module, kind, fn) with kind ``"forward"`` or ``"pre"``."""
    import torch

    handles = [
        module.register_forward_hook(fn)
        if kind == "forward"
        else module.register_forward_pre_hook(fn)
        for module, kind, fn in hooks
    ]
    try:
        with torch.no_grad():
            vlm.hf.generate(
                **enc.inputs,
                max_new_tokens=max_new_tokens,
                do_sample=False,
                pad_token_id=vlm.tokenizer.pad_token_id,
            )
    finally:
        for handle in handles:
            handle.remove()


def hf_reads(vlm, samples, batch_size: int):
    """Bare HF residual reads: per batch of the library's encoder, a forward with
    ``output_hidden_states=True`` and every layer's last-token state, ``[N, layers + 1, d]``."""
    import torch

    from interp.encoding import batches

    out = []
    for _, enc in batches(vlm, samples, "full", batch_size):
        inputs = (
            enc.inputs
            if vlm.adapter.forward_inputs is None
            else vlm.adapter.forward_inputs(enc.inputs)
        )
        with torch.no_grad():
            hs = vlm.hf(**inputs, output_hidden_states=True).hidden_states
        rows = torch.arange(len(enc))
        out.append(torch.stack([h[rows, enc.last_index] for h in hs], 1))
    return torch.cat(out)


def run_child(script: str, *args: str) -> dict:
    """Run ``script`` in a fresh Python process (so peak memory is its own); parse its last line as
    JSON."""
    out = subprocess.run(
        [sys.executable, script, *args], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])
