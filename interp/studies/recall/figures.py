"""The study's figures: accuracy per setting (Fig. 3), linking curves (Fig. 4), the probes'
validation curves over layers and risk-coverage curves; each returns a matplotlib Figure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure

from interp.figures import plot_line_band, subplots

from .analysis import risk_curves
from .crossfamily import Transfer
from .curves import LinkingCurves
from .items import check_families
from .probes import FailureProbes
from .result import RecallRun
from .settings import METRICS, SETTING_NAMES, SETTINGS

_COLORS = {"text_only": "C0", "visual": "C3", "full_info": "C2"}


def plot_accuracy(run: RecallRun, metrics: Sequence[str] = METRICS, subset: str = "kept") -> Figure:
    """Fig. 3 (and Figs. 5-6): accuracy of Text-Only, Visual and Full Info per family, one panel
    per metric, with bootstrap 95 % intervals."""
    table = run.accuracy(subset)
    fams = [*run.families, "all"]
    fig, axes = subplots(1, len(metrics), figsize=(4.2 * len(metrics), 3.4), squeeze=False)
    x = np.arange(len(fams))
    width = 0.8 / len(SETTINGS)
    for ax, metric in zip(axes[0], metrics):
        part = table[table["metric"] == metric].set_index(["family", "setting"])
        for k, setting in enumerate(SETTINGS):
            vals = np.array([part.loc[(f, setting), "value"] for f in fams])
            lo = np.array([part.loc[(f, setting), "low"] for f in fams])
            hi = np.array([part.loc[(f, setting), "high"] for f in fams])
            err = np.nan_to_num(np.vstack([vals - lo, hi - vals]))
            ax.bar(
                x + (k - 1) * width,
                vals,
                width,
                yerr=err,
                capsize=2,
                color=_COLORS[setting],
                label=SETTING_NAMES[setting],
            )
        ax.set_xticks(x, fams)
        ax.set_ylim(0, 1.05)
        ax.set_title(f"{metric}" + (" / 100" if metric == "bleu" else ""), fontsize=10)
    axes[0, 0].set_ylabel(f"accuracy ({subset} items)")
    axes[0, 0].legend(fontsize=8, frameon=False)
    fig.tight_layout()
    return fig


def plot_linking(curves: LinkingCurves, title: str | None = None) -> Figure:
    """Fig. 4: the logit-lens probability of the eventual output token (top) and the
    Visual-vs-Full-Info cosine similarity (bottom) per layer, linking successes vs failures,
    mean with 95 % intervals."""
    frame = curves.to_frame()
    fig, axes = subplots(2, 1, figsize=(5.5, 6.0), sharex=True)
    labels = {"lens": "p(eventual output token)", "cosine": "cosine(Visual, Full Info)"}
    for ax, measure in zip(axes, ("lens", "cosine")):
        for group, color in (("success", "C2"), ("failure", "C3")):
            part = frame[(frame["measure"] == measure) & (frame["group"] == group)]
            n = int(part["n"].iloc[0])
            plot_line_band(
                ax,
                part["layer"],
                part["mean"],
                part["low"],
                part["high"],
                color,
                f"linking {group} (n={n})",
            )
        ax.set_ylabel(labels[measure])
        ax.legend(fontsize=8, frameon=False)
    axes[1].set_xlabel("layer (0 = embeddings)")
    if title:
        axes[0].set_title(title)
    fig.tight_layout()
    return fig


def plot_probe_curves(
    results: Mapping[str, FailureProbes], metric: str = "balanced_accuracy"
) -> Figure:
    """The validation curve over layers of each result's probe (mean ± std over folds, clipped
    to the score's range [0, 1]), its chosen layer marked."""
    fig, ax = subplots(figsize=(5.5, 3.6))
    for k, (name, res) in enumerate(results.items()):
        scores = res.curve.scores_
        mean, std = scores[f"{metric}_mean"], scores[f"{metric}_std"]
        (line,) = ax.plot(scores.index, mean, marker="o", ms=3, color=f"C{k}", label=name)
        low, high = np.clip(mean - std, 0.0, 1.0), np.clip(mean + std, 0.0, 1.0)  # scores in [0, 1]
        ax.fill_between(scores.index, low, high, color=line.get_color(), alpha=0.15)
        ax.axvline(res.layer, color=line.get_color(), ls="--", lw=1)
    ax.axhline(0.5, color="grey", ls=":", lw=1)
    ax.set_xlabel("layer (0 = embeddings)")
    ax.set_ylabel(f"CV {metric.replace('_', ' ')}")
    ax.set_title("Failure probe per layer (dashed: chosen layer)")
    ax.legend(fontsize=8, frameon=False)
    fig.tight_layout()
    return fig


def plot_risk_coverage(result: FailureProbes | Transfer, held_out: str | None = None) -> Figure:
    """Risk against coverage for the perplexity, probe and ensemble confidences (one panel;
    for a :class:`Transfer`, the ``held_out`` family, default the first)."""
    pred = result.predictions
    title = f"family {result.family}" if isinstance(result, FailureProbes) else ""
    if isinstance(result, Transfer):
        fam = held_out or result.held_out[0]
        check_families(result.held_out, [fam])
        pred = pred[pred["held_out"] == fam]
        title = f"held out: {fam}"
    fig, ax = subplots(figsize=(4.8, 3.6))
    for method, curve in risk_curves(pred).items():
        curve.plot(ax=ax, label=method)
    ax.axhline(1 - pred["correct"].mean(), color="grey", ls=":", lw=1)
    ax.set_title(f"Risk-coverage ({title})")
    fig.tight_layout()
    return fig
