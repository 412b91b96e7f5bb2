"""Where in the image, in ``interp audit``: does the attribution mass fall on the object, for
grounded and for prior-driven answers?

**Needs** demo-world scene questions with an image whose ``meta`` names the drawn ``objects`` and
the ``entity`` asked about (at least 4). The section attributes the model's greedy answers to up to
:data:`LIMIT` of them (counterfactual drawings and the others taken in turn, so that prior-driven
answers have a chance to occur) on a 4 × 4 grid: black-image-swap occlusion, gradient × (h −
h_null) at the decoder input, and the attention baseline where the model runs eager attention.
Answers are grouped by :func:`~.analysis.answer_group` where the samples carry the demo world's
labels (the drawn colour and the prior one); without them the section says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain, zip_longest
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from interp.errors import InterpError
from interp.samples import Sample
from interp.studies.audit.registry import AuditOptions, Selection, Study
from interp.studies.audit.report import Labels, Section, headline, show

from .analysis import answer_group, mass_table, object_box, object_shares, rank_agreement
from .figures import plot_attribution, plot_attribution_grid
from .measure import Attribution, answers_for, attention, gradient, occlusion

if TYPE_CHECKING:
    from interp.model import VLM

LIMIT = 24
SHOWN = 2  # maps shown per group
LABELS = Labels(
    {
        "inside": "occlusion mass in the object's box",
        "random": "in a random box of its size",
        "inside_grounded": "occlusion mass in the box, grounded answers",
        "inside_prior": "occlusion mass in the box, prior-driven answers",
        "n_grounded": "grounded answers",
        "n_prior": "prior-driven answers",
        "gradient_agreement": "rank agreement of gradient with occlusion",
        "attention_agreement": "rank agreement of attention with occlusion",
    },
)


def select(samples: Sequence[Sample]) -> Selection:
    """Scene samples with an answer and an object box, at most :data:`LIMIT`: counterfactual
    drawings and the others in turn."""
    boxed = [s for s in samples if s.answer and object_box(s) is not None]
    flipped = [s for s in boxed if s.meta.get("counterfactual")]
    plain = [s for s in boxed if not s.meta.get("counterfactual")]
    chosen = [s for s in chain(*zip_longest(flipped, plain)) if s is not None][:LIMIT]
    if len(chosen) < 4:
        return Selection.skip(
            "needs at least 4 demo-world scene questions whose meta names the drawn 'objects' "
            "and the 'entity' asked about"
        )
    return Selection(chosen)


def _methods(vlm: VLM, samples: list[Sample], opts: AuditOptions) -> dict[str, Attribution]:
    texts = answers_for(vlm, samples, "greedy", "full", batch_size=opts.batch_size)
    kw = {"grid": (4, 4), "batch_size": opts.batch_size, "progress_bar": False}
    out = {
        "occlusion": occlusion(
            vlm,
            samples,
            hide="swap",
            answers=texts,
            store=opts.store_for("attribute"),
            overwrite=opts.overwrite,
            **kw,
        ),
    }
    if vlm.remote:  # gradients and attention weights stay in this process (docs/remote.md)
        return out
    out["gradient"] = gradient(vlm, samples, layer=0, answers=texts, **kw)
    try:
        out["attention"] = attention(vlm, samples, **kw)
    except InterpError:  # no eager attention weights, or cross-attention fusion
        pass
    return out


def section(vlm: VLM, samples: list[Sample], opts: AuditOptions) -> Section:
    """The share of positive mass inside the object's box vs random boxes per method and answer
    group, the methods' rank agreement, and maps of grounded and prior-driven answers."""
    sec = STUDY.new_section("Where in the image does the answer come from?", samples)
    results = _methods(vlm, samples, opts)
    if vlm.remote:
        sec.reason = "on NDIF: occlusion only (gradient and attention maps left out)"
    occ = results["occlusion"]
    group = {sid: answer_group(s, a) for sid, s, a in zip(occ.sample_ids, samples, occ.answers)}
    shares = []
    for name, result in results.items():
        one = object_shares(result, samples).assign(method=name)
        one["group"] = one["sample_id"].map(group)  # attention ignores the answer: occlusion's
        shares.append(one)
    first = shares[0]
    overall = mass_table(first.assign(all="all"), by="all").iloc[0]
    by_group = {g: frame for g, frame in first.groupby("group")}
    counts = {g: int((np.array(list(group.values())) == g).sum()) for g in ("grounded", "prior")}

    def inside(g: str) -> float | None:
        frame = by_group.get(g)
        return None if frame is None or frame["inside"].dropna().empty else frame["inside"].mean()

    agree = {
        name: float(np.nanmedian(rank_agreement(r, occ)["spearman"]))
        for name, r in results.items()
        if name != "occlusion"
    }
    sec.numbers = {
        "inside": headline(overall["inside"]),
        "random": headline(overall["random"]),
        "n_grounded": counts["grounded"],
        "n_prior": counts["prior"],
        "inside_grounded": headline(inside("grounded")),
        "inside_prior": headline(inside("prior")),
        **{f"{name}_agreement": headline(rho) for name, rho in agree.items()},
    }
    num = {k: show(v) for k, v in sec.numbers.items()}
    labelled = any(g != "unlabelled" for g in group.values())
    verdict = (
        f"Hiding one region at a time (swapped for a black image's), {num['inside']} of the "
        f"positive occlusion mass falls inside the object's box, against {num['random']} inside "
        "a random box of the same size."
    )
    if labelled:
        verdict += (
            f" Grounded answers (the drawn colour, {num['n_grounded']}): {num['inside_grounded']}"
            f" in the box; prior-driven answers (the prior colour of a counterfactual drawing, "
            f"{num['n_prior']}): {num['inside_prior']}."
        )
    else:
        sec.reason = (
            "these samples carry no labels that tell a grounded answer from a prior-driven one "
            "(the demo world's 'counterfactual' flag and 'prior_answer'); no groups are shown"
        )
    verdict += " Median rank agreement with occlusion over the 16 regions: " + ", ".join(
        f"{name} {num[f'{name}_agreement']}" for name in agree
    )
    sec.verdict = verdict + "."
    table = pd.concat([mass_table(s).assign(method=s["method"].iloc[0]) for s in shares])
    sec.add_table(
        "Share of positive mass in the object's box, per method and answer group",
        table.set_index(["method", "group"]),
    )
    if labelled:
        for g, what in (("grounded", "Grounded answer"), ("prior", "Prior-driven answer")):
            picked = [i for i, sid in enumerate(occ.sample_ids) if group[sid] == g][:SHOWN]
            for i in picked:
                fig = plot_attribution(list(results.values()), samples[i])
                sec.add_figure(f"{what}: {samples[i].question} → {occ.answers[i]!r}", fig)
    sec.add_figure("Occlusion maps", plot_attribution_grid(occ, samples))
    return sec


STUDY = Study("attribute", "Where in the image", 70, select, section, LABELS)

__all__ = ["LABELS", "STUDY", "section", "select"]
