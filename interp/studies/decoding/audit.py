"""Contrastive decoding in ``interp audit``: does it reduce hallucination on POPE-style
questions?

**Needs** yes/no questions with an image and both answers present (POPE-style existence
questions); conflict items are left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pandas as pd

from interp.samples import Sample
from interp.studies.audit.kinds import is_conflict_item, is_yes_no
from interp.studies.audit.registry import AuditOptions, Selection, Study
from interp.studies.audit.report import Labels, Section, headline, show

from .analysis import baseline
from .figures import plot_methods
from .measure import evaluate_decoding

if TYPE_CHECKING:
    from interp.model import VLM

# methods whose name alone could be mistaken for something else in the report
METHOD_WORDS = {"vcd": "visual contrastive decoding (VCD)"}
LABELS = Labels(
    {
        "plain_yes_ratio": "yes-ratio, plain decoding",
        "plain_accuracy": "accuracy, plain decoding",
        "plain_f1": "F1, plain decoding",
        "best_accuracy": "highest accuracy",
        "best_method": "method with the highest accuracy",
        "plain_accuracy_low": "95% interval of that accuracy, low end",
        "plain_accuracy_high": "95% interval of that accuracy, high end",
        "best_gain": "its accuracy minus plain decoding's (points)",
        "best_gain_low": "paired 95% interval of that gain, low end",
        "best_gain_high": "paired 95% interval of that gain, high end",
        "n_questions": "questions in the setting",
        "n_images": "images they are about (the unit resampled)",
        "methods_differing": "methods whose accuracy differs from plain decoding's",
        "yes_ratio": "yes-ratio",
        "f1": "F1",
        **METHOD_WORDS,
        **{f"{m}_f1": f"{words}, F1" for m, words in METHOD_WORDS.items()},
        **{f"{m}_yes_ratio": f"{words}, yes-ratio" for m, words in METHOD_WORDS.items()},
    },
    suffixes={"_f1": ", F1", "_yes_ratio": ", yes-ratio"},
)


def select(samples: Sequence[Sample]) -> Selection:
    """Yes/no questions with an image, if both answers occur."""
    chosen = [s for s in samples if is_yes_no(s) and s.has_image and not is_conflict_item(s)]
    answers = {str(s.answer).strip().lower() for s in chosen}
    if answers != {"yes", "no"}:
        return Selection.skip(
            "needs yes/no questions with both answers (POPE-style existence questions)"
        )
    return Selection(chosen)


def section(vlm: VLM, samples: list[Sample], opts: AuditOptions) -> Section:
    """Greedy and sampled decoding with each method (PAI under eager or SDPA attention): the plain
    yes-ratio, accuracy (with its 95% interval) and F1 on the hardest setting, the methods ranked
    by accuracy with paired 95% intervals of each difference from plain decoding (whole images
    resampled), each method's F1 and yes-ratio; the per-setting tables and figure."""
    sec = STUDY.new_section("Does contrastive decoding reduce hallucination? (POPE)", samples)
    impl = getattr(vlm.hf.config, "_attn_implementation", None)
    boosts = vlm.remote or impl in (None, "eager", "sdpa")  # PAI recomputes the attention
    methods = ["greedy", "vcd", "icd", "vdd", "m3id"] + (["pai"] if boosts else [])
    if not boosts:
        sec.reason = f"pai left out: it needs eager or SDPA attention, the model runs {impl!r}"
    runs = evaluate_decoding(
        vlm,
        samples,
        methods,
        seeds=opts.seeds,
        max_new_tokens=min(opts.max_new_tokens, 4),
        batch_size=opts.batch_size,
        store=opts.store_for("decoding"),
        overwrite=opts.overwrite,
        progress_bar=False,
    )
    summary = runs.to_frame()
    greedy = summary[summary["mode"] == "greedy"]
    setting = "adversarial" if "adversarial" in runs.settings else next(iter(runs.settings))
    part = greedy[greedy["setting"] == setting].set_index("method")
    ranked = runs.comparisons(setting)
    base_name = baseline(part.index)
    base, top = ranked.set_index("method").loc[base_name], ranked.iloc[0]
    unit = "images" if top["n_clusters"] < top["n"] else "questions"
    differing = ranked[ranked["verdict"].isin(["higher", "lower"])]
    sec.numbers = {
        "setting": setting,
        "n_questions": int(top["n"]),
        **({"n_images": int(top["n_clusters"])} if unit == "images" else {}),
        "plain_yes_ratio": headline(part.loc[base_name, "yes_ratio"]),
        "plain_accuracy": headline(base["accuracy"]),
        "plain_accuracy_low": headline(base["accuracy_low"]),
        "plain_accuracy_high": headline(base["accuracy_high"]),
        "plain_f1": headline(part.loc[base_name, "f1"]),
        "best_method": str(top["method"]),
        "best_accuracy": headline(top["accuracy"]),
        "best_gain": headline(100 * top["vs_baseline"]),
        "best_gain_low": headline(100 * top["vs_baseline_low"]),
        "best_gain_high": headline(100 * top["vs_baseline_high"]),
        "methods_differing": len(differing),
    }
    for m in part.index:
        sec.numbers[f"{m}_f1"] = headline(part.loc[m, "f1"])
        sec.numbers[f"{m}_yes_ratio"] = headline(part.loc[m, "yes_ratio"])
    sec.verdict = _verdict(sec, ranked, setting, unit)
    sec.add_table(
        f"Methods ranked by accuracy ({setting}, greedy), with paired 95% intervals of each "
        f"difference over {sec.numbers['n_questions']} questions"
        + (
            f" on {sec.numbers['n_images']} images, resampling whole images"
            if unit == "images"
            else ""
        )
        + " (each interval unadjusted for the other comparisons)",
        _ranking_table(ranked),
        index=False,
    )
    for metric in ("accuracy", "f1", "yes_ratio"):
        table = runs.table(metric)
        if len(opts.seeds) >= 3:
            caption = (
                f"{sec.label(metric)} (greedy; sampled: mean ± std over {len(opts.seeds)} seeds)"
            )
        else:  # a spread over one or two seeds says nothing
            table = table.map(lambda c: c.split(" ± ")[0] if isinstance(c, str) else c)
            seeds = ", ".join(map(str, opts.seeds))
            caption = f"{sec.label(metric)} (greedy; sampled with seed {seeds}, no spread shown)"
        sec.add_table(caption, table)
    sec.add_figure("Methods per setting", plot_methods(runs))
    return sec


