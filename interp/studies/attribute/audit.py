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
from interp.studies.audit.report import (
    Labels,
    Section,
    bracket,
    clusters,
    holds,
    with_interval,
)
from probes.stats import block_bootstrap

from .analysis import answer_group, mass_table, object_box, object_shares, rank_agreement
from .figures import plot_attribution, plot_attribution_grid
from .headlines import ends, mass_headlines
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
        "inside_minus_random": "in the box minus in a random box",
        "n_boxes": "answers with an object box",
        "n_images": "images they are about (the unit resampled)",
    },
    suffixes={"_low": ", 95% interval low end", "_high": ", 95% interval high end"},
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
    out["gradient"] = gradient(vlm, samples, layer=0, answers=texts, **kw)
    try:
        out["attention"] = attention(vlm, samples, **kw)
    except InterpError:  # flash attention (no 4-D mask), or cross-attention fusion
        pass
    return out


def section(vlm: VLM, samples: list[Sample], opts: AuditOptions) -> Section:
    """The share of positive mass inside the object's box vs random boxes per method and answer
    group, the methods' rank agreement, and maps of grounded and prior-driven answers."""
    sec = STUDY.new_section("Where in the image does the answer come from?", samples)
    results = _methods(vlm, samples, opts)
    occ = results["occlusion"]
    group = {sid: answer_group(s, a) for sid, s, a in zip(occ.sample_ids, samples, occ.answers)}
    shares = []
    for name, result in results.items():
        one = object_shares(result, samples).assign(method=name)
        one["group"] = one["sample_id"].map(group)  # attention ignores the answer: occlusion's
        shares.append(one)
    first = shares[0]
    counts = {g: int((np.array(list(group.values())) == g).sum()) for g in ("grounded", "prior")}

    labelled = any(g != "unlabelled" for g in group.values())
    how = "Hiding one region at a time (swapped for a black image's)"
    head = mass_headlines(first, samples, counts, labelled=labelled, how=how)
    nums = head.numbers
    groups = clusters(samples)
    group_of = dict(zip((s.id for s in samples), groups or []))
    for name, r in results.items():
        if name == "occlusion":
            continue
        rho = rank_agreement(r, occ).assign(sample_id=occ.sample_ids)
        rho = rho[rho["spearman"].notna()].reset_index(drop=True)
        units = None if groups is None else [group_of[i] for i in rho["sample_id"]]
        value, low, high = _median_interval(rho["spearman"].to_numpy(float), units)
        with_interval(nums, f"{name}_agreement", value, low, high)
    sec.numbers = nums
    agree = [name for name in results if name != "occlusion"]
    verdict = head.text
    if not labelled:
        sec.reason = (
            "these samples carry no labels that tell a grounded answer from a prior-driven one "
            "(the demo world's 'counterfactual' flag and 'prior_answer'); no groups are shown"
        )
    verdict += " Median rank agreement with occlusion over the 16 regions: " + ", ".join(
        f"{name} {bracket(nums, f'{name}_agreement')}"
        + (" (inconclusive: it holds 0)" if holds(*ends(nums, f"{name}_agreement"), 0.0) else "")
        for name in agree
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


def _median_interval(values: np.ndarray, groups: list[object] | None) -> tuple[float, float, float]:
    """The median of ``values`` with its 95% percentile interval over resamples of whole groups
    (:func:`probes.bootstrap.block_bootstrap`); NaN bounds for fewer than 2 values or groups."""
    if len(values) == 0:
        return float("nan"), float("nan"), float("nan")
    value = float(np.median(values))
    if len(values) < 2 or (groups is not None and len(set(groups)) < 2):
        return value, float("nan"), float("nan")
    low, high = block_bootstrap(
        lambda rows: np.array([np.median(values[rows])]), len(values), groups
    )
    return value, float(low[0]), float(high[0])


STUDY = Study("attribute", "Where in the image", 70, select, section, LABELS)

__all__ = ["LABELS", "STUDY", "section", "select"]
