"""Evaluate a VLM on the demo world: ``python -m interp.demo.evaluate``.

:func:`evaluate` answers every sample greedily with the image and without it (the blind prompt:
the same chat turn with the image items removed) and returns one row per sample.
:func:`summarize` turns those rows into the detailed tables: accuracy per question type against
chance, the colour prior (canonical vs counterfactual, which errors follow the prior), the no-image
ablation across wordings, POPE object existence, modality conflicts, textual vs visual reference,
and long answers labelled prior-driven vs grounded; :func:`phenomenon_tables` condenses them into
one table per planted phenomenon (what was planted, how it is measured, the number).
"""

from __future__ import annotations

import argparse
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
    AGREEMENTS,
    CATEGORIES,
    CO_OCCURRENCE_STRENGTH,
    COLOR_NAMES,
    CONFLICT_ORDERS,
    FACTS,
    FAMILIES,
    NAMING_VARIANTS,
    NUMBER_WORDS,
    POPE_NEGATIVES,
    POSITION_TRUST,
    PRIOR_COLORS,
    PRIOR_STRENGTH,
    SHAPE_KINDS,
    SOURCE_TRUST,
    SOURCES,
    VARIANTS,
    WORDED_QTYPES,
    demo_world,
    generation_label,
    parse_description,
)
from ..generation import generate
from ..model import VLM
from ..samples import Sample, ensure_samples
from . import CHECKPOINT_DIR

# Chance accuracy of a uniform guess over each question type's answers (open wordings).
CHANCE: dict[str, float] = {
    "color": 1 / len(COLOR_NAMES),
    "identify": 1 / len(SHAPE_KINDS),
    "count": 1 / len(CELLS),
    "position": 1 / len(CELLS),
    "digit": 1 / 10,
    "describe": 0.0,
    "exist": 1 / 2,
    "arith": 1 / len(NUMBER_WORDS),
    "fact_color": 1 / len(COLOR_NAMES),
    "recall": 1 / sum(len(f) for f in FACTS.values()),
    "digit_arith": 1 / len(NUMBER_WORDS),
    "letters": 1 / len({len(k) for k in SHAPE_KINDS}),
    "conflict": 1 / len(SHAPE_KINDS),
}


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
    condition or, with ``with_image=False``, ``blind`` (the chat turn with the image items removed).
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


def follows(pred: str, meta: dict[str, Any]) -> str:
    """Which conflict sources an answer matches: the sources (in :data:`SOURCES` order) whose label
    equals the answer, joined by ``+`` (``"perceptual+text"`` when those two agree), or
    ``"other"`` (Tri-PvP's HALLUCINATION: no source's label)."""
    labels = {
        "perceptual": meta["image_label"],
        "propositional": meta["propositional_label"],
        "text": meta["text_label"],
    }
    matched = [s for s in SOURCES if labels[s] == pred]
    return "+".join(matched) if matched else "other"


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
    ``prior_image`` / ``prior_blind`` (the prediction equals ``meta["prior_answer"]``),
    ``follows_image`` (conflict items: :func:`follows`) and ``generation`` (items whose image
    contradicts the prior: :func:`~interp.datasets.world.generation_label` of the answer with the
    image).
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
        row["follows_image"] = follows(pi, meta) if meta.get("qtype") == "conflict" else None
        row["generation"] = generation_label(pi, meta) if meta.get("qtype") else None
        rows.append(row)
    return pd.DataFrame(rows)


def _row_name(r: pd.Series) -> str:
    if r["qtype"] in FAMILIES:
        return f"{r['qtype']} ({r['setting']})"
    return str(r["qtype"])


def _acc(df: pd.DataFrame, col: str) -> float:
    return float(df[col].mean()) if len(df) else float("nan")


