"""The causal integration layer of a shipped model on the VIP-rule datasets, for
``docs/vip_rules.md`` and notebook 08: the attention-knockout flow (``interp.studies.flow``) of
the image → last edge, the item's own answer scored, all items as one group.

The datasets are ``bench/vip_rules.py``'s: the ``demo`` benchmark (colour questions of the demo
world's test split, as ``interp flow --data demo``) and notebook 07's faint-object colour items
(opacity :data:`interp.datasets.world.FAINT`, draws from 5000 on), which the command line
cannot name. The output has the command's ``summary.txt`` shape (the run line, the causal
integration layer, the mean Δ per window), so store it as a text file:

    python bench/flow_causal.py --model demo-smol --dataset faint --n 64 --window 1 \
        > bench/results/flow_smol_faint_summary.txt
"""

from __future__ import annotations

import time

from _common import bench_parser, parse
from vip_rules import items


def main() -> None:
    parser = bench_parser(__doc__, n=64, batch_size=16, threads=1)
    parser.add_argument("--dataset", choices=["demo", "faint"], default="faint")
    parser.add_argument("--window", type=int, default=1)
    parser.add_argument("--stride", type=int, default=None, help="default: the window")
    parser.add_argument("--alpha", type=float, default=0.05)
    args = parse(parser)

    import interp
    from interp.studies.flow import information_flow

    vlm = interp.load(args.model, attn_implementation="eager")
    samples = items(args.dataset, args.n)
    stride = args.stride or args.window
    start = time.perf_counter()
    flow = information_flow(
        vlm,
        samples,
        edges=["image>last"],
        window=args.window,
        stride=stride,
        split=None,
        batch_size=args.batch_size,
        progress_bar=False,
    )
    seconds = time.perf_counter() - start
    curves = flow.curves()
    table = curves[curves["group"] == "all"].pivot(index="start", columns="edge", values="mean")
    print(
        f"model {args.model!r}, data {args.dataset!r}, {len(flow)} samples, {flow.n_layers} "
        f"layers, windows of {args.window} (stride {stride}), {len(flow.windows)} windows × 1 "
        f"edges, answer: given; {seconds:.1f} s, {args.threads} thread(s)"
    )
    print()
    print(flow.integration_layer(alpha=args.alpha))
    print()
    print("mean Δ log p(answer), all samples (rows: first layer of the window):")
    print(table.round(3).to_string())


if __name__ == "__main__":
    main()
