"""``interp coe`` — the chain-of-embedding diagnosis of a model on a dataset (the main job).

    interp coe --model demo --data demo --out results/

runs agreement split → chain of embedding → VIP → TVI → correlations and writes the figures,
tables and summary that :mod:`interp.studies.coe.report` lists into ``--out``, beside ``store/``,
the resumable result store: re-running the same command after a crash or kill continues where it
stopped and gives identical outputs (``--overwrite`` starts over).

``--data`` is ``demo`` (the embedded demo world's language-prior benchmark: colour questions, half the
prior-bearing objects drawn in a counterfactual colour), ``demo:general`` (all question types),
``demo:<qtype>[,...]``, or a JSONL file with one object per line:
``{"image": "relative/or/absolute.png", "question": "...", "answer": "...", "id": "..."}`` (``image``
may be null; other keys become labels usable with ``--group-by`` and ``--split``).

The automatic VIP is found by the rule ``--vip-rule`` (default ``changepoint``; docs/vip_rules.md
compares them and says why): ``changepoint`` takes the start of the second segment of a two-segment
fit of the D_VT - D_T gap, the rule that agrees with the causal integration layer of ``interp flow``
on the demo models. ``eq9`` is Eq. 9 of the paper. Every rule's layer must also pass a significance
floor — its own one-sided two-sample test at ``--alpha``, Bonferroni-corrected over the candidate
layers, which keeps noise in the early layers from triggering Eq. 9; ``--vip-rule eq9 --alpha 0``
is Eq. 9 alone. ``effect`` is ``eq9`` plus an effect-size floor (the gap at least
``--min-fraction`` of the largest gap, and Cohen's d at least ``--min-effect`` when given); ``jump``
takes the layer where the gap grows most. ``--vip`` sets the layer by hand. The summary names the
rule used.

The states are read at the last prompt token (``--read-at prompt``, the default: the state that
produces the first answer token) or at the last generated token of each condition's own greedy
answer, fed back teacher-forced (``--read-at generated``, the wording of the paper's Appendix C;
``docs/papers.md`` says why it is not the default); the visual attention of
``--visual-attention`` from the same position.

``interp diagnose`` is an alias of this command (its earlier name).
"""

from __future__ import annotations

from typing import Any

from interp.command import (
    Invocation,
    UsageError,
    add_command,
    check_label,
    check_split_label,
    parse_conditions,
    split_list,
)

HELP = "chain of embedding → VIP → TVI → correlations (the main job)"
DESCRIPTION = __doc__
ALIASES = ("diagnose",)
ONE_PROCESS = False  # a sharded run: each process computes its share, process 0 writes
DEFAULT_QTYPES = ("color",)
MIN_SAMPLES = 4  # two groups of at least two samples (each group's variance is needed)
REMOTE = True  # remote: generate_states is lowered (final norm read in its trace; kl/js: the lens)


def check_options(inv: Invocation) -> dict[str, Any]:
    """``--conditions`` names two different, known conditions; ``--alpha`` in [0, 1), ``--beta``
    > 0; ``--vip-rule`` a known rule with usable floors; ``--visual-attention`` asks for eager
    attention here (on NDIF eager's weights are recomputed from the server's attention inputs)."""
    args = inv.args
    names = split_list(args.conditions)
    if len(names) != 2:
        raise UsageError(
            f"--conditions needs two conditions separated by a comma, got {args.conditions!r} "
            "(e.g. full,blind or full,null:black)"
        )
    conds = tuple(parse_conditions(names))
    if conds[0] == conds[1]:
        raise UsageError(f"--conditions: the two conditions are the same ({conds[0]!r})")
    if args.alpha is not None and not 0.0 <= args.alpha < 1.0:
        raise UsageError(f"--alpha must be in [0, 1) (0 = no significance floor), got {args.alpha}")
    if not args.beta > 0:
        raise UsageError(f"--beta must be > 0, got {args.beta}")
    from probes.vip import RULES

    if args.vip_rule not in RULES:
        raise UsageError(
            f"--vip-rule {args.vip_rule!r} is not a VIP rule: use one of " + ", ".join(RULES)
        )
    if not 0.0 <= args.min_fraction <= 1.0:
        raise UsageError(f"--min-fraction must be in [0, 1], got {args.min_fraction}")
    if args.min_effect is not None and not args.min_effect >= 0:
        raise UsageError(f"--min-effect must be >= 0 (a Cohen's d), got {args.min_effect}")
    if args.vip_rule == "effect" and not (args.min_fraction or args.min_effect):
        raise UsageError(
            "--vip-rule effect needs an effect-size floor: --min-fraction above 0 or --min-effect"
        )
    # a local model returns the weights under eager attention; a remote run recomputes eager's
    # weights from the server's attention inputs (interp.plain.attention_kind)
    remote = getattr(args, "remote", False)
    inv.attn_implementation = "eager" if args.visual_attention and not remote else None
    return {"conditions": conds}


