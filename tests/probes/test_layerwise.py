"""probes.layerwise: every number is checked against scikit-learn pipelines fitted by hand on the
same folds, never against values the probe computed itself."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import balanced_accuracy_score, roc_auc_score
from sklearn.model_selection import LeaveOneGroupOut, StratifiedGroupKFold, StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from interp.testing.tolerance import assert_close
from probes.errors import InterpError, ProbeError
from probes.layerwise import LayerwiseProbe

N, LAYERS, D = 60, 4, 6


def hand_pipeline():
    return make_pipeline(
        StandardScaler(), LogisticRegression(class_weight="balanced", max_iter=1000)
    )


def binary_data(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """States [N, 4, 6] whose layer 2 carries the label (and layer 3 a weaker copy)."""
    rng = np.random.default_rng(seed)
    y = rng.permutation(np.r_[np.ones(24, bool), np.zeros(N - 24, bool)])
    X = rng.normal(size=(N, LAYERS, D))
    X[:, 2, 0] += 2.0 * y
    X[:, 3, 1] += 0.7 * y
    return X, y


def hand_cv(X: np.ndarray, y: np.ndarray, folds) -> dict[str, list[float]]:
    """Per-fold balanced accuracy and AUROC of a hand-built pipeline on one layer's states."""
    out: dict[str, list[float]] = {"ba": [], "auc": []}
    for train, test in folds:
        pipe = hand_pipeline().fit(X[train], y[train])
        out["ba"].append(balanced_accuracy_score(y[test], pipe.predict(X[test])))
        proba = pipe.predict_proba(X[test])
        if len(pipe.classes_) == 2:
            out["auc"].append(roc_auc_score(y[test] == pipe.classes_[1], proba[:, 1]))
        else:
            out["auc"].append(
                roc_auc_score(
                    y[test], proba, multi_class="ovr", average="macro", labels=pipe.classes_
                )
            )
    return out


def test_cv_scores_equal_a_hand_fit_on_the_same_folds():
    X, y = binary_data()
    probe = LayerwiseProbe(cv=4)
    assert probe.fit(X, y) is probe
    assert probe.layers_ == [0, 1, 2, 3]
    means = []
    for layer in range(LAYERS):
        folds = StratifiedKFold(n_splits=4, shuffle=True, random_state=0).split(X[:, layer], y)
        ref = hand_cv(X[:, layer], y, list(folds))
        row = probe.scores_.loc[layer]
        assert_close(row["balanced_accuracy_mean"], np.mean(ref["ba"]))
        assert_close(row["balanced_accuracy_std"], np.std(ref["ba"]))
        assert_close(row["roc_auc_mean"], np.mean(ref["auc"]))
        assert_close(row["roc_auc_std"], np.std(ref["auc"]))
        assert row["n_folds"] == 4
        means.append(np.mean(ref["ba"]))
    assert probe.best_layer_ == int(np.argmax(means)) == 2
    assert probe.to_frame().equals(probe.scores_)


def test_out_of_fold_probabilities_equal_the_hand_fits():
    X, y = binary_data(1)
    probe = LayerwiseProbe(cv=3, layers=[2]).fit(X, y)
    expected = np.full((N, 2), np.nan)
    for train, test in StratifiedKFold(3, shuffle=True, random_state=0).split(X[:, 2], y):
        expected[test] = hand_pipeline().fit(X[train, 2], y[train]).predict_proba(X[test, 2])
    assert_close(probe.cv_predictions_[2], expected, equal_nan=True)


