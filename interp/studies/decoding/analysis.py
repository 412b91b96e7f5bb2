"""POPE's reading of the answers: yes/no, the metrics and the settings.

Pure functions on answers and samples (no model): :func:`yes_no` reads a free answer as POPE does,
:func:`pope_metrics` scores a run against the truth, :func:`pope_settings` splits the questions into
POPE's random / popular / adversarial settings, :func:`compare_methods` ranks the methods by accuracy
with paired bootstrap intervals of each difference (questions about one image resampled together). The names of the settings, the metrics and the
default methods live here too, so the command can name them without loading the model code.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from interp.errors import EmptyInputError

if TYPE_CHECKING:
    import pandas as pd

    from interp.samples import Sample

SETTINGS: tuple[str, ...] = ("random", "popular", "adversarial")
METRICS: tuple[str, ...] = ("accuracy", "precision", "recall", "f1", "yes_ratio")
DEFAULT_METHODS: tuple[str, ...] = ("greedy", "vcd", "icd", "m3id", "vdd", "pai")
# the labels plain decoding (the baseline) runs under: the name it was asked by (``greedy`` or
# ``plain``; ``none`` reads as ``plain``); outputs written before the name was kept say ``plain``
BASELINES: tuple[str, ...] = ("greedy", "plain")


def baseline(methods: Iterable[str]) -> str | None:
    """The label of plain decoding among ``methods`` (a run's method column or index), None
    without it."""
    return next((m for m in methods if m in BASELINES), None)


def yes_no(answer: str) -> str:
    """POPE's reading of a free answer: ``"no"`` if its words hold ``no`` or ``not`` (also
    ``n't``), else ``"yes"``."""
    words = re.findall(r"[a-z']+", str(answer).lower())
    return "no" if any(w in ("no", "not") or w.endswith("n't") for w in words) else "yes"


def pope_metrics(predicted: Sequence[str], truth: Sequence[str]) -> dict[str, float]:
    """Accuracy, precision, recall, F1 (positive class ``yes``) and the share of ``yes`` answers.

    ``predicted`` and ``truth`` hold ``"yes"`` / ``"no"``. Precision is NaN when nothing is
    predicted ``yes``; recall is NaN without a ``yes`` in ``truth``; F1 is 0 when precision and
    recall are both 0.

    Raises:
        EmptyInputError: no answers, or the two lists differ in length.
    """
    pred = np.asarray([p == "yes" for p in predicted])
    true = np.asarray([t == "yes" for t in truth])
    if pred.size == 0 or pred.shape != true.shape:
        raise EmptyInputError(
            f"need as many answers as truths, at least one (got {pred.size} and {true.size})"
        )
    tp = float(np.sum(pred & true))
    fp = float(np.sum(pred & ~true))
    fn = float(np.sum(~pred & true))
    precision = tp / (tp + fp) if tp + fp else float("nan")
    recall = tp / (tp + fn) if tp + fn else float("nan")
    if np.isnan(precision) or np.isnan(recall):
        f1 = float("nan")
    else:
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "accuracy": float(np.mean(pred == true)),
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "yes_ratio": float(np.mean(pred)),
        "n": int(pred.size),
    }


def pope_settings(samples: Sequence[Sample], label: str = "pope_negative") -> dict[str, list[int]]:
    """Row indices of each POPE setting: every positive question (answer ``yes``) plus the
    negatives whose ``label`` is the setting. Samples without the label anywhere form one setting
    ``"all"``.

    Raises:
        EmptyInputError: a sample's answer is not yes/no, or no sample is positive or negative.
    """
    truths = []
    for s in samples:
        answer = (s.answer or "").strip().lower()
        if answer not in ("yes", "no"):
            raise EmptyInputError(
                f"sample {s.id!r}: a POPE question's answer is 'yes' or 'no', got {s.answer!r}"
            )
        truths.append(answer)
    positives = [i for i, t in enumerate(truths) if t == "yes"]
    negatives = [i for i, t in enumerate(truths) if t == "no"]
    if not positives or not negatives:
        raise EmptyInputError(
            f"POPE scores need questions answered yes and no; got {len(positives)} yes and "
            f"{len(negatives)} no"
        )
    kinds = [samples[i].meta.get(label) for i in negatives]
    if all(k is None for k in kinds):
        return {"all": sorted(positives + negatives)}
    found = sorted({str(k) for k in kinds if k is not None}, key=_setting_order)
    return {
        kind: sorted(positives + [i for i, k in zip(negatives, kinds) if str(k) == kind])
        for kind in found
    }


