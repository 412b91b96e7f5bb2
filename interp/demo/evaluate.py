"""Evaluate a VLM on the demo world: ``python -m interp.demo.evaluate``.

:func:`evaluate` answers every sample greedily with the image and without it (the blind prompt:
the same chat turn with the image item removed) and returns one row per sample.
:func:`summarize` turns those rows into the evaluation tables: accuracy per question type against
chance, the language-prior gap (canonical vs counterfactual colours, and which errors follow the
prior), wording variants, textual vs visual reference, and which modality wins in conflicts.
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from transformers import AutoModelForImageTextToText, AutoProcessor, PreTrainedModel, ProcessorMixin

from ..datasets.render import CELLS
from ..datasets.world import (
    COLOR_NAMES,
    FACTS,
    NUMBER_WORDS,
    PRIOR_COLORS,
    SHAPE_KINDS,
    demo_world,
)
from ..generation import generate
from ..model import VLM
from ..samples import Sample, ensure_samples
from . import CHECKPOINT_DIR

# Chance accuracy of a uniform guess over each question type's answer set.
CHANCE: dict[str, float] = {
    "color": 1 / len(COLOR_NAMES),
    "identify": 1 / len(SHAPE_KINDS),
    "count": 1 / len(CELLS),
    "position": 1 / len(CELLS),
    "digit": 1 / 10,
    "describe": 0.0,
    "arith": 1 / len(NUMBER_WORDS),
    "fact_color": 1 / len(COLOR_NAMES),
    "recall": 1 / sum(len(f) for f in FACTS.values()),
    "digit_arith": 1 / len(NUMBER_WORDS),
    "caption": 1 / len(SHAPE_KINDS),
    "conflict": 1 / len(SHAPE_KINDS),
}

_PAIR = re.compile(r"the (\w+) is (\w+)")


def greedy_answers(
    model: PreTrainedModel,
    processor: ProcessorMixin,
    samples: Sequence[Sample],
    with_image: bool = True,
    batch_size: int = 64,
    max_new_tokens: int = 20,
) -> list[str]:
    """Greedy answers (special tokens removed, whitespace normalised) through the library's
    :func:`interp.generate`: one nnsight generate trace per left-padded batch, under the ``full``
    condition or, with ``with_image=False``, ``blind`` (the chat turn with the image item removed).
    """
    condition = "full" if with_image else "blind"
    gen = generate(
        VLM(model, processor),
        list(samples),
        condition,
        max_new_tokens=max_new_tokens,
        batch_size=batch_size,
        progress_bar=False,
    )
    return [" ".join(text.split()) for text in gen.texts]


def _conflict_outcome(pred: str, meta: dict[str, Any]) -> str:
    """Which modality a conflict answer follows: ``image``, ``text`` or ``other``."""
    if pred == meta["image_label"]:
        return "image"
    if pred == meta["text_label"]:
        return "text"
    return "other"


def evaluate(
    model: PreTrainedModel,
    processor: ProcessorMixin,
    samples: Sequence[Sample],
    batch_size: int = 64,
    max_new_tokens: int = 20,
) -> pd.DataFrame:
    """Answer each sample with and without its image; one row per sample.

    Columns: ``id``, ``question``, ``answer``, every ``meta`` key, ``pred_image``, ``pred_blind``,
    ``correct_image``, ``correct_blind`` (exact match; ``NaN`` where the sample has no answer),
    ``prior_image`` / ``prior_blind`` (the prediction equals ``meta["prior_answer"]``) and
    ``outcome_image`` (for conflict items: ``image``, ``text`` or ``other``).
    """
    samples = ensure_samples(list(samples))
    was_training = model.training
    model.eval()
    try:
        pred_image = greedy_answers(model, processor, samples, True, batch_size, max_new_tokens)
        pred_blind = greedy_answers(model, processor, samples, False, batch_size, max_new_tokens)
    finally:
        model.train(was_training)
    rows = []
    for s, pi, pb in zip(samples, pred_image, pred_blind, strict=True):
        meta = dict(s.meta)
        row: dict[str, Any] = {"id": s.id, "question": s.question, "answer": s.answer, **meta}
        row.update(pred_image=pi, pred_blind=pb)
        if s.answer is None:
            row.update(correct_image=np.nan, correct_blind=np.nan)
        else:
            row.update(correct_image=float(pi == s.answer), correct_blind=float(pb == s.answer))
        prior = meta.get("prior_answer")
        row["prior_image"] = np.nan if prior is None else float(pi == prior)
        row["prior_blind"] = np.nan if prior is None else float(pb == prior)
        is_conflict = meta.get("image_label") and meta.get("text_label")
        row["outcome_image"] = _conflict_outcome(pi, meta) if is_conflict else None
        rows.append(row)
    return pd.DataFrame(rows)


def _row_name(r: pd.Series) -> str:
    if r["qtype"] in ("recall", "digit_arith"):
        return f"{r['qtype']} ({r['setting']})"
    return str(r["qtype"])


def _acc(df: pd.DataFrame, col: str) -> float:
    return float(df[col].mean()) if len(df) else float("nan")


def accuracy_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Accuracy with and without the image per question type, with chance and group totals."""
    df = frame[frame["answer"].notna()].copy()
    df["row"] = df.apply(_row_name, axis=1)
    out = []
    for name, g in df.groupby("row", sort=False):
        qtype = g["qtype"].iloc[0]
        out.append(
            {
                "group": name,
                "needs_image": bool(g["needs_image"].iloc[0]),
                "n": len(g),
                "with_image": _acc(g, "correct_image"),
                "without_image": _acc(g, "correct_blind"),
                "chance": CHANCE.get(qtype, float("nan")),
            }
        )
    for flag, label in ((True, "ALL vision-dependent"), (False, "ALL vision-independent")):
        g = df[df["needs_image"] == flag]
        out.append(
            {
                "group": label,
                "needs_image": flag,
                "n": len(g),
                "with_image": _acc(g, "correct_image"),
                "without_image": _acc(g, "correct_blind"),
                "chance": float("nan"),
            }
        )
    return pd.DataFrame(out)