def _is(df: pd.DataFrame, col: str, value: Any) -> pd.Series:
    """Rows whose ``col`` equals ``value`` (``None``/NaN-safe, for object columns)."""
    return df[col].map(lambda v: v == value)


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
        g = df[(df["needs_image"] == flag) & (df["qtype"] != "conflict")]
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
    """The colour prior on prior-bearing kinds.

    Colour questions by wording, canonical vs counterfactual: accuracy with/without the image,
    ``prior_share`` (answers equal to the canonical colour) and ``prior_of_errors`` (share of wrong
    answers that are the canonical colour), and the gap canonical - counterfactual. Then
    counterfactual accuracy by opacity (all wordings), beside the colour accuracy of kinds without
    a prior at the same opacity (the control).
    """
    out: list[dict[str, Any]] = []
    col = frame[(frame["qtype"] == "color")]
    prior_kind = col["entity"].isin(list(PRIOR_COLORS))
    for variant in VARIANTS:
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
    return pd.DataFrame(out)


def wording_table(frame: pd.DataFrame) -> pd.DataFrame:
    """No-image ablation across wordings: accuracy with/without the image and the drop, per
    question category and wording, then naming (``plain``, ``polite``) vs non-naming
    (``anchored``, ``terse``) wordings over all categories. Colour rows keep prior-bearing kinds
    only (for the other kinds naming leaks nothing)."""
    out = []
    worded = frame[frame["qtype"].isin(WORDED_QTYPES)]
    worded = worded[(worded["qtype"] != "color") | worded["entity"].isin(list(PRIOR_COLORS))]

    def row(name: str, g: pd.DataFrame) -> dict[str, Any]:
        wi, wo = _acc(g, "correct_image"), _acc(g, "correct_blind")
        return {"group": name, "n": len(g), "with_image": wi, "without_image": wo, "drop": wi - wo}

    naming = worded["variant"].isin(list(NAMING_VARIANTS))
    for qtype in WORDED_QTYPES:
        q = worded[worded["qtype"] == qtype]
        name = f"{CATEGORIES[qtype]} ({qtype})"
        for variant in VARIANTS:
            out.append(row(f"{name}, {variant}", q[q["variant"] == variant]))
        named = q["variant"].isin(list(NAMING_VARIANTS))
        out.append(row(f"{name}, naming", q[named]))
        out.append(row(f"{name}, non-naming", q[~named]))
    out.append(row("all categories, naming wordings (plain, polite)", worded[naming]))
    out.append(row("all categories, non-naming wordings (anchored, terse)", worded[~naming]))
    return pd.DataFrame(out)


def pope_table(frame: pd.DataFrame) -> pd.DataFrame:
    """POPE: for each way of drawing the absent kinds, the present-kind questions plus those
    negatives (balanced): accuracy, precision, recall and F1 of ``yes``, the share of ``yes``
    answers, and ``negatives_yes`` (the share of absent kinds answered ``yes``: hallucination)."""
    ex = frame[frame["qtype"] == "exist"]
    pos = ex[ex["answer"] == "yes"]
    out = []
    for setting in POPE_NEGATIVES:
        neg = ex[_is(ex, "pope_negative", setting)]
        g = pd.concat([pos, neg])
        said_yes = g["pred_image"] == "yes"
        is_yes = g["answer"] == "yes"
        tp = float((said_yes & is_yes).sum())
        precision = tp / said_yes.sum() if said_yes.sum() else float("nan")
        recall = tp / is_yes.sum() if is_yes.sum() else float("nan")
        out.append(
            {
                "setting": setting,
                "n": len(g),
                "accuracy": _acc(g, "correct_image"),
                "precision": precision,
                "recall": recall,
                "f1": 2 * precision * recall / (precision + recall) if tp else 0.0,
                "yes_ratio": float(said_yes.mean()) if len(g) else float("nan"),
                "negatives_yes": float((neg["pred_image"] == "yes").mean()) if len(neg) else np.nan,
                "negatives_yes_blind": float((neg["pred_blind"] == "yes").mean())
                if len(neg)
                else np.nan,
            }
        )
    return pd.DataFrame(out)


def _shares(g: pd.DataFrame) -> dict[str, float]:
    """Share of answers matching each source's label (an answer may match two) and none."""
    if not len(g) or "follows_image" not in g:
        return {**dict.fromkeys(SOURCES, np.nan), "other": np.nan}
    col = g["follows_image"].fillna("")
    res = {s: float(col.str.contains(s).mean()) if len(g) else np.nan for s in SOURCES}
    res["other"] = float((col == "other").mean()) if len(g) else np.nan
    return res


