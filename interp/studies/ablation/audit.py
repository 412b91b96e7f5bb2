"""The no-image ablation in ``interp audit``: how much does the image add, per question wording?

**Needs** at least 4 samples with an image, an answer and ``variant`` and ``category`` labels
(the wording and the question category); conflict items are left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from interp.samples import Sample
from interp.studies.audit.kinds import is_conflict_item
from interp.studies.audit.registry import AuditOptions, Selection, Study
from interp.studies.audit.report import Labels, Section, headline, show

from .figures import plot_ablation, plot_categories
from .measure import no_image_ablation
from .variants import ALL

if TYPE_CHECKING:
    from interp.model import VLM

LABELS = Labels(
    {
        "accuracy_with_image": "accuracy with the image",
        "accuracy_blind": "accuracy without the image (blind)",
        "drop_blind": "accuracy the image adds (blind)",
        "agreement_blind": "same answer without the image",
    },
    prefixes={"drop_": "accuracy the image adds, "},
)


def select(samples: Sequence[Sample]) -> Selection:
    """Samples with an image, an answer, a wording variant and a category; at least 4."""
    chosen = [
        s
        for s in samples
        if s.has_image
        and s.answer
        and s.meta.get("variant")
        and s.meta.get("category")
        and not is_conflict_item(s)
    ]
    if len(chosen) < 4:
        return Selection.skip(
            "needs at least 4 samples with an image, an answer and 'variant' and 'category' "
            "labels (the wording and the question category)"
        )
    return Selection(chosen)


def section(vlm: VLM, samples: list[Sample], opts: AuditOptions) -> Section:
    """Accuracy with and without the image (blind, and a black image), the drop per wording and
    how often the answer stays the same; per-wording and per-category tables and figures."""
    sec = STUDY.new_section(
        "How much does the image add, per wording? (no-image ablation)", samples
    )
    abl = no_image_ablation(
        vlm,
        samples,
        ("blind", "null:black"),
        max_new_tokens=opts.max_new_tokens,
        batch_size=opts.batch_size,
        n_boot=200,
        store=opts.store_for("ablation"),
        overwrite=opts.overwrite,
        progress_bar=False,
    )
    frame = abl.to_frame()
    part = frame[(frame["category"] == ALL) & (frame["condition"] == "blind")]
    overall = part[part["variant"] == ALL].iloc[0]
    sec.numbers = {
        "accuracy_with_image": headline(overall["with_image"]),
        "accuracy_blind": headline(overall["without"]),
        "drop_blind": headline(overall["drop"]),
        "agreement_blind": headline(overall["agreement"]),
    }
    per = part[part["variant"] != ALL]
    for _, row in per.iterrows():
        sec.numbers[f"drop_{row['variant']}"] = headline(row["drop"])
    most = per.loc[per["drop"].idxmax()] if len(per) else overall
    least = per.loc[per["drop"].idxmin()] if len(per) else overall
    sec.verdict = (
        f"The image adds {show(sec.numbers['drop_blind'])} accuracy (with it "
        f"{show(sec.numbers['accuracy_with_image'])}, without "
        f"{show(sec.numbers['accuracy_blind'])}); the most for the '{most['variant']}' wording "
        f"({show(headline(most['drop']))}), the least for '{least['variant']}' "
        f"({show(headline(least['drop']))}); where the drop is small, the wording gives the "
        f"answer away or the model does not use the image. Without the image it repeats its answer "
        f"{show(sec.numbers['agreement_blind'])} of the time."
    )
    sec.add_table("Accuracy with and without the image, per wording", abl.main_table())
    sec.add_table(
        "Drop without the image (blind), per category and wording",
        abl.category_table("blind", "drop"),
    )
    sec.add_figure("With vs without the image", plot_ablation(abl))
    sec.add_figure("Per category", plot_categories(abl))
    return sec


STUDY = Study("ablation", "No-image ablation", 40, select, section, LABELS)

__all__ = ["LABELS", "STUDY", "section", "select"]
