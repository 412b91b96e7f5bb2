"""The Visual Integration Point (VIP): a per-layer two-sample test and the rules that pick the VIP.

Inputs are per-sample, per-layer distances ``d(z_vis^l, z_blind^l)`` of shape ``[N, L+1]``
(``docs/conventions.md``: index 0 = input embeddings, index l = output of decoder layer l) and the agreement
split ``in_vt`` (True = D_VT, the answer changed when the image was removed).

- :func:`two_sample_test`: **the paper's test**: per layer, the group means of Eq. 2, their gap,
  Cohen's d and the statistic of Lemma F.1, ``t_l = (D_l(VT) - D_l(T)) / sigma_l``,
  ``sigma_l = sqrt(s_T^2/|D_T| + s_VT^2/|D_VT|)``, which takes the samples as i.i.d. For new
  claims on clustered samples (the wordings of one image) use
  :func:`probes.vip_clustered.clustered_two_sample_test`: the same gap with a cluster-bootstrap
  interval and p-values corrected over the layers.
- :func:`automatic_vip`: the automatic VIP under a rule named in :data:`RULES` — ``"eq9"`` (Eq. 9
  of Appendix B.2 plus a significance floor, the paper's rule), ``"effect"`` (``"eq9"`` plus an
  effect-size floor), ``"jump"`` (the largest growth of the gap) and ``"changepoint"`` (a
  two-segment piecewise-constant fit of the gap; the default). ``docs/vip_rules.md`` compares
  them and says why ``"changepoint"`` is the default: it is the rule that agrees with the causal
  integration layer of the attention-knockout flow study on the demo models.
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
from .errors import (
    EmptyGroupError,
    TooFewSamplesError,
    UnknownVIPRuleError,
    VIPParameterError,
    VIPTypeError,
)
from .stats import as_binary_labels


class NoVIPWarning(UserWarning):
    """The automatic rule found no layer that qualifies as the VIP; ``rule`` names it."""

    def __init__(self, message: str, rule: str | None = None) -> None:
        super().__init__(message)
        self.rule = rule


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

    @property
    def cohens_d(self) -> Float[np.ndarray, " layer"]:
        """Cohen's d per layer, ``difference / s_p`` with the pooled standard deviation
        ``s_p^2 = ((n_VT - 1) s_VT^2 + (n_T - 1) s_T^2) / (n_VT + n_T - 2)``, as
        :func:`probes.stats.cohens_d`; where ``s_p == 0``: 0 for equal means, else ``±inf``."""
        pooled = np.sqrt(
            ((self.n_vt - 1) * self.std_vt**2 + (self.n_t - 1) * self.std_t**2)
            / (self.n_vt + self.n_t - 2)
        )
        with np.errstate(divide="ignore", invalid="ignore"):
            d = self.difference / pooled
            flat = np.where(self.difference == 0, 0.0, np.sign(self.difference) * np.inf)
        return np.where(pooled > 0, d, flat)

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
                "cohens_d": self.cohens_d,
                "statistic": self.statistic,
                "p_value": self.p_value,
            }
        )
        frame.index.name = "layer"
        return frame


def two_sample_test(
    distances: Float[ArrayLike, "n layer"], in_vt: Shaped[ArrayLike, " n"] | Sequence[Any]
) -> TwoSampleResult:
    """Per-layer two-sample statistic of Lemma F.1 (Eq. 12) between D_VT and D_T: the paper's
    test, kept to reproduce it; it takes the samples as independent, so with clustered samples
    its p-values are too low (use :func:`probes.vip_clustered.clustered_two_sample_test`).

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


RULES: dict[str, str] = {
    "eq9": "Eq. 9 plus the significance floor: the first layer whose statistic reaches beta times "
    "the mean of the earlier layers' statistics",
    "effect": "eq9 plus an effect-size floor: the gap must also reach min_fraction of the largest "
    "gap (and Cohen's d reach min_effect, when given)",
    "jump": "the layer where the gap between the group means grows most from the layer before",
    "changepoint": "the first layer of the second segment of the least-squares two-segment "
    "piecewise-constant fit of the gap",
}
"""The automatic VIP rules by name, with a one-line description (see :func:`automatic_vip`)."""

