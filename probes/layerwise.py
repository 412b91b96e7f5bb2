"""Layer-wise linear probes: one cross-validated classifier per layer of the residual stream.

The visual-reference paper ("Can VLMs Recall Factual Associations From Visual References?",
Section 6.2 "Early Warning for Linking Failure") trains a linear probe on the last-token hidden state ``h_i^(l)`` of
one layer (l = 20 of LLaVA-Vicuna-7B) to flag the answers where the model failed to link the image
of an entity to its knowledge; the modality-conflict paper fits the same kind of probe at every
layer (logistic regression, balanced class weights, balanced accuracy). :class:`LayerwiseProbe`
does both: it scores a fresh copy of one estimator per selected layer with the same folds, keeps
the out-of-fold probabilities (for selective prediction, :mod:`probes.selective`) and refits each
layer's estimator on all the data.

Input states follow the project's layer convention (``docs/conventions.md``): shape
``[N, L+1, d]``, index 0 = input embeddings, index l = output of decoder layer l. A 2-D array
``[N, d]`` is one layer, index 0.

Scores, per layer l over the K folds (each fold's statistic on its held-out split):

- balanced accuracy = ``(1/C) sum_c recall_c`` (the mean per-class recall of ``predict``);
- AUROC: binary, of the probability (or decision value) of ``classes_[1]``; multiclass,
  one-vs-rest macro ``(1/C') sum_c AUROC(y == c, p_c)`` over the C' classes that occur in the
  held-out split together with some other class; NaN for a split holding one class only;
- accuracy (optional);

reported as the mean and the population standard deviation (``ddof=0``, as scikit-learn's
``cv_results_``) over the folds, ignoring NaN folds.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy.sparse import issparse
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, balanced_accuracy_score, roc_auc_score
from sklearn.model_selection import StratifiedGroupKFold, StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from ._estimators import label_vector
from .distances import ArrayLike, to_numpy
from .errors import ProbeError, ProbeTypeError

METRICS: tuple[str, ...] = ("balanced_accuracy", "roc_auc", "accuracy")

Folds = list[tuple[np.ndarray, np.ndarray]]
Layer = int | np.integer


def default_probe() -> Any:
    """``StandardScaler`` then ``LogisticRegression(class_weight="balanced", max_iter=1000)``.

    Standardising puts every hidden dimension on one scale (residual-stream features differ by
    orders of magnitude, and a few massive activations would otherwise dominate the L2 penalty);
    balanced class weights keep the probe from predicting the majority class when failures are
    rare.
    """
    return make_pipeline(
        StandardScaler(), LogisticRegression(class_weight="balanced", max_iter=1000)
    )


def _as_states(X: ArrayLike) -> np.ndarray:
    """X as float64 ``[N, L+1, d]`` (a 2-D ``[N, d]`` becomes one layer)."""
    if issparse(X):
        raise ProbeError("X is a sparse matrix; sparse input is not supported, pass X.toarray()")
    arr = to_numpy(X)
    if arr.ndim not in (2, 3):
        raise ProbeError(
            f"X must have shape [N, L+1, d] (states per layer) or [N, d] (one layer); got "
            f"{arr.ndim} dimensions, shape {arr.shape}. Reshape your data: one row per sample"
        )
    if arr.shape[0] == 0:
        raise ProbeError(f"X has 0 samples (shape={arr.shape}); give at least one")
    if arr.shape[-1] == 0:
        raise ProbeError(
            f"X has 0 feature(s) (shape={arr.shape}) while a minimum of 1 is required."
        )
    if arr.ndim == 2:
        arr = arr[:, None, :]
    if np.iscomplexobj(arr):
        raise ProbeError("X holds complex numbers: Complex data not supported")
    try:
        arr = arr.astype(np.float64, copy=False)
    except (TypeError, ValueError) as err:
        raise ProbeTypeError(f"X must be numeric, got dtype {arr.dtype}: {err}") from err
    if not np.isfinite(arr).all():
        raise ProbeError("X contains NaN or infinite values; drop or impute those samples first")
    return arr


def _as_labels(y: ArrayLike | Sequence[Any], n: int | None, name: str = "y") -> np.ndarray:
    arr = label_vector(y, "LayerwiseProbe", name)
    if arr.ndim != 1:
        raise ProbeError(f"{name} must be one label per sample (1-D); got shape {arr.shape}")
    if n is not None and len(arr) != n:
        raise ProbeError(f"X has {n} samples but {name} has {len(arr)}; give one per sample")
    return arr


def _resolve_layer(layer: Layer, n_layers: int) -> int:
    """A layer index in ``[-n_layers, n_layers)`` as a non-negative index."""
    if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)):
        raise ProbeError(f"a layer index must be an int, got {type(layer).__name__}")
    if not -n_layers <= layer < n_layers:
        raise ProbeError(
            f"layer {int(layer)} is out of range for X with {n_layers} layer slot(s) "
            f"(valid: 0..{n_layers - 1}, or negative from the end)"
        )
    return int(layer) % n_layers


def _select_layers(layers: Layer | Iterable[Layer] | None, n_layers: int) -> list[int]:
    if layers is None:
        return list(range(n_layers))
    seq = [layers] if isinstance(layers, (int, np.integer)) else list(layers)
    if not seq:
        raise ProbeError("layers is empty; give at least one layer index (or None for all)")
    out = [_resolve_layer(layer, n_layers) for layer in seq]
    if len(set(out)) != len(out):
        raise ProbeError(f"layers {seq} name a layer twice")
    return out


def _check_scoring(scoring: str | Sequence[str]) -> tuple[str, ...]:
    names = (scoring,) if isinstance(scoring, str) else tuple(scoring)
    if not names:
        raise ProbeError(f"scoring is empty; choose from {METRICS}")
    unknown = [m for m in names if m not in METRICS]
    if unknown:
        raise ProbeError(f"unknown scoring {unknown}; choose from {METRICS}")
    return names


def _auroc(y_true: np.ndarray, scores: np.ndarray, classes: np.ndarray) -> float:
    """Binary AUROC of ``classes[1]`` or one-vs-rest macro AUROC; NaN if one class is held out."""
    if len(np.unique(y_true)) < 2:
        return float("nan")
    if len(classes) == 2:
        return float(roc_auc_score(y_true == classes[1], scores[:, 1]))
    per_class = [
        roc_auc_score(y_true == c, scores[:, k])
        for k, c in enumerate(classes)
        if 0 < np.sum(y_true == c) < len(y_true)
    ]
    return float(np.mean(per_class))


def _class_scores(estimator: Any, X: np.ndarray) -> np.ndarray:
    """Per-class scores ``[n, C]``: probabilities, else decision values (ranking is what AUROC
    needs)."""
    if hasattr(estimator, "predict_proba"):
        return np.asarray(estimator.predict_proba(X), dtype=np.float64)
    d = np.asarray(estimator.decision_function(X), dtype=np.float64)
    return np.column_stack([-d, d]) if d.ndim == 1 else d


class LayerwiseProbe(ClassifierMixin, BaseEstimator):
    """One cross-validated linear probe per layer (scikit-learn estimator contract).

    Parameters:
        estimator: the classifier fitted at each layer (cloned per layer and per fold); needs
            ``predict`` and ``predict_proba`` or ``decision_function``. None =
            :func:`default_probe` (standardise, then balanced logistic regression).
        layers: layer indices to probe (negative counts from the end); None = every layer.
        cv: number of folds (>= 2), or a scikit-learn splitter (e.g. ``LeaveOneGroupOut`` to
            train on some datasets and test on the held-out one, as the paper's Table 1).
        scoring: metrics to report, from ``("balanced_accuracy", "roc_auc", "accuracy")``; the
            first picks ``best_layer_``.
        random_state: seed of the fold shuffle.

    Folds: with an int ``cv``, ``StratifiedKFold(cv, shuffle=True, random_state)``, or, when
    ``groups`` are given, ``StratifiedGroupKFold(cv, shuffle=True, random_state)`` so that all
    samples of one group (e.g. the wording variants or the five images of one item) fall in the
    same split — never in both train and test. Every layer uses the same folds.

    The fitted attributes (set by ``fit``):

    Attributes:
        layers_: the probed layer indices (non-negative).
        classes_: the sorted class labels.
        folds_: the ``(train, test)`` index arrays, shared by all layers.
        scores_: DataFrame, one row per layer (index ``layer``), columns ``<metric>_mean`` and
            ``<metric>_std`` for each metric of ``scoring`` and ``n_folds``.
        fold_scores_: DataFrame, one row per (layer, fold), the per-fold metrics.
        best_layer_: the layer with the highest mean of ``scoring[0]`` (the first on ties).
        estimators_: dict layer -> the estimator refitted on all samples.
        cv_predictions_: dict layer -> ``[N, C]`` out-of-fold class scores (probabilities when
            the estimator has ``predict_proba``); NaN rows for samples no fold tests.
        n_layers_in_: L+1, the layer slots of the X given to ``fit``.
        n_features_in_: d.
    """

    def __init__(
        self,
        estimator: Any = None,
        layers: Layer | Iterable[Layer] | None = None,
        cv: Any = 5,
        scoring: str | Sequence[str] = ("balanced_accuracy", "roc_auc"),
        random_state: int | np.random.RandomState | None = 0,
    ) -> None:
        self.estimator = estimator
        self.layers = layers
        self.cv = cv
        self.scoring = scoring
        self.random_state = random_state

    # -- fitting -----------------------------------------------------------------------------

    def _folds(self, y: np.ndarray, groups: np.ndarray | None, classes: np.ndarray) -> Folds:
        """The CV splits, checked so that no fold can fail mid-way."""
        n = len(y)
        cv = self.cv
        if isinstance(cv, (int, np.integer)) and not isinstance(cv, bool):
            if cv < 2:
                raise ProbeError(f"cv must be at least 2 folds, got {cv}")
            counts = {c: int(np.sum(y == c)) for c in classes}
            least = min(counts.values())
            if least < cv:
                raise ProbeError(
                    f"the least populated class has {least} samples, fewer than cv={cv} folds "
                    f"(class counts: {counts}); use cv={max(least, 2)} or fewer, or add samples"
                )
            if groups is not None:
                n_groups = len(np.unique(groups))
                if n_groups < cv:
                    raise ProbeError(
                        f"groups has {n_groups} distinct groups, fewer than cv={cv} folds; "
                        f"use cv={n_groups} or fewer"
                    )
                splitter: Any = StratifiedGroupKFold(
                    n_splits=int(cv), shuffle=True, random_state=self.random_state
                )
            else:
                splitter = StratifiedKFold(
                    n_splits=int(cv), shuffle=True, random_state=self.random_state
                )
        elif hasattr(cv, "split"):
            splitter = cv
        else:
            raise ProbeError(f"cv must be an int >= 2 or a scikit-learn splitter, got {cv!r}")
        try:
            folds = [
                (np.asarray(tr), np.asarray(te))
                for tr, te in splitter.split(np.zeros((n, 1)), y, groups)
            ]
        except ValueError as err:
            raise ProbeError(f"the cross-validation splitter refused the data: {err}") from err
        if not folds:
            raise ProbeError("the cross-validation splitter produced no folds")
        for k, (train, _) in enumerate(folds):
            missing = [c for c in classes if not np.any(y[train] == c)]
            if missing:
                raise ProbeError(
                    f"the training split of fold {k} has no sample of class(es) {missing}; "
                    f"use fewer folds or groups that mix the classes"
                )
        return folds

    def fit(
        self,
        X: ArrayLike,
        y: ArrayLike | Sequence[Any],
        groups: ArrayLike | Sequence[Any] | None = None,
    ) -> LayerwiseProbe:
        """Cross-validate a probe per selected layer, then refit each on all samples.

        Args:
            X: ``[N, L+1, d]`` states per layer, or ``[N, d]`` (one layer).
            y: ``[N]`` labels (bool, int or str; two or more classes).
            groups: ``[N]`` group ids; samples of one group never straddle train and test.

        Raises:
            ProbeError (before any fitting): X not 2- or 3-D or not finite; y or groups of
                another length than X; a single class; a class with fewer samples than folds;
                fewer groups than folds; a layer out of range; unknown scoring; a fold whose
                training split lacks a class.
        """
        states = _as_states(X)
        n, n_layers, d = states.shape
        y_arr = _as_labels(y, n)
        try:
            check_classification_targets(y_arr)
        except ValueError as err:
            raise ProbeError(f"y must hold class labels: {err}") from err
        groups_arr = None if groups is None else _as_labels(groups, n, name="groups")
        layers = _select_layers(self.layers, n_layers)
        scoring = _check_scoring(self.scoring)
        classes = np.unique(y_arr)
        if len(classes) < 2:
            raise ProbeError(
                f"y has a single class ({classes.tolist()}); one class cannot be probed, a probe "
                "needs at least two"
            )
        folds = self._folds(y_arr, groups_arr, classes)
        base = default_probe() if self.estimator is None else self.estimator

        rows: list[dict[str, Any]] = []
        oof: dict[int, np.ndarray] = {}
        estimators: dict[int, Any] = {}
        for layer in layers:
            Xl = states[:, layer]
            oof[layer] = np.full((n, len(classes)), np.nan)
            for k, (train, test) in enumerate(folds):
                est = clone(base).fit(Xl[train], y_arr[train])
                scores = _class_scores(est, Xl[test])
                oof[layer][test] = scores
                rows.append(
                    {"layer": layer, "fold": k}
                    | self._fold_metrics(y_arr[test], est.predict(Xl[test]), scores, classes)
                )
            estimators[layer] = clone(base).fit(Xl, y_arr)

        self.fold_scores_ = pd.DataFrame(rows)[["layer", "fold", *scoring]]
        self.scores_ = _aggregate(self.fold_scores_, scoring)
        self.layers_ = layers
        self.classes_ = classes
        self.folds_ = folds
        self.estimators_ = estimators
        self.cv_predictions_ = oof
        self.n_layers_in_ = n_layers
        self.n_features_in_ = d
        main = self.scores_[f"{scoring[0]}_mean"].to_numpy()
        best = int(np.nanargmax(main)) if np.isfinite(main).any() else 0
        self.best_layer_ = layers[best]
        return self

    def _fold_metrics(
        self, y_true: np.ndarray, y_pred: np.ndarray, scores: np.ndarray, classes: np.ndarray
    ) -> dict[str, float]:
        with warnings.catch_warnings():
            # a held-out split may lack a class (groups); the metric is then over those present
            warnings.simplefilter("ignore", UserWarning)
            return {
                "balanced_accuracy": float(balanced_accuracy_score(y_true, y_pred)),
                "roc_auc": _auroc(y_true, scores, classes),
                "accuracy": float(accuracy_score(y_true, y_pred)),
            }

    # -- prediction --------------------------------------------------------------------------

    def _layer_input(self, X: ArrayLike, layer: Layer | None) -> tuple[Any, np.ndarray]:
        check_is_fitted(self, "estimators_")
        if layer is None:
            layer = self.best_layer_
        else:
            layer = _resolve_layer(layer, self.n_layers_in_)
            if layer not in self.estimators_:
                raise ProbeError(f"no probe was fitted at layer {layer}; fitted: {self.layers_}")
        raw = to_numpy(X)
        arr = _as_states(raw)
        if raw.ndim == 2:  # already the states of that one layer
            Xl = arr[:, 0]
        elif arr.shape[1] == self.n_layers_in_:
            Xl = arr[:, layer]
        else:
            raise ProbeError(
                f"X has {arr.shape[1]} layer slots but the probe was fitted on "
                f"{self.n_layers_in_}; give [N, {self.n_layers_in_}, d] or the [N, d] states "
                f"of layer {layer}"
            )
        if Xl.shape[1] != self.n_features_in_:
            raise ProbeError(
                f"X has {Xl.shape[1]} features, but LayerwiseProbe is expecting "
                f"{self.n_features_in_} features as input (features per layer, as fitted)"
            )
        return self.estimators_[layer], Xl

    def predict_proba(self, X: ArrayLike, layer: Layer | None = None) -> np.ndarray:
        """``[N, C]`` class probabilities (columns ordered as ``classes_``) from the probe refitted
        at ``layer`` (default ``best_layer_``). X: ``[N, L+1, d]`` or that layer's ``[N, d]``."""
        est, Xl = self._layer_input(X, layer)
        return np.asarray(est.predict_proba(Xl))

    def predict(self, X: ArrayLike, layer: Layer | None = None) -> np.ndarray:
        """``[N]`` predicted labels of the probe at ``layer`` (default ``best_layer_``)."""
        est, Xl = self._layer_input(X, layer)
        return np.asarray(est.predict(Xl))

    def score(
        self,
        X: ArrayLike,
        y: ArrayLike | Sequence[Any],
        layer: Layer | None = None,
        sample_weight: ArrayLike | None = None,
    ) -> float:
        """Balanced accuracy of :meth:`predict` at ``layer`` (default ``best_layer_``) on (X, y)."""
        pred = self.predict(X, layer)
        y_arr = _as_labels(y, len(pred))
        return float(balanced_accuracy_score(y_arr, pred, sample_weight=sample_weight))

    # -- reporting ---------------------------------------------------------------------------

    def to_frame(self) -> pd.DataFrame:
        """The per-layer score table (a copy of ``scores_``)."""
        check_is_fitted(self, "scores_")
        return self.scores_.copy()

    def plot(self, metrics: Sequence[str] | None = None, ax: Any = None) -> Any:
        """Mean ± std (over folds, clipped to the metric's range [0, 1]) of each metric against
        the layer, best layer marked; returns the Figure."""
        from ._figures import subplots  # lazily: importing probes must stay light

        check_is_fitted(self, "scores_")
        names = _check_scoring(self.scoring if metrics is None else metrics)
        fig, ax = (ax.figure, ax) if ax is not None else subplots(figsize=(5.5, 3.6))
        x = self.scores_.index.to_numpy()
        for name in names:
            if f"{name}_mean" not in self.scores_:
                raise ProbeError(f"{name} was not scored; fit with it in scoring")
            mean = self.scores_[f"{name}_mean"].to_numpy()
            std = self.scores_[f"{name}_std"].to_numpy()
            (line,) = ax.plot(x, mean, marker="o", ms=3, label=name.replace("_", " "))
            # every metric here lies in [0, 1]: so does its band
            low, high = np.clip(mean - std, 0.0, 1.0), np.clip(mean + std, 0.0, 1.0)
            ax.fill_between(x, low, high, color=line.get_color(), alpha=0.2)
        ax.axvline(self.best_layer_, color="k", ls="--", lw=1)
        ax.axhline(0.5, color="grey", ls=":", lw=1)  # chance level of both default metrics
        ax.set_xlabel("layer (0 = embeddings)")
        ax.set_ylabel("cross-validated score")
        ax.set_title("Layer-wise probe")
        ax.legend(frameon=False)
        fig.tight_layout()
        return fig


def _aggregate(fold_scores: pd.DataFrame, scoring: tuple[str, ...]) -> pd.DataFrame:
    """Per-layer mean and population std over the folds, NaN folds left out."""
    out: dict[str, Any] = {}
    grouped = fold_scores.groupby("layer", sort=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a layer whose folds are all NaN
        for name in scoring:
            out[f"{name}_mean"] = grouped[name].agg(lambda s: np.nanmean(s.to_numpy()))
            out[f"{name}_std"] = grouped[name].agg(lambda s: np.nanstd(s.to_numpy()))
    frame = pd.DataFrame(out)
    frame["n_folds"] = grouped.size()
    frame.index.name = "layer"
    return frame


__all__ = ["METRICS", "LayerwiseProbe", "default_probe"]
