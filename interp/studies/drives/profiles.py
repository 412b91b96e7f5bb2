"""Fig. 2's normalised drive profiles and the stability of the drives over the support size K
(Supplementary Sec. 9.1).

The paper draws, behind the mean QCD, VCD and PCD curves over the relative decoding position,
"stacked background areas [that] visualize their normalized profiles"; its text gives no formula.
Stacked areas that fill the plot are shares that sum to 1 at each position, so we read the
normalised profile of drive s in position bin b as its share of the three mean drives there:

    share_s(b) = max(m_s(b), 0) / Σ_{s'} max(m_{s'}(b), 0),   m_s(b) = mean over samples of the
    drive averaged in bin b (Supplementary Sec. 11's bins),

a drive whose mean is negative (the source lowers the answer's probability below P0) taking no
share. Unlike the cumulative drives themselves, which grow with t as log-ratios of products, a
share can fall while the drive still rises: the paper's F1 ("PCD rises, QCD and VCD fall") is a
statement about these profiles (:meth:`DriveProfiles.trend`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from interp.figures import subplots
from interp.options import RunOptions
from interp.reprs import Summary
from interp.samples import Sample, ensure_samples
from probes.stats import block_bootstrap, pearson

from .constants import COLORS, NAMES
from .contexts import DRIVES, draw_support
from .result import CausalDrives

if TYPE_CHECKING:
    from interp.model import VLM


def normalised_shares(means: np.ndarray) -> np.ndarray:
    """``[3, bins]`` mean drives → ``[3, bins]`` shares: the positive part of each, divided by
    the positive parts' sum per bin (NaN where every mean is ≤ 0)."""
    pos = np.clip(np.asarray(means, dtype=np.float64), 0.0, None)
    total = pos.sum(axis=0, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, pos / np.where(total > 0, total, 1.0), np.nan)


@dataclass(repr=False)
class DriveProfiles(Summary):
    """Fig. 2's normalised drive profiles with block-bootstrap intervals.

    Attributes:
        binned: ``[N, 3, bins]`` each sample's drives (:data:`DRIVES` order) averaged per bin.
        frame: one row per (bin, drive): ``bin``, ``position`` (bin centre), ``drive``, ``mean``
            (bits), ``share`` and its 95 % interval ``low``, ``high``.
        blocks: the bootstrap blocks (None: each sample).
    """

    binned: np.ndarray
    frame: pd.DataFrame
    blocks: np.ndarray | None
    n_boot: int
    seed: int

    def _repr_head(self) -> dict[str, Any]:
        return {"rows": len(self.frame), "n_boot": self.n_boot}

    def to_frame(self) -> pd.DataFrame:
        """One row per (bin, drive): the mean drive in bits and its share with a 95 % interval."""
        return self.frame

    def wide(self) -> pd.DataFrame:
        """Bins as rows, each drive's share as a column."""
        return self.frame.pivot(index="position", columns="drive", values="share")[list(DRIVES)]

    def trend(self) -> pd.DataFrame:
        """Each drive's share in the last bin minus in the first, with a block-bootstrap 95 %
        interval (same resamples as the profile); ``direction`` ``rises`` / ``falls`` when the
        interval excludes 0, else ``none``."""
        n = len(self.binned)

        def change(rows: np.ndarray) -> np.ndarray:
            s = normalised_shares(self.binned[rows].mean(axis=0))
            return s[:, -1] - s[:, 0]

        value = change(np.arange(n))
        low, high = block_bootstrap(change, n, self.blocks, self.n_boot, seed=self.seed)
        return pd.DataFrame(
            {
                "drive": list(DRIVES),
                "first": normalised_shares(self.binned.mean(axis=0))[:, 0],
                "last": normalised_shares(self.binned.mean(axis=0))[:, -1],
                "change": value,
                "low": low,
                "high": high,
                "direction": [
                    "rises" if lo > 0 else "falls" if hi < 0 else "none"
                    for lo, hi in zip(low, high)
                ],
            }
        )

    def plot(self, title: str | None = None) -> Figure:
        """Fig. 2's normalised drive profiles: each drive's share of the three mean drives per
        relative-position bin as stacked areas, and each share with its 95 % block-bootstrap
        interval as a line and band on top."""
        w = self.frame
        fig, ax = subplots(figsize=(5.5, 3.6))
        x = np.sort(w["position"].unique())
        shares = [w[w["drive"] == d]["share"].to_numpy() for d in DRIVES]
        ax.stackplot(
            x,
            np.nan_to_num(shares),
            colors=[COLORS[d] for d in DRIVES],
            alpha=0.25,
            labels=[NAMES[d] for d in DRIVES],
        )
        for d in DRIVES:
            c = w[w["drive"] == d]
            ax.plot(x, c["share"], color=COLORS[d], lw=1.5)
            ax.fill_between(x, c["low"], c["high"], color=COLORS[d], alpha=0.25, lw=0)
        ax.set_ylim(0, 1)
        ax.set_xlabel("relative decoding position")
        ax.set_ylabel("share of the mean drives")
        ax.set_title(title or f"normalised drive profiles (n={len(self.binned)})", fontsize=10)
        ax.legend(fontsize=8, loc="upper right")
        fig.tight_layout()
        return fig


