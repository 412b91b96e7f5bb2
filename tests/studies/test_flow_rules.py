"""The VIP rules beside the causal integration layer (``interp.studies.flow.rules``): the
N-sensitivity table equals a loop written here over the same subsets, the gap figure draws the
numpy gap and each rule's layer, and bad input is refused."""

from __future__ import annotations

import warnings

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

from interp.studies.flow import (
    plot_rule_agreement,
    plot_vip_rules,
    rule_agreement,
    vip_rule_layers,
)
from interp.testing.tolerance import assert_close
from probes.errors import UnknownVIPRuleError
from probes.vip import RULES, VIPDetector


def _distances(n: int = 240, layers: int = 12, step: int = 7, seed: int = 0):
    """Distances [n, layers+1]: D_VT items rise by 0.3 from layer ``step`` on, D_T do not; a
    small early bump at layer 2 for D_VT."""
    rng = np.random.default_rng(seed)
    in_vt = rng.random(n) < 0.7
    d = np.abs(rng.normal(0.02, 0.01, size=(n, layers + 1)))
    d[in_vt, step:] += 0.3 + rng.normal(0, 0.05, size=(int(in_vt.sum()), layers + 1 - step))
    d[in_vt, 2] += 0.004
    return d, in_vt


def _layer(rule: str, d: np.ndarray, vt: np.ndarray) -> int | None:
    if vt.sum() < 2 or (~vt).sum() < 2:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return VIPDetector(rule=rule).fit(d, vt).layer_


def test_rule_agreement_equals_a_loop_over_the_same_subsets():
    d, vt = _distances()
    causal = 8
    table = rule_agreement(d, vt, causal, ns=(20, 60), draws=6, seed=3)
    rng = np.random.default_rng(3)
    expected = {}
    for n in (20, 60, len(d)):
        picks = (
            [np.arange(len(d))]
            if n == len(d)
            else [rng.choice(len(d), size=n, replace=False) for _ in range(6)]
        )
        for rule in RULES:
            got = [_layer(rule, d[p], vt[p]) for p in picks]
            found = [g for g in got if g is not None]
            expected[n, rule] = (
                len(picks),
                len(found),
                sum(abs(g - causal) <= 1 for g in found),
                sum(abs(g - causal) <= 2 for g in found),
                min(found) if found else None,
                max(found) if found else None,
            )
    assert len(table) == 3 * len(RULES)
    for row in table.itertuples():
        assert (row.draws, row.found, row.within_1, row.within_2, row.low, row.high) == expected[
            row.N, row.rule
        ]
    # the gap rises at layer 7 (a jump of 0.3): the largest rise of the numpy gap is there
    gap = d[vt].mean(0) - d[~vt].mean(0)
    every = table[table["N"] == len(d)].set_index("rule")
    assert int(np.argmax(np.diff(gap))) + 1 == 7 == every.loc["jump", "mode"]
    assert every.loc["changepoint", "within_1"] == 1 and every.loc["changepoint", "within_2"] == 1


def test_a_subset_with_a_one_item_group_counts_as_no_vip():
    d, vt = _distances(n=40)
    vt = np.zeros(40, bool)
    vt[:2] = True  # two D_VT items: most subsets of 5 hold at most one
    table = rule_agreement(d, vt, 7, ns=(5,), draws=8, rules=["jump"], seed=1)
    rng = np.random.default_rng(1)
    ok = [vt[rng.choice(40, size=5, replace=False)].sum() >= 2 for _ in range(8)]
    small = table[table["N"] == 5].iloc[0]
    assert small["found"] <= sum(ok) < 8


def test_the_gap_figure_draws_the_numpy_gap_and_each_rules_layer():
    d, vt = _distances()
    fig = plot_vip_rules(d, vt, causal_layer=9, rules=["eq9", "jump", "changepoint"])
    ax = fig.axes[0]
    gap = d[vt].mean(0) - d[~vt].mean(0)
    line = next(ln for ln in ax.get_lines() if ln.get_label() == "gap")
    # float64: 1e-10·S, 100x the old bare 1e-12, far below what a wrong gap would move
    assert_close(line.get_ydata(), gap)
    marks = {ln.get_label(): ln.get_xdata()[0] for ln in ax.get_lines() if ln.get_label() != "gap"}
    for rule in ("eq9", "jump", "changepoint"):
        layer = _layer(rule, d, vt)
        assert marks[f"{rule}: {layer}"] == layer
    assert marks["causal: 9"] == 9
    assert vip_rule_layers(d, vt, ["jump"]) == {"jump": _layer("jump", d, vt)}


def test_the_agreement_figure_plots_the_share_within_the_tolerance():
    d, vt = _distances()
    table = rule_agreement(d, vt, 7, ns=(30,), draws=4, rules=["jump", "eq9"])
    fig = plot_rule_agreement(table, tolerance=1)
    lines = {ln.get_label(): ln for ln in fig.axes[0].get_lines()}
    for rule in ("jump", "eq9"):
        part = table[table["rule"] == rule]
        np.testing.assert_allclose(lines[rule].get_ydata(), part["within_1"] / part["draws"])


def test_bad_input_is_refused():
    d, vt = _distances(n=30)
    with pytest.raises(UnknownVIPRuleError, match="unknown VIP rule 'median'"):
        rule_agreement(d, vt, 7, rules=["median"])
    with pytest.raises(ValueError, match="draws must be >= 1"):
        rule_agreement(d, vt, 7, draws=0)
    with pytest.raises(ValueError, match="every N must be >= 2"):
        rule_agreement(d, vt, 7, ns=(1,))
    table = rule_agreement(d, vt, 7, ns=(10,), draws=2, rules=["jump"])
    with pytest.raises(ValueError, match="tolerance must be 1 or 2"):
        plot_rule_agreement(table, tolerance=3)