def prior_table(frame: pd.DataFrame) -> pd.DataFrame:
    """The language-prior gap on prior-bearing kinds.

    Colour questions (by wording), canonical vs counterfactual: accuracy with/without the image,
    ``prior_share`` (answers equal to the canonical colour) and ``prior_of_errors`` (share of wrong
    answers that are the canonical colour). Then counterfactual accuracy by opacity, beside the
    colour accuracy of kinds without a prior (the control), and description objects.
    """
    out: list[dict[str, Any]] = []
    col = frame[(frame["qtype"] == "color")]
    prior_kind = col["entity"].isin(list(PRIOR_COLORS))
    for variant in ("plain", "anchored"):
        v = col[prior_kind & (col["variant"] == variant)]
        for cf, label in ((False, "canonical"), (True, "counterfactual")):
            g = v[v["counterfactual"] == cf]
            wrong = g[g["correct_image"] == 0]
            out.append(
                {
                    "group": f"color {variant}: {label}",
                    "n": len(g),
                    "with_image": _acc(g, "correct_image"),
                    "without_image": _acc(g, "correct_blind"),
                    "prior_share": _acc(g, "prior_image"),
                    "prior_of_errors": _acc(wrong, "prior_image"),
                }
            )
        gap = out[-2]["with_image"] - out[-1]["with_image"]
        out.append(
            {"group": f"color {variant}: gap (canonical - counterfactual)", "with_image": gap}
        )
    bins = [(0.0, 0.25), (0.25, 0.5), (0.5, 1.01)]
    cf = col[prior_kind & col["counterfactual"]]
    control = col[~prior_kind]
    for lo, hi in bins:
        g = cf[(cf["opacity"] >= lo) & (cf["opacity"] < hi)]
        c = control[(control["opacity"] >= lo) & (control["opacity"] < hi)]
        wrong = g[g["correct_image"] == 0]
        out.append(
            {
                "group": f"counterfactual, opacity {lo:.2f}-{min(hi, 1.0):.2f}",
                "n": len(g),
                "with_image": _acc(g, "correct_image"),
                "prior_share": _acc(g, "prior_image"),
                "prior_of_errors": _acc(wrong, "prior_image"),
                "control_with_image": _acc(c, "correct_image"),
            }
        )
    # descriptions: one record per prior-bearing object, matched by its place in reading order
    # (a description with the wrong number of objects counts as wrong for all of them)
    objs = []
    for _, r in frame[frame["qtype"] == "describe"].iterrows():
        said = _PAIR.findall(r["pred_image"])
        shown = r["objects"] or []
        for i, o in enumerate(shown):
            if o["kind"] not in PRIOR_COLORS:
                continue
            canonical = PRIOR_COLORS[o["kind"]]
            color = said[i][1] if len(said) == len(shown) else None
            objs.append(
                {
                    "cf": o["color"] != canonical,
                    "correct": float(color == o["color"]),
                    "prior": float(color == canonical),
                }
            )
    od = pd.DataFrame(objs, columns=["cf", "correct", "prior"])
    for cfv, label in ((False, "canonical"), (True, "counterfactual")):
        g = od[od["cf"] == cfv]
        wrong = g[g["correct"] == 0]
        out.append(
            {
                "group": f"describe objects: {label}",
                "n": len(g),
                "with_image": _acc(g, "correct"),
                "prior_share": _acc(g, "prior"),
                "prior_of_errors": _acc(wrong, "prior"),
            }
        )
    return pd.DataFrame(out)


