"""Where in the image, in ``interp audit``: does the occlusion mass fall on the object?

**Needs** demo-world scene questions with an image whose ``meta`` names the drawn ``objects`` and
the ``entity`` asked about (at least 4); the section runs a 4 × 4 occlusion on up to 24 of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from interp.samples import Sample
from interp.studies.audit.registry import AuditOptions, Selection, Study
from interp.studies.audit.report import Labels, Section, headline, show

from .analysis import mass_table, object_box, object_shares
from .figures import plot_attribution_grid
from .measure import occlusion

if TYPE_CHECKING:
    from interp.model import VLM

LIMIT = 24
LABELS = Labels(
    {"inside": "occlusion mass in the object's box", "random": "in a random box of its size"},
)


def select(samples: Sequence[Sample]) -> Selection:
    """Scene samples with an answer and an object box, at most :data:`LIMIT`."""
    chosen = [s for s in samples if s.answer and object_box(s) is not None][:LIMIT]
    if len(chosen) < 4:
        return Selection.skip(
            "needs at least 4 demo-world scene questions whose meta names the drawn 'objects' "
            "and the 'entity' asked about"
        )
    return Selection(chosen)


def section(vlm: VLM, samples: list[Sample], opts: AuditOptions) -> Section:
    """The share of positive occlusion mass inside the object's box vs random boxes, and a grid
    of maps."""
    sec = STUDY.new_section("Where in the image does the answer come from? (occlusion)", samples)
    result = occlusion(
        vlm,
        samples,
        grid=(4, 4),
        batch_size=opts.batch_size,
        store=opts.store_for("attribute"),
        overwrite=opts.overwrite,
        progress_bar=False,
    )
    shares = object_shares(result, samples)
    table = mass_table(shares.assign(all="all"), by="all")
    row = table.iloc[0]
    sec.numbers = {"inside": headline(row["inside"]), "random": headline(row["random"])}
    sec.verdict = (
        f"Hiding one region at a time, {show(sec.numbers['inside'])} of the positive occlusion "
        f"mass falls inside the object's box, against {show(sec.numbers['random'])} inside a "
        "random box of the same size."
    )
    sec.add_table("Occlusion mass in the object's box", mass_table(shares))
    sec.add_figure("Occlusion maps", plot_attribution_grid(result, samples))
    return sec


STUDY = Study("attribute", "Where in the image", 70, select, section, LABELS)

__all__ = ["LABELS", "STUDY", "section", "select"]
