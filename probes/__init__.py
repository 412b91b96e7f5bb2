"""Statistics and probes over traced tensors (numpy or torch in, numpy out).

- :mod:`probes.distances`: row-wise distances between stacks of states (cosine, L2, KL, JS).
- :mod:`probes.stats`: Spearman, bootstrap CIs, Cohen's d, Cliff's delta, AUROC, AUPRC.
- :mod:`probes.vip`: the per-layer two-sample test and the Visual Integration Point.
- :mod:`probes.tvi`: Total Visual Integration and its variants.
- :mod:`probes.split`: the agreement split D_VT / D_T and answer correctness.
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

# The statistics and the VIP detector load on first use (PEP 562), so importing the package (e.g.
# for probes.errors) does not pull scipy.stats and scikit-learn in.
_LAZY: dict[str, str] = {
    "ConstantInputWarning": "stats",
    "CorrelationResult": "stats",
    "Estimate": "stats",
    "NoVIPWarning": "vip",
    "TwoSampleResult": "vip",
    "VIPDetector": "vip",
    "auprc": "stats",
    "auroc": "stats",
    "automatic_vip": "vip",
    "bootstrap_ci": "stats",
    "cliffs_delta": "stats",
    "cohens_d": "stats",
    "estimate": "stats",
    "mean_difference": "stats",
    "spearman": "stats",
    "two_sample_test": "vip",
    "vip_thresholds": "vip",
}

if TYPE_CHECKING:
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
    from .vip import (
        NoVIPWarning,
        TwoSampleResult,
        VIPDetector,
        automatic_vip,
        two_sample_test,
        vip_thresholds,
    )


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'probes' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    globals()[name] = value
    return value


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
