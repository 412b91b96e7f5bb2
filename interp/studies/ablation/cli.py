"""``interp ablate`` — the no-image ablation across question wordings on a model and a dataset.

The parser registration imports only argparse, :mod:`interp.cli` and the study's defaults; the
model runs, tables and figures are imported when the command runs. The command's help text is the
package's docstring.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from interp.cli import (
    UsageError,
    add_common_arguments,
    check_common_arguments,
    check_model,
    check_output_dir,
    load_data,
    write_summary,
)
from interp.studies import ablation as _package

from .variants import DEFAULT_CONDITIONS

DATA_HELP = (
    "'demo' (the demo world's worded questions: color, identify, count, position, digit, "
    "describe, each in four wordings on one image), 'demo:<qtype,...>', or a JSONL file (image, "
    "question, answer, and the variant / category labels)"
)
WORDED = ("color", "identify", "count", "position", "digit", "describe")


def _list(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def _shots(text: str) -> list[int]:
    try:
        values = [int(v) for v in _list(text)]
    except ValueError:
        raise UsageError(f"--shots takes comma-separated integers, got {text!r}") from None
    if any(v < 1 for v in values):
        raise UsageError(f"--shots: each k must be >= 1 (k = 0 is always run), got {text!r}")
    return sorted(set(values))


def _validate(args: argparse.Namespace) -> dict[str, Any]:
    """Everything checked before the model is loaded: options, output folder, model
    configuration, data (every image opened), labels, variants, conditions, examples."""
    from interp.conditions import Condition

    from .context import select_examples
    from .items import check_without, select_items
    from .judge import make_judge

    check_common_arguments(args, one_process="interp ablate")
    if args.max_new_tokens < 1:
        raise UsageError(f"--max-new-tokens must be >= 1, got {args.max_new_tokens}")
    if not 0.0 < args.ci < 1.0:
        raise UsageError(f"--ci must lie in (0, 1), got {args.ci}")
    if args.n_boot < 1:
        raise UsageError(f"--n-boot must be >= 1, got {args.n_boot}")
    conditions = [str(Condition.parse(c)) for c in _list(args.conditions)]
    if not conditions:
        raise UsageError("--conditions is empty; give e.g. blind,null:black,null:noise,swap:next")
    shots = _shots(args.shots)
    shot_conditions = [str(Condition.parse(c)) for c in _list(args.shot_conditions)]
    if shots and not shot_conditions:
        raise UsageError("--shot-conditions is empty; give e.g. full,blind")
    variants = _list(args.variants) or None
    judge = make_judge(args.judge)
    check_output_dir(args.out, create=False)
    check_model(args.model)
    samples = load_data(args.data, args.n, args.seed, default_qtypes=WORDED, columns=args.columns)
    group_key = args.group_key or None
    items = select_items(
        samples,
        variants,
        variant_key=args.variant_key,
        category_key=args.category_key,
        group_key=group_key,
    )
    check_without(conditions, items)
    others = [c for c in shot_conditions if c != "full"]
    if shots:
        if others:
            check_without(others, items)
        for source in ("matched",):
            select_examples(items, max(shots), source, seed=args.seed)
    out = check_output_dir(args.out)
    return {
        "samples": samples,
        "variants": list(items.order),
        "conditions": conditions,
        "shots": shots,
        "shot_conditions": shot_conditions,
        "judge": judge,
        "group_key": group_key,
        "out": out,
    }


def _ablate_command(args: argparse.Namespace) -> int:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from interp.model import load

    from .figures import plot_ablation, plot_categories, plot_in_context, plot_main_table
    from .measure import in_context, no_image_ablation

    plan = _validate(args)
    out: Path = plan["out"]
    vlm = load(args.model)
    print(f"{vlm}\n{len(plan['samples'])} items from {args.data!r}", flush=True)
    common = {
        "variants": plan["variants"],
        "variant_key": args.variant_key,
        "category_key": args.category_key,
        "group_key": plan["group_key"],
        "judge": plan["judge"],
        "max_new_tokens": args.max_new_tokens,
        "batch_size": args.batch_size,
        "ci": args.ci,
        "n_boot": args.n_boot,
        "seed": args.seed,
        "overwrite": args.overwrite,
        "progress_bar": not args.no_progress,
    }
    ablation = no_image_ablation(
        vlm, plan["samples"], plan["conditions"], store=out / "store" / "ablation", **common
    )
    ablation.answers.to_csv(out / "answers.csv", index=False)
    ablation.baseline.to_csv(out / "text_only.csv", index=False)
    ablation.to_frame().to_csv(out / "table.csv", index=False)
    ablation.main_table().to_csv(out / "main_table.csv")
    plot_main_table(ablation).savefig(out / "main_table.png", dpi=130)
    plot_ablation(ablation).savefig(out / "ablation.png", dpi=130)
    plot_categories(ablation).savefig(out / "categories.png", dpi=130)
    plt.close("all")
    text = f"model {args.model!r}, data {args.data!r}\n" + ablation.summary()
    if plan["shots"]:
        shots = in_context(
            vlm,
            plan["samples"],
            [0, *plan["shots"]],
            plan["shot_conditions"],
            store=out / "store" / "in_context",
            **common,
        )
        shots.answers.to_csv(out / "in_context_answers.csv", index=False)
        shots.to_frame().to_csv(out / "in_context.csv", index=False)
        plot_in_context(shots).savefig(out / "in_context.png", dpi=130)
        plt.close("all")
        for cond in shots.conditions:
            text += f"\n\nin-context examples matched to the variant, {cond}:\n"
            text += shots.table(cond).to_string()
    write_summary(out, text)
    return 0


def register(sub: Any) -> None:
    """Add ``ablate`` to the ``interp`` command."""
    d = sub.add_parser(
        "ablate",
        help="no-image ablation across question wordings: accuracy with vs without the image",
        description=_package.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common_arguments(d, data_help=DATA_HELP)
    d.add_argument(
        "--conditions",
        default=",".join(DEFAULT_CONDITIONS),
        help="conditions without the image, side by side (default: %(default)s)",
    )
    d.add_argument(
        "--variants",
        default="",
        help="variant names in the order to report, most leaking first (default: the paper's "
        "order for the demo wordings, else the order in the data); others are left out",
    )
    d.add_argument("--variant-key", default="variant", help="label holding the wording")
    d.add_argument("--category-key", default="category", help="label holding the category")
    d.add_argument(
        "--group-key",
        default="group",
        help="label shared by the wordings of one image ('' for none: images are compared)",
    )
    d.add_argument(
        "--judge",
        default="inclusion",
        choices=["inclusion", "exact"],
        help="answer matching: normalised exact or two-way inclusion (default), or exact only",
    )
    d.add_argument(
        "--shots",
        default="",
        help="numbers of in-context examples matched to the variant, e.g. 1,2 (default: none)",
    )
    d.add_argument(
        "--shot-conditions", default="full,blind", help="conditions of the in-context runs"
    )
    d.add_argument("--max-new-tokens", type=int, default=12)
    d.add_argument("--ci", type=float, default=0.95, help="bootstrap interval level")
    d.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples")
    d.set_defaults(func=_ablate_command)


__all__ = ["register"]
