"""What ``interp decoding`` computes and writes once its checks have passed and the model is
loaded (:mod:`.cli` declares the command): every method greedy and sampled, the answers, the
metrics per method and setting, the figure and summary."""

from __future__ import annotations

from interp.command import Invocation

from .figures import plot_methods
from .measure import evaluate_decoding


def report(inv: Invocation) -> str:
    """Run the study on ``inv.vlm``, write its outputs and return the summary text."""
    args, plan, out, vlm = inv.args, inv.plan, inv.out, inv.vlm
    assert out is not None and vlm is not None
    seeds = plan["seeds"]
    runs = evaluate_decoding(
        vlm,
        inv.samples,
        plan["methods"],
        params=plan["params"],
        seeds=seeds,
        greedy=not args.no_greedy,
        temperature=args.temperature,
        max_new_tokens=args.max_new_tokens,
        **inv.run_options(),
    )
    out.csv(runs.answers, "answers.csv")
    out.csv(runs.metrics(), "metrics.csv")
    out.csv(runs.to_frame(), "summary.csv")
    out.figure(plot_methods(runs), "methods.png")
    lines = [f"model {args.model!r}, data {args.data!r}, {len(inv.samples)} questions"]
    lines += [f"  {k}: {v}" for k, v in runs.methods.items()]
    for metric in ("f1", "yes_ratio", "accuracy"):
        lines += ["", f"{metric} (greedy; sampled mean ± std over seeds {seeds}):"]
        lines.append(runs.table(metric).to_string())
    return "\n".join(lines)
