"""Cost of ``causal_drives`` (the temporal-causal-drive study) against bare HF forwards.

Forwards: ``causal_drives`` runs exactly 2K + 2 teacher-forced forwards per sample (+ 2 for the PMI
baselines), each scoring every answer position at once; re-running each prefix separately would
take (2K + 2) · T forwards per sample. Both counts are printed, the library's read from a torch
hook on the output head.

Time: ``causal_drives`` (nnsight traces, one per batch) vs bare HF doing the same work on the same
inputs: the same contexts (:func:`interp.studies.drives.drive_contexts`), grouped and batched the
same way, encoded by the same processor calls (``encode`` + ``append_targets``), one plain
``model(**inputs)`` per batch and a ``log_softmax`` gather of the target tokens. Prints both times
and the ratio (the issue's target: ≤ 1.2×), on the path that runs every context in full
(``share_prefix=False``; prefix sharing is timed by ``bench/prefix_sharing.py``); the two
alternate, so that load from other processes hits both alike. No timed assertions anywhere.

Memory: peak RSS of a fresh process running ``causal_drives`` for several N and K, next to the
bytes the result keeps (per-token log-probabilities only: a few ``[N, T]`` float64 arrays) and
what keeping every forward's logits would take.

    python bench/drives.py [--n 32] [--k 20] [--repeats 5] [--memory 32:20 128:20 64:5 64:40]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from _common import bench_parser, current_rss_mib, parse, peak_rss_mib, run_memory_child  # noqa: E402

import interp  # noqa: E402
from interp.datasets import demo_world  # noqa: E402
from interp.encoding import append_targets, batches  # noqa: E402
from interp.studies.drives import causal_drives, draw_support, drive_contexts  # noqa: E402


def workload(n: int, k: int, model: str = "demo"):
    """The demo model, ``n`` description items (4- and 9-token answers), their greedy answers and
    a support of ``k`` of them."""
    vlm = interp.load(model)
    samples = demo_world("test", n=n, qtypes=["describe"])
    ids = interp.generate(vlm, samples, max_new_tokens=24, progress_bar=False).token_ids
    return vlm, samples, ids, draw_support(samples, k)


def bare_hf(vlm, samples, ids, support, batch_size: int, pmi: bool) -> int:
    """The same forwards as ``causal_drives`` with plain HF: returns the number of rows run."""
    contexts = drive_contexts(samples, support, pmi=pmi)
    rows, targets = [], []
    for i, s in enumerate(samples):
        ctx = contexts(i, s)
        rows.extend(ctx)
        targets.extend([ids[i]] * len(ctx))
    groups: dict = {}
    for j, (_, cond) in enumerate(rows):
        groups.setdefault(cond, []).append(j)
    n = 0
    with torch.no_grad():
        for cond, where in groups.items():
            where = sorted(where, key=lambda j: (len(targets[j]), len(rows[j][0].question), j))
            group = [rows[j][0] for j in where]
            for sub, enc in batches(vlm, group, cond, batch_size, all_samples=group):
                tgt = [targets[where[r]] for r in sub]
                width = max(len(t) for t in tgt)
                wanted = torch.zeros(len(sub), width, dtype=torch.long)
                for row, t in enumerate(tgt):
                    wanted[row, : len(t)] = torch.tensor(t)
                r = torch.arange(len(sub))[:, None]
                if cond.prefix == "removed":
                    logits = vlm.hf(**enc.inputs).logits
                    where_pos = enc.last_index[:, None].expand(-1, width)
                else:
                    traced, positions, _ = append_targets(vlm, enc, tgt)
                    logits = vlm.hf(**traced.inputs).logits
                    where_pos = positions - 1
                logits[r, where_pos].float().log_softmax(-1).gather(-1, wanted[..., None])
                n += len(sub)
    return n


def _memory_child(n: int, k: int, batch_size: int, model: str) -> None:
    vlm, samples, ids, support = workload(n, k, model)
    before, rss_before = peak_rss_mib(), current_rss_mib()
    result = causal_drives(
        vlm,
        samples,
        support=support,
        targets=ids,
        batch_size=batch_size,
        progress_bar=False,
        share_prefix=False,
    )
    growth = current_rss_mib() - rss_before
    arrays = [result.p0, result.prefix_drive, result.question_drive, result.visual_drive]
    arrays += [result.pmi_q, result.pmi_p]
    kept = sum(a.nbytes for a in arrays if a is not None) + result.mask.nbytes
    # keeping each forward's logits instead: rows × (prompt + target) × vocab × 4 bytes
    rows = result.forwards_per_sample * len(samples)
    seq = 48  # about 16 image tokens + template + question + answer on the demo model
    logits = rows * seq * len(vlm.tokenizer) * 4
    print(
        json.dumps(
            {
                "peak_mib": peak_rss_mib(),
                "before_mib": before,
                "growth_mib": growth,
                "kept_mib": kept / 2**20,
                "logits_mib": logits / 2**20,
            }
        )
    )


def main() -> None:
    parser = bench_parser(__doc__, n=32, batch_size=32)
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument(
        "--memory", nargs="*", default=["32:20", "128:20", "64:5", "64:40"], help="N:K pairs"
    )
    parser.add_argument("--memory-child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--repeats", type=int, default=5)
    args = parse(parser)
    if args.memory_child:
        n, k = (int(v) for v in args.memory_child.split(":"))
        _memory_child(n, k, args.batch_size, args.model)
        return

    vlm, samples, ids, support = workload(args.n, args.k, args.model)

    def run_ours(pmi: bool) -> None:
        causal_drives(
            vlm,
            samples,
            support=support,
            targets=ids,
            batch_size=args.batch_size,
            pmi=pmi,
            progress_bar=False,
            # every context in full, as bare HF runs them (sharing: bench/prefix_sharing.py)
            share_prefix=False,
        )

    mean_t = sum(len(t) for t in ids) / len(ids)
    head = vlm.adapter.lm_head(vlm.hf)
    seen: list[int] = []
    handle = head.register_forward_hook(lambda m, a, o: seen.append(int(o.shape[0])))
    run_ours(pmi=False)
    handle.remove()
    print(
        f"causal_drives on the demo model: N={args.n} descriptions (mean answer length "
        f"{mean_t:.1f} tokens), K={args.k}, batch {args.batch_size}, {args.threads} threads"
    )
    print(
        f"  forwards per sample: {sum(seen) / args.n:.1f} (2K + 2 = {2 * args.k + 2}; + 2 with "
        f"the PMI baselines) in {len(seen)} batched forwards; re-running each prefix separately: "
        f"(2K + 2) · T = {(2 * args.k + 2) * mean_t:.0f}"
    )
    for pmi in (False, True):
        # alternate the two, after one warm-up each, so that load from other processes on a
        # shared machine hits both alike; medians over the repeats
        ours_t, bare_t = [], []
        run_ours(pmi)
        bare_hf(vlm, samples, ids, support, args.batch_size, pmi)
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            run_ours(pmi)
            t1 = time.perf_counter()
            bare_hf(vlm, samples, ids, support, args.batch_size, pmi)
            t2 = time.perf_counter()
            ours_t.append(t1 - t0)
            bare_t.append(t2 - t1)
        ours, bare = statistics.median(ours_t), statistics.median(bare_t)
        ratios = sorted(o / b for o, b in zip(ours_t, bare_t))
        rows = (2 * args.k + 2 + (2 if pmi else 0)) * args.n
        print(
            f"  pmi={pmi!s:5}: interp {ours:.2f} s ({rows / ours:.0f} forwards/s)   bare HF "
            f"{bare:.2f} s   ratio {ours / bare:.2f}x (paired runs: {ratios[0]:.2f}-"
            f"{ratios[-1]:.2f}x over {args.repeats})"
        )
    for spec in args.memory:
        m = run_memory_child(__file__, spec, args)
        n, k = spec.split(":")
        print(
            f"  N={n:>4} K={k:>3}: peak RSS {m['peak_mib']:.0f} MiB (model loaded: "
            f"{m['before_mib']:.0f} MiB), growth over the run {m['growth_mib']:.0f} MiB; kept "
            f"{m['kept_mib']:.3f} MiB; every forward's logits would be {m['logits_mib']:.0f} MiB"
        )


if __name__ == "__main__":
    main()