def test_groups_never_straddle_train_and_test():
    rng = np.random.default_rng(2)
    items = np.repeat(np.arange(20), 3)  # three wordings of each of 20 items
    y = np.repeat(rng.permutation(np.r_[np.ones(9, bool), np.zeros(11, bool)]), 3)
    y[rng.choice(len(y), 6, replace=False)] ^= True  # a wording may flip the outcome
    X = rng.normal(size=(len(y), 3, 5))
    X[:, 1, 0] += 1.5 * y
    probe = LayerwiseProbe(cv=4).fit(X, y, groups=items)
    tested = np.zeros(len(y), int)
    for train, test in probe.folds_:
        assert not set(items[train]) & set(items[test])
        tested[test] += 1
    assert (tested == 1).all()  # every sample is held out exactly once
    splitter = StratifiedGroupKFold(n_splits=4, shuffle=True, random_state=0)
    for layer in range(3):
        ref = hand_cv(X[:, layer], y, list(splitter.split(X[:, layer], y, items)))
        assert_close(probe.scores_.loc[layer, "balanced_accuracy_mean"], np.mean(ref["ba"]))
        assert_close(probe.scores_.loc[layer, "roc_auc_mean"], np.mean(ref["auc"]))


def test_a_splitter_can_hold_out_whole_datasets():
    X, y = binary_data(3)
    dataset = np.arange(N) % 3  # train on two "datasets", test on the third
    probe = LayerwiseProbe(cv=LeaveOneGroupOut(), layers=[2, -1]).fit(X, y, groups=dataset)
    assert probe.layers_ == [2, 3]
    for train, test in probe.folds_:
        assert len(set(dataset[test])) == 1 and set(dataset[test]).isdisjoint(dataset[train])
    ref = hand_cv(X[:, 2], y, list(LeaveOneGroupOut().split(X[:, 2], y, dataset)))
    assert probe.scores_.loc[2, "balanced_accuracy_mean"] == pytest.approx(np.mean(ref["ba"]))


def test_multiclass_string_labels():
    rng = np.random.default_rng(4)
    y = rng.permutation(np.repeat(np.array(["image", "none", "text"]), 15))
    X = rng.normal(size=(len(y), 3, 4))
    X[:, 1, 0] += 2.5 * (y == "image")
    X[:, 1, 1] += 2.5 * (y == "text")
    probe = LayerwiseProbe(cv=3).fit(X, y)
    assert list(probe.classes_) == ["image", "none", "text"]
    for layer in range(3):
        folds = StratifiedKFold(3, shuffle=True, random_state=0).split(X[:, layer], y)
        ref = hand_cv(X[:, layer], y, list(folds))
        assert_close(probe.scores_.loc[layer, "balanced_accuracy_mean"], np.mean(ref["ba"]))
        assert_close(probe.scores_.loc[layer, "roc_auc_mean"], np.mean(ref["auc"]))
    assert probe.best_layer_ == 1
    assert set(probe.predict(X)) <= {"image", "none", "text"}
    assert probe.predict_proba(X).shape == (len(y), 3)


def test_predictions_come_from_the_estimator_refitted_on_all_data():
    X, y = binary_data(5)
    probe = LayerwiseProbe(cv=3).fit(X, y)
    for layer in (0, probe.best_layer_):
        hand = hand_pipeline().fit(X[:, layer], y)
        assert_close(probe.predict_proba(X, layer=layer), hand.predict_proba(X[:, layer]))
        np.testing.assert_array_equal(probe.predict(X, layer=layer), hand.predict(X[:, layer]))
    hand = hand_pipeline().fit(X[:, probe.best_layer_], y)
    # default layer = best layer; the [N, d] states of that layer work as well
    np.testing.assert_allclose(probe.predict_proba(X), hand.predict_proba(X[:, probe.best_layer_]))
    np.testing.assert_allclose(
        probe.predict_proba(X[:, probe.best_layer_]), hand.predict_proba(X[:, probe.best_layer_])
    )
    assert probe.score(X, y) == pytest.approx(
        balanced_accuracy_score(y, hand.predict(X[:, probe.best_layer_]))
    )


