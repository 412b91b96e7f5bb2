"""Temporal causal drives in ``interp audit``: what drives each generated token?

**Needs** at least 4 samples with an image and a long answer (3 words or more, or demo
``describe`` questions); conflict items are left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from interp.errors import EmptyGroupError, TooFewSamplesError
from interp.samples import Sample
from interp.studies.audit.kinds import is_conflict_item
from interp.studies.audit.registry import AuditOptions, Selection, Study
from interp.studies.audit.report import (
    Labels,
    Number,
    Section,
    bracket,
    clusters,
    holds,
    mean_interval,
    with_interval,
)
from probes.inference import clustered_auroc

from . import _labels  # the command's labelling (through the package: cli.py may move it)
from .analysis import IMBALANCE_SCORES, prefix_visual_imbalance
from .figures import plot_trajectories
from .measure import causal_drives
from .removal import REMOVALS, source_removal

if TYPE_CHECKING:
    from interp.model import VLM

# the drives paper's VCD in words: the report also shows visual contrastive decoding (VCD)
VISUAL_DRIVE = "visual drive (VCD, drives paper)"
LABELS = Labels(
    {
        "p_full": "mean token probability, full input",
        "p_remove": "mean token probability, source removed",
        "s_pv_auroc": "S_PV AUROC (prior-driven vs grounded)",
        "answer_visual_drive_auroc": f"answer-level {VISUAL_DRIVE} AUROC",
        "mean_question_drive_bits": "mean question drive (QCD), bits",
        "mean_visual_drive_bits": f"mean {VISUAL_DRIVE}, bits",
        "mean_prefix_drive_bits": "mean prefix drive (PCD), bits",
        "k": "support size K",
        "n_answers": "answers",
        "n_images": "images they are about (the unit resampled)",
        "top_drop": "drop in mean token probability without that source",
        "n_prior_driven": "prior-driven answers",
        "n_grounded": "grounded answers",
        "n_labelled_images": "images of the labelled answers (the unit resampled)",
    },
    suffixes={"_low": ", 95% interval low end", "_high": ", 95% interval high end"},
    prefixes={"p_without_": "mean token probability without the "},
)
_SOURCE_WORDS = {"Q": "question", "V": "image", "A<t": "prefix"}


def _key(source: str) -> str:
    """The removed source in words (``Q`` → ``question``, ``V`` → ``image``, ``A<t`` →
    ``prefix``)."""
    return _SOURCE_WORDS.get(str(source), str(source).lower())


def select(samples: Sequence[Sample]) -> Selection:
    """Samples with an image and a long answer; at least 4."""

    def long(s: Sample) -> bool:
        return s.meta.get("qtype") == "describe" or len(str(s.answer or "").split()) >= 3

    chosen = [s for s in samples if s.has_image and not is_conflict_item(s) and long(s)]
    if len(chosen) < 4:
        return Selection.skip(
            "needs at least 4 samples with an image and a long answer (3 words or more, or "
            "demo 'describe' questions)"
        )
    return Selection(chosen)


def section(vlm: VLM, samples: list[Sample], opts: AuditOptions) -> Section:
    """The mean drives over the answer (K = 10 support contexts at most), the token probability
    with each source removed, and with prior-driven / grounded labels the S_PV validation, each
    with its n and 95% interval (an AUROC whose interval holds 0.5 is called inconclusive); the
    source-removal table and the trajectories."""
    sec = STUDY.new_section("What drives each generated token? (temporal causal drives)", samples)
    k = min(10, len(samples))
    kw = dict(batch_size=opts.batch_size, overwrite=opts.overwrite, progress_bar=False)
    drives = causal_drives(vlm, samples, k=k, pmi=False, store=opts.store_for("drives"), **kw)
    removal = source_removal(vlm, samples, store=opts.store_for("drives-removal"), **kw)
    table = removal.to_frame().set_index("removed")
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
        with_interval(nums, f"p_without_{_key(source)}", m.value, m.low, m.high)
        drops[source] = mean_interval(per["full"], groups, paired_with=per[key])
    top = max(drops, key=lambda src: drops[src].value)
    with_interval(nums, "top_drop", drops[top].value, drops[top].low, drops[top].high)
    sec.numbers = nums
    unit = f"{len(samples)} answers" + (
        f" on {nums['n_images']} images, resampling whole images" if groups is not None else ""
    )
    sec.verdict = (
        f"Removing the {_key(top)} costs the answers most (mean token probability "
        f"{bracket(nums, 'p_full')} → {bracket(nums, 'p_without_' + _key(top))}, a drop of "
        f"{bracket(nums, 'top_drop')}"
        + ("; inconclusive, the interval holds 0" if not drops[top].conclusive else "")
        + f"); over the answer, the prefix drive averages "
        f"{bracket(nums, 'mean_prefix_drive_bits')} bits, the question's "
        f"{bracket(nums, 'mean_question_drive_bits')} and the image's "
        f"{bracket(nums, 'mean_visual_drive_bits')} (K = {k}; 95% intervals over {unit})."
    )
    labels = _labels(samples, drives.answers, None)
    if labels is not None:
        try:
            imb = prefix_visual_imbalance(drives, labels)
            auc = imb.table.set_index("score")
            bounds: dict[str, tuple[float, float]] = {}
            group_of = dict(zip((s.id for s in samples), groups or []))
            unit_groups = None if groups is None else [group_of[i] for i in imb.scores["sample_id"]]
            for key, (row, column, sign) in zip(
                ("s_pv_auroc", "answer_visual_drive_auroc"), IMBALANCE_SCORES[:2]
            ):
                r = auc.loc[row]
                low, high = r["auroc_low"], r["auroc_high"]
                if unit_groups is not None:  # whole images resampled, not answers
                    roc = clustered_auroc(
                        sign * imb.scores[column].to_numpy(float),
                        imb.scores["positive"].to_numpy(),
                        unit_groups,
                    )
                    low, high = roc.low, roc.high
                with_interval(nums, key, r["auroc"], low, high)
                bounds[key] = (low, high)
            nums["n_prior_driven"] = int(auc["n_positive"].iloc[0])
            nums["n_grounded"] = int(auc["n_negative"].iloc[0])
            if unit_groups is not None:
                nums["n_labelled_images"] = len(set(unit_groups))
            on = (
                f" on {nums['n_labelled_images']} images, resampling whole images"
                if unit_groups is not None
                else ""
            )

            def read(key: str) -> str:
                lo, hi = bounds[key]
                tail = "; inconclusive: it holds 0.5, chance" if holds(lo, hi, 0.5) else ""
                return bracket(nums, key) + tail

            sec.verdict += (
                f" Separating prior-driven from grounded answers ({nums['n_prior_driven']} "
                f"prior-driven, {nums['n_grounded']} grounded answers{on}): S_PV AUROC "
                f"{read('s_pv_auroc')}; "
                f"answer-level {VISUAL_DRIVE} AUROC {read('answer_visual_drive_auroc')}."
            )
            sec.add_table(
                f"S_PV and the {VISUAL_DRIVE}: prior-driven vs grounded "
                f"({nums['n_prior_driven']} vs {nums['n_grounded']} answers; 95% intervals resampling "
                "answers within each label, the paper's"
                + ("; the summary's resample whole images)" if groups is not None else ")"),
                imb.to_frame(),
                index=False,
            )
        except (EmptyGroupError, TooFewSamplesError) as err:
            sec.reason = f"S_PV skipped: {err}"
    sec.add_table(f"Source removal (mean token probability over {len(samples)} answers)", table)
    sec.add_figure("Mean drives over the answer", plot_trajectories(drives))
    return sec


STUDY = Study("drives", "Temporal causal drives", 30, select, section, LABELS)

__all__ = ["LABELS", "STUDY", "section", "select"]
