"""The D_VT − D_T gap per layer with inference at the level of the independent unit.

The paper's two-sample test (:func:`probes.vip.two_sample_test`, Lemma F.1) takes every sample as
an independent draw. When samples come in clusters — the wordings of one image share the image,
so their distances and, mostly, their group move together — its standard error is too small and
its p-values too low. :func:`clustered_two_sample_test` is the version for new claims:

- the per-layer gap of Eq. 2's group means, ``gap_l = mean_{i in D_VT} d_il − mean_{i in D_T} d_il``;
- a percentile **cluster-bootstrap** 95 % interval of it: each resample draws as many clusters as
  there are, with replacement, and takes every sample of each drawn cluster, whichever group it is
  in. The group labels can differ within a cluster (one wording of an image changes its answer
  without the image, another does not), so a permutation that moves whole clusters between the
  groups does not apply; resampling clusters and recomputing both group means does;
- a two-sided bootstrap p-value per layer, the inversion of that interval family:
  ``p_l = min(1, 2 min(1 + #{gap*_l ≤ 0}, 1 + #{gap*_l ≥ 0}) / (B + 1))`` over the ``B``
  resamples that keep both groups, so ``p_l < 1 − ci`` matches the interval excluding 0;
- the p-values adjusted over the layers (:func:`probes.multiple.adjust`, Holm by default).

The smallest p-value is ``2 / (B + 1)``; with Holm over ``m`` layers a layer can only be declared
at ``α`` when ``2 m / (B + 1) < α``, hence the default ``B = 10 000`` (enough for 80 layers); a
smaller ``B`` that cannot reach ``α`` is refused.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from jaxtyping import Float, Shaped

from .distances import ArrayLike, as_distance_matrix
from .errors import EmptyGroupError, TooFewSamplesError, VIPParameterError
from .multiple import CORRECTIONS, Correction, adjust
from .stats import as_binary_labels


@dataclass(frozen=True)
class ClusteredTwoSampleResult:
    """Per-layer gap D_VT − D_T with its cluster-bootstrap interval; arrays have shape ``[L+1]``.

    Attributes:
        n, n_vt, n_t: samples in all and in each group.
        n_clusters: independent units resampled (``n`` when each sample is its own);
            n_clusters_vt, n_clusters_t: clusters with at least one sample in that group.
        mean_vt, mean_t: the group means of Eq. 2; difference: ``mean_vt − mean_t``.
        low, high: the percentile interval of the gap at level ``ci``.
        p_value: the bootstrap p-value of gap = 0 (module docstring); p_adjusted: adjusted over
            the layers by ``correction``.
        n_boot: resamples drawn; n_used: those that kept both groups (the others are left out).
        alpha: the level ``significant`` uses.
    """

    n: int
    n_vt: int
    n_t: int
    n_clusters: int
    n_clusters_vt: int
    n_clusters_t: int
    mean_vt: Float[np.ndarray, " layer"]
    mean_t: Float[np.ndarray, " layer"]
    difference: Float[np.ndarray, " layer"]
    low: Float[np.ndarray, " layer"]
    high: Float[np.ndarray, " layer"]
    p_value: Float[np.ndarray, " layer"]
    p_adjusted: Float[np.ndarray, " layer"]
    correction: str
    ci: float
    alpha: float
    n_boot: int
    n_used: int

    @property
    def conclusive(self) -> np.ndarray:
        """Per layer: whether the interval excludes 0 (no correction for the layers)."""
        return (self.low > 0) | (self.high < 0)

    @property
    def significant(self) -> np.ndarray:
        """Per layer: ``p_adjusted < alpha`` (the claim that survives the correction)."""
        return np.nan_to_num(self.p_adjusted, nan=1.0) < self.alpha

    @property
    def at_resolution(self) -> np.ndarray:
        """Per layer: no resample fell on the other side of 0, so ``p_value`` is the resolution
        ``2 / (n_used + 1)`` of the bootstrap, an upper bound rather than a measured tail."""
        return np.isclose(self.p_value, 2 / (self.n_used + 1), rtol=1e-12)

    @property
    def unit(self) -> str:
        """The unit of inference in words."""
        if self.n_clusters == self.n:
            return f"{self.n} samples taken as independent"
        return f"{self.n_clusters} clusters of {self.n} samples resampled whole"

    def words(self, layer: int, digits: int = 4) -> str:
        """``"+0.2345 [+0.2001, +0.2702], Holm p = 0.012"`` for one layer; ``p ≤`` where no
        resample fell on the other side of 0, so the p-value is the resolution
        ``2 / (n_used + 1)`` (times the correction's factor), not a measured tail."""

        def num(x: float) -> str:
            return f"{x:+.{digits}f}"

        name = {"holm": "Holm", "bh": "BH"}.get(self.correction, "unadjusted")
        return (
            f"{num(self.difference[layer])} [{num(self.low[layer])}, {num(self.high[layer])}], "
            f"{name} p {'≤' if self.at_resolution[layer] else '='} {self.p_adjusted[layer]:.2g}"
        )

    def to_frame(self) -> pd.DataFrame:
        """One row per layer index 0..L: the group means, the gap, its interval and p-values."""
        frame = pd.DataFrame(
            {
                "mean_vt": self.mean_vt,
                "mean_t": self.mean_t,
                "gap": self.difference,
                "gap_low": self.low,
                "gap_high": self.high,
                "p_cluster": self.p_value,
                f"p_{self.correction}": self.p_adjusted,
                "n_clusters": self.n_clusters,
            }
        )
        frame.index.name = "layer"
        return frame


def _codes(clusters: Sequence[Any] | np.ndarray | None, n: int) -> tuple[np.ndarray, int]:
    """Each sample's cluster as an index ``0..K-1`` in order of first appearance (the order
    :func:`probes.bootstrap.block_bootstrap` draws from), and ``K``."""
    if clusters is None:
        return np.arange(n), n
    labels = np.asarray(clusters, dtype=object).reshape(-1)
    if len(labels) != n:
        raise ValueError(f"clusters has {len(labels)} labels for {n} samples")
    index: dict[Any, int] = {}
    codes = np.array([index.setdefault(v, len(index)) for v in labels.tolist()], dtype=np.intp)
    return codes, len(index)


def clustered_two_sample_test(
    distances: Float[ArrayLike, "n layer"],
    in_vt: Shaped[ArrayLike, " n"] | Sequence[Any],
    clusters: Sequence[Any] | np.ndarray | None = None,
    *,
    n_boot: int = 10_000,
    ci: float = 0.95,
    alpha: float = 0.05,
    correction: Correction | str = "holm",
    seed: int = 0,
) -> ClusteredTwoSampleResult:
    """Per layer, the gap ``mean_{D_VT} d_l − mean_{D_T} d_l`` with a cluster-bootstrap interval,
    a bootstrap p-value and that p-value adjusted over the layers (see the module docstring).

    ``clusters``: one label per sample (e.g. the image a wording is about); None = each sample
    its own cluster (the ordinary bootstrap, as independent as the paper's test takes them).
    Resample ``b`` draws ``rng.integers(0, K, K)`` (``rng = numpy.random.default_rng(seed)``, one
    call per resample, clusters in order of first appearance, as
    :func:`probes.bootstrap.block_bootstrap`) and weighs each cluster by how often it was drawn:
    ``gap*_l = Σ_k w_k S^VT_kl / Σ_k w_k n^VT_k − Σ_k w_k S^T_kl / Σ_k w_k n^T_k`` with ``S^G_kl``
    the sum of cluster ``k``'s distances in group ``G`` and ``n^G_k`` its count. A resample that
    loses a group is left out (``n_used`` counts the rest).

    Raises:
        EmptyGroupError: a group is empty. TooFewSamplesError: fewer than 2 clusters, or every
            resample lost a group.
        VIPParameterError: ``ci`` or ``alpha`` outside (0, 1), ``n_boot < 1``, an unknown
            ``correction``, or ``n_boot`` too small for the corrected p-values to reach ``alpha``.
        ValueError: wrong shapes, NaN distances, non-binary ``in_vt``, ``clusters`` of another
            length.
    """
    if not 0 < ci < 1:
        raise VIPParameterError(f"ci must lie in (0, 1), got {ci}")
    if not 0 < alpha < 1:
        raise VIPParameterError(f"alpha must lie in (0, 1), got {alpha}")
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 1:
        raise VIPParameterError(f"n_boot must be an int >= 1, got {n_boot!r}")
    if correction not in CORRECTIONS:
        raise VIPParameterError(
            f"unknown correction {correction!r}: use one of "
            + ", ".join(repr(c) for c in CORRECTIONS)
        )
    d = as_distance_matrix(distances)
    n, width = d.shape
    mask = as_binary_labels(in_vt, n, name="in_vt")
    for name, members in (("D_VT", mask), ("D_T", ~mask)):
        if not members.any():
            raise EmptyGroupError(
                f"the {name} group is empty ({n} samples): the gap compares two groups"
            )
    family = width if correction != "none" else 1
    if correction == "holm" and 2 * family / (n_boot + 1) >= alpha:
        need = int(np.ceil(2 * family / alpha))
        raise VIPParameterError(
            f"with n_boot={n_boot} the smallest p-value is 2/(n_boot+1), so Holm over {family} "
            f"layers can never reach alpha={alpha}; use n_boot >= {need}"
        )
    codes, k = _codes(clusters, n)
    if k < 2:
        raise TooFewSamplesError(f"a cluster bootstrap needs at least 2 clusters, got {k}")
    # per-cluster sums and counts of each group: [K, L+1] and [K]
    s_vt = np.zeros((k, width))
    s_t = np.zeros((k, width))
    np.add.at(s_vt, codes[mask], d[mask])
    np.add.at(s_t, codes[~mask], d[~mask])
    c_vt = np.bincount(codes[mask], minlength=k).astype(np.float64)
    c_t = np.bincount(codes[~mask], minlength=k).astype(np.float64)

    rng = np.random.default_rng(seed)
    draws = np.empty((n_boot, width))
    chunk = 1000
    for start in range(0, n_boot, chunk):
        size = min(chunk, n_boot - start)
        w = np.stack([np.bincount(rng.integers(0, k, k), minlength=k) for _ in range(size)])
        w = w.astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            draws[start : start + size] = (w @ s_vt) / (w @ c_vt)[:, None] - (w @ s_t) / (w @ c_t)[
                :, None
            ]
    kept = draws[np.isfinite(draws).all(axis=1)]
    if len(kept) == 0:
        raise TooFewSamplesError(
            "every resample lost one of the groups: too few clusters hold each group"
        )
    tail = (1 - ci) / 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        low = np.quantile(kept, tail, axis=0)
        high = np.quantile(kept, 1 - tail, axis=0)
    below = (kept <= 0).sum(axis=0)
    above = (kept >= 0).sum(axis=0)
    p = np.minimum(1.0, 2 * (1 + np.minimum(below, above)) / (len(kept) + 1))
    mean_vt, mean_t = d[mask].mean(axis=0), d[~mask].mean(axis=0)
    return ClusteredTwoSampleResult(
        n=n,
        n_vt=int(mask.sum()),
        n_t=int((~mask).sum()),
        n_clusters=k,
        n_clusters_vt=int((c_vt > 0).sum()),
        n_clusters_t=int((c_t > 0).sum()),
        mean_vt=mean_vt,
        mean_t=mean_t,
        difference=mean_vt - mean_t,
        low=low,
        high=high,
        p_value=p,
        p_adjusted=adjust(p, correction),
        correction=correction,
        ci=ci,
        alpha=alpha,
        n_boot=int(n_boot),
        n_used=len(kept),
    )


__all__ = ["ClusteredTwoSampleResult", "clustered_two_sample_test"]
