"""Randomized-intervention recovery (Sec. 5.4, Eq. 15, Fig. 5): how well QCD and PCD (against
the PMI baselines) recover a reference built from held-out contexts."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from jaxtyping import Bool, Float

from interp.edits import check_edits
from interp.errors import DriveError, SupportError
from interp.reprs import Summary
from interp.samples import Sample, ensure_samples
from interp.store import substore
from probes.stats import block_bootstrap
from probes.trajectories import relative_bins

from .analysis import _logsumexp, _pad
from .contexts import (
    LN2,
    Context,
    _check_common,
    _check_images,
    _check_matches,
    _other_visuals,
    _visual_of,
)
from .measure import _measure, drives_options
from .result import CausalDrives

if TYPE_CHECKING:
    from interp.edits import Intervention
    from interp.model import VLM
    from interp.options import RunOptions

# (intervention, drive, its PMI baseline) of Fig. 5; the table names the drive by its symbol
RECOVERED: tuple[tuple[str, str, str], ...] = (
    ("question", "question_drive", "pmi_q"),
    ("prefix", "prefix_drive", "pmi_p"),
)
SYMBOLS = {"question_drive": "QCD", "prefix_drive": "PCD"}
BASELINES = {"pmi_q": "PMI_Q", "pmi_p": "PMI_P", "pmi_q_marginal": "PMI_Q (marginal)"}


@dataclass(repr=False)
class Recovery(Summary):
    """Recovery of the randomized-intervention reference G(t) by the drives and by PMI.

    Attributes:
        g_q: G_Q(t) = log2 (1/M) Σ_m Π_{i≤t} P(a_i | a_<i, v_m, q) − log2 P0(a≤t): the question
            fixed, images of M held-out contexts.
        g_p: G_P(t) = log2 (1/M) Σ_m P(a_t | a_<t, v_m, q_m) − log2 P0(a≤t): the prefix fixed,
            M held-out (image, question) pairs.
        errors: ``|D(t) − G(t)|`` per token for ``question_drive`` and ``pmi_q`` (against G_Q)
            and ``prefix_drive`` and ``pmi_p`` (against G_P), ``[N, T]``.
        context_ids: the held-out contexts' ids.
    """

    sample_ids: list[str]
    g_q: Float[np.ndarray, "n t"]
    g_p: Float[np.ndarray, "n t"]
    errors: dict[str, np.ndarray]
    mask: Bool[np.ndarray, "n t"]
    context_ids: list[str] = field(default_factory=list)
    k: int = 0

    def _repr_head(self) -> dict[str, Any]:
        return {"n": len(self.sample_ids), "k": self.k, "contexts": self.m}

    @property
    def m(self) -> int:
        return len(self.context_ids)

    def per_target(self) -> pd.DataFrame:
        """``Err(D) = (1/T) Σ_t |D(t) − G(t)|`` (Eq. 15) per target, for the question drive (QCD),
        PMI_Q, the prefix drive (PCD) and PMI_P (``err_question_drive``, ...)."""
        return pd.DataFrame(
            {"sample_id": self.sample_ids}
            | {
                f"err_{k}": np.nanmean(np.where(self.mask, v, np.nan), axis=1)
                for k, v in self.errors.items()
            }
        )

    def to_frame(self) -> pd.DataFrame:
        """Per intervention (question, prefix): mean Err of the drive and of PMI over targets,
        the reduction of the mean (1 − mean Err(drive) / mean Err(PMI)), the mean of per-target
        reductions, and the share of targets where the drive's error is lower."""
        per = self.per_target()
        rows = []
        pairs = list(RECOVERED)
        if "pmi_q_marginal" in self.errors:
            pairs.insert(1, ("question", "question_drive", "pmi_q_marginal"))
        for source, drive, base in pairs:
            d, p = per[f"err_{drive}"].to_numpy(), per[f"err_{base}"].to_numpy()
            with np.errstate(divide="ignore", invalid="ignore"):
                each = 1.0 - d / p
            rows.append(
                {
                    "intervention": source,
                    "drive": SYMBOLS[drive],
                    "err_drive": float(d.mean()),
                    "baseline": BASELINES[base],
                    "err_pmi": float(p.mean()),
                    "reduction_of_means": float(1.0 - d.mean() / p.mean()),
                    "mean_reduction": float(np.nanmean(each)),
                    "share_drive_wins": float(np.mean(d < p)),
                    "n_targets": len(d),
                    "m": self.m,
                    "k": self.k,
                }
            )
        return pd.DataFrame(rows)

    def binned(self, bins: int = 10) -> dict[str, np.ndarray]:
        """Each error in relative-position bins ``[N, bins]``."""
        return {k: relative_bins(np.nan_to_num(v), self.mask, bins) for k, v in self.errors.items()}

    def binned_ci(
        self,
        bins: int = 10,
        blocks: Sequence[Any] | None = None,
        n_boot: int = 1000,
        seed: int = 0,
    ) -> pd.DataFrame:
        """Fig. 5's curves with the paper's 95 % block-bootstrap intervals: per relative-position
        bin and error (``question_drive``, ``pmi_q``, ``prefix_drive``, ``pmi_p``), the mean
        ``|D − G|`` over targets and its percentile interval from resampling whole blocks
        (:func:`probes.bootstrap.block_bootstrap`): ``blocks`` gives each target's block (the paper's
        are its ten K = 20 support blocks); by default each target is a block, its whole
        trajectory resampled as one. Columns ``bin``, ``position``, ``error``, ``mean``,
        ``low``, ``high``."""
        rows = []
        for name, b in self.binned(bins).items():
            low, high = block_bootstrap(
                lambda r, b=b: b[r].mean(axis=0), len(b), blocks, n_boot, seed=seed
            )
            mean = b.mean(axis=0)
            rows += [
                {"bin": j + 1, "position": (j + 0.5) / bins, "error": name}
                | {"mean": float(mean[j]), "low": float(low[j]), "high": float(high[j])}
                for j in range(bins)
            ]
        return pd.DataFrame(rows)