def conflict_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Modality conflicts: which source the answer follows.

    Rows: each agreement pattern (and, for one disagreeing source, which one), the all-differ items
    in each input order, and the all-differ items by the place (first, second, last) of each
    source. Columns: the share of answers matching each source's label, ``other`` (no source),
    and ``world_rule`` (agreement with the world's trust rule, the reference answer).
    """
    con = frame[frame["qtype"] == "conflict"]
    out = []

    def row(name: str, g: pd.DataFrame) -> dict[str, Any]:
        return {"group": name, "n": len(g), **_shares(g), "world_rule": _acc(g, "correct_image")}

    for agreement in AGREEMENTS:
        g = con[con["agreement"] == agreement]
        out.append(row(agreement, g))
        if agreement == "one_disagrees":
            for src in SOURCES:
                out.append(row(f"one_disagrees: {src} is odd", g[_is(g, "odd_source", src)]))
    differ = con[con["agreement"] == "all_differ"]
    for order in CONFLICT_ORDERS:
        name = ",".join(order)
        out.append(row(f"all_differ, order {name}", differ[differ["order"] == name]))
    for src in SOURCES:
        for pos, place in enumerate(("first", "second", "last")):
            at = differ["order"].map(lambda o, s=src, p=pos: o.split(",")[p] == s).astype(bool)
            out.append(row(f"all_differ, {src} {place}", differ[at]))
    return pd.DataFrame(out)


def reference_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Textual vs visual reference to an entity, per reference family."""
    out = []
    for qtype, family in FAMILIES.items():
        q = frame[frame["qtype"] == qtype]
        parts = [
            ("text_only", q[q["setting"] == "text_only"]),
            ("full_info", q[q["setting"] == "full_info"]),
            ("visual", q[q["setting"] == "visual"]),
            ("visual, trained link", q[(q["setting"] == "visual") & _is(q, "linked", True)]),
            ("visual, untrained link", q[(q["setting"] == "visual") & _is(q, "linked", False)]),
        ]
        for label, g in parts:
            out.append(
                {
                    "group": f"{family} ({qtype}): {label}",
                    "n": len(g),
                    "with_image": _acc(g, "correct_image"),
                    "without_image": _acc(g, "correct_blind"),
                }
            )
    return pd.DataFrame(out)


def generation_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Long answers (descriptions): answer length in tokens, exact match, and for counterfactual
    items the share of generations labelled prior-driven / grounded / other from ``meta`` alone,
    by wording and by the faintest object's opacity."""
    desc = frame[frame["qtype"] == "describe"]
    out = []

    def row(name: str, g: pd.DataFrame) -> dict[str, Any]:
        cf = g[g["counterfactual"] == True]  # noqa: E712
        lab = cf["generation"]
        words = g["answer"].str.split().str.len()
        return {
            "group": name,
            "n": len(g),
            "answer_tokens": f"{int(words.min())}-{int(words.max())}" if len(g) else "",
            "exact_match": _acc(g, "correct_image"),
            "n_counterfactual": len(cf),
            "prior_driven": float((lab == "prior_driven").mean()) if len(cf) else np.nan,
            "grounded": float((lab == "grounded").mean()) if len(cf) else np.nan,
            "other": float((lab == "other").mean()) if len(cf) else np.nan,
        }

    out.append(row("describe, all wordings", desc))
    for variant in VARIANTS:
        out.append(row(f"describe, {variant}", desc[desc["variant"] == variant]))
    for lo, hi in ((0.0, 0.25), (0.25, 0.5), (0.5, 1.01)):
        g = desc[(desc["opacity"] >= lo) & (desc["opacity"] < hi)]
        out.append(row(f"describe, faintest object {lo:.2f}-{min(hi, 1.0):.2f}", g))
    # per object, colour answers on counterfactual objects (the prior acts object by object)
    objs = []
    for _, r in desc.iterrows():
        said = parse_description(r["pred_image"])
        shown = r["objects"] or []
        for i, o in enumerate(shown):
            if o["kind"] in PRIOR_COLORS and o["color"] != PRIOR_COLORS[o["kind"]]:
                color = said[i][1] if len(said) == len(shown) else None
                objs.append(float(color == PRIOR_COLORS[o["kind"]]))
    out.append(
        {
            "group": "describe, counterfactual objects given the canonical colour",
            "n": len(objs),
            "prior_driven": float(np.mean(objs)) if objs else np.nan,
        }
    )
    return pd.DataFrame(out)


def summarize(frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """All evaluation tables from :func:`evaluate`'s rows, by name."""
    return {
        "accuracy": accuracy_table(frame),
        "prior": prior_table(frame),
        "wording": wording_table(frame),
        "pope": pope_table(frame),
        "conflict": conflict_table(frame),
        "reference": reference_table(frame),
        "generation": generation_table(frame),
    }


def _get(table: pd.DataFrame, group: str, col: str, key: str = "group") -> float:
    rows = table[table[key] == group]
    return float(rows[col].iloc[0]) if len(rows) else float("nan")


def phenomenon_tables(tables: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """One table per planted phenomenon: what was planted, how it is measured, the number.

    The numbers come from the detailed tables of :func:`summarize` (held-out test items).
    """
    acc, prior, wording = tables["accuracy"], tables["prior"], tables["wording"]
    pope, con, ref, gen = (
        tables["pope"],
        tables["conflict"],
        tables["reference"],
        tables["generation"],
    )

    def table(rows: list[tuple[str, str, float]]) -> pd.DataFrame:
        return pd.DataFrame(rows, columns=["planted", "measured", "value"])

    cf_rows = prior[prior["group"].str.endswith(": counterfactual")]
    can_rows = prior[prior["group"].str.endswith(": canonical")]

    def weighted(rows: pd.DataFrame, col: str) -> float:
        return float((rows[col] * rows["n"]).sum() / rows["n"].sum()) if len(rows) else np.nan

    faint = "counterfactual, opacity 0.00-0.25"
    out = {
        "vision use": table(
            [
                (
                    "vision questions need the image",
                    "accuracy with the image, vision-dependent",
                    _get(acc, "ALL vision-dependent", "with_image"),
                ),
                (
                    "",
                    "accuracy without the image (blind prompt)",
                    _get(acc, "ALL vision-dependent", "without_image"),
                ),
                (
                    "text questions do not",
                    "accuracy with / without, vision-independent",
                    _get(acc, "ALL vision-independent", "with_image"),
                ),
                ("", "", _get(acc, "ALL vision-independent", "without_image")),
            ]
        ),
        "colour prior": table(
            [
                (
                    f"{len(PRIOR_COLORS)} kinds in a canonical colour in {PRIOR_STRENGTH:.0%} of "
                    "training images; text states it",
                    "colour accuracy, prior kinds, canonical",
                    weighted(can_rows, "with_image"),
                ),
                (
                    "test: half of them counterfactual",
                    "colour accuracy, counterfactual",
                    weighted(cf_rows, "with_image"),
                ),
                (
                    "",
                    "gap (canonical - counterfactual), naming wordings",
                    _get(prior, "color plain: gap (canonical - counterfactual)", "with_image"),
                ),
                (
                    "",
                    "share of counterfactual errors that are the canonical colour",
                    float(
                        np.nansum(
                            cf_rows["prior_of_errors"] * cf_rows["n"] * (1 - cf_rows["with_image"])
                        )
                        / np.nansum(cf_rows["n"] * (1 - cf_rows["with_image"]))
                    ),
                ),
                (
                    "weak evidence: opacity < 0.25",
                    "counterfactual accuracy at opacity < 0.25",
                    _get(prior, faint, "with_image"),
                ),
                (
                    "",
                    "control (kinds without a prior) at opacity < 0.25",
                    _get(prior, faint, "control_with_image"),
                ),
            ]
        ),
        "object co-occurrence (POPE)": table(
            [
                (
                    f"a kind brings its partner into {CO_OCCURRENCE_STRENGTH:.0%} of training "
                    "existence scenes",
                    "yes on absent kinds, random negatives",
                    _get(pope, "random", "negatives_yes", "setting"),
                ),
                (
                    "circle and triangle the most frequent kinds",
                    "yes on absent kinds, popular",
                    _get(pope, "popular", "negatives_yes", "setting"),
                ),
                (
                    "",
                    "yes on absent kinds, adversarial (absent partner of a present kind)",
                    _get(pope, "adversarial", "negatives_yes", "setting"),
                ),
                ("", "F1 random / adversarial", _get(pope, "random", "f1", "setting")),
                ("", "", _get(pope, "adversarial", "f1", "setting")),
            ]
        ),
        "modality trust (conflicts)": table(
            [
                (
                    "trust = form (drawn {perceptual}, written {propositional}, caption {text}) + "
                    "place {places}, scaled by visibility".format(
                        **SOURCE_TRUST, places=POSITION_TRUST
                    ),
                    "all differ: answer = drawn object",
                    _get(con, "all_differ", "perceptual"),
                ),
                (
                    "",
                    "all differ: answer = written label",
                    _get(con, "all_differ", "propositional"),
                ),
                ("", "all differ: answer = caption", _get(con, "all_differ", "text")),
                (
                    "",
                    "written label followed when it comes last / first",
                    _get(con, "all_differ, propositional last", "propositional"),
                ),
                ("", "", _get(con, "all_differ, propositional first", "propositional")),
                (
                    "",
                    "drawn object followed when it comes last / first",
                    _get(con, "all_differ, perceptual last", "perceptual"),
                ),
                ("", "", _get(con, "all_differ, perceptual first", "perceptual")),
                (
                    "",
                    "agreement with the world's rule, all differ",
                    _get(con, "all_differ", "world_rule"),
                ),
            ]
        ),
        "wordings (no-image ablation)": table(
            [
                (
                    "naming wordings leak (the named kind's prior, two options, the objects)",
                    "drop without the image, naming wordings",
                    _get(wording, "all categories, naming wordings (plain, polite)", "drop"),
                ),
                (
                    "",
                    "drop without the image, non-naming wordings",
                    _get(wording, "all categories, non-naming wordings (anchored, terse)", "drop"),
                ),
                *(
                    (
                        "",
                        f"drop, {CATEGORIES[q]} ({q}), {kind}",
                        _get(wording, f"{CATEGORIES[q]} ({q}), {kind}", "drop"),
                    )
                    for q in WORDED_QTYPES
                    for kind in ("naming", "non-naming")
                ),
            ]
        ),
        "textual vs visual reference": table(
            [
                (
                    f"visual reference trained for half the combinations ({family})",
                    f"accuracy {setting}",
                    _get(ref, f"{family} ({qtype}): {setting}", "with_image"),
                )
                for qtype, family in FAMILIES.items()
                for setting in ("text_only", "visual")
            ]
        ),
        "long answers": table(
            [
                (
                    "descriptions of 1-2 objects (4-9 tokens) under the colour prior",
                    "counterfactual descriptions labelled prior-driven",
                    _get(gen, "describe, all wordings", "prior_driven"),
                ),
                ("", "labelled grounded", _get(gen, "describe, all wordings", "grounded")),
                (
                    "",
                    "labelled other (wrong objects or colours)",
                    _get(gen, "describe, all wordings", "other"),
                ),
                (
                    "",
                    "counterfactual objects given the canonical colour",
                    _get(
                        gen,
                        "describe, counterfactual objects given the canonical colour",
                        "prior_driven",
                    ),
                ),
            ]
        ),
    }
    return out


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


def load_checkpoint(path: str | Path = CHECKPOINT_DIR) -> tuple[PreTrainedModel, ProcessorMixin]:
    """Load a demo checkpoint offline (fp32, eval mode)."""
    model = AutoModelForImageTextToText.from_pretrained(path, dtype=torch.float32)
    processor = AutoProcessor.from_pretrained(path)
    return model.eval(), processor


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


if __name__ == "__main__":
    main()
