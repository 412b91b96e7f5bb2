"""The two-sample VIP statistic and the automatic VIP rules (Eq. 9, the default change point, ...)."""

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
from interp.testing.tolerance import approx_close, assert_close
from probes import (
    NoVIPWarning,
    VIPDetector,
    automatic_vip,
    cosine_distance,
    two_sample_test,
    vip_thresholds,
)
from probes.errors import UnknownVIPRuleError, VIPParameterError, VIPTypeError
from probes.vip import RULES, why_no_vip


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
    assert automatic_vip(t, beta=2.0, alpha=None, rule="eq9") == 4
    assert automatic_vip(t, beta=2.0, rule="eq9") == 4  # 8 clears the floor z(1 - 0.05/5) = 2.58
    assert automatic_vip(t, beta=6.0, alpha=None, rule="eq9") == 4  # 8 >= 6*3.5/3 = 7
    # beta = 7: l=4: 7*3.5/3 = 8.17 > 8; l=5: 7*11.5/4 = 20.1 > 9; l=6: 7*20.5/5 = 28.7 > 9.
    assert automatic_vip(t, beta=7.0, alpha=None, rule="eq9") is None
    # A floor above every statistic rejects all layers: z(1 - alpha/5) = 10.4 > 9 for alpha = 1e-25.
    assert automatic_vip(t, beta=2.0, alpha=1e-25, rule="eq9") is None
    # The default rule (changepoint) needs the gap, not only the statistic; the error says so.
    with pytest.raises(VIPParameterError, match="rule 'changepoint' needs the group means.*'eq9'"):
        automatic_vip(t)


def test_automatic_vip_none_and_literal_rule() -> None:
    # Noise-sized statistics: Eq. 9 alone accepts layer 2 (0.3 >= 2 * -0.4) ...
    t = np.array([0.0, -0.4, 0.3, -0.2, 0.9, -1.1, 0.2, 0.4])
    assert automatic_vip(t, alpha=None, rule="eq9") == 2
    # ... the significance floor rejects every layer.
    assert automatic_vip(t, rule="eq9") is None
    # Layer L is never a candidate.
    assert automatic_vip(np.array([0.0, 0.1, 0.1, 0.1, 0.1, 50.0]), rule="eq9") is None
    with pytest.raises(ValueError, match="L >= 3"):
        automatic_vip(np.array([0.0, 1.0, 2.0]), rule="eq9")
    with pytest.raises(ValueError, match="beta"):
        automatic_vip(np.zeros(6), beta=0.0, rule="eq9")


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


@pytest.mark.parametrize("rule", ["changepoint", "eq9"])
@pytest.mark.parametrize(("n_vt", "n_t", "n_layers", "change", "delta", "noise", "pre"), PLANTED)
def test_detector_recovers_planted_change_point(
    n_vt: int,
    n_t: int,
    n_layers: int,
    change: int,
    delta: float,
    noise: float,
    pre: float,
    rule: str,
) -> None:
    found = []
    for seed in range(20):
        d, in_vt = synthetic(seed, n_vt, n_t, n_layers, change, delta, noise, pre_offset=pre)
        det = (VIPDetector() if rule == "changepoint" else VIPDetector(rule=rule)).fit(d, in_vt)
        assert det.method_ == "automatic" and det.rule_ == rule
        found.append(det.layer_)
        if pre:  # the groups differ significantly before the VIP, yet the rule waits for the jump
            assert (det.p_values_[1:change] < 0.05).all()
    # Measured over 200 seeds: 92-100% exact per configuration.
    assert sum(v == change for v in found) >= 17, found