def recovery_error(
    vlm: VLM,
    samples: Sequence[Sample],
    drives: CausalDrives,
    *,
    contexts: Sequence[Sample] | None = None,
    m: int = 100,
    seed: int = 1,
    edits: Sequence[Intervention] | None = None,
    visual: str | None = None,
    run: RunOptions | None = None,
    **options: Any,
) -> Recovery:
    """Randomized-intervention recovery (Sec. 5.4, Eq. 15, Fig. 5): a held-out reference G(t)
    from M contexts outside the drives' support, and ``Err(D) = (1/T) Σ_t |D(t) − G(t)|`` for QCD vs
    PMI_Q (question fixed, images reassigned) and PCD vs PMI_P (prefix fixed, (image, question)
    pairs reassigned). 2M teacher-forced forwards per target; P0 is the drives'.

    Args:
        samples: the samples ``drives`` was computed on, in the same order.
        drives: a :func:`causal_drives` result with the PMI baselines.
        contexts: the held-out (image, question) contexts; default: ``m`` drawn with ``seed``
            from ``samples`` outside the drives' support.
        visual: what V is; default: as in ``drives`` (``"video"``: the contexts' videos are
            reassigned). A value other than the drives' is refused.
        run: how it runs (:class:`~interp.options.RunOptions`; default ``batch_size`` 32; the
            store gets the sub-folder ``recovery``); its fields may also be given as keywords.

    Raises:
        RemoteError: a remote run holding edits (before any request).
        DriveError: other samples than the drives', drives without PMI, or another ``visual``
            than the drives'.
        SupportError: ``m`` < 1 or more than the held-out samples available.
    """
    opts = drives_options(run, options)
    samples = ensure_samples(samples)
    _check_matches(samples, drives)
    visual = _visual_of(drives, visual)
    if drives.pmi_q is None or drives.pmi_p is None:
        raise DriveError(
            "recovery_error compares the drives with the PMI baselines: compute the drives with "
            "pmi=True"
        )
    _check_common(opts.batch_size, 1)
    if contexts is None:
        held = [s for s in samples if str(s.id) not in set(drives.support_ids)]
        if not isinstance(m, (int, np.integer)) or m < 1:
            raise SupportError(f"m must be an integer >= 1 (held-out contexts), got {m!r}")
        if m > len(held):
            raise SupportError(
                f"m={m} held-out contexts asked, but only {len(held)} samples lie outside the "
                f"support of K={drives.k}; lower m or pass contexts=..."
            )
        rng = np.random.default_rng(seed)
        ctx = [held[i] for i in sorted(rng.choice(len(held), size=int(m), replace=False).tolist())]
    else:
        ctx = list(contexts)
        if not ctx:
            raise SupportError("contexts is empty; give at least one held-out (image, question)")
    _check_images(ctx, "held-out context", visual)
    edits = check_edits(vlm, edits)
    M = len(ctx)

    def rows(i: int, s: Sample) -> list[Context]:
        out = _other_visuals(s, ctx, "gq", visual, own_question=True)
        return out + _other_visuals(s, ctx, "gp", visual, own_question=False)

    lps = _measure(
        vlm,
        samples,
        drives.token_ids,
        rows,
        name="recovery",
        settings={"contexts": [c.fingerprint() for c in ctx]}
        | ({"visual": visual} if visual == "video" else {}),
        edits=edits,
        run=replace(opts, store=substore(opts.store, "recovery")),
    )
    logw = -math.log(M)
    width = drives.mask.shape[1]
    g_q, g_p = [], []
    for i, lp in enumerate(lps):
        p0 = drives.p0[i, : lp.shape[1]] * LN2
        g_q.append((_logsumexp(np.cumsum(lp[:M], axis=1) + logw) - p0) / LN2)
        g_p.append((_logsumexp(lp[M:] + logw) - p0) / LN2)
    gq, gp = _pad(g_q, width), _pad(g_p, width)
    errors = {
        "question_drive": np.abs(drives.question_drive - gq),
        "pmi_q": np.abs(drives.pmi_q - gq),
        "prefix_drive": np.abs(drives.prefix_drive - gp),
        "pmi_p": np.abs(drives.pmi_p - gp),
    }
    if drives.pmi_q_marginal is not None:  # Eq. 24 as the paper writes it
        errors["pmi_q_marginal"] = np.abs(drives.pmi_q_marginal - gq)
    return Recovery(
        list(drives.sample_ids),
        gq,
        gp,
        errors,
        drives.mask.copy(),
        [str(c.id) for c in ctx],
        drives.k,
    )


__all__ = [
    "Recovery",
    "recovery_error",
]
