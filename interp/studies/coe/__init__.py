"""The chain-of-embedding study: is the image integrated, where, and does it predict correctness?

From the chain-of-embedding paper (see ``docs/papers.md``): :func:`chain_of_embedding` reads the last
prompt token's residual stream at every layer with and without the image; :func:`diagnose` splits
the samples by whether the image changes the answer, finds the Visual Integration Point (by default
the ``changepoint`` rule; Eq. 9, the paper's, or another rule of :data:`probes.vip.RULES` by name;
:func:`vip_rules_table` compares them),
computes Total Visual Integration (Eq. 4) and correlates it with correctness (Tables 1, 3, 4, 6, 9);
:mod:`~interp.studies.coe.figures` draws Figs. 2, 4 and 9. Any two conditions compare, the second the reference:
``("full", "no_audio")`` asks where an audio family integrates the audio, ``("full", "no_video")``
the same of a video.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from interp._lazy import lazy_exports
from interp.study_registry import StudyEntry

ENTRY = StudyEntry(
    "coe",
    "Chain of embedding",
    "where the image starts to change the answer's representation (VIP), and how "
    "much (TVI), per sample",
    audit=".audit:STUDY",
    recipe="interp.studies.reproduce.recipes:COE",
    docs="docs/coe.md",
    notebook="notebooks/01_coe_visual_integration_point.ipynb",
    bench="bench/coe.py",
    order=1,
)
"""This study in the study registry (:mod:`interp.study_registry`)."""


_LAZY = {
    "ChainOfEmbedding": "chain",
    "chain_of_embedding": "chain",
    "Diagnosis": "diagnosis",
    "compare_vip_rules": "diagnosis",
    "correctness": "diagnosis",
    "diagnose": "diagnosis",
    "distance_ablation": "diagnosis",
    "vip_methods": "diagnosis",
    "vip_rules_table": "diagnosis",
    "plot_distance_curves": "figures",
    "plot_tvi_distributions": "figures",
    "plot_vip_comparison": "figures",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

if TYPE_CHECKING:
    from .chain import ChainOfEmbedding, chain_of_embedding
    from .diagnosis import (
        Diagnosis,
        compare_vip_rules,
        correctness,
        diagnose,
        distance_ablation,
        vip_methods,
        vip_rules_table,
    )
    from .figures import plot_distance_curves, plot_tvi_distributions, plot_vip_comparison

__all__ = [
    "ChainOfEmbedding",
    "Diagnosis",
    "chain_of_embedding",
    "compare_vip_rules",
    "correctness",
    "diagnose",
    "distance_ablation",
    "plot_distance_curves",
    "plot_tvi_distributions",
    "plot_vip_comparison",
    "vip_methods",
    "vip_rules_table",
]
