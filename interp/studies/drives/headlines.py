"""The drives study's headline numbers, each with its n and a 95% interval, and the sentences
that state them: written once, read by the audit's section
(:mod:`interp.studies.drives.audit`) and by the ``interp drives`` summary
(:mod:`interp.studies.drives.report`).

An interval resamples whole images where the samples carry the demo world's ``meta["group"]``
(:func:`interp.studies.audit.report.clusters`), answers otherwise; a drop whose interval holds 0,
or an AUROC whose interval holds 0.5, is worded as inconclusive.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from interp.headlines import (
    Headlines,
    Number,
    bracket,
    clusters,
    headline,
    holds,
    mean_interval,
    unit_words,
    with_interval,
)
from interp.samples import Sample
from probes.inference import clustered_auroc

from .analysis import IMBALANCE_SCORES, Imbalance
from .removal import REMOVALS, SourceRemoval
from .result import CausalDrives

# the drives paper's VCD in words: the audit report also shows visual contrastive decoding (VCD)
VISUAL_DRIVE = "visual drive (VCD, drives paper)"
_SOURCE_WORDS = {"Q": "question", "V": "image", "A<t": "prefix"}


def source_word(source: str) -> str:
    """The removed source in words (``Q`` → ``question``, ``V`` → ``image``, ``A<t`` →
    ``prefix``)."""
    return _SOURCE_WORDS.get(str(source), str(source).lower())


def drive_headlines(
    samples: Sequence[Sample],
    drives: CausalDrives,
    removal: SourceRemoval,
    k: int | None = None,
) -> Headlines:
    """The mean question, visual and prefix drives over the answer, the mean token probability
    with the full input and with each source removed, and the largest drop, each with its 95%
    interval over whole images (answers without ``meta["group"]``); the drop is called
    inconclusive where its interval holds 0."""
    k = drives.k if k is None else k
    groups = clusters(samples)
    per = removal.per_sample()
    nums: dict[str, Number] = {"k": k, "n_answers": len(samples)}
    if groups is not None:
        nums["n_images"] = len(set(groups))
    for name in ("question", "visual", "prefix"):
        m = mean_interval(drives.sample_mean(f"{name}_drive"), groups)
        with_interval(nums, f"mean_{name}_drive_bits", m.value, m.low, m.high)
    full = mean_interval(per["full"], groups)
    with_interval(nums, "p_full", full.value, full.low, full.high)
    drops = {}
    for source, key in REMOVALS:
        m = mean_interval(per[key], groups)
        with_interval(nums, f"p_without_{source_word(source)}", m.value, m.low, m.high)
        drops[source] = mean_interval(per["full"], groups, paired_with=per[key])
    top = max(drops, key=lambda src: drops[src].value)
    with_interval(nums, "top_drop", drops[top].value, drops[top].low, drops[top].high)
    unit = unit_words(f"{len(samples)} answers", None if groups is None else nums["n_images"])
    text = (
        f"Removing the {source_word(top)} costs the answers most (mean token probability "
        f"{bracket(nums, 'p_full')} → {bracket(nums, 'p_without_' + source_word(top))}, a drop of "
        f"{bracket(nums, 'top_drop')}"
        + ("; inconclusive, the interval holds 0" if not drops[top].conclusive else "")
        + f"); over the answer, the prefix drive averages "
        f"{bracket(nums, 'mean_prefix_drive_bits')} bits, the question's "
        f"{bracket(nums, 'mean_question_drive_bits')} and the image's "
        f"{bracket(nums, 'mean_visual_drive_bits')} (K = {k}; 95% intervals over {unit})."
    )
    return Headlines(nums, text)


def imbalance_headlines(samples: Sequence[Sample], imbalance: Imbalance) -> Headlines:
    """S_PV's AUROC and the answer-level visual drive's, prior-driven vs grounded, with the
    counts of each label and a 95% interval over whole images (the imbalance's own interval,
    answers resampled within each label, without ``meta["group"]``); an AUROC whose interval
    holds 0.5 is called inconclusive."""
    groups = clusters(samples)
    auc = imbalance.table.set_index("score")
    nums: dict[str, Number] = {}
    bounds: dict[str, tuple[float, float]] = {}
    group_of = dict(zip((s.id for s in samples), groups or []))
    unit_groups = None if groups is None else [group_of[i] for i in imbalance.scores["sample_id"]]
    for key, (row, column, sign) in zip(
        ("s_pv_auroc", "answer_visual_drive_auroc"), IMBALANCE_SCORES[:2]
    ):
        r = auc.loc[row]
        low, high = r["auroc_low"], r["auroc_high"]
        if unit_groups is not None:  # whole images resampled, not answers
            roc = clustered_auroc(
                sign * imbalance.scores[column].to_numpy(float),
                imbalance.scores["positive"].to_numpy(),
                unit_groups,
            )
            low, high = roc.low, roc.high
        with_interval(nums, key, r["auroc"], low, high)
        bounds[key] = (low, high)
    nums["n_prior_driven"] = int(auc["n_positive"].iloc[0])
    nums["n_grounded"] = int(auc["n_negative"].iloc[0])
    if unit_groups is not None:
        nums["n_labelled_images"] = len(set(unit_groups))
    on = unit_words("", None if unit_groups is None else nums["n_labelled_images"])

    def read(key: str) -> str:
        lo, hi = bounds[key]
        tail = "; inconclusive: it holds 0.5, chance" if holds(lo, hi, 0.5) else ""
        return bracket(nums, key) + tail

    text = (
        f"Separating prior-driven from grounded answers ({nums['n_prior_driven']} "
        f"prior-driven, {nums['n_grounded']} grounded answers{on}): S_PV AUROC "
        f"{read('s_pv_auroc')}; "
        f"answer-level {VISUAL_DRIVE} AUROC {read('answer_visual_drive_auroc')}."
    )
    return Headlines(nums, text)


def interval_table(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with each ``x`` / ``x_low`` / ``x_high`` triple of columns as one column ``x``
    of ``"value [low, high]"`` text (3 significant digits, as the report writes a headline:
    :func:`~interp.studies.audit.report.headline`); every other column as it is, in order. The
    S_PV table's 21 columns become 11 that fit the report's width."""
    triples = [c for c in frame.columns if f"{c}_low" in frame.columns and f"{c}_high" in frame]
    bounds = {f"{c}_{end}" for c in triples for end in ("low", "high")}
    out: dict[str, Any] = {}
    for c in frame.columns:
        if c in bounds:
            continue
        if c not in triples:
            out[c] = frame[c].tolist()
            continue
        out[c] = [
            bracket({c: headline(v), f"{c}_low": headline(lo), f"{c}_high": headline(hi)}, c)
            for v, lo, hi in zip(frame[c], frame[f"{c}_low"], frame[f"{c}_high"])
        ]
    return pd.DataFrame(out, index=frame.index)


__all__ = [
    "VISUAL_DRIVE",
    "drive_headlines",
    "imbalance_headlines",
    "interval_table",
    "source_word",
]
