"""Statistics and probes over traced tensors (numpy or torch in, numpy out).

- :mod:`probes.distances`: row-wise distances between stacks of states (cosine, L2, KL, JS).
- :mod:`probes.stats`: Spearman, bootstrap CIs, Cohen's d, Cliff's delta, AUROC, AUPRC.
- :mod:`probes.vip`: the per-layer two-sample test and the Visual Integration Point.
- :mod:`probes.tvi`: Total Visual Integration and its variants.
- :mod:`probes.split`: the agreement split D_VT / D_T and answer correctness.
"""

from .distances import (
    DISTANCES,
    cosine_distance,
    get_distance,
    js_divergence,
    kl_divergence,
    l2_distance,
)
from .split import agreement_split, is_correct, normalize_answer
from .stats import (
    ConstantInputWarning,
    CorrelationResult,
    Estimate,
    auprc,
    auroc,
    bootstrap_ci,
    cliffs_delta,
    cohens_d,
    estimate,
    mean_difference,
    spearman,
)
from .tvi import layer_std, pre_vip_tvi, tvi, weighted_tvi
from .vip import (
    NoVIPWarning,
    TwoSampleResult,
    VIPDetector,
    automatic_vip,
    two_sample_test,
    vip_thresholds,
)

__all__ = [
    "DISTANCES",
    "ConstantInputWarning",
    "CorrelationResult",
    "Estimate",
    "NoVIPWarning",
    "TwoSampleResult",
    "VIPDetector",
    "agreement_split",
    "auprc",
    "auroc",
    "automatic_vip",
    "bootstrap_ci",
    "cliffs_delta",
    "cohens_d",
    "cosine_distance",
    "estimate",
    "get_distance",
    "is_correct",
    "js_divergence",
    "kl_divergence",
    "l2_distance",
    "layer_std",
    "mean_difference",
    "normalize_answer",
    "pre_vip_tvi",
    "spearman",
    "tvi",
    "two_sample_test",
    "vip_thresholds",
    "weighted_tvi",
]
