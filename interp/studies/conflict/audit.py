"""Modality conflict in ``interp audit``: which source wins when the image and the text
disagree?

**Needs** conflict items: per-source labels (``image_label``, ``propositional_label``,
``text_label``), an ``order`` and a ``caption`` in ``meta``, well formed (:func:`.check_items`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from interp.errors import DataFormatError, EmptyInputError, ProbeError
from interp.samples import Sample
from interp.studies.audit.kinds import is_conflict_item
from interp.studies.audit.registry import AuditOptions, Selection, Study
from interp.studies.audit.report import Labels, Section, headline, show

from .figures import plot_bias
from .items import check_items
from .measure import conflict_responses, favouring
from .probe import bias_probe

if TYPE_CHECKING:
    from interp.model import VLM

LABELS = Labels(
    {
        "follows_drawn_object": "follows the drawn object",
        "follows_written_label": "follows the written label",
        "follows_caption": "follows the caption",
        "caption_after_contrast": "follows the caption, contrastive decoding",
        "agreeing_accuracy_greedy": "accuracy where sources agree, greedy",
        "agreeing_accuracy_contrast": "accuracy where sources agree, contrastive",
        "probe_best_balanced_accuracy": "probe: best balanced accuracy",
        "probe_above_chance_from_layer": "probe: above chance from layer",
    }
)


def select(samples: Sequence[Sample]) -> Selection:
    """The conflict items, if there are any and they are well formed."""
    chosen = [s for s in samples if is_conflict_item(s)]
    if not chosen:
        return Selection.skip(
            "needs conflict items (meta: image_label, propositional_label, text_label, order, "
            "caption)"
        )
    try:
        check_items(chosen)
    except DataFormatError as err:
        return Selection.skip(f"conflict items are malformed: {err}")
    return Selection(chosen)


def section(vlm: VLM, samples: list[Sample], opts: AuditOptions) -> Section:
    """The share of answers following each source where all differ, the caption's share under
    contrastive decoding that favours it, accuracy on agreeing items, and a layer-wise probe of
    the winner; tables per configuration, order and decoding."""
    sec = STUDY.new_section("Which source wins when image and text disagree?", samples)
    kw = dict(
        max_new_tokens=min(opts.max_new_tokens, 4),
        batch_size=opts.batch_size,
        store=opts.store_for("conflict"),
        overwrite=opts.overwrite,
        progress_bar=False,
    )
    resp = conflict_responses(vlm, samples, **kw)
    cd = conflict_responses(
        vlm, samples, configurations={"PercI+PropI": "full"}, decodings=favouring(("text",)), **kw
    )
    full = resp.frame[resp.frame["configuration"] == "PercI+PropI"]
    differ = bool((full["agreement"] == "all_differ").any())
    agreement = "all_differ" if differ else None
    if not differ:
        sec.reason = "no item where every source differs: rates are over all items"
    table = resp.table("configuration", agreement)
    row = table.loc["PercI+PropI"]
    shares = {c: float(row[c]) for c in ("BIAS_IMAGE", "BIAS_PROP_IMAGE", "BIAS_TEXT") if c in row}
    winner = max(shares, key=shares.get) if shares else "none"
    dec = cd.table("decoding", agreement)
    text_after = float(dec.loc["favour text", "BIAS_TEXT"]) if "BIAS_TEXT" in dec else 0.0
    comp = cd.competence().set_index("decoding")["accuracy"]
    sec.numbers = {
        "follows_drawn_object": headline(shares.get("BIAS_IMAGE", 0.0)),
        "follows_written_label": headline(shares.get("BIAS_PROP_IMAGE", 0.0)),
        "follows_caption": headline(shares.get("BIAS_TEXT", 0.0)),
        "winner": winner,
        "caption_after_contrast": headline(text_after),
        "agreeing_accuracy_greedy": headline(comp.get("greedy")),
        "agreeing_accuracy_contrast": headline(comp.get("favour text")),
    }
    sec.verdict = (
        f"When all sources disagree the answer follows the drawn object "
        f"{show(sec.numbers['follows_drawn_object'])}, the written label "
        f"{show(sec.numbers['follows_written_label'])} and the caption "
        f"{show(sec.numbers['follows_caption'])} of the time. Contrastive decoding that favours "
        f"the caption (α = 0.5, β = 0.1) moves the caption's share to "
        f"{show(sec.numbers['caption_after_contrast'])}, with accuracy on agreeing items "
        f"{show(sec.numbers['agreeing_accuracy_contrast'])} (greedy "
        f"{show(sec.numbers['agreeing_accuracy_greedy'])})."
    )
    sec.add_table("Bias labels per evidence-form configuration (all sources differ)", table)
    sec.add_table("Bias labels per input order", resp.table("order", agreement))
    sec.add_table("Contrastive decoding favouring the caption", dec)
    sec.add_figure("Bias per configuration", plot_bias(table, "all differ"))
    try:
        probe = bias_probe(
            vlm,
            samples,
            resp,
            agreement=agreement,
            batch_size=opts.batch_size,
            progress_bar=False,
        )
        first = probe.decodable_from()
        sec.numbers["probe_best_balanced_accuracy"] = headline(
            probe.probe.scores_["balanced_accuracy_mean"].max()
        )
        sec.numbers["probe_above_chance_from_layer"] = first
        sec.verdict += (
            f" A linear probe on the last prompt token predicts the winner with balanced accuracy "
            f"up to {show(sec.numbers['probe_best_balanced_accuracy'])} (chance "
            f"{probe.chance:.2f}); "
            + (
                "at no layer is it significantly above chance."
                if first is None
                else f"above chance from layer {first}."
            )
        )
        sec.add_figure("Layer-wise probe of the bias label", probe.plot())
    except (EmptyInputError, ProbeError) as err:
        sec.reason = "; ".join(r for r in (sec.reason, f"probe skipped: {err}") if r)
    return sec


STUDY = Study("conflict", "Modality conflict", 60, select, section, LABELS)

__all__ = ["LABELS", "STUDY", "section", "select"]
