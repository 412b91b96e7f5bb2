"""Table 2: linear probes on the Visual setting's states that flag linking failures, against the
majority and perplexity baselines, with selective prediction, evaluated by nested cross-validation
(:func:`failure_probes` → :class:`FailureProbes`); :mod:`~interp.studies.recall.crossfamily` shares its fitting
helpers."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from sklearn.model_selection import StratifiedGroupKFold, StratifiedKFold
from threadpoolctl import threadpool_limits

from interp.errors import EmptyInputError, ProbeError, RecallError
from interp.reprs import Summary
from probes.distances import to_numpy
from probes.layerwise import LayerwiseProbe, _select_layers
from probes.selective import (
    EnsembleConfidence,
    MajorityBaseline,
    PerplexityThreshold,
    RiskCoverage,
)

from .analysis import method_table, risk_curves, selective_frame
from .result import RecallRun
from .settings import GROUPINGS


def _groups(run: RecallRun, rows: np.ndarray, groups: str | None) -> np.ndarray | None:
    if groups is None or groups == "none":
        return None
    if groups not in GROUPINGS:
        raise RecallError(f"groups must be one of {GROUPINGS}, got {groups!r}")
    items = [run.items[i] for i in np.flatnonzero(rows)]
    if groups == "pair":
        return np.asarray([item.pair for item in items])
    if groups == "entity":
        return np.asarray([f"{item.family}|{item.entity}" for item in items])
    return np.asarray([item.id for item in items])


def _labels(run: RecallRun, rows: np.ndarray, metric: str, what: str) -> np.ndarray:
    if metric == "bleu":
        raise RecallError("probe labels are binary: use metric 'inclusion' or 'exact'")
    y = run.correct("visual", metric)[rows]
    if len(y) == 0:
        raise EmptyInputError(f"{what}: no items")
    if y.all() or not y.any():
        raise ProbeError(
            f"{what}: the {len(y)} Visual answers are all "
            f"{'correct' if y.all() else 'wrong'}, so there is a single class; a failure probe "
            "needs both linking successes and failures (use more items or another family)"
        )
    return y


def _check_folds(
    y: np.ndarray, groups: np.ndarray | None, cv: int, what: str, option: str = "cv"
) -> None:
    """The checks LayerwiseProbe would make, up front, so nothing is fitted on bad input."""
    if isinstance(cv, bool) or not isinstance(cv, (int, np.integer)) or cv < 2:
        raise ProbeError(f"{option} must be an int >= 2 folds, got {cv!r}")
    least = int(min(y.sum(), (~y).sum()))
    if least < cv:
        fix = f"use {option}={least} or fewer, or more items" if least >= 2 else "use more items"
        raise ProbeError(
            f"{what}: the least populated class has {least} item(s) ({int(y.sum())} correct, "
            f"{int((~y).sum())} wrong), fewer than {option}={cv} folds; {fix}"
        )
    if groups is not None and len(np.unique(groups)) < cv:
        raise ProbeError(
            f"{what}: {len(np.unique(groups))} groups, fewer than {option}={cv} folds; use fewer "
            "folds or groups='item'"
        )


def _splitter(cv: int, groups: np.ndarray | None, seed: int) -> Any:
    if groups is None:
        return StratifiedKFold(n_splits=cv, shuffle=True, random_state=seed)
    return StratifiedGroupKFold(n_splits=cv, shuffle=True, random_state=seed)


def _fit_methods(
    X: np.ndarray,
    y: np.ndarray,
    ppl: np.ndarray,
    groups: np.ndarray | None,
    *,
    layers: Any,
    cv: int,
    estimator: Any,
    seed: int,
    layer: int | None,
) -> dict[str, Any]:
    """Fit the probe (layer chosen by CV unless given), the perplexity threshold, the majority
    baseline and the ensemble on one training set."""
    probe = LayerwiseProbe(
        estimator=estimator, layers=layers if layer is None else [layer], cv=cv, random_state=seed
    )
    probe.fit(X, y, groups)
    chosen = int(probe.best_layer_)
    threshold = PerplexityThreshold().fit(ppl, y)
    majority = MajorityBaseline().fit(np.zeros((len(y), 1)), y)
    p_oof = probe.cv_predictions_[chosen][:, list(probe.classes_).index(True)]
    both = np.column_stack([p_oof, threshold.decision_function(ppl)])
    ensemble = EnsembleConfidence().fit(both, y)
    # The ensemble answers where its P(correct) clears a cut learned like the perplexity
    # baseline's (balanced accuracy on the training split), so all three methods work at a
    # balanced operating point; a fixed 0.5 on base-rate-calibrated probabilities would answer
    # almost nothing where most answers are wrong.
    cut = PerplexityThreshold(log_scale=False).fit(1.0 - ensemble.predict_proba(both)[:, 1], y)
    return {
        "probe": probe,
        "layer": chosen,
        "threshold": threshold,
        "majority": majority,
        "ensemble": ensemble,
        "ensemble_cut": cut,
    }


def _predict_methods(fitted: dict[str, Any], X: np.ndarray, ppl: np.ndarray) -> dict[str, Any]:
    probe, layer = fitted["probe"], fitted["layer"]
    p = probe.predict_proba(X, layer)[:, list(probe.classes_).index(True)]
    conf_ppl = fitted["threshold"].decision_function(ppl)
    p_ens = fitted["ensemble"].predict_proba(np.column_stack([p, conf_ppl]))[:, 1]
    return {
        "layer": layer,
        "p_probe": p,
        "answer_probe": np.asarray(probe.predict(X, layer), dtype=bool),
        "conf_perplexity": conf_ppl,
        "answer_perplexity": np.asarray(fitted["threshold"].predict(ppl), dtype=bool),
        "p_ensemble": p_ens,
        "answer_ensemble": np.asarray(fitted["ensemble_cut"].predict(1.0 - p_ens), dtype=bool),
        "answer_majority": np.asarray(
            fitted["majority"].predict(np.zeros((len(ppl), 1))), dtype=bool
        ),
    }


@dataclass(repr=False)
class FailureProbes(Summary):
    """Probes that flag linking failures within one family (or all pooled), Table 2.

    Attributes:
        family: the family, or ``"all"``.
        curve: a :class:`probes.LayerwiseProbe` cross-validated on every item at every layer: the
            validation curve over layers (``curve.scores_``) and the layer it chooses
            (``curve.best_layer_``, the paper's "layer 20").
        predictions: one row per item, out-of-fold by nested cross-validation: in each outer fold
            the layer is chosen by an inner CV on the outer training split only, so the reported
            accuracies are not biased by the choice. Columns ``item_id``, ``family``,
            ``correct``, ``fold``, ``layer``, ``perplexity``, and per method ``answer_<method>``
            plus its score (``p_probe``, ``conf_perplexity``, ``p_ensemble``).
        settings: the options used.
    """

    family: str
    curve: LayerwiseProbe
    predictions: pd.DataFrame
    settings: dict[str, Any]

    def _repr_head(self) -> dict[str, Any]:
        return {"family": self.family, "layer": self.layer, "rows": len(self.predictions)}

    @property
    def layer(self) -> int:
        """The layer chosen by validation on all items."""
        return int(self.curve.best_layer_)

    def table(self, *, ci: float = 0.95, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
        """Table 2: accuracy of the majority, perplexity, probe (and ensemble) at flagging
        failures (:func:`method_table`)."""
        return method_table(self.predictions, ci=ci, n_boot=n_boot, seed=seed).assign(
            family=self.family
        )

    def selective(self, *, ci: float = 0.95, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
        """In-distribution selective prediction (:func:`selective_frame`)."""
        return selective_frame(self.predictions, ci=ci, n_boot=n_boot, seed=seed).assign(
            family=self.family
        )

    def risk_curves(self) -> dict[str, RiskCoverage]:
        """The risk-coverage curve of each method, from the out-of-fold predictions."""
        return risk_curves(self.predictions)

    def to_frame(self) -> pd.DataFrame:
        """Table 2 with its default intervals (:meth:`table`)."""
        return self.table()


def _one_thread(fn: Any) -> Any:
    """Run ``fn`` with one BLAS / OpenMP thread: the probes are many small logistic fits, which
    run several times faster on one thread than on two of a 2-core CPU (``bench/recall.py``)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with threadpool_limits(limits=1):
            return fn(*args, **kwargs)

    return wrapper


def _probe_inputs(
    run: RecallRun, rows: np.ndarray, metric: str, groups: str | None, what: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    y = _labels(run, rows, metric, what)
    X = to_numpy(run.states["visual"])[rows].astype(np.float64)
    return X, y, run.perplexity[rows], _groups(run, rows, groups)


@_one_thread
def failure_probes(
    run: RecallRun,
    family: str | None = None,
    *,
    layers: Sequence[int] | None = None,
    layer: int | None = None,
    cv: int = 5,
    inner_cv: int = 3,
    groups: str | None = "pair",
    subset: str = "kept",
    metric: str = "inclusion",
    estimator: Any = None,
    seed: int = 0,
) -> FailureProbes:
    """Linear probes on the Visual setting's last-prompt-token state that flag linking failures
    (Sec. 6.2, Table 2), against the majority-class ("Random") and perplexity-threshold
    baselines, with selective prediction of perplexity, probe and ensemble.

    Label: ``y_i = 1`` when the Visual answer is right (by ``metric``); the probe's
    ``P(y = 1 | h_i^(l))`` is its confidence; it flags a failure when that is below 0.5
    (balanced logistic regression on standardised states, :func:`probes.layerwise.default_probe`).
    Baselines: the most frequent training class; a threshold on the answer's per-token
    perplexity learned on the training split (:class:`probes.selective.PerplexityThreshold`).
    Ensemble: the mean of the calibrated probe and perplexity probabilities
    (:class:`probes.selective.EnsembleConfidence`, calibrated on out-of-fold probe outputs); it
    answers where that mean clears a cut learned on the training split by balanced accuracy (the
    perplexity baseline's rule), so the three methods decide at comparable, balanced operating
    points (the probe: balanced class weights, cut 0.5).

    Fits run on one BLAS thread (see ``bench/recall.py``). Evaluation is nested cross-validation:
    ``cv`` outer folds; inside each outer training split,
    a :class:`probes.LayerwiseProbe` with ``inner_cv`` folds chooses the layer (unless ``layer``
    fixes it) and every method is fitted there, then predicts the outer test split.

    Args:
        family: one family, or None for every item pooled.
        layers: layers the probe may use (None: all of 0..L).
        layer: fix the probe's layer instead of choosing it by validation.
        groups: items sharing a group never straddle train and test: ``"pair"`` (one question-
            answer pair of an entity, the paper's five images of one pair; default), ``"entity"``,
            ``"item"``, or None.
        subset: ``"kept"`` (the filtered benchmark) or ``"all"``.

    Raises:
        UnknownFamilyError: a family the run lacks (before any fitting, as the next).
        ProbeError: a single class, fewer items of a class (or groups) than folds in the data or
            in an outer training split.
    """
    what = f"family {family!r}" if family else "all families"
    rows = run.mask(subset, family)
    X, y, ppl, grp = _probe_inputs(run, rows, metric, groups, what)
    _check_folds(y, grp, cv, what)

    _select_layers(layers, X.shape[1])  # a bad layer is refused before any fitting
    if layer is not None:
        _select_layers([layer], X.shape[1])
    folds = list(_splitter(cv, grp, seed).split(np.zeros((len(y), 1)), y, grp))
    for k, (train, _) in enumerate(folds):
        _check_folds(
            y[train],
            None if grp is None else grp[train],
            inner_cv,
            f"{what}, outer fold {k}",
            "inner_cv",
        )

    curve = LayerwiseProbe(estimator=estimator, layers=layers, cv=cv, random_state=seed)
    curve.fit(X, y, grp)
    parts = []
    item_ids = run.frame["item_id"].to_numpy()[rows]
    fams = run.frame["family"].to_numpy()[rows]
    for k, (train, test) in enumerate(folds):
        fitted = _fit_methods(
            X[train],
            y[train],
            ppl[train],
            None if grp is None else grp[train],
            layers=layers,
            cv=inner_cv,
            estimator=estimator,
            seed=seed,
            layer=layer,
        )
        pred = _predict_methods(fitted, X[test], ppl[test])
        parts.append(
            pd.DataFrame(
                {
                    "item_id": item_ids[test],
                    "family": fams[test],
                    "correct": y[test],
                    "fold": k,
                    "perplexity": ppl[test],
                    **pred,
                }
            )
        )
    order = {iid: i for i, iid in enumerate(item_ids)}
    predictions = pd.concat(parts, ignore_index=True)
    predictions = predictions.sort_values("item_id", key=lambda s: s.map(order)).reset_index(
        drop=True
    )
    settings = {
        "cv": cv,
        "inner_cv": inner_cv,
        "groups": groups,
        "subset": subset,
        "metric": metric,
        "layer": layer,
        "seed": seed,
    }
    return FailureProbes(family or "all", curve, predictions, settings)
