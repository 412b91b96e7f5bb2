"""What ``interp conflict`` computes and writes once its checks have passed and the model is
loaded (:mod:`~interp.studies.conflict.cli` declares the command): the responses per configuration, evidence type and
order, the findings as differences with intervals (which source dominates, the perceptual /
propositional asymmetry, the order effect), the contrastive-decoding diagnostic, the bias-label
probe with its test against chance, their tables, figures and summary."""

from __future__ import annotations

import pandas as pd

from interp.command import Invocation
from interp.errors import EmptyInputError, ProbeError

from .analysis import ConflictResponses
from .figures import plot_bias, plot_positions
from .items import default_configurations
from .measure import conflict_responses, contrastive_decodings
from .probe import bias_probe


def report(inv: Invocation) -> str:
    """Run the study on ``inv.vlm``, write its outputs and return the summary text."""
    args, out, vlm, samples = inv.args, inv.out, inv.vlm, inv.samples
    assert out is not None and vlm is not None
    sources = inv.plan["sources"]
    kw = {"max_new_tokens": args.max_new_tokens, "sources": sources, **inv.run_options()}
    resp = conflict_responses(vlm, samples, **kw)
    full = next(iter(default_configurations(sources).items()))
    cd = conflict_responses(
        vlm,
        samples,
        configurations=dict([full]),
        decodings={
            k: v
            for k, v in contrastive_decodings(inv.plan["favour"], inv.plan["amateurs"]).items()
            if v is not None
        },
        **kw,
    )
    both = ConflictResponses(pd.concat([resp.frame, cd.frame], ignore_index=True), sources)
    out.csv(both.frame, "responses.csv")
    by_config = out.csv(resp.table("configuration"), "bias_by_configuration.csv", index=True)
    evidence = resp.evidence_rates()
    out.csv(evidence.to_frame(), "bias_by_evidence.csv")
    out.csv(resp.order_rates().to_frame(), "bias_by_order.csv")
    positions = out.csv(resp.position_effect(), "position_effect.csv")
    findings = out.csv(resp.effects(), "effects.csv")
    base = ConflictResponses(both.frame[both.frame["configuration"] == full[0]], sources)
    decoding = out.csv(base.table("decoding"), "decoding.csv", index=True)
    competence = out.csv(both.competence(), "competence.csv")
    names = [d for d in dict.fromkeys(cd.frame["decoding"])]
    effects = [base.contrast_effect(name) for name in names]
    effect = pd.concat(effects, ignore_index=True).drop_duplicates(["decoding", "measure"])
    out.csv(effect, "contrast_effect.csv")
    out.csv(base.decoding_effects(names), "decoding_effects.csv")
    out.figure(plot_bias(by_config, "all sources differ"), "bias.png")
    out.figure(evidence.plot("all sources differ, per evidence type"), "bias_by_evidence.png")
    out.figure(plot_positions(positions), "positions.png")
    lines = [f"model {args.model!r}, data {args.data!r}, {len(samples)} items", ""]
    lines += ["sources: " + ", ".join(f"{s.name} ({s.kind})" for s in sources), ""]
    lines += ["bias rates per evidence type, all sources differ:"]
    lines += [evidence.wide().round(3).to_string(), ""]
    lines += ["findings (difference [95 % interval]; reported when the interval excludes 0):"]
    lines += [_findings(findings), ""]
    lines += ["contrastive decoding (α = 0.5, β = 0.1):", decoding.round(3).to_string(), ""]
    lines += [effect.round(3).to_string(index=False), ""]
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
        chance = out.csv(probe.above_chance(), "probe_chance.csv", index_label="layer")
        hits = chance.index[chance["p_adjusted"] < 0.05]
        first = int(hits.min()) if len(hits) else None
        best = probe.probe.best_layer_
        top = float(probe.probe.scores_["balanced_accuracy_mean"].max())
        where = (
            f"above chance from layer {first}"
            if first is not None
            else "not above chance at any layer (one-sided permutation test of the held-out "
            "balanced accuracy, Bonferroni-corrected over the layers, level 0.05)"
        )
        lines += [
            "",
            f"bias label probe (last prompt token): {where}; its best balanced accuracy is "
            f"{top:.2f} at layer {best} (chance {probe.chance:.2f})",
        ]
    except (EmptyInputError, ProbeError) as err:  # too few items of some label for the folds
        lines += ["", f"probe skipped: {err}"]
    return "\n".join(lines)


def _findings(effects: pd.DataFrame) -> str:
    """One line per finding: ``form  audio  perceptual − propositional  -0.167 [-0.209,
    -0.130]  propositional``."""
    rows = [
        f"  {r.effect:<5}  {r.source:<10}  {r.contrast:<27}  {r.difference:+.3f} "
        f"[{r.low:+.3f}, {r.high:+.3f}]  {r.direction if r.reported else 'not reported'}"
        for r in effects.itertuples()
    ]
    return "\n".join(rows)
