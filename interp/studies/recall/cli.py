"""``interp recall`` — the visual-reference recall study as a command: runs every setting on the
model, writes the tables and figures into ``--out`` and prints the summary. The command's
``--help`` shows the study's description (the package docstring). Registering it imports no torch:
the study's modules load inside the run."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from interp.cli import (
    UsageError,
    add_common_arguments,
    check_common_arguments,
    check_model,
    check_output_dir,
    load_data,
    write_summary,
)
from interp.errors import EmptyInputError, ProbeError

from . import __doc__ as STUDY_DOC
from .settings import DEMO_IDENTIFY, GROUPINGS, REFERENCE_QTYPES, SETTINGS, SUBSETS, TRIVIAL

if TYPE_CHECKING:
    import pandas as pd

    from .items import RecallItem
    from .probes import FailureProbes


DATA_HELP = (
    "'demo' (the demo world's three reference families: facts, arithmetic, words), or a JSONL "
    "file whose rows carry the labels group, setting (text_only/full_info/visual), family and "
    "entity (and optionally identify: the question asking what the image shows)"
)


def _list(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def _validate(args: argparse.Namespace) -> tuple[list[RecallItem], tuple[str, ...], Path]:
    """Everything checked before the model is loaded: options, trivial conditions, output
    folder, model configuration, data (every image opened), families, items per fold."""
    from .items import check_trivial, families_of, recall_items

    check_common_arguments(args, one_process="interp recall")
    if args.max_new_tokens < 1:
        raise UsageError(f"--max-new-tokens must be >= 1, got {args.max_new_tokens}")
    for option, value in (("--cv", args.cv), ("--inner-cv", args.inner_cv)):
        if value < 2:
            raise UsageError(f"{option} must be >= 2 folds, got {value}")
    trivial = check_trivial(_list(args.trivial))
    check_output_dir(args.out, create=False)
    n_layers = check_model(args.model)
    if args.layer is not None and not 0 <= args.layer <= n_layers:
        raise UsageError(f"--layer {args.layer} is outside the model's layers 0..{n_layers}")
    n = args.n
    if args.data == "demo" and n is not None:
        n = 3 * math.ceil(n / 3)  # whole items: three settings per item
    samples = load_data(
        args.data, n, args.seed, default_qtypes=REFERENCE_QTYPES, columns=args.columns
    )
    identify = None if args.no_identify else DEMO_IDENTIFY
    families = _list(args.families) if args.families else None
    items = recall_items(samples, families=families, identify=identify)
    for fam in families_of(items):
        count = sum(item.family == fam for item in items)
        if count < args.cv:
            raise UsageError(
                f"family {fam!r} has {count} items, fewer than --cv {args.cv} folds; give more "
                "samples (--n) or fewer folds"
            )
    out = check_output_dir(args.out)
    return items, trivial, out


def _try(what: str, fn: Any, notes: list[str]) -> Any:
    """Run an analysis; a ProbeError (a single class, too few items) or an EmptyInputError (no
    item of a family passed the filters) becomes a note."""
    try:
        return fn()
    except (ProbeError, EmptyInputError) as err:
        notes.append(f"{what}: skipped ({err})")
        return None


def _recall_command(args: argparse.Namespace) -> int:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    from interp.model import load

    from .crossfamily import transfer
    from .curves import linking_curves
    from .figures import plot_accuracy, plot_linking, plot_probe_curves, plot_risk_coverage
    from .measure import run_recall
    from .probes import failure_probes

    items, trivial, out = _validate(args)
    vlm = load(args.model)
    print(f"{vlm}\n{len(items)} recall items from {args.data!r}", flush=True)
    run = run_recall(
        vlm,
        items,
        trivial=trivial,
        guess_filter=not args.no_guess_filter,
        max_new_tokens=args.max_new_tokens,
        whole_words=not args.char_inclusion,
        seed=args.seed,
        batch_size=args.batch_size,
        store=out / "store",
        overwrite=args.overwrite,
        progress_bar=not args.no_progress,
    )
    subset = args.subset
    run.to_frame().to_csv(out / "answers.csv", index=False)
    accuracy = pd.concat([run.accuracy("all"), run.accuracy("kept")], ignore_index=True)
    accuracy.to_csv(out / "accuracy.csv", index=False)
    gap = run.gap(subset=subset)
    gap.to_csv(out / "gap.csv", index=False)
    plot_accuracy(run, subset=subset).savefig(out / "fig3_accuracy.png", dpi=130)
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
    try:
        curves = linking_curves(run, subset=subset)
        curves.to_frame().to_csv(out / "linking_layers.csv", index=False)
        summary = curves.summary()
        summary.to_csv(out / "linking_summary.csv", index=False)
        plot_linking(curves).savefig(out / "fig4_linking.png", dpi=130)
        lines += ["", "linking success vs failure (Fig. 4):", summary.to_string(index=False)]
    except (ProbeError, EmptyInputError) as err:
        notes.append(f"linking curves: skipped ({err})")
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
        pd.concat(
            [r.curve.scores_.assign(family=k).reset_index() for k, r in results.items()]
        ).to_csv(out / "probe_curves.csv", index=False)
        table2 = pd.concat([r.table() for r in results.values()], ignore_index=True)
        table2.to_csv(out / "probes.csv", index=False)
        selective = pd.concat([r.selective() for r in results.values()], ignore_index=True)
        selective.to_csv(out / "selective.csv", index=False)
        plot_probe_curves(results).savefig(out / "probe_curves.png", dpi=130)
        plot_risk_coverage(next(iter(results.values()))).savefig(out / "risk_coverage.png", dpi=130)
        layers = ", ".join(f"{k}: {r.layer}" for k, r in results.items())
        lines += [
            "",
            f"failure probes (Table 2; nested {args.cv}-fold CV, groups={args.groups}); layer "
            f"chosen by validation — {layers}:",
            table2[
                ["family", "method", "accuracy", "low", "high", "balanced_accuracy", "auroc"]
            ].to_string(index=False, float_format=lambda v: f"{v:.3f}"),
            "",
            "selective prediction, in distribution:",
            selective[
                ["family", "method", "coverage", "risk", "n_answered", "n", "aurc"]
            ].to_string(index=False, float_format=lambda v: f"{v:.3f}"),
        ]
    with_items = run.families_with_items(subset)
    if len(run.families) >= 2 and len(with_items) < 2:
        notes.append(
            f"transfer: skipped (it needs two families with {subset} items; "
            f"{', '.join(with_items) or 'none'} has some)"
        )
    elif len(run.families) >= 2:
        tr = _try("transfer", lambda: transfer(run, **opts), notes)
        if tr is not None:
            tr.table().to_csv(out / "transfer.csv", index=False)
            tr.selective().to_csv(out / "transfer_selective.csv", index=False)
            tr.layer_scores.to_csv(out / "transfer_layers.csv", index=False)
            lines += [
                "",
                "transfer (Table 1): trained on the other families, applied to the held-out one "
                "(percent):",
                tr.table1().to_string(index=False, float_format=lambda v: f"{v:.1f}"),
            ]
    if notes:
        lines += ["", "notes:", *[f"  {n}" for n in notes]]
    plt.close("all")
    text = "\n".join(lines)
    write_summary(out, text)
    return 0


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


def register(sub: Any) -> None:
    """Add ``recall`` to the ``interp`` command."""
    p = sub.add_parser(
        "recall",
        help="visual-reference recall: Text-Only / Visual / Full Info, logit lens, failure probes",
        description=STUDY_DOC,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common_arguments(p, data_help=DATA_HELP)
    p.add_argument("--families", default=None, help="comma-separated families (default: all)")
    p.add_argument(
        "--trivial",
        default=",".join(TRIVIAL),
        help="trivial-image conditions of the Text-Only vote (default: %(default)s)",
    )
    p.add_argument("--max-new-tokens", type=int, default=8)
    p.add_argument("--cv", type=int, default=5, help="(outer) cross-validation folds")
    p.add_argument("--inner-cv", type=int, default=3, help="folds that choose the probe layer")
    p.add_argument("--layer", type=int, default=None, help="fix the probe layer (0..L)")
    p.add_argument(
        "--groups",
        choices=GROUPINGS,
        default="pair",
        help="what never straddles train and test (default: the question-answer pair)",
    )
    p.add_argument("--subset", choices=SUBSETS, default="kept", help="filtered items or all")
    p.add_argument(
        "--char-inclusion",
        action="store_true",
        help="the paper's character-level two-way inclusion (default: on whole words)",
    )
    p.add_argument("--no-identify", action="store_true", help="no identification filter")
    p.add_argument(
        "--no-guess-filter", action="store_true", help="keep items the prior alone answers"
    )
    p.set_defaults(func=_recall_command)
