"""``interp drives`` — the temporal causal drives of a model's greedy answers on a dataset.

    interp drives --model demo --data demo --out results/

writes ``tokens.csv``, ``samples.csv``, ``source_removal.csv``, ``recovery.csv``, ``clusters.csv``,
``imbalance.csv`` (labelled data), their figures, ``summary.txt`` and the resumable ``store/`` into
``--out``. The command's ``--help`` shows the study's description (the package docstring).
"""

from __future__ import annotations

import sys
from typing import Any

from interp.command import DEMO_HELP, Invocation, UsageError, add_command, at_least, check_label
from interp.errors import SupportError

from .contexts import (
    DEFAULT_QTYPES,
    NEUTRAL_PROMPT,
    NULL_IMAGES,
    VISUALS,
    _check_images,
    _check_null_visual,
    _null_image_name,
    _question_part,
)

HELP = "temporal causal drives (QCD, VCD, PCD) of each generated token"
# the package is loaded before its modules: its docstring, without importing it back
DESCRIPTION = sys.modules[__package__].__doc__
DATA_HELP = DEMO_HELP + " (default question type for demo: describe)"
REMOTE = True  # remote: runs through generate / score_contexts (no edits)


def check_options(inv: Invocation) -> None:
    """``--k`` >= 1, ``--m`` >= 0, ``--clusters`` >= 1, ``--null-image`` (with ``--visual``), ``--null-question``."""
    args = inv.args
    at_least(args.k, "--k", 1, " (the support size K)")
    at_least(args.m, "--m", 0, " (held-out contexts; 0 skips the recovery)")
    at_least(args.clusters, "--clusters", 1)
    _check_null_visual(_null_image_name(args.null_image), args.visual)
    _question_part(args.null_question)


def load_samples(inv: Invocation) -> list[Any]:
    """Every sample with an image (a video with ``--visual video``); K, M and the clusters against the number of samples;
    ``--labels``."""
    args = inv.args
    samples = inv.load_data(DEFAULT_QTYPES)
    _check_images(samples, visual=args.visual)
    if args.k > len(samples):
        raise SupportError(
            f"--k {args.k} is larger than the {len(samples)} samples the support is drawn from; "
            "lower --k or raise --n"
        )
    if args.m > len(samples) - args.k:
        raise SupportError(
            f"--m {args.m} held-out contexts asked, but only {len(samples) - args.k} samples lie "
            f"outside the support of K={args.k}; lower --m (0 skips the recovery) or raise --n"
        )
    if args.clusters > len(samples):
        raise UsageError(f"--clusters {args.clusters} is more than the {len(samples)} samples")
    if args.labels is not None:
        check_label(samples, args.labels, "--labels")
    return samples


def register(sub: Any) -> None:
    """Add ``drives`` to the ``interp`` command: the common options, then K, M, the null
    image and question, the clusters and the labels of the S_PV validation."""
    d = add_command(sub, "drives", __name__)
    d.add_argument("--k", type=int, default=20, help="support size K (default 20)")
    d.add_argument(
        "--m",
        type=int,
        default=20,
        help="held-out contexts of the randomized-intervention recovery (the paper: 100; 0 skips)",
    )
    d.add_argument("--support-seed", type=int, default=0, help="seed of the support draw")
    d.add_argument("--null-image", default="blind", choices=list(NULL_IMAGES) + ["none"])
    d.add_argument(
        "--visual",
        default="image",
        choices=list(VISUALS),
        help="what V is: the image, or the video (null image blind/black/mean/mismatched)",
    )
    d.add_argument(
        "--null-question",
        default="",
        help=f"Q = ∅: '' (empty) or a prompt such as {NEUTRAL_PROMPT!r}",
    )
    d.add_argument("--clusters", type=int, default=3, help="k of the trajectory k-means")
    d.add_argument(
        "--labels",
        default=None,
        help="meta label with prior_driven / grounded values for the S_PV validation (demo data: "
        "labelled from the generated answers)",
    )
    d.add_argument("--max-new-tokens", type=int, default=24)


__all__ = ["register"]
