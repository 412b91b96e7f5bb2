"""What ``interp drives`` computes and writes once its checks have passed and the model is
loaded (:mod:`~interp.studies.drives.cli` declares the command): the drives, source removal, the recovery check, the
trajectory clusters, the S_PV validation on labelled data, their tables, figures and summary."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from interp.command import Invocation
from interp.datasets import generation_label
from interp.errors import DriveError
from interp.samples import Sample

from .analysis import cluster_drives, prefix_visual_imbalance
from .figures import (
    plot_clusters,
    plot_imbalance,
    plot_recovery,
    plot_source_removal,
    plot_trajectories,
)
from .headlines import drive_headlines, imbalance_headlines
from .measure import causal_drives
from .recovery import recovery_error
from .removal import source_removal


def _labels(samples: Sequence[Sample], texts: Sequence[str], key: str | None) -> list[Any] | None:
    """Prior-driven / grounded labels: a ``meta`` key; for VLMBias samples the label of the
    generated answer against ``ground_truth`` / ``expected_bias``
    (:func:`interp.datasets.benchmarks.drives_sets.vlmbias_label`); for demo-world samples the
    label of the generated answer (:func:`interp.datasets.generation_label`)."""
    if key is not None:
        return [s.meta.get(key) for s in samples]
    if samples and all(s.meta.get("benchmark") == "vlmbias" for s in samples):
        from interp.datasets.benchmarks.drives_sets import vlmbias_label

        return [vlmbias_label(t, s) for t, s in zip(texts, samples)]
    if all("qtype" in s.meta and "counterfactual" in s.meta for s in samples):
        return [generation_label(t, s.meta) for t, s in zip(texts, samples)]
    return None


def report(inv: Invocation) -> str:
    """Run the study on ``inv.vlm``, write its outputs and return the summary text."""
    args, out, vlm, samples = inv.args, inv.out, inv.vlm, inv.samples
    assert out is not None and vlm is not None
    common = inv.run_options()
    nulls = {
        "null_image": args.null_image,
        "null_question": args.null_question,
        "visual": args.visual,
    }
    result = causal_drives(
        vlm,
        samples,
        k=args.k,
        seed=args.support_seed,
        max_new_tokens=args.max_new_tokens,
        **nulls,
        **common,
    )
    removal = source_removal(vlm, samples, targets=result.token_ids, **nulls, **common)
    lines = [
        f"model {args.model!r}, data {args.data!r}: {len(samples)} generations, K = {result.k} "
        f"support contexts, {result.forwards_per_sample} teacher-forced forwards per sample",
        f"V = the {args.visual}, null {args.visual} {result.null_image!r}, null question {result.null_question or '(empty)'!r}",
        "",
        "headline (each with its n and 95% interval):",
        drive_headlines(samples, result, removal).text,
        "",
        "mean drives over relative decoding position (bits):",
        result.mean_trajectories().round(3).to_string(index=False),
        "",
        "source removal (Table 3):",
        removal.to_frame().round(4).to_string(index=False),
    ]
    out.csv(result.to_frame(), "tokens.csv")
    per = result.sample_frame()
    out.csv(removal.to_frame(), "source_removal.csv")
    out.figure(plot_trajectories(result), "trajectories.png")
    out.figure(plot_source_removal(removal), "source_removal.png")
    if args.m > 0:
        rec = recovery_error(
            vlm,
            samples,
            result,
            m=args.m,
            seed=args.support_seed + 1,
            visual=args.visual,
            **common,
        )
        out.csv(rec.to_frame(), "recovery.csv")
        out.figure(plot_recovery(rec), "recovery.png")
        lines += [
            "",
            "randomized-intervention recovery (Eq. 15):",
            rec.to_frame().round(4).to_string(index=False),
        ]
    clusters = cluster_drives(result, k=min(args.clusters, len(result)), seed=args.support_seed)
    out.csv(clusters.to_frame(), "clusters.csv")
    per["cluster"] = clusters.labels + 1
    out.figure(plot_clusters(clusters), "clusters.png")
    lines += [
        "",
        f"k-means clusters of the trajectories (k = {clusters.k}):",
        clusters.to_frame().round(3).to_string(index=False),
    ]
    labels = _labels(samples, result.answers, args.labels)
    if labels is not None:
        per["label"] = labels
        try:
            imb = prefix_visual_imbalance(result, labels, seed=args.support_seed)
            spv = imbalance_headlines(samples, imb)
        except (DriveError, ValueError) as err:
            lines += ["", f"S_PV validation skipped: {err}"]
        else:
            out.csv(imb.to_frame(), "imbalance.csv")
            out.figure(plot_imbalance(imb), "imbalance.png")
            lines += [
                "",
                "S_PV validation, prior-driven vs grounded (Table 4):",
                spv.text,
                imb.table.round(3).to_string(index=False),
            ]
    out.csv(per, "samples.csv")
    return "\n".join(lines)