GAP_RULES = ("effect", "jump", "changepoint")
"""The rules that need the group means (a :class:`TwoSampleResult`), not only the statistic."""


def check_rule(rule: object) -> str:
    """``rule`` itself if it names a rule of :data:`RULES`.

    Raises:
        VIPTypeError: ``rule`` is not a string.
        UnknownVIPRuleError: an unknown name (the message lists the valid ones).
    """
    if not isinstance(rule, str):
        raise VIPTypeError(f"rule must be a rule name (str), got {type(rule).__name__}")
    if rule not in RULES:
        valid = tuple(RULES)
        raise UnknownVIPRuleError(
            f"unknown VIP rule {rule!r}: use one of " + ", ".join(repr(r) for r in valid),
            rule=rule,
            valid=valid,
        )
    return rule


def _check_settings(
    rule: object,
    beta: float,
    alpha: float | None,
    min_fraction: float | None,
    min_effect: float | None,
) -> str:
    rule = check_rule(rule)
    if not beta > 0:
        raise VIPParameterError(f"beta must be positive, got {beta}")
    if alpha is not None and not 0.0 < alpha < 1.0:
        raise VIPParameterError(f"alpha must lie in (0, 1) or be None, got {alpha}")
    if min_fraction is not None and not 0.0 <= min_fraction <= 1.0:
        raise VIPParameterError(f"min_fraction must lie in [0, 1] or be None, got {min_fraction}")
    if min_effect is not None and not 0.0 <= min_effect < math.inf:
        raise VIPParameterError(
            f"min_effect must be a finite number >= 0 or None, got {min_effect}"
        )
    if rule == "effect" and not (min_fraction or min_effect):
        raise VIPParameterError(
            "rule 'effect' needs an effect-size floor: set min_fraction (e.g. 0.25) or min_effect "
            "(a Cohen's d, e.g. 0.2); without one it is rule 'eq9'"
        )
    return rule


def vip_thresholds(
    statistic: Float[ArrayLike, " layer"], beta: float = 2.0
) -> Float[np.ndarray, " layer"]:
    """Right-hand side of Eq. 9 per layer: ``beta / (l - 1) * sum_{k=1}^{l-1} t_k``.

    Defined for the candidate layers ``l = 2..L-1``; NaN elsewhere (index 0 is never part of
    the history: it compares identical embeddings).
    """
    t = as_float64(statistic, "statistic")
    if t.ndim != 1:
        raise VIPParameterError(f"statistic must be 1-D [L+1], got shape {t.shape}")
    out = np.full(t.shape, np.nan)
    n_layers = len(t) - 1
    if n_layers >= 3:
        history = np.cumsum(t[1:])  # history[j] = sum of t_1..t_{j+1}
        ls = np.arange(2, n_layers)
        out[ls] = beta / (ls - 1) * history[ls - 2]
    return out


def significance_floor(n_layers: int, alpha: float | None) -> float:
    """``z_{1 - alpha/(L-2)}``: the statistic a candidate layer must reach (one-sided, Bonferroni
    over the ``L - 2`` candidates); ``-inf`` when ``alpha`` is None."""
    return -math.inf if alpha is None else float(_sps.norm.isf(alpha / (n_layers - 2)))


@dataclass(frozen=True)
class _Outcome:
    layer: int | None
    cause: str | None = None  # why None: "eq9", "alpha", "effect" or "rise"
    reason: str = ""


def _eq9_layers(t: np.ndarray, beta: float, floor: float) -> list[int]:
    rhs = vip_thresholds(t, beta)
    return [k for k in range(2, len(t) - 1) if t[k] >= rhs[k] and t[k] >= floor]


