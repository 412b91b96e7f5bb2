"""``interp drives`` — the temporal causal drives of a model's greedy answers on a dataset.

    interp drives --model demo --data demo --out results/

writes ``tokens.csv``, ``samples.csv``, ``source_removal.csv``, ``recovery.csv``, ``clusters.csv``,
``imbalance.csv`` (labelled data), their figures, ``summary.txt`` and the resumable ``store/`` into
``--out``. The command's ``--help`` shows the study's description (the package docstring).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from interp.cli import (
    DEMO_HELP,
    UsageError,
    add_common_arguments,
    check_common_arguments,
    check_label,
    check_model,
    check_output_dir,
    load_data,
    write_summary,
)
from interp.errors import DriveError, SupportError
from interp.samples import Sample

from . import __doc__ as STUDY_DOC
from .contexts import (
    DEFAULT_QTYPES,
    NEUTRAL_PROMPT,
    NULL_IMAGES,
    _check_images,
    _null_image_name,
    _question_part,
)


def _validate(args: argparse.Namespace) -> tuple[list[Sample], Path]:
    """Everything checked before the model is loaded, cheapest first: the common options, ``--k``
    >= 1, ``--m`` >= 0, ``--max-new-tokens`` >= 1, ``--null-image``, ``--null-question``,
    ``--clusters`` >= 1, ``--out`` is (or can become) a writable folder, the model's
    configuration, the data (every image opened, every sample with an image), K and M against the
    number of samples, and ``--labels``. The output folder is created last."""
    check_common_arguments(args, one_process="interp drives")
    if args.k < 1:
        raise UsageError(f"--k must be >= 1 (the support size K), got {args.k}")
    if args.m < 0:
        raise UsageError(
            f"--m must be >= 0 (held-out contexts; 0 skips the recovery), got {args.m}"
        )
    if args.max_new_tokens < 1:
        raise UsageError(f"--max-new-tokens must be >= 1, got {args.max_new_tokens}")
    if args.clusters < 1:
        raise UsageError(f"--clusters must be >= 1, got {args.clusters}")
    _null_image_name(args.null_image)
    _question_part(args.null_question)
    check_output_dir(args.out, create=False)
    check_model(args.model)
    samples = load_data(
        args.data, args.n, args.seed, default_qtypes=DEFAULT_QTYPES, columns=args.columns
    )
    _check_images(samples)
    if args.k > len(samples):
        raise SupportError(
            f"--k {args.k} is larger than the {len(samples)} samples the support is drawn from; "
            "lower --k or raise --n"
        )
    if args.m > len(samples) - args.k:
        raise SupportError(
            f"--m {args.m} held-out contexts asked, but only {len(samples) - args.k} samples lie "
            f"outside the support of K={args.k}; lower --m (0 skips the recovery) or raise --n"
        )
    if args.clusters > len(samples):
        raise UsageError(f"--clusters {args.clusters} is more than the {len(samples)} samples")
    if args.labels is not None:
        check_label(samples, args.labels, "--labels")
    out = check_output_dir(args.out)
    return samples, out


def _labels(samples: Sequence[Sample], texts: Sequence[str], key: str | None) -> list[Any] | None:
    """Prior-driven / grounded labels: a ``meta`` key, or for demo-world samples the label of the
    generated answer (:func:`interp.datasets.generation_label`)."""
    if key is not None:
        return [s.meta.get(key) for s in samples]
    if all("qtype" in s.meta and "counterfactual" in s.meta for s in samples):
        from interp.datasets import generation_label

        return [generation_label(t, s.meta) for t, s in zip(texts, samples)]
    return None


def _drives_command(args: argparse.Namespace) -> int:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from interp.model import load

    from .analysis import cluster_drives, prefix_visual_imbalance
    from .figures import (
        plot_clusters,
        plot_imbalance,
        plot_recovery,
        plot_source_removal,
        plot_trajectories,
    )
    from .measure import causal_drives
    from .recovery import recovery_error
    from .removal import source_removal

    samples, out = _validate(args)
    vlm = load(args.model)
    print(f"{vlm}\n{len(samples)} samples from {args.data!r}", flush=True)
    common = {
        "batch_size": args.batch_size,
        "store": out / "store",
        "overwrite": args.overwrite,
        "progress_bar": not args.no_progress,
    }
    result = causal_drives(
        vlm,
        samples,
        k=args.k,
        null_image=args.null_image,
        null_question=args.null_question,
        seed=args.support_seed,
        max_new_tokens=args.max_new_tokens,
        **common,
    )
    removal = source_removal(
        vlm,
        samples,
        targets=result.token_ids,
        null_image=args.null_image,
        null_question=args.null_question,
        **common,
    )
    lines = [
        f"model {args.model!r}, data {args.data!r}: {len(samples)} generations, K = {result.k} "
        f"support contexts, {result.forwards_per_sample} teacher-forced forwards per sample",
        f"null image {result.null_image!r}, null question {result.null_question or '(empty)'!r}",
        "",
        "mean drives over relative decoding position (bits):",
        result.mean_trajectories().round(3).to_string(index=False),
        "",
        "source removal (Table 3):",
        removal.to_frame().round(4).to_string(index=False),
    ]
    result.to_frame().to_csv(out / "tokens.csv", index=False)
    per = result.sample_frame()
    removal.to_frame().to_csv(out / "source_removal.csv", index=False)
    plot_trajectories(result).savefig(out / "trajectories.png", dpi=130)
    plot_source_removal(removal).savefig(out / "source_removal.png", dpi=130)
    if args.m > 0:
        rec = recovery_error(vlm, samples, result, m=args.m, seed=args.support_seed + 1, **common)
        rec.to_frame().to_csv(out / "recovery.csv", index=False)
        plot_recovery(rec).savefig(out / "recovery.png", dpi=130)
        lines += [
            "",
            "randomized-intervention recovery (Eq. 15):",
            rec.to_frame().round(4).to_string(index=False),
        ]
    clusters = cluster_drives(result, k=min(args.clusters, len(result)), seed=args.support_seed)
    clusters.to_frame().to_csv(out / "clusters.csv", index=False)
    per["cluster"] = clusters.labels + 1
    plot_clusters(clusters).savefig(out / "clusters.png", dpi=130)
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
        except (DriveError, ValueError) as err:
            lines += ["", f"S_PV validation skipped: {err}"]
        else:
            imb.to_frame().to_csv(out / "imbalance.csv", index=False)
            plot_imbalance(imb).savefig(out / "imbalance.png", dpi=130)
            lines += [
                "",
                "S_PV validation, prior-driven vs grounded (Table 4):",
                imb.table.round(3).to_string(index=False),
            ]
    per.to_csv(out / "samples.csv", index=False)
    plt.close("all")
    text = "\n".join(lines)
    write_summary(out, text)
    return 0


def register(sub: Any) -> None:
    """Add ``drives`` to the ``interp`` command."""
    d = sub.add_parser(
        "drives",
        help="temporal causal drives (QCD, VCD, PCD) of each generated token",
        description=STUDY_DOC,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common_arguments(d, data_help=DEMO_HELP + " (default question type for demo: describe)")
    d.add_argument("--k", type=int, default=20, help="support size K (default 20)")
    d.add_argument(
        "--m",
        type=int,
        default=20,
        help="held-out contexts of the randomized-intervention recovery (the paper: 100; 0 skips)",
    )
    d.add_argument("--support-seed", type=int, default=0, help="seed of the support draw")
    d.add_argument("--null-image", default="blind", choices=list(NULL_IMAGES) + ["none"])
    d.add_argument(
        "--null-question",
        default="",
        help=f"Q = ∅: '' (empty) or a prompt such as {NEUTRAL_PROMPT!r}",
    )
    d.add_argument("--clusters", type=int, default=3, help="k of the trajectory k-means")
    d.add_argument(
        "--labels",
        default=None,
        help="meta label with prior_driven / grounded values for the S_PV validation (demo data: "
        "labelled from the generated answers)",
    )
    d.add_argument("--max-new-tokens", type=int, default=24)
    d.set_defaults(func=_drives_command)


__all__ = [
    "register",
]
