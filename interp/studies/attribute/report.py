"""What ``interp attribute`` computes and writes once its checks have passed and the model is
loaded (:mod:`.cli` declares the command): the occlusion scores, the maps, and the planted-truth
table where the samples name their object."""

from __future__ import annotations

from interp.command import Invocation
from interp.errors import RegionError

from .analysis import mass_table, object_shares
from .figures import plot_attribution, plot_attribution_grid
from .measure import occlusion


def report(inv: Invocation) -> str:
    """Run the occlusion, write ``occlusion.csv``, ``maps.png``, ``map_<k>.png`` and (demo
    scenes) ``object_shares.csv`` / ``object_mass.csv``; return the summary text."""
    assert inv.vlm is not None and inv.out is not None
    args, out = inv.args, inv.out
    rows, cols = inv.plan["grid"]
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
    out.csv(result.to_frame(), "occlusion.csv")
    out.figure(plot_attribution_grid(result, inv.samples), "maps.png")
    for k, sample in enumerate(inv.samples[: max(args.plots, 0)]):
        out.figure(plot_attribution(result, sample), f"map_{k}.png")
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
                "share of positive occlusion mass in the object's box:",
                table.to_string(),
            ]
    return "\n".join(lines)


__all__ = ["report"]
