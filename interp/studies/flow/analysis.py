"""Curves, tests and the causal integration layer of the information-flow study.

The **causal integration layer** is the first layer of the last window whose image → text
knockout still lowers the answer's probability, significantly and by a non-negligible amount.
For every image → text edge (image → question, image → last) and every window, Δ over the
samples is tested against 0 with a two-sided one-sample t-test (:func:`scipy.stats.ttest_1samp`);
the p-values of all these tests together (edges × windows) are corrected by **Holm's step-down
method** (:func:`probes.multiple.holm`; family-wise error ≤ ``alpha``). A window counts when some image → text edge is
significant after the correction, its mean Δ is a drop, and the drop is at least ``min_fraction``
(default 0.1) of the largest mean drop of any tested edge and window (an effect-size floor, as
for the VIP rules of :mod:`probes.vip`). The last window that counts is the answer: blocking the
image there still costs the answer, in every later window it does not, or only negligibly. Its
first layer is reported because the next window (which drops that layer) no longer matters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from jaxtyping import Float
from scipy import stats

from interp.reprs import Summary
from probes.multiple import holm
from probes.stats import mean_ci

IMAGE_EDGES = ("image>question", "image>last")


def one_sample_tests(delta: Float[np.ndarray, "n w"]) -> tuple[np.ndarray, np.ndarray]:
    """Per window (column): the t statistic and two-sided p-value of mean Δ = 0 over the
    samples. A column with no spread has p = 1 when it is all zero (the knockout changes
    nothing) and p = 0 otherwise; fewer than two samples give NaN."""
    d = np.asarray(delta, dtype=np.float64)
    t = np.full(d.shape[1], np.nan)
    p = np.full(d.shape[1], np.nan)
    if d.shape[0] < 2:
        return t, p
    for j in range(d.shape[1]):
        col = d[:, j]
        if np.ptp(col) == 0:
            t[j], p[j] = (0.0, 1.0) if col[0] == 0 else (np.inf * np.sign(col[0]), 0.0)
            continue
        res = stats.ttest_1samp(col, 0.0)
        t[j], p[j] = float(res.statistic), float(res.pvalue)
    return t, p


@dataclass(repr=False)
class IntegrationLayer(Summary):
    """The causal integration layer and the tests it rests on.

    Attributes:
        layer: the first layer of the last window that counts, or None (none does).
        window: that window's layers, or None.
        tests: one row per (edge, window): ``edge``, ``start``, ``end``, ``mean``, ``t``,
            ``p``, ``p_holm``, ``significant`` and ``counts`` (significant, a drop, and at least
            ``min_fraction`` of the largest drop).
        alpha: the family-wise level.
        group: the samples' group the tests ran on (None: all samples).
        min_fraction: the effect-size floor, a fraction of the largest drop.
    """

    layer: int | None
    window: tuple[int, ...] | None
    tests: pd.DataFrame
    alpha: float
    group: str | None = None
    min_fraction: float = 0.1

    def _repr_head(self) -> dict[str, Any]:
        return {
            "layer": self.layer,
            "window": self.window,
            "alpha": self.alpha,
            "group": self.group,
        }

    def __str__(self) -> str:
        who = f" ({self.group})" if self.group else ""
        if self.layer is None:
            return (
                f"causal integration layer{who}: none (no image → text knockout lowers the "
                f"answer's probability at α = {self.alpha}, Holm over {len(self.tests)} tests, "
                f"by at least {self.min_fraction:g} of the largest drop)"
            )
        span = f"{self.window[0]}–{self.window[-1]}" if self.window else ""
        return (
            f"causal integration layer{who}: {self.layer} (last window that counts {span}: a "
            f"significant drop — two-sided one-sample t-tests, Holm over {len(self.tests)} tests, "
            f"α = {self.alpha} — of at least {self.min_fraction:g} of the largest drop)"
        )


def integration_layer(
    delta: dict[str, np.ndarray],
    windows: Sequence[Sequence[int]],
    *,
    edges: Sequence[str] = IMAGE_EDGES,
    alpha: float = 0.05,
    min_fraction: float = 0.1,
    group: str | None = None,
) -> IntegrationLayer:
    """The causal integration layer from Δ arrays (edge → ``[N, n_windows]``), under the rule of
    the module docstring, with an effect-size floor.

    A window counts when, for some image → text edge, (a) its Holm-adjusted p-value is below
    ``alpha``, (b) its mean Δ is negative (blocking the image *lowers* the answer's probability),
    and (c) ``|mean Δ| >= min_fraction * D_max``, where ``D_max`` is the largest mean drop over the
    tested edges and windows. Significance alone is not enough: with a few hundred samples a
    0.01-nat change somewhere past the real integration point is significant too (on demo-smol's
    faint-object items a +0.013 window at layer 26 did so, beside a −0.76 drop at layer 24).
    ``min_fraction=0`` keeps (a) and (b) only.

    Raises:
        ValueError: none of ``edges`` is in ``delta``, ``alpha`` outside (0, 1) or
            ``min_fraction`` outside [0, 1].
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if not 0 <= min_fraction <= 1:
        raise ValueError(f"min_fraction must be in [0, 1], got {min_fraction}")
    used = [e for e in edges if e in delta]
    if not used:
        raise ValueError(
            f"the integration layer needs an image → text edge ({', '.join(edges)}); "
            f"measured: {', '.join(delta)}"
        )
    rows = []
    for edge in used:
        d = np.asarray(delta[edge], dtype=np.float64)
        t, p = one_sample_tests(d)
        for j, w in enumerate(windows):
            rows.append(
                {
                    "edge": edge,
                    "start": int(w[0]),
                    "end": int(w[-1]),
                    "mean": float(d[:, j].mean()) if len(d) else np.nan,
                    "t": t[j],
                    "p": p[j],
                }
            )
    tests = pd.DataFrame(rows)
    tests["p_holm"] = holm(tests["p"].to_numpy())
    tests["significant"] = tests["p_holm"] < alpha
    largest = float(max(0.0, -tests["mean"].min())) if len(tests) else 0.0
    tests["counts"] = (
        tests["significant"] & (tests["mean"] < 0) & (-tests["mean"] >= min_fraction * largest)
    )
    hits = tests[tests["counts"]]
    if hits.empty:
        return IntegrationLayer(None, None, tests, alpha, group, min_fraction)
    last = int(hits["start"].max())
    window = next(tuple(int(v) for v in w) for w in windows if int(w[0]) == last)
    return IntegrationLayer(last, window, tests, alpha, group, min_fraction)


@dataclass(repr=False)
class Flow(Summary):
    """Δ = log p(answer | knockout in the window) − log p(answer) per sample, edge and window.

    Attributes:
        delta: edge name → ``[N, n_windows]`` (natural log, summed over the answer's tokens).
        windows: the windows' decoder layers (1..L).
        base: ``[N]`` log p(answer) without any knockout.
        groups: ``[N]`` each sample's group (``D_VT`` / ``D_T``, a label's value, or ``all``).
        sample_ids, answers: per sample; ``answers`` are the scored targets.
        answer_mode: ``"given"`` or ``"greedy"``.
        split: what ``groups`` come from (``"agreement"``, a label, None).
        n_layers: the model's decoder layers.
    """

    delta: dict[str, np.ndarray]
    windows: list[tuple[int, ...]]
    base: np.ndarray
    groups: np.ndarray
    sample_ids: list[str]
    answers: list[str]
    answer_mode: str = "given"
    split: str | None = None
    n_layers: int = 0
    notes: list[str] = field(default_factory=list)

    def _repr_head(self) -> dict[str, Any]:
        return {
            "n": len(self),
            "edges": list(self.delta),
            "windows": len(self.windows),
            "n_layers": self.n_layers,
        }

    def __len__(self) -> int:
        return len(self.sample_ids)

    @property
    def edges(self) -> list[str]:
        return list(self.delta)

    @property
    def group_names(self) -> list[str]:
        return sorted(set(self.groups.tolist()))

    def to_frame(self) -> pd.DataFrame:
        """One row per (sample, edge, window): ``sample_id``, ``group``, ``answer``, ``edge``,
        ``start``, ``end``, ``base_logprob``, ``delta``."""
        rows = []
        for edge, d in self.delta.items():
            for i, sid in enumerate(self.sample_ids):
                for j, w in enumerate(self.windows):
                    rows.append(
                        {
                            "sample_id": sid,
                            "group": self.groups[i],
                            "answer": self.answers[i],
                            "edge": edge,
                            "start": w[0],
                            "end": w[-1],
                            "base_logprob": float(self.base[i]),
                            "delta": float(d[i, j]),
                        }
                    )
        return pd.DataFrame(rows)

    def curves(self, *, ci: float = 0.95, n_boot: int = 1000) -> pd.DataFrame:
        """Mean Δ per (group, edge, window) with its bootstrap interval over the samples
        (:func:`probes.bootstrap.mean_ci`); group ``"all"`` holds every sample."""
        rows = []
        names = ["all", *[g for g in self.group_names if g != "all"]]
        for group in names:
            keep = np.ones(len(self), bool) if group == "all" else self.groups == group
            for edge, d in self.delta.items():
                for j, w in enumerate(self.windows):
                    est = mean_ci(d[keep, j], ci=ci, n_boot=n_boot)
                    rows.append(
                        {
                            "group": group,
                            "edge": edge,
                            "start": w[0],
                            "end": w[-1],
                            "n": int(keep.sum()),
                            "mean": est.value,
                            "low": est.low,
                            "high": est.high,
                        }
                    )
        return pd.DataFrame(rows)

    def integration_layer(
        self,
        *,
        alpha: float = 0.05,
        min_fraction: float = 0.1,
        group: str | None = None,
        edges: Sequence[str] = IMAGE_EDGES,
    ) -> IntegrationLayer:
        """The causal integration layer over all samples, or over one group's
        (:func:`integration_layer`).

        Raises:
            ValueError: an unknown group, or no image → text edge was measured.
        """
        delta = self.delta
        if group is not None:
            if group not in self.group_names:
                raise ValueError(f"unknown group {group!r}; groups: {', '.join(self.group_names)}")
            keep = self.groups == group
            delta = {e: d[keep] for e, d in delta.items()}
        return integration_layer(
            delta, self.windows, edges=edges, alpha=alpha, min_fraction=min_fraction, group=group
        )


__all__ = [
    "IMAGE_EDGES",
    "Flow",
    "IntegrationLayer",
    "holm",
    "integration_layer",
    "one_sample_tests",
]
