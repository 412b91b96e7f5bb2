"""``interp diagnose`` — the chain-of-embedding diagnosis of a model on a dataset (the main job).

    interp diagnose --model demo --data demo --out results/

runs agreement split → chain of embedding → VIP → TVI → correlations and writes into ``--out``:

- ``fig2_distance_curves.png`` — mean ± std distance per layer for D_VT and D_T, VIP marked;
- ``fig4_tvi_by_group.png`` — TVI distributions per group;
- ``per_sample.csv`` — per-sample answers, group, TVI variants, baselines, correctness, labels;
- ``layers.csv`` — per-layer group means/stds, two-sample statistic and p-value;
- ``correlations.csv`` — Spearman ρ of TVI (and baselines) with correctness;
- ``summary.txt`` — VIP layer, statistic, Spearman ρ with p;
- ``store/`` — the resumable result store: re-running the same command after a crash or kill
  continues where it stopped and gives identical outputs (``--overwrite`` starts over).

``--data`` is ``demo`` (the embedded demo world's language-prior benchmark: colour questions, half the
prior-bearing objects drawn in a counterfactual colour), ``demo:general`` (all question types),
``demo:<qtype>[,...]``, or a JSONL file with one object per line:
``{"image": "relative/or/absolute.png", "question": "...", "answer": "...", "id": "..."}`` (``image``
may be null; other keys become labels usable with ``--group-by`` and ``--split``).

The automatic VIP is Eq. 9 of the paper plus a significance floor: the candidate layer's own
one-sided two-sample test must pass at ``--alpha`` (Bonferroni-corrected over the candidate
layers), which keeps noise in the early layers from triggering Eq. 9. ``--alpha 0`` is Eq. 9
alone; ``--vip`` sets the layer by hand.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from interp.cli import (
    DEMO_HELP,
    UsageError,
    add_common_arguments,
    check_common_arguments,
    check_label,
    check_model,
    check_output_dir,
    check_split_label,
    load_data,
    partial_outputs_folder,
    write_summary,
)
from interp.errors import NoVIPError

DEFAULT_QTYPES = ("color",)


MIN_SAMPLES = 4  # two groups of at least two samples (each group's variance is needed)


def _validate(
    args: argparse.Namespace,
) -> tuple[list[Any], tuple[str, str], Path, tuple[int, int] | None]:
    """Everything that can be checked before the model is loaded, cheapest first.

    Checked: the common options (``--n``, ``--seed``, ``--batch-size``, ``--shard``,
    ``--overwrite``); ``--conditions`` names two different, known conditions; ``--alpha`` in
    [0, 1), ``--beta`` > 0, ``--max-new-tokens`` >= 1; ``--out`` is or can become a writable
    folder; the model's configuration is readable and its architecture supported (no weights
    read); ``--vip`` / ``--fallback-vip`` lie in 1..L; the data loads with every image opened and
    holds at least four samples; ``--group-by`` names an existing label and ``--split`` (unless
    ``agreement``) a boolean label with two samples on each side. The output folder is created
    last, so a refused command leaves nothing behind.

    Returns:
        the samples, the two conditions, the output folder and the resolved shard.

    Raises:
        InterpError (UsageError, ConditionError, ModelNotFoundError, DataFormatError, ImageError,
        ...): the first check that fails.
    """
    from interp.conditions import Condition

    shard = check_common_arguments(args)
    names = [c.strip() for c in args.conditions.split(",") if c.strip()]
    if len(names) != 2:
        raise UsageError(
            f"--conditions needs two conditions separated by a comma, got {args.conditions!r} "
            "(e.g. full,blind or full,null:black)"
        )
    conds = tuple(str(Condition.parse(c)) for c in names)
    if conds[0] == conds[1]:
        raise UsageError(f"--conditions: the two conditions are the same ({conds[0]!r})")
    if args.alpha is not None and not 0.0 <= args.alpha < 1.0:
        raise UsageError(f"--alpha must be in [0, 1) (0 = Eq. 9 alone), got {args.alpha}")
    if not args.beta > 0:
        raise UsageError(f"--beta must be > 0, got {args.beta}")
    if args.max_new_tokens < 1:
        raise UsageError(f"--max-new-tokens must be >= 1, got {args.max_new_tokens}")
    check_output_dir(args.out, create=False)
    n_layers = check_model(args.model)
    for option, value in (("--vip", args.vip), ("--fallback-vip", args.fallback_vip)):
        if value is not None and not 1 <= value <= n_layers:
            raise UsageError(
                f"{option} {value} is outside the model's decoder layers 1..{n_layers}"
            )
    samples = load_data(
        args.data, args.n, args.seed, default_qtypes=DEFAULT_QTYPES, columns=args.columns
    )
    if len(samples) < MIN_SAMPLES:
        raise UsageError(
            f"the diagnosis compares two groups of at least 2 samples each: give at least "
            f"{MIN_SAMPLES} samples (--data {args.data!r} gives {len(samples)})"
        )
    check_label(samples, args.group_by, "--group-by")
    if args.split != "agreement":
        check_split_label(samples, args.split, "--split")
    out = check_output_dir(args.out)
    return samples, (conds[0], conds[1]), out, shard


def _diagnose_command(args: argparse.Namespace) -> int:
    import matplotlib

    matplotlib.use("Agg")  # the command only writes files
    import matplotlib.pyplot as plt

    from interp.model import load

    from .chain import chain_of_embedding
    from .diagnosis import diagnose
    from .figures import plot_distance_curves, plot_tvi_distributions

    samples, conditions, out, shard = _validate(args)
    vlm = load(args.model, attn_implementation="eager" if args.visual_attention else None)
    if shard is None or shard[0] == 0:
        print(f"{vlm}\n{len(samples)} samples from {args.data!r}", flush=True)
    coe = chain_of_embedding(
        vlm,
        samples,
        conditions,
        max_new_tokens=args.max_new_tokens,
        visual_attention=args.visual_attention,
        batch_size=args.batch_size,
        store=out / "store",
        overwrite=args.overwrite,
        shard=shard,
        progress_bar=not args.no_progress,
    )
    if shard is not None and shard[0] != 0:
        return 0  # process 0 writes the outputs
    alpha = args.alpha or None
    try:
        diag = diagnose(
            coe,
            metric=args.metric,
            split=args.split,
            vip=args.vip,
            beta=args.beta,
            alpha=alpha,
            fallback_vip=args.fallback_vip,
            match=args.match,
        )
    except NoVIPError:
        # Still write what needs no VIP, so the curves can be read to choose one by hand.
        without = diagnose(
            coe, metric=args.metric, split=args.split, vip=vlm.n_layers, match=args.match
        )
        plot_distance_curves(
            without.distances,
            without.in_vt,
            metric=args.metric,
            title=f"model {args.model!r}, data {args.data!r} (no automatic VIP)",
        ).savefig(out / "fig2_distance_curves.png", dpi=130)
        without.layer_frame().drop(columns="is_vip").to_csv(out / "layers.csv", index_label="layer")
        print(
            "no automatic VIP: wrote fig2_distance_curves.png and layers.csv to "
            f"{partial_outputs_folder(out)} to choose "
            "one by hand (--vip)",
            flush=True,
        )
        raise

    fig = plot_distance_curves(diag, title=f"model {args.model!r}, data {args.data!r}")
    fig.savefig(out / "fig2_distance_curves.png", dpi=130)
    groups = {"D_VT": diag.tvi[diag.in_vt], "D_T": diag.tvi[~diag.in_vt]}
    frame = diag.to_frame()
    if args.group_by:
        for value in sorted(frame[args.group_by].dropna().unique(), key=str):
            groups[f"{args.group_by}={value}"] = diag.tvi[np.asarray(frame[args.group_by] == value)]
    fig4 = plot_tvi_distributions(groups, title=f"TVI (VIP = {diag.vip})")
    fig4.savefig(out / "fig4_tvi_by_group.png", dpi=130)
    plt.close("all")

    frame.to_csv(out / "per_sample.csv", index=False)
    diag.layer_frame().to_csv(out / "layers.csv", index_label="layer")
    summary = diag.summary()
    if diag.correct is not None:
        corr = diag.correlations(by=args.group_by)
        corr.to_csv(out / "correlations.csv", index=False)
        if args.group_by:
            post = corr[corr["score"] == "TVI (post-VIP)"]
            summary += "\n\nSpearman(TVI post-VIP, correct) per group:\n" + post.to_string(
                index=False
            )
    write_summary(out, summary)
    return 0


def register(sub: Any) -> None:
    """Add ``diagnose`` to the ``interp`` command."""
    d = sub.add_parser(
        "diagnose",
        help="chain of embedding → VIP → TVI → correlations (the main job)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common_arguments(d, data_help=DEMO_HELP)
    d.add_argument(
        "--conditions",
        default="full,blind",
        help="two conditions, e.g. full,blind or full,null:black",
    )
    d.add_argument("--metric", default="cosine", choices=["cosine", "l2", "kl", "js"])
    d.add_argument(
        "--split",
        default="agreement",
        help="'agreement' (answers with vs without the image differ) or a boolean label name",
    )
    d.add_argument(
        "--vip", type=int, default=None, help="manual VIP layer (default: automatic, Eq. 9)"
    )
    d.add_argument(
        "--fallback-vip",
        type=int,
        default=None,
        help="VIP to use if the automatic rule finds none (default: fail)",
    )
    d.add_argument("--beta", type=float, default=2.0, help="β of the automatic VIP rule (Eq. 9)")
    d.add_argument(
        "--alpha",
        type=float,
        default=0.05,
        help="significance floor of the automatic rule: the VIP layer's one-sided two-sample test "
        "must pass at this level, Bonferroni-corrected over the candidate layers (0 = Eq. 9 "
        "alone, as in the paper)",
    )
    d.add_argument(
        "--match", default="exact", choices=["exact", "inclusion"], help="answer matching"
    )
    d.add_argument("--group-by", default=None, help="label to break TVI and correlations down by")
    d.add_argument(
        "--visual-attention",
        action="store_true",
        help="also measure the Eq. 10 attention baseline (eager)",
    )
    d.add_argument("--max-new-tokens", type=int, default=8)
    d.set_defaults(func=_diagnose_command)
