"""What ``interp recall`` computes and writes once its checks have passed and the model is loaded
(:mod:`~interp.studies.recall.cli` declares the command): every setting's answers, accuracy and the visual-reference
gap, the linking curves, the failure probes with selective prediction and the transfer across
families, their tables, figures and summary."""

from __future__ import annotations

from typing import Any

import pandas as pd

from interp.command import Invocation, Outputs
from interp.errors import EmptyInputError, ProbeError

from .crossfamily import transfer
from .curves import linking_curves
from .figures import plot_accuracy, plot_linking, plot_probe_curves, plot_risk_coverage
from .measure import run_recall
from .probes import FailureProbes, failure_probes
from .result import RecallRun
from .settings import SETTINGS


def _try(what: str, fn: Any, notes: list[str]) -> Any:
    """Run an analysis; a ProbeError (a single class, too few items) or an EmptyInputError (no
    item of a family passed the filters) becomes a note."""
    try:
        return fn()
    except (ProbeError, EmptyInputError) as err:
        notes.append(f"{what}: skipped ({err})")
        return None


def _accuracy_text(table: pd.DataFrame) -> str:
    cells = table.assign(
        cell=[
            f"{v:.3f} [{lo:.3f}, {hi:.3f}]"
            for v, lo, hi in zip(table["value"], table["low"], table["high"])
        ]
    )
    wide = cells.pivot_table(
        index=["family", "metric"], columns="setting", values="cell", aggfunc="first", sort=False
    )
    return wide[[s for s in SETTINGS if s in wide.columns]].to_string()


def _linking(run: RecallRun, out: Outputs, subset: str) -> list[str]:
    curves = linking_curves(run, subset=subset)
    out.csv(curves.to_frame(), "linking_layers.csv")
    summary = out.csv(curves.table(), "linking_summary.csv")
    out.figure(plot_linking(curves), "fig4_linking.png")
    return ["", "linking success vs failure (Fig. 4):", summary.to_string(index=False)]


def _probes(results: dict[str, FailureProbes], out: Outputs, cv: int, groups: str) -> list[str]:
    curves = [r.curve.scores_.assign(family=k).reset_index() for k, r in results.items()]
    out.csv(pd.concat(curves), "probe_curves.csv")
    table2 = pd.concat([r.table() for r in results.values()], ignore_index=True)
    out.csv(table2, "probes.csv")
    selective = pd.concat([r.selective() for r in results.values()], ignore_index=True)
    out.csv(selective, "selective.csv")
    out.figure(plot_probe_curves(results), "probe_curves.png")
    out.figure(plot_risk_coverage(next(iter(results.values()))), "risk_coverage.png")
    layers = ", ".join(f"{k}: {r.layer}" for k, r in results.items())
    three = {"float_format": lambda v: f"{v:.3f}", "index": False}
    return [
        "",
        f"failure probes (Table 2; nested {cv}-fold CV, groups={groups}); layer "
        f"chosen by validation — {layers}:",
        table2[
            ["family", "method", "accuracy", "low", "high", "balanced_accuracy", "auroc"]
        ].to_string(**three),
        "",
        "selective prediction, in distribution:",
        selective[["family", "method", "coverage", "risk", "n_answered", "n", "aurc"]].to_string(
            **three
        ),
    ]


def report(inv: Invocation) -> str:
    """Run the study on ``inv.vlm``, write its outputs and return the summary text."""
    args, out, vlm = inv.args, inv.out, inv.vlm
    assert out is not None and vlm is not None
    run = run_recall(
        vlm,
        inv.samples,
        trivial=inv.plan["trivial"],
        guess_filter=not args.no_guess_filter,
        max_new_tokens=args.max_new_tokens,
        whole_words=not args.char_inclusion,
        seed=args.seed,
        **inv.run_options(),
    )
    subset = args.subset
    out.csv(run.to_frame(), "answers.csv")
    accuracy = pd.concat([run.accuracy("all"), run.accuracy("kept")], ignore_index=True)
    out.csv(accuracy, "accuracy.csv")
    gap = out.csv(run.gap(subset=subset), "gap.csv")
    out.figure(plot_accuracy(run, subset=subset), "fig3_accuracy.png")
    notes: list[str] = []
    lines = [
        f"model {args.model!r}, data {args.data!r}: {len(run)} items, {int(run.kept.sum())} kept "
        "by the benchmark's filters",
        "",
        "filters (items removed):",
        run.filters().to_string(index=False),
        "",
        f"accuracy, {subset} items (value [95% CI]):",
        _accuracy_text(accuracy[accuracy["subset"] == subset]),
        "",
        "visual-reference gap (Text-Only minus Visual, inclusion):",
        gap.to_string(index=False, float_format=lambda v: f"{v:.3f}"),
    ]
    opts = {"cv": args.cv, "groups": args.groups, "subset": subset, "layer": args.layer}
    lines += _try("linking curves", lambda: _linking(run, out, subset), notes) or []
    results: dict[str, FailureProbes] = {}
    for fam in [None, *run.families]:
        res = _try(
            f"failure probe, {fam or 'all families'}",
            lambda fam=fam: failure_probes(run, fam, inner_cv=args.inner_cv, **opts),
            notes,
        )
        if res is not None:
            results[fam or "all"] = res
    if results:
        lines += _probes(results, out, args.cv, args.groups)
    with_items = run.families_with_items(subset)
    if len(run.families) >= 2 and len(with_items) < 2:
        notes.append(
            f"transfer: skipped (it needs two families with {subset} items; "
            f"{', '.join(with_items) or 'none'} has some)"
        )
    elif len(run.families) >= 2:
        tr = _try("transfer", lambda: transfer(run, **opts), notes)
        if tr is not None:
            out.csv(tr.table(), "transfer.csv")
            out.csv(tr.selective(), "transfer_selective.csv")
            out.csv(tr.layer_scores, "transfer_layers.csv")
            lines += [
                "",
                "transfer (Table 1): trained on the other families, applied to the held-out one "
                "(percent):",
                tr.table1().to_string(index=False, float_format=lambda v: f"{v:.1f}"),
            ]
    if notes:
        lines += ["", "notes:", *[f"  {n}" for n in notes]]
    return "\n".join(lines)
