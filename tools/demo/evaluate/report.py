"""The evaluation report: the tables as markdown (the model card's evaluation table) or one stacked
CSV, and the command ``python -m tools.demo.evaluate`` that prints and writes them."""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from interp.datasets.world import demo_world
from interp.demo import CHECKPOINT_DIR

from .answers import evaluate, load_checkpoint
from .phenomena import phenomenon_tables
from .tables import summarize


def to_markdown(tables: dict[str, pd.DataFrame], digits: int = 3) -> str:
    """GitHub markdown for the tables (no extra dependency)."""
    blocks = []
    for name, df in tables.items():
        cols = list(df.columns)
        lines = [f"### {name}", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        for _, r in df.iterrows():
            cells = []
            for c in cols:
                v = r[c]
                if v is None or (isinstance(v, float) and np.isnan(v)):
                    cells.append("")
                elif c in ("n", "n_counterfactual"):
                    cells.append(str(int(v)))
                elif isinstance(v, float):
                    cells.append(f"{v:.{digits}f}")
                else:
                    cells.append(str(v))
            lines.append("| " + " | ".join(cells) + " |")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


def to_long(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """All tables stacked, with a ``table`` column (for one CSV file)."""
    return pd.concat([df.assign(table=name) for name, df in tables.items()], ignore_index=True)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Evaluate a checkpoint on the demo world.")
    parser.add_argument("--checkpoint", type=Path, default=CHECKPOINT_DIR)
    parser.add_argument("--split", default="test", choices=["val", "test"])
    parser.add_argument("--n", type=int, default=4500, help="number of samples")
    parser.add_argument("--seed", type=int, default=0, help="world seed")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--markdown", type=Path, help="write the tables as markdown here")
    parser.add_argument("--csv", type=Path, help="write the tables (stacked) as CSV here")
    parser.add_argument("--items", type=Path, help="write the per-sample rows as CSV here")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    t0 = time.time()
    model, processor = load_checkpoint(args.checkpoint)
    samples = demo_world(args.split, args.n, seed=args.seed)
    frame = evaluate(model, processor, samples, batch_size=args.batch_size)
    tables = summarize(frame)
    planted = phenomenon_tables(tables)
    md = (
        "## planted phenomena\n\n" + to_markdown(planted) + "\n## details\n\n" + to_markdown(tables)
    )
    print(md)
    print(f"{len(samples)} samples of the {args.split} split in {time.time() - t0:.1f}s")
    if args.markdown:
        args.markdown.write_text(md)
    if args.csv:
        to_long({**{f"planted: {k}": v for k, v in planted.items()}, **tables}).to_csv(
            args.csv, index=False
        )
    if args.items:
        frame.to_csv(args.items, index=False)
