"""What ``interp ablation`` computes and writes once its checks have passed and the model is
loaded (:mod:`~interp.studies.ablation.cli` declares the command): the ablation, the optional in-context runs, their
tables, figures and summary."""

from __future__ import annotations

from interp.command import Invocation

from .figures import plot_ablation, plot_categories, plot_in_context, plot_main_table
from .measure import in_context, no_image_ablation


def report(inv: Invocation) -> str:
    """Run the study on ``inv.vlm``, write its outputs and return the summary text."""
    args, plan, out, vlm = inv.args, inv.plan, inv.out, inv.vlm
    assert out is not None and vlm is not None
    common = {
        "variants": plan["variants"],
        "variant_key": args.variant_key,
        "category_key": args.category_key,
        "group_key": plan["group_key"],
        "judge": plan["judge"],
        "max_new_tokens": args.max_new_tokens,
        "ci": args.ci,
        "n_boot": args.n_boot,
        "seed": args.seed,
    }
    ablation = no_image_ablation(
        vlm, inv.samples, plan["conditions"], **common, **inv.run_options("ablation")
    )
    out.csv(ablation.answers, "answers.csv")
    out.csv(ablation.baseline, "text_only.csv")
    out.csv(ablation.to_frame(), "table.csv")
    out.csv(ablation.main_table(), "main_table.csv", index=True)
    out.figure(plot_main_table(ablation), "main_table.png")
    out.figure(plot_ablation(ablation), "ablation.png")
    out.figure(plot_categories(ablation), "categories.png")
    text = f"model {args.model!r}, data {args.data!r}\n" + ablation.summary()
    if plan["shots"]:
        shots = in_context(
            vlm,
            inv.samples,
            [0, *plan["shots"]],
            plan["shot_conditions"],
            **common,
            **inv.run_options("in_context"),
        )
        out.csv(shots.answers, "in_context_answers.csv")
        out.csv(shots.to_frame(), "in_context.csv")
        out.figure(plot_in_context(shots), "in_context.png")
        for cond in shots.conditions:
            text += f"\n\nin-context examples matched to the variant, {cond}:\n"
            text += shots.table(cond).to_string()
    return text