def wording_table(frame: pd.DataFrame) -> pd.DataFrame:
    """No-image ablation across wordings of colour questions: accuracy with/without, the drop."""
    col = frame[frame["qtype"] == "color"]
    out = []
    for kinds, label in (
        (None, "all kinds"),
        (True, "prior kinds"),
        (False, "kinds without prior"),
    ):
        for variant in ("plain", "anchored"):
            g = col[col["variant"] == variant]
            if kinds is not None:
                g = g[g["entity"].isin(list(PRIOR_COLORS)) == kinds]
            wi, wo = _acc(g, "correct_image"), _acc(g, "correct_blind")
            out.append(
                {
                    "group": f"{label}, {variant}",
                    "n": len(g),
                    "with_image": wi,
                    "without_image": wo,
                    "drop": wi - wo,
                }
            )
    return pd.DataFrame(out)


def reference_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Textual vs visual reference to an entity (recall of facts, digit arithmetic)."""
    out = []
    for qtype in ("recall", "digit_arith"):
        q = frame[frame["qtype"] == qtype]
        parts = [
            ("text_only", q[q["setting"] == "text_only"]),
            ("full_info", q[q["setting"] == "full_info"]),
            ("visual", q[q["setting"] == "visual"]),
            ("visual, trained link", q[(q["setting"] == "visual") & (q["linked"] == True)]),  # noqa: E712
            ("visual, untrained link", q[(q["setting"] == "visual") & (q["linked"] == False)]),  # noqa: E712
        ]
        for label, g in parts:
            out.append(
                {
                    "group": f"{qtype}: {label}",
                    "n": len(g),
                    "with_image": _acc(g, "correct_image"),
                    "without_image": _acc(g, "correct_blind"),
                }
            )
    return pd.DataFrame(out)


def conflict_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Which modality wins when the caption and the image disagree, by evidence form."""
    out = []
    con = frame[frame["qtype"] == "conflict"]
    for form in ("perceptual", "propositional"):
        g = con[con["evidence_form"] == form]
        shares = g["outcome_image"].value_counts(normalize=True)
        ident = frame[(frame["qtype"] == "identify") & (frame["evidence_form"] == form)]
        out.append(
            {
                "group": f"conflict, {form} image",
                "n": len(g),
                "image_wins": float(shares.get("image", 0.0)) if len(g) else float("nan"),
                "text_wins": float(shares.get("text", 0.0)) if len(g) else float("nan"),
                "other": float(shares.get("other", 0.0)) if len(g) else float("nan"),
                "identify_accuracy": _acc(ident, "correct_image"),
            }
        )
    return pd.DataFrame(out)


def summarize(frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """All evaluation tables from :func:`evaluate`'s rows, by name."""
    return {
        "accuracy": accuracy_table(frame),
        "prior": prior_table(frame),
        "wording": wording_table(frame),
        "reference": reference_table(frame),
        "conflict": conflict_table(frame),
    }


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
                if isinstance(v, float) and np.isnan(v):
                    cells.append("")
                elif c == "n":
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


def load_checkpoint(path: str | Path = CHECKPOINT_DIR) -> tuple[PreTrainedModel, ProcessorMixin]:
    """Load a demo checkpoint offline (fp32, eval mode)."""
    model = AutoModelForImageTextToText.from_pretrained(path, dtype=torch.float32)
    processor = AutoProcessor.from_pretrained(path)
    return model.eval(), processor


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Evaluate a checkpoint on the demo world.")
    parser.add_argument("--checkpoint", type=Path, default=CHECKPOINT_DIR)
    parser.add_argument("--split", default="test", choices=["val", "test"])
    parser.add_argument("--n", type=int, default=1700, help="number of samples")
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
    md = to_markdown(tables)
    print(md)
    print(f"{len(samples)} samples of the {args.split} split in {time.time() - t0:.1f}s")
    if args.markdown:
        args.markdown.write_text(md)
    if args.csv:
        to_long(tables).to_csv(args.csv, index=False)
    if args.items:
        frame.to_csv(args.items, index=False)


if __name__ == "__main__":
    main()
