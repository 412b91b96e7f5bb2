"""Evaluate ``demo-omni`` on held-out world-v3 items: ``python -m tools.demo.omni.evaluate``.

Greedy answers through the library (:func:`interp.generate`) on test-split items of a seed, and
three tables:

- **accuracy** per question type, with each modality present and removed (``blind``,
  ``no_audio``, ``no_video``) on the items that need it: the model uses every modality;
- **trimodal by evidence condition**: on disagreeing items, the share of answers naming the
  image, audio and text label (and none of them), per evidence condition (the visual bias and the
  perceptual-vision / propositional-audio asymmetry);
- **trimodal by order**: the same shares per input order (the recency effect);

plus the trust rule's own shares on the same items (what training planted), for comparison: the
world's rule, or the control rule for a checkpoint trained with ``--control``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pandas as pd

import interp
from interp.datasets.world import demo_world
from interp.demo.omni import CHECKPOINT_DIR
from interp.samples import Sample

from .train import control_answer

SOURCES = ("image", "audio", "text")
ABLATIONS: dict[str, str] = {"trimodal": "blind", "hear": "no_audio", "motion": "no_video"}
"""Per v3 question type, the condition that removes the modality its items need."""


def _answers(vlm: interp.VLM, items: Sequence[Sample], condition: str) -> list[str]:
    out = interp.generate(vlm, list(items), condition, max_new_tokens=12, progress_bar=False)
    return [t.strip() for t in out.texts]


def _named(answer: str, meta: dict) -> str:
    for src in SOURCES:
        if answer == meta[f"{src}_label"]:
            return src
    return "none"


def evaluate(
    checkpoint: str | Path = CHECKPOINT_DIR, n: int = 336, seed: int = 0
) -> dict[str, pd.DataFrame]:
    """The evaluation tables of ``checkpoint`` on ``n`` items of each v3 type and ``n`` v2 items
    (test split of ``seed``)."""
    vlm = interp.load(checkpoint)
    record = Path(checkpoint) / "training.json"
    control = record.is_file() and json.loads(record.read_text())["train_config"].get("control")
    rows = []
    trimodal: list[dict] = []
    for qtype in ("trimodal", "hear", "motion", None):
        items = demo_world("test", n, seed=seed, qtypes=[qtype] if qtype else None)
        if control:
            items = [
                replace(s, answer=control_answer(s)) if s.meta["qtype"] == "trimodal" else s
                for s in items
            ]
        full = _answers(vlm, items, "full")
        removed = _answers(vlm, items, ABLATIONS[qtype]) if qtype else [None] * len(items)
        for s, a, r in zip(items, full, removed):
            m = s.meta
            rows.append(
                {
                    "qtype": m["qtype"],
                    "correct": a == s.answer,
                    "correct_without": None if r is None else r == s.answer,
                }
            )
            if m["qtype"] == "trimodal" and m["agreement"] == "all_differ":
                trimodal.append(
                    {
                        "evidence": m["evidence"],
                        "order": m["order"],
                        "model": _named(a, m),
                        "rule": _named(s.answer, m),
                    }
                )
    acc = (
        pd.DataFrame(rows)
        .groupby("qtype")
        .agg(
            n=("correct", "size"),
            accuracy=("correct", "mean"),
            without_modality=("correct_without", "mean"),
        )
    )
    tri = pd.DataFrame(trimodal)
    tables = {"accuracy": acc.reset_index()}
    for key in ("evidence", "order"):
        shares = [
            pd.crosstab(tri[key], tri[who], normalize="index").add_prefix(f"{who}:")
            for who in ("model", "rule")
        ]
        tables[f"trimodal by {key}"] = pd.concat(shares, axis=1).fillna(0.0).reset_index()
    return tables


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", type=Path, default=CHECKPOINT_DIR)
    parser.add_argument("--n", type=int, default=336, help="items per question type")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--markdown", type=Path, help="also write the tables here")
    args = parser.parse_args(argv)
    tables = evaluate(args.checkpoint, args.n, args.seed)
    text = "\n\n".join(
        f"### {name}\n\n{table.to_markdown(index=False, floatfmt='.3f')}"
        for name, table in tables.items()
    )
    print(text)
    if args.markdown:
        args.markdown.write_text(text + "\n")


if __name__ == "__main__":
    main()
