"""``interp conflict`` — the modality-conflict study on a model and a dataset.

Registering the command imports only argparse, :mod:`interp.command` and the package (whose public
names load on first use); the model runs, tables and figures (:mod:`.report`) are imported when
the command runs. The command's help text is the package's docstring.
"""

from __future__ import annotations

from typing import Any

from interp.command import Invocation, UsageError, add_command, at_least, split_list
from interp.studies import conflict as _package


def _options(inv: Invocation) -> dict[str, Any]:
    """``--cv`` >= 2 and the sources ``--favour`` names."""
    from .items import SOURCES

    at_least(inv.args.cv, "--cv", 2)
    favour = split_list(inv.args.favour)
    for name in favour:
        if name not in SOURCES:
            raise UsageError(f"--favour: unknown source {name!r}; sources: {', '.join(SOURCES)}")
    return {"favour": favour}


def _data(inv: Invocation) -> list[Any]:
    """The conflict items, each with its per-source labels."""
    from .items import check_items

    samples = inv.load_data(("conflict",))
    check_items(samples)
    return samples


def register(sub: Any) -> None:
    """Add ``conflict`` to the ``interp`` command."""
    d = add_command(
        sub,
        "conflict",
        help="modality conflict: bias labels per evidence form and order, probes, "
        "contrastive decoding",
        description=_package.__doc__,
        data_help="'demo' (the demo world's conflict items, all six orders) or a JSONL file whose "
        "items carry image_label, propositional_label, text_label, order and caption labels",
        run="interp.studies.conflict.report:report",
        noun="conflict items",
        options=_options,
        data=_data,
    )
    d.add_argument(
        "--favour",
        default="image,text",
        help="sources the contrastive-decoding diagnostic favours (comma-separated)",
    )
    d.add_argument("--cv", type=int, default=5, help="folds of the layer-wise probes")
    d.add_argument("--max-new-tokens", type=int, default=4)


__all__ = ["register"]
