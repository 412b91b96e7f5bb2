"""``interp conflict`` — the modality-conflict study on a model and a dataset.

The parser registration imports only argparse, :mod:`interp.cli` and the package (whose public
names load on first use); the model runs, tables and figures are imported when the command runs.
The command's help text is the package's docstring.
"""

from __future__ import annotations

import argparse
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
from interp.studies import conflict as _package

if TYPE_CHECKING:
    from interp.samples import Sample


def _validate(args: argparse.Namespace) -> tuple[list[Sample], Path, list[str]]:
    from .items import SOURCES, check_items

    check_common_arguments(args, one_process="interp conflict")
    if args.max_new_tokens < 1:
        raise UsageError(f"--max-new-tokens must be >= 1, got {args.max_new_tokens}")
    if args.cv < 2:
        raise UsageError(f"--cv must be >= 2, got {args.cv}")
    favour = [f.strip() for f in args.favour.split(",") if f.strip()]
    for name in favour:
        if name not in SOURCES:
            raise UsageError(f"--favour: unknown source {name!r}; sources: {', '.join(SOURCES)}")
    check_output_dir(args.out, create=False)
    check_model(args.model)
    samples = load_data(
        args.data, args.n, args.seed, default_qtypes=("conflict",), columns=args.columns
    )
    check_items(samples)
    out = check_output_dir(args.out)
    return samples, out, favour


def _conflict_command(args: argparse.Namespace) -> int:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    from interp.model import load

    from .analysis import ConflictResponses
    from .figures import plot_bias, plot_positions
    from .measure import conflict_responses, favouring
    from .probe import bias_probe

    samples, out, favour = _validate(args)
    vlm = load(args.model)
    print(f"{vlm}\n{len(samples)} conflict items from {args.data!r}", flush=True)
    kw = dict(
        max_new_tokens=args.max_new_tokens,
        batch_size=args.batch_size,
        overwrite=args.overwrite,
        progress_bar=not args.no_progress,
    )
    resp = conflict_responses(vlm, samples, store=out / "store", **kw)
    cd = conflict_responses(
        vlm,
        samples,
        configurations={"PercI+PropI": "full"},
        decodings={k: v for k, v in favouring(favour).items() if v is not None},
        store=out / "store",
        **kw,
    )
    both = ConflictResponses(pd.concat([resp.frame, cd.frame], ignore_index=True))
    both.frame.to_csv(out / "responses.csv", index=False)
    by_config = resp.table("configuration")
    by_order = resp.bias_rates(("configuration", "order"))
    positions = resp.position_effect()
    base = both.frame[both.frame["configuration"] == "PercI+PropI"]
    decoding = ConflictResponses(base).table("decoding")
    competence = both.competence()
    by_config.to_csv(out / "bias_by_configuration.csv")
    by_order.to_csv(out / "bias_by_order.csv", index=False)
    positions.to_csv(out / "position_effect.csv", index=False)
    decoding.to_csv(out / "decoding.csv")
    competence.to_csv(out / "competence.csv", index=False)
    plot_bias(by_config, "all sources differ").savefig(out / "bias.png", dpi=130)
    plot_positions(positions).savefig(out / "positions.png", dpi=130)
    lines = [f"model {args.model!r}, data {args.data!r}, {len(samples)} items", ""]
    lines += ["bias rates, all sources differ:", by_config.round(3).to_string(), ""]
    lines += ["contrastive decoding (α = 0.5, β = 0.1):", decoding.round(3).to_string(), ""]
    lines += ["accuracy where all sources agree:", competence.round(3).to_string(index=False)]
    try:
        probe = bias_probe(
            vlm,
            samples,
            resp,
            cv=args.cv,
            batch_size=args.batch_size,
            progress_bar=not args.no_progress,
        )
        probe.to_frame().to_csv(out / "probe_layers.csv", index_label="layer")
        probe.plot().savefig(out / "probe.png", dpi=130)
        first = probe.decodable_from()
        best = probe.probe.best_layer_
        top = float(probe.probe.scores_["balanced_accuracy_mean"].max())
        where = (
            f"above chance from layer {first}"
            if first is not None
            else "not above chance at any layer (one-sided t-test over the folds, "
            "Bonferroni-corrected over the layers, level 0.05)"
        )
        lines += [
            "",
            f"bias label probe (last prompt token): {where}; its best balanced accuracy is "
            f"{top:.2f} at layer {best} (chance {probe.chance:.2f})",
        ]
    except (EmptyInputError, ProbeError) as err:  # too few items of some label for the folds
        lines += ["", f"probe skipped: {err}"]
    plt.close("all")
    text = "\n".join(lines)
    write_summary(out, text)
    return 0


def register(sub: Any) -> None:
    """Add ``conflict`` to the ``interp`` command."""
    d = sub.add_parser(
        "conflict",
        help="modality conflict: bias labels per evidence form and order, probes, "
        "contrastive decoding",
        description=_package.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common_arguments(
        d,
        data_help="'demo' (the demo world's conflict items, all six orders) or a JSONL file whose "
        "items carry image_label, propositional_label, text_label, order and caption labels",
    )
    d.add_argument(
        "--favour",
        default="image,text",
        help="sources the contrastive-decoding diagnostic favours (comma-separated)",
    )
    d.add_argument("--cv", type=int, default=5, help="folds of the layer-wise probes")
    d.add_argument("--max-new-tokens", type=int, default=4)
    d.set_defaults(func=_conflict_command)


__all__ = ["register"]
