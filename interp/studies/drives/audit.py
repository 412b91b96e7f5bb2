"""Temporal causal drives in ``interp audit``: what drives each generated token?

**Needs** at least 4 samples with an image and a long answer (3 words or more, or demo
``describe`` questions); conflict items are left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from interp.errors import EmptyGroupError, TooFewSamplesError
from interp.samples import Sample
from interp.studies.audit.kinds import is_conflict_item
from interp.studies.audit.registry import AuditOptions, Selection, Study
from interp.studies.audit.report import Labels, Section, headline, show

from . import _labels  # the command's labelling (through the package: cli.py may move it)
from .analysis import IMBALANCE_SCORES, prefix_visual_imbalance
from .contexts import DRIVES
from .figures import plot_trajectories
from .measure import causal_drives
from .removal import source_removal

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
    },
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
    with each source removed, and with prior-driven / grounded labels the S_PV validation; the
    source-removal table and the trajectories."""
    sec = STUDY.new_section("What drives each generated token? (temporal causal drives)", samples)
    k = min(10, len(samples))
    kw = dict(batch_size=opts.batch_size, overwrite=opts.overwrite, progress_bar=False)
    drives = causal_drives(vlm, samples, k=k, pmi=False, store=opts.store_for("drives"), **kw)
    removal = source_removal(vlm, samples, store=opts.store_for("drives-removal"), **kw)
    table = removal.to_frame().set_index("removed")
    means = {name: float(np.nanmean(drives.sample_mean(name))) for name in DRIVES}
    sec.numbers = {
        "k": k,
        "mean_question_drive_bits": headline(means["question_drive"]),
        "mean_visual_drive_bits": headline(means["visual_drive"]),
        "mean_prefix_drive_bits": headline(means["prefix_drive"]),
        "p_full": headline(table["p_full"].iloc[0]),
    }
    for source, row in table.iterrows():
        sec.numbers[f"p_without_{_key(source)}"] = headline(row["p_remove"])
    drop = {s: float(table.loc[s, "p_full"] - table.loc[s, "p_remove"]) for s in table.index}
    top = max(drop, key=drop.get)
    sec.verdict = (
        f"Removing the {_key(top)} costs the answers most (mean token probability "
        f"{show(sec.numbers['p_full'])} → {show(sec.numbers['p_without_' + _key(top)])}); "
        f"over the answer, the prefix drive averages "
        f"{show(sec.numbers['mean_prefix_drive_bits'])} bits, the question's "
        f"{show(sec.numbers['mean_question_drive_bits'])} and the image's "
        f"{show(sec.numbers['mean_visual_drive_bits'])} (K = {k})."
    )
    labels = _labels(samples, drives.answers, None)
    if labels is not None:
        try:
            imb = prefix_visual_imbalance(drives, labels)
            auc = imb.table.set_index("score")
            sec.numbers["s_pv_auroc"] = headline(auc.loc["S_PV", "auroc"])
            answer_level = IMBALANCE_SCORES[1][0]  # the answer-level visual drive's row
            sec.numbers["answer_visual_drive_auroc"] = headline(auc.loc[answer_level, "auroc"])
            sec.verdict += (
                f" Separating prior-driven from grounded answers: S_PV AUROC "
                f"{show(sec.numbers['s_pv_auroc'])}, answer-level {VISUAL_DRIVE} AUROC "
                f"{show(sec.numbers['answer_visual_drive_auroc'])}."
            )
            sec.add_table(
                f"S_PV and the {VISUAL_DRIVE}: prior-driven vs grounded",
                imb.to_frame(),
                index=False,
            )
        except (EmptyGroupError, TooFewSamplesError) as err:
            sec.reason = f"S_PV skipped: {err}"
    sec.add_table("Source removal (mean token probability)", table)
    sec.add_figure("Mean drives over the answer", plot_trajectories(drives))
    return sec


STUDY = Study("drives", "Temporal causal drives", 30, select, section, LABELS)

__all__ = ["LABELS", "STUDY", "section", "select"]
