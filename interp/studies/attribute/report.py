"""What ``interp attribute`` computes and writes once its checks have passed and the model is
loaded (:mod:`~interp.studies.attribute.cli` declares the command): the occlusion scores, the maps, and the planted-truth
table where the samples name their object."""

from __future__ import annotations

from interp.command import Invocation
from interp.errors import RegionError

from .analysis import mass_table, object_shares
from .figures import plot_attribution, plot_attribution_grid
from .measure import attention, gradient, occlusion


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
    if result.method == "attention":
        lines = [
            f"attention of the last prompt position over a {rows}x{cols} grid, mean over layers "
            f"and heads, {len(result)} samples",
            f"mean region mass {result.scores.mean():.4f}, largest {result.scores.max():.4f}",
        ]
    elif result.method == "gradient":
        lines = [
            f"attribution patching at residual index {args.layer} against {args.source!r}, over "
            f"a {rows}x{cols} grid, {args.answers} answers, {len(result)} samples",
            f"mean log p(answer): {result.base.mean():.3f}; mean region score "
            f"{result.scores.mean():.4f}, largest {result.scores.max():.4f}",
        ]
    else:
        hidden = f"{args.hide} ({args.mode if args.hide == 'ablate' else args.source})"
        lines = [
            f"occlusion over a {rows}x{cols} grid, regions hidden by {hidden}, "
            f"{args.answers} answers, {len(result)} samples",
            f"mean log p(answer): {result.base.mean():.3f}; mean region score "
            f"{result.scores.mean():.4f}, largest {result.scores.max():.4f}",
        ]
    shares = object_shares(result, inv.samples)
    if not shares.empty:
        out.csv(shares, "object_shares.csv")
        try:
            table = out.csv(mass_table(shares), "object_mass.csv")
        except RegionError as err:
            lines.append(f"object mass: skipped ({err})")
        else:
            lines += [
                "",
                f"share of positive {result.method} mass in the object's box:",
                table.to_string(),
            ]
    return "\n".join(lines)


__all__ = ["report"]
