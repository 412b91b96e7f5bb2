"""``interp decoding`` — POPE-style evaluation of training-free contrastive decoding methods.

    interp decoding --model demo --data pope --methods greedy,vcd,icd,m3id,vdd,pai --out results/

runs each method of ``interventions.decoding`` greedy **and** sampled (one run per ``--seeds`` seed,
reported as mean ± std), so a method is never compared with a sampled baseline only:

- the questions are existence questions (``is there a <object> in the image?``) whose truth is
  ``yes`` for objects in the image and ``no`` for absent ones; absent objects are drawn in three
  ways (the ``pope_negative`` label): ``random``, ``popular`` (frequent objects) and
  ``adversarial`` (objects that co-occur with one in the image — where a language prior says yes);
- each setting is scored on the positive questions plus that setting's negatives, as POPE
  balances them;
- an answer counts as ``no`` if its words hold ``no`` or ``not``, else ``yes`` (POPE's rule);
- metrics (positive class ``yes``): accuracy, precision, recall, F1 and the yes-ratio.

It writes into ``--out``: ``answers.csv`` (every run's answer to every question), ``metrics.csv``
(the metrics per method, mode, seed and setting), ``summary.csv`` (mean and std over seeds),
``methods.png``, ``summary.txt`` and ``store/`` (one resumable store per run).

``interp decode`` is an alias of this command.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from interp.cli import (
    UsageError,
    add_common_arguments,
    check_common_arguments,
    check_model,
    check_output_dir,
    load_data,
    write_summary,
)
from interp.errors import DecodingError

from .analysis import DEFAULT_METHODS, pope_settings

if TYPE_CHECKING:
    from interp.samples import Sample

DATA_HELP = (
    "'pope' (the demo world's POPE-style existence questions), 'demo:<qtype,...>' with yes/no "
    "answers, or a JSONL file (image, question, answer yes/no, and a 'pope_negative' label "
    "random/popular/adversarial on the negatives)"
)


def _int_list(text: str, option: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise UsageError(f"{option} takes comma-separated integers, got {text!r}") from None
    if any(v < 0 for v in values):
        raise UsageError(f"{option}: seeds must be >= 0, got {text!r}")
    return values


def _validate(args: argparse.Namespace) -> tuple[list[Sample], dict[str, Any], list[int], Path]:
    """Everything checked before the model is loaded: options, methods, output folder, model
    configuration, data (every image opened, yes/no answers)."""
    from interp.conditions import Condition

    from .measure import resolve_methods

    check_common_arguments(args, one_process="interp decoding")
    seeds = _int_list(args.seeds, "--seeds")
    if args.max_new_tokens < 1:
        raise UsageError(f"--max-new-tokens must be >= 1, got {args.max_new_tokens}")
    if not args.temperature > 0:
        raise UsageError(f"--temperature must be > 0, got {args.temperature}")
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    params: dict[str, dict[str, Any]] = {}
    for name in methods:
        key = name.lower()
        if key in ("greedy", "plain", "none", "pai"):
            continue
        if args.alpha is not None and key != "m3id":
            params.setdefault(key, {})["alpha"] = args.alpha
        if args.beta is not None:
            params.setdefault(key, {})["beta"] = args.beta
    if "contrast" in [m.lower() for m in methods]:
        params.setdefault("contrast", {})["amateur"] = args.amateur
    decoders = resolve_methods(methods, params)
    expert = Condition.parse("full")
    for name, dec in decoders.items():
        if dec is not None and expert in dec.amateurs:
            raise DecodingError(
                f"{name}: the amateur condition 'full' equals the expert's input; give an "
                "amateur that removes or degrades something (e.g. --amateur blind)"
            )
    check_output_dir(args.out, create=False)
    check_model(args.model)
    spec = "demo:exist" if args.data == "pope" else args.data
    samples = load_data(spec, args.n, args.seed, default_qtypes=("exist",), columns=args.columns)
    pope_settings(samples)
    out = check_output_dir(args.out)
    return samples, {"methods": methods, "params": params, "decoders": decoders}, seeds, out


def _decode_command(args: argparse.Namespace) -> int:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from interp.model import load

    from .figures import plot_methods
    from .measure import evaluate_decoding

    samples, plan, seeds, out = _validate(args)
    eager = any(d is not None and d.edits for d in plan["decoders"].values())
    vlm = load(args.model, attn_implementation="eager" if eager else None)
    print(f"{vlm}\n{len(samples)} questions from {args.data!r}", flush=True)
    runs = evaluate_decoding(
        vlm,
        samples,
        plan["methods"],
        params=plan["params"],
        seeds=seeds,
        greedy=not args.no_greedy,
        temperature=args.temperature,
        max_new_tokens=args.max_new_tokens,
        batch_size=args.batch_size,
        store=out / "store",
        overwrite=args.overwrite,
        progress_bar=not args.no_progress,
    )
    runs.answers.to_csv(out / "answers.csv", index=False)
    runs.metrics().to_csv(out / "metrics.csv", index=False)
    summary = runs.summary()
    summary.to_csv(out / "summary.csv", index=False)
    plot_methods(runs).savefig(out / "methods.png", dpi=130)
    plt.close("all")
    lines = [f"model {args.model!r}, data {args.data!r}, {len(samples)} questions"]
    lines += [f"  {k}: {v}" for k, v in runs.methods.items()]
    for metric in ("f1", "yes_ratio", "accuracy"):
        lines += ["", f"{metric} (greedy; sampled mean ± std over seeds {seeds}):"]
        lines.append(runs.table(metric).to_string())
    text = "\n".join(lines)
    write_summary(out, text)
    return 0


def register(sub: Any) -> None:
    """Add ``decoding`` (alias ``decode``, its earlier name) to the ``interp`` command."""
    d = sub.add_parser(
        "decoding",
        aliases=["decode"],
        help="POPE-style evaluation of contrastive decoding methods (greedy and sampled)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common_arguments(d, data_help=DATA_HELP)
    d.add_argument(
        "--methods",
        default=",".join(DEFAULT_METHODS),
        help="comma-separated: greedy (plain decoding), vcd, icd, vdd, m3id, pai, contrast",
    )
    d.add_argument("--seeds", default="0,1,2", help="sampling seeds ('' for greedy only)")
    d.add_argument("--no-greedy", action="store_true", help="sampled runs only")
    d.add_argument("--temperature", type=float, default=1.0, help="sampling temperature")
    d.add_argument("--alpha", type=float, default=None, help="override α of vcd/icd/vdd/contrast")
    d.add_argument("--beta", type=float, default=None, help="override β of every method but pai")
    d.add_argument(
        "--amateur", default="blind", help="the amateur condition of 'contrast' (default blind)"
    )
    d.add_argument("--max-new-tokens", type=int, default=4)
    d.set_defaults(func=_decode_command, command="decoding")  # the alias records as "decoding"


__all__ = ["register"]
