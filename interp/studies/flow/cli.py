"""``interp flow`` — attention-knockout information flow of a model on a dataset.

    interp flow --model demo --data demo --window 1 --out results/

blocks each edge (``--edges``: image>question, image>last, question>last, or any
``SOURCE>TARGET`` of position names) in every window of ``--window`` consecutive decoder layers
(``--stride`` apart), scores the answer teacher-forced with and without the knockout, and writes
the per-window curves, the per-sample table, the flow figure and the causal integration layer
(two-sided one-sample t-tests of Δ against 0, Holm-corrected over the image → text edges ×
windows, level ``--alpha``) that :mod:`interp.studies.flow.report` lists into ``--out``. The
knockout edits the attention mask, which eager and SDPA attention take alike; a local model is
loaded with eager attention, as the stored figures were made. ``--remote`` runs every pass on NDIF.
"""

from __future__ import annotations

from typing import Any

from interp.command import Invocation, UsageError, add_command, at_least, check_label, split_list

HELP = "attention-knockout information flow: Δ log p(answer) per window and edge, integration layer"
DESCRIPTION = __doc__
DEFAULT_QTYPES = ("color",)
DEFAULT_EDGES = "image>question,image>last,question>last"
REMOTE = True  # remote: the knockouts lower to plain cuts of the attention mask


def check_options(inv: Invocation) -> dict[str, Any]:
    """``--edges`` are edges, ``--window`` and ``--stride`` >= 1, ``--alpha`` in (0, 1); the
    model is loaded with eager attention here (the server's deployment decides its own)."""
    from interp.errors import InterventionError

    from .measure import parse_edge

    args = inv.args
    names = split_list(args.edges)
    if not names:
        raise UsageError("--edges: give at least one edge, e.g. image>last")
    try:
        edges = [parse_edge(e) for e in names]
    except InterventionError as err:
        raise UsageError(f"--edges: {err}") from None
    at_least(args.window, "--window", 1)
    at_least(args.stride, "--stride", 1)
    if not 0.0 < args.alpha < 1.0:
        raise UsageError(f"--alpha must be in (0, 1), got {args.alpha}")
    if not getattr(args, "remote", None):
        inv.attn_implementation = "eager"
    split = None if args.split == "none" else args.split
    return {"edges": edges, "split": split}


def check_layers(inv: Invocation) -> None:
    """The window fits in the model's decoder layers."""
    if inv.args.window > (inv.n_layers or 0):
        raise UsageError(
            f"--window {inv.args.window} is larger than the model's {inv.n_layers} decoder layers"
        )


def load_samples(inv: Invocation) -> list[Any]:
    """At least two samples (an interval needs two); ``--split`` an existing label unless
    ``agreement`` or ``none``; answers when ``--answer given``."""
    args = inv.args
    samples = inv.load_data(DEFAULT_QTYPES)
    if len(samples) < 2:
        raise UsageError(f"the flow study needs at least 2 samples, got {len(samples)}")
    if args.split not in ("agreement", "none"):
        check_label(samples, args.split, "--split")
    if args.answer == "given":
        missing = [s.id for s in samples if not s.answer]
        if missing:
            raise UsageError(
                f"--answer given: samples {missing[:5]} have no answer (use --answer greedy)"
            )
    return samples


def register(sub: Any) -> None:
    """Add ``flow`` to the ``interp`` command: the common options, the edges, the windows, the
    scored answer, the groups and the test level."""
    d = add_command(sub, "flow", __name__)
    d.add_argument(
        "--edges",
        default=DEFAULT_EDGES,
        help="comma-separated SOURCE>TARGET edges (position names: image, question, last, text, "
        "image:k, prompt offsets joined by +)",
    )
    d.add_argument("--window", type=int, default=1, help="layers per knockout window (k)")
    d.add_argument("--stride", type=int, default=1, help="layers between window starts")
    d.add_argument(
        "--answer",
        default="given",
        choices=["given", "greedy"],
        help="score the sample's answer or the model's greedy answer",
    )
    d.add_argument(
        "--split",
        default="agreement",
        help="groups: 'agreement' (D_VT / D_T: the answer changes without the image), a label "
        "name, or 'none'",
    )
    d.add_argument(
        "--alpha", type=float, default=0.05, help="family-wise level of the integration layer"
    )
    d.add_argument("--max-new-tokens", type=int, default=8)


__all__ = ["register"]
