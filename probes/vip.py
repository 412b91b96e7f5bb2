"""The Visual Integration Point (VIP): a per-layer two-sample test and its change-point rule.

Inputs are per-sample, per-layer distances ``d(z_vis^l, z_blind^l)`` of shape ``[N, L+1]``
(``docs/conventions.md``: index 0 = input embeddings, index l = output of decoder layer l) and the agreement
split ``in_vt`` (True = D_VT, the answer changed when the image was removed).

- :func:`two_sample_test`: per layer, the group means of Eq. 2 and the statistic of Lemma F.1,
  ``t_l = (D_l(VT) - D_l(T)) / sigma_l``, ``sigma_l = sqrt(s_T^2/|D_T| + s_VT^2/|D_VT|)``.
- :func:`automatic_vip`: Eq. 9 of Appendix B.2, the smallest layer whose statistic reaches
  ``beta`` times the mean statistic of the layers before it, plus a significance floor.
- :class:`VIPDetector`: the same as a scikit-learn estimator, with a manual VIP option.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from jaxtyping import Float, Shaped
from scipy import special as _special
from scipy import stats as _sps
from sklearn.base import BaseEstimator

from .distances import ArrayLike, as_distance_matrix, as_float64
from .errors import EmptyGroupError, TooFewSamplesError
from .stats import as_binary_labels


class NoVIPWarning(UserWarning):
    """The automatic rule found no layer that qualifies as the VIP."""


@dataclass(frozen=True)
class TwoSampleResult:
    """Per-layer two-sample comparison of D_VT against D_T; every array has shape ``[L+1]``.

    ``statistic = difference / se`` where ``se > 0``. Where ``se == 0`` (both groups constant,
    e.g. index 0, whose states are identical with and without the image): ``statistic = 0`` and
    ``p_value = 1`` if the means are equal, else ``±inf`` and ``p_value = 0``.
    """

    n_vt: int
    n_t: int
    mean_vt: Float[np.ndarray, " layer"]
    mean_t: Float[np.ndarray, " layer"]
    std_vt: Float[np.ndarray, " layer"]
    std_t: Float[np.ndarray, " layer"]
    difference: Float[np.ndarray, " layer"]
    se: Float[np.ndarray, " layer"]
    statistic: Float[np.ndarray, " layer"]
    p_value: Float[np.ndarray, " layer"]

    @property
    def n_layers(self) -> int:
        """L, the number of decoder layers (the arrays hold L+1 entries)."""
        return len(self.statistic) - 1

    def to_frame(self) -> pd.DataFrame:
        """One row per layer index 0..L."""
        frame = pd.DataFrame(
            {
                "n_vt": self.n_vt,
                "n_t": self.n_t,
                "mean_vt": self.mean_vt,
                "mean_t": self.mean_t,
                "std_vt": self.std_vt,
                "std_t": self.std_t,
                "difference": self.difference,
                "se": self.se,
                "statistic": self.statistic,
                "p_value": self.p_value,
            }
        )
        frame.index.name = "layer"
        return frame


def two_sample_test(
    distances: Float[ArrayLike, "n layer"], in_vt: Shaped[ArrayLike, " n"] | Sequence[Any]
) -> TwoSampleResult:
    """Per-layer two-sample statistic of Lemma F.1 (Eq. 12) between D_VT and D_T.

    ``D_l(G) = mean_{i in G} d_il`` (Eq. 2), ``s_G`` the sample std (ddof=1),
    ``t_l = (D_l(VT) - D_l(T)) / sqrt(s_T^2/|D_T| + s_VT^2/|D_VT|)`` (Welch's form) and a
    two-sided normal p-value ``2 (1 - Phi(|t_l|))``. See :class:`TwoSampleResult` for the
    zero-variance convention.

    Raises:
        EmptyGroupError: every sample falls in one group.
        TooFewSamplesError: a group has a single sample (its variance is undefined).
        ValueError: wrong shapes, NaN distances or non-binary ``in_vt``.
    """
    d = as_distance_matrix(distances)
    mask = as_binary_labels(in_vt, d.shape[0], name="in_vt")
    groups = {"D_VT": d[mask], "D_T": d[~mask]}
    for name, g in groups.items():
        if len(g) == 0:
            same = "differ" if name == "D_T" else "agree"
            raise EmptyGroupError(
                f"the {name} group is empty: the answers with and without the image {same} for "
                f"all {d.shape[0]} samples, so the two groups cannot be compared; use more or "
                "more varied samples"
            )
        if len(g) < 2:
            raise TooFewSamplesError(
                f"the {name} group has 1 sample; the two-sample test needs at least 2 per group"
            )
    vt, t = groups["D_VT"], groups["D_T"]
    mean_vt, mean_t = vt.mean(axis=0), t.mean(axis=0)
    # A constant group has zero variance exactly; rounding of its mean would leave ~1e-33.
    var_vt = np.where(np.ptp(vt, axis=0) == 0, 0.0, vt.var(axis=0, ddof=1))
    var_t = np.where(np.ptp(t, axis=0) == 0, 0.0, t.var(axis=0, ddof=1))
    se = np.sqrt(var_t / len(t) + var_vt / len(vt))
    diff = mean_vt - mean_t
    with np.errstate(divide="ignore", invalid="ignore"):
        stat = np.where(se > 0, diff / np.where(se > 0, se, 1.0), np.sign(diff) * np.inf)
    stat = np.where((se == 0) & (diff == 0), 0.0, stat)
    p = _special.erfc(np.abs(stat) / math.sqrt(2.0))
    return TwoSampleResult(
        n_vt=len(vt),
        n_t=len(t),
        mean_vt=mean_vt,
        mean_t=mean_t,
        std_vt=np.sqrt(var_vt),
        std_t=np.sqrt(var_t),
        difference=diff,
        se=se,
        statistic=stat,
        p_value=p,
    )


def vip_thresholds(
    statistic: Float[ArrayLike, " layer"], beta: float = 2.0
) -> Float[np.ndarray, " layer"]:
    """Right-hand side of Eq. 9 per layer: ``beta / (l - 1) * sum_{k=1}^{l-1} t_k``.

    Defined for the candidate layers ``l = 2..L-1``; NaN elsewhere (index 0 is never part of
    the history: it compares identical embeddings).
    """
    t = as_float64(statistic, "statistic")
    if t.ndim != 1:
        raise ValueError(f"statistic must be 1-D [L+1], got shape {t.shape}")
    out = np.full(t.shape, np.nan)
    n_layers = len(t) - 1
    if n_layers >= 3:
        history = np.cumsum(t[1:])  # history[j] = sum of t_1..t_{j+1}
        ls = np.arange(2, n_layers)
        out[ls] = beta / (ls - 1) * history[ls - 2]
    return out


def automatic_vip(
    statistic: Float[ArrayLike, " layer"], beta: float = 2.0, alpha: float | None = 0.05
) -> int | None:
    """Automatic VIP (Eq. 9): the smallest ``l`` in ``2..L-1`` with
    ``t_l >= beta / (l - 1) * sum_{k=1}^{l-1} t_k``, and, unless ``alpha`` is None,
    ``t_l >= z_{1 - alpha/(L-2)}``.

    The significance floor is an addition to Eq. 9: without it, noise in the early layers
    (a negative or near-zero history) lets a layer with no real group difference qualify.
    With it, the one-sided test of ``D_VT > D_T`` at layer ``l`` must pass at level ``alpha``,
    Bonferroni-corrected over the ``L - 2`` candidates, so that when no layer separates the
    groups a VIP is reported with probability at most about ``alpha``. ``alpha=None`` gives
    Eq. 9 exactly.

    Returns:
        The VIP layer index, or None when no layer qualifies (never a default layer).

    Raises:
        ValueError: fewer than 3 decoder layers, ``beta <= 0`` or ``alpha`` outside (0, 1).
    """
    t = as_float64(statistic, "statistic")
    n_layers = len(t) - 1
    if n_layers < 3:
        raise ValueError(f"the automatic VIP needs L >= 3 decoder layers, got L = {n_layers}")
    if not beta > 0:
        raise ValueError(f"beta must be positive, got {beta}")
    if alpha is not None and not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1) or be None, got {alpha}")
    rhs = vip_thresholds(t, beta)
    floor = -np.inf if alpha is None else float(_sps.norm.isf(alpha / (n_layers - 2)))
    for layer in range(2, n_layers):
        if t[layer] >= rhs[layer] and t[layer] >= floor:
            return layer
    return None


class VIPDetector(BaseEstimator):
    """Locate the VIP from distances and the agreement split (scikit-learn estimator contract).

    Parameters:
        beta: weight of the history average in Eq. 9 (paper: 2.0).
        layer: a manual VIP (``1..L``); when given, no search is done.
        alpha: family-wise significance floor of :func:`automatic_vip`; None = Eq. 9 alone.

    Fitted attributes: ``result_`` (:class:`TwoSampleResult`), ``statistic_`` and ``p_values_``
    (``[L+1]``), ``thresholds_`` (Eq. 9 right-hand side), ``layer_`` (int, or None when the
    automatic rule found no VIP, with a :class:`NoVIPWarning`), ``method_`` ("automatic" /
    "manual").
    """

    def __init__(self, beta: float = 2.0, layer: int | None = None, alpha: float | None = 0.05):
        self.beta = beta
        self.layer = layer
        self.alpha = alpha

    def fit(
        self,
        distances: Float[ArrayLike, "n layer"],
        in_vt: Shaped[ArrayLike, " n"] | Sequence[Any],
    ) -> VIPDetector:
        """Run :func:`two_sample_test` and pick the VIP; returns ``self``."""
        result = two_sample_test(distances, in_vt)
        n_layers = result.n_layers
        if self.layer is not None:
            layer = self.layer
            if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)):
                raise TypeError(f"layer must be an int, got {type(layer).__name__}")
            if not 1 <= layer <= n_layers:
                raise ValueError(f"layer={layer} is outside the decoder layers 1..{n_layers}")
            self.layer_: int | None = int(layer)
            self.method_ = "manual"
        else:
            self.layer_ = automatic_vip(result.statistic, self.beta, self.alpha)
            self.method_ = "automatic"
            if self.layer_ is None:
                warnings.warn(
                    "no layer qualifies as the VIP by Eq. 9"
                    + (f" with the significance floor alpha={self.alpha}" if self.alpha else "")
                    + f" (beta={self.beta}): no layer's statistic rises above the running "
                    "average of the earlier layers'; layer_ is None. Pass layer= for a manual VIP.",
                    NoVIPWarning,
                    stacklevel=2,
                )
        self.result_ = result
        self.statistic_ = result.statistic
        self.p_values_ = result.p_value
        self.thresholds_ = vip_thresholds(result.statistic, self.beta)
        return self


__all__ = [
    "NoVIPWarning",
    "TwoSampleResult",
    "VIPDetector",
    "as_distance_matrix",
    "automatic_vip",
    "two_sample_test",
    "vip_thresholds",
]
