"""``interp ablation`` (alias ``ablate``, its earlier name) — the no-image ablation across question
wordings on a model and a dataset.

Registering the command imports only argparse, :mod:`interp.command` and the study's defaults; the
model runs, tables and figures (:mod:`~interp.studies.ablation.report`) are imported when the command runs. The command's
help text is the package's docstring.
"""

from __future__ import annotations

import sys
from typing import Any

from interp.command import (
    Invocation,
    UsageError,
    add_command,
    at_least,
    int_list,
    parse_conditions,
    split_list,
)

from .variants import DEFAULT_CONDITIONS

DATA_HELP = (
    "'demo' (the demo world's worded questions: color, identify, count, position, digit, "
    "describe, each in four wordings on one image), 'demo:<qtype,...>', or a JSONL file (image, "
    "question, answer, and the variant / category labels)"
)
HELP = "no-image ablation across question wordings: accuracy with vs without the image"
# the package is loaded before its modules: its docstring, without importing it back
DESCRIPTION = sys.modules[__package__].__doc__
ALIASES = ("ablate",)
NOUN = "items"
REMOTE = True  # remote: runs through residual_stream / score / generate (no edits)
WORDED = ("color", "identify", "count", "position", "digit", "describe")


def check_options(inv: Invocation) -> dict[str, Any]:
    """``--ci``, ``--n-boot``, the conditions, ``--shots``, the variants and the judge."""
    args = inv.args
    if not 0.0 < args.ci < 1.0:
        raise UsageError(f"--ci must lie in (0, 1), got {args.ci}")
    at_least(args.n_boot, "--n-boot", 1)
    conditions = parse_conditions(args.conditions)
    if not conditions:
        raise UsageError("--conditions is empty; give e.g. blind,null:black,null:noise,swap:next")
    shots = sorted(set(int_list(args.shots, "--shots")))
    if any(v < 1 for v in shots):
        raise UsageError(f"--shots: each k must be >= 1 (k = 0 is always run), got {args.shots!r}")
    shot_conditions = parse_conditions(args.shot_conditions)
    if shots and not shot_conditions:
        raise UsageError("--shot-conditions is empty; give e.g. full,blind")
    from .judge import make_judge  # after the names: it imports pandas

    return {
        "conditions": conditions,
        "shots": shots,
        "shot_conditions": shot_conditions,
        "judge": make_judge(args.judge),
        "group_key": args.group_key or None,
    }


def load_samples(inv: Invocation) -> list[Any]:
    """The items (labels, variants), the conditions against them, and enough examples."""
    from .context import select_examples
    from .items import check_without, select_items

    args, plan = inv.args, inv.plan
    samples = inv.load_data(WORDED)
    items = select_items(
        samples,
        split_list(args.variants) or None,
        variant_key=args.variant_key,
        category_key=args.category_key,
        group_key=plan["group_key"],
    )
    check_without(plan["conditions"], items)
    others = [c for c in plan["shot_conditions"] if c != "full"]
    if plan["shots"]:
        if others:
            check_without(others, items)
        select_examples(items, max(plan["shots"]), "matched", seed=args.seed)
    plan["variants"] = list(items.order)
    return samples


def register(sub: Any) -> None:
    """Add ``ablation`` (alias ``ablate``) to the ``interp`` command: the common options, then
    the conditions without the image, the wordings and their labels, the judge, the in-context
    runs and the bootstrap."""
    d = add_command(sub, "ablation", __name__)
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


__all__ = ["register"]
