"""Information flow by attention knockout: in which layers must the text read the image for the
answer to survive?

For a window W of k consecutive decoder layers (sliding, stride configurable) and an edge S → T
(image → question, image → last, question → last, or any pair of position specs), the target
positions T are blocked from attending to the source positions S in W (the attention mask set to
the dtype's minimum there, :class:`interventions.Knockout`; eager or SDPA attention, here or on
NDIF), and the answer is scored
teacher-forced with and without the knockout:

    Δ_W = log p(answer | knockout in W) − log p(answer)     (per sample, natural log)

The answer is the sample's own (``answer="given"``) or the model's greedy answer to the full
input (``"greedy"``). Every (edge, window) is one batched scoring pass over the samples
(:func:`interp.score`). :class:`Flow` gives per-window curves of mean Δ with bootstrap intervals
(:func:`probes.bootstrap.mean_ci`) per group — D_VT / D_T (the answer changes without the image, the
chain-of-embedding study's split) or any ``meta`` label — a table (:meth:`Flow.to_frame`), the
flow figure (:func:`plot_flow`) and the **causal integration layer** (:func:`integration_layer`):
the last window whose image → text knockout still lowers the answer's probability significantly
(two-sided one-sample t-tests of Δ against 0, Holm-corrected over edges × windows) and by at least
a tenth of the largest drop (an effect-size floor, ``min_fraction``). It is the causal
counterpart of the chain-of-embedding study's Visual Integration Point: :mod:`~interp.studies.flow.rules` puts the
VIP under each rule of :mod:`probes.vip` beside it (:func:`vip_rule_layers`,
:func:`rule_agreement` for the sensitivity to N, :func:`plot_vip_rules`,
:func:`plot_rule_agreement`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from interp._lazy import lazy_exports
from interp.study_registry import StudyEntry

ENTRY = StudyEntry(
    "flow",
    "Information flow",
    "in which layers the text must attend to the image for the answer to survive",
    audit=".audit:STUDY",
    docs="docs/flow.md",
    notebook="notebooks/08_information_flow.ipynb",
    bench="bench/flow.py",
    order=5,
)
"""This study in the study registry (:mod:`interp.study_registry`)."""


_LAZY = {
    "EDGES": "measure",
    "Edge": "measure",
    "check_flow": "measure",
    "information_flow": "measure",
    "parse_edge": "measure",
    "windows": "measure",
    "IMAGE_EDGES": "analysis",
    "Flow": "analysis",
    "IntegrationLayer": "analysis",
    "holm": "analysis",
    "integration_layer": "analysis",
    "one_sample_tests": "analysis",
    "plot_flow": "figures",
    "plot_rule_agreement": "rules",
    "plot_vip_rules": "rules",
    "rule_agreement": "rules",
    "vip_rule_layers": "rules",
    "register": "cli",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

if TYPE_CHECKING:
    from .analysis import (
        IMAGE_EDGES,
        Flow,
        IntegrationLayer,
        holm,
        integration_layer,
        one_sample_tests,
    )
    from .cli import register
    from .figures import plot_flow
    from .measure import EDGES, Edge, check_flow, information_flow, parse_edge, windows
    from .rules import plot_rule_agreement, plot_vip_rules, rule_agreement, vip_rule_layers

__all__ = [
    "EDGES",
    "IMAGE_EDGES",
    "Edge",
    "Flow",
    "IntegrationLayer",
    "check_flow",
    "holm",
    "information_flow",
    "integration_layer",
    "one_sample_tests",
    "parse_edge",
    "plot_flow",
    "plot_rule_agreement",
    "plot_vip_rules",
    "register",
    "rule_agreement",
    "vip_rule_layers",
    "windows",
]
