"""``interp conflict`` — the modality-conflict study on a model and a dataset.

Registering the command imports only argparse, :mod:`interp.command` and the package (whose public
names load on first use); the model runs, tables and figures (:mod:`.report`) are imported when
the command runs. The command's help text is the package's docstring.
"""

from __future__ import annotations

from typing import Any

from interp.command import Invocation, UsageError, add_command, at_least, split_list
from interp.studies import conflict as _package

HELP = "modality conflict: bias labels per evidence form and order, probes, contrastive decoding"
DESCRIPTION = _package.__doc__
DATA_HELP = (
    "'demo' (the demo world's conflict items, all six orders) or a JSONL file whose items carry "
    "image_label, propositional_label, text_label, order and caption labels"
)
NOUN = "conflict items"


def check_options(inv: Invocation) -> dict[str, Any]:
    """``--cv`` >= 2 and the sources ``--favour`` names."""
    from .items import SOURCES

    at_least(inv.args.cv, "--cv", 2)
    favour = split_list(inv.args.favour)
    for name in favour:
        if name not in SOURCES:
            raise UsageError(f"--favour: unknown source {name!r}; sources: {', '.join(SOURCES)}")
    return {"favour": favour}


def load_samples(inv: Invocation) -> list[Any]:
    """The conflict items, each with its per-source labels."""
    from .items import check_items

    samples = inv.load_data(("conflict",))
    check_items(samples)
    return samples


def register(sub: Any) -> None:
    """Add ``conflict`` to the ``interp`` command (the common options, the favoured sources
    and the probe folds)."""
    d = add_command(sub, "conflict", __name__)
    d.add_argument(
        "--favour",
        default="image,text",
        help="sources the contrastive-decoding diagnostic favours (comma-separated)",
    )
    d.add_argument("--cv", type=int, default=5, help="folds of the layer-wise probes")
    d.add_argument("--max-new-tokens", type=int, default=4)


__all__ = ["register"]
