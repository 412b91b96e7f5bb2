"""Statistics and probes over traced tensors (numpy or torch in, numpy out).

- :mod:`probes.distances`: row-wise distances between stacks of states (cosine, L2, KL, JS).
- :mod:`probes.bootstrap`: percentile-bootstrap intervals (rows, strata, blocks) and means with
  one small-sample rule.
- :mod:`probes.stats`: Spearman, Cohen's d, Cliff's delta, AUROC, AUPRC (with bootstrap CIs).
- :mod:`probes.inference`: paired comparisons and means with intervals at the level of the
  independent unit (items or whole clusters resampled).
- :mod:`probes.proportions`: Wilson intervals and Newcombe's interval of a difference of proportions.
- :mod:`probes.vip`: the paper's per-layer two-sample test and the Visual Integration Point (rules
  by name); :mod:`probes.vip_clustered`: the per-layer gap with a cluster-bootstrap interval and
  p-values corrected over the layers (the default for new claims).
- :mod:`probes.multiple`: multiple-comparison corrections (Holm, Benjamini–Hochberg).
- :mod:`probes.tvi`: Total Visual Integration and its variants.
- :mod:`probes.split`: the agreement split D_VT / D_T and answer correctness.
- :mod:`probes.layerwise`: cross-validated linear probes at every layer (:class:`LayerwiseProbe`).
- :mod:`probes.selective`: selective prediction — coverage and risk, the risk-coverage curve and
  AURC, the perplexity-threshold and majority baselines, calibration and the probe ensemble.
- :mod:`probes.text`: answer metrics — exact match, two-way inclusion, BLEU (via sacrebleu).
- :mod:`probes.trajectories`: per-token trajectories in relative-position bins, standardisation and
  k-means of the binned profiles.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .distances import (
    DISTANCES,
    cosine_distance,
    get_distance,
    js_divergence,
    kl_divergence,
    l2_distance,
)
from .split import agreement_split, is_correct, normalize_answer
from .tvi import layer_std, pre_vip_tvi, tvi, weighted_tvi

# The statistics, the VIP detector, the probes and the text metrics load on first use (PEP 562),
# so importing the package (e.g. for probes.errors) does not pull scipy.stats, scikit-learn or
# sacrebleu in.
_LAZY: dict[str, str] = {
    "ConstantInputWarning": "errors",
    "CorrelationResult": "stats",
    "EnsembleConfidence": "selective",
    "Estimate": "bootstrap",
    "KMeansResult": "trajectories",
    "LayerwiseProbe": "layerwise",
    "LogisticCalibrator": "selective",
    "MajorityBaseline": "selective",
    "NoVIPWarning": "vip",
    "PerplexityThreshold": "selective",
    "RiskCoverage": "selective",
    "VIP_RULES": "vip",
    "SelectiveResult": "selective",
    "TwoSampleResult": "vip",
    "VIPDetector": "vip",
    "answer_perplexity": "selective",
    "auprc": "stats",
    "auroc": "stats",
    "automatic_vip": "vip",
    "bin_weights": "trajectories",
    "bleu": "text",
    "block_bootstrap": "bootstrap",
    "clustered_spearman": "stats",
    "ClusteredCorrelation": "stats",
    "bootstrap_ci": "bootstrap",
    "cliffs_delta": "stats",
    "cohens_d": "stats",
    "mean_ci": "bootstrap",
    "paired_difference": "bootstrap",
    "Comparison": "inference",
    "clustered_mean": "inference",
    "clustered_auroc": "inference",
    "paired_comparison": "inference",
    "pearson": "stats",
    "wilson": "proportions",
    "newcombe": "proportions",
    "Difference": "proportions",
    "corpus_bleu": "text",
    "coverage_risk": "selective",
    "default_probe": "layerwise",
    "ensemble_scores": "selective",
    "estimate": "bootstrap",
    "exact_match": "text",
    "inclusion_match": "text",
    "kmeans": "trajectories",
    "mean_difference": "stats",
    "normalize_text": "text",
    "relative_bins": "trajectories",
    "risk_coverage": "selective",
    "score_answers": "text",
    "selective_table": "selective",
    "spearman": "stats",
    "standardize": "trajectories",
    "two_sample_test": "vip",
    "ClusteredTwoSampleResult": "vip_clustered",
    "clustered_two_sample_test": "vip_clustered",
    "holm": "multiple",
    "benjamini_hochberg": "multiple",
    "vip_thresholds": "vip",
    "why_no_vip": "vip",
}

if TYPE_CHECKING:
    from .bootstrap import (
        Estimate,
        block_bootstrap,
        bootstrap_ci,
        estimate,
        mean_ci,
        paired_difference,
    )
    from .errors import ConstantInputWarning
    from .inference import Comparison, clustered_auroc, clustered_mean, paired_comparison
    from .layerwise import LayerwiseProbe, default_probe
    from .multiple import benjamini_hochberg, holm
    from .proportions import Difference, newcombe, wilson
    from .selective import (
        EnsembleConfidence,
        LogisticCalibrator,
        MajorityBaseline,
        PerplexityThreshold,
        RiskCoverage,
        SelectiveResult,
        answer_perplexity,
        coverage_risk,
        ensemble_scores,
        risk_coverage,
        selective_table,
    )
    from .stats import (
        ClusteredCorrelation,
        CorrelationResult,
        auprc,
        auroc,
        cliffs_delta,
        clustered_spearman,
        cohens_d,
        mean_difference,
        pearson,
        spearman,
    )
    from .text import (
        bleu,
        corpus_bleu,
        exact_match,
        inclusion_match,
        normalize_text,
        score_answers,
    )
    from .trajectories import KMeansResult, bin_weights, kmeans, relative_bins, standardize
    from .vip import RULES as VIP_RULES
    from .vip import (
        NoVIPWarning,
        TwoSampleResult,
        VIPDetector,
        automatic_vip,
        two_sample_test,
        vip_thresholds,
        why_no_vip,
    )
    from .vip_clustered import ClusteredTwoSampleResult, clustered_two_sample_test


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'probes' has no attribute {name!r}")
    source = "RULES" if name == "VIP_RULES" else name
    value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), source)
    globals()[name] = value
    return value


__all__ = [
    "DISTANCES",
    "ConstantInputWarning",
    "Difference",
    "CorrelationResult",
    "EnsembleConfidence",
    "Estimate",
    "KMeansResult",
    "LayerwiseProbe",
    "LogisticCalibrator",
    "MajorityBaseline",
    "NoVIPWarning",
    "PerplexityThreshold",
    "RiskCoverage",
    "SelectiveResult",
    "TwoSampleResult",
    "ClusteredTwoSampleResult",
    "VIPDetector",
    "agreement_split",
    "answer_perplexity",
    "auprc",
    "auroc",
    "automatic_vip",
    "bin_weights",
    "bleu",
    "block_bootstrap",
    "clustered_spearman",
    "clustered_two_sample_test",
    "ClusteredCorrelation",
    "benjamini_hochberg",
    "holm",
    "Comparison",
    "clustered_auroc",
    "clustered_mean",
    "paired_comparison",
    "bootstrap_ci",
    "cliffs_delta",
    "cohens_d",
    "corpus_bleu",
    "cosine_distance",
    "coverage_risk",
    "default_probe",
    "ensemble_scores",
    "estimate",
    "exact_match",
    "get_distance",
    "inclusion_match",
    "is_correct",
    "js_divergence",
    "kmeans",
    "kl_divergence",
    "l2_distance",
    "layer_std",
    "mean_ci",
    "mean_difference",
    "newcombe",
    "normalize_answer",
    "normalize_text",
    "paired_difference",
    "pearson",
    "pre_vip_tvi",
    "relative_bins",
    "risk_coverage",
    "score_answers",
    "selective_table",
    "spearman",
    "standardize",
    "tvi",
    "two_sample_test",
    "vip_thresholds",
    "VIP_RULES",
    "weighted_tvi",
    "why_no_vip",
    "wilson",
]