def _setting_order(kind: str) -> tuple[int, str]:
    return (SETTINGS.index(kind) if kind in SETTINGS else len(SETTINGS), kind)


def compare_methods(
    correct: dict[str, Sequence[bool] | np.ndarray],
    clusters: Sequence[Any] | np.ndarray | None = None,
    *,
    n_boot: int = 2000,
    ci: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """The methods ranked by accuracy, each with paired bootstrap intervals of its difference
    from plain decoding and from the top method.

    ``correct[m][i]`` says whether method ``m`` answered question ``i`` right (the same
    questions, in the same order, for every method). Accuracy ``acc_m = (1/n) Σ_i c_mi``, with a
    bootstrap interval (:func:`probes.inference.clustered_mean`); the difference of ``m`` from
    ``b`` is ``acc_m − acc_b = (1/n) Σ_i (c_mi − c_bi)`` with a **paired** interval
    (:func:`probes.inference.paired_comparison`: a resample keeps both methods' answers to a
    question together). ``clusters`` (one label per question, e.g. its image): whole clusters are
    resampled, as the questions about one image are not independent; None resamples questions.
    Every interval uses the same ``seed`` (the same resamples of the questions).

    Returns:
        One row per method, highest accuracy first (ties in the order given): ``method``,
        ``accuracy`` with ``accuracy_low`` / ``accuracy_high``; ``vs_baseline`` (points of
        accuracy over plain decoding, a fraction) with ``vs_baseline_low`` / ``_high`` and
        ``verdict`` (``baseline``, ``higher``, ``lower`` or ``no difference`` where the interval
        holds 0); ``vs_top`` with its interval (``top`` on the first row, ``tied`` where the
        interval holds 0, ``lower`` else, in ``rank``); ``n`` questions and ``n_clusters``.
        Without plain decoding among the methods the ``vs_baseline`` columns are NaN.

    Raises:
        EmptyInputError: no method, or methods with different numbers of answers.
    """
    import pandas as pd  # here: the command reads this module's names before any heavy import

    from probes.inference import clustered_mean, paired_comparison

    if not correct:
        raise EmptyInputError("compare_methods needs at least one method's answers")
    arrays = {m: np.asarray(c, dtype=float).reshape(-1) for m, c in correct.items()}
    sizes = {len(a) for a in arrays.values()}
    if len(sizes) != 1:
        raise EmptyInputError(
            f"every method must answer the same questions; got {sorted(sizes)} answers"
        )
    kw: dict[str, Any] = {"n_boot": n_boot, "ci": ci, "seed": seed}
    order = sorted(arrays, key=lambda m: -arrays[m].mean())  # stable: ties keep their order
    top, base = order[0], baseline(arrays)
    rows = []
    for m in order:
        level = clustered_mean(arrays[m], clusters, **kw)
        row: dict[str, Any] = {
            "method": m,
            "accuracy": level.value,
            "accuracy_low": level.low,
            "accuracy_high": level.high,
        }
        if base is None:
            row.update(vs_baseline=np.nan, vs_baseline_low=np.nan, vs_baseline_high=np.nan)
            row["verdict"] = ""
        else:
            d = paired_comparison(arrays[m], arrays[base], clusters, **kw)
            row.update(vs_baseline=d.value, vs_baseline_low=d.low, vs_baseline_high=d.high)
            row["verdict"] = (
                "baseline"
                if m == base
                else ("no difference" if not d.conclusive else "higher" if d.value > 0 else "lower")
            )
        t = paired_comparison(arrays[m], arrays[top], clusters, **kw)
        row.update(vs_top=t.value, vs_top_low=t.low, vs_top_high=t.high)
        row["rank"] = "top" if m == top else ("lower" if t.conclusive else "tied")
        row.update(n=level.n, n_clusters=level.n_clusters)
        rows.append(row)
    return pd.DataFrame(rows)


__all__ = [
    "DEFAULT_METHODS",
    "METRICS",
    "SETTINGS",
    "compare_methods",
    "pope_metrics",
    "pope_settings",
    "yes_no",
]