def check_layers(inv: Invocation) -> None:
    for option, value in (("--vip", inv.args.vip), ("--fallback-vip", inv.args.fallback_vip)):
        if value is not None and not 1 <= value <= (inv.n_layers or 0):
            raise UsageError(
                f"{option} {value} is outside the model's decoder layers 1..{inv.n_layers}"
            )


def load_samples(inv: Invocation) -> list[Any]:
    """At least four samples; ``--group-by`` an existing label, ``--split`` (unless
    ``agreement``) a boolean label with two samples on each side."""
    args = inv.args
    samples = inv.load_data(DEFAULT_QTYPES)
    if len(samples) < MIN_SAMPLES:
        raise UsageError(
            f"the diagnosis compares two groups of at least 2 samples each: give at least "
            f"{MIN_SAMPLES} samples (--data {args.data!r} gives {len(samples)})"
        )
    from interp.conditions import Condition

    for kind in ("audio", "video"):  # before the model loads; the family is checked at compute
        parts = [getattr(Condition.parse(c), kind) for c in split_list(args.conditions)]
        acting = [str(p) for p in parts if p is not None]
        if acting and not any(s.has_audio if kind == "audio" else s.has_video for s in samples):
            raise UsageError(
                f"--conditions {args.conditions}: {acting[0]!r} acts on {kind}, but no sample "
                f"has {kind} (name the {kind} column: --columns {kind}=<column>)"
            )
    check_label(samples, args.group_by, "--group-by")
    if args.split != "agreement":
        check_split_label(samples, args.split, "--split")
    return samples


def register(sub: Any) -> None:
    """Add ``coe`` (alias ``diagnose``, its earlier name) to the ``interp`` command: the common
    options, then the conditions, the distance, the split, the VIP rule and the baselines."""
    d = add_command(sub, "coe", __name__)
    d.add_argument(
        "--conditions",
        default="full,blind",
        help="two conditions, the second the reference: e.g. full,blind, full,null:black, "
        "full,no_audio (where is the audio integrated?) or full,no_video",
    )
    d.add_argument("--metric", default="cosine", choices=["cosine", "l2", "kl", "js"])
    d.add_argument(
        "--split",
        default="agreement",
        help="'agreement' (answers with vs without the image differ) or a boolean label name",
    )
    d.add_argument(
        "--vip", type=int, default=None, help="manual VIP layer (default: automatic, --vip-rule)"
    )
    d.add_argument(
        "--vip-rule",
        default="changepoint",
        help="automatic VIP rule: changepoint (two-segment fit of the D_VT - D_T gap; default, "
        "it agrees with the causal integration layer of interp flow), eq9 (the paper's Eq. 9 "
        "plus the significance floor), effect (eq9 plus an effect-size floor) or jump (largest "
        "growth of the gap); see docs/vip_rules.md",
    )
    d.add_argument(
        "--min-fraction",
        type=float,
        default=0.25,
        help="rule effect: the VIP's gap must be at least this share of the largest gap (0 = off)",
    )
    d.add_argument(
        "--min-effect",
        type=float,
        default=None,
        help="rule effect: the VIP's Cohen's d must be at least this (default: no such floor)",
    )
    d.add_argument(
        "--fallback-vip",
        type=int,
        default=None,
        help="VIP to use if the automatic rule finds none (default: fail)",
    )
    d.add_argument("--beta", type=float, default=2.0, help="β of Eq. 9 (rules eq9 and effect)")
    d.add_argument(
        "--alpha",
        type=float,
        default=0.05,
        help="significance floor of the automatic rule: the VIP layer's one-sided two-sample test "
        "must pass at this level, Bonferroni-corrected over the candidate layers (0 = no floor; "
        "with --vip-rule eq9, Eq. 9 alone, as in the paper)",
    )
    d.add_argument(
        "--match", default="exact", choices=["exact", "inclusion"], help="answer matching"
    )
    d.add_argument("--group-by", default=None, help="label to break TVI and correlations down by")
    d.add_argument(
        "--visual-attention",
        action="store_true",
        help="also measure the Eq. 10 attention baseline (eager)",
    )
    d.add_argument(
        "--read-at",
        default="prompt",
        choices=["prompt", "generated"],
        help="where the states are read: prompt (default: the last prompt token, the state that "
        "produces the first answer token) or generated (Appendix C's wording: the last generated "
        "token of each condition's own greedy answer, fed back teacher-forced); docs/papers.md "
        "says why the default departs from the paper's text",
    )
    d.add_argument("--max-new-tokens", type=int, default=8)
