"""Prefix sharing (``RunOptions.share_prefix``, :mod:`interp.prefix`) against the full forwards,
side by side in one run, on the same inputs:

- **drives** (``causal_drives``: 2K + 2 teacher-forced contexts per sample, the support images
  each under K + 1 questions) on the demo model, and at real width: LLaVA-1.5's published
  configuration (d = 4096, 32 heads, MLP 11008, vocabulary 32064) cut to ``--layers`` decoder
  layers and a ``--vision-layers`` CLIP tower at ``--image-size`` px (336 px: the checkpoint's 576
  image tokens), built as ``bench/real_width.py`` builds it;
- **contexts**: ``interp.score_contexts`` of one answer under several text conditions of the same
  image (full, no question, an added instruction, the prefix removed), the same two models;
- **ablation**: ``no_image_ablation`` (greedy answers of demo items in their four wordings, with the
  image and under ``blind``, ``null:black``, ``null:noise``, ``swap:next``; ``--max-new-tokens``
  each) with prefix sharing in generation (:mod:`interp.prefix_generation`) against every prompt
  in full; its difference column counts the answers that differ;
- **flow**: ``information_flow`` (windows of ``--window`` layers, the study's default edges, the
  given answers) with layer resume (``resume_layers``, :mod:`interp.resume`) against every
  knocked-out forward in full. At real width its model has ``--flow-layers`` decoder layers (8;
  ``--real-flow-n`` samples): with window 1, resume runs (L + 3L(L+1)/2) / (L + 3L²) of an
  L-layer model's layer passes (0.79 at L = 2, 0.58 at 8, 0.52 at LLaVA-1.5's 32), so a 2-layer
  cut could not show what a real model saves.

On the demo model the image is 16 of about 30 prompt tokens: there is little to share, and a
generated answer's 12 steps cost what they cost either way. At real width the image's 576 tokens
are most of every forward.

Each row prints the median CPU time (``time.process_time``, this process: the machine is shared)
of the two paths over ``--repeats`` alternating pairs (``--real-repeats`` at real width) after a
warm-up of each, the median per-pair ratio (shared / full), how the two paths' results differ (the
largest difference of the log-probabilities or Δ; the number of answers that differ), and the
peak resident memory each path adds in a fresh child process. Ratios are printed, never asserted.

    python bench/prefix_sharing.py [--n 32] [--k 20] [--real-n 2] [--real-k 2] [--layers 2]
        [--ablation-n 96] [--real-ablation-n 8] [--max-new-tokens 12] [--real-max-new-tokens 4]
        [--window 1] [--flow-layers 8] [--real-flow-n 1] [--repeats 5] [--real-repeats 1]
"""

from __future__ import annotations

import argparse
import gc
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
from interp.datasets import WORDED_QTYPES, demo_world  # noqa: E402
from interp.studies.ablation import no_image_ablation  # noqa: E402
from interp.studies.drives import causal_drives, draw_support  # noqa: E402
from interp.studies.flow import information_flow  # noqa: E402

CONDITIONS = ["full", "no_question", "instruct:Answer in one word.", "full+no_prefix"]


def differ(a: object, b: object) -> str:
    """The largest difference of two numeric results, or how many of two answer lists differ."""
    if isinstance(a, list):
        return f"answers differing {sum(x != y for x, y in zip(a, b))} of {len(a)}"
    return f"max |diff| {float(np.nanmax(np.abs(np.asarray(a) - np.asarray(b)))):.1e}"


def cpu_paired(
    shared: Callable[[], object], full: Callable[[], object], repeats: int
) -> tuple[float, float, float, str]:
    """Median CPU seconds of both, the median of the per-pair ratios (alternating, after a
    warm-up of each) and how the warm-ups' results differ (:func:`differ`)."""
    diff = differ(shared(), full())
    a, b = paired_times(shared, full, repeats, clock=time.process_time)
    ratios = [x / y for x, y in zip(a, b)]
    return statistics.median(a), statistics.median(b), statistics.median(ratios), diff


def model_of(name: str, args: argparse.Namespace, layers: int | None = None) -> interp.VLM:
    """The demo model, or the real-width model with ``layers`` decoder layers (``--layers``)."""
    if name == "demo":
        return interp.load("demo")
    from real_width import build

    return build(layers or args.layers, args.vision_layers, args.image_size, torch.float32)


