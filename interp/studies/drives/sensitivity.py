"""Reference and prompt sensitivity (Supplementary Sec. 10): the drives under other null
images and null questions, and their agreement with the base setting."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from interp.conditions import Condition, Part, stable_seed
from interp.edits import check_edits
from interp.encoding import warn_unknown_tokens
from interp.reprs import Summary
from interp.samples import Sample, ensure_samples
from interp.store import substore
from probes.stats import pearson

from .analysis import _pad
from .contexts import (
    DRIVES,
    LN2,
    NEUTRAL_PROMPT,
    Context,
    _check_common,
    _check_matches,
    _check_null_visual,
    _compose,
    _mismatched_partners,
    _null_context,
    _null_image_name,
    _question_part,
    _visual_of,
)
from .measure import _measure, _partner_prints, drives_options
from .result import CausalDrives

if TYPE_CHECKING:
    from interp.edits import Intervention
    from interp.model import VLM
    from interp.options import RunOptions


@dataclass(repr=False)
class Sensitivity(Summary):
    """The drives under other null sources, next to the base setting.

    Attributes:
        base: the drives under the base null image and question.
        variants: ``"<null image> | <null question>"`` → the drives under that setting.
    """

    base: CausalDrives
    variants: dict[str, CausalDrives]

    def _repr_head(self) -> dict[str, Any]:
        return {"n": len(self.base), "variants": list(self.variants)}

    def to_frame(self) -> pd.DataFrame:
        """Per setting (base first): each drive's mean over all answer tokens (``mean_visual_drive``,
        ...), and its agreement
        with the base setting — the mean over samples of the sample-wise Pearson r between the
        two trajectories (samples with fewer than 2 tokens or a constant trajectory left out), and
        the Pearson r over all tokens pooled."""
        rows = []
        mask = self.base.mask
        for label, dr in {"base": self.base, **self.variants}.items():
            row: dict[str, Any] = {
                "setting": label,
                "null_image": dr.null_image,
                "null_question": dr.null_question or "(empty)",
            }
            for name in DRIVES:
                mine, base = dr.drive(name), self.base.drive(name)
                row[f"mean_{name}"] = float(mine[mask].mean())
                r = [pearson(mine[i, mask[i]], base[i, mask[i]]) for i in range(len(self.base))]
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    row[f"r_{name}"] = float(np.nanmean(r)) if not np.all(np.isnan(r)) else np.nan
                row[f"r_pooled_{name}"] = pearson(mine[mask], base[mask])
            rows.append(row)
        return pd.DataFrame(rows)


def drive_sensitivity(
    vlm: VLM,
    samples: Sequence[Sample],
    base: CausalDrives,
    *,
    null_images: Sequence[str] = ("black", "mismatched"),
    null_questions: Sequence[str] = (NEUTRAL_PROMPT,),
    edits: Sequence[Intervention] | None = None,
    visual: str | None = None,
    run: RunOptions | None = None,
    **options: Any,
) -> Sensitivity:
    """Reference and prompt sensitivity (Supplementary Sec. 10): the drives with V = ∅ replaced
    by each of ``null_images`` (the base null question kept), and with Q = ∅ replaced by each of
    ``null_questions`` (the base null image kept). Only P0 and the visual drive's (VCD's) context
    change, so each setting costs 2 forwards per sample; the prefix and question drives keep
    their numerators (re-referenced to the new P0) and PMI_Q its full-input term.

    ``visual`` is what V is, by default as in ``base``: with ``"video"`` the null images are null
    videos (``"blind"``: ``no_video``, ``"black"`` / ``"mean"``: ``null_video`` frames,
    ``"mismatched"``: the next sample's different video), as in :func:`causal_drives`.

    ``run`` is how it runs (:class:`~interp.options.RunOptions`; default ``batch_size`` 32; each
    setting keeps its own store under ``store``, not sharded); its fields may also be given as
    keywords.

    Raises:
        RemoteError: a remote run holding edits (before any request).
        DriveError: other samples than the base's, or another ``visual`` than the base's;
        ConditionError: an unknown null image, or one without a video counterpart
        (``"white"``, ``"noise"``) when V is the video.
    """
    opts = drives_options(run, options)
    samples = ensure_samples(samples)
    _check_matches(samples, base)
    visual = _visual_of(base, visual)
    settings = [(_null_image_name(n), base.null_question) for n in null_images]
    for name, _ in settings:
        _check_null_visual(name, visual)
    for q in null_questions:
        _question_part(q)
        settings.append((base.null_image, q.strip()))
        if q.strip():
            warn_unknown_tokens(vlm, [Sample(q.strip())])
    settings = [s for s in dict.fromkeys(settings) if s != (base.null_image, base.null_question)]
    _check_common(opts.batch_size, 1)
    edits = check_edits(vlm, edits)
    if any(n == "mismatched" for n, _ in settings):
        partners = _mismatched_partners(samples, visual)
    else:
        partners = None
    variants: dict[str, CausalDrives] = {}
    width = base.mask.shape[1]
    # the visual drive's cumulative natural-log numerator, and per token
    base_visual_num = (base.visual_drive + base.p0) * LN2
    base_visual_tok = np.diff(np.nan_to_num(base_visual_num), axis=1, prepend=0.0)
    for nimg, nq in settings:
        qpart = _question_part(nq)

        def contexts(i: int, s: Sample, qpart: Part = qpart, nimg: str = nimg) -> list[Context]:
            video = s.video if visual == "video" else None
            return [
                (
                    _compose(s.question, s.image, f"{s.id}|vcd", video),
                    Condition(Part("full"), qpart),
                ),
                _null_context(s, i, samples, nimg, qpart, partners, "p0", visual),
            ]

        lps = _measure(
            vlm,
            samples,
            base.token_ids,
            contexts,
            name="drive_sensitivity",
            # image stores keep their settings (and resume)
            settings={"null_image": nimg, "null_question": nq}
            | ({"visual": visual} if visual == "video" else {}),
            extras=_partner_prints(samples, partners if nimg == "mismatched" else None),
            edits=edits,
            run=replace(
                opts,
                store=substore(opts.store, f"sensitivity-{nimg}-{stable_seed(nq):08x}"),
                shard=None,
            ),
        )
        p0 = _pad([np.cumsum(lp[1]) / LN2 for lp in lps], width)
        visual_num = _pad([np.cumsum(lp[0]) / LN2 for lp in lps], width)
        visual_tok = _pad([lp[0] for lp in lps], width)
        shift = base.p0 - p0
        pmi_q = None
        if base.pmi_q is not None:
            pmi_q = base.pmi_q + (base_visual_tok - visual_tok) / LN2
        variants[f"{nimg} | {nq or '(empty)'}"] = CausalDrives(
            sample_ids=list(base.sample_ids),
            token_ids=base.token_ids,
            tokens=base.tokens,
            answers=base.answers,
            p0=p0,
            prefix_drive=base.prefix_drive + shift,
            question_drive=base.question_drive + shift,
            visual_drive=visual_num - p0,
            mask=base.mask.copy(),
            pmi_q=pmi_q,
            pmi_p=base.pmi_p,
            support_ids=list(base.support_ids),
            null_image=nimg,
            null_question=nq,
            forwards_per_sample=2,
            visual=visual,
        )
    return Sensitivity(base, variants)


__all__ = [
    "Sensitivity",
    "drive_sensitivity",
]
