"""Selective prediction: answer only when confident, and measure coverage and risk.

Definitions follow the visual-reference paper ("Can VLMs Recall Factual Associations From Visual
References?", Section 6.2 and Tables 1-2), after El-Yaniv and Wiener: given N evaluated questions
and a rule that decides which ones to answer,

- coverage = (number answered) / N — "the percentage of questions where the system makes a
  prediction";
- risk = (number answered wrongly) / (number answered) — "the error rate on the questions where a
  prediction is made".

Convention throughout: a *confidence score* is higher when the answer is more likely correct.

- :func:`coverage_risk` / :func:`selective_table`: coverage and risk of binary answer/abstain
  decisions (one operating point per method, as in the paper's Table 1).
- :func:`risk_coverage` -> :class:`RiskCoverage`: the whole risk-coverage curve of a confidence
  score and its area (AURC).
- :class:`PerplexityThreshold`: the paper's perplexity baseline — a threshold on the answer's
  per-token perplexity learned on training data (answer when the perplexity is at most the
  threshold); :func:`answer_perplexity` computes the perplexity from token log-probabilities.
- :class:`MajorityBaseline`: the paper's "Random" baseline, the base rate of the most frequent
  class.
- :class:`LogisticCalibrator`, :func:`ensemble_scores`, :class:`EnsembleConfidence`: the paper's
  ensemble, which "averages the predictions" of the probe and the perplexity baseline; here, the
  mean of their probabilities of a correct answer, each calibrated on the training split.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from jaxtyping import Float
from scipy.sparse import issparse
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.dummy import DummyClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ._estimators import OneScoreInput, label_vector
from .distances import ArrayLike, to_numpy
from .errors import EmptyInputError, ProbeError, ProbeTypeError

# -- input checks ------------------------------------------------------------------------------


def _scores(x: ArrayLike | Sequence[float], name: str, n: int | None = None) -> np.ndarray:
    """A 1-D float64 vector (a ``[N, 1]`` column is accepted), no NaN."""
    if issparse(x):
        raise ProbeError(f"{name} is a sparse matrix; sparse input is not supported")
    arr = to_numpy(x)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ProbeError(f"{name} must be one value per sample (1-D); got shape {arr.shape}")
    if len(arr) == 0:
        raise EmptyInputError(f"{name} is empty")
    if n is not None and len(arr) != n:
        raise ProbeError(f"{name} has {len(arr)} values, expected {n} (one per sample)")
    try:
        arr = arr.astype(np.float64)
    except (TypeError, ValueError) as err:
        raise ProbeError(f"{name} must be numeric, got dtype {arr.dtype}") from err
    if np.isnan(arr).any():
        raise ProbeError(f"{name} contains NaN at positions {np.flatnonzero(np.isnan(arr))[:10]}")
    return arr


def _binary(y: ArrayLike | Sequence[Any], n: int, name: str = "correct") -> np.ndarray:
    """A bool vector of length n from bool or 0/1 values."""
    arr = to_numpy(y)
    if arr.ndim != 1 or len(arr) != n:
        raise ProbeError(f"{name} must be 1-D of length {n} (one per sample), got {arr.shape}")
    if arr.dtype == bool:
        return arr
    if not np.issubdtype(arr.dtype, np.number) or not np.isin(arr, (0, 1)).all():
        raise ProbeError(f"{name} must be bool or 0/1, got values {np.unique(arr)[:10]}")
    return arr.astype(bool)


def _two_classes(y: np.ndarray, name: str = "correct") -> None:
    if y.all() or not y.any():
        raise ProbeError(
            f"{name} holds a single class (all {bool(y[0])}); learning a threshold or a "
            f"calibration needs both correct and incorrect answers"
        )


def _matrix(estimator: Any, X: ArrayLike, *, reset: bool) -> np.ndarray:
    """X as a finite float64 ``[N, M]`` matrix, validated as scikit-learn does (``validate_data``:
    dense, 2-D, not empty, the fitted number of columns), its refusals as typed errors."""
    raw = X if issparse(X) else to_numpy(X)
    try:
        return validate_data(estimator, raw, reset=reset, dtype=np.float64)
    except TypeError as err:
        raise ProbeTypeError(str(err)) from err
    except ValueError as err:
        raise ProbeError(str(err)) from err


def _binary_labels(
    y: ArrayLike | Sequence[Any] | None, n: int, owner: str
) -> tuple[np.ndarray, np.ndarray]:
    """The two class labels (sorted) and, per sample, whether it has the second (the positive
    class: True, 1, or the larger label) — scikit-learn's binary-classifier convention."""
    arr = label_vector(y, owner)
    if arr.ndim != 1 or len(arr) != n:
        raise ProbeError(f"y must be 1-D of length {n} (one per sample), got {arr.shape}")
    try:
        check_classification_targets(arr)
    except ValueError as err:
        raise ProbeError(f"y must hold class labels: {err}") from err
    classes = np.unique(arr)
    if len(classes) == 1:
        raise ProbeError(
            f"y holds a single class (one class: {classes.tolist()}); learning a calibration "
            "needs both correct and incorrect answers"
        )
    if len(classes) > 2:
        raise ProbeError(
            f"y holds {len(classes)} classes. Only binary classification is supported: "
            "correct vs incorrect"
        )
    return classes, arr == classes[1]


