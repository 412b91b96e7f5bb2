"""Shared helpers of the bench scripts: the command line, timing, peak memory, the workload and the
bare-HF references more than one script measures against."""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

import torch

from interp.encoding import batches


def bench_parser(
    doc: str | None,
    *,
    n: int,
    batch_size: int,
    max_new_tokens: int | None = None,
    model: bool = True,
    threads: int = 2,
    n_help: str | None = None,
) -> argparse.ArgumentParser:
    """The options the bench scripts share, with these defaults: ``--n``, ``--batch-size``,
    ``--max-new-tokens`` (where given), ``--model`` (where ``model``; default: the demo model) and
    ``--threads``; the script's docstring is its help. The script adds its own options."""
    parser = argparse.ArgumentParser(
        description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=n, help=n_help)
    parser.add_argument("--batch-size", type=int, default=batch_size)
    if max_new_tokens is not None:
        parser.add_argument("--max-new-tokens", type=int, default=max_new_tokens)
    if model:
        parser.add_argument(
            "--model", default="demo", help="model to load (default: the demo model)"
        )
    parser.add_argument("--threads", type=int, default=threads)
    return parser


def parse(parser: argparse.ArgumentParser) -> argparse.Namespace:
    """The command line's options; sets torch's thread count to ``--threads``."""
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    return args


def timed(fn: Callable[[], object], repeats: int = 3) -> float:
    """Median wall time of ``fn`` over ``repeats`` runs, after one warm-up run."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def paired_times(
    ours: Callable[[], object],
    bare: Callable[[], object],
    repeats: int = 3,
    *,
    clock: Callable[[], float] = time.perf_counter,
) -> tuple[list[float], list[float]]:
    """Times of ``ours`` and ``bare`` (by ``clock``: wall time, or ``time.process_time`` for this
    process's CPU time) in ``repeats`` alternating pairs, so that load from other processes
    drifting over the run falls on both sides of each pair alike. No warm-up: run each once
    first."""
    a, b = [], []
    for k in range(repeats):
        pair = {}
        for name, fn in (("ours", ours), ("bare", bare))[:: 1 if k % 2 == 0 else -1]:
            start = clock()
            fn()
            pair[name] = clock() - start
        a.append(pair["ours"])
        b.append(pair["bare"])
    return a, b


def paired(
    ours: Callable[[], object], bare: Callable[[], object], repeats: int = 3
) -> tuple[float, float, float]:
    """Median times of ``ours`` and ``bare`` and the median of their per-pair ratios, timed in
    alternating pairs after one warm-up each (:func:`paired_times`)."""
    ours()
    bare()
    a, b = paired_times(ours, bare, repeats)
    ratios = [x / y for x, y in zip(a, b)]
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


def hf_last_states(vlm, samples, batch_size: int) -> torch.Tensor:
    """Bare HF reference of ``interp.residual_stream``: ``model(**inputs,
    output_hidden_states=True)`` on the library encoder's batches and the last-token gather,
    ``[N, L+1, d]``."""
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


def hf_generate(vlm, enc, max_new_tokens: int, hooks=()) -> None:
    """Bare HF greedy ``generate`` on one encoded batch, with torch hooks registered for the call:
    ``hooks`` holds (module, kind, fn) with kind ``"forward"`` or ``"pre"``."""
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


def run_child(script: str, *args: str) -> dict:
    """Run ``script`` in a fresh Python process (so peak memory is its own); parse its last line as
    JSON."""
    out = subprocess.run(
        [sys.executable, script, *args], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_memory_child(script: str, spec: str, args: argparse.Namespace, *extra: str) -> dict:
    """:func:`run_child` of ``script --memory-child spec`` with ``extra`` options and this run's
    ``--batch-size``, ``--model`` and ``--threads``."""
    return run_child(
        script,
        "--memory-child",
        spec,
        *extra,
        "--batch-size",
        str(args.batch_size),
        "--model",
        args.model,
        "--threads",
        str(args.threads),
    )
