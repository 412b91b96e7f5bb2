"""probes.selective against brute-force loops and hand-fitted scikit-learn models."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import balanced_accuracy_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from interp.testing.tolerance import assert_close
from probes.errors import EmptyInputError, ProbeError
from probes.selective import (
    EnsembleConfidence,
    LogisticCalibrator,
    MajorityBaseline,
    PerplexityThreshold,
    answer_perplexity,
    coverage_risk,
    ensemble_scores,
    risk_coverage,
    selective_table,
)


def brute_curve(scores: np.ndarray, correct: np.ndarray) -> list[tuple[float, float, float]]:
    """(threshold, coverage, risk) of "answer when score >= t" for each distinct t, high to low."""
    out = []
    for t in sorted(set(scores.tolist()), reverse=True):
        answered = [i for i in range(len(scores)) if scores[i] >= t]
        errors = sum(1 for i in answered if not correct[i])
        out.append((t, len(answered) / len(scores), errors / len(answered)))
    return out


def tied_data(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, 8, 50) / 4.0  # many ties
    correct = rng.random(50) < 0.3 + 0.08 * scores
    return scores, correct


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_risk_coverage_equals_a_brute_force_threshold_sweep(seed):
    scores, correct = tied_data(seed)
    rc = risk_coverage(scores, correct)
    ref = brute_curve(scores, correct)
    np.testing.assert_allclose(rc.thresholds, [t for t, _, _ in ref])
    np.testing.assert_allclose(rc.coverage, [c for _, c, _ in ref])
    np.testing.assert_allclose(rc.risk, [r for _, _, r in ref])
    # AURC: every item adds 1/N times the risk of the threshold step it is answered in
    step_risk = {t: r for t, _, r in ref}
    assert rc.aurc == pytest.approx(sum(step_risk[s] for s in scores.tolist()) / len(scores))
    frame = rc.to_frame()
    assert list(frame.columns) == ["threshold", "coverage", "risk"] and len(frame) == len(ref)


def test_aurc_without_ties_is_the_mean_risk_over_the_n_coverage_points():
    rng = np.random.default_rng(3)
    scores = rng.normal(size=40)
    correct = rng.random(40) < 0.6
    order = sorted(range(40), key=lambda i: -scores[i])
    risks = [sum(not correct[i] for i in order[:k]) / k for k in range(1, 41)]
    rc = risk_coverage(scores, correct)
    assert len(rc.coverage) == 40
    assert rc.aurc == pytest.approx(sum(risks) / 40)


def test_a_small_curve_by_hand():
    rc = risk_coverage([0.9, 0.6, 0.8, 0.7], [True, True, True, False])
    # answer order 0.9 (ok), 0.8 (ok), 0.7 (wrong), 0.6 (ok)
    np.testing.assert_allclose(rc.coverage, [0.25, 0.5, 0.75, 1.0])
    np.testing.assert_allclose(rc.risk, [0.0, 0.0, 1 / 3, 1 / 4])
    assert rc.aurc == pytest.approx((0 + 0 + 1 / 3 + 1 / 4) / 4)
    assert rc.coverage_at(0.0) == 0.5 and rc.threshold_at(0.0) == 0.8
    assert rc.coverage_at(0.3) == 1.0  # 1/4 <= 0.3 although 1/3 is not
    assert rc.coverage_at(1.0) == 1.0 and rc.threshold_at(1.0) == 0.6
    tied = risk_coverage([1.0, 1.0, 0.0], [True, False, True])
    np.testing.assert_allclose(tied.coverage, [2 / 3, 1.0])  # the tie is one step
    np.testing.assert_allclose(tied.risk, [0.5, 1 / 3])


@pytest.mark.parametrize("target", [0.0, 0.1, 0.25, 0.4, 0.6, 1.0])
def test_coverage_at_is_the_largest_coverage_within_the_risk(target):
    scores, correct = tied_data(4)
    ref = brute_curve(scores, correct)
    ok = [(c, t) for t, c, r in ref if r <= target]
    rc = risk_coverage(scores, correct)
    assert rc.coverage_at(target) == (max(ok)[0] if ok else 0.0)
    assert rc.threshold_at(target) == (max(ok)[1] if ok else math.inf)


def test_nothing_within_the_risk_means_abstaining():
    rc = risk_coverage([0.9, 0.1], [False, True])
    assert rc.coverage_at(0.2) == 0.0 and rc.threshold_at(0.2) == math.inf


def test_coverage_risk_of_binary_decisions():
    res = coverage_risk([True, True, False, True, False], [True, False, False, True, True])
    assert (res.coverage, res.n_answered, res.n_errors, res.n) == (0.6, 3, 1, 5)
    assert res.risk == pytest.approx(1 / 3)
    assert math.isnan(coverage_risk([False, False], [True, False]).risk)
    table = selective_table({"a": [1, 1, 0], "b": [1, 1, 1]}, [1, 0, 0])
    assert table.loc["a", "coverage"] == pytest.approx(2 / 3) and table.loc["a", "risk"] == 0.5
    assert table.loc["b", "risk"] == pytest.approx(2 / 3)


def brute_threshold(ppl: np.ndarray, correct: np.ndarray, log_scale: bool) -> tuple[float, float]:
    """The candidate "answer when ppl <= u" with the best balanced accuracy (first on ties), put
    half-way (arithmetic or geometric) to the next distinct perplexity."""
    values = sorted(set(ppl.tolist()))
    best, best_j = -1.0, -1
    for j, u in enumerate(values):
        ba = balanced_accuracy_score(correct, ppl <= u)
        if ba > best:
            best, best_j = ba, j
    if best_j == len(values) - 1:
        return values[-1], best
    a, b = values[best_j], values[best_j + 1]
    return (math.sqrt(a * b) if log_scale else (a + b) / 2), best


@pytest.mark.parametrize("log_scale", [True, False])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_perplexity_threshold_equals_a_brute_force_search(seed, log_scale):
    rng = np.random.default_rng(seed)
    ppl = np.round(np.exp(rng.normal(1.0, 0.6, 60)), 1)  # rounding makes ties
    correct = rng.random(60) < 1 / (1 + np.exp(2 * (np.log(ppl) - 1)))
    model = PerplexityThreshold(log_scale=log_scale).fit(ppl, correct)
    threshold, ba = brute_threshold(ppl, correct, log_scale)
    assert model.threshold_ == pytest.approx(threshold, rel=1e-12)
    assert model.train_balanced_accuracy_ == pytest.approx(ba)
    np.testing.assert_array_equal(model.predict(ppl), ppl <= threshold)
    # the confidence is >= 0 exactly where the rule answers, and decreases with perplexity
    np.testing.assert_array_equal(model.decision_function(ppl) >= 0, model.predict(ppl))
    grid = np.linspace(1.0, 20.0, 50)
    assert (np.diff(model.decision_function(grid)) < 0).all()
    proba = model.predict_proba(grid)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert (np.diff(proba[:, 1]) <= 0).all()


def test_a_perplexity_that_ranks_backwards_answers_everything():
    # higher perplexity is *more* often correct here, so no threshold beats answering everything
    ppl = np.array([2.0, 3.0, 4.0, 5.0])
    model = PerplexityThreshold().fit(ppl, [False, False, True, True])
    assert model.threshold_ == 5.0 and model.train_balanced_accuracy_ == 0.5
    assert model.predict(ppl).all()


def test_answer_perplexity():
    assert answer_perplexity([math.log(0.5), math.log(0.25)]) == pytest.approx(
        math.exp(-(math.log(0.5) + math.log(0.25)) / 2)
    )
    with pytest.raises(ProbeError, match="log-probabilities"):
        answer_perplexity([0.5])


def test_majority_baseline_is_the_base_rate():
    y = np.array([1, 0, 1, 1, 0, 1])
    X = np.zeros((6, 3))
    model = MajorityBaseline().fit(X, y)
    np.testing.assert_array_equal(model.predict(X), np.ones(6))
    assert model.score(X, y) == pytest.approx(4 / 6)
    assert clone(model).get_params() == {}


def hand_calibrated(train: np.ndarray, y: np.ndarray, test: np.ndarray) -> np.ndarray:
    pipe = make_pipeline(StandardScaler(), LogisticRegression()).fit(train[:, None], y)
    return pipe.predict_proba(test[:, None])[:, 1]


def test_ensemble_averages_calibrated_probabilities():
    rng = np.random.default_rng(5)
    y = rng.random(80) < 0.5
    probe = np.clip(0.5 + 0.3 * (y - 0.5) + rng.normal(0, 0.2, 80), 0, 1)
    ppl_conf = -np.abs(rng.normal(2 - y, 1.0))
    S = np.column_stack([probe, ppl_conf])
    test = S[:10] + rng.normal(0, 0.1, (10, 2))
    model = EnsembleConfidence().fit(S, y)
    expected = (
        hand_calibrated(probe, y, test[:, 0]) + hand_calibrated(ppl_conf, y, test[:, 1])
    ) / 2
    assert_close(model.decision_function(test), expected - 0.5)
    np.testing.assert_array_equal(model.predict(test), expected >= 0.5)
    assert_close(model.predict_proba(test)[:, 1], expected)
    single = LogisticCalibrator().fit(probe, y).predict_proba(test[:, 0])[:, 1]
    assert_close(single, hand_calibrated(probe, y, test[:, 0]))


def test_ensemble_of_ready_probabilities_is_their_mean():
    p, q = np.array([0.2, 0.9, 0.5]), np.array([0.6, 0.7, 0.1])
    np.testing.assert_allclose(ensemble_scores(p, q), [0.4, 0.8, 0.3])
    np.testing.assert_allclose(ensemble_scores(p, q, weights=[3, 1]), (3 * p + q) / 4)
    model = EnsembleConfidence(calibrate=False).fit(np.column_stack([p, q]), [0, 1, 0])
    np.testing.assert_allclose(model.predict_proba(np.column_stack([p, q]))[:, 1], [0.4, 0.8, 0.3])
    np.testing.assert_array_equal(model.predict(np.column_stack([p, q])), [0, 1, 0])


def test_bad_inputs_raise_typed_errors():
    with pytest.raises(ProbeError, match="has 2 values, expected 3"):
        ensemble_scores([0.1, 0.2, 0.3], [0.1, 0.2])
    with pytest.raises(ProbeError, match="outside"):
        ensemble_scores([0.1, 1.2])
    with pytest.raises(ProbeError, match="outside"):
        EnsembleConfidence(calibrate=False).fit([[0.1, 3.0], [0.2, 0.5]], [0, 1])
    with pytest.raises(ProbeError, match="expecting 2 features"):
        EnsembleConfidence().fit([[0.1, 3.0], [0.2, 0.5]], [0, 1]).predict([[0.1, 0.2, 0.3]])
    with pytest.raises(ProbeError, match="weights"):
        EnsembleConfidence(weights=[1, 1, 1]).fit([[0.1, 3.0], [0.2, 0.5]], [0, 1])
    with pytest.raises(ProbeError, match="single class"):
        PerplexityThreshold().fit([1.5, 2.0, 3.0], [True, True, True])
    with pytest.raises(ProbeError, match="> 0"):
        PerplexityThreshold().fit([0.0, 2.0], [True, False])
    with pytest.raises(ProbeError, match="length 3"):
        risk_coverage([0.1, 0.2, 0.3], [True, False])
    with pytest.raises(ProbeError, match="NaN"):
        risk_coverage([0.1, np.nan], [True, False])
    with pytest.raises(ProbeError, match="bool or 0/1"):
        risk_coverage([0.1, 0.2], [2, 0])
    with pytest.raises(EmptyInputError):
        risk_coverage([], [])


def test_plot_returns_a_figure():
    fig = risk_coverage([0.9, 0.6, 0.8, 0.7], [1, 1, 1, 0]).plot(label="probe")
    assert "AURC" in fig.axes[0].get_legend().get_texts()[0].get_text()
