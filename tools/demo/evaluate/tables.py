"""The detailed evaluation tables from :func:`~tools.demo.evaluate.evaluate`'s rows, one per question
family: accuracy per question type against chance, the colour prior (canonical vs counterfactual,
which errors follow the prior), the no-image ablation across wordings, POPE object existence,
modality conflicts, textual vs visual reference, and long answers labelled prior-driven vs
grounded; :func:`summarize` returns them all by name."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from interp.datasets.render import CELLS
from interp.datasets.world import (
    AGREEMENTS,
    CATEGORIES,
    COLOR_NAMES,
    CONFLICT_ORDERS,
    FACTS,
    FAMILIES,
    NAMING_VARIANTS,
    NUMBER_WORDS,
    POPE_NEGATIVES,
    PRIOR_COLORS,
    SHAPE_KINDS,
    SOURCES,
    VARIANTS,
    WORDED_QTYPES,
    parse_description,
)

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


# Opacity bands [lo, hi) of the faint-evidence rows (the last one closes at 1.0).
OPACITY_BINS: tuple[tuple[float, float], ...] = ((0.0, 0.25), (0.25, 0.5), (0.5, 1.01))


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
    cf = col[prior_kind & col["counterfactual"]]
    control = col[~prior_kind]
    for lo, hi in OPACITY_BINS:
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
    for lo, hi in OPACITY_BINS:
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