def _two_segment_sse(gap: np.ndarray) -> np.ndarray:
    """SSE of the best two-segment constant fit of ``gap[1..L]`` split before each layer k
    (``[L+1]``; entries for k = 2..L-1, NaN elsewhere)."""
    n_layers = len(gap) - 1
    out = np.full(gap.shape, np.nan)
    for k in range(2, n_layers):
        left, right = gap[1:k], gap[k:]
        out[k] = ((left - left.mean()) ** 2).sum() + ((right - right.mean()) ** 2).sum()
    return out


def _decide(
    rule: str,
    x: Float[ArrayLike, " layer"] | TwoSampleResult,
    beta: float,
    alpha: float | None,
    min_fraction: float | None,
    min_effect: float | None,
) -> _Outcome:
    """Apply ``rule``; the layer, or None with the cause and a sentence saying why."""
    rule = _check_settings(rule, beta, alpha, min_fraction, min_effect)
    result = x if isinstance(x, TwoSampleResult) else None
    if result is None and rule in GAP_RULES:
        raise VIPParameterError(
            f"rule {rule!r} needs the group means, not only the statistic: pass the "
            "TwoSampleResult of two_sample_test(distances, in_vt), or rule='eq9' (the paper's "
            "rule, which needs only the statistic)"
        )
    t = as_float64(result.statistic if result is not None else x, "statistic")
    n_layers = len(t) - 1
    if n_layers < 3:
        raise VIPParameterError(
            f"the automatic VIP needs L >= 3 decoder layers, got L = {n_layers}"
        )
    floor = significance_floor(n_layers, alpha)
    below = f"the significance floor alpha={alpha} (t >= {floor:.2f})"
    if rule in ("eq9", "effect"):
        passing = _eq9_layers(t, beta, floor)
        if not passing:
            eq9 = _eq9_layers(t, beta, -math.inf)
            if eq9:
                return _Outcome(
                    None,
                    "alpha",
                    f"Eq. 9 is met at layer {eq9[0]}, but no layer meeting it passes {below}",
                )
            return _Outcome(
                None,
                "eq9",
                f"no layer's statistic rises to beta={beta} times the mean of the earlier layers'",
            )
        if rule == "eq9":
            return _Outcome(passing[0])
        assert result is not None
        gap, d = result.difference, result.cohens_d
        top = int(np.argmax(gap[1:])) + 1
        need = (min_fraction or 0.0) * max(float(gap[top]), 0.0)
        for layer in passing:
            if gap[layer] > 0 and gap[layer] >= need and d[layer] >= (min_effect or 0.0):
                return _Outcome(layer)
        floors = (
            [
                f"a gap of at least {min_fraction} of the largest gap ({need:.4g}; the "
                f"largest, {gap[top]:.4g}, is at layer {top})"
            ]
            if min_fraction
            else []
        )
        floors += [f"Cohen's d >= {min_effect}"] if min_effect else []
        return _Outcome(
            None,
            "effect",
            ("Eq. 9 is" if alpha is None else f"Eq. 9 and {below} are")
            + f" met at layers {passing}, but none has "
            + " and ".join(floors),
        )
    assert result is not None
    gap = result.difference
    if rule == "jump":
        growth = np.diff(gap)  # growth[l - 1] = gap_l - gap_{l-1}
        layer = int(np.argmax(growth[1 : n_layers - 1])) + 2
        if not growth[layer - 1] > 0:
            return _Outcome(
                None, "rise", f"the gap between the groups grows at no layer 2..{n_layers - 1}"
            )
        what = f"the gap grows most at layer {layer} ({gap[layer - 1]:.4g} -> {gap[layer]:.4g})"
    else:
        layer = int(np.nanargmin(_two_segment_sse(gap)))
        before, after = gap[1:layer].mean(), gap[layer:].mean()
        if not after > before:
            return _Outcome(
                None,
                "rise",
                f"the best two-segment fit splits before layer {layer}, "
                f"but the gap does not rise there (mean {before:.4g} -> {after:.4g})",
            )
        what = f"the best two-segment fit of the gap starts its second segment at layer {layer}"
    if t[layer] < floor:
        return _Outcome(
            None, "alpha", f"{what}, but its statistic t = {t[layer]:.2f} misses {below}"
        )
    return _Outcome(layer)


