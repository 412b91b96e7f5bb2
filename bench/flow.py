"""Cost of the information-flow sweep (``interp.studies.flow``) vs bare HF forwards with a 4-D mask.

The sweep scores the answer teacher-forced once without an edit and once per (edge, window) with
an attention knockout (a cut of the attention mask in the window's layers, ``interp.plain.cut``):
1 + E·W batched passes. The bare-HF reference does the same number of teacher-forced forwards per batch
of the same encoding (prompt + answer, encoded once), each with a hand-built 4-D additive
attention mask (causal, padding, and the edge's targets blocked from its sources) passed as
``attention_mask`` — the cheapest way to run the same sweep without the library (a 4-D mask
blocks in every layer; the cost is the same as blocking in a window). Prints both times and the
ratio, on the demo model (eager attention, and SDPA with ``--attn eager sdpa``) and on tiny random
models (eager attention). Families that derive
positions from the 2-D mask inside the forward (Qwen-VL's 3-D rope) cannot take a 4-D mask: the
reference is reported as not applicable for them. These rows time the library's full-forward path
(``resume_layers=False``), as their stored figures were measured.

With ``--resume``, each model instead gets one row of layer resume (``RunOptions.resume_layers``,
:mod:`interp.resume`: one clean forward per batch keeps the residual stream at every window's first
layer, and each knockout forward skips the layers below its window) against the full forwards,
side by side in one run: median CPU time (``time.process_time``, this process: the machine is
shared) of each over ``--repeats`` alternating pairs after a warm-up, the median per-pair ratio
(resume / full), and the largest difference between the two paths' Δ. Ratios are printed, never
asserted.

    python bench/flow.py [--n 64] [--window 1] [--attn eager sdpa] [--arch llava idefics3]
    python bench/flow.py --resume [--repeats 3] [--window 1 2 4]
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
from _common import bench_parser, paired, paired_times, parse  # noqa: E402

import interp  # noqa: E402
import interp.testing  # noqa: E402
from interp.datasets import demo_world  # noqa: E402
from interp.encoding import batches, question_mask, target_ids  # noqa: E402
from interp.studies.flow import information_flow, windows  # noqa: E402
from interp.targets import append_targets  # noqa: E402

EDGES = ("image>question", "image>last", "question>last")


def hf_sweep(vlm: interp.VLM, samples, batch_size: int, n_windows: int) -> None:
    """Bare HF: per batch, one plain teacher-forced forward and one per (edge, window), each with
    its 4-D additive mask."""
    ids = target_ids(vlm, [s.answer for s in samples])
    for idx, enc in batches(vlm, samples, "full", batch_size):
        ext, positions, valid = append_targets(vlm, enc, [ids[i] for i in idx])
        b, seq = ext.input_ids.shape
        rows = torch.arange(b)
        keys = ext.attention_mask.bool()[:, None, :].expand(b, seq, seq)
        allowed = keys & torch.ones(seq, seq, dtype=torch.bool).tril()
        image = ext.image_mask
        question = question_mask(vlm, ext)
        last = torch.zeros_like(image)
        last[rows, ext.last_index] = True
        last[rows[:, None].expand_as(positions)[valid], positions[valid]] = True
        pairs = {"image>question": (image, question), "image>last": (image, last)}
        pairs["question>last"] = (question, last)
        inputs = dict(ext.inputs)
        masks = [None] + [pairs[e] for e in EDGES for _ in range(n_windows)]
        for edge in masks:
            keep = allowed
            if edge is not None:
                source, target = edge
                keep = allowed & ~(target[:, :, None] & source[:, None, :])
            mask = torch.zeros(b, 1, seq, seq).masked_fill(
                ~keep[:, None], torch.finfo(torch.float32).min
            )
            with torch.no_grad():
                vlm.hf(**{**inputs, "attention_mask": mask})


def sweep(vlm: interp.VLM, samples, batch_size: int, window: int, resume: bool):
    """The study's sweep, with or without layer resume."""
    return information_flow(
        vlm,
        samples,
        window=window,
        split=None,
        batch_size=batch_size,
        progress_bar=False,
        resume_layers=resume,
    )


def measure(vlm: interp.VLM, samples, batch_size: int, window: int) -> tuple[float, float, float]:
    n_windows = len(windows(vlm.n_layers, window))
    ours = lambda: sweep(vlm, samples, batch_size, window, False)  # noqa: E731
    bare = lambda: hf_sweep(vlm, samples, batch_size, n_windows)  # noqa: E731
    return paired(ours, bare, repeats=3)


def resume_row(vlm: interp.VLM, samples, batch_size: int, window: int, repeats: int) -> str:
    """Layer resume against the full forwards: median CPU seconds of each over ``repeats``
    alternating pairs (after a warm-up of each), the median per-pair ratio, and the largest
    difference of Δ between the two warm-ups."""

    def run(resume: bool):
        return sweep(vlm, samples, batch_size, window, resume)

    a, b = run(True), run(False)
    diff = max(float(np.abs(a.delta[k] - b.delta[k]).max()) for k in a.delta)
    resumed, whole = paired_times(
        lambda: run(True), lambda: run(False), repeats, clock=time.process_time
    )
    ratios = [x / y for x, y in zip(resumed, whole)]
    full, ours = statistics.median(whole), statistics.median(resumed)
    return (
        f"full {full:.2f} s   resume {ours:.2f} s   ratio {statistics.median(ratios):.2f}x   "
        f"(pairs {min(ratios):.2f}-{max(ratios):.2f}x)   max |ΔΔ| {diff:.2g}"
    )


def main() -> None:
    parser = bench_parser(__doc__, n=64, batch_size=16)
    parser.add_argument("--window", type=int, nargs="*", default=[1])
    parser.add_argument("--arch", nargs="*", default=["llava"])
    parser.add_argument("--attn", nargs="*", default=["eager", "sdpa"])
    parser.add_argument("--resume", action="store_true", help="layer resume vs the full forwards")
    parser.add_argument("--repeats", type=int, default=3)
    args = parse(parser)
    samples = demo_world(split="test", n=args.n, seed=0)
    models = [
        (f"{args.model} {impl}", interp.load(args.model, attn_implementation=impl))
        for impl in args.attn
    ]
    models += [(f"tiny {a}", interp.testing.tiny_vlm(a)) for a in args.arch]
    for name, vlm in models:
        for window in args.window:
            if window > vlm.n_layers:
                print(f"{name}: no window of {window} layers ({vlm.n_layers} layers)", flush=True)
                continue
            passes = 1 + len(EDGES) * len(windows(vlm.n_layers, window))
            head = (
                f"{name} ({vlm.n_layers} layers), N={args.n}, batch {args.batch_size}, window "
                f"{window}: {passes} passes"
            )
            if args.resume:
                row = resume_row(vlm, samples, args.batch_size, window, args.repeats)
                print(f"{head}   {row}", flush=True)
                continue
            try:
                ours, bare, ratio = measure(vlm, samples, args.batch_size, window)
            except (IndexError, RuntimeError, ValueError) as err:
                print(f"{name}: the bare reference cannot pass a 4-D mask here ({err})", flush=True)
                continue
            print(
                f"{head}   interp: {ours:.2f} s   bare HF + 4-D mask: {bare:.2f} s   "
                f"ratio {ratio:.2f}x",
                flush=True,
            )


if __name__ == "__main__":
    main()
