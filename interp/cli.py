"""Command line: ``interp diagnose`` — the chain-of-embedding diagnosis of a model on a dataset.

    interp diagnose --model demo --data demo --out results/

runs agreement split → chain of embedding → VIP → TVI → correlations and writes into ``--out``:

- ``fig2_distance_curves.png`` — mean ± std distance per layer for D_VT and D_T, VIP marked;
- ``fig4_tvi_by_group.png`` — TVI distributions per group;
- ``per_sample.csv`` — per-sample answers, group, TVI variants, baselines, correctness, labels;
- ``layers.csv`` — per-layer group means/stds, two-sample statistic and p-value;
- ``correlations.csv`` — Spearman ρ of TVI (and baselines) with correctness;
- ``summary.txt`` — VIP layer, statistic, Spearman ρ with p;
- ``store/`` — the resumable result store: re-running the same command after a crash or kill
  continues where it stopped and gives identical outputs.

``--data`` is ``demo`` (the embedded demo world's language-prior benchmark: colour questions, half the
prior-bearing objects drawn in a counterfactual colour), ``demo:general`` (all question types),
``demo:<qtype>[,...]``, or a JSONL file with one object per line:
``{"image": "relative/or/absolute.png", "question": "...", "answer": "...", "id": "..."}`` (``image``
may be null; other keys become labels usable with ``--group-by`` and ``--split``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # the CLI only writes files

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from .errors import InterpError, NoVIPError  # noqa: E402

DEMO_SETS = {
    "demo": ("color",),
    "demo:prior": ("color",),
}


def _load_data(spec: str, n: int | None, seed: int) -> list:
    """``demo`` / ``demo:prior`` — the demo world's language-prior benchmark (colour questions, half
    the prior-bearing objects in a counterfactual colour); ``demo:general`` — every vision and
    vision-independent question type; ``demo:<qtype>[,<qtype>...]``; otherwise a JSONL file."""
    from .samples import read_jsonl

    if spec == "demo" or spec.startswith("demo:"):
        from .datasets import TEXT_QTYPES, VISION_QTYPES, demo_world

        if spec in DEMO_SETS:
            qtypes = list(DEMO_SETS[spec])
        elif spec == "demo:general":
            qtypes = list(VISION_QTYPES) + list(TEXT_QTYPES)
        else:
            qtypes = spec.split(":", 1)[1].split(",")
        return demo_world(split="test", n=n or 600, seed=seed, qtypes=qtypes)
    samples = read_jsonl(spec)
    return samples[:n] if n else samples


def _diagnose_command(args: argparse.Namespace) -> int:
    from .chain import chain_of_embedding
    from .diagnosis import diagnose
    from .figures import plot_distance_curves, plot_tvi_distributions
    from .model import load

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    vlm = load(args.model, attn_implementation="eager" if args.visual_attention else None)
    samples = _load_data(args.data, args.n, args.seed)
    print(f"{vlm}\n{len(samples)} samples from {args.data!r}", flush=True)
    coe = chain_of_embedding(
        vlm,
        samples,
        tuple(args.conditions.split(",")),
        max_new_tokens=args.max_new_tokens,
        visual_attention=args.visual_attention,
        batch_size=args.batch_size,
        store=out / "store",
        progress_bar=not args.no_progress,
    )
    try:
        diag = diagnose(
            coe,
            metric=args.metric,
            split=args.split,
            vip=args.vip,
            beta=args.beta,
            alpha=args.alpha or None,
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
    (out / "summary.txt").write_text(summary + "\n")
    print(summary)
    print(f"\nwrote {', '.join(sorted(p.name for p in out.iterdir()))} to {out}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="interp", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser(
        "diagnose",
        help="chain of embedding → VIP → TVI → correlations",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    d.add_argument("--model", required=True, help="'demo', a hub id or a local model folder")
    d.add_argument(
        "--data",
        required=True,
        help="'demo', 'demo:general', 'demo:<qtype,...>' or a JSONL file (image, question, answer)",
    )
    d.add_argument("--out", required=True, help="output folder (holds the resumable store)")
    d.add_argument(
        "--n", type=int, default=None, help="number of samples (default: demo 600, JSONL all)"
    )
    d.add_argument("--seed", type=int, default=0, help="demo world seed")
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
        help="significance floor of the automatic rule (0 = Eq. 9 alone)",
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
    d.add_argument("--batch-size", type=int, default=16)
    d.add_argument("--no-progress", action="store_true")
    d.set_defaults(func=_diagnose_command)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except InterpError as err:
        print(f"error: {type(err).__name__}: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
