"""The chain of embedding in ``interp audit``: where the image is integrated, and whether how
much it is integrated tracks correctness.

**Needs** at least 4 samples with an image (and answers, for the correlation with correctness).
Short-answer questions come first — the language-prior benchmark's kind — leaving out the items
other studies are built for (yes/no questions, visual-reference items, long answers) unless too
few remain; conflict items never.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from interp.errors import EmptyGroupError, NoVIPError
from interp.samples import Sample
from interp.studies.audit.kinds import is_conflict_item, is_yes_no
from interp.studies.audit.registry import AuditOptions, Selection, Study
from interp.studies.audit.report import Labels, Section, bracket, headline, show, with_interval
from probes.split import is_correct
from probes.vip import RULES

from .chain import chain_of_embedding
from .diagnosis import Diagnosis, diagnose, vip_rules_table
from .figures import plot_distance_curves, plot_tvi_distributions

if TYPE_CHECKING:
    from interp.model import VLM

LABELS = Labels(
    {
        "vip": "Visual Integration Point (layer)",
        "n_layers": "decoder layers",
        "vip_statistic": "the paper's two-sample statistic at the VIP (samples taken as independent)",
        "vip_gap": "gap D_VT − D_T of the mean distance at the VIP",
        "vip_gap_low": "95% interval of that gap, low end (resampling whole images)",
        "vip_gap_high": "95% interval of that gap, high end (resampling whole images)",
        "vip_gap_p_holm": "p-value of that gap (resampling whole images), Holm over the layers",
        "vip_gap_n_clusters": "independent units (images) behind the gap's interval",
        "share_answers_changed_without_image": "share of answers that change without the image",
        "accuracy_with_image": "accuracy with the image",
        "accuracy_without_image": "accuracy without the image",
        "rho_tvi_correct": "Spearman ρ, post-VIP TVI vs correct",
        "p_tvi_correct": "p-value of that ρ (pairs taken as independent, the paper's)",
        "rho_tvi_correct_low": "95% interval of that ρ, low end (resampling whole images)",
        "rho_tvi_correct_high": "95% interval of that ρ, high end (resampling whole images)",
        "n_clusters": "independent units (images) behind that interval",
        "rho_pre_vip_tvi_correct": "Spearman ρ, pre-VIP TVI vs correct",
        "rule": "VIP rule",
        "used": "used here",
        "cause": "why none",
        "gap": "gap D_VT − D_T at the VIP",
        "gap_share": "share of the largest gap",
        "statistic": "two-sample statistic",
        "cohens_d": "Cohen's d",
        "rho": "Spearman ρ, post-VIP TVI vs correct",
        "p_value": "p-value of that ρ",
    }
)


def _rules(diag: Diagnosis) -> tuple[pd.DataFrame, str, str]:
    """The VIP under every rule of :data:`probes.vip.RULES` (the one used marked); the rule used
    in words; and, when it is not Eq. 9, where Eq. 9 (the paper's rule) puts the VIP."""
    table = vip_rules_table(diag)
    table.insert(1, "used", ["yes" if r == diag.vip_rule else "" for r in table["rule"]])
    table["vip"] = table["vip"].astype(object).where(table["vip"].notna(), "none")
    rule = f"rule {diag.vip_rule!r}, {RULES[diag.vip_rule]}"
    if diag.vip_method == "automatic":
        used = f"the Visual Integration Point by {rule}"
    else:
        used = f"a stand-in: the automatic {rule}, finds no Visual Integration Point"
    eq9 = ""
    if diag.vip_rule != "eq9":
        layer = table.set_index("rule").loc["eq9", "vip"]
        eq9 = "; Eq. 9, the paper's rule, " + (
            "finds none" if layer == "none" else f"gives layer {layer}"
        )
    return table, used, eq9


def select(samples: Sequence[Sample]) -> Selection:
    """Short-answer questions with an image, else any non-yes/no sample with an image, else any
    sample with an image that is not a conflict item; at least 4."""

    def short(s: Sample) -> bool:
        return len(str(s.answer or "").split()) <= 2 and s.meta.get("qtype") != "describe"

    base = [s for s in samples if s.has_image and not is_conflict_item(s)]
    chosen = [s for s in base if not is_yes_no(s) and not s.meta.get("setting") and short(s)]
    if len(chosen) < 4:
        chosen = [s for s in base if not is_yes_no(s)]
    if len(chosen) < 4:
        chosen = base
    if len(chosen) < 4:
        return Selection.skip(
            f"needs at least 4 samples with an image (the data has {len(chosen)})"
        )
    return Selection(chosen)


def section(vlm: VLM, samples: list[Sample], opts: AuditOptions) -> Section:
    """The VIP and its statistic, the share of answers the image changes, accuracy with and
    without the image and Spearman ρ of TVI with correctness; the distance curves, the TVI per
    group and the per-layer table."""
    sec = STUDY.new_section("Where is the image integrated? (chain of embedding)", samples)
    coe = chain_of_embedding(
        vlm,
        samples,
        max_new_tokens=opts.max_new_tokens,
        batch_size=opts.batch_size,
        store=opts.store_for("coe"),
        overwrite=opts.overwrite,
        progress_bar=False,
    )
    try:
        diag = diagnose(coe)
    except NoVIPError as err:
        diag = diagnose(coe, fallback_vip=vlm.n_layers)
        sec.reason = f"no automatic VIP ({err}); TVI uses the last layer"
    res = diag.detector.result_
    rules, used, eq9 = _rules(diag)
    full, blind = coe.answers["full"], coe.answers["blind"]
    answers = [str(s.answer) if s.answer is not None else None for s in samples]
    has_ref = all(a is not None for a in answers)
    sec.numbers = {
        "vip": headline(diag.vip),
        "n_layers": headline(diag.n_layers),
        "vip_statistic": headline(res.statistic[diag.vip]),
        "share_answers_changed_without_image": headline(float(np.mean(diag.in_vt))),
    }
    gap = diag.gap_test
    if gap is not None:
        v = diag.vip
        with_interval(sec.numbers, "vip_gap", gap.difference[v], gap.low[v], gap.high[v])
        sec.numbers["vip_gap_p_holm"] = headline(gap.p_adjusted[v])
        sec.numbers["vip_gap_n_clusters"] = gap.n_clusters
    frame = diag.to_frame()
    if has_ref:
        acc_full = np.mean([is_correct(p, r) for p, r in zip(full, answers)])
        acc_blind = np.mean([is_correct(p, r) for p, r in zip(blind, answers)])
        corr = diag.correlations()
        post = corr[corr["score"] == "TVI (post-VIP)"].iloc[0]
        pre = corr[corr["score"] == "TVI (pre-VIP)"].iloc[0]
        sec.numbers.update(
            accuracy_with_image=headline(acc_full),
            accuracy_without_image=headline(acc_blind),
            rho_tvi_correct=headline(post["rho"]),
            p_tvi_correct=headline(post["p_value"]),
            rho_tvi_correct_low=headline(post["ci_low"]),
            rho_tvi_correct_high=headline(post["ci_high"]),
            n_clusters=int(post["n_clusters"]),
            rho_pre_vip_tvi_correct=headline(pre["rho"]),
        )
        sec.add_table("Spearman ρ of each score with correctness", corr, index=False)
        if "variant" in frame.columns and frame["variant"].notna().any():
            per = (
                pd.DataFrame(
                    {
                        "variant": [s.meta.get("variant") for s in samples],
                        "with image": [is_correct(p, r) for p, r in zip(full, answers)],
                        "without image": [is_correct(p, r) for p, r in zip(blind, answers)],
                    }
                )
                .groupby("variant", sort=False)
                .mean()
            )
            per["image adds"] = per["with image"] - per["without image"]
            sec.add_table("Accuracy with and without the image, per wording", per)
    n_l = diag.n_layers
    words = (
        f"The image is integrated from layer {show(sec.numbers['vip'])} of {n_l} on ({used}; "
        f"the paper's t = {show(sec.numbers['vip_statistic'])}, taking samples as independent"
        f"{eq9}). "
        "States are read at "
        + (
            "the last generated token of each condition's own answer (the paper's). "
            if coe.read_at == "generated"
            else "the last prompt token. "
        )
        + "Removing the image changes "
        f"{show(sec.numbers['share_answers_changed_without_image'])} of the answers."
    )
    if gap is not None:
        words += (
            " At the VIP the mean distance of the answers the image changes minus the others' is "
            f"{bracket(sec.numbers, 'vip_gap')} (95% interval over "
            f"{sec.numbers['vip_gap_n_clusters']} images, resampling whole images; "
            + (
                f"Holm-adjusted p {'≤' if gap.at_resolution[diag.vip] else '='} "
                f"{show(sec.numbers['vip_gap_p_holm'])} over the layers)."
                if gap.significant[diag.vip]
                else "inconclusive after Holm's correction over the layers)."
            )
        )
    if has_ref:
        words += (
            f" Accuracy is {show(sec.numbers['accuracy_with_image'])} with the image and "
            f"{show(sec.numbers['accuracy_without_image'])} without; how much the image is "
            f"integrated after the VIP (TVI) tracks correctness with Spearman ρ = "
            f"{show(sec.numbers['rho_tvi_correct'])} (95% interval "
            f"[{show(sec.numbers['rho_tvi_correct_low'])}, "
            f"{show(sec.numbers['rho_tvi_correct_high'])}] over {sec.numbers['n_clusters']} "
            "images, resampling whole images"
            + (
                ": inconclusive, it holds 0)."
                if post["ci_low"] <= 0 <= post["ci_high"]
                else f"; p = {show(sec.numbers['p_tvi_correct'])} taking pairs as independent)."
            )
        )
    sec.verdict = words
    sec.add_figure(
        "Distance per layer with vs without the image",
        plot_distance_curves(diag, title="D_VT vs D_T"),
    )
    groups = {"D_VT": diag.tvi[diag.in_vt], "D_T": diag.tvi[~diag.in_vt]}
    sec.add_figure("TVI per group", plot_tvi_distributions(groups))
    sec.add_table(
        "Per layer: group means, the paper's two-sample statistic (samples independent) and the "
        "gap's 95% interval and Holm-adjusted p-value resampling whole images",
        diag.layer_frame(),
    )
    sec.add_table(
        f"The VIP under each automatic rule (used here: {diag.vip_rule!r}; docs/vip_rules.md)",
        rules,
        index=False,
    )
    return sec


def failure_reason(err: Exception, n: int) -> str | None:
    """An empty group of the split in the user's terms: the image changed all answers, or
    none."""
    if not isinstance(err, EmptyGroupError):
        return None
    which = f"all {n}" if "D_T empty" in str(err) else f"none of the {n}"
    return (
        f"it stopped: removing the image changed {which} answers, so of the two groups the "
        "chain of embedding compares (answers that change without the image, answers that "
        "do not) one is empty. It needs data where the image decides some answers and not "
        "others: add questions the text alone answers, or more kinds of question "
        f"({type(err).__name__})."
    )


STUDY = Study("coe", "Chain of embedding", 10, select, section, LABELS, failure_reason)

__all__ = ["LABELS", "STUDY", "failure_reason", "section", "select"]
