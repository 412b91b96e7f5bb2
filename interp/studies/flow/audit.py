"""Information flow in ``interp audit``: in which layers must the text read the image for the
answer to survive (attention knockout per window of layers)?

**Needs** at least 4 samples with an image and an answer, short answers first (as the chain of
embedding picks them), and a family whose text attends to image tokens (not cross-attention).
Windows of about a sixth of the decoder layers, as many apart, keep the audit's cost near
7 scoring passes per edge.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from interp.samples import Sample
from interp.studies.audit.kinds import is_conflict_item, is_yes_no
from interp.studies.audit.registry import AuditOptions, Selection, Study
from interp.studies.audit.report import Labels, Section, headline, show

from .figures import plot_flow
from .measure import information_flow

if TYPE_CHECKING:
    from interp.model import VLM

LABELS = Labels(
    {
        "integration_layer": "causal integration layer",
        "n_layers": "decoder layers",
        "window": "layers per knockout window",
        "largest_drop_image_last": "largest mean Δ log p, image → last",
        "largest_drop_question_last": "largest mean Δ log p, question → last",
    }
)


def select(samples: Sequence[Sample]) -> Selection:
    """Short-answer questions with an image and an answer, else any with an image and an
    answer that is not a conflict item; at least 4."""
    base = [s for s in samples if s.has_image and s.answer and not is_conflict_item(s)]
    chosen = [s for s in base if not is_yes_no(s) and len(str(s.answer).split()) <= 2]
    if len(chosen) < 4:
        chosen = base
    if len(chosen) < 4:
        return Selection.skip(
            f"needs at least 4 samples with an image and an answer (the data has {len(chosen)})"
        )
    return Selection(chosen)


def section(vlm: VLM, samples: list[Sample], opts: AuditOptions) -> Section:
    """The causal integration layer, the largest drops of log p(answer) when the last position
    cannot read the image or the question; the flow figure and the integration tests."""
    if vlm.adapter.fusion != "tokens":
        # the text reads the image through cross-attention: there is no image → text edge to cut
        reason = f"{vlm.adapter.name} reads the image through cross-attention, not image tokens"
        return Section(STUDY.key, STUDY.title, ran=False, n=len(samples), reason=reason)
    sec = STUDY.new_section("Where must the text read the image? (attention knockout)", samples)
    size = max(1, vlm.n_layers // 6)
    flow = information_flow(
        vlm,
        samples,
        window=size,
        stride=size,
        split="agreement",
        max_new_tokens=opts.max_new_tokens,
        batch_size=opts.batch_size,
        store=opts.store_for("flow"),
        overwrite=opts.overwrite,
        progress_bar=False,
    )
    found = flow.integration_layer()
    mean = {e: flow.delta[e].mean(axis=0) for e in flow.edges}
    sec.numbers = {
        "integration_layer": found.layer,
        "n_layers": headline(vlm.n_layers),
        "window": headline(size),
        "largest_drop_image_last": headline(float(np.min(mean["image>last"]))),
        "largest_drop_question_last": headline(float(np.min(mean["question>last"]))),
    }
    where = (
        "no window where blocking the image lowers the answer's probability significantly"
        if found.layer is None
        else f"the last window where blocking the image still costs the answer starts at layer "
        f"{show(sec.numbers['integration_layer'])} of {vlm.n_layers}"
    )
    sec.verdict = (
        f"Blocking the text from the image in windows of {size} layers: {where} (two-sided "
        f"one-sample t-tests, Holm-corrected, α = 0.05; a drop of at least a tenth of the "
        f"largest). Cutting the last position off the image "
        f"changes log p(answer) by {show(sec.numbers['largest_drop_image_last'])} on average in "
        f"the window where it matters most; off the question by "
        f"{show(sec.numbers['largest_drop_question_last'])}."
    )
    sec.add_figure("Δ log p(answer) per knockout window", plot_flow(flow))
    sec.add_table("Tests behind the integration layer", found.tests, index=False)
    return sec


STUDY = Study("flow", "Information flow", 15, select, section, LABELS)

__all__ = ["LABELS", "STUDY", "section", "select"]
