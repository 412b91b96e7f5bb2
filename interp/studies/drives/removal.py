"""Source removal (Sec. 5.4, Table 3, Fig. 4): the fixed answers' token probabilities with the
question, the image or the generated prefix removed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from jaxtyping import Bool

from interp.conditions import Condition, Part
from interp.reprs import Summary
from interp.samples import Sample
from interp.store import substore
from probes.trajectories import relative_bins

from .analysis import _pad
from .contexts import (
    FULL,
    Context,
    _compose,
    _null_context,
)
from .measure import _answer_mask, _measure, _partner_prints, _setup, drives_options

if TYPE_CHECKING:
    from interp.edits import Intervention
    from interp.model import VLM
    from interp.options import RunOptions


REMOVALS: tuple[tuple[str, str], ...] = (
    ("Q", "no_question"),
    ("V", "no_image"),
    ("A<t", "no_prefix"),
)


def _decreased(removed: pd.Series, full: pd.Series) -> np.ndarray:
    """Where ``removed < full`` by more than fp32 rounding (relative 1e-5)."""
    a, b = removed.to_numpy(), full.to_numpy()
    return (a < b) & ~np.isclose(a, b, rtol=1e-5, atol=0.0)


@dataclass(repr=False)
class SourceRemoval(Summary):
    """Token probabilities of fixed answers with each source removed (Table 3, Fig. 4).

    Attributes:
        probs: ``full``, ``no_question`` (Q = ∅), ``no_image`` (V = ∅, the question kept) and
            ``no_prefix`` (each token scored right after the prompt): ``[N, T]`` probabilities,
            NaN past each answer's end.
        mask: True at answer tokens.
    """

    sample_ids: list[str]
    probs: dict[str, np.ndarray]
    mask: Bool[np.ndarray, "n t"]
    null_image: str = "blind"
    null_question: str = ""

    def _repr_head(self) -> dict[str, Any]:
        return {"n": len(self.sample_ids), "removed": list(self.probs)}

    def per_sample(self) -> pd.DataFrame:
        """Each sample's mean token probability under each condition."""
        return pd.DataFrame(
            {"sample_id": self.sample_ids}
            | {k: np.nanmean(np.where(self.mask, v, np.nan), axis=1) for k, v in self.probs.items()}
        )

    def to_frame(self) -> pd.DataFrame:
        """Table 3: per removed source, P_full and P_remove (the means over samples of each
        sample's mean token probability) and the share of samples whose mean token probability
        drops when the source is removed (beyond fp32 rounding: a one-token answer has no prefix
        to remove, and its two probabilities are equal up to how the forwards were batched)."""
        per = self.per_sample()
        rows = []
        for source, key in REMOVALS:
            rows.append(
                {
                    "removed": source,
                    "p_full": float(per["full"].mean()),
                    "p_remove": float(per[key].mean()),
                    "fraction_decreased": float(_decreased(per[key], per["full"]).mean()),
                    "n": len(per),
                }
            )
        return pd.DataFrame(rows)

    def binned(self, bins: int = 10) -> dict[str, np.ndarray]:
        """Each condition's token probabilities in relative-position bins ``[N, bins]``."""
        return {k: relative_bins(np.nan_to_num(v), self.mask, bins) for k, v in self.probs.items()}


def source_removal(
    vlm: VLM,
    samples: Sequence[Sample],
    *,
    targets: Sequence[str | Sequence[int]] | None = None,
    null_image: str = "blind",
    null_question: str = "",
    max_new_tokens: int = 24,
    edits: Sequence[Intervention] | None = None,
    visual: str = "image",
    run: RunOptions | None = None,
    **options: Any,
) -> SourceRemoval:
    """Source-removal sanity check (Sec. 5.4, Table 3, Fig. 4): the fixed answer's token
    probabilities P(a_t | a_<t, v, q) under the full input, without Q (the null question),
    without V (the null image, question kept) and without the prefix (P(a_t | v, q)): 4
    teacher-forced forwards per sample.

    Args: as :func:`causal_drives` (``targets`` default to the greedy answers; with
    ``visual="video"`` "without V" removes or nulls the video; ``run``: the
    :class:`~interp.options.RunOptions`, default ``batch_size`` 32, whose fields may also be
    given as keywords).

    Raises: as :func:`causal_drives` (a remote run holding edits: RemoteError, before any request).
    """
    opts = drives_options(run, options)
    samples, visual, nimg, qpart, _, ids, edits, partners = _setup(
        vlm, samples, opts, targets, null_image, null_question, max_new_tokens, edits, visual
    )

    def contexts(i: int, s: Sample) -> list[Context]:
        v = s.video if visual == "video" else None
        return [
            (_compose(s.question, s.image, f"{s.id}|full", v), FULL),
            (_compose(s.question, s.image, f"{s.id}|noq", v), Condition(Part("full"), qpart)),
            _null_context(s, i, samples, nimg, None, partners, "nov", visual),
            (
                _compose(s.question, s.image, f"{s.id}|nop", v),
                Condition(Part("full"), None, "removed"),
            ),
        ]

    lps = _measure(
        vlm,
        samples,
        ids,
        contexts,
        name="source_removal",
        settings={"null_image": nimg, "null_question": qpart.arg or ""}
        | ({"visual": visual} if visual == "video" else {}),
        extras=_partner_prints(samples, partners),
        edits=edits,
        run=replace(opts, store=substore(opts.store, "removal")),
    )
    mask = _answer_mask(ids)
    width = mask.shape[1]
    names = ("full", "no_question", "no_image", "no_prefix")
    probs = {n: _pad([np.exp(lp[c]) for lp in lps], width) for c, n in enumerate(names)}
    return SourceRemoval([str(s.id) for s in samples], probs, mask, nimg, qpart.arg or "")


__all__ = [
    "REMOVALS",
    "SourceRemoval",
    "source_removal",
]
