"""The VIP rules of :mod:`probes.vip` beside the causal integration layer.

The chain-of-embedding study's Visual Integration Point (VIP) is read off distances between the
states with and without the image; the flow study's causal integration layer is measured by
knocking the image out. These helpers put the two side by side on the same items:

- :func:`vip_rule_layers`: the VIP under each rule (by name, so a change of the library's default
  rule changes nothing here);
- :func:`rule_agreement`: each rule's VIP on random subsets of N items, and how often it lands
  within ±1 / ±2 layers of a causal layer (the N-sensitivity);
- :func:`plot_vip_rules`: the D_VT − D_T gap per layer with each rule's VIP and the causal layer;
- :func:`plot_rule_agreement`: the share of subsets within ±k of the causal layer against N.

Subsets are drawn without replacement by one generator, ``numpy.random.default_rng(seed)``: draw
``j`` of size N is its ``j``-th ``choice(n, size=N, replace=False)`` (all N in increasing order).
A subset whose smaller group has fewer than two items has no two-sample test: it counts as a
subset where the rule found no VIP.
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from jaxtyping import Bool, Float
from matplotlib.figure import Figure

from interp.figures import subplots
from probes.errors import EmptyGroupError, TooFewSamplesError
from probes.vip import RULES, VIPDetector, check_rule

RULE_STYLES = {"eq9": ":", "effect": "-.", "jump": (0, (5, 2)), "changepoint": "-"}


def _rules(rules: Sequence[str] | None) -> list[str]:
    names = list(rules) if rules is not None else list(RULES)
    if not names:
        raise ValueError("give at least one VIP rule")
    return [check_rule(r) for r in names]


def vip_rule_layers(
    distances: Float[np.ndarray, "n layer"],
    in_vt: Bool[np.ndarray, " n"],
    rules: Sequence[str] | None = None,
    **options: Any,
) -> dict[str, int | None]:
    """The VIP under each rule (default: every rule of :data:`probes.vip.RULES`), None where the
    rule finds none (or a group has fewer than two items). ``options`` go to
    :class:`probes.vip.VIPDetector` (``alpha``, ``beta``, ``min_fraction``, ``min_effect``).

    Raises:
        UnknownVIPRuleError: an unknown rule name.
    """
    out: dict[str, int | None] = {}
    for rule in _rules(rules):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out[rule] = VIPDetector(rule=rule, **options).fit(distances, in_vt).layer_
        except (EmptyGroupError, TooFewSamplesError):
            out[rule] = None
    return out


def rule_agreement(
    distances: Float[np.ndarray, "n layer"],
    in_vt: Bool[np.ndarray, " n"],
    causal_layer: int,
    *,
    ns: Sequence[int] = (100, 200, 400),
    draws: int = 10,
    rules: Sequence[str] | None = None,
    seed: int = 0,
    **options: Any,
) -> pd.DataFrame:
    """How often each rule's VIP lands near ``causal_layer`` on random subsets of N items.

    For every N of ``ns`` below the number of items, ``draws`` subsets (see the module docstring
    for how they are drawn); all items once more as the last N. One row per (N, rule): ``N``,
    ``rule``, ``draws``, ``found`` (subsets with a VIP), ``within_1`` / ``within_2`` (subsets whose
    VIP is within ±1 / ±2 layers of ``causal_layer``; a subset without a VIP is not within),
    ``mode`` (the most frequent VIP, the smallest on ties; None when none was found), ``low`` and
    ``high`` (the range of the VIPs found).

    Raises:
        ValueError: ``draws`` < 1, an N < 2, fewer than two items, or shapes that disagree.
        UnknownVIPRuleError: an unknown rule name.
    """
    d = np.asarray(distances, dtype=np.float64)
    vt = np.asarray(in_vt, dtype=bool)
    if d.ndim != 2 or vt.shape != (d.shape[0],):
        raise ValueError(
            f"distances must be [N, layers] and in_vt [N]; got {d.shape} and {vt.shape}"
        )
    if d.shape[0] < 2:
        raise ValueError(f"the N-sensitivity needs at least 2 items, got {d.shape[0]}")
    if draws < 1:
        raise ValueError(f"draws must be >= 1, got {draws}")
    if any(int(n) < 2 for n in ns):
        raise ValueError(f"every N must be >= 2, got {list(ns)}")
    names = _rules(rules)
    total = d.shape[0]
    sizes = sorted({int(n) for n in ns if int(n) < total}) + [total]
    rng = np.random.default_rng(seed)
    rows = []
    for n in sizes:
        count = 1 if n == total else draws
        found: dict[str, list[int | None]] = {r: [] for r in names}
        for _ in range(count):
            pick = np.arange(total) if n == total else rng.choice(total, size=n, replace=False)
            for rule, layer in vip_rule_layers(d[pick], vt[pick], names, **options).items():
                found[rule].append(layer)
        for rule in names:
            layers = [v for v in found[rule] if v is not None]
            counts = Counter(layers)
            top = max(counts.values()) if counts else 0
            rows.append(
                {
                    "N": n,
                    "rule": rule,
                    "draws": count,
                    "found": len(layers),
                    "within_1": sum(abs(v - causal_layer) <= 1 for v in layers),
                    "within_2": sum(abs(v - causal_layer) <= 2 for v in layers),
                    "mode": min(v for v, c in counts.items() if c == top) if counts else None,
                    "low": min(layers) if layers else None,
                    "high": max(layers) if layers else None,
                }
            )
    return pd.DataFrame(rows)


def plot_vip_rules(
    distances: Float[np.ndarray, "n layer"],
    in_vt: Bool[np.ndarray, " n"],
    *,
    causal_layer: int | None = None,
    rules: Sequence[str] | None = None,
    title: str = "",
    ax: Any = None,
    **options: Any,
) -> Figure:
    """The gap D̄_l(VT) − D̄_l(T) between the groups' mean distances per layer (0 = embeddings),
    a vertical line at each rule's VIP (rules that find none are listed as ``none`` in the
    legend) and a thick black dashed line at ``causal_layer``. ``options`` go to
    :class:`probes.vip.VIPDetector`."""
    d = np.asarray(distances, dtype=np.float64)
    vt = np.asarray(in_vt, dtype=bool)
    gap = d[vt].mean(axis=0) - d[~vt].mean(axis=0)
    layers = vip_rule_layers(d, vt, rules, **options)
    fig, ax = (ax.figure, ax) if ax is not None else subplots(figsize=(6.0, 3.4))
    ax.plot(np.arange(len(gap)), gap, color="0.3", marker="o", ms=3, lw=1.5, label="gap")
    ax.axhline(0.0, color="0.7", lw=0.8)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (rule, layer) in enumerate(layers.items()):
        style = RULE_STYLES.get(rule, "-")
        color = colors[i % len(colors)]
        if layer is None:
            ax.plot([], [], color=color, ls=style, label=f"{rule}: none")
            continue
        ax.axvline(layer, color=color, ls=style, lw=1.4, label=f"{rule}: {layer}")
    if causal_layer is not None:
        ax.axvline(causal_layer, color="k", ls="--", lw=2.2, label=f"causal: {causal_layer}")
    ax.set_xlabel("layer (0 = embeddings)")
    ax.set_ylabel("gap of mean distance, D_VT − D_T")
    ax.set_title(title or "VIP rules and the causal integration layer", fontsize=10)
    ax.legend(fontsize=7, frameon=False, loc="upper left")
    fig.tight_layout()
    return fig


def plot_rule_agreement(
    table: pd.DataFrame, *, tolerance: int = 2, title: str = "", ax: Any = None
) -> Figure:
    """From :func:`rule_agreement`'s table: the share of subsets whose VIP is within
    ±``tolerance`` (1 or 2) layers of the causal layer, against N, one line per rule."""
    if tolerance not in (1, 2):
        raise ValueError(f"tolerance must be 1 or 2 (the table's columns), got {tolerance}")
    fig, ax = (ax.figure, ax) if ax is not None else subplots(figsize=(5.0, 3.2))
    for rule, part in table.groupby("rule", sort=False):
        share = part[f"within_{tolerance}"] / part["draws"]
        ax.plot(part["N"], share, marker="o", ls=RULE_STYLES.get(str(rule), "-"), label=rule)
    ax.set_xscale("log")
    ax.set_ylim(-0.05, 1.05)
    ax.set_xlabel("N (items per subset)")
    ax.set_ylabel(f"share within ±{tolerance} of the causal layer")
    ax.set_title(title or f"VIP within ±{tolerance} layers of the causal layer", fontsize=10)
    ax.legend(fontsize=7, frameon=False)
    fig.tight_layout()
    return fig


__all__ = ["plot_rule_agreement", "plot_vip_rules", "rule_agreement", "vip_rule_layers"]
