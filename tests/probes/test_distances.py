"""Distances against scipy.spatial.distance / scipy.stats and hand formulas."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.spatial import distance as sp_distance
from scipy.special import log_softmax
from scipy.stats import entropy

from interp.testing import refused
from interp.testing.tolerance import assert_close
from probes import (
    DISTANCES,
    cosine_distance,
    get_distance,
    js_divergence,
    kl_divergence,
    l2_distance,
)


@pytest.fixture
def states() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.standard_normal((3, 4, 16)), rng.standard_normal((3, 4, 16))


@pytest.fixture
def logprobs() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    return log_softmax(3 * rng.standard_normal((5, 50)), -1), log_softmax(
        3 * rng.standard_normal((5, 50)), -1
    )


def test_cosine_and_l2_match_scipy(states: tuple[np.ndarray, np.ndarray]) -> None:
    a, b = states
    cos, l2 = cosine_distance(a, b), l2_distance(a, b)
    assert cos.shape == l2.shape == (3, 4)
    assert cos.dtype == l2.dtype == np.float64
    want_cos = np.array(
        [[sp_distance.cosine(a[i, j], b[i, j]) for j in range(4)] for i in range(3)]
    )
    want_l2 = np.array(
        [[sp_distance.euclidean(a[i, j], b[i, j]) for j in range(4)] for i in range(3)]
    )
    # float64 rounding, ε·S = 1e-10 · max(|want|, 1): 100x the old bare 1e-12, the rule's one
    # float64 bound rather than one tuned to this machine's order of sums
    assert_close(cos, want_cos)
    assert_close(l2, want_l2)


def test_torch_input_gives_the_same_numbers(states: tuple[np.ndarray, np.ndarray]) -> None:
    a, b = states
    ta, tb = torch.tensor(a, dtype=torch.float32), torch.tensor(b, dtype=torch.float32)
    # Reference: the same float32 values, taken to float64 by numpy.
    a32, b32 = ta.numpy().astype(np.float64), tb.numpy().astype(np.float64)
    out = cosine_distance(ta, tb)
    assert isinstance(out, np.ndarray) and out.dtype == np.float64
    np.testing.assert_allclose(out, cosine_distance(a32, b32), rtol=0, atol=0)
    ha, hb = ta.to(torch.bfloat16), tb.to(torch.bfloat16)
    expected = np.linalg.norm(ha.float().numpy() - hb.float().numpy(), axis=-1)
    np.testing.assert_allclose(l2_distance(ha, hb), expected, rtol=1e-6)


def test_cosine_special_vectors() -> None:
    x = np.array([[1.0, 2.0, 3.0]])
    assert cosine_distance(x, -x)[0] == pytest.approx(2.0)
    # 1 − cos of parallel vectors: float64 rounding of 1 − (a·b)/(|a||b|), operands of size 1, so
    # ε·S = 1e-10 (the rule's float64 bound; the old bare 1e-15 held one machine's order of sums)
    assert_close(cosine_distance(x, 5 * x)[0], 0.0, scale=1.0)
    assert cosine_distance(np.array([1.0, 0.0]), np.array([0.0, 3.0])) == pytest.approx(1.0)
    zero = np.zeros((1, 3))
    # Documented convention: cos with a zero vector is 0, except two equal rows are at 0.
    assert cosine_distance(zero, x)[0] == 1.0
    assert cosine_distance(x, zero)[0] == 1.0
    assert cosine_distance(zero, zero)[0] == 0.0


@pytest.mark.parametrize("name", ["cosine", "l2", "kl", "js"])
def test_identical_rows_give_exactly_zero(name: str) -> None:
    rng = np.random.default_rng(3)
    if name in ("kl", "js"):
        x = log_softmax(5 * rng.standard_normal((64, 30)), -1)
    else:
        x = 1e3 * rng.standard_normal((64, 30))  # large norms: rounding would leave ~1e-16
    out = DISTANCES[name](x, x.copy())
    assert out.shape == (64,)
    assert np.all(out == 0.0)


def test_kl_matches_scipy_entropy(logprobs: tuple[np.ndarray, np.ndarray]) -> None:
    lp, lq = logprobs
    p, q = np.exp(lp), np.exp(lq)
    expected = [entropy(p[i], q[i]) for i in range(5)]  # natural log, KL(p || q)
    np.testing.assert_allclose(kl_divergence(lp, lq), expected, rtol=1e-10)
    assert not np.allclose(kl_divergence(lp, lq), kl_divergence(lq, lp))  # not symmetric


def test_kl_with_zero_probabilities() -> None:
    lp = np.array([[np.log(0.5), np.log(0.5), -np.inf]])  # 0 log 0 = 0
    lq = np.log(np.array([[0.25, 0.25, 0.5]]))
    assert kl_divergence(lp, lq)[0] == pytest.approx(np.log(2.0))
    assert kl_divergence(lq, lp)[0] == np.inf  # q has mass where p has none


def test_js_matches_scipy(logprobs: tuple[np.ndarray, np.ndarray]) -> None:
    lp, lq = logprobs
    p, q = np.exp(lp), np.exp(lq)
    expected = [sp_distance.jensenshannon(p[i], q[i]) ** 2 for i in range(5)]
    np.testing.assert_allclose(js_divergence(lp, lq), expected, rtol=1e-9)
    np.testing.assert_allclose(js_divergence(lp, lq), js_divergence(lq, lp), rtol=1e-12)


def test_js_disjoint_supports_is_log2() -> None:
    lp = np.array([0.0, -np.inf])
    lq = np.array([-np.inf, 0.0])
    assert js_divergence(lp, lq) == pytest.approx(np.log(2.0))


def test_logits_are_rejected() -> None:
    logits = np.array([[2.0, 1.0, 0.5]])
    with pytest.raises(ValueError, match="log_softmax"):
        kl_divergence(logits, log_softmax(logits, -1))
    with pytest.raises(ValueError, match="log_softmax"):
        js_divergence(log_softmax(logits, -1), logits)


def test_shape_mismatch_and_registry() -> None:
    with refused(ValueError, match="shape mismatch"):
        cosine_distance(np.ones((2, 3)), np.ones((3, 3)))
    assert set(DISTANCES) == {"cosine", "l2", "kl", "js"}
    assert get_distance("l2") is l2_distance
    with pytest.raises(ValueError, match="cosine"):
        get_distance("manhattan")
