"""scikit-learn's estimator contract on every estimator ``probes`` exports.

Estimators over a feature matrix run scikit-learn's own ``check_estimator`` suite
(``parametrize_with_checks``). Estimators whose input is one score per sample declare it
(``one_d_array``, not ``two_d_array``), as scikit-learn's own one-dimensional estimators do, and
scikit-learn skips its data checks for them: they, and :class:`probes.vip.VIPDetector` (a
two-sample test over ``[N, L+1]`` distances with a binary split, not a predictor), run the
checks that need no data, plus the same contract checked here on data they accept.
"""

from __future__ import annotations

import inspect
import pickle
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import jaxtyping
import numpy as np
import pytest
from scipy import sparse
from sklearn.base import BaseEstimator, clone
from sklearn.exceptions import NotFittedError
from sklearn.utils import estimator_checks as ec
from sklearn.utils.estimator_checks import parametrize_with_checks

import probes
from probes.errors import InterpError
from probes.layerwise import LayerwiseProbe
from probes.selective import (
    EnsembleConfidence,
    LogisticCalibrator,
    MajorityBaseline,
    PerplexityThreshold,
)
from probes.vip import VIPDetector

# Feature-matrix estimators: instances checked by scikit-learn's full suite.
FULL: dict[str, list[BaseEstimator]] = {
    "LayerwiseProbe": [LayerwiseProbe(), LayerwiseProbe(cv=2, layers=0)],
    "EnsembleConfidence": [EnsembleConfidence()],
    "MajorityBaseline": [MajorityBaseline()],
}
# Checks that cannot pass by design, with the reason (keep minimal).
EXPECTED_FAILURES: dict[str, dict[str, str]] = {
    "LayerwiseProbe(cv=5)": {
        "check_fit2d_1feature": "5-fold CV refuses the check's 10 samples (3 in one class) "
        "before fitting: fewer samples of a class than folds",
    },
}


def _key(estimator: BaseEstimator) -> str:
    name = type(estimator).__name__
    cv = estimator.get_params().get("cv")
    return f"{name}(cv={cv})" if cv is not None else name


def expected_failed(estimator: BaseEstimator) -> dict[str, str]:
    return EXPECTED_FAILURES.get(_key(estimator), {})


