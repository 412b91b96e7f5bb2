"""The no-image ablation in ``interp audit``: how much does the image add, per question wording?

**Needs** at least 4 samples with an image, an answer and ``variant`` and ``category`` labels
(the wording and the question category); conflict items are left out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from interp.headlines import unit_words
from interp.samples import Sample
from interp.studies.audit.kinds import is_conflict_item
from interp.studies.audit.registry import AuditOptions, Selection, Study
from interp.studies.audit.report import (
    Labels,
    Number,
    Section,
    bracket,
    clusters,
    headline,
    holds,
    mean_interval,
    show,
    with_interval,
)

from .figures import plot_ablation, plot_categories
from .measure import no_image_ablation

if TYPE_CHECKING:
    from interp.model import VLM
    from probes.inference import Comparison

LABELS = Labels(
    {
        "n_questions": "questions",
        "n_images": "images they are about (the unit resampled)",
        "accuracy_with_image": "accuracy with the image",
        "accuracy_blind": "accuracy without the image (blind)",
        "drop_blind": "accuracy the image adds (blind), pooled over question types",
        "agreement_blind": "same answer without the image",
    },
    suffixes={"_low": ", 95% interval low end", "_high": ", 95% interval high end"},
    prefixes={"drop_": "accuracy the image adds, question type ", "n_": "questions of type "},
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
    """Accuracy with and without the image (blind, and a black image), the drop pooled and per
    question type (each with its n and a 95% interval over whole images; one that holds 0 is
    called inconclusive), how often the answer stays the same; per-wording and per-category
    tables and figures."""
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
    # one number per question, every interval over whole images where questions share one
    answers = abl.answers
    full = answers[answers["condition"] == "full"]
    blind = answers[answers["condition"] == "blind"]
    ids = full["sample_id"].astype(str).tolist()
    groups = clusters(samples)
    group_of = dict(zip((str(s.id) for s in samples), groups or []))
    unit = [group_of[i] for i in ids] if groups is not None else None
    right = full["correct"].to_numpy(float)
    right_blind = blind["correct"].to_numpy(float)
    agrees = blind["agrees"].to_numpy(float)
    nums: dict[str, Number] = {"n_questions": len(ids)}
    if unit is not None:
        nums["n_images"] = len(set(unit))
    for key, values, paired in (
        ("accuracy_with_image", right, None),
        ("accuracy_blind", right_blind, None),
        ("drop_blind", right, right_blind),
        ("agreement_blind", agrees, None),
    ):
        m = mean_interval(values, unit, paired_with=paired)
        with_interval(nums, key, m.value, m.low, m.high)
    # per question type: the pooled drop mixes types whose answers the text gives away unequally
    kinds = full["category"].astype(str).to_numpy()
    per = []
    for kind in abl.categories:
        rows = kinds == str(kind)
        sub = None if unit is None else [u for u, keep in zip(unit, rows) if keep]
        m = mean_interval(right[rows], sub, paired_with=right_blind[rows])
        if math.isnan(m.low):  # one image of the type: no interval over images
            nums[f"drop_{kind}"] = headline(m.value)
        else:
            with_interval(nums, f"drop_{kind}", m.value, m.low, m.high)
        nums[f"n_{kind}"] = int(rows.sum())
        per.append((str(kind), m, len(set(sub)) if sub is not None else int(rows.sum())))
    sec.numbers = nums

    def words(kind: str, m: Comparison, units: int) -> str:
        n = nums[f"n_{kind}"]
        if math.isnan(m.low):
            where = f" on {units} image" + ("s" if units != 1 else "") if unit is not None else ""
            return f"{kind} {show(nums[f'drop_{kind}'])} (n = {n}{where}: too few for an interval)"
        shown = f"{kind} {bracket(nums, f'drop_{kind}')} (n = {n})"
        return shown + (", inconclusive" if holds(m.low, m.high, 0.0) else "")

    over = unit_words(f"{len(ids)} questions", None if unit is None else nums["n_images"])
    pooled = mean_interval(right, unit, paired_with=right_blind)
    sec.verdict = (
        f"Pooled over question types, the image adds {bracket(nums, 'drop_blind')} accuracy "
        f"(with it {bracket(nums, 'accuracy_with_image')}, without "
        f"{bracket(nums, 'accuracy_blind')})"
        + ("; inconclusive, the interval holds 0" if holds(pooled.low, pooled.high, 0.0) else "")
        + f". Per question type: {'; '.join(words(*part) for part in per)}. The pooled figure "
        "depends on the mix of types, and the wordings differ in it: compare wordings within a "
        "type (the table per category and wording). Without the image the model repeats its "
        f"answer {bracket(nums, 'agreement_blind')} of the time (95% intervals over {over})."
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
