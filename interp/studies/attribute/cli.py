"""``interp attribute`` — where in the image: occlusion maps of a model's answers.

    interp attribute --model demo --data demo --method occlusion --grid 4x4 --out results/

For each sample, every cell of a ``rows × cols`` grid over the image is hidden in turn (its image
tokens ablated, ``--hide ablate --mode zero|mean``, or replaced by a black image's, ``--hide
swap``) and the drop of the answer's log-probability is the cell's score (regions + 1
teacher-forced forwards per sample, batched, resumable from ``<out>/store``). The answer is the
sample's own (``--answers given``) or the model's greedy one (``--answers greedy``). Writes the
scores (``occlusion.csv``), a grid of maps and a few single maps over the images, and — where the
samples are demo-world scenes that name their object — the share of positive mass inside the
object's box against random boxes of the same size (``object_mass.csv``).

``--method gradient`` writes attribution patching instead (``gradient.csv``): per region the sum
over its image tokens of ∂ log p(answer)/∂h · (h − h_null) at residual index ``--layer``, h_null
the ``--source`` image's states (one forward + one backward per sample, plus the null forward).
``--method attention`` writes instead the attention mass of the last prompt position on each
region's image tokens, averaged over layers and heads (``attention.csv``; the model is loaded with
eager attention).

Families whose image tokens have no place in the image (InstructBLIP, Mllama) are refused before
the model loads.
"""

from __future__ import annotations

from typing import Any

from interp.command import Invocation, UsageError, add_command

HELP = "where in the image: occlusion, gradient and attention maps over image regions"
DESCRIPTION = __doc__
DEFAULT_QTYPES = ("color",)
METHODS = ("occlusion", "gradient", "attention")
REMOTE = True  # remote: region edits as writes, gradients and attention weights in plain blocks


def parse_grid(text: str) -> tuple[int, int]:
    """``"4x4"`` → ``(4, 4)``.

    Raises:
        UsageError: not ``<rows>x<cols>`` with both >= 1.
    """
    parts = text.lower().split("x")
    try:
        rows, cols = (int(p) for p in parts)
    except ValueError:
        raise UsageError(f"--grid takes <rows>x<cols>, e.g. 4x4, got {text!r}") from None
    if rows < 1 or cols < 1:
        raise UsageError(f"--grid needs rows and cols >= 1, got {text!r}")
    return rows, cols


def check_options(inv: Invocation) -> dict[str, Any]:
    """``--method`` is implemented, ``--grid`` is ``<rows>x<cols>``, ``--source`` an image
    condition (with ``--hide swap``)."""
    args = inv.args
    if args.method not in METHODS:
        raise UsageError(
            f"--method {args.method!r} is not available yet; available: {', '.join(METHODS)}"
        )
    plan: dict[str, Any] = {"grid": parse_grid(args.grid)}
    if args.method == "attention" and not getattr(args, "remote", False):
        inv.attn_implementation = "eager"  # eager returns its weights (on NDIF: recomputed)
    if args.hide == "swap":
        from interventions import SwapImage

        SwapImage(args.source)  # a ConditionError names a source without an image
    return plan


def check_layers(inv: Invocation) -> None:
    """The family has a token → region map, and with ``--method attention`` its image enters as
    tokens (from the configuration alone)."""
    from interp.adapters import adapter_for
    from interp.model import model_config
    from interp.regions import require_spatial_layout

    adapter = adapter_for(model_config(inv.args.model))
    require_spatial_layout(adapter, "attribution maps")
    layer = inv.args.layer
    if inv.args.method == "gradient" and not 0 <= layer <= (inv.n_layers or 0):
        raise UsageError(f"--layer {layer} is outside the residual indices 0..{inv.n_layers}")
    if inv.args.method == "attention" and adapter.fusion != "tokens":
        raise UsageError(f"--method attention: {adapter.name}'s image enters by cross-attention")


def load_samples(inv: Invocation) -> list[Any]:
    """Samples with an image (and an answer with ``--answers given``)."""
    samples = inv.load_data(DEFAULT_QTYPES)
    blind = [s.id for s in samples if s.image is None]
    if blind:
        raise UsageError(
            f"{len(blind)} sample(s) have no image (e.g. {blind[0]!r}); attribution maps need one"
        )
    if inv.args.answers == "given":
        missing = [s.id for s in samples if not s.answer]
        if missing:
            raise UsageError(
                f"{len(missing)} sample(s) have no answer (e.g. {missing[0]!r}); give answers or "
                "use --answers greedy"
            )
    return samples


def register(sub: Any) -> None:
    """Add ``attribute`` to the ``interp`` command: the method, the grid, how a region is hidden
    and which answer is attributed."""
    d = add_command(sub, "attribute", __name__)
    d.add_argument(
        "--method",
        default="occlusion",
        help="occlusion (exact, causal), gradient (attribution patching at --layer) or "
        "attention (the descriptive baseline; eager attention)",
    )
    d.add_argument(
        "--layer",
        type=int,
        default=0,
        help="with --method gradient: the residual index (0 = the decoder input)",
    )
    d.add_argument("--grid", default="4x4", help="<rows>x<cols> of the region grid")
    d.add_argument("--hide", default="ablate", choices=["ablate", "swap"])
    d.add_argument("--mode", default="zero", choices=["zero", "mean"], help="with --hide ablate")
    d.add_argument("--source", default="null:black", help="with --hide swap: the image condition")
    d.add_argument("--answers", default="given", choices=["given", "greedy"])
    d.add_argument("--plots", type=int, default=4, help="single-sample map figures to write")
    d.add_argument("--max-new-tokens", type=int, default=8)


__all__ = ["check_layers", "check_options", "load_samples", "parse_grid", "register"]