def test_two_dimensional_states_are_one_layer():
    X, y = binary_data(6)
    probe = LayerwiseProbe(cv=3).fit(X[:, 2], y)
    assert probe.layers_ == [0] and probe.best_layer_ == 0
    hand = hand_pipeline().fit(X[:, 2], y)
    np.testing.assert_allclose(probe.predict_proba(X[:, 2]), hand.predict_proba(X[:, 2]))


def test_estimator_contract():
    probe = LayerwiseProbe(layers=[1], cv=3, random_state=7)
    assert probe.get_params()["cv"] == 3
    assert clone(probe).get_params() == probe.get_params()
    assert not hasattr(clone(probe), "layers_")
    with pytest.raises(NotFittedError):
        probe.predict(np.zeros((2, 4, 3)))


def test_plot_returns_a_figure():
    X, y = binary_data(7)
    fig = LayerwiseProbe(cv=3).fit(X, y).plot()
    assert fig.axes and fig.axes[0].get_xlabel().startswith("layer")


class NeverFit(ClassifierMixin, BaseEstimator):
    """Fails the test if any fitting starts: the typed errors must come first."""

    def fit(self, X, y):
        raise AssertionError("fit was called before the input was checked")


def bad_inputs():
    X, y = binary_data()
    few = y.copy()
    few[np.flatnonzero(few)[3:]] = False  # only 3 positives
    return [
        ("single class", dict(X=X, y=np.ones(N, bool)), {}, "single class"),
        ("few per class", dict(X=X, y=few), {}, r"3 samples, fewer than cv=5.*cv=3"),
        ("rank 1", dict(X=X[:, 0, 0], y=y), {}, r"\[N, L\+1, d\]"),
        ("rank 4", dict(X=X[..., None], y=y), {}, r"\[N, L\+1, d\]"),
        ("mismatched N", dict(X=X, y=y[:-1]), {}, f"X has {N} samples but y has {N - 1}"),
        ("layer out of range", dict(X=X, y=y), {"layers": [0, 4]}, "layer 4 is out of range"),
        ("negative layer", dict(X=X, y=y), {"layers": -5}, "layer -5 is out of range"),
        ("groups length", dict(X=X, y=y, groups=np.arange(N - 2)), {}, "groups has 58"),
        ("too few groups", dict(X=X, y=y, groups=np.arange(N) % 3), {}, "3 distinct groups"),
        ("non-finite X", dict(X=np.where(X > 2.5, np.nan, X), y=y), {}, "NaN"),
        ("scoring", dict(X=X, y=y), {"scoring": ["f1"]}, "unknown scoring"),
        ("cv=1", dict(X=X, y=y), {"cv": 1}, "at least 2 folds"),
    ]


@pytest.mark.parametrize("case", bad_inputs(), ids=lambda c: c[0])
def test_bad_inputs_raise_typed_errors_before_fitting(case):
    _, data, params, match = case
    with pytest.raises(ProbeError, match=match) as info:
        LayerwiseProbe(estimator=NeverFit(), **params).fit(**data)
    assert isinstance(info.value, InterpError) and isinstance(info.value, ValueError)


def test_predicting_at_an_unfitted_layer_or_shape_is_refused():
    X, y = binary_data()
    probe = LayerwiseProbe(cv=3, layers=[2]).fit(X, y)
    with pytest.raises(ProbeError, match="no probe was fitted at layer 1"):
        probe.predict(X, layer=1)
    with pytest.raises(ProbeError, match="layer slots"):
        probe.predict(X[:, :3])
    with pytest.raises(ProbeError, match="features per layer"):
        probe.predict(X[:, 2, :4])


def test_a_fold_whose_training_split_lacks_a_class_is_refused():
    X, y = binary_data()
    dataset = np.where(y, 0, 1 + np.arange(N) % 2)  # dataset 0 holds every positive
    with pytest.raises(ProbeError, match="training split of fold 0 has no sample of class"):
        LayerwiseProbe(estimator=NeverFit(), cv=LeaveOneGroupOut()).fit(X, y, groups=dataset)