# -- binary decisions: the paper's Table 1 -------------------------------------------------------


@dataclass(frozen=True)
class SelectiveResult:
    """Coverage and risk of one set of answer/abstain decisions (``risk`` is NaN when nothing
    is answered)."""

    coverage: float
    risk: float
    n_answered: int
    n_errors: int
    n: int


def coverage_risk(
    answered: ArrayLike | Sequence[bool], correct: ArrayLike | Sequence[bool]
) -> SelectiveResult:
    """``coverage = |A| / N`` and ``risk = |A ∩ wrong| / |A|`` for the answered set A.

    Args:
        answered: ``[N]`` bool, True where the system answers (does not abstain).
        correct: ``[N]`` bool, True where the model's answer is correct.
    """
    ans = _binary(answered, len(to_numpy(answered)), name="answered")
    if len(ans) == 0:
        raise EmptyInputError("no decisions were given")
    ok = _binary(correct, len(ans))
    n_answered = int(ans.sum())
    n_errors = int((ans & ~ok).sum())
    risk = n_errors / n_answered if n_answered else math.nan
    return SelectiveResult(n_answered / len(ans), risk, n_answered, n_errors, len(ans))


def selective_table(
    answered: Mapping[str, ArrayLike | Sequence[bool]], correct: ArrayLike | Sequence[bool]
) -> pd.DataFrame:
    """One row per method (e.g. ``{"perplexity": ..., "probe": ..., "ensemble": ...}``) with
    its coverage, risk (fractions, not percent), answered and error counts — the paper's Table 1."""
    rows = {name: vars(coverage_risk(a, correct)) for name, a in answered.items()}
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.name = "method"
    return frame


# -- the risk-coverage curve ---------------------------------------------------------------------


