"""What ``interp attribute`` computes and writes once its checks have passed and the model is
loaded (:mod:`~interp.studies.attribute.cli` declares the command): the occlusion scores, the maps, and the planted-truth
table where the samples name their object."""

from __future__ import annotations

import numpy as np

from interp.command import Invocation
from interp.errors import RegionError
from interp.headlines import Number, bracket, clusters, mean_interval, unit_words, with_interval
from probes.inference import Comparison

from .analysis import mass_table, object_shares
from .figures import plot_attribution, plot_attribution_grid
from .headlines import mass_headlines
from .measure import attention, gradient, occlusion


def _bracket(est: Comparison) -> str:
    """``"value [low, high]"`` as the audit writes a headline (3 significant digits)."""
    numbers: dict[str, Number] = {}
    with_interval(numbers, "x", est.value, est.low, est.high)
    return bracket(numbers, "x")


def report(inv: Invocation) -> str:
    """Run the method, write ``<method>.csv``, ``maps.png``, ``map_<k>.png`` and (demo
    scenes) ``object_shares.csv`` / ``object_mass.csv``; return the summary text."""
    assert inv.vlm is not None and inv.out is not None
    args, out = inv.args, inv.out
    rows, cols = inv.plan["grid"]
    if args.method == "attention":
        result = attention(inv.vlm, inv.samples, grid=(rows, cols), **inv.run_options())
    elif args.method == "gradient":
        opts = inv.run_options()
        result = gradient(
            inv.vlm,
            inv.samples,
            layer=args.layer,
            grid=(rows, cols),
            null=args.source,
            answers=args.answers,
            max_new_tokens=args.max_new_tokens,
            batch_size=opts["batch_size"],
            progress_bar=opts["progress_bar"],
        )
    else:
        result = occlusion(
            inv.vlm,
            inv.samples,
            grid=(rows, cols),
            hide=args.hide,
            mode=args.mode,
            source=args.source,
            answers=args.answers,
            max_new_tokens=args.max_new_tokens,
            **inv.run_options(),
        )
    out.csv(result.to_frame(), f"{result.method}.csv")
    out.figure(plot_attribution_grid(result, inv.samples), "maps.png")
    for k, sample in enumerate(inv.samples[: max(args.plots, 0)]):
        out.figure(plot_attribution(result, sample), f"map_{k}.png")
    groups = clusters(inv.samples)
    over = unit_words(f"{len(result)} samples", None if groups is None else len(set(groups)))
    region = mean_interval(np.nanmean(result.scores, axis=1), groups)
    how = f"By {result.method}"
    if result.method == "attention":
        lines = [
            f"attention of the last prompt position over a {rows}x{cols} grid, mean over layers "
            f"and heads, {len(result)} samples",
            f"mean region mass {_bracket(region)}, largest {result.scores.max():.4f} "
            f"(95% interval over {over})",
        ]
    else:
        if result.method == "gradient":
            how = (
                f"attribution patching at residual index {args.layer} against {args.source!r}, "
                f"over a {rows}x{cols} grid"
            )
        else:
            hidden = f"{args.hide} ({args.mode if args.hide == 'ablate' else args.source})"
            how = f"occlusion over a {rows}x{cols} grid, regions hidden by {hidden}"
        base = mean_interval(result.base, groups)
        lines = [
            f"{how}, {args.answers} answers, {len(result)} samples",
            f"mean log p(answer) {_bracket(base)}; mean region score {_bracket(region)}, largest "
            f"{result.scores.max():.4f} (95% intervals over {over})",
        ]
    shares = object_shares(result, inv.samples)
    if not shares.empty:
        out.csv(shares, "object_shares.csv")
        try:
            table = out.csv(mass_table(shares), "object_mass.csv")
        except RegionError as err:
            lines.append(f"object mass: skipped ({err})")
        else:
            lead = f"With {how}" if result.method != "attention" else how
            head = mass_headlines(shares, inv.samples, method=result.method, how=lead)
            lines += [
                "",
                "headline (each with its n and 95% interval):",
                head.text,
                "",
                f"share of positive {result.method} mass in the object's box:",
                table.to_string(),
            ]
    return "\n".join(lines)


__all__ = ["report"]
