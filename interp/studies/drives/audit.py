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
from interp.studies.audit.report import Labels, Section

from . import _labels  # the command's labelling (through the package: cli.py may move it)
from .analysis import prefix_visual_imbalance
from .figures import plot_trajectories
from .headlines import VISUAL_DRIVE, drive_headlines, imbalance_headlines, interval_table
from .measure import causal_drives
from .removal import source_removal

if TYPE_CHECKING:
    from interp.model import VLM

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
    head = drive_headlines(samples, drives, removal, k)
    sec.numbers = head.numbers
    sec.verdict = head.text
    labels = _labels(samples, drives.answers, None)
    if labels is not None:
        try:
            imb = prefix_visual_imbalance(drives, labels)
            spv = imbalance_headlines(samples, imb)
            sec.numbers.update(spv.numbers)
            sec.verdict += " " + spv.text
            n = spv.numbers
            sec.add_table(
                f"S_PV and the {VISUAL_DRIVE}: prior-driven vs grounded "
                f"({n['n_prior_driven']} vs {n['n_grounded']} answers"
                + (f" on {n['n_labelled_images']} images" if "n_labelled_images" in n else "")
                + "; value [95% interval] resampling answers within each label, the paper's"
                + ("; the summary's resample whole images)" if "n_labelled_images" in n else ")"),
                interval_table(imb.to_frame()),
                index=False,
            )
        except (EmptyGroupError, TooFewSamplesError) as err:
            sec.reason = f"S_PV skipped: {err}"
    sec.add_table(f"Source removal (mean token probability over {len(samples)} answers)", table)
    sec.add_figure("Mean drives over the answer", plot_trajectories(drives))
    return sec


STUDY = Study("drives", "Temporal causal drives", 30, select, section, LABELS)

__all__ = ["LABELS", "STUDY", "section", "select"]