@dataclass(frozen=True)
class RiskCoverage:
    """The risk-coverage curve of a confidence score (see :func:`risk_coverage`).

    Point j answers every item whose score is ``>= thresholds[j]``; ``coverage`` increases,
    ``thresholds`` decrease. ``aurc`` is the area under the step curve (definition in
    :func:`risk_coverage`).
    """

    coverage: Float[np.ndarray, " k"]
    risk: Float[np.ndarray, " k"]
    thresholds: Float[np.ndarray, " k"]
    aurc: float
    n: int

    def _best(self, max_risk: float) -> int | None:
        ok = np.flatnonzero(self.risk <= max_risk)
        return int(ok[-1]) if len(ok) else None  # coverage increases along the curve

    def coverage_at(self, max_risk: float) -> float:
        """The largest coverage whose risk is ``<= max_risk`` (0.0 when no point qualifies:
        abstain on everything)."""
        j = self._best(max_risk)
        return 0.0 if j is None else float(self.coverage[j])

    def threshold_at(self, max_risk: float) -> float:
        """The score threshold of :meth:`coverage_at` (answer when ``score >= threshold``);
        ``+inf`` when no point qualifies."""
        j = self._best(max_risk)
        return math.inf if j is None else float(self.thresholds[j])

    def to_frame(self) -> pd.DataFrame:
        """Columns ``threshold``, ``coverage``, ``risk``, one row per distinct score."""
        return pd.DataFrame(
            {"threshold": self.thresholds, "coverage": self.coverage, "risk": self.risk}
        )

    def plot(self, ax: Any = None, label: str | None = None) -> Any:
        """Risk against coverage as a step curve (AURC in the legend); returns the Figure."""
        from ._figures import subplots  # lazily: importing probes must stay light

        fig, ax = (ax.figure, ax) if ax is not None else subplots(figsize=(4.5, 3.6))
        name = f"{label}, " if label else ""
        ax.step(self.coverage, self.risk, where="post", label=f"{name}AURC = {self.aurc:.3f}")
        ax.set_xlim(0, 1)
        ax.set_xlabel("coverage (share answered)")
        ax.set_ylabel("risk (error rate on answered)")
        ax.set_title("Risk-coverage")
        ax.legend(frameon=False)
        fig.tight_layout()
        return fig


def risk_coverage(
    scores: ArrayLike | Sequence[float], correct: ArrayLike | Sequence[bool]
) -> RiskCoverage:
    """The risk-coverage curve of answering the most confident items first.

    Sort the N items by decreasing score; answering the k most confident gives coverage
    ``c_k = k/N`` and risk ``r_k = (errors among them) / k``. Tied scores cannot be separated by a
    threshold, so a run of tied items is one step: the curve has one point per distinct score s,
    answering every item with ``score >= s``.

    AURC (area under the risk-coverage curve) is the integral of the right-continuous step curve
    over coverage, ``AURC = sum_j (c_j - c_{j-1}) * r_j`` with ``c_0 = 0``; without ties it is the
    mean risk over the N coverage points, ``(1/N) sum_{k=1..N} r_k`` (Geifman et al.'s AURC).
    Equivalently, every item contributes ``1/N`` times the risk of the step it is answered in.

    Args:
        scores: ``[N]`` confidence, higher = more likely correct (±inf allowed, NaN not).
        correct: ``[N]`` bool (or 0/1), True where the answer is correct.
    """
    s = _scores(scores, "scores")
    ok = _binary(correct, len(s))
    order = np.argsort(-s, kind="stable")
    s, wrong = s[order], ~ok[order]
    ends = np.flatnonzero(np.r_[s[1:] != s[:-1], True])  # last index of each tie run
    answered = ends + 1
    coverage = answered / len(s)
    risk = np.cumsum(wrong)[ends] / answered
    aurc = float(np.sum(np.diff(coverage, prepend=0.0) * risk))
    return RiskCoverage(coverage, risk.astype(np.float64), s[ends].copy(), aurc, len(s))


# -- baselines -----------------------------------------------------------------------------------


def answer_perplexity(token_logprobs: ArrayLike | Sequence[float]) -> float:
    """Per-token perplexity of an answer, ``exp(-(1/T) sum_t log p(a_t | a_<t, x))``, from the
    natural-log probabilities of its T tokens."""
    lp = _scores(token_logprobs, "token_logprobs")
    if (lp > 0).any():
        raise ProbeError("token_logprobs must be log-probabilities (<= 0), got a positive value")
    return float(np.exp(-lp.mean()))


