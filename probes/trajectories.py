"""Per-token trajectories of variable length: relative-position bins and k-means of the binned
profiles (numpy and scikit-learn; no torch).

Used by the temporal-causal-drive study ("Who Drives the Probability Game of VLMs? A Temporal
Causal Drive Evaluation Framework", Supplementary Sec. 11): each generation's per-token drives are
averaged in 10 equal bins of the relative decoding position, the three drives' bins are
concatenated into a 30-dimensional vector, the vectors are standardised and clustered with k-means
(k = 3).

**Bins of a short sequence.** Token t of a sequence of T tokens occupies the relative positions
[t/T, (t+1)/T); bin b covers [b/B, (b+1)/B). A bin's value is the mean of the piecewise-constant
trajectory over the bin — the tokens it overlaps, weighted by the length of the overlap. When T is
a multiple of B this is the plain mean of the T/B tokens in the bin; a sequence shorter than B
fills every bin (a token spanning several bins gives each of them its value), so no bin is empty.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from jaxtyping import Bool, Float, Int

from .errors import EmptyInputError, ProbeError, TooFewSamplesError


def bin_weights(length: int, bins: int = 10) -> Float[np.ndarray, "bins length"]:
    """``W[b, t]`` = share of bin b covered by token t of a sequence of ``length`` tokens
    (each row sums to 1).

    Raises:
        EmptyInputError: ``length`` < 1.
        ProbeError: ``bins`` < 1.
    """
    if length < 1:
        raise EmptyInputError(f"a trajectory needs at least one token, got length {length}")
    if bins < 1:
        raise ProbeError(f"bins must be >= 1, got {bins}")
    b = np.arange(bins, dtype=np.float64)
    t = np.arange(length, dtype=np.float64)
    lo = np.maximum(b[:, None] / bins, t[None, :] / length)
    hi = np.minimum((b[:, None] + 1) / bins, (t[None, :] + 1) / length)
    return np.clip(hi - lo, 0.0, None) * bins


def relative_bins(
    values: Float[np.ndarray, "n t"],
    mask: Bool[np.ndarray, "n t"],
    bins: int = 10,
) -> Float[np.ndarray, "n bins"]:
    """Each row's trajectory (its first ``mask.sum()`` entries) averaged in ``bins`` equal bins of
    the relative position (see the module docstring).

    Raises:
        EmptyInputError: a row without any token.
        ProbeError: ``mask`` is not a prefix mask (True then False) or values are not finite
            where ``mask`` is True.
    """
    values = np.asarray(values, dtype=np.float64)
    mask = np.asarray(mask, dtype=bool)
    if values.shape != mask.shape:
        raise ProbeError(f"values {values.shape} and mask {mask.shape} differ in shape")
    lengths = mask.sum(axis=1)
    out = np.empty((len(values), bins))
    for i, n in enumerate(lengths.tolist()):
        if n < 1:
            raise EmptyInputError(f"row {i} has no token (its mask is all False)")
        if not mask[i, :n].all():
            raise ProbeError(f"row {i}: the mask must be True for the first tokens, then False")
        row = values[i, :n]
        if not np.isfinite(row).all():
            raise ProbeError(f"row {i} holds a non-finite value inside its mask")
        out[i] = bin_weights(n, bins) @ row
    return out


def standardize(
    features: Float[np.ndarray, "n d"],
) -> tuple[Float[np.ndarray, "n d"], Float[np.ndarray, " d"], Float[np.ndarray, " d"]]:
    """Column-wise z-scores ``(x − mean) / std`` (population std, ddof = 0, as scikit-learn's
    ``StandardScaler``); a constant column gets std 1 (its z-scores are 0).

    Returns:
        the z-scores, the column means and the column stds used.
    """
    x = np.asarray(features, dtype=np.float64)
    mean = x.mean(axis=0)
    std = x.std(axis=0)
    std = np.where(std > 0, std, 1.0)
    return (x - mean) / std, mean, std


@dataclass
class KMeansResult:
    """k-means of standardised feature vectors.

    Attributes:
        labels: cluster of each row, numbered by size (0 = the largest cluster).
        centers: cluster centres in standardised units ``[k, d]`` (same numbering).
        profiles: the mean of each cluster's rows in the original units ``[k, d]``.
        sizes: rows per cluster.
        inertia: within-cluster sum of squared distances (standardised units).
        mean, std: the standardisation used.
    """

    labels: Int[np.ndarray, " n"]
    centers: Float[np.ndarray, "k d"]
    profiles: Float[np.ndarray, "k d"]
    sizes: Int[np.ndarray, " k"]
    inertia: float
    mean: Float[np.ndarray, " d"]
    std: Float[np.ndarray, " d"]

    @property
    def shares(self) -> Float[np.ndarray, " k"]:
        return self.sizes / self.sizes.sum()


def kmeans(
    features: Float[np.ndarray, "n d"], k: int = 3, *, seed: int = 0, n_init: int = 10
) -> KMeansResult:
    """Standardise ``features`` (:func:`standardize`) and run scikit-learn's ``KMeans`` with
    ``n_clusters=k``, ``n_init`` restarts and ``random_state=seed``; clusters are renumbered by
    size (largest first; ties by the lowest original label).

    Raises:
        ProbeError: ``k`` < 1 or non-finite features.
        TooFewSamplesError: fewer rows than clusters.
    """
    from sklearn.cluster import KMeans

    x = np.asarray(features, dtype=np.float64)
    if k < 1:
        raise ProbeError(f"k must be >= 1, got {k}")
    if x.ndim != 2 or len(x) < k:
        raise TooFewSamplesError(f"k-means with k={k} needs at least {k} rows, got {len(x)}")
    if not np.isfinite(x).all():
        raise ProbeError("k-means features hold NaN or infinite values")
    z, mean, std = standardize(x)
    fit = KMeans(n_clusters=k, n_init=n_init, random_state=seed).fit(z)
    raw = fit.labels_.astype(np.int64)
    counts = np.bincount(raw, minlength=k)
    order = sorted(range(k), key=lambda c: (-counts[c], c))
    relabel = np.empty(k, dtype=np.int64)
    relabel[order] = np.arange(k)
    labels = relabel[raw]
    profiles = np.stack(
        [
            x[labels == c].mean(axis=0) if (labels == c).any() else np.full(x.shape[1], np.nan)
            for c in range(k)
        ]
    )
    return KMeansResult(
        labels=labels,
        centers=np.asarray(fit.cluster_centers_, dtype=np.float64)[order],
        profiles=profiles,
        sizes=counts[order].astype(np.int64),
        inertia=float(fit.inertia_),
        mean=mean,
        std=std,
    )


__all__ = ["KMeansResult", "bin_weights", "kmeans", "relative_bins", "standardize"]
