"""Total Visual Integration (TVI): per-sample averages of layer distances after the VIP.

Inputs are distances ``d(z_vis^l, z_blind^l)`` of shape ``[N, L+1]`` (index 0 = embeddings,
index l = decoder layer l, ``docs/conventions.md``) and a VIP layer ``l*`` in ``1..L``; the output is ``[N]``.
"""

from __future__ import annotations

import numpy as np
from jaxtyping import Float

from .distances import ArrayLike, as_distance_matrix, as_float64
from .errors import TooFewSamplesError


def _check_vip(vip: object, n_layers: int, lowest: int = 1) -> int:
    if vip is None:
        raise ValueError(
            "vip is None: the automatic VIP rule found no layer (the groups do not separate); "
            "give a manual VIP layer instead"
        )
    if isinstance(vip, bool) or not isinstance(vip, (int, np.integer)):
        raise TypeError(f"vip must be an int layer index, got {type(vip).__name__}")
    if not lowest <= vip <= n_layers:
        raise ValueError(
            f"vip={vip} is outside {lowest}..{n_layers} (decoder layers are 1..L = 1..{n_layers}; "
            "index 0 is the embedding layer)"
        )
    return int(vip)


def tvi(
    distances: Float[ArrayLike, "n layer"],
    vip: int | np.integer,
    *,
    weights: Float[ArrayLike, " layer"] | None = None,
) -> Float[np.ndarray, " n"]:
    """TVI (Eq. 4): ``TVI_i = 1/(L - l* + 1) * sum_{l=l*}^{L} w_l d_il``, ``w_l = 1`` by default.

    ``weights`` has one entry per layer index ``0..L`` (only ``l*..L`` are used); note the
    normaliser stays the layer count, as in Eq. 11, not the sum of weights.

    Raises:
        ValueError: ``vip`` outside ``1..L`` or None (no VIP found), bad shapes or NaN.
    """
    d = as_distance_matrix(distances)
    n_layers = d.shape[1] - 1
    start = _check_vip(vip, n_layers)
    post = d[:, start:]
    if weights is not None:
        w = as_float64(weights, "weights")
        if w.shape != (n_layers + 1,):
            raise ValueError(
                f"weights must have one entry per layer index 0..L, shape ({n_layers + 1},); "
                f"got {w.shape}"
            )
        post = post * w[start:]
    return post.mean(axis=1)


def layer_std(distances: Float[ArrayLike, "n layer"]) -> Float[np.ndarray, " layer"]:
    """``sigma_l``: the sample std (ddof=1) of the per-sample distances at each layer."""
    d = as_distance_matrix(distances)
    if d.shape[0] < 2:
        raise TooFewSamplesError(f"a per-layer std needs at least 2 samples, got {d.shape[0]}")
    return d.std(axis=0, ddof=1)


def weighted_tvi(
    distances: Float[ArrayLike, "n layer"], vip: int | np.integer
) -> Float[np.ndarray, " n"]:
    """Std-reweighted TVI (Eq. 11): ``1/(L - l* + 1) * sum_{l=l*}^{L} sigma_l d_il``.

    ``sigma_l`` is :func:`layer_std` over the samples given, so the result for one sample
    depends on the whole batch; pass the full dataset.

    Raises:
        TooFewSamplesError: fewer than 2 samples.
    """
    return tvi(distances, vip, weights=layer_std(distances))


def pre_vip_tvi(
    distances: Float[ArrayLike, "n layer"], vip: int | np.integer
) -> Float[np.ndarray, " n"]:
    """Pre-VIP aggregate (Table 1, pre-l*): ``1/(l* - 1) * sum_{l=1}^{l*-1} d_il``.

    Raises:
        ValueError: ``vip < 2`` (no decoder layer precedes it) or ``vip > L``.
    """
    d = as_distance_matrix(distances)
    end = _check_vip(vip, d.shape[1] - 1, lowest=2)
    return d[:, 1:end].mean(axis=1)


__all__ = ["layer_std", "pre_vip_tvi", "tvi", "weighted_tvi"]
