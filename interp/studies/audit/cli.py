"""``interp audit`` — one command, one report: is this model looking at the image?

The command: its options, their checks before the model loads, the run and what it prints. What
the audit writes and how a study joins it: :mod:`interp.studies.audit`.
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any

from interp.command import Invocation, UsageError, add_command, int_list, split_list
from interp.errors import InterpError
from interp.samples import Sample

from .data import DEMO_N, read_data
from .registry import AuditOptions, plan, studies
from .report import show
from .run import audit

HELP = "every study the data supports, one self-contained HTML report"
DESCRIPTION = __doc__
DATA_HELP = (
    "'demo', a JSONL file, a VLMEvalKit .tsv benchmark file, or a POPE question file (with "
    "--images)"
)
N_HELP = (
    "samples per question kind (the 'qtype' label; a file's rows without one are one kind): the "
    f"first N of each (default: every sample of a file; demo {DEMO_N}, i.e. {DEMO_N} colour, "
    f"recall, existence and conflict questions (tri-modal ones for a model that takes audio) and "
    f"{DEMO_N // 3} descriptions, 520 in all)"
)
NOUN = None  # the run prints its own plan
REMOTE = True  # remote: each study where it can, the others skipped with the reason
RUN = "interp.studies.audit.cli:run_command"


def check_options(inv: Invocation) -> dict[str, Any]:
    """``--studies`` names known studies; ``--seeds`` is a list of integers."""
    args = inv.args
    only = None
    if args.studies:
        only = split_list(args.studies)
        known = [st.key for st in studies()]
        bad = [s for s in only if s not in known]
        if bad:
            raise UsageError(f"--studies: unknown {bad}; choose from {', '.join(known)}")
    inv.attn_implementation = "eager"
    return {"only": only, "seeds": tuple(int_list(args.seeds, "--seeds"))}


def load_samples(inv: Invocation) -> list[Sample]:
    """The samples, of which at least one study can run."""
    from interp.cli import model_modalities

    args, only = inv.args, inv.plan["only"]
    audio = args.data == "demo" and "audio" in model_modalities(args.model)
    samples = read_data(args.data, args.n, args.seed, args.images, args.columns, audio)
    if not any(chosen for _, chosen, _ in plan(samples, only)):
        reasons = "; ".join(f"{st.key}: {why}" for st, _, why in plan(samples, only))
        raise UsageError(f"no study can run on --data {args.data!r} ({reasons})")
    return samples


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


def run_command(inv: Invocation) -> None:
    """The audit on ``inv.vlm``: the plan, the report, the headline numbers on stdout."""
    args, samples, only, out = inv.args, inv.samples, inv.plan["only"], inv.out
    assert out is not None and inv.vlm is not None
    for study, chosen, reason in plan(samples, only):
        print(f"  {study.key}: " + (f"{len(chosen)} samples" if chosen else f"skipped — {reason}"))
    opts = AuditOptions(
        batch_size=args.batch_size,
        max_new_tokens=args.max_new_tokens,
        seeds=inv.plan["seeds"],
        store=out.store,
        overwrite=args.overwrite,
    )
    summary = audit(
        inv.vlm,
        samples,
        out.folder,
        model=args.model,
        data=args.data,
        command=reproduce_command(args),
        studies=only,
        options=opts,
        progress_bar=not args.no_progress,
        n_per_kind=args.n if args.n is not None else (DEMO_N if args.data == "demo" else None),
    )
    parts = summary["studies"]
    print("\n".join(terminal_lines(parts)))
    real = out.finish()
    if not any(part["ran"] for part in parts.values()):
        raise NoStudyRanError(
            f"no study could run on --data {args.data!r}; {real / 'report.html'} says why for each"
        )


class NoStudyRanError(InterpError):
    """Every study the audit planned stopped on the data (the report says why)."""


def register(sub: Any) -> None:
    """Add ``audit`` to the ``interp`` command, with the data's image folder, the studies to run
    and the sampling seeds of the decoding study."""
    d = add_command(sub, "audit", __name__)
    d.add_argument("--images", default=None, help="image folder of a POPE question file")
    d.add_argument("--studies", default=None, help="comma-separated subset of the studies")
    d.add_argument(
        "--seeds",
        default="0",
        help="sampling seeds of the decoding study (with fewer than 3 the report shows no "
        "spread over seeds)",
    )
    d.add_argument("--max-new-tokens", type=int, default=8)


def terminal_lines(parts: dict[str, Any]) -> list[str]:
    """What the command prints of ``summary.json``'s studies: each study's headline numbers, with
    its note (why a number is ``n/a`` or a finding ``none``) on the next line, then the studies
    that did not run and why."""
    lines = []
    for key, part in parts.items():
        if part["ran"]:
            lines.append(
                f"{key}: " + ", ".join(f"{k} {show(v)}" for k, v in part["numbers"].items())
            )
            if part.get("reason"):
                lines.append(f"  note: {part['reason']}")
    not_run = {k: v for k, v in parts.items() if not v["ran"]}
    if not_run:
        lines.append("\nnot run:")
        for key, part in not_run.items():
            lines.append(f"  {key} ({part['status']}): {part.get('reason', '')}")
    return lines


__all__ = ["NoStudyRanError", "register", "reproduce_command", "terminal_lines"]
