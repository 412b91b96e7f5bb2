"""Prefix sharing (``RunOptions.share_prefix``, :mod:`interp.prefix`) against the full forwards,
side by side in one run, on the same inputs:

- **drives** (``causal_drives``: 2K + 2 teacher-forced contexts per sample, the support images
  each under K + 1 questions) on the demo model, and at real width: LLaVA-1.5's published
  configuration (d = 4096, 32 heads, MLP 11008, vocabulary 32064) cut to ``--layers`` decoder
  layers and a ``--vision-layers`` CLIP tower at ``--image-size`` px (336 px: the checkpoint's 576
  image tokens), built as ``bench/real_width.py`` builds it;
- **contexts**: ``interp.score_contexts`` of one answer under several text conditions of the same
  image (full, no question, an added instruction, the prefix removed), the same two models.

Each row prints the median CPU time (``time.process_time``, this process: the machine is shared)
of the two paths over ``--repeats`` alternating pairs after a warm-up, the median per-pair ratio
(shared / full), the largest difference between the two paths' log-probabilities, and the peak
resident memory each path adds in a fresh child process. Ratios are printed, never asserted.

    python bench/prefix_sharing.py [--n 32] [--k 20] [--real-n 2] [--real-k 2] [--layers 2] [--repeats 1]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
from _common import (  # noqa: E402
    bench_parser,
    current_rss_mib,
    paired_times,
    parse,
    run_child,
)

import interp  # noqa: E402
from interp.datasets import demo_world  # noqa: E402
from interp.studies.drives import causal_drives, draw_support  # noqa: E402

CONDITIONS = ["full", "no_question", "instruct:Answer in one word.", "full+no_prefix"]


def cpu_paired(
    shared: Callable[[], object], full: Callable[[], object], repeats: int
) -> tuple[float, float, float, float]:
    """Median CPU seconds of both, the median of the per-pair ratios (alternating, after a
    warm-up of each) and the largest difference between the warm-ups' results."""
    diff = float(np.nanmax(np.abs(np.asarray(shared()) - np.asarray(full()))))
    a, b = paired_times(shared, full, repeats, clock=time.process_time)
    ratios = [x / y for x, y in zip(a, b)]
    return statistics.median(a), statistics.median(b), statistics.median(ratios), diff


def model_of(name: str, args: argparse.Namespace) -> interp.VLM:
    if name == "demo":
        return interp.load("demo")
    from real_width import build

    return build(args.layers, args.vision_layers, args.image_size, torch.float32)


def workloads(name: str, args: argparse.Namespace) -> dict[str, Callable[[bool], object]]:
    """The two measurements on model ``name``, each a function of ``share_prefix``."""
    vlm = model_of(name, args)
    n, k = (args.n, args.k) if name == "demo" else (args.real_n, args.real_k)
    samples = demo_world("test", n=n, qtypes=["describe"])
    targets = [s.answer for s in samples]
    support = draw_support(samples, k)

    def drives(share: bool) -> object:
        result = causal_drives(
            vlm,
            samples,
            support=support,
            targets=targets,
            batch_size=args.batch_size,
            progress_bar=False,
            share_prefix=share,
        )
        return np.concatenate([result.p0.ravel(), result.question_drive.ravel()])

    def contexts(share: bool) -> object:
        lps = interp.score_contexts(
            vlm,
            samples,
            targets,
            lambda i, s: [(s, c) for c in CONDITIONS],
            batch_size=args.batch_size,
            progress_bar=False,
            share_prefix=share,
        )
        return np.concatenate([lp.numpy().ravel() for lp in lps])

    return {"drives": drives, "contexts": contexts}


def _memory_child(spec: str, args: argparse.Namespace) -> None:
    """Peak resident memory over one run above what the loaded model holds (polled every 5 ms:
    the process's own peak also holds the model's construction)."""
    name, study, share = spec.split(":")
    run = workloads(name, args)[study]
    before, peak, done = current_rss_mib(), [0.0], threading.Event()

    def poll() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], current_rss_mib())
            time.sleep(0.005)

    watcher = threading.Thread(target=poll, daemon=True)
    watcher.start()
    run(share == "1")
    done.set()
    watcher.join()
    print(json.dumps({"added_mib": max(peak[0], current_rss_mib()) - before}))


def main() -> None:
    parser = bench_parser(__doc__, n=32, batch_size=32)
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--real-n", type=int, default=2)
    parser.add_argument("--real-k", type=int, default=2)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--vision-layers", type=int, default=1)
    parser.add_argument("--image-size", type=int, default=336)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--models", nargs="*", default=["demo", "real"])
    parser.add_argument("--memory-child", default=None, help=argparse.SUPPRESS)
    args = parse(parser)
    if args.memory_child:
        _memory_child(args.memory_child, args)
        return
    print(
        f"prefix sharing vs full forwards, CPU time of this process, {args.threads} threads, "
        f"batch {args.batch_size}, median of {args.repeats} alternating pairs"
    )
    for name in args.models:
        runs = workloads(name, args)
        n, k = (args.n, args.k) if name == "demo" else (args.real_n, args.real_k)
        label = (
            "demo model"
            if name == "demo"
            else f"LLaVA-1.5 width, {args.layers} layers, {args.image_size} px"
        )
        for study, run in runs.items():
            shared, full, ratio, diff = cpu_paired(
                lambda run=run: run(True), lambda run=run: run(False), args.repeats
            )
            mem = {}
            for share in (1, 0):
                out = run_child(
                    __file__,
                    "--memory-child",
                    f"{name}:{study}:{share}",
                    *_passthrough(args),
                )
                mem[share] = out["added_mib"]
            print(
                f"  {label:38} {study:8} N={n} K={k}: shared {shared:6.2f} s   full "
                f"{full:6.2f} s   ratio {ratio:.2f}x   max |diff| {diff:.1e}   peak memory "
                f"added {mem[1]:.0f} / {mem[0]:.0f} MiB"
            )


def _passthrough(args: argparse.Namespace) -> list[str]:
    out = ["--threads", str(args.threads), "--batch-size", str(args.batch_size)]
    out += ["--n", str(args.n), "--k", str(args.k), "--real-n", str(args.real_n)]
    out += ["--real-k", str(args.real_k), "--layers", str(args.layers)]
    out += ["--vision-layers", str(args.vision_layers), "--image-size", str(args.image_size)]
    return out


if __name__ == "__main__":
    main()
