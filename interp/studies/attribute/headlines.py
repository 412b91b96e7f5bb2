"""The attribution study's headline numbers — how much positive mass falls in the object's box,
against a random box of its size, overall and for grounded and prior-driven answers — each with
its n and a 95% interval, and the sentences that state them: written once, read by the audit's
section (:mod:`interp.studies.attribute.audit`) and the ``interp attribute`` summary
(:mod:`interp.studies.attribute.report`).

An interval resamples whole images where the samples carry the demo world's ``meta["group"]``
(:func:`interp.studies.audit.report.clusters`), answers otherwise; a difference whose interval
holds 0, or two group intervals that overlap, are worded as inconclusive.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from interp.headlines import (
    Headlines,
    Number,
    bracket,
    clusters,
    holds,
    mean_interval,
    unit_words,
    with_interval,
)
from interp.samples import Sample


def ends(numbers: Mapping[str, Number], key: str) -> tuple[float, float]:
    """The interval of ``key`` as floats (NaN for a missing end)."""
    low, high = numbers[f"{key}_low"], numbers[f"{key}_high"]
    return (
        float("nan") if low is None else float(low),
        float("nan") if high is None else float(high),
    )


def mass_headlines(
    shares: pd.DataFrame,
    samples: Sequence[Sample],
    counts: Mapping[str, int] | None = None,
    method: str = "occlusion",
    labelled: bool | None = None,
    how: str = "",
) -> Headlines:
    """From :func:`~.analysis.object_shares` (one method): the mean share of positive mass in the
    object's box, in a random box of its size and their paired difference over the answers with
    a box; and the share in the box for grounded and for prior-driven answers (``counts``: the
    answers of each group, those without a box included; counted from ``shares["group"]`` when
    not given). Each with its 95% interval; the groups are stated where ``labelled`` (default:
    some answer in ``shares`` is labelled, :func:`~.analysis.answer_group`). ``how``: the
    words that open the first sentence (how the regions were hidden)."""
    groups = clusters(samples)
    group_of = dict(zip((s.id for s in samples), groups or []))

    def units(frame: pd.DataFrame) -> list[object] | None:
        return None if groups is None else [group_of[i] for i in frame["sample_id"]]

    if counts is None:
        counts = {g: int((shares["group"] == g).sum()) for g in ("grounded", "prior")}
    nums: dict[str, Number] = {"n_boxes": int(shares["inside"].notna().sum())}
    if groups is not None:
        nums["n_images"] = len(set(groups))
    for key, est in (
        ("inside", mean_interval(shares["inside"], units(shares))),
        ("random", mean_interval(shares["random"], units(shares))),
        (
            "inside_minus_random",
            mean_interval(shares["inside"], units(shares), paired_with=shares["random"]),
        ),
    ):
        with_interval(nums, key, est.value, est.low, est.high)
    nums["n_grounded"], nums["n_prior"] = counts["grounded"], counts["prior"]
    by_group = dict(iter(shares.groupby("group")))
    for g in ("grounded", "prior"):
        frame = by_group.get(g)
        if frame is None or frame["inside"].dropna().empty:
            with_interval(nums, f"inside_{g}", None, None, None)
        else:
            est = mean_interval(frame["inside"], units(frame))
            with_interval(nums, f"inside_{g}", est.value, est.low, est.high)
    over = unit_words(f"{nums['n_boxes']} answers", None if groups is None else nums["n_images"])
    text = (
        f"{how or f'By {method}'}, {bracket(nums, 'inside')} of the positive {method} mass falls inside the "
        f"object's box, against {bracket(nums, 'random')} inside a random box of the same size "
        f"(difference {bracket(nums, 'inside_minus_random')}"
        + ("; inconclusive, it holds 0" if holds(*ends(nums, "inside_minus_random"), 0.0) else "")
        + f"; 95% intervals over {over})."
    )
    if labelled is None:
        labelled = bool((shares["group"] != "unlabelled").any())
    if labelled:
        g_low, g_high = ends(nums, "inside_grounded")
        p_low, p_high = ends(nums, "inside_prior")
        overlap = not (g_low > p_high or p_low > g_high)  # NaN bounds: nothing shown
        inconclusive = "; the two intervals overlap: no difference shown" if overlap else ""
        if nums["inside_grounded"] is None or nums["inside_prior"] is None:
            inconclusive = "; one group has no answer with a box: no comparison"
        text += (
            f" Grounded answers (the drawn colour, n = {nums['n_grounded']}): "
            f"{bracket(nums, 'inside_grounded')} in the box; prior-driven answers (the prior "
            f"colour of a counterfactual drawing, n = {nums['n_prior']}): "
            f"{bracket(nums, 'inside_prior')}{inconclusive}."
        )
    return Headlines(nums, text)


__all__ = ["ends", "mass_headlines"]
