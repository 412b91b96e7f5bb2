"""Cost of the no-image ablation table against bare HF ``generate`` on the same items.

The workload: demo items of the six worded question types, each image in its four wordings,
answered greedily (up to ``--max-new-tokens`` tokens) with the image and under each condition
without it (default ``blind``, ``null:black``, ``null:noise``, ``swap:next``).

- bare HF: for every condition, the items encoded under it in batches and
  ``model.generate(**inputs, do_sample=False)`` — the generation alone, nothing judged;
- ``no_image_ablation``: the up-front checks (labels, every image decoded and hashed, each
  condition prepared to make sure it hides the image), one nnsight generate trace per batch per
  condition, the judge on every answer and the text-only baseline;
- ``Ablation.to_frame()``: the table — a percentile bootstrap (``--n-boot`` resamples) of every
  cell (variants × categories × conditions, with ``all`` rows): accuracy, the paired drop,
  agreement, the text-only baseline.

Prints the times and the ratios to bare HF (never asserts them).

    python bench/ablation.py [--n 600] [--batch-size 16] [--max-new-tokens 12] [--repeats 3]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import bench_parser, hf_generate, parse, timed  # noqa: E402

import interp  # noqa: E402
from interp.datasets import WORDED_QTYPES, demo_world  # noqa: E402
from interp.encoding import batches  # noqa: E402
from interp.studies.ablation import (  # noqa: E402
    DEFAULT_CONDITIONS,
    no_image_ablation,
    select_items,
)


def bare(vlm, items, conditions, batch_size: int, max_new_tokens: int) -> None:
    for cond in ("full", *conditions):
        for _, enc in batches(vlm, items, cond, batch_size, all_samples=items):
            hf_generate(vlm, enc, max_new_tokens)


def main() -> None:
    parser = bench_parser(__doc__, n=600, batch_size=16, max_new_tokens=12, threads=1)
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--conditions", default=",".join(DEFAULT_CONDITIONS))
    args = parse(parser)
    conditions = [c for c in args.conditions.split(",") if c]
    vlm = interp.load(args.model)
    samples = demo_world("test", n=args.n, qtypes=list(WORDED_QTYPES))
    items = select_items(samples).samples  # the generation order the study uses (by variant)
    kw = dict(batch_size=args.batch_size, max_new_tokens=args.max_new_tokens, progress_bar=False)

    hf = timed(
        lambda: bare(vlm, items, conditions, args.batch_size, args.max_new_tokens), args.repeats
    )
    answers = timed(
        lambda: no_image_ablation(vlm, samples, conditions, n_boot=args.n_boot, **kw), args.repeats
    )
    ablation = no_image_ablation(vlm, samples, conditions, n_boot=args.n_boot, **kw)
    start = time.perf_counter()
    frame = ablation.to_frame()  # computed once per result (cached)
    table = time.perf_counter() - start
    total = answers + table
    runs = len(items) * (1 + len(conditions))
    print(
        f"no-image ablation on {args.model!r}: {len(items)} items x {1 + len(conditions)} "
        f"conditions (full, {', '.join(conditions)}) = {runs} greedy answers of up to "
        f"{args.max_new_tokens} tokens, batch {args.batch_size}, {args.threads} thread(s)"
    )
    print(f"  bare HF generate:                      {hf:.2f} s")
    print(f"  no_image_ablation (checks + answers):  {answers:.2f} s ({answers / hf:.2f}x)")
    print(f"  to_frame (bootstrap of {len(frame)} rows, {args.n_boot} resamples): {table:.2f} s")
    print(f"  the whole table:                       {total:.2f} s ({total / hf:.2f}x bare HF)")


if __name__ == "__main__":
    main()
