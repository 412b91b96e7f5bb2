"""Evaluate ``demo-smol`` on the demo world: ``python -m tools.demo.smol.evaluate``.

The same per-sample rows as the demo model's evaluation (:func:`tools.demo.evaluate.evaluate`:
greedy answers with and without the image), summarised as: accuracy per question type, the colour
prior (canonical vs counterfactual objects, and which errors name the canonical colour), the
no-image ablation across wordings, and :func:`blind_prior_table` — what the model answers to a
colour question about a named object when it has no image. ``demo-smol`` was trained with uniform
colours, so a canonical answer there is SmolLM2's pretraining speaking, not the world. A second
sample of ``--faint`` colour questions about faint objects (opacity :data:`FAINT`) gives
:func:`faint_prior_table`: canonical vs counterfactual vs control kinds on the same colours, tested
per image.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import torch

from interp.datasets.world import COLOR_NAMES, FAINT, PLAIN_KINDS, PRIOR_COLORS, demo_world

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


def faint_prior_table(frame: pd.DataFrame, group_key: str = "group") -> pd.DataFrame:
    """Colour questions with the image: canonical vs counterfactual objects vs the control kinds.

    Rows ``canonical`` (a prior-bearing kind in its common colour), ``counterfactual`` (in another
    colour) and ``control`` (kinds without a common colour). Columns: ``n`` (questions),
    ``images`` (distinct images: the world asks about each in four wordings, which are not
    independent), ``with_image`` (accuracy), ``control_same_colour`` (the control kinds' accuracy
    on the same colours, weighted as the row's colours are: a colour that is merely hard to see is
    no prior effect), ``errors_canonical`` (share of a counterfactual row's wrong answers that name
    the canonical colour; chance 1/7 over the seven wrong colours) and ``p_below_canonical``
    (one-sided Mann-Whitney U test, ``scipy.stats.mannwhitneyu``, that per-image accuracy is lower
    on counterfactual than on canonical images: the image, not the question, is the unit).
    """
    from scipy.stats import mannwhitneyu

    col = frame[frame["qtype"] == "color"]
    prior = col["entity"].isin(list(PRIOR_COLORS))
    cf = col["counterfactual"].astype(bool)
    groups = {
        "canonical": col[prior & ~cf],
        "counterfactual": col[prior & cf],
        "control": col[~prior],
    }
    control_by_colour = groups["control"].groupby("answer")["correct_image"].mean()
    per_image = {k: g.groupby(group_key)["correct_image"].mean() for k, g in groups.items()}
    rows = []
    for name, g in groups.items():
        wrong = g[g["correct_image"] == 0]
        row = {
            "group": name,
            "n": len(g),
            "images": len(per_image[name]),
            "with_image": float(g["correct_image"].mean()),
            "control_same_colour": float(g["answer"].map(control_by_colour).mean()),
            "errors_canonical": float("nan"),
            "p_below_canonical": float("nan"),
        }
        if name == "counterfactual" and len(g) and len(per_image["canonical"]):
            row["errors_canonical"] = float((wrong["pred_image"] == wrong["prior_answer"]).mean())
            test = mannwhitneyu(per_image[name], per_image["canonical"], alternative="less")
            row["p_below_canonical"] = float(test.pvalue)
        rows.append(row)
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
    parser.add_argument(
        "--faint", type=int, default=960, help="colour questions about faint objects (0: none)"
    )
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
    tables = summarize(frame)
    if args.faint:
        faint = demo_world(
            args.split, args.faint, seed=args.seed, qtypes=["color"], opacity=FAINT, start=5000
        )
        faint_frame = evaluate(
            vlm.hf, vlm.processor, faint, batch_size=args.batch_size, max_new_tokens=6
        )
        key = f"colour prior with the image: {len(faint)} objects at opacity {FAINT[0]}-{FAINT[1]}"
        tables[key] = faint_prior_table(faint_frame)
    md = to_markdown(tables)
    print(md)
    print(f"{len(samples)} samples of the {args.split} split in {time.time() - t0:.1f}s")
    if args.markdown:
        args.markdown.write_text(md)
    if args.items:
        frame.to_csv(args.items, index=False)


if __name__ == "__main__":
    main()
