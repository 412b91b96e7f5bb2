"""What ``interp decoding`` computes and writes once its checks have passed and the model is
loaded (:mod:`~interp.studies.decoding.cli` declares the command): every method greedy and sampled, the answers, the
metrics per method and setting, the methods ranked by accuracy with paired intervals
(``comparisons.csv``), the figure and summary."""

from __future__ import annotations

import pandas as pd

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
    mode = "greedy" if not args.no_greedy else "sampled"
    ranked = {setting: runs.comparisons(setting, mode) for setting in runs.settings}
    out.csv(
        pd.concat([r.assign(setting=k) for k, r in ranked.items()], ignore_index=True),
        "comparisons.csv",
    )
    lines = [f"model {args.model!r}, data {args.data!r}, {len(inv.samples)} questions"]
    lines += [f"  {k}: {v}" for k, v in runs.methods.items()]
    for metric in ("f1", "yes_ratio", "accuracy"):
        lines += ["", f"{metric} (greedy; sampled mean ± std over seeds {seeds}):"]
        lines.append(runs.table(metric).to_string())
    run = "greedy" if mode == "greedy" else f"sampled, seed {seeds[0]}"
    for setting, r in ranked.items():
        n, k = int(r["n"].iloc[0]), int(r["n_clusters"].iloc[0])
        unit = (
            f"{n} questions on {k} images, resampling whole images"
            if k < n
            else (f"{n} questions, resampling questions")
        )
        lines += [
            "",
            f"accuracy ranked, {setting} ({run}; {unit}): paired 95% intervals, "
            "'no difference' where one holds 0",
            ranking_text(r),
        ]
    return "\n".join(lines)


def ranking_text(ranked: pd.DataFrame) -> str:
    """A ranking of :meth:`DecodingRuns.comparisons` as text: accuracy and the difference from
    plain decoding in points, each with its interval, and the verdict."""
    rows = [
        {
            "method": r.method,
            "accuracy": f"{r.accuracy:.3f} [{r.accuracy_low:.3f}, {r.accuracy_high:.3f}]",
            "minus plain (points)": (
                f"{100 * r.vs_baseline:+.1f} [{100 * r.vs_baseline_low:+.1f}, "
                f"{100 * r.vs_baseline_high:+.1f}]"
                if r.vs_baseline == r.vs_baseline  # NaN without plain decoding among the methods
                else "–"
            ),
            "vs plain": r.verdict,
            "vs top": r.rank,
        }
        for r in ranked.itertuples()
    ]
    return pd.DataFrame(rows).to_string(index=False)
