"""``interp decoding`` — POPE-style evaluation of training-free contrastive decoding methods.

    interp decoding --model demo --data pope --methods greedy,vcd,icd,m3id,vdd,pai --out results/

runs each method of ``interventions.decoding`` greedy **and** sampled (one run per ``--seeds`` seed,
reported as mean ± std), so a method is never compared with a sampled baseline only. The
questions, POPE's three settings, the answer rule and the metrics are those of the study
(:mod:`interp.studies.decoding`).

It writes into ``--out``: ``answers.csv`` (every run's answer to every question), ``metrics.csv``
(the metrics per method, mode, seed and setting), ``summary.csv`` (mean and std over seeds),
``methods.png``, ``summary.txt`` and ``store/`` (one resumable store per run).

``interp decode`` is an alias of this command.
"""

from __future__ import annotations

from typing import Any

from interp.command import Invocation, UsageError, add_command, int_list, split_list

from .analysis import DEFAULT_METHODS, pope_settings

# the names interventions.decoding.method takes (its PLAIN, then its METHODS), here without
# importing it (it imports torch), so that a mistyped --methods is refused at once
METHOD_NAMES = ("greedy", "plain", "none", "vcd", "icd", "vdd", "m3id", "pai", "contrast")
HELP = "POPE-style evaluation of contrastive decoding methods (greedy and sampled)"
DESCRIPTION = __doc__
ALIASES = ("decode",)
NOUN = "questions"
REMOTE = True  # remote: every method lowers (pai's boost too), greedy and sampled
DATA_HELP = (
    "'pope' (the demo world's POPE-style existence questions), 'demo:<qtype,...>' with yes/no "
    "answers, or a JSONL file (image, question, answer yes/no, and a 'pope_negative' label "
    "random/popular/adversarial on the negatives)"
)


def check_options(inv: Invocation) -> dict[str, Any]:
    """``--seeds``, ``--temperature``, the methods with their parameters; an amateur that equals
    the expert's input is refused. A local model runs pai under eager attention."""
    from interp.conditions import Condition
    from interp.errors import ConditionError, DecodingError

    args = inv.args
    for name in split_list(args.methods):  # by name first: the methods' module imports torch
        if name.strip().lower() not in METHOD_NAMES:
            known = ", ".join(m for m in METHOD_NAMES if m not in ("plain", "none"))
            raise DecodingError(f"unknown decoding method {name!r}; use one of {known}")
    if "contrast" in [m.strip().lower() for m in split_list(args.methods)]:
        try:  # the amateur's name too, before the import
            Condition.parse(args.amateur)
        except ConditionError as err:
            raise DecodingError(f"bad amateur condition {args.amateur!r}: {err}") from err
    from .measure import resolve_methods

    seeds = int_list(args.seeds, "--seeds")
    if any(v < 0 for v in seeds):
        raise UsageError(f"--seeds: seeds must be >= 0, got {args.seeds!r}")
    if not args.temperature > 0:
        raise UsageError(f"--temperature must be > 0, got {args.temperature}")
    methods = split_list(args.methods)
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
    if getattr(args, "remote", False):  # the methods that lower, before the model loads
        from interp.edits import local_only

        for name, dec in decoders.items():
            local_only(None, {"remote": True}, f"interp decoding --methods {name}", decoding=dec)
    if any(d is not None and d.edits for d in decoders.values()) and not getattr(
        args, "remote", False
    ):
        inv.attn_implementation = "eager"  # as the stored figures were made (SDPA: the same)
    return {"methods": methods, "params": params, "seeds": seeds}


def load_samples(inv: Invocation) -> list[Any]:
    """Yes/no questions, each negative with its POPE setting."""
    spec = "demo:exist" if inv.args.data == "pope" else inv.args.data
    samples = inv.load_data(("exist",), spec=spec)
    pope_settings(samples)
    return samples


def register(sub: Any) -> None:
    """Add ``decoding`` (alias ``decode``, its earlier name) to the ``interp`` command."""
    d = add_command(sub, "decoding", __name__)
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


__all__ = ["register"]