@pytest.mark.parametrize("rule", ["changepoint", "eq9"])
@pytest.mark.parametrize(("seed", "n_vt", "n_t", "n_layers"), [(10, 50, 50, 28), (11, 200, 80, 32)])
def test_detector_reports_no_vip_without_a_change(
    seed: int, n_vt: int, n_t: int, n_layers: int, rule: str
) -> None:
    d, in_vt = synthetic(seed, n_vt, n_t, n_layers, None, 0.0, 0.05)
    with pytest.warns(NoVIPWarning, match=f"no layer qualifies as the VIP by rule '{rule}'"):
        det = (VIPDetector() if rule == "changepoint" else VIPDetector(rule=rule)).fit(d, in_vt)
    assert det.layer_ is None and det.method_ == "automatic"


def test_false_vip_rate_is_controlled() -> None:
    found = {"changepoint": 0, "eq9": 0}  # the default and the paper's rule
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NoVIPWarning)
        for seed in range(60):
            d, in_vt = synthetic(100 + seed, 80, 80, 28, None, 0.0, 0.05)
            found["changepoint"] += VIPDetector().fit(d, in_vt).layer_ is not None
            found["eq9"] += VIPDetector(rule="eq9").fit(d, in_vt).layer_ is not None
            if seed < 20:  # Eq. 9 without the floor picks up noise nearly always
                assert VIPDetector(rule="eq9", alpha=None).fit(d, in_vt).layer_ is not None
    assert found["changepoint"] / 60 <= 0.15 and found["eq9"] / 60 <= 0.15  # nominal rate 0.05


def test_detector_manual_layer_and_sklearn_contract() -> None:
    d, in_vt = synthetic(7, 30, 30, 10, 4, 0.2, 0.05)
    det = VIPDetector(layer=6)
    assert det.get_params() == {
        "beta": 2.0,
        "layer": 6,
        "alpha": 0.05,
        "rule": "changepoint",
        "min_fraction": 0.25,
        "min_effect": None,
    }
    assert det.fit(d, in_vt) is det
    assert det.layer_ == 6 and det.method_ == "manual" and det.rule_ == "manual"
    assert det.statistic_.shape == det.p_values_.shape == det.thresholds_.shape == (11,)
    np.testing.assert_array_equal(det.statistic_, two_sample_test(d, in_vt).statistic)
    auto = clone(det).set_params(layer=None)
    assert not hasattr(auto, "layer_")  # clone copies hyperparameters only
    want = reference_vip("changepoint", *reference_stats(d, in_vt))  # the default rule
    assert auto.fit(d, in_vt).layer_ == want == 4 and auto.rule_ == "changepoint"
    assert auto.method_ == "automatic"
    assert VIPDetector(layer=99).get_params()["layer"] == 99  # validation happens in fit
    with pytest.raises(VIPParameterError, match=r"outside the decoder layers 1\.\.10"):
        VIPDetector(layer=11).fit(d, in_vt)
    with pytest.raises(ValueError, match="outside"):
        VIPDetector(layer=0).fit(d, in_vt)
    # set_params, as a grid search would: it bypasses the constructor's type hints
    with pytest.raises(VIPTypeError, match="layer must be an int, got float"):
        VIPDetector().set_params(layer=4.0).fit(d, in_vt)
    with pytest.raises(TypeError, match="got bool"):
        VIPDetector().set_params(layer=True).fit(d, in_vt)


# --- rules by name: each against a reference written here ---------------------------------------


def reference_stats(d: np.ndarray, in_vt: np.ndarray) -> tuple[np.ndarray, ...]:
    """Gap, Welch statistic (scipy) and Cohen's d (pooled sd) per layer; index 0 set to 0."""
    vt, t = d[in_vt], d[~in_vt]
    gap = vt.mean(axis=0) - t.mean(axis=0)
    stat = np.zeros(d.shape[1])
    for layer in range(1, d.shape[1]):
        stat[layer] = sps.ttest_ind(vt[:, layer], t[:, layer], equal_var=False).statistic
    n1, n2 = len(vt), len(t)
    pooled = np.sqrt(((n1 - 1) * vt.var(0, ddof=1) + (n2 - 1) * t.var(0, ddof=1)) / (n1 + n2 - 2))
    cohen = np.zeros(d.shape[1])
    cohen[1:] = gap[1:] / pooled[1:]
    return gap, stat, cohen