def automatic_vip(
    statistic: Float[ArrayLike, " layer"] | TwoSampleResult,
    beta: float = 2.0,
    alpha: float | None = 0.05,
    *,
    rule: str = "changepoint",
    min_fraction: float | None = 0.25,
    min_effect: float | None = None,
) -> int | None:
    """The automatic VIP under ``rule``; every rule searches the candidates ``l = 2..L-1``.

    With ``t_l`` the statistic, ``g_l = D_l(VT) - D_l(T)`` the gap and
    ``z = z_{1 - alpha/(L-2)}`` the significance floor (:func:`significance_floor`: the candidate's
    one-sided test of ``D_VT > D_T`` passes at level ``alpha``, Bonferroni-corrected over the
    ``L - 2`` candidates; ``alpha=None`` drops it):

    - ``"eq9"`` (the paper's rule): the smallest ``l`` with
      ``t_l >= beta / (l - 1) * sum_{k=1}^{l-1} t_k`` (Eq. 9) and ``t_l >= z``. With ``alpha=None``
      it is Eq. 9 exactly. The floor keeps noise in the early layers from meeting Eq. 9, but on a
      large N a negligible early gap is significant too.
    - ``"effect"``: the smallest ``l`` meeting ``"eq9"`` whose gap is also material:
      ``g_l > 0``, ``g_l >= min_fraction * max_{k=1..L} g_k`` (when ``min_fraction``) and Cohen's
      d ``>= min_effect`` (when given). Both floors do not grow with N, unlike significance.
    - ``"jump"``: ``l* = argmax_l (g_l - g_{l-1})`` (the first on ties); the VIP if that growth is
      positive and ``t_{l*} >= z``.
    - ``"changepoint"``: ``l*`` minimises the squared error of a two-segment constant fit of
      ``g_1..g_L``, ``sum_{l<k} (g_l - mean(g_1..g_{k-1}))^2 + sum_{l>=k} (g_l - mean(g_k..g_L))^2``
      (the first on ties); the VIP if the second segment's mean is higher and ``t_{l*} >= z``.
      The default: of the four it agrees with the causal integration layer of
      :mod:`interp.studies.flow` on the demo models (``docs/vip_rules.md``).

    ``jump`` and ``changepoint`` pick one layer and check it, rather than searching on.

    Args:
        statistic: the :class:`TwoSampleResult` of :func:`two_sample_test` (every rule), or the
            per-layer statistic ``[L+1]`` alone (enough for ``rule="eq9"`` only).

    Returns:
        The VIP layer index, or None when no layer qualifies (never a default layer).

    Raises:
        UnknownVIPRuleError: ``rule`` is not in :data:`RULES`.
        VIPParameterError: fewer than 3 decoder layers, ``beta <= 0``, ``alpha`` outside (0, 1),
            a floor out of range, or only a statistic given to a rule that needs the gap.
    """
    return _decide(rule, statistic, beta, alpha, min_fraction, min_effect).layer


def why_no_vip(
    statistic: Float[ArrayLike, " layer"] | TwoSampleResult,
    beta: float = 2.0,
    alpha: float | None = 0.05,
    *,
    rule: str = "changepoint",
    min_fraction: float | None = 0.25,
    min_effect: float | None = None,
) -> tuple[str, str] | None:
    """Why :func:`automatic_vip` with these arguments finds no VIP: ``(cause, sentence)``, cause
    ``"eq9"`` (no layer meets Eq. 9), ``"alpha"`` (the significance floor), ``"effect"`` (the
    effect-size floor) or ``"rise"`` (the gap does not rise where the rule looks); None if it
    finds one."""
    out = _decide(rule, statistic, beta, alpha, min_fraction, min_effect)
    return None if out.layer is not None else (str(out.cause), out.reason)


