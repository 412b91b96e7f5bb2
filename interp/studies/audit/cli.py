"""``interp audit`` — one command, one report: is this model looking at the image?

The command: its options, their checks before the model loads, the run and what it prints. What
the audit writes and how a study joins it: :mod:`interp.studies.audit`.
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import Any

from interp.cli import (
    UsageError,
    add_common_arguments,
    check_common_arguments,
    check_model,
    check_output_dir,
    finish_outputs,
)
from interp.errors import InterpError
from interp.samples import Sample

from .data import DEMO_N, read_data
from .registry import AuditOptions, plan, studies
from .report import show
from .run import audit


def _validate(
    args: argparse.Namespace,
) -> tuple[list[Sample], Path, list[str] | None, tuple[int, ...]]:
    check_common_arguments(args, one_process="interp audit")
    if args.max_new_tokens < 1:
        raise UsageError(f"--max-new-tokens must be >= 1, got {args.max_new_tokens}")
    only = None
    if args.studies:
        only = [s.strip() for s in args.studies.split(",") if s.strip()]
        known = [st.key for st in studies()]
        bad = [s for s in only if s not in known]
        if bad:
            raise UsageError(f"--studies: unknown {bad}; choose from {', '.join(known)}")
    try:
        seeds = tuple(int(x) for x in args.seeds.split(",") if x.strip())
    except ValueError:
        raise UsageError(f"--seeds takes comma-separated integers, got {args.seeds!r}") from None
    check_output_dir(args.out, create=False)
    check_model(args.model)
    samples = read_data(args.data, args.n, args.seed, args.images, args.columns)
    if not any(chosen for _, chosen, _ in plan(samples, only)):
        reasons = "; ".join(f"{st.key}: {why}" for st, _, why in plan(samples, only))
        raise UsageError(f"no study can run on --data {args.data!r} ({reasons})")
    out = check_output_dir(args.out)
    return samples, out, only, seeds


def reproduce_command(args: argparse.Namespace) -> str:
    """The command line that reproduces this audit (every option that shapes the results)."""
    parts = ["interp", "audit", "--model", args.model, "--data", args.data, "--out", args.out]
    if args.images:
        parts += ["--images", args.images]
    if args.columns:
        parts += ["--columns", args.columns]
    if args.n is not None:
        parts += ["--n", str(args.n)]
    if args.studies:
        parts += ["--studies", args.studies]
    parts += ["--seed", str(args.seed), "--seeds", args.seeds, "--batch-size", str(args.batch_size)]
    parts += ["--max-new-tokens", str(args.max_new_tokens)]
    return " ".join(shlex.quote(p) for p in parts)


def _audit_command(args: argparse.Namespace) -> int:
    import matplotlib

    matplotlib.use("Agg")

    from interp.model import load

    samples, out, only, seeds = _validate(args)
    vlm = load(args.model, attn_implementation="eager")
    for study, chosen, reason in plan(samples, only):
        print(f"  {study.key}: " + (f"{len(chosen)} samples" if chosen else f"skipped — {reason}"))
    opts = AuditOptions(
        batch_size=args.batch_size,
        max_new_tokens=args.max_new_tokens,
        seeds=seeds,
        store=out / "store",
        overwrite=args.overwrite,
    )
    command = reproduce_command(args)
    summary = audit(
        vlm,
        samples,
        out,
        model=args.model,
        data=args.data,
        command=command,
        studies=only,
        options=opts,
        progress_bar=not args.no_progress,
        n_per_kind=args.n if args.n is not None else (DEMO_N if args.data == "demo" else None),
    )
    parts = summary["studies"]
    for key, part in parts.items():
        if part["ran"]:
            print(f"{key}: " + ", ".join(f"{k} {show(v)}" for k, v in part["numbers"].items()))
    not_run = {k: v for k, v in parts.items() if not v["ran"]}
    if not_run:
        print("\nnot run:")
        for key, part in not_run.items():
            print(f"  {key} ({part['status']}): {part.get('reason', '')}")
    real = finish_outputs(out)
    if not any(part["ran"] for part in parts.values()):
        raise NoStudyRanError(
            f"no study could run on --data {args.data!r}; {real / 'report.html'} says why for each"
        )
    return 0


class NoStudyRanError(InterpError):
    """Every study the audit planned stopped on the data (the report says why)."""


def register(sub: Any) -> None:
    """Add ``audit`` to the ``interp`` command."""
    d = sub.add_parser(
        "audit",
        help="every study the data supports, one self-contained HTML report",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common_arguments(
        d,
        data_help="'demo', a JSONL file, a VLMEvalKit .tsv benchmark file, or a POPE question "
        "file (with --images)",
        n_help=f"samples per question kind (the 'qtype' label; a file's rows without one are one "
        f"kind): the first N of each (default: every sample of a file; demo {DEMO_N}, i.e. "
        f"{DEMO_N} colour, recall, existence and conflict questions and {DEMO_N // 3} "
        "descriptions, 520 in all)",
    )
    d.add_argument("--images", default=None, help="image folder of a POPE question file")
    d.add_argument("--studies", default=None, help="comma-separated subset of the studies")
    d.add_argument(
        "--seeds",
        default="0",
        help="sampling seeds of the decoding study (with fewer than 3 the report shows no "
        "spread over seeds)",
    )
    d.add_argument("--max-new-tokens", type=int, default=8)
    d.set_defaults(func=_audit_command)


__all__ = ["NoStudyRanError", "register", "reproduce_command"]
