"""Modality conflict in ``interp audit``: which source wins when the image, the audio and the
text disagree?

**Needs** conflict items of one source set (:func:`.infer_sources`): per-source labels
(``image_label``, ``audio_label`` or ``propositional_label``, ``text_label``), an ``order`` and a
``caption`` in ``meta``, well formed (:func:`.check_items`).
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
from .items import Source, check_items, default_configurations, infer_sources
from .measure import conflict_responses, favouring
from .probe import bias_probe

if TYPE_CHECKING:
    from interp.model import VLM

LABELS = Labels(
    {
        "follows_drawn_object": "follows the drawn object",
        "follows_written_label": "follows the written label",
        "follows_caption": "follows the caption",
        "follows_image": "follows the image",
        "follows_audio": "follows the audio",
        "follows_video": "follows the video",
        "caption_after_contrast": "follows the caption, contrastive decoding",
        "image_after_contrast": "follows the image, contrastive decoding",
        "agreeing_accuracy_greedy": "accuracy where sources agree, greedy",
        "agreeing_accuracy_contrast": "accuracy where sources agree, contrastive",
        "probe_best_balanced_accuracy": "probe: best balanced accuracy",
        "probe_above_chance_from_layer": "probe: above chance from layer",
    }
)


def select(samples: Sequence[Sample]) -> Selection:
    """The conflict items, if there are any and they are well formed; with items of several
    source sets (two-image and tri-modal), those of the set with the most items."""
    chosen = [s for s in samples if is_conflict_item(s)]
    if not chosen:
        return Selection.skip(
            "needs conflict items (meta: image_label, audio_label or propositional_label, "
            "text_label, order, caption)"
        )
    sets: dict[str, list[Sample]] = {}
    for s in chosen:
        try:
            sets.setdefault(infer_sources([s])[0], []).append(s)
        except DataFormatError:
            sets.setdefault("", []).append(s)
    best = max((k for k in sets if k), key=lambda k: len(sets[k]), default="")
    chosen = sets.get(best, chosen)
    try:
        check_items(chosen, infer_sources(chosen)[1])
    except DataFormatError as err:
        return Selection.skip(f"conflict items are malformed: {err}")
    return Selection(chosen)


def _number_key(source: Source, demo: bool) -> str:
    if demo and source.name == "image":
        return "follows_drawn_object"
    return {"prop_image": "follows_written_label", "text": "follows_caption"}.get(
        source.name, f"follows_{source.name}"
    )


def _noun(source: Source, demo: bool) -> str:
    if demo and source.name == "image":
        return "the drawn object"
    return {"prop_image": "the written label", "text": "the caption"}.get(
        source.name, f"the {source.name}"
    )


def section(vlm: VLM, samples: list[Sample], opts: AuditOptions) -> Section:
    """The share of answers following each source where all differ, a contrastive-decoding
    diagnostic (amateur = the input without one source: the caption for the demo set, otherwise
    the image; α = 0.5, β = 0.1, our setting), accuracy on agreeing items, and a layer-wise probe of the winner; tables
    per configuration (evidence type), order and decoding."""
    set_name, sources = infer_sources(samples)
    demo = set_name == "demo"
    kinds = list(dict.fromkeys(s.kind for s in sources))
    what = ", ".join(kinds[:-1]) + " and " + kinds[-1] if len(kinds) > 1 else kinds[0]
    sec = STUDY.new_section(f"Which source wins when {what} disagree?", samples)
    kw = dict(
        max_new_tokens=min(opts.max_new_tokens, 4),
        batch_size=opts.batch_size,
        store=opts.store_for("conflict"),
        overwrite=opts.overwrite,
        progress_bar=False,
        sources=sources,
    )
    full_name, full_condition = next(iter(default_configurations(sources).items()))
    favour = "text" if demo else "image"
    resp = conflict_responses(vlm, samples, **kw)
    cd = conflict_responses(
        vlm,
        samples,
        configurations={full_name: full_condition},
        decodings=favouring((favour,)),
        **kw,
    )
    full = resp.frame[resp.frame["configuration"] == full_name]
    differ = bool((full["agreement"] == "all_differ").any())
    agreement = "all_differ" if differ else None
    if not differ:
        sec.reason = "no item where every source differs: rates are over all items"
    table = resp.table("configuration", agreement)
    row = table.loc[full_name]
    shares = {s.bias: float(row[s.bias]) if s.bias in row else 0.0 for s in sources}
    winner = max(shares, key=lambda k: shares[k]) if any(shares.values()) else "none"
    dec = cd.table("decoding", agreement)
    after = dec.loc[f"favour {favour}"]
    comp = cd.competence().set_index("decoding")["accuracy"]
    sec.numbers = {_number_key(s, demo): headline(shares[s.bias]) for s in sources}
    sec.numbers["winner"] = winner
    sec.numbers["caption_after_contrast"] = headline(float(after.get("BIAS_TEXT", 0.0)))
    if not demo:
        sec.numbers["image_after_contrast"] = headline(float(after.get("BIAS_IMAGE", 0.0)))
    sec.numbers["agreeing_accuracy_greedy"] = headline(comp.get("greedy"))
    sec.numbers["agreeing_accuracy_contrast"] = headline(comp.get(f"favour {favour}"))
    follows = ", ".join(
        f"{_noun(s, demo)} {show(sec.numbers[_number_key(s, demo)])}" for s in sources
    )
    if demo:
        moved = f"moves the caption's share to {show(sec.numbers['caption_after_contrast'])}"
        how = "that favours the caption"
    else:
        moved = (
            f"moves the image's share to {show(sec.numbers['image_after_contrast'])} and the "
            f"caption's to {show(sec.numbers['caption_after_contrast'])}"
        )
        how = "with the input without the image as amateur"
    sec.verdict = (
        f"When all sources disagree the answer follows {follows} of the time. Contrastive "
        f"decoding {how} (α = 0.5, β = 0.1) {moved}, with accuracy on agreeing items "
        f"{show(sec.numbers['agreeing_accuracy_contrast'])} (greedy "
        f"{show(sec.numbers['agreeing_accuracy_greedy'])})."
    )
    sec.add_table("Bias labels per evidence-form configuration (all sources differ)", table)
    if not demo:
        sec.add_table(
            "Bias labels per evidence type (all sources differ)",
            resp.evidence_rates(agreement=agreement).wide(),
        )
    sec.add_table("Bias labels per input order", resp.table("order", agreement))
    sec.add_table(f"Contrastive decoding without the {favour} as amateur", dec)
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
        if first is None:  # the n/a the terminal prints gets its reason beside it
            note = (
                "probe: at no layer significantly above chance (best balanced accuracy "
                f"{show(sec.numbers['probe_best_balanced_accuracy'])}, chance {probe.chance:.2f})"
            )
            sec.reason = "; ".join(r for r in (sec.reason, note) if r)
        sec.add_figure("Layer-wise probe of the bias label", probe.plot())
    except (EmptyInputError, ProbeError) as err:
        sec.reason = "; ".join(r for r in (sec.reason, f"probe skipped: {err}") if r)
    return sec


STUDY = Study("conflict", "Modality conflict", 60, select, section, LABELS)

__all__ = ["LABELS", "STUDY", "section", "select"]
