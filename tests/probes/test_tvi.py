"""TVI (Eq. 4), its std-reweighted form (Eq. 11) and the pre-VIP aggregate, by hand."""

from __future__ import annotations

import statistics

import numpy as np
import pytest
import torch

from interp.testing import refused
from probes import layer_std, pre_vip_tvi, spearman, tvi, weighted_tvi


@pytest.fixture
def distances() -> np.ndarray:
    d = np.random.default_rng(0).random((7, 9))  # N = 7 samples, L = 8 decoder layers
    d[:, 0] = 0.0
    return d


def test_tvi_is_the_post_vip_average(distances: np.ndarray) -> None:
    n_layers = 8
    for vip in (1, 4, 8):
        expected = [
            sum(distances[i, layer] for layer in range(vip, n_layers + 1)) / (n_layers - vip + 1)
            for i in range(7)
        ]
        np.testing.assert_allclose(tvi(distances, vip), expected, rtol=1e-12)
    np.testing.assert_array_equal(tvi(distances, 8), distances[:, 8])  # last layer only
    np.testing.assert_allclose(tvi(torch.tensor(distances), np.int64(4)), tvi(distances, 4))


def test_weights_scale_layers_and_keep_the_count_normaliser(distances: np.ndarray) -> None:
    w = np.arange(9.0)
    expected = [sum(w[k] * distances[i, k] for k in range(5, 9)) / 4 for i in range(7)]
    np.testing.assert_allclose(tvi(distances, 5, weights=w), expected, rtol=1e-12)
    with refused(ValueError, match=r"one entry per layer index 0\.\.L"):
        tvi(distances, 5, weights=w[5:])


def test_weighted_tvi_uses_the_per_layer_std(distances: np.ndarray) -> None:
    sigma = [statistics.stdev(distances[:, k].tolist()) for k in range(9)]
    np.testing.assert_allclose(layer_std(distances), sigma, rtol=1e-12)
    expected = [sum(sigma[k] * distances[i, k] for k in range(3, 9)) / 6 for i in range(7)]
    np.testing.assert_allclose(weighted_tvi(distances, 3), expected, rtol=1e-12)


def test_pre_vip_tvi_averages_layers_before_the_vip(distances: np.ndarray) -> None:
    expected = [sum(distances[i, k] for k in range(1, 5)) / 4 for i in range(7)]
    np.testing.assert_allclose(pre_vip_tvi(distances, 5), expected, rtol=1e-12)
    np.testing.assert_array_equal(pre_vip_tvi(distances, 2), distances[:, 1])


def test_vip_range_is_validated(distances: np.ndarray) -> None:
    for bad in (0, 9, -1):
        with pytest.raises(ValueError, match=r"outside 1\.\.8"):
            tvi(distances, bad)
    with refused(ValueError, match="found no layer"):
        tvi(distances, None)  # type: ignore[arg-type]
    with refused(TypeError, match="int"):
        tvi(distances, True)
    with refused(TypeError, match="int"):
        tvi(distances, 3.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"outside 2\.\.8"):
        pre_vip_tvi(distances, 1)
    with refused(ValueError, match=r"\[N, L\+1\]"):
        tvi(distances[0], 2)


def test_post_vip_tvi_tracks_correctness_better_than_pre_vip() -> None:
    # Table 1's contrast on synthetic data: before the VIP distances are unrelated to
    # correctness, after it they grow with it.
    rng = np.random.default_rng(3)
    correct = rng.random(200) < 0.5
    d = 0.1 + 0.02 * rng.standard_normal((200, 13))
    d[:, 7:] += 0.05 * correct[:, None]
    post = spearman(tvi(d, 7), correct.astype(float))
    pre = spearman(pre_vip_tvi(d, 7), correct.astype(float))
    assert post.rho > 0.6 and post.p_value < 1e-10
    assert abs(pre.rho) < 0.2
