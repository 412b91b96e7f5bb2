"""Command line: ``interp <study> ...``.

Each study registers its subcommand through the ``interp.studies`` entry-point group of the
package metadata (``pyproject.toml``), so this module never imports a study: a study (or a third
party's) adds ``<name> = "<module>:register"``, where ``register(subparsers)`` adds its parser and
sets ``func``. The main job is ``interp diagnose`` (the chain-of-embedding study).

Every user error prints one line ``error: ...`` and exits with status 2 — bad arguments, missing
files, unreadable images, stores written by another run — and as much as possible is checked
before the model is loaded. This module also holds the helpers the studies' commands share:
common options, demo/JSONL data loading, validation of the data and output folder, and silencing
progress bars.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, NoReturn

from .errors import DataFormatError, InterpError

ENTRY_POINT_GROUP = "interp.studies"


class UsageError(InterpError, ValueError):
    """A command-line argument is invalid."""


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one ``error: ...`` line and exit status 2."""

    def error(self, message: str) -> NoReturn:
        print(f"error: {self.prog}: {message} (see {self.prog.split()[0]} --help)", file=sys.stderr)
        raise SystemExit(2)


# -- shared options and validation ----------------------------------------------------------------


def add_common_arguments(parser: argparse.ArgumentParser, *, data_help: str) -> None:
    """Options every study command takes: model, data, output folder, sample count, batching,
    store handling, sharding and progress bars."""
    parser.add_argument("--model", required=True, help="'demo', a local model folder or a hub id")
    parser.add_argument("--data", required=True, help=data_help)
    parser.add_argument("--out", required=True, help="output folder (holds the resumable store)")
    parser.add_argument(
        "--n", type=int, default=None, help="number of samples (default: demo 600, JSONL all)"
    )
    parser.add_argument("--seed", type=int, default=0, help="demo world seed")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="discard results already in --out (the store) instead of resuming them",
    )
    parser.add_argument(
        "--shard",
        default="auto",
        help="'i/n': compute every n-th sample starting at i into the shared store, then wait for "
        "the other processes ('auto': from accelerate launch / torchrun, else one process)",
    )
    parser.add_argument(
        "--no-progress", action="store_true", help="no progress bars (transformers' included)"
    )


def silence_progress() -> None:
    """Turn off every progress bar: the library's, transformers' (e.g. "Loading weights") and
    tqdm's defaults."""
    os.environ["TQDM_DISABLE"] = "1"
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except ImportError:  # pragma: no cover
        pass


def check_output_dir(out: str | Path) -> Path:
    """Create ``out`` if needed and check it is writable.

    Raises:
        UsageError: it cannot be created or written.
    """
    path = Path(out)
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".interp-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as err:
        raise UsageError(f"--out {str(path)!r} is not a writable folder ({err.strerror})") from None
    return path


DEMO_HELP = (
    "'demo' (the demo world's language-prior benchmark), 'demo:general' (every question type), "
    "'demo:<qtype,...>', or a JSONL file (image, question, answer, labels)"
)


def load_data(spec: str, n: int | None, seed: int, *, default_qtypes: Sequence[str]) -> list:
    """Samples from a data spec: ``demo`` / ``demo:prior`` (``default_qtypes``), ``demo:general``
    (every vision and vision-independent question type), ``demo:<qtype>[,...]``, or a JSONL file
    (see :func:`interp.read_jsonl`). Every image is opened, so a missing or unreadable file is
    reported before any model is loaded.

    Raises:
        MissingImageError, ImageError, DataFormatError, UsageError.
    """
    from .samples import ensure_samples, read_jsonl

    if n is not None and n < 1:
        raise UsageError(f"--n must be >= 1, got {n}")
    if spec == "demo" or spec.startswith("demo:"):
        from .datasets import QTYPES, TEXT_QTYPES, VISION_QTYPES, demo_world

        if spec in ("demo", "demo:prior"):
            qtypes = list(default_qtypes)
        elif spec == "demo:general":
            qtypes = list(VISION_QTYPES) + list(TEXT_QTYPES)
        else:
            qtypes = [q for q in spec.split(":", 1)[1].split(",") if q]
            bad = [q for q in qtypes if q not in QTYPES]
            if bad or not qtypes:
                raise UsageError(
                    f"--data {spec!r}: unknown demo question types {bad}; choose from "
                    f"{', '.join(QTYPES)}"
                )
        return demo_world(split="test", n=n or 600, seed=seed, qtypes=qtypes)
    path = Path(spec)
    if not path.is_file():
        raise DataFormatError(
            f"--data {spec!r}: no such file; give a JSONL file or one of 'demo', 'demo:general', "
            "'demo:<qtype,...>'"
        )
    samples = read_jsonl(path)
    samples = samples[:n] if n else samples
    for s in samples:
        s.load_images()  # every image opens, before the model is loaded
    return ensure_samples(samples)


def check_label(samples: Sequence[Any], name: str | None, option: str) -> None:
    """``name`` must be a ``meta`` label of at least one sample.

    Raises:
        UsageError: no sample carries it (the message lists the labels that exist).
    """
    if name is None:
        return
    labels = sorted({k for s in samples for k in s.meta})
    if not any(name in s.meta for s in samples):
        raise UsageError(
            f"{option} {name!r}: no sample has this label; labels in the data: "
            f"{', '.join(labels) or '(none)'}"
        )


def model_layers(model: str) -> int:
    """The decoder depth L of a model, read from its configuration only (no weights), for
    validating layer options before the model is loaded."""
    from .model import model_config

    config = model_config(model)
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    layers = getattr(text, "num_hidden_layers", None)
    if layers is None:
        raise UsageError(f"cannot read the number of decoder layers from {model!r}'s config")
    return int(layers)


# -- the program ------------------------------------------------------------------------------------


def _studies() -> list[Any]:
    return sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = Parser(
        prog="interp",
        description="Is this vision-language model looking at the image, or answering from its "
        "language prior? Studies of the vlm-interp library.",
    )
    parser.add_argument("--version", action="version", version=f"vlm-interp {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    studies = _studies()
    if not studies:
        raise UsageError(
            "no study commands are registered: install the package (pip install -e .) so its "
            f"'{ENTRY_POINT_GROUP}' entry points exist"
        )
    for ep in studies:
        ep.load()(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        if getattr(args, "no_progress", False):
            silence_progress()
        return int(args.func(args))
    except InterpError as err:
        print(f"error: {type(err).__name__}: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            "error: interrupted; re-run the same command to resume from the store", file=sys.stderr
        )
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
