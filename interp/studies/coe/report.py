"""What ``interp coe`` computes and writes once its checks have passed and the model is loaded
(:mod:`~interp.studies.coe.cli` declares the command): the chain of embedding and the diagnosis, written into
``--out`` as

- ``fig2_distance_curves.png`` — mean ± std distance per layer for D_VT and D_T, VIP marked;
- ``fig4_tvi_by_group.png`` — TVI distributions per group;
- ``per_sample.csv`` — per-sample answers, group, TVI variants, baselines, correctness, labels;
- ``layers.csv`` — per-layer group means/stds, two-sample statistic and p-value;
- ``correlations.csv`` — Spearman ρ of TVI (and baselines) with correctness;
- ``summary.txt`` — VIP layer, the rule that found it (``--vip-rule``), statistic, Spearman ρ with p.

Without an automatic VIP it writes only the curves and ``layers.csv`` (to choose one by hand) and
fails.
"""

from __future__ import annotations

import numpy as np

from interp.command import Invocation
from interp.errors import NoVIPError

from .chain import chain_of_embedding
from .diagnosis import diagnose
from .figures import plot_distance_curves, plot_tvi_distributions


def report(inv: Invocation) -> str | None:
    """Run the study on ``inv.vlm`` and write its outputs; the summary text, or None in a
    sharded run's other processes (process 0 writes the outputs)."""
    args, out, vlm = inv.args, inv.out, inv.vlm
    assert out is not None and vlm is not None
    coe = chain_of_embedding(
        vlm,
        inv.samples,
        inv.plan["conditions"],
        max_new_tokens=args.max_new_tokens,
        read_at=args.read_at,
        visual_attention=args.visual_attention,
        shard=inv.shard,
        **inv.run_options(),
    )
    if inv.shard is not None and inv.shard[0] != 0:
        return None
    title = f"model {args.model!r}, data {args.data!r}"
    options = {"metric": args.metric, "split": args.split, "match": args.match}
    try:
        diag = diagnose(
            coe,
            vip=args.vip,
            beta=args.beta,
            alpha=args.alpha or None,
            fallback_vip=args.fallback_vip,
            rule=args.vip_rule,
            min_fraction=args.min_fraction or None,
            min_effect=args.min_effect,
            **options,
        )
    except NoVIPError:
        # Still write what needs no VIP, so the curves can be read to choose one by hand.
        without = diagnose(coe, vip=vlm.n_layers, **options)
        fig = plot_distance_curves(
            without.distances,
            without.in_vt,
            metric=args.metric,
            title=f"{title} (no automatic VIP)",
        )
        out.figure(fig, "fig2_distance_curves.png")
        out.csv(without.layer_frame().drop(columns="is_vip"), "layers.csv", index_label="layer")
        print(
            "no automatic VIP: wrote fig2_distance_curves.png and layers.csv to "
            f"{out.partial_folder()} to choose one by hand (--vip)",
            flush=True,
        )
        raise

    out.figure(plot_distance_curves(diag, title=title), "fig2_distance_curves.png")
    groups = {"D_VT": diag.tvi[diag.in_vt], "D_T": diag.tvi[~diag.in_vt]}
    frame = diag.to_frame()
    if args.group_by:
        for value in sorted(frame[args.group_by].dropna().unique(), key=str):
            groups[f"{args.group_by}={value}"] = diag.tvi[np.asarray(frame[args.group_by] == value)]
    fig4 = plot_tvi_distributions(groups, title=f"TVI (VIP = {diag.vip})")
    out.figure(fig4, "fig4_tvi_by_group.png")
    out.csv(frame, "per_sample.csv")
    out.csv(diag.layer_frame(), "layers.csv", index_label="layer")
    summary = diag.summary()
    if diag.correct is not None:
        corr = out.csv(diag.correlations(by=args.group_by), "correlations.csv")
        if args.group_by:
            post = corr[corr["score"] == "TVI (post-VIP)"]
            summary += "\n\nSpearman(TVI post-VIP, correct) per group:\n" + post.to_string(
                index=False
            )
    return summary