def reference_vip(
    rule: str,
    gap: np.ndarray,
    t: np.ndarray,
    cohen: np.ndarray,
    *,
    beta: float = 2.0,
    alpha: float = 0.05,
    fraction: float = 0.25,
    min_d: float | None = None,
) -> int | None:
    """The rules as docs/vip_rules.md states them, written out with plain loops."""
    n_layers = len(t) - 1
    z = sps.norm.ppf(1 - alpha / (n_layers - 2))
    candidates = range(2, n_layers)
    if rule in ("eq9", "effect"):
        for layer in candidates:
            if t[layer] < beta * np.mean(t[1:layer]) or t[layer] < z:
                continue
            if rule == "effect":
                if not (gap[layer] > 0 and gap[layer] >= fraction * gap[1:].max()):
                    continue
                if min_d is not None and cohen[layer] < min_d:
                    continue
            return layer
        return None
    if rule == "jump":
        growth = {layer: gap[layer] - gap[layer - 1] for layer in candidates}
        best = max(growth, key=growth.__getitem__)  # the first maximum
        return best if growth[best] > 0 and t[best] >= z else None
    sse = {k: np.var(gap[1:k]) * (k - 1) + np.var(gap[k:]) * (n_layers - k + 1) for k in candidates}
    best = min(sse, key=sse.__getitem__)
    return best if gap[best:].mean() > gap[1:best].mean() and t[best] >= z else None


RULE_NAMES = ("eq9", "effect", "jump", "changepoint")


def test_rules_are_the_named_ones() -> None:
    assert tuple(RULES) == RULE_NAMES


def test_cohens_d_matches_the_pooled_formula() -> None:
    d, in_vt = synthetic(3, n_vt=17, n_t=29, n_layers=6, change=3, delta=0.1, noise=0.05)
    res = two_sample_test(d, in_vt)
    _, _, cohen = reference_stats(d, in_vt)
    np.testing.assert_allclose(res.cohens_d[1:], cohen[1:], rtol=1e-10)
    assert res.cohens_d[0] == 0.0  # identical embeddings: equal means, no spread
    np.testing.assert_array_equal(res.to_frame()["cohens_d"].to_numpy(), res.cohens_d)


def test_each_rule_on_hand_computed_gaps() -> None:
    """L = 6, both groups constant but for one sample, so every number is checkable by eye."""
    gap = np.array([0.0, 0.01, 0.0, 0.02, 0.30, 0.32, 0.33])
    n = 40
    d = np.zeros((2 * n, 7))
    d[:n] = gap  # D_VT
    d[:, 1:] += np.tile([[0.004], [-0.004]], (n, 6))  # +-0.004 in each group: sd = 0.00405
    in_vt = np.r_[np.ones(n, bool), np.zeros(n, bool)]
    res = two_sample_test(d, in_vt)
    # float64's ε·S (1e-10; was a bare 1e-15): the rule's one float64 bound, far above the ~1e-17
    # a difference of two 40-row means rounds to, and far below the 0.01 steps of the gaps
    assert_close(res.difference, gap)
    # se = sqrt(2 * 0.004^2 * 40/39 / 40) = 0.000906; t = gap / se.
    se = math.sqrt(2 * 0.004**2 * (n / (n - 1)) / n)
    np.testing.assert_allclose(res.statistic[1:], gap[1:] / se, rtol=1e-9)
    # Floor: z(1 - 0.05/4) = 2.24. t = 11.0, 0, 22.1, 331, 353, 364.
    # eq9: l=2: 0 < 2*11; l=3: 22.1 >= 2*(11+0)/2 = 11 -> 3 (a gap of 0.02, 6% of the largest).
    assert automatic_vip(res, rule="eq9") == automatic_vip(res.statistic, rule="eq9") == 3
    # effect: 0.02 < 0.25 * 0.33; l=4: 331 >= 2*(11+0+22.1)/3 = 22 and 0.30 >= 0.0825 -> 4.
    assert automatic_vip(res, rule="effect") == 4
    # jump: growth at l=2..5: -0.01, 0.02, 0.28, 0.02 -> 4.
    assert automatic_vip(res, rule="jump") == 4
    # changepoint over gap_1..gap_6: k=4 gives segments (0.01, 0, 0.02) and (0.30, 0.32, 0.33).
    assert automatic_vip(res, rule="changepoint") == automatic_vip(res) == 4  # the default
    # A Cohen's d floor alone: d = gap / 0.00405 is 4.9 already at l = 3.
    assert automatic_vip(res, rule="effect", min_fraction=None, min_effect=0.8) == 3
    assert automatic_vip(res, rule="effect", min_fraction=None, min_effect=50.0) == 4  # d_4 = 74


