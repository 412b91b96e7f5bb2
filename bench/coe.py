"""Throughput and memory of ``chain_of_embedding`` (the main job's measurement).

Throughput: ``chain_of_embedding`` (one nnsight generate trace per batch per condition, reading all
layers' last-token states during the prompt forward) vs bare HF doing the same work on the same
batches: one greedy ``generate`` per batch and condition, with plain torch forward hooks on the
decoder layers that copy the last-token states of the prompt forward only. (An earlier reference,
``generate(output_hidden_states=True)``, also materialised every generated step's hidden states —
more work than the measurement does — and made the library look faster than bare HF: 0.28×.)
Prints both times and the ratio.

Memory: peak RSS of a fresh process running ``chain_of_embedding`` on N demo items, for two N, next
to the bytes the kept states take (2 conditions × N × (L+1) × d × 4) and what keeping every token's
states would take — only last-token states are kept, so memory grows by N·(L+1)·d, not by N·seq.

    python bench/coe.py [--n 256] [--memory-n 250 1000]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from _common import (  # noqa: E402
    current_rss_mib,
    hf_generate,
    peak_rss_mib,
    run_child,
    timed,
    workload,
)

import interp  # noqa: E402
from interp.encoding import batches  # noqa: E402
from interp.studies.coe import chain_of_embedding  # noqa: E402


def hf_reference(
    vlm: interp.VLM, samples, batch_size: int, max_new_tokens: int
) -> dict[str, torch.Tensor]:
    """Bare HF, the same work: greedy generate, the prompt forward's last-token states at every
    layer captured by torch hooks (input of layer 0, output of each layer)."""
    layers = vlm.adapter.layers(vlm.hf)
    out: dict[str, list[torch.Tensor]] = {}
    for condition in ("full", "blind"):
        for _, enc in batches(vlm, samples, condition, batch_size):
            rows = torch.arange(len(enc))
            seen: list[torch.Tensor] = []

            def keep(h: torch.Tensor, rows=rows, enc=enc, seen=seen) -> None:
                if h.shape[1] == enc.input_ids.shape[1]:  # the prompt forward only
                    seen.append(h[rows, enc.last_index].detach().clone())

            hooks = [(layers[0], "pre", lambda m, a: keep(a[0]))]
            hooks += [
                (layer, "forward", lambda m, a, o: keep(o[0] if isinstance(o, tuple) else o))
                for layer in layers
            ]
            hf_generate(vlm, enc, max_new_tokens, hooks)
            out.setdefault(condition, []).append(torch.stack(seen, 1))
    return {k: torch.cat(v) for k, v in out.items()}


def _memory_child(n: int, batch_size: int, model: str) -> None:
    vlm, samples = workload(n, model=model)
    before, rss_before = peak_rss_mib(), current_rss_mib()
    coe = chain_of_embedding(vlm, samples, batch_size=batch_size, progress_bar=False)
    growth = current_rss_mib() - rss_before
    kept = sum(t.numel() * t.element_size() for t in coe.states.values())
    tokens = sum(
        len(e.input_ids[0]) * len(e)
        for c in ("full", "blind")
        for _, e in batches(vlm, samples, c, batch_size)
    )
    all_positions = tokens * (vlm.n_layers + 1) * vlm.d_model * 4
    print(
        json.dumps(
            {
                "peak_mib": peak_rss_mib(),
                "before_mib": before,
                "kept_mib": kept / 2**20,
                "growth_mib": growth,
                "all_positions_mib": all_positions / 2**20,
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-new-tokens", type=int, default=8)
    parser.add_argument("--memory-n", type=int, nargs="*", default=[250, 1000])
    parser.add_argument("--memory-child", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--model", default="demo", help="model to load (default: the demo model)")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.memory_child:
        _memory_child(args.memory_child, args.batch_size, args.model)
        return

    vlm, samples = workload(args.n, model=args.model)
    ours = timed(
        lambda: chain_of_embedding(
            vlm,
            samples,
            batch_size=args.batch_size,
            max_new_tokens=args.max_new_tokens,
            progress_bar=False,
        ),
        repeats=2,
    )
    bare = timed(
        lambda: hf_reference(vlm, samples, args.batch_size, args.max_new_tokens), repeats=2
    )
    print(
        f"chain_of_embedding on the demo model, N={args.n}, batch {args.batch_size}, "
        f"max_new_tokens {args.max_new_tokens} (full + blind)"
    )
    print(
        f"  interp: {ours:.2f} s ({args.n / ours:.0f} samples/s)   bare HF generate: {bare:.2f} s   "
        f"ratio {ours / bare:.2f}x"
    )
    for n in args.memory_n:
        m = run_child(
            __file__,
            "--memory-child",
            str(n),
            "--batch-size",
            str(args.batch_size),
            "--model",
            args.model,
            "--threads",
            str(args.threads),
        )
        print(
            f"  N={n:5d}: peak RSS {m['peak_mib']:.0f} MiB (model loaded: {m['before_mib']:.0f} MiB), "
            f"RSS growth over the run {m['growth_mib']:.0f} MiB; "
            f"kept states {m['kept_mib']:.1f} MiB; every position would be {m['all_positions_mib']:.0f} MiB"
        )


if __name__ == "__main__":
    main()
