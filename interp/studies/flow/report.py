"""What ``interp flow`` computes and writes once its checks have passed and the model is loaded
(:mod:`~interp.studies.flow.cli` declares the command):

- ``flow_curves.csv`` — mean Δ with its 95 % bootstrap interval per group, edge and window;
- ``flow_samples.csv`` — Δ per sample, edge and window (:meth:`Flow.to_frame`);
- ``integration_tests.csv`` — the tests behind the causal integration layer, per group;
- ``flow.png`` — the flow figure; ``summary.txt``.
"""

from __future__ import annotations

import time

import pandas as pd

from interp.command import Invocation

from .analysis import IMAGE_EDGES
from .figures import plot_flow
from .measure import information_flow


def report(inv: Invocation) -> str:
    """Run the study on ``inv.vlm``, write its outputs and return the summary text."""
    args, out, vlm, samples = inv.args, inv.out, inv.vlm, inv.samples
    assert out is not None and vlm is not None
    start = time.perf_counter()
    flow = information_flow(
        vlm,
        samples,
        edges=inv.plan["edges"],
        window=args.window,
        stride=args.stride,
        answer=args.answer,
        split=inv.plan["split"],
        max_new_tokens=args.max_new_tokens,
        **inv.run_options(),
    )
    seconds = time.perf_counter() - start
    curves = out.csv(flow.curves(), "flow_curves.csv")
    out.csv(flow.to_frame(), "flow_samples.csv")
    lines = [
        f"model {args.model!r}, data {args.data!r}, {len(flow)} samples, {flow.n_layers} layers, "
        f"windows of {args.window} (stride {args.stride}), {len(flow.windows)} windows × "
        f"{len(flow.edges)} edges, answer: {args.answer}; {seconds:.1f} s",
        "",
    ]
    if any(e in flow.delta for e in IMAGE_EDGES):
        found, tests = [], []
        for group in [None, *[g for g in flow.group_names if g != "all"]]:
            if group is not None and int((flow.groups == group).sum()) < 2:
                lines.append(f"group {group}: fewer than 2 samples, no test")
                continue
            il = flow.integration_layer(alpha=args.alpha, group=group)
            found.append(str(il))
            tests.append(il.tests.assign(group=group or "all"))
        out.csv(pd.concat(tests, ignore_index=True), "integration_tests.csv")
        lines += [*found, ""]
    else:
        lines += ["no image → text edge measured: no causal integration layer", ""]
    out.figure(
        plot_flow(flow, alpha=args.alpha, title=f"{args.model}: attention knockout"), "flow.png"
    )
    table = curves[curves["group"] == "all"].pivot(index="start", columns="edge", values="mean")
    lines += ["mean Δ log p(answer), all samples (rows: first layer of the window):"]
    lines += [table.round(3).to_string()]
    return "\n".join(lines)
