"""``interp recall`` — the visual-reference recall study as a command: runs every setting on the
model, writes the tables and figures into ``--out`` and prints the summary. The command's
``--help`` shows the study's description (the package docstring). Registering it imports no torch:
the study's modules load inside the run (:mod:`~interp.studies.recall.report`)."""

from __future__ import annotations

import math
import sys
from typing import Any

from interp.command import Invocation, UsageError, add_command, at_least, split_list

from .settings import DEMO_IDENTIFY, GROUPINGS, REFERENCE_QTYPES, SUBSETS, TRIVIAL

HELP = "visual-reference recall: Text-Only / Visual / Full Info, logit lens, failure probes"
# the package is loaded before its modules: its docstring, without importing it back
DESCRIPTION = sys.modules[__package__].__doc__
DATA_HELP = (
    "'demo' (the demo world's three reference families: facts, arithmetic, words), or a JSONL "
    "file whose rows carry the labels group, setting (text_only/full_info/visual), family and "
    "entity (and optionally identify: the question asking what the image shows)"
)
NOUN = "recall items"
REMOTE = True  # remote: greedy generation per pass, the logit lens through vlm.unembed


def check_options(inv: Invocation) -> dict[str, Any]:
    """``--cv`` and ``--inner-cv`` >= 2 folds, the trivial conditions."""
    from .items import check_trivial

    for option, value in (("--cv", inv.args.cv), ("--inner-cv", inv.args.inner_cv)):
        at_least(value, option, 2, " folds")
    return {"trivial": check_trivial(split_list(inv.args.trivial))}


def check_layers(inv: Invocation) -> None:
    layer, n_layers = inv.args.layer, inv.n_layers
    if layer is not None and not 0 <= layer <= (n_layers or 0):
        raise UsageError(f"--layer {layer} is outside the model's layers 0..{n_layers}")


def load_samples(inv: Invocation) -> list[Any]:
    """The recall items (whole items of the demo: three settings each), at least ``--cv`` per
    family."""
    from .items import families_of, recall_items

    args = inv.args
    n = args.n
    if args.data == "demo" and n is not None:
        n = 3 * math.ceil(n / 3)  # whole items: three settings per item
    samples = inv.load_data(REFERENCE_QTYPES, n=n)
    identify = None if args.no_identify else DEMO_IDENTIFY
    families = split_list(args.families) if args.families else None
    items = recall_items(samples, families=families, identify=identify)
    for fam in families_of(items):
        count = sum(item.family == fam for item in items)
        if count < args.cv:
            raise UsageError(
                f"family {fam!r} has {count} items, fewer than --cv {args.cv} folds; give more "
                "samples (--n) or fewer folds"
            )
    return items


def register(sub: Any) -> None:
    """Add ``recall`` to the ``interp`` command."""
    p = add_command(sub, "recall", __name__)
    p.add_argument("--families", default=None, help="comma-separated families (default: all)")
    p.add_argument(
        "--trivial",
        default=",".join(TRIVIAL),
        help="trivial-image conditions of the Text-Only vote (default: %(default)s)",
    )
    p.add_argument("--max-new-tokens", type=int, default=8)
    p.add_argument("--cv", type=int, default=5, help="(outer) cross-validation folds")
    p.add_argument("--inner-cv", type=int, default=3, help="folds that choose the probe layer")
    p.add_argument("--layer", type=int, default=None, help="fix the probe layer (0..L)")
    p.add_argument(
        "--groups",
        choices=GROUPINGS,
        default="pair",
        help="what never straddles train and test (default: the question-answer pair)",
    )
    p.add_argument("--subset", choices=SUBSETS, default="kept", help="filtered items or all")
    p.add_argument(
        "--char-inclusion",
        action="store_true",
        help="the paper's character-level two-way inclusion (default: on whole words)",
    )
    p.add_argument("--no-identify", action="store_true", help="no identification filter")
    p.add_argument(
        "--no-guess-filter", action="store_true", help="keep items the prior alone answers"
    )
