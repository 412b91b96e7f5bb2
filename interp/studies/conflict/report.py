"""What ``interp conflict`` computes and writes once its checks have passed and the model is
loaded (:mod:`.cli` declares the command): the responses per configuration and order, the
contrastive-decoding diagnostic, the bias-label probe, their tables, figures and summary."""

from __future__ import annotations

import pandas as pd

from interp.command import Invocation
from interp.errors import EmptyInputError, ProbeError

from .analysis import ConflictResponses
from .figures import plot_bias, plot_positions
from .measure import conflict_responses, favouring
from .probe import bias_probe


def report(inv: Invocation) -> str:
    """Run the study on ``inv.vlm``, write its outputs and return the summary text."""
    args, out, vlm, samples = inv.args, inv.out, inv.vlm, inv.samples
    assert out is not None and vlm is not None
    kw = {"max_new_tokens": args.max_new_tokens, **inv.run_options()}
    resp = conflict_responses(vlm, samples, **kw)
    cd = conflict_responses(
        vlm,
        samples,
        configurations={"PercI+PropI": "full"},
        decodings={k: v for k, v in favouring(inv.plan["favour"]).items() if v is not None},
        **kw,
    )
    both = ConflictResponses(pd.concat([resp.frame, cd.frame], ignore_index=True))
    out.csv(both.frame, "responses.csv")
    by_config = out.csv(resp.table("configuration"), "bias_by_configuration.csv", index=True)
    out.csv(resp.bias_rates(("configuration", "order")), "bias_by_order.csv")
    positions = out.csv(resp.position_effect(), "position_effect.csv")
    base = both.frame[both.frame["configuration"] == "PercI+PropI"]
    decoding = out.csv(ConflictResponses(base).table("decoding"), "decoding.csv", index=True)
    competence = out.csv(both.competence(), "competence.csv")
    out.figure(plot_bias(by_config, "all sources differ"), "bias.png")
    out.figure(plot_positions(positions), "positions.png")
    lines = [f"model {args.model!r}, data {args.data!r}, {len(samples)} items", ""]
    lines += ["bias rates, all sources differ:", by_config.round(3).to_string(), ""]
    lines += ["contrastive decoding (α = 0.5, β = 0.1):", decoding.round(3).to_string(), ""]
    lines += ["accuracy where all sources agree:", competence.round(3).to_string(index=False)]
    try:
        probe = bias_probe(
            vlm,
            samples,
            resp,
            cv=args.cv,
            batch_size=args.batch_size,
            progress_bar=not args.no_progress,
        )
        out.csv(probe.to_frame(), "probe_layers.csv", index_label="layer")
        out.figure(probe.plot(), "probe.png")
        first = probe.decodable_from()
        best = probe.probe.best_layer_
        top = float(probe.probe.scores_["balanced_accuracy_mean"].max())
        where = (
            f"above chance from layer {first}"
            if first is not None
            else "not above chance at any layer (one-sided t-test over the folds, "
            "Bonferroni-corrected over the layers, level 0.05)"
        )
        lines += [
            "",
            f"bias label probe (last prompt token): {where}; its best balanced accuracy is "
            f"{top:.2f} at layer {best} (chance {probe.chance:.2f})",
        ]
    except (EmptyInputError, ProbeError) as err:  # too few items of some label for the folds
        lines += ["", f"probe skipped: {err}"]
    return "\n".join(lines)
