"""Cost of reading the residual stream through nnsight vs a bare HF forward.

Both sides encode the same samples into the same batches with the library's encoder, then
- ``interp.residual_stream``: one nnsight trace per batch reading every layer at the last token;
- bare HF: ``model(**inputs, output_hidden_states=True)`` and the same last-token gather.
Prints the median time of each and the ratio (target ≤ 1.10×), on the demo model and on a tiny
random model of each given architecture. Peak memory is measured in fresh subprocesses.

    python bench/residual_stream.py [--n 256] [--batch-size 16] [--arch llava qwen2_vl]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from _common import hf_reads, peak_rss_mib, run_child, timed, workload  # noqa: E402

import interp  # noqa: E402
import interp.testing  # noqa: E402


def measure(vlm: interp.VLM, samples, batch_size: int) -> dict[str, float]:
    ours = timed(
        lambda: interp.residual_stream(vlm, samples, batch_size=batch_size, progress_bar=False)
    )
    bare = timed(lambda: hf_reads(vlm, samples, batch_size))
    return {"interp_s": ours, "hf_s": bare, "ratio": ours / bare}


def _memory_child(kind: str, n: int, batch_size: int, model: str) -> None:
    vlm, samples = workload(n, model=model)
    before = peak_rss_mib()
    if kind == "interp":
        interp.residual_stream(vlm, samples, batch_size=batch_size, progress_bar=False)
    else:
        hf_reads(vlm, samples, batch_size)
    print(json.dumps({"peak_mib": peak_rss_mib(), "before_mib": before}))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--arch", nargs="*", default=["llava", "qwen2_vl", "idefics3", "gemma3"])
    parser.add_argument("--memory-child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--model", default="demo", help="model to load (default: the demo model)")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.memory_child:
        _memory_child(args.memory_child, args.n, args.batch_size, args.model)
        return

    vlm, samples = workload(args.n, model=args.model)
    rows = [(f"demo (Llava, {vlm.n_layers} layers)", measure(vlm, samples, args.batch_size))]
    for arch in args.arch:
        tiny = interp.testing.tiny_vlm(arch)
        small = [interp.Sample(s.question, s.image, s.answer, s.id) for s in samples[:64]]
        rows.append((f"tiny {arch}", measure(tiny, small, args.batch_size)))
    print(f"residual_stream vs bare HF forward(output_hidden_states=True), batch {args.batch_size}")
    print(f"{'model':32s} {'interp s':>9s} {'HF s':>9s} {'ratio':>7s}")
    for name, r in rows:
        print(f"{name:32s} {r['interp_s']:9.3f} {r['hf_s']:9.3f} {r['ratio']:7.2f}x")
    for kind in ("hf", "interp"):
        mem = run_child(
            __file__,
            "--memory-child",
            kind,
            "--n",
            str(args.n),
            "--batch-size",
            str(args.batch_size),
            "--model",
            args.model,
            "--threads",
            str(args.threads),
        )
        print(
            f"peak RSS ({kind}, demo, N={args.n}): {mem['peak_mib']:.0f} MiB "
            f"(after loading: {mem['before_mib']:.0f} MiB)"
        )


if __name__ == "__main__":
    main()