@pytest.mark.parametrize("seed", range(12))
def test_rules_match_the_reference_on_random_curves(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_layers = int(rng.integers(6, 30))
    change = int(rng.integers(2, n_layers))
    d, in_vt = synthetic(
        seed,
        n_vt=int(rng.integers(20, 200)),
        n_t=int(rng.integers(20, 200)),
        n_layers=n_layers,
        change=change,
        delta=float(rng.uniform(0.0, 0.1)),
        noise=0.05,
        pre_offset=float(rng.uniform(-0.01, 0.02)),
    )
    gap, stat, cohen = reference_stats(d, in_vt)
    res = two_sample_test(d, in_vt)
    for rule in RULE_NAMES:
        for kw in ({}, {"alpha": 0.2, "beta": 1.5}):
            want = reference_vip(rule, gap, stat, cohen, **kw)  # type: ignore[arg-type]
            assert automatic_vip(res, rule=rule, **kw) == want, (rule, kw)  # type: ignore[arg-type]
    want = reference_vip("effect", gap, stat, cohen, fraction=0.5, min_d=0.3)
    assert automatic_vip(res, rule="effect", min_fraction=0.5, min_effect=0.3) == want


def deep_model_case(seed: int, n: int = 3000) -> tuple[np.ndarray, np.ndarray]:
    """The issue's failure: 30 layers, near-identical early states (tiny spread), a 0.0006 gap
    from layer 2 on, and the image's effect arriving abruptly at layer 24 (+0.045)."""
    rng = np.random.default_rng(seed)
    n_layers = 30
    scale = np.r_[0.0, np.full(22, 0.002), np.full(8, 0.03)]  # spread grows after layer 23
    d = 0.01 + scale * np.abs(rng.standard_normal((2 * n, n_layers + 1)))
    d[:, 0] = 0.0
    in_vt = np.r_[np.ones(n, bool), np.zeros(n, bool)]
    d[:n, 2:] += 0.0006
    d[:n, 24:] += 0.045
    return d, in_vt


def test_tiny_significant_early_gap_fires_eq9_but_not_the_effect_rule() -> None:
    d, in_vt = deep_model_case(0)
    gap, stat, cohen = reference_stats(d, in_vt)
    z = sps.norm.ppf(1 - 0.05 / 28)
    # tiny, yet significant at N = 6000
    approx_close(
        gap[2], 0.0006, 1e-4, why="the planted shift of the synthetic case plus its sampling noise"
    )
    assert stat[2] > z
    assert gap[2] < 0.05 * gap.max()
    assert stat[2] >= 2 * stat[1]  # Eq. 9 at layer 2: the history is noise around 0
    res = two_sample_test(d, in_vt)
    assert automatic_vip(res, rule="eq9") == 2
    assert automatic_vip(res, rule="effect") == 24
    assert automatic_vip(res, rule="jump") == 24
    assert automatic_vip(res, rule="changepoint") == automatic_vip(res) == 24  # the default
    # A standardized floor alone does not help here: the early spread is tiny too.
    assert cohen[2] > 0.2
    assert automatic_vip(res, rule="effect", min_fraction=None, min_effect=0.2) == 2


@pytest.mark.parametrize("rule", ["jump", "changepoint", "effect"])
def test_abrupt_change_point_is_recovered(rule: str) -> None:
    found = []
    for seed in range(10):
        d, in_vt = deep_model_case(seed, n=int(np.random.default_rng(seed).integers(60, 400)))
        found.append(VIPDetector(rule=rule).fit(d, in_vt).layer_)
    assert found == [24] * 10


def test_rules_on_noise_report_no_vip_and_name_the_rule() -> None:
    d, in_vt = synthetic(10, 50, 50, 28, None, 0.0, 0.05)
    for rule in RULE_NAMES:
        with pytest.warns(NoVIPWarning, match=f"by rule '{rule}'") as caught:
            det = VIPDetector(rule=rule).fit(d, in_vt)
        assert caught[0].message.rule == rule  # type: ignore[union-attr]
        assert det.layer_ is None and det.rule_ == rule and det.method_ == "automatic"
        assert det.no_vip_ is not None and det.no_vip_[0] in ("eq9", "alpha", "rise")
        assert why_no_vip(det.result_, rule=rule) == det.no_vip_


def test_effect_floor_is_the_cause_when_only_it_fails() -> None:
    d, in_vt = deep_model_case(1)
    d[: len(d) // 2, 24:] -= 0.045  # no jump: only the tiny early gap is left
    with pytest.warns(NoVIPWarning, match="none has a gap of at least 0.9 of the largest"):
        det = VIPDetector(rule="effect", min_fraction=0.9).fit(d, in_vt)
    assert det.no_vip_ is not None and det.no_vip_[0] == "effect"
    assert VIPDetector(rule="eq9").fit(d, in_vt).layer_ == 2


def test_rule_errors_are_typed_and_name_the_choices() -> None:
    d, in_vt = synthetic(7, 30, 30, 10, 4, 0.2, 0.05)
    det = VIPDetector(rule="largest")
    assert det.get_params()["rule"] == "largest"  # validation happens in fit
    with pytest.raises(UnknownVIPRuleError) as err:
        det.fit(d, in_vt)
    assert isinstance(err.value, ValueError) and err.value.valid == RULE_NAMES
    assert str(err.value) == (
        "unknown VIP rule 'largest': use one of 'eq9', 'effect', 'jump', 'changepoint'"
    )
    with pytest.raises(UnknownVIPRuleError, match="'eq9', 'effect'"):
        automatic_vip(np.zeros(6), rule="Eq9")
    with pytest.raises(VIPTypeError, match="rule must be a rule name"):
        VIPDetector().set_params(rule=None).fit(d, in_vt)
    with pytest.raises(VIPParameterError, match="needs the group means"):
        automatic_vip(np.zeros(6), rule="jump")
    with pytest.raises(VIPParameterError, match="needs an effect-size floor"):
        VIPDetector(rule="effect", min_fraction=None).fit(d, in_vt)
    for bad in ({"beta": 0.0}, {"alpha": 1.0}, {"min_fraction": 1.5}, {"min_effect": -1.0}):
        with pytest.raises(VIPParameterError, match=next(iter(bad))):
            VIPDetector(**bad).fit(d, in_vt)  # type: ignore[arg-type]


def test_detector_rule_and_clone() -> None:
    d, in_vt = deep_model_case(2, n=300)
    det = VIPDetector(rule="changepoint", alpha=0.01)
    twin = clone(det)
    assert twin.get_params() == det.get_params() and not hasattr(twin, "layer_")
    assert twin.fit(d, in_vt) is twin and twin.layer_ == 24 and twin.rule_ == "changepoint"
    # float64's ε·S (was a bare 1e-12): the rule's one float64 bound
    assert_close(twin.gap_, reference_stats(d, in_vt)[0])
    assert twin.set_params(rule="eq9").fit(d, in_vt).rule_ == "eq9"
