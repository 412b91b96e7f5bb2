"""Pure functions on the measured data: the Text-Only majority vote, the layerwise cosine, the
answer perplexity, means with bootstrap intervals, and Table 2 / Table 1 from a predictions frame
(accuracy of flagging failures, coverage and risk of selective prediction)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from jaxtyping import Float
from sklearn.metrics import balanced_accuracy_score

from interp.conditions import stable_seed
from interp.errors import EmptyInputError, RecallError
from probes.distances import cosine_distance, to_numpy
from probes.selective import RiskCoverage, coverage_risk, risk_coverage
from probes.stats import auroc, bootstrap_ci, mean_ci
from probes.text import normalize_text


def majority_vote(
    answers: Sequence[str], key: str, seed: int = 0, normalize: Any = normalize_text
) -> str:
    """The modal answer of ``answers`` (Appendix B: "the final output ... is the result of a
    majority vote ... Ties are broken randomly").

    Answers are compared after ``normalize``; among the normalised answers with the highest count
    one is drawn uniformly by a generator seeded with ``(seed, key)`` — so the draw depends on the
    item (``key``) and the seed, not on the order of ``answers``. Returns the first raw answer
    whose normalisation won.

    Raises:
        EmptyInputError: no answers.
    """
    if not answers:
        raise EmptyInputError(f"no answers to vote on for {key!r}")
    norm = [normalize(a) for a in answers]
    counts: dict[str, int] = {}
    for n in norm:
        counts[n] = counts.get(n, 0) + 1
    top = max(counts.values())
    tied = sorted(n for n, c in counts.items() if c == top)
    rng = np.random.default_rng(stable_seed(f"{seed}:{key}"))
    winner = tied[int(rng.integers(len(tied)))] if len(tied) > 1 else tied[0]
    return answers[norm.index(winner)]


def layerwise_cosine(
    a: Float[Any, "n layer d"], b: Float[Any, "n layer d"]
) -> Float[np.ndarray, "n layer"]:
    """Cosine similarity ``cos(h_i^(l), h~_i^(l)) = <h, h~> / (|h| |h~|)`` of two runs' states,
    per item and layer (Sec. 6.1, Fig. 4 bottom: Visual vs Full Info); 1 exactly where the
    states are equal (:func:`probes.distances.cosine_distance`)."""
    x, y = to_numpy(a), to_numpy(b)
    if x.ndim != 3 or x.shape != y.shape:
        raise RecallError(
            f"layerwise_cosine takes two state arrays [N, L+1, d] of one shape; got {x.shape} and "
            f"{y.shape}"
        )
    return 1.0 - cosine_distance(x, y)


def answer_perplexity_of(logprobs: Sequence[float], n_answer: int) -> float:
    """Per-token perplexity of a generated answer, ``exp(-(1/T) Σ_t log p(a_t | a_<t, x))`` over
    its T answer tokens (the end-of-sequence token excluded); an empty answer (the end token
    first) gets ``1 / p(end token)``. This is the paper's baseline signal (Sec. 6.2: "the
    per-token-perplexity of the output")."""
    lp = np.asarray(logprobs[:n_answer] if n_answer else logprobs[:1], dtype=np.float64)
    if lp.size == 0:
        raise EmptyInputError("no token log-probabilities to take a perplexity of")
    return float(np.exp(-lp.mean()))


def _mean_ci(x: np.ndarray, ci: float, n_boot: int, seed: int) -> dict[str, Any]:
    """Mean of x with a percentile-bootstrap interval (:func:`probes.bootstrap.mean_ci`: NaN for no
    values, NaN bounds for one, a collapsed interval for constant values), as a table row."""
    e = mean_ci(x, ci=ci, n_boot=n_boot, seed=seed)
    return {"value": e.value, "low": e.low, "high": e.high, "n": len(x)}


METHOD_SCORES = {
    "majority": None,
    "perplexity": "conf_perplexity",
    "probe": "p_probe",
    "ensemble": "p_ensemble",
}


def method_table(
    predictions: pd.DataFrame, *, ci: float = 0.95, n_boot: int = 1000, seed: int = 0
) -> pd.DataFrame:
    """Table 2 from a predictions frame (columns ``correct`` and ``answer_<method>`` /
    ``<score>`` of each method): per method the accuracy of predicting correct vs wrong with a
    bootstrap interval, the balanced accuracy, and the AUROC of its continuous score with a
    class-stratified bootstrap interval (NaN for the majority baseline, which has none)."""
    y = predictions["correct"].to_numpy(dtype=bool)
    rows = []
    for method, score in METHOD_SCORES.items():
        pred = predictions[f"answer_{method}"].to_numpy(dtype=bool)
        acc = _mean_ci((pred == y).astype(np.float64), ci, n_boot, seed)
        row = {
            "method": method,
            "accuracy": acc["value"],
            "low": acc["low"],
            "high": acc["high"],
            "balanced_accuracy": float(balanced_accuracy_score(y, pred)),
            "auroc": math.nan,
            "auroc_low": math.nan,
            "auroc_high": math.nan,
            "n": len(y),
        }
        if score is not None and 0 < y.sum() < len(y):
            a = auroc(predictions[score].to_numpy(dtype=np.float64), y, ci=ci, n_boot=n_boot)
            row.update(auroc=a.value, auroc_low=a.low, auroc_high=a.high)
        rows.append(row)
    return pd.DataFrame(rows)


def selective_frame(
    predictions: pd.DataFrame, *, ci: float = 0.95, n_boot: int = 1000, seed: int = 0
) -> pd.DataFrame:
    """Table 1 from a predictions frame: per method (perplexity, probe, ensemble, and answering
    everything) the coverage ``|A| / N`` and risk ``|A ∩ wrong| / |A|`` of its answer/abstain
    decisions (Sec. 6.2), each with a bootstrap interval (items resampled), and the AURC of its
    confidence score (:func:`probes.selective.risk_coverage`)."""
    y = predictions["correct"].to_numpy(dtype=bool)
    rows = []
    for method in ("perplexity", "probe", "ensemble", "all"):
        answered = (
            np.ones(len(y), dtype=bool)
            if method == "all"
            else predictions[f"answer_{method}"].to_numpy(dtype=bool)
        )
        res = coverage_risk(answered, y)
        row = {"method": method, **vars(res)}
        for name, stat in (
            ("coverage", lambda a, c: float(a.mean())),
            ("risk", lambda a, c: float((a & ~c).sum() / a.sum()) if a.any() else math.nan),
        ):
            try:
                lo, hi = bootstrap_ci(stat, answered, y, n_boot=n_boot, ci=ci, seed=seed)
            except Exception:  # a statistic undefined in most resamples (nothing answered)
                lo, hi = math.nan, math.nan
            row[f"{name}_low"], row[f"{name}_high"] = lo, hi
        score = METHOD_SCORES.get(method)
        row["aurc"] = (
            risk_coverage(predictions[score].to_numpy(dtype=np.float64), y).aurc
            if score is not None
            else math.nan
        )
        rows.append(row)
    cols = ["method", "coverage", "coverage_low", "coverage_high", "risk", "risk_low"]
    cols += ["risk_high", "n_answered", "n_errors", "n", "aurc"]
    return pd.DataFrame(rows)[cols]


def risk_curves(predictions: pd.DataFrame) -> dict[str, RiskCoverage]:
    """The risk-coverage curve of each method's confidence score."""
    y = predictions["correct"].to_numpy(dtype=bool)
    return {
        method: risk_coverage(predictions[score].to_numpy(dtype=np.float64), y)
        for method, score in METHOD_SCORES.items()
        if score is not None
    }
