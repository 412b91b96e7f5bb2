"""Evaluate ``demo-smol`` on the demo world: ``python -m interp.demo.smol.evaluate``.

The same per-sample rows as the demo model's evaluation (:func:`interp.demo.evaluate.evaluate`:
greedy answers with and without the image), summarised as: accuracy per question type, the colour
prior (canonical vs counterfactual objects, and which errors name the canonical colour), the
no-image ablation across wordings, and :func:`blind_prior_table` — what the model answers to a
colour question about a named object when it has no image. ``demo-smol`` was trained with uniform
colours, so a canonical answer there is SmolLM2's pretraining speaking, not the world.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import torch

from ...datasets.world import COLOR_NAMES, PLAIN_KINDS, PRIOR_COLORS, demo_world
from ..evaluate import accuracy_table, evaluate, prior_table, to_markdown, wording_table


def blind_prior_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Blind answers to colour questions that name the object (``plain``/``polite`` wordings).

    Per kind: ``n``, ``canonical_share`` (the answer is the kind's canonical colour — common
    knowledge for banana, leaf, carrot, heart, drop), ``colour_share`` (the answer is any colour
    word) and the most frequent answer. Kinds without a canonical colour are the control.
    """
    col = frame[(frame["qtype"] == "color") & frame["variant"].isin(["plain", "polite"])]
    rows = []
    for kind in [*PRIOR_COLORS, *PLAIN_KINDS]:
        g = col[col["entity"] == kind]
        if g.empty:
            continue
        canonical = PRIOR_COLORS.get(kind)
        rows.append(
            {
                "kind": kind,
                "canonical": canonical or "",
                "n": len(g),
                "canonical_share": float((g["pred_blind"] == canonical).mean())
                if canonical
                else float("nan"),
                "colour_share": float(g["pred_blind"].isin(list(COLOR_NAMES)).mean()),
                "top_answer": g["pred_blind"].mode().iloc[0],
            }
        )
    return pd.DataFrame(rows)


def summarize(frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The evaluation tables of ``demo-smol`` (see the module docstring)."""
    return {
        "accuracy": accuracy_table(frame),
        "colour prior (image)": prior_table(frame),
        "colour prior (no image, named objects)": blind_prior_table(frame),
        "no-image ablation by wording": wording_table(frame),
    }


def main(argv: Sequence[str] | None = None) -> None:
    import interp

    parser = argparse.ArgumentParser(description="Evaluate demo-smol on the demo world.")
    parser.add_argument("--split", default="test", choices=["val", "test"])
    parser.add_argument("--n", type=int, default=1200, help="number of samples")
    parser.add_argument("--seed", type=int, default=0, help="world seed")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--markdown", type=Path, help="write the tables as markdown here")
    parser.add_argument("--items", type=Path, help="write the per-sample rows as CSV here")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    t0 = time.time()
    vlm = interp.load("demo-smol")
    samples = demo_world(args.split, args.n, seed=args.seed)
    frame = evaluate(vlm.hf, vlm.processor, samples, batch_size=args.batch_size)
    md = to_markdown(summarize(frame))
    print(md)
    print(f"{len(samples)} samples of the {args.split} split in {time.time() - t0:.1f}s")
    if args.markdown:
        args.markdown.write_text(md)
    if args.items:
        frame.to_csv(args.items, index=False)


if __name__ == "__main__":
    main()
