"""Visual-reference recall in ``interp audit``: does the model link an image to what it knows?

**Needs** visual-reference items: samples grouped by ``group`` with ``setting`` (visual,
full_info, text_only) and ``family`` labels, at least 4 whole items (:func:`.recall_items`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from interp.errors import InterpError
from interp.samples import Sample
from interp.studies.audit.registry import AuditOptions, Selection, Study
from interp.studies.audit.report import Labels, Section, headline, show

from .figures import plot_accuracy
from .items import recall_items
from .measure import run_recall

if TYPE_CHECKING:
    from interp.model import VLM

LABELS = Labels(
    {
        "text_only_accuracy": "accuracy, Text-Only",
        "visual_accuracy": "accuracy, Visual reference",
        "full_info_accuracy": "accuracy, Full Info",
        "relative_decline": "relative decline, Visual vs Text-Only",
        "items": "items",
    },
    prefixes={"gap_": "visual-reference gap, "},
)


def select(samples: Sequence[Sample]) -> Selection:
    """The samples with a ``setting`` and a ``family``, if they make at least 4 whole items."""
    chosen = [s for s in samples if s.meta.get("setting") and s.meta.get("family")]
    why = (
        "needs visual-reference items: samples grouped by 'group' with 'setting' (visual, "
        "full_info, text_only) and 'family' labels"
    )
    if not chosen:
        return Selection.skip(why)
    try:
        items = recall_items(chosen)
    except InterpError as err:
        return Selection.skip(f"{why} ({err})")
    if len(items) < 4:
        return Selection.skip(f"{why}; found {len(items)} item(s), at least 4 are needed")
    return Selection(chosen)


def section(vlm: VLM, samples: list[Sample], opts: AuditOptions) -> Section:
    """Text-Only, Visual and Full Info accuracy, the relative decline and the gap per family;
    the gap table and the accuracy figure."""
    sec = STUDY.new_section(
        "Does the model link an image to what it knows? (visual reference)", samples
    )
    run = run_recall(
        vlm,
        samples,
        batch_size=opts.batch_size,
        store=opts.store_for("recall"),
        overwrite=opts.overwrite,
        progress_bar=False,
    )
    gap = run.gap(n_boot=200).set_index("family")
    overall = gap.loc["all"]
    sec.numbers = {
        "text_only_accuracy": headline(overall["text_only"]),
        "visual_accuracy": headline(overall["visual"]),
        "full_info_accuracy": headline(overall["full_info"]),
        "relative_decline": headline(overall["relative_decline"]),
        "items": headline(overall["n"]),
    }
    for family, row in gap.drop(index="all").iterrows():
        sec.numbers[f"gap_{family}"] = headline(row["gap"])
    sec.verdict = (
        f"Asked about the entity by name (Text-Only) the model is right "
        f"{show(sec.numbers['text_only_accuracy'])} of the time; asked about 'the object in the "
        f"image' it is right {show(sec.numbers['visual_accuracy'])} — a relative decline of "
        f"{show(sec.numbers['relative_decline'])} (with both the image and the name: "
        f"{show(sec.numbers['full_info_accuracy'])})."
    )
    sec.add_table("The visual-reference gap per family (inclusion match)", gap)
    sec.add_figure("Accuracy per setting and family", plot_accuracy(run))
    return sec


STUDY = Study("recall", "Visual-reference recall", 20, select, section, LABELS)

__all__ = ["LABELS", "STUDY", "section", "select"]