class PerplexityThreshold(OneScoreInput, ClassifierMixin, BaseEstimator):
    """The paper's perplexity baseline: answer (predict correct) when the answer's per-token
    perplexity is at most a threshold learned on training data; flag a failure above it.

    Fit: with ``s`` the feature (``log(perplexity)`` when ``log_scale``, else the perplexity) and
    ``u_1 < ... < u_m`` its distinct training values, each candidate rule ``s <= u_j`` is scored by
    its balanced accuracy ``(TPR + TNR) / 2`` (TPR over the correct answers, TNR over the wrong
    ones); the best j wins (the smallest on ties) and the threshold is put half-way to the next
    value, ``(u_j + u_{j+1}) / 2`` (``u_m`` for j = m). In perplexity units the log-scale
    midpoint is the geometric mean ``sqrt(p_j p_{j+1})``. The rule ``s <= u_m`` (answer
    everything) is among the candidates, so a perplexity that carries no signal yields balanced
    accuracy 0.5.

    Parameters:
        log_scale: put the midpoint and the confidence on the log-perplexity (mean token NLL)
            scale; perplexities must then be > 0. The chosen split of the training data does not
            depend on it.

    Attributes:
        threshold_: the learned threshold, in perplexity units.
        train_balanced_accuracy_: balanced accuracy of the rule on the training data.
        classes_: ``[False, True]`` (True = correct, i.e. answer).
        calibrator_: :class:`LogisticCalibrator` of :meth:`decision_function` on the training data,
            behind :meth:`predict_proba`.
    """

    def __init__(self, log_scale: bool = True) -> None:
        self.log_scale = log_scale

    def _feature(self, X: ArrayLike | Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
        ppl = _scores(X, "perplexity")
        if self.log_scale:
            if (ppl <= 0).any():
                raise ProbeError("perplexities must be > 0 with log_scale=True")
            return ppl, np.log(ppl)
        return ppl, ppl

    def fit(
        self, X: ArrayLike | Sequence[float], y: ArrayLike | Sequence[bool]
    ) -> PerplexityThreshold:
        """X: ``[N]`` (or ``[N, 1]``) answer perplexities; y: ``[N]`` correct (bool or 0/1)."""
        ppl, s = self._feature(X)
        ok = _binary(y, len(s), name="y")
        _two_classes(ok, "y")
        values = np.unique(s)
        # For the rule "s <= u_j": correct answers at or below u_j are hits, wrong ones above it
        # are true negatives; searchsorted counts them for all j at once.
        hits = np.searchsorted(np.sort(s[ok]), values, side="right")
        below_wrong = np.searchsorted(np.sort(s[~ok]), values, side="right")
        tpr = hits / ok.sum()
        tnr = ((~ok).sum() - below_wrong) / (~ok).sum()
        balanced = (tpr + tnr) / 2
        j = int(np.argmax(balanced))
        if j + 1 < len(values):
            mid = (values[j] + values[j + 1]) / 2
            self.threshold_ = float(np.exp(mid)) if self.log_scale else float(mid)
        else:  # answer everything: the largest training perplexity itself (no rounding)
            self.threshold_ = float(ppl.max())
        self.train_balanced_accuracy_ = float(balanced[j])
        self.classes_ = np.array([False, True])
        self.n_features_in_ = 1
        self.calibrator_ = LogisticCalibrator().fit(self.decision_function(ppl), ok)
        return self

    def decision_function(self, X: ArrayLike | Sequence[float]) -> np.ndarray:
        """Confidence ``[N]``: ``log(threshold_) - log(ppl)`` (``threshold_ - ppl`` without
        ``log_scale``); ``>= 0`` exactly where :meth:`predict` says correct."""
        check_is_fitted(self, "threshold_")
        _, s = self._feature(X)
        t = math.log(self.threshold_) if self.log_scale else self.threshold_
        return t - s

    def predict(self, X: ArrayLike | Sequence[float]) -> np.ndarray:
        """``[N]`` bool: True (answer) where ``perplexity <= threshold_``."""
        check_is_fitted(self, "threshold_")
        ppl, _ = self._feature(X)
        return ppl <= self.threshold_

    def predict_proba(self, X: ArrayLike | Sequence[float]) -> np.ndarray:
        """``[N, 2]`` calibrated probabilities of (wrong, correct): :attr:`calibrator_` of
        :meth:`decision_function`. Calibrated to the training base rate, so P(correct) need not
        cross 0.5 exactly at the threshold that :meth:`predict` uses."""
        check_is_fitted(self, "calibrator_")
        return self.calibrator_.predict_proba(self.decision_function(X))


class MajorityBaseline(DummyClassifier):
    """The paper's "Random" baseline: always predict the most frequent training class, so its
    accuracy is the base rate of that class (scikit-learn's ``DummyClassifier`` with
    ``strategy="most_frequent"``; ``predict_proba`` gives the training class frequencies)."""

    def __init__(self) -> None:
        super().__init__(strategy="most_frequent")


# -- calibration and the ensemble ----------------------------------------------------------------


class LogisticCalibrator(OneScoreInput, ClassifierMixin, BaseEstimator):
    """Logistic (Platt-style) calibration of a 1-D confidence score to P(correct):
    ``P(correct | s) = sigmoid(a * z + b)`` with ``z = (s - mean) / std`` over the training split.

    The score is standardised and the logistic fit keeps scikit-learn's L2 penalty (``C``), so a
    perfectly separating score still gets finite coefficients.

    Attributes:
        model_: the fitted ``StandardScaler`` + ``LogisticRegression`` pipeline.
        classes_: ``[False, True]``.
    """

    def __init__(self, C: float = 1.0) -> None:
        self.C = C

    def fit(
        self, X: ArrayLike | Sequence[float], y: ArrayLike | Sequence[bool]
    ) -> LogisticCalibrator:
        """X: ``[N]`` (or ``[N, 1]``) scores, higher = more confident; y: ``[N]`` correct."""
        s = _scores(X, "scores")
        if not np.isfinite(s).all():
            raise ProbeError("scores to calibrate must be finite")
        ok = _binary(y, len(s), name="y")
        _two_classes(ok, "y")
        self.model_ = make_pipeline(StandardScaler(), LogisticRegression(C=self.C))
        self.model_.fit(s[:, None], ok)
        self.classes_ = np.array([False, True])
        self.n_features_in_ = 1
        return self

    def predict_proba(self, X: ArrayLike | Sequence[float]) -> np.ndarray:
        """``[N, 2]`` probabilities of (wrong, correct)."""
        check_is_fitted(self, "model_")
        return np.asarray(self.model_.predict_proba(_scores(X, "scores")[:, None]))

    def predict(self, X: ArrayLike | Sequence[float]) -> np.ndarray:
        """``[N]`` bool: P(correct) >= 0.5."""
        return self.predict_proba(X)[:, 1] >= 0.5


def ensemble_scores(
    *probabilities: ArrayLike | Sequence[float], weights: Sequence[float] | None = None
) -> np.ndarray:
    """The ensemble's P(correct): the (weighted) mean ``sum_m w_m p_m / sum_m w_m`` of M
    probability vectors (the paper averages the probe's and the perplexity baseline's; M = 2,
    equal weights). Each ``p_m`` is ``[N]`` in [0, 1]; calibrate raw scores first
    (:class:`LogisticCalibrator`, or :class:`EnsembleConfidence` which does both)."""
    if not probabilities:
        raise EmptyInputError("give at least one probability vector")
    n = len(_scores(probabilities[0], "probabilities[0]"))
    cols = [_scores(p, f"probabilities[{m}]", n) for m, p in enumerate(probabilities)]
    for m, p in enumerate(cols):
        if (p < 0).any() or (p > 1).any():
            raise ProbeError(
                f"probabilities[{m}] has values outside [0, 1]; calibrate scores before averaging"
            )
    return np.average(np.stack(cols, axis=1), axis=1, weights=_weights(weights, len(cols)))


def _weights(weights: Sequence[float] | None, n_methods: int) -> np.ndarray:
    w = np.ones(n_methods) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.shape != (n_methods,) or not np.isfinite(w).all() or (w < 0).any() or w.sum() <= 0:
        raise ProbeError(f"weights must be {n_methods} non-negative numbers, not all 0")
    return w


class EnsembleConfidence(ClassifierMixin, BaseEstimator):
    """The paper's ensemble: average the methods' probabilities of a correct answer and answer
    when the average is at least 0.5.

    ``fit`` takes an ``[N, M]`` matrix of M methods' confidence scores on the training split (e.g.
    the probe's out-of-fold P(correct), ``LayerwiseProbe.cv_predictions_``, and
    ``PerplexityThreshold.decision_function``), higher = more confident. With ``calibrate`` each
    column gets its own :class:`LogisticCalibrator` fitted there, so the averaged numbers are on
    one probability scale; without it the columns must already be probabilities.

    A binary scikit-learn classifier: y holds two labels (bool or 0/1 correct, or any two; the
    second of the sorted labels, e.g. True, is the positive class "correct").

    Parameters:
        calibrate: fit a logistic calibration per column on the training split.
        weights: per-method weights of the mean (None = equal, as the paper).

    Attributes:
        calibrators_: one :class:`LogisticCalibrator` per column (empty without ``calibrate``).
        classes_: the two labels, e.g. ``[False, True]``.
        n_features_in_: M, the number of methods.
    """

    def __init__(self, calibrate: bool = True, weights: Sequence[float] | None = None) -> None:
        self.calibrate = calibrate
        self.weights = weights

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags

    def fit(self, X: ArrayLike, y: ArrayLike | Sequence[bool]) -> EnsembleConfidence:
        """X: ``[N, M]`` confidence scores (or probabilities); y: ``[N]`` correct."""
        S = _matrix(self, X, reset=True)
        classes, ok = _binary_labels(y, len(S), type(self).__name__)
        _weights(self.weights, S.shape[1])
        if not self.calibrate:
            ensemble_scores(*S.T)  # refuse non-probabilities now, not at predict time
        self.calibrators_ = (
            [LogisticCalibrator().fit(S[:, m], ok) for m in range(S.shape[1])]
            if self.calibrate
            else []
        )
        self.classes_ = classes
        return self

    def _probability(self, X: ArrayLike) -> np.ndarray:
        """``[N]`` ensemble P(correct) (:func:`ensemble_scores` of the calibrated columns)."""
        check_is_fitted(self, "calibrators_")
        S = _matrix(self, X, reset=False)
        cols = (
            [cal.predict_proba(S[:, m])[:, 1] for m, cal in enumerate(self.calibrators_)]
            if self.calibrate
            else [S[:, m] for m in range(S.shape[1])]
        )
        return ensemble_scores(*cols, weights=self.weights)

    def decision_function(self, X: ArrayLike) -> np.ndarray:
        """``[N]`` margin ``P(correct) − 0.5``: positive where :meth:`predict` answers (the
        scikit-learn convention for binary classifiers); the probability is
        ``predict_proba(X)[:, 1]``."""
        return self._probability(X) - 0.5

    def predict_proba(self, X: ArrayLike) -> np.ndarray:
        """``[N, 2]`` probabilities of (wrong, correct)."""
        p = self._probability(X)
        return np.column_stack([1 - p, p])

    def predict(self, X: ArrayLike) -> np.ndarray:
        """``[N]`` labels: ``classes_[1]`` (correct: answer) where the ensemble P(correct)
        >= 0.5."""
        answer = self._probability(X) >= 0.5
        return self.classes_[answer.astype(int)]


__all__ = [
    "EnsembleConfidence",
    "LogisticCalibrator",
    "MajorityBaseline",
    "PerplexityThreshold",
    "RiskCoverage",
    "SelectiveResult",
    "answer_perplexity",
    "coverage_risk",
    "ensemble_scores",
    "risk_coverage",
    "selective_table",
]