def _verdict(sec: Section, ranked: pd.DataFrame, setting: str, unit: str) -> str:
    """The section's finding: plain decoding's level with its interval, the top method's gain with
    its paired interval, and which methods differ from plain decoding ("no difference" where an
    interval holds 0)."""
    n = sec.numbers
    top = ranked.iloc[0]
    on = f"{n['n_questions']} questions" + (
        f" about {n['n_images']} images" if unit == "images" else ""
    )
    words = (
        f"On the {setting} questions ({on}) plain greedy decoding answers yes "
        f"{show(n['plain_yes_ratio'])} of the time (half the questions are about absent objects) "
        f"with accuracy {show(n['plain_accuracy'])} (95% interval "
        f"[{show(n['plain_accuracy_low'])}, {show(n['plain_accuracy_high'])}]). "
    )
    if top["verdict"] == "baseline":
        words += "No method's accuracy is above plain decoding's. "
    else:
        name = METHOD_WORDS.get(str(top["method"]), str(top["method"]))
        gain = f"{n['best_gain']:+g} points [{n['best_gain_low']:+g}, {n['best_gain_high']:+g}]"
        words += (
            f"{name} has the highest accuracy ({show(n['best_accuracy'])}), {gain} over plain "
            "decoding" + (": no difference. " if top["verdict"] == "no difference" else ". ")
        )
    differ = ranked[ranked["verdict"].isin(["higher", "lower"])]
    if differ.empty:
        words += (
            "No method's accuracy differs from plain decoding's: every paired 95% interval of "
            "the difference holds 0"
        )
    else:
        words += "Methods whose accuracy differs from plain decoding's: " + ", ".join(
            f"{r.method} ({r.verdict}, {100 * r.vs_baseline:+.1f} points "
            f"[{100 * r.vs_baseline_low:+.1f}, {100 * r.vs_baseline_high:+.1f}])"
            for r in differ.itertuples()
        )
    words += (
        f" (resampling whole {unit}; each interval unadjusted for the other comparisons). Read "
        "the yes-ratio beside F1: a method can raise F1 by answering yes more often."
    )
    return words


def _ranking_table(ranked: pd.DataFrame) -> pd.DataFrame:
    """The ranking as the page shows it: accuracy and each difference in points with their
    intervals, the verdicts in words."""

    def interval(row: pd.Series, key: str, scale: float, fmt: str) -> str:
        lo, hi = row[f"{key}_low"] * scale, row[f"{key}_high"] * scale
        return f"{row[key] * scale:{fmt}} [{lo:{fmt}}, {hi:{fmt}}]"

    return pd.DataFrame(
        {
            "method": ranked["method"],
            "accuracy": ranked.apply(lambda r: interval(r, "accuracy", 1, ".3f"), axis=1),
            "minus plain decoding (points)": ranked.apply(
                lambda r: interval(r, "vs_baseline", 100, "+.1f"), axis=1
            ),
            "vs plain decoding": ranked["verdict"],
            "minus the top method (points)": ranked.apply(
                lambda r: interval(r, "vs_top", 100, "+.1f"), axis=1
            ),
            "vs the top method": ranked["rank"],
        }
    )


STUDY = Study("decoding", "Contrastive decoding", 50, select, section, LABELS)

__all__ = ["LABELS", "METHOD_WORDS", "STUDY", "section", "select"]