class VIPDetector(BaseEstimator):
    """Locate the VIP from distances and the agreement split (scikit-learn estimator contract).

    Parameters:
        rule: the automatic rule, a name of :data:`RULES` (default ``"changepoint"``, the one that
            agrees with the causal integration layer; ``"eq9"`` is the paper's).
        beta: weight of the history average in Eq. 9 (paper: 2.0); rules ``eq9`` and ``effect``.
        layer: a manual VIP (``1..L``); when given, no search is done.
        alpha: family-wise significance floor of :func:`automatic_vip`; None = no floor.
        min_fraction, min_effect: the effect-size floors of rule ``effect``.

    Fitted attributes: ``result_`` (:class:`TwoSampleResult`), ``statistic_``, ``p_values_``,
    ``gap_`` and ``effect_size_`` (Cohen's d; all ``[L+1]``), ``thresholds_`` (Eq. 9 right-hand
    side), ``layer_`` (int, or None when the automatic rule found no VIP, with a
    :class:`NoVIPWarning` naming the rule), ``method_`` ("automatic" / "manual"), ``rule_`` (the
    rule used, or "manual") and ``no_vip_`` (``(cause, sentence)`` of :func:`why_no_vip`, or None).

    Raises (in ``fit``): :class:`~probes.errors.UnknownVIPRuleError`,
    :class:`~probes.errors.VIPParameterError` (a ``ValueError``) and
    :class:`~probes.errors.VIPTypeError` (a ``TypeError``) for bad settings.
    """

    def __init__(
        self,
        beta: float = 2.0,
        layer: int | None = None,
        alpha: float | None = 0.05,
        rule: str = "changepoint",
        min_fraction: float | None = 0.25,
        min_effect: float | None = None,
    ):
        self.beta = beta
        self.layer = layer
        self.alpha = alpha
        self.rule = rule
        self.min_fraction = min_fraction
        self.min_effect = min_effect

    def fit(
        self,
        distances: Float[ArrayLike, "n layer"],
        in_vt: Shaped[ArrayLike, " n"] | Sequence[Any],
    ) -> VIPDetector:
        """Run :func:`two_sample_test` and pick the VIP; returns ``self``."""
        rule = _check_settings(self.rule, self.beta, self.alpha, self.min_fraction, self.min_effect)
        result = two_sample_test(distances, in_vt)
        n_layers = result.n_layers
        self.no_vip_: tuple[str, str] | None = None
        if self.layer is not None:
            layer = self.layer
            if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)):
                raise VIPTypeError(f"layer must be an int, got {type(layer).__name__}")
            if not 1 <= layer <= n_layers:
                raise VIPParameterError(
                    f"layer={layer} is outside the decoder layers 1..{n_layers}"
                )
            self.layer_: int | None = int(layer)
            self.method_ = "manual"
            self.rule_ = "manual"
        else:
            out = _decide(rule, result, self.beta, self.alpha, self.min_fraction, self.min_effect)
            self.layer_, self.method_, self.rule_ = out.layer, "automatic", rule
            if out.layer is None:
                self.no_vip_ = (str(out.cause), out.reason)
                warnings.warn(
                    NoVIPWarning(
                        f"no layer qualifies as the VIP by rule {rule!r} ({RULES[rule]}): "
                        f"{out.reason}; layer_ is None. Pass layer= for a manual VIP or try "
                        "another rule.",
                        rule=rule,
                    ),
                    stacklevel=2,
                )
        self.result_ = result
        self.statistic_ = result.statistic
        self.p_values_ = result.p_value
        self.gap_ = result.difference
        self.effect_size_ = result.cohens_d
        self.thresholds_ = vip_thresholds(result.statistic, self.beta)
        return self


__all__ = [
    "GAP_RULES",
    "RULES",
    "NoVIPWarning",
    "TwoSampleResult",
    "VIPDetector",
    "as_distance_matrix",
    "automatic_vip",
    "check_rule",
    "significance_floor",
    "two_sample_test",
    "vip_thresholds",
    "why_no_vip",
]
