"""``interp reproduce <paper> --model <id|folder> --out DIR [--data-root DIR]`` — a paper's main
table on a model, with the paper's settings, beside the paper's published rows.

    interp reproduce coe --model demo --out results/coe
    interp reproduce coe --model Qwen/Qwen2.5-VL-7B-Instruct --data-root /data/bench --out coe/

runs the study command(s) of the paper's recipe (each study with one names it in its registry
entry; :mod:`interp.studies.reproduce.recipes` holds the project's: tables, data and settings)
and writes, into ``--out``, one folder per study run, ``table.csv`` (this run's table),
``published.csv`` (the paper's rows) and ``table.md`` (both).
On the demo models every run uses the demo world's stand-in; on a checkpoint, the papers'
benchmarks (``interp.read_benchmark``): from ``--data-root DIR`` (one sub-folder per benchmark,
e.g. ``DIR/VLind-Bench``), else ``$INTERP_DATA_ROOT``, else the hub by dataset id. Data that is
not published is given with ``--data LABEL=FILE``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from interp.cli import MODEL_HELP, REMOTE_HELP, UsageError
from interp.study_registry import studies


def papers() -> tuple[str, ...]:
    """The studies with a recipe (their registry entries'), by name."""
    return tuple(entry.name for entry in studies() if entry.recipe is not None)


def register(sub: Any) -> None:
    """Add ``interp reproduce``."""
    p = sub.add_parser(
        "reproduce",
        help="run a paper's main table on a model, beside the paper's published rows",
        description=__doc__,
    )
    names = papers()
    p.add_argument("paper", choices=names, help="the paper's study: " + ", ".join(names))
    p.add_argument("--model", required=True, help=MODEL_HELP)
    # not 'out': each study run manages its own output folder inside this one
    p.add_argument("--out", dest="folder", required=True, help="output folder")
    p.add_argument("--data-root", default=None, help="folder of local benchmark copies")
    p.add_argument(
        "--data",
        action="append",
        default=None,
        help="LABEL=SPEC: the data of one run (e.g. 'Tri-PvP=items.jsonl'); SPEC alone for a "
        "recipe with one run",
    )
    p.add_argument("--n", type=int, default=None, help="samples per run (default: all)")
    p.add_argument("--batch-size", type=int, default=None)
    p.add_argument("--overwrite", action="store_true", help="start every run afresh")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument(
        "--remote",
        action="store_true",
        help=f"{REMOTE_HELP}; every study command of the recipe runs there",
    )
    p.set_defaults(func=run_command)


def _data(values: list[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for v in values or []:
        label, sep, spec = v.partition("=")
        if sep and label and spec and not Path(v).exists():
            out[label] = spec
        else:
            out["*"] = v
    return out


def run_command(args: argparse.Namespace) -> int:
    if args.n is not None and args.n < 1:
        raise UsageError(f"--n must be >= 1, got {args.n}")
    if args.data_root is not None and not Path(args.data_root).expanduser().is_dir():
        raise UsageError(f"--data-root {args.data_root!r} is not a folder")
    from .run import reproduce

    # the commands' own batch size unless --batch-size is given
    given = {} if args.batch_size is None else {"batch_size": args.batch_size}
    result = reproduce(
        args.paper,
        args.model,
        out=args.folder,
        data_root=args.data_root,
        data=_data(args.data),
        n=args.n,
        overwrite=args.overwrite,
        progress_bar=not args.no_progress,
        remote=args.remote,
        **given,
    )
    sys.stdout.write(result.markdown())
    print(f"wrote table.csv, published.csv, table.md to {result.out}")
    return 0
