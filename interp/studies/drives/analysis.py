"""Pure functions on measured log-probabilities and drives: the drives from each context's
log-probabilities, the k-means clusters of the trajectories (Fig. 3) and the prefix-visual
imbalance S_PV (Table 4)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from jaxtyping import Float, Int

from interp.errors import DriveError, TooFewSamplesError
from interp.reprs import Summary
from probes.stats import auprc, auroc, cliffs_delta, cohens_d, mean_difference
from probes.trajectories import kmeans

from .contexts import DRIVES, LN2
from .result import CausalDrives

# -- the drives from the log-probabilities --------------------------------------------------------


def _logsumexp(x: np.ndarray, axis: int = 0) -> np.ndarray:
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    return np.squeeze(m, axis=axis) + np.log(np.sum(np.exp(x - m), axis=axis))


def _pad(rows: Sequence[np.ndarray], width: int) -> np.ndarray:
    out = np.full((len(rows), width), np.nan)
    for i, r in enumerate(rows):
        out[i, : len(r)] = r
    return out


def _drive_arrays(
    lps: list[np.ndarray], k: int, pmi: bool, marginal: bool = False
) -> dict[str, np.ndarray | list[np.ndarray]]:
    """The drives from each sample's ``[C, T]`` natural-log context probabilities, contexts in
    the order prefix drive PCD (K), question drive QCD (K), visual drive VCD, P0 [, full, full
    without prefix [, the sample's image with each support question (K)]]."""
    logw = -math.log(k)
    names = ("p0", *DRIVES, "pmi_q", "pmi_p", "pmi_q_marginal")
    out: dict[str, list[np.ndarray]] = {n: [] for n in names}
    for lp in lps:
        p0 = np.cumsum(lp[2 * k + 1])
        out["p0"].append(p0 / LN2)
        out["prefix_drive"].append((_logsumexp(lp[:k] + logw) - p0) / LN2)
        cum = np.cumsum(lp[k : 2 * k], axis=1)
        out["question_drive"].append((_logsumexp(cum + logw) - p0) / LN2)
        out["visual_drive"].append((np.cumsum(lp[2 * k]) - p0) / LN2)
        if pmi:
            out["pmi_q"].append((lp[2 * k + 2] - lp[2 * k]) / LN2)
            out["pmi_p"].append((lp[2 * k + 2] - lp[2 * k + 3]) / LN2)
        if marginal:
            # log P(a_t | a_<t, v) = log Σ_k P(a_≤t | v, q_k) − log Σ_k P(a_<t | v, q_k)
            upto = np.cumsum(lp[2 * k + 4 : 3 * k + 4], axis=1)
            denom = _logsumexp(upto) - _logsumexp(upto - lp[2 * k + 4 : 3 * k + 4])
            out["pmi_q_marginal"].append((lp[2 * k + 2] - denom) / LN2)
    return out  # type: ignore[return-value]


# -- trajectory clusters (Fig. 3, Supplementary Sec. 11) --------------------------------------------


@dataclass(repr=False)
class DriveClusters(Summary):
    """k-means clusters of the binned drive trajectories.

    Attributes:
        labels: cluster of each sample, 0-based (0 = the largest); the frames and figures number
            clusters from 1.
        profiles: each cluster's mean trajectories ``[k, 3, bins]`` in bits, drives in the order
            of :data:`DRIVES` (question, visual, prefix).
        features: the samples' 30-dimensional (for 10 bins) vectors before standardisation.
    """

    sample_ids: list[str]
    labels: Int[np.ndarray, " n"]
    profiles: Float[np.ndarray, "k three bins"]
    features: Float[np.ndarray, "n d"]
    sizes: Int[np.ndarray, " k"]
    inertia: float

    def _repr_head(self) -> dict[str, Any]:
        return {"n": len(self.sample_ids), "k": self.k, "inertia": self.inertia}

    @property
    def k(self) -> int:
        return len(self.sizes)

    @property
    def bins(self) -> int:
        return int(self.profiles.shape[2])

    @property
    def shares(self) -> Float[np.ndarray, " k"]:
        return self.sizes / self.sizes.sum()

    def to_frame(self) -> pd.DataFrame:
        """Per cluster: size, share, and each drive's mean over the first three bins (early),
        the last three (late) and all bins (``question_drive_early``, ...)."""
        rows = []
        third = max(1, self.bins * 3 // 10)
        for c in range(self.k):
            row: dict[str, Any] = {
                "cluster": c + 1,
                "n": int(self.sizes[c]),
                "share": self.shares[c],
            }
            for d, name in enumerate(DRIVES):
                prof = self.profiles[c, d]
                row[f"{name}_early"] = float(prof[:third].mean())
                row[f"{name}_late"] = float(prof[-third:].mean())
                row[f"{name}_mean"] = float(prof.mean())
            rows.append(row)
        return pd.DataFrame(rows)

    def sample_frame(self) -> pd.DataFrame:
        """Each sample's cluster (numbered from 1)."""
        return pd.DataFrame({"sample_id": self.sample_ids, "cluster": self.labels + 1})


def cluster_drives(
    drives: CausalDrives, k: int = 3, *, bins: int = 10, seed: int = 0, n_init: int = 10
) -> DriveClusters:
    """Cluster generations by their drive trajectories (Sec. 5.2, Supplementary Sec. 11):
    z_i = [QCD_{i,1:10}, VCD_{i,1:10}, PCD_{i,1:10}] (relative-position bins), standardised per
    dimension, k-means with ``k`` clusters (scikit-learn, ``n_init`` restarts, ``seed``).

    Raises:
        TooFewSamplesError: fewer samples than clusters.
    """
    feats = drives.features(bins)
    fit = kmeans(feats, k, seed=seed, n_init=n_init)
    return DriveClusters(
        sample_ids=list(drives.sample_ids),
        labels=fit.labels,
        profiles=fit.profiles.reshape(k, len(DRIVES), bins),
        features=feats,
        sizes=fit.sizes,
        inertia=fit.inertia,
    )


# -- prefix-visual imbalance (Sec. 5.5, Table 4, Supplementary Sec. 12) ------------------------------


@dataclass(repr=False)
class Imbalance(Summary):
    """How well S_PV (and the answer-level visual drive) separate prior-driven from grounded
    generations.

    Attributes:
        scores: per labelled sample: ``sample_id``, ``label``, ``positive`` (bool), ``s_pv``,
            ``mean_prefix_drive``, ``mean_visual_drive``, ``answer_visual_drive``.
        table: per score, AUROC and AUPRC with bootstrap CIs (the score oriented so that a
            larger value predicts the positive label: S_PV, −answer-level visual drive, −mean
            visual drive).
        effects: per score, the group means, their difference with a CI, Cohen's d and Cliff's
            delta with CIs (positive minus negative group, unoriented values).
    """

    scores: pd.DataFrame
    table: pd.DataFrame
    effects: pd.DataFrame
    positive: str = "prior_driven"
    negative: str = "grounded"

    def _repr_head(self) -> dict[str, Any]:
        return {"n": len(self.scores), "positive": self.positive, "negative": self.negative}

    def to_frame(self) -> pd.DataFrame:
        """Per score: AUROC and AUPRC with their intervals, beside the group effects."""
        return self.table.merge(self.effects, on="score")


IMBALANCE_SCORES: tuple[tuple[str, str, float], ...] = (
    ("S_PV", "s_pv", 1.0),
    ("answer-level visual drive (VCD)", "answer_visual_drive", -1.0),
    ("mean visual drive (VCD)", "mean_visual_drive", -1.0),
)


def prefix_visual_imbalance(
    drives: CausalDrives,
    labels: Sequence[Any],
    *,
    positive: str = "prior_driven",
    negative: str = "grounded",
    ci: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
) -> Imbalance:
    """S_PV = mean_t PCD − mean_t VCD (Sec. 5.5; mean prefix drive − mean visual drive) as a score for ``positive`` (prior-driven) vs
    ``negative`` (visually grounded) generations: AUROC and AUPRC with percentile bootstrap CIs
    (stratified by label), Cohen's d and Cliff's delta (Table 4, Supplementary Sec. 12); the
    same for the answer-level visual drive (VCD_T, the whole answer) and the mean visual drive,
    where *lower* visual drive predicts prior-driven. Samples with other labels (``other``, None) are left out.

    Raises:
        DriveError: not one label per sample.
        EmptyGroupError / TooFewSamplesError: fewer than two samples in a group.
    """
    labels = list(labels)
    if len(labels) != len(drives):
        raise DriveError(f"{len(labels)} labels for {len(drives)} samples; give one per sample")
    keep = np.array([lab in (positive, negative) for lab in labels])
    frame = drives.sample_frame()
    frame["label"] = labels
    columns = ["s_pv", "mean_prefix_drive", "mean_visual_drive", "answer_visual_drive"]
    scores = frame.loc[keep, ["sample_id", "label", *columns]]
    scores = scores.reset_index(drop=True)
    scores.insert(2, "positive", scores["label"] == positive)
    y = scores["positive"].to_numpy()
    for name, n_group in ((positive, int(y.sum())), (negative, int((~y).sum()))):
        if n_group < 2:
            raise TooFewSamplesError(
                f"{n_group} samples labelled {name!r}; AUROC and effect sizes need at least 2 in "
                "each group (label more samples)"
            )
    table, effects = [], []
    for title, column, sign in IMBALANCE_SCORES:
        x = scores[column].to_numpy(dtype=np.float64)
        roc = auroc(sign * x, y, ci=ci, n_boot=n_boot, seed=seed)
        prc = auprc(sign * x, y, ci=ci, n_boot=n_boot, seed=seed)
        table.append(
            {
                "score": title,
                "auroc": roc.value,
                "auroc_low": roc.low,
                "auroc_high": roc.high,
                "auprc": prc.value,
                "auprc_low": prc.low,
                "auprc_high": prc.high,
                "positive_rate": float(y.mean()),
                "n_positive": int(y.sum()),
                "n_negative": int((~y).sum()),
            }
        )
        a, b = x[y], x[~y]
        diff = mean_difference(a, b, ci=ci, n_boot=n_boot, seed=seed)
        d = cohens_d(a, b, ci=ci, n_boot=n_boot, seed=seed)
        delta = cliffs_delta(a, b, ci=ci, n_boot=n_boot, seed=seed)
        effects.append(
            {
                "score": title,
                f"mean_{positive}": float(a.mean()),
                f"mean_{negative}": float(b.mean()),
                "difference": diff.value,
                "difference_low": diff.low,
                "difference_high": diff.high,
                "cohens_d": d.value,
                "cohens_d_low": d.low,
                "cohens_d_high": d.high,
                "cliffs_delta": delta.value,
                "cliffs_delta_low": delta.low,
                "cliffs_delta_high": delta.high,
            }
        )
    return Imbalance(scores, pd.DataFrame(table), pd.DataFrame(effects), positive, negative)


__all__ = [
    "DriveClusters",
    "IMBALANCE_SCORES",
    "Imbalance",
    "cluster_drives",
    "prefix_visual_imbalance",
]
