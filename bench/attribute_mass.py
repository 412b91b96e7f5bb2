"""Planted truth of the attribution maps: the share of each method's positive mass inside the drawn
object's box, for grounded and prior-driven answers, on a demo-world model.

The model answers a pool of demo colour questions greedily (``--faint``: objects at the faint
opacities of ``interp.datasets.world.FAINT``, where a prior can win over the image); each
answer is grouped by ``answer_group`` (grounded: the drawn colour; prior: the object's prior colour
on a counterfactual drawing). Up to ``--per-group`` samples of each of the two groups are then
attributed on a 4 × 4 grid by black-image-swap occlusion, zero-ablation occlusion (the default of
``occlusion`` and ``interp attribute``), gradient × (h − h_null) at layer 0 and
the attention baseline, and their box-mass table (``mass_table``, bootstrap 95 % CIs) and rank
agreement with occlusion (``rank_agreement``, median Spearman) are printed as markdown. The tables
of docs/attribute.md come from this script; it measures quality, not speed, so its times are only
reported. ``--start`` draws the pool from another point of the world's stream (a held-out draw:
``bench/measured/attribute_mass_demo_heldout.txt``), ``--methods`` runs a subset.

    python bench/attribute_mass.py --model demo-smol --faint --n 960 --per-group 40 --out mass/
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from _common import bench_parser, parse  # noqa: E402

import interp  # noqa: E402
from interp.datasets import demo_world  # noqa: E402
from interp.datasets.world import FAINT  # noqa: E402
from interp.studies.attribute import (  # noqa: E402
    answer_group,
    answers_for,
    attention,
    gradient,
    mass_table,
    object_shares,
    occlusion,
    rank_agreement,
)

# --methods: the short name of each method, in the order they run
METHODS = ("swap", "zero", "gradient", "attention")


def markdown(table: pd.DataFrame) -> str:
    """The box-mass table as the markdown rows of docs/attribute.md."""

    def ci(row: pd.Series, name: str) -> str:
        low, high = row[f"{name}_low"], row[f"{name}_high"]
        return f"{row[name]:.3f}" + ("" if np.isnan(low) else f" [{low:.3f}, {high:.3f}]")

    lines = []
    for _, row in table.iterrows():
        lines.append(
            f"| {row['method']} | {row['group']} | {row['n']} | {ci(row, 'inside')} | "
            f"{row['random']:.3f} | {ci(row, 'difference')} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = bench_parser(__doc__, n=960, batch_size=16, n_help="colour questions in the pool")
    parser.add_argument("--faint", action="store_true", help="faint objects (FAINT opacities)")
    parser.add_argument("--per-group", type=int, default=40)
    parser.add_argument(
        "--start",
        type=int,
        default=None,
        help="index of the pool's first draw (default 0, 5000 with --faint); another start "
        "draws held-out questions",
    )
    parser.add_argument(
        "--methods",
        nargs="+",
        choices=list(METHODS),
        default=list(METHODS),
        help="methods to run (default: all; rank agreement needs swap)",
    )
    parser.add_argument("--out", type=Path, required=True)
    args = parse(parser)
    args.out.mkdir(parents=True, exist_ok=True)
    vlm = interp.load(args.model, attn_implementation="eager")
    extra = {"opacity": FAINT, "start": 5000} if args.faint else {}
    if args.start is not None:
        extra["start"] = args.start
    pool = demo_world("test", n=args.n, qtypes=["color"], **extra)
    t0 = time.perf_counter()
    said = answers_for(vlm, pool, "greedy", "full", batch_size=32)
    groups = pd.Series([answer_group(s, a) for s, a in zip(pool, said)])
    print(f"{args.model}: {len(pool)} questions answered in {time.perf_counter() - t0:.0f} s")
    print(groups.value_counts().to_string(), flush=True)
    keep = [
        i
        for g in ("grounded", "prior")
        for i in np.flatnonzero(groups.to_numpy() == g)[: args.per_group]
    ]
    samples = [pool[i] for i in keep]
    texts = [said[i] for i in keep]
    group_of = {str(pool[i].id): groups[i] for i in keep}
    kw = {"grid": (4, 4), "batch_size": args.batch_size, "progress_bar": False}
    results = {}
    runs = (
        (
            "occlusion, black-image swap",
            lambda: occlusion(
                vlm, samples, hide="swap", answers=texts, store=args.out / "store", **kw
            ),
        ),
        (
            "occlusion, zero ablation (the default)",
            lambda: occlusion(
                vlm,
                samples,
                hide="ablate",
                mode="zero",
                answers=texts,
                store=args.out / "store-zero",
                **kw,
            ),
        ),
        ("gradient, layer 0", lambda: gradient(vlm, samples, layer=0, answers=texts, **kw)),
        ("attention", lambda: attention(vlm, samples, **kw)),
    )
    for key, (name, run) in zip(METHODS, runs):
        if key not in args.methods:
            continue
        t0 = time.perf_counter()
        results[name] = run()
        print(f"{name}: {len(samples)} samples in {time.perf_counter() - t0:.0f} s", flush=True)
    tables, shares = [], []
    for name, result in results.items():
        # attention ignores the answer: group its samples by the answer the others attributed
        one = object_shares(result, samples).assign(method=name)
        one["group"] = one["sample_id"].map(group_of)
        shares.append(one)
        tables.append(mass_table(one).assign(method=name))
    pd.concat(shares).to_csv(args.out / "object_shares.csv", index=False)
    table = pd.concat(tables)
    table.to_csv(args.out / "object_mass.csv", index=False)
    print(markdown(table))
    print_per_image(pd.concat(shares))
    occ = results.get("occlusion, black-image swap")
    if occ is None or len(results) == 1:
        return
    agree = pd.concat(
        [rank_agreement(r, occ).assign(method=n) for n, r in results.items() if r is not occ]
    )
    agree["group"] = agree["sample_id"].map(group_of)
    agree.to_csv(args.out / "rank_agreement.csv", index=False)
    print(agree.groupby(["method", "group"])["spearman"].median().to_string())


def print_per_image(shares: pd.DataFrame, method: str = "occlusion, black-image swap") -> None:
    """Per image, the mean in-box share of ``method``'s maps over its prior-driven answers, and how
    many images lie near all or nothing (below 0.25 or above 0.9). A demo-world question group
    asks one image in several wordings, ids ``<group>-<k>``."""
    one = shares[shares["method"] == method].copy()
    if one.empty:
        return
    one["image"] = one["sample_id"].str.rsplit("-", n=1).str[0]
    print(f"{method}: images per group", one.groupby("group")["image"].nunique().to_dict())
    # an image whose maps have no positive mass has no share
    prior = one[one["group"] == "prior"].groupby("image")["inside"].mean().dropna()
    prior = prior.sort_values(ascending=False)
    extreme = int(((prior < 0.25) | (prior > 0.9)).sum())
    print(
        f"{method}, prior-driven answers per image: {extreme} of {len(prior)} images below 0.25 "
        f"or above 0.9; shares {', '.join(f'{v:.2f}' for v in prior)}"
    )


if __name__ == "__main__":
    main()
