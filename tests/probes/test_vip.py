"""The two-sample VIP statistic and the automatic VIP rule (Eq. 9)."""

from __future__ import annotations

import math
import statistics
import warnings

import numpy as np
import pytest
import torch
from scipy import stats as sps
from sklearn.base import clone

from interp.errors import EmptyGroupError, TooFewSamplesError
from interp.testing import refused
from probes import (
    NoVIPWarning,
    VIPDetector,
    automatic_vip,
    cosine_distance,
    two_sample_test,
    vip_thresholds,
)


def synthetic(
    seed: int,
    n_vt: int,
    n_t: int,
    n_layers: int,
    change: int | None,
    delta: float,
    noise: float,
    pre_offset: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Distance curves [N, L+1]: a shared rising baseline plus noise; from layer ``change`` on,
    the D_VT group is shifted up by ``delta`` (and by ``pre_offset`` on every layer)."""
    rng = np.random.default_rng(seed)
    base = 0.02 + 0.3 * np.linspace(0.0, 1.0, n_layers + 1) ** 2
    d = base + noise * rng.standard_normal((n_vt + n_t, n_layers + 1))
    d[:n_vt, 1:] += pre_offset
    if change is not None:
        d[:n_vt, change:] += delta
    d[:, 0] = 0.0  # embeddings: identical with and without the image
    in_vt = np.r_[np.ones(n_vt, bool), np.zeros(n_t, bool)]
    perm = rng.permutation(n_vt + n_t)
    return d[perm], in_vt[perm]


# --- two-sample statistic -----------------------------------------------------------------


def test_two_sample_matches_brute_force_and_welch() -> None:
    d, in_vt = synthetic(0, n_vt=13, n_t=21, n_layers=6, change=3, delta=0.1, noise=0.05)
    res = two_sample_test(d, in_vt)
    assert res.n_vt == 13 and res.n_t == 21 and res.n_layers == 6
    for layer in range(1, 7):
        vt = [float(d[i, layer]) for i in range(len(d)) if in_vt[i]]
        t = [float(d[i, layer]) for i in range(len(d)) if not in_vt[i]]
        se = math.sqrt(statistics.variance(t) / len(t) + statistics.variance(vt) / len(vt))
        stat = (statistics.fmean(vt) - statistics.fmean(t)) / se
        assert res.mean_vt[layer] == pytest.approx(statistics.fmean(vt), rel=1e-12)
        assert res.std_t[layer] == pytest.approx(statistics.stdev(t), rel=1e-12)
        assert res.statistic[layer] == pytest.approx(stat, rel=1e-10)
        welch = sps.ttest_ind(vt, t, equal_var=False).statistic
        assert res.statistic[layer] == pytest.approx(welch, rel=1e-10)
        assert res.p_value[layer] == pytest.approx(2 * sps.norm.sf(abs(stat)), rel=1e-9)


def test_zero_variance_layers() -> None:
    d = np.zeros((6, 4))
    d[:, 1] = np.arange(6)  # an ordinary layer
    d[:3, 2], d[3:, 2] = 0.7, 0.2  # both groups constant, means differ
    d[:, 3] = 0.5  # both groups constant, equal means
    in_vt = np.array([True, True, True, False, False, False])
    res = two_sample_test(d, in_vt)
    assert res.statistic[0] == 0.0 and res.p_value[0] == 1.0  # embeddings
    assert res.statistic[3] == 0.0 and res.p_value[3] == 1.0
    assert res.statistic[2] == np.inf and res.p_value[2] == 0.0
    assert np.isfinite(res.statistic[1])


def test_embedding_layer_from_real_distances_has_zero_statistic() -> None:
    rng = np.random.default_rng(1)
    emb = 50 * rng.standard_normal((10, 32))  # last-token embedding: same in both runs
    vis = [emb] + [emb + rng.standard_normal((10, 32)) for _ in range(3)]
    blind = [emb.copy()] + [emb + rng.standard_normal((10, 32)) for _ in range(3)]
    d = cosine_distance(np.stack(vis, 1), torch.tensor(np.stack(blind, 1)))
    res = two_sample_test(d, np.arange(10) < 4)
    assert res.se[0] == 0.0 and res.statistic[0] == 0.0 and res.p_value[0] == 1.0


def test_two_sample_errors_name_the_problem() -> None:
    d = np.random.default_rng(0).random((5, 4))
    with pytest.raises(EmptyGroupError, match="D_VT group is empty"):
        two_sample_test(d, np.zeros(5, bool))
    with pytest.raises(EmptyGroupError, match="D_T group is empty"):
        two_sample_test(d, np.ones(5, bool))
    with pytest.raises(TooFewSamplesError, match="D_VT group has 1 sample"):
        two_sample_test(d, np.array([1, 0, 0, 0, 0]))
    with refused(ValueError, match=r"shape \[N, L\+1\]"):
        two_sample_test(d[0], np.ones(4, bool))
    with refused(ValueError, match="length 5"):
        two_sample_test(d, np.ones(4, bool))
    bad = d.copy()
    bad[2, 3] = np.nan
    with pytest.raises(ValueError, match="sample 2, layer 3"):
        two_sample_test(bad, np.array([1, 1, 0, 0, 0], bool))


def test_to_frame_one_row_per_layer() -> None:
    d, in_vt = synthetic(2, n_vt=8, n_t=9, n_layers=5, change=2, delta=0.2, noise=0.05)
    res = two_sample_test(d, in_vt)
    frame = res.to_frame()
    assert list(frame.index) == list(range(6)) and frame.index.name == "layer"
    np.testing.assert_array_equal(frame["statistic"].to_numpy(), res.statistic)
    assert (frame["n_vt"] == 8).all() and (frame["n_t"] == 9).all()


# --- automatic VIP rule -------------------------------------------------------------------


def test_thresholds_follow_eq9() -> None:
    t = np.array([0.0, 1.0, -2.0, 4.0, 0.5, 3.0, 7.0])
    got = vip_thresholds(t, beta=2.0)
    assert np.isnan(got[[0, 1, 6]]).all()  # candidates are 2..L-1 = 2..5
    for layer in range(2, 6):
        history = sum(t[k] for k in range(1, layer))
        assert got[layer] == pytest.approx(2.0 / (layer - 1) * history)


def test_automatic_vip_on_hand_computed_statistics() -> None:
    # L = 7. Eq. 9 thresholds: l=2: 2*1 = 2; l=3: 2*(1+1)/2 = 2; l=4: 2*(1+1+1.5)/3 = 2.33.
    t = np.array([0.0, 1.0, 1.0, 1.5, 8.0, 9.0, 9.0, 9.0])
    assert automatic_vip(t, beta=2.0, alpha=None) == 4
    assert automatic_vip(t, beta=2.0) == 4  # 8 clears the floor z(1 - 0.05/5) = 2.58
    assert automatic_vip(t, beta=6.0, alpha=None) == 4  # 8 >= 6*3.5/3 = 7
    # beta = 7: l=4: 7*3.5/3 = 8.17 > 8; l=5: 7*11.5/4 = 20.1 > 9; l=6: 7*20.5/5 = 28.7 > 9.
    assert automatic_vip(t, beta=7.0, alpha=None) is None
    # A floor above every statistic rejects all layers: z(1 - alpha/5) = 10.4 > 9 for alpha = 1e-25.
    assert automatic_vip(t, beta=2.0, alpha=1e-25) is None


def test_automatic_vip_none_and_literal_rule() -> None:
    # Noise-sized statistics: Eq. 9 alone accepts layer 2 (0.3 >= 2 * -0.4) ...
    t = np.array([0.0, -0.4, 0.3, -0.2, 0.9, -1.1, 0.2, 0.4])
    assert automatic_vip(t, alpha=None) == 2
    # ... the significance floor rejects every layer.
    assert automatic_vip(t) is None
    # Layer L is never a candidate.
    assert automatic_vip(np.array([0.0, 0.1, 0.1, 0.1, 0.1, 50.0])) is None
    with pytest.raises(ValueError, match="L >= 3"):
        automatic_vip(np.array([0.0, 1.0, 2.0]))
    with pytest.raises(ValueError, match="beta"):
        automatic_vip(np.zeros(6), beta=0.0)


# (n_vt, n_t, L, change, delta, noise, pre_offset); the D_VT shift at the change is 5-20 standard
# errors. Pre-change layers are pure noise, so with alpha = 0.05 about 5% of datasets may get a
# spurious earlier VIP; the test asks for >= 85% exact recoveries over 20 seeds.
PLANTED = [
    (40, 40, 12, 5, 0.10, 0.05, 0.0),
    (150, 60, 28, 18, 0.05, 0.06, 0.0),
    (25, 90, 30, 20, 0.08, 0.04, 0.0),
    (300, 300, 32, 3, 0.02, 0.05, 0.0),
    (60, 200, 26, 24, 0.15, 0.10, 0.0),
    (500, 500, 28, 15, 0.08, 0.05, 0.019),  # D_VT above D_T before the VIP too (t ~ 6)
]


@pytest.mark.parametrize(("n_vt", "n_t", "n_layers", "change", "delta", "noise", "pre"), PLANTED)
def test_detector_recovers_planted_change_point(
    n_vt: int, n_t: int, n_layers: int, change: int, delta: float, noise: float, pre: float
) -> None:
    found = []
    for seed in range(20):
        d, in_vt = synthetic(seed, n_vt, n_t, n_layers, change, delta, noise, pre_offset=pre)
        det = VIPDetector().fit(d, in_vt)
        assert det.method_ == "automatic"
        found.append(det.layer_)
        if pre:  # the groups differ significantly before the VIP, yet the rule waits for the jump
            assert (det.p_values_[1:change] < 0.05).all()
    # Measured over 200 seeds: 92-100% exact per configuration.
    assert sum(v == change for v in found) >= 17, found


@pytest.mark.parametrize(("seed", "n_vt", "n_t", "n_layers"), [(10, 50, 50, 28), (11, 200, 80, 32)])
def test_detector_reports_no_vip_without_a_change(
    seed: int, n_vt: int, n_t: int, n_layers: int
) -> None:
    d, in_vt = synthetic(seed, n_vt, n_t, n_layers, None, 0.0, 0.05)
    with pytest.warns(NoVIPWarning, match="no layer qualifies"):
        det = VIPDetector().fit(d, in_vt)
    assert det.layer_ is None and det.method_ == "automatic"


def test_false_vip_rate_is_controlled() -> None:
    found = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NoVIPWarning)
        for seed in range(60):
            d, in_vt = synthetic(100 + seed, 80, 80, 28, None, 0.0, 0.05)
            found += VIPDetector().fit(d, in_vt).layer_ is not None
            if seed < 20:  # Eq. 9 without the floor picks up noise nearly always
                assert VIPDetector(alpha=None).fit(d, in_vt).layer_ is not None
    assert found / 60 <= 0.15  # nominal family-wise rate 0.05


def test_detector_manual_layer_and_sklearn_contract() -> None:
    d, in_vt = synthetic(7, 30, 30, 10, 4, 0.2, 0.05)
    det = VIPDetector(layer=6)
    assert det.get_params() == {"beta": 2.0, "layer": 6, "alpha": 0.05}
    assert det.fit(d, in_vt) is det
    assert det.layer_ == 6 and det.method_ == "manual"
    assert det.statistic_.shape == det.p_values_.shape == det.thresholds_.shape == (11,)
    np.testing.assert_array_equal(det.statistic_, two_sample_test(d, in_vt).statistic)
    auto = clone(det).set_params(layer=None)
    assert not hasattr(auto, "layer_")  # clone copies hyperparameters only
    assert auto.fit(d, in_vt).layer_ == automatic_vip(two_sample_test(d, in_vt).statistic)
    assert auto.method_ == "automatic" and auto.layer_ is not None
    assert VIPDetector(layer=99).get_params()["layer"] == 99  # validation happens in fit
    with pytest.raises(ValueError, match=r"outside the decoder layers 1\.\.10"):
        VIPDetector(layer=11).fit(d, in_vt)
    with pytest.raises(ValueError, match="outside"):
        VIPDetector(layer=0).fit(d, in_vt)