def _perplexities(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    s = rng.normal(size=n)
    return np.exp(1 + s), (s + 0.7 * rng.normal(size=n)) < 0


def _scores(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    s = rng.normal(size=n)
    return s, (s + 0.7 * rng.normal(size=n)) > 0


def _distances(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    split = np.arange(n) % 2 == 0
    d = rng.normal(size=(n, 6)) + np.outer(split, [0, 0, 0, 2, 2, 2])
    return d, split


# One-score estimators and other non-matrix estimators: data they accept.
OTHER: dict[str, tuple[BaseEstimator, Callable[[np.random.Generator, int], Any]]] = {
    "PerplexityThreshold": (PerplexityThreshold(), _perplexities),
    "LogisticCalibrator": (LogisticCalibrator(), _scores),
    "VIPDetector": (VIPDetector(), _distances),
}
ONE_D = ["PerplexityThreshold", "LogisticCalibrator"]

# the checks of scikit-learn's suite that need no data
DATA_FREE = [
    ec.check_estimator_cloneable,
    ec.check_estimator_repr,
    ec.check_no_attributes_set_in_init,
    ec.check_parameters_default_constructible,
    ec.check_get_params_invariance,
    ec.check_set_params,
    ec.check_do_not_raise_errors_in_init_or_set_params,
    ec.check_mixin_order,
    ec.check_valid_tag_types,
    ec.check_estimator_tags_renamed,
]


# checks that construct estimators with arbitrary values (a constructor only stores them): the
# suite's run-time annotation checker (conftest) would refuse those values before the library sees
# them, so these checks run as a user's code runs, without it
UNCHECKED = {"check_do_not_raise_errors_in_init_or_set_params"}


@contextmanager
def as_users_run(check: Any) -> Iterator[None]:
    name = getattr(check, "func", check).__name__
    if name not in UNCHECKED:
        yield
        return
    before = jaxtyping.config.jaxtyping_disable
    jaxtyping.config.update("jaxtyping_disable", True)
    try:
        yield
    finally:
        jaxtyping.config.update("jaxtyping_disable", before)


def exported_estimators() -> list[type]:
    out = []
    for name in probes.__all__:
        obj = getattr(probes, name)
        if inspect.isclass(obj) and issubclass(obj, BaseEstimator):
            out.append(obj)
    return out


def test_every_exported_estimator_is_checked():
    found = {cls.__name__ for cls in exported_estimators()}
    assert len(found) >= 6, found
    covered = set(FULL) | set(OTHER)
    assert found <= covered, (
        f"probes exports estimators this suite does not check: {sorted(found - covered)}; add "
        "them to FULL (scikit-learn's suite) or OTHER (with data they accept)"
    )


@parametrize_with_checks(
    [est for ests in FULL.values() for est in ests], expected_failed_checks=expected_failed
)
def test_sklearn_estimator_checks(estimator, check):
    with as_users_run(check):
        check(estimator)


def test_expected_failures_still_fail():
    """Each listed failure is real: when it starts passing, the entry should go."""
    for estimator in (est for ests in FULL.values() for est in ests):
        listed = expected_failed(estimator)
        if not listed:
            continue
        before = jaxtyping.config.jaxtyping_disable
        jaxtyping.config.update("jaxtyping_disable", True)  # as a user's code runs
        try:
            results = ec.check_estimator(estimator, expected_failed_checks=listed, on_fail=None)
        finally:
            jaxtyping.config.update("jaxtyping_disable", before)
        failed = {r["check_name"] for r in results if r["status"] == "failed"}
        assert not failed, f"{_key(estimator)}: unexpected failures {failed}"
        xfailed = {r["check_name"] for r in results if r["status"] == "xfail"}
        stale = set(listed) - xfailed
        assert not stale, f"{_key(estimator)}: {stale} no longer fail; drop them"


@pytest.mark.parametrize("name", list(OTHER))
@pytest.mark.parametrize("check", DATA_FREE, ids=lambda c: c.__name__)
def test_data_free_checks(name, check):
    estimator, _ = OTHER[name]
    with as_users_run(check):
        check(name, clone(estimator))


@pytest.mark.parametrize("name", ONE_D)
def test_one_score_estimators_declare_their_input(name):
    tags = OTHER[name][0].__sklearn_tags__()
    assert tags.input_tags.one_d_array and not tags.input_tags.two_d_array


@pytest.mark.parametrize("name", list(OTHER))
def test_fit_contract_on_data_they_accept(name):
    """fit returns self; everything it learns ends in '_' (nothing before fit); a clone holds
    the parameters only; pickling keeps the fitted state."""
    rng = np.random.default_rng(0)
    template, data = OTHER[name]
    X, y = data(rng, 60)
    estimator = clone(template)
    before = set(vars(estimator))
    assert before == set(estimator.get_params())
    assert estimator.fit(X, y) is estimator
    learned = set(vars(estimator)) - before
    assert learned and all(k.endswith("_") and not k.startswith("_") for k in learned), learned
    assert clone(estimator).get_params() == estimator.get_params()
    assert not set(vars(clone(estimator))) & learned
    again = pickle.loads(pickle.dumps(estimator))
    if hasattr(estimator, "predict"):
        np.testing.assert_array_equal(again.predict(X), estimator.predict(X))
    else:
        assert again.layer_ == estimator.layer_
        np.testing.assert_array_equal(again.statistic_, estimator.statistic_)
    # refitting on the same data is idempotent
    first = {k: getattr(estimator, k) for k in learned if isinstance(getattr(estimator, k), float)}
    estimator.fit(X, y)
    assert first == {k: getattr(estimator, k) for k in first}


@pytest.mark.parametrize("name", ONE_D)
def test_one_score_estimators_validate_their_input(name):
    rng = np.random.default_rng(1)
    template, data = OTHER[name]
    x, y = data(rng, 40)
    unfitted = clone(template)
    for method in ("predict", "predict_proba"):
        with pytest.raises(NotFittedError):
            getattr(unfitted, method)(x)
    fitted = clone(template).fit(x, y)
    assert fitted.n_features_in_ == 1
    # a [N, 1] column is the same input
    np.testing.assert_array_equal(clone(template).fit(x[:, None], y).predict(x), fitted.predict(x))
    np.testing.assert_allclose(fitted.predict_proba(x[:, None]), fitted.predict_proba(x))
    bad: list[tuple[Any, Any, str]] = [
        (np.column_stack([x, x]), y, "1-D"),
        (sparse.csr_matrix(x[:, None]), y, "sparse"),
        (np.where(np.arange(40) == 3, np.nan, x), y, "NaN"),
        (x[:0], y[:0], "empty"),
        (x, None, ""),
        (x, np.ones(40, bool), "single class"),
        (x, np.arange(40) % 3, "bool or 0/1"),
    ]
    for X_bad, y_bad, match in bad:
        with pytest.raises(InterpError, match=match):
            clone(template).fit(X_bad, y_bad)
    with pytest.raises(InterpError, match="1-D"):
        fitted.predict(np.column_stack([x, x]))