def drive_profiles(
    drives: CausalDrives,
    *,
    bins: int = 10,
    blocks: Sequence[Any] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> DriveProfiles:
    """Fig. 2's normalised profiles (module docstring) of ``drives`` in ``bins`` relative-position
    bins, each share with a 95 % block-bootstrap interval: whole samples (or whole ``blocks``,
    one label per sample) are resampled, so a sample's trajectory moves as one.

    Raises:
        EmptyInputError: a sample without tokens; TooFewSamplesError: fewer than 2 blocks.
    """
    b = drives.binned(bins)
    n = len(b)
    labels = None if blocks is None else np.asarray(blocks)
    means = b.mean(axis=0)
    shares = normalised_shares(means)
    low, high = block_bootstrap(
        lambda rows: normalised_shares(b[rows].mean(axis=0)), n, labels, n_boot, seed=seed
    )
    rows = [
        {
            "bin": j + 1,
            "position": (j + 0.5) / bins,
            "drive": name,
            "mean": float(means[d, j]),
            "share": float(shares[d, j]),
            "low": float(low[d, j]),
            "high": float(high[d, j]),
        }
        for j in range(bins)
        for d, name in enumerate(DRIVES)
    ]
    return DriveProfiles(b, pd.DataFrame(rows), labels, n_boot, seed)


def support_stability(
    vlm: VLM,
    samples: Sequence[Sample],
    *,
    pool: Sequence[Sample] | None = None,
    ks: Sequence[int] = (4, 8, 16),
    draws: int = 2,
    targets: Sequence[str | Sequence[int]] | None = None,
    seed: int = 0,
    run: RunOptions | None = None,
    **options: Any,
) -> pd.DataFrame:
    """Stability of the drives over the support size K (Supplementary Sec. 9.1): for each of
    ``draws`` independent supports (drawn from ``pool`` with seeds ``seed``, ``seed + 1``, ...,
    each of size max(ks); the support of size K is its first K pairs) and each K, the question
    and prefix drives of ``samples``' answers (the same targets throughout) and their Pearson
    correlation per sample with the reference: the largest K of the first draw (``targets``:
    as :func:`causal_drives`; default the greedy answers, computed once). The paper
    (8 targets, K ∈ {4, 8, 16}, two supports) reports QCD 1.000 and PCD 0.997 at K = 4.

    ``run`` is how each :func:`causal_drives` runs (:class:`~interp.options.RunOptions`, default
    ``batch_size`` 32); its fields may also be given as keywords, and the other keywords are
    :func:`causal_drives`'s (``null_image=``, ``edits=`` ...).

    Returns:
        One row per (draw, k): ``r_question_drive``, ``r_prefix_drive`` (means over samples of
        the per-sample Pearson r; a constant trajectory — one-token answers — gives no r and is
        left out), ``n`` (samples with an r) and ``mean_abs_diff_*`` (mean ``|D − D_ref|`` in bits).

    Raises:
        SupportError: a K larger than the pool; other errors as :func:`causal_drives` (a
            remote run holding edits: RemoteError, before any request).
    """
    from .measure import causal_drives, drives_options

    names = {f.name for f in fields(RunOptions)}
    opts = drives_options(run, {k: v for k, v in options.items() if k in names})
    kw = {k: v for k, v in options.items() if k not in names}
    samples = ensure_samples(samples)
    pool = ensure_samples(pool) if pool is not None else samples
    ks = sorted(int(k) for k in ks)
    top = ks[-1]
    supports = [draw_support(pool, top, seed=seed + d) for d in range(draws)]
    results: dict[tuple[int, int], CausalDrives] = {}
    for d, sup in enumerate(supports):
        for k in ks:
            res = causal_drives(
                vlm,
                samples,
                support=sup[:k],
                targets=targets,
                pmi=False,
                run=opts,
                **kw,
            )
            targets = res.token_ids if targets is None else targets  # fixed after the first
            results[(d, k)] = res
    ref = results[(0, top)]
    rows = []
    for (d, k), res in results.items():
        row: dict[str, Any] = {"draw": d, "k": k}
        for name in ("question_drive", "prefix_drive"):
            rs, diffs = [], []
            for i in range(len(samples)):
                n = int(ref.mask[i].sum())
                x, y = res.drive(name)[i, :n], ref.drive(name)[i, :n]
                diffs.append(np.abs(x - y).mean())
                if n >= 2 and np.ptp(x) > 0 and np.ptp(y) > 0:
                    rs.append(pearson(x, y))
            row[f"r_{name}"] = float(np.mean(rs)) if rs else float("nan")
            row[f"mean_abs_diff_{name}"] = float(np.mean(diffs))
            row["n"] = len(rs)
        rows.append(row)
    return pd.DataFrame(rows)


__all__ = ["DriveProfiles", "drive_profiles", "normalised_shares", "support_stability"]