def workloads(
    name: str, args: argparse.Namespace, studies: list[str]
) -> dict[str, Callable[[bool], object]]:
    """The measurements on model ``name``, each a function of ``share_prefix``; the models
    ``studies`` need are built here (the real-width flow's with ``--flow-layers`` layers)."""
    deep = name != "demo" and args.flow_layers != args.layers
    vlm = model_of(name, args) if not deep or set(studies) - {"flow"} else None
    flow_vlm = model_of(name, args, args.flow_layers) if deep and "flow" in studies else vlm
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

    items = demo_world(
        "test",
        n=args.ablation_n if name == "demo" else args.real_ablation_n,
        qtypes=WORDED_QTYPES,
    )
    new = args.max_new_tokens if name == "demo" else args.real_max_new_tokens

    def ablation(share: bool) -> object:
        result = no_image_ablation(
            vlm,
            items,
            max_new_tokens=new,
            n_boot=10,
            batch_size=args.ablation_batch_size,
            progress_bar=False,
            share_prefix=share,
        )
        return list(result.answers["answer"])

    def flow(share: bool) -> object:
        result = information_flow(
            flow_vlm,
            samples if name == "demo" else samples[: args.real_flow_n],
            window=args.window,
            split=None,
            batch_size=args.batch_size,
            progress_bar=False,
            resume_layers=share,
        )
        return np.concatenate([d.ravel() for d in result.delta.values()])

    return {"drives": drives, "contexts": contexts, "ablation": ablation, "flow": flow}


def _memory_child(spec: str, args: argparse.Namespace) -> None:
    """Peak resident memory over one run above what the loaded model holds (polled every 5 ms:
    the process's own peak also holds the model's construction)."""
    name, study, share = spec.split(":")
    run = workloads(name, args, [study])[study]
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
    parser.add_argument("--ablation-n", type=int, default=96)
    parser.add_argument("--real-ablation-n", type=int, default=8)
    parser.add_argument("--ablation-batch-size", type=int, default=16)
    parser.add_argument("--max-new-tokens", type=int, default=12)
    parser.add_argument("--real-max-new-tokens", type=int, default=4)
    parser.add_argument("--window", type=int, default=1)
    parser.add_argument("--flow-layers", type=int, default=8, help="the real-width flow's model")
    parser.add_argument("--real-flow-n", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5, help="pairs on the demo model")
    parser.add_argument("--real-repeats", type=int, default=1, help="pairs at real width")
    parser.add_argument("--studies", nargs="*", default=["drives", "contexts", "ablation", "flow"])
    parser.add_argument("--models", nargs="*", default=["demo", "real"])
    parser.add_argument("--memory-child", default=None, help=argparse.SUPPRESS)
    args = parse(parser)
    if args.memory_child:
        _memory_child(args.memory_child, args)
        return
    print(
        f"prefix sharing vs full forwards, CPU time of this process, {args.threads} threads, "
        f"batch {args.batch_size}, median of {args.repeats} alternating pairs on the demo model "
        f"and {args.real_repeats} at real width, each after a warm-up of both"
    )
    for name in args.models:
        runs = workloads(name, args, args.studies)
        demo = name == "demo"
        n, k = (args.n, args.k) if demo else (args.real_n, args.real_k)
        sizes = {
            "drives": f"N={n} K={k}",
            "contexts": f"N={n} x {len(CONDITIONS)}",
            "ablation": f"N={args.ablation_n if demo else args.real_ablation_n} x 5, "
            f"{args.max_new_tokens if demo else args.real_max_new_tokens} new",
            "flow": f"N={n if demo else args.real_flow_n}, window {args.window}",
        }
        label = (
            "demo model"
            if name == "demo"
            else f"LLaVA-1.5 width, {args.layers} layers, {args.image_size} px"
        )
        timed = {}
        for study in args.studies:
            run = runs[study]
            timed[study] = cpu_paired(
                lambda run=run: run(True),
                lambda run=run: run(False),
                args.repeats if demo else args.real_repeats,
            )
        del runs, run  # the children measure memory without this process's models beside them
        gc.collect()
        for study, (shared, full, ratio, diff) in timed.items():
            mem = {}
            for share in (1, 0):
                out = run_child(
                    __file__,
                    "--memory-child",
                    f"{name}:{study}:{share}",
                    *_passthrough(args),
                )
                mem[share] = out["added_mib"]
            where = label
            if not demo and study == "flow":
                where = f"LLaVA-1.5 width, {args.flow_layers} layers, {args.image_size} px"
            print(
                f"  {where:38} {study:8} {sizes[study]}: shared {shared:6.2f} s   full "
                f"{full:6.2f} s   ratio {ratio:.2f}x   {diff}   peak memory "
                f"added {mem[1]:.0f} / {mem[0]:.0f} MiB"
            )


def _passthrough(args: argparse.Namespace) -> list[str]:
    out = ["--threads", str(args.threads), "--batch-size", str(args.batch_size)]
    out += ["--n", str(args.n), "--k", str(args.k), "--real-n", str(args.real_n)]
    out += ["--real-k", str(args.real_k), "--layers", str(args.layers)]
    out += ["--vision-layers", str(args.vision_layers), "--image-size", str(args.image_size)]
    out += ["--ablation-n", str(args.ablation_n), "--real-ablation-n", str(args.real_ablation_n)]
    out += ["--ablation-batch-size", str(args.ablation_batch_size), "--window", str(args.window)]
    out += ["--max-new-tokens", str(args.max_new_tokens), "--flow-layers", str(args.flow_layers)]
    out += ["--real-flow-n", str(args.real_flow_n)]
    out += ["--real-max-new-tokens", str(args.real_max_new_tokens)]
    return out


if __name__ == "__main__":
    main()
