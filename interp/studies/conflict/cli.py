"""``interp conflict`` — the modality-conflict study on a model and a dataset.

Registering the command imports only argparse, :mod:`interp.command` and the package (whose public
names load on first use); the model runs, tables and figures (:mod:`~interp.studies.conflict.report`) are imported when
the command runs. The command's help text is the package's docstring.
"""

from __future__ import annotations

import sys
from typing import Any

from interp.command import Invocation, UsageError, add_command, at_least, split_list

HELP = "modality conflict: bias labels per evidence form and order, probes, contrastive decoding"
# the package is loaded before its modules: its docstring, without importing it back
DESCRIPTION = sys.modules[__package__].__doc__
REMOTE = True  # remote: greedy and the contrastive diagnostic (its methods lower), the probe reads
DATA_HELP = (
    "'demo' (the demo world's two-image conflict items, all six orders; for a model that takes "
    "audio, its image + audio + caption items unless --sources demo), 'demo:trimodal' (those "
    "tri-modal items) or a JSONL file of conflict items: "
    "each source's label (image_label, audio_label, text_label; the demo set's "
    "propositional_label), order and caption; tri-modal items also their evidence type"
)
NOUN = "conflict items"


def check_options(inv: Invocation) -> dict[str, Any]:
    """``--cv`` >= 2, the source set ``--sources`` names and the sources ``--favour`` names."""
    from .items import SOURCE_SETS, SOURCES

    at_least(inv.args.cv, "--cv", 2)
    if inv.args.sources != "auto" and inv.args.sources not in SOURCE_SETS:
        raise UsageError(
            f"--sources: unknown source set {inv.args.sources!r}; use auto, "
            + ", ".join(SOURCE_SETS)
        )
    from .measure import AMATEURS

    favour = split_list(inv.args.favour)
    for name in favour:
        if name not in SOURCES:
            raise UsageError(f"--favour: unknown source {name!r}; sources: {', '.join(SOURCES)}")
    amateurs = split_list(inv.args.amateurs)
    for kind in amateurs:
        if kind not in AMATEURS:
            raise UsageError(f"--amateurs: unknown kind {kind!r}; use {', '.join(AMATEURS)}")
    return {"favour": favour, "amateurs": amateurs or ["without"]}


def load_samples(inv: Invocation) -> list[Any]:
    """The conflict items, each with its per-source labels (the source set named by
    ``--sources``, or the one the items' orders belong to). ``--data demo`` for a model that takes
    audio is the tri-modal set (``demo:trimodal``) unless ``--sources demo`` asks for the
    two-image one."""
    from interp.cli import model_modalities

    from .items import check_items, infer_sources, source_set

    name = inv.args.sources
    spec = None
    if inv.args.data == "demo" and name != "demo" and "audio" in model_modalities(inv.args.model):
        spec = "demo:trimodal"
    samples = inv.load_data(("conflict",), spec=spec)
    sources = infer_sources(samples)[1] if name == "auto" else source_set(name)
    check_items(samples, sources)
    names = [s.name for s in sources]
    for name in inv.plan["favour"]:
        if name not in names:
            raise UsageError(
                f"--favour: unknown source {name!r} for these items; their sources: "
                + ", ".join(names)
            )
    inv.plan["sources"] = sources
    return samples


def register(sub: Any) -> None:
    """Add ``conflict`` to the ``interp`` command (the common options, the favoured sources
    and the probe folds)."""
    d = add_command(sub, "conflict", __name__)
    d.add_argument(
        "--favour",
        default="image,text",
        help="the sources of the contrastive-decoding amateurs (comma-separated)",
    )
    d.add_argument(
        "--amateurs",
        default="without",
        help="which amateurs per source (comma-separated): 'without' (the input without the "
        "source: the contrast favours it) and/or 'alone' (the source alone: the contrast pushes "
        "away from it, the effect the paper describes)",
    )
    d.add_argument(
        "--sources",
        default="auto",
        help="the source set: trimodal (image, audio, caption), demo (two images, caption) or "
        "auto (the set the items' orders name)",
    )
    d.add_argument("--cv", type=int, default=5, help="folds of the layer-wise probes")
    d.add_argument("--max-new-tokens", type=int, default=4)


__all__ = ["register"]
