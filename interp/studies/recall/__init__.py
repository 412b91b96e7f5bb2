"""Visual-reference recall: can the model recall what it knows about an entity from its image?

Reproduces *Can VLMs Recall Factual Associations From Visual References?* (Ashok, Chaubey, Arai,
May, Thomason; see ``docs/papers.md``) on the engine. Each **item** is one entity image and one
fact about the entity, asked two ways: a *textual-reference* question that names the entity and a
*visual-reference* question that refers to "the object in the image". Three settings (Sec. 4,
Fig. 2):

- **Text-Only**: a trivial image (no information about the entity) and the textual question. The
  trivial images are black, white, uniform noise and none (Appendix B); the setting's answer is the
  majority vote over them, ties broken at random (seeded; :func:`majority_vote`).
- **Visual**: the entity image and the visual-reference question — the model must link the image
  to its knowledge.
- **Full Info**: the entity image and the textual question (Sec. 6.1).

Answers are scored by exact match, two-way inclusion and BLEU (Sec. 4, Appendix C; :mod:`probes.text`).
The benchmark's model-specific filters (Sec. 3, Appendix A) keep an item only if the model answers
it in Full Info, does *not* answer the visual question from a trivial image (a language-prior
guess) and names the entity when asked what the image shows (:attr:`RecallRun.kept`).

Inside the model (Sec. 6), at the last prompt token of the Visual setting, ``h^(l)`` for
``l = 0..L`` (the project's layer convention):

- **logit lens** (Sec. 6.1, Fig. 4 top): ``p_l = softmax(U · norm(h^(l)))[t*]``, the probability of
  the eventual output token ``t*`` (the first generated token) at every layer (:func:`logit_lens`);
- **cosine similarity** of the Visual and Full Info states (Sec. 6.1, Fig. 4 bottom),
  ``cos(h^(l), h~^(l))`` (:func:`layerwise_cosine`); both split into linking successes and failures
  (:func:`linking_curves`);
- **failure probes** (Sec. 6.2, Table 2): a linear probe on ``h^(l)`` of the layer chosen by
  validation, against the majority-class and the perplexity-threshold baselines, with selective
  prediction (coverage and risk) of perplexity, probe and their ensemble (:func:`failure_probes`);
- **transfer** (Sec. 6.2, Table 1): probes trained on the other families and applied, without
  retraining, to a held-out one (:func:`transfer`).

Modules: :mod:`~interp.studies.recall.settings` (the settings, trivial images, metrics), :mod:`~interp.studies.recall.items` (:class:`RecallItem`,
:func:`recall_items`), :mod:`~interp.studies.recall.measure` (the model runs: :func:`run_recall` → :class:`RecallRun` of
:mod:`~interp.studies.recall.result`, :func:`logit_lens`), :mod:`~interp.studies.recall.analysis` (majority vote, cosine, perplexity, Table 2 and
Table 1 from predictions), :mod:`~interp.studies.recall.curves` (:func:`linking_curves`), :mod:`~interp.studies.recall.probes`
(:func:`failure_probes`), :mod:`~interp.studies.recall.crossfamily` (:func:`transfer`), :mod:`~interp.studies.recall.figures`
(:func:`plot_accuracy`, :func:`plot_linking`, :func:`plot_probe_curves`, :func:`plot_risk_coverage`)
and :mod:`~interp.studies.recall.cli` (the command ``interp recall``, :func:`register`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from interp._lazy import lazy_exports
from interp.study_registry import StudyEntry

ENTRY = StudyEntry(
    "recall",
    "Visual-reference recall",
    "whether a fact is recalled from an image as from a name",
    audit=".audit:STUDY",
    recipe="interp.studies.reproduce.recipes:RECALL",
    docs="docs/recall.md",
    notebook="notebooks/04_recall_visual_reference.ipynb",
    bench="bench/recall.py",
    order=8,
)
"""This study in the study registry (:mod:`interp.study_registry`)."""


_LAZY = {
    "DEMO_IDENTIFY": "settings",
    "GROUPINGS": "settings",
    "METRICS": "settings",
    "REFERENCE_QTYPES": "settings",
    "SETTINGS": "settings",
    "SETTING_NAMES": "settings",
    "SUBSETS": "settings",
    "TRIVIAL": "settings",
    "RecallItem": "items",
    "check_families": "items",
    "check_trivial": "items",
    "families_of": "items",
    "recall_items": "items",
    "multiple_choice": "items",
    "MC_LABELS": "items",
    "select_families": "items",
    "METHOD_SCORES": "analysis",
    "answer_perplexity_of": "analysis",
    "layerwise_cosine": "analysis",
    "majority_vote": "analysis",
    "method_table": "analysis",
    "risk_curves": "analysis",
    "selective_frame": "analysis",
    "_generate_states": "measure",
    "logit_lens": "measure",
    "run_recall": "measure",
    "RecallRun": "result",
    "LinkingCurves": "curves",
    "linking_curves": "curves",
    "FailureProbes": "probes",
    "failure_probes": "probes",
    "Transfer": "crossfamily",
    "transfer": "crossfamily",
    "plot_accuracy": "figures",
    "plot_linking": "figures",
    "plot_probe_curves": "figures",
    "plot_risk_coverage": "figures",
    "register": "cli",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

if TYPE_CHECKING:
    from .analysis import (
        METHOD_SCORES,
        answer_perplexity_of,
        layerwise_cosine,
        majority_vote,
        method_table,
        risk_curves,
        selective_frame,
    )
    from .cli import register
    from .crossfamily import Transfer, transfer
    from .curves import LinkingCurves, linking_curves
    from .figures import plot_accuracy, plot_linking, plot_probe_curves, plot_risk_coverage
    from .items import (
        MC_LABELS,
        RecallItem,
        check_families,
        check_trivial,
        families_of,
        multiple_choice,
        recall_items,
        select_families,
    )
    from .measure import logit_lens, run_recall
    from .probes import FailureProbes, failure_probes
    from .result import RecallRun
    from .settings import (
        DEMO_IDENTIFY,
        GROUPINGS,
        METRICS,
        REFERENCE_QTYPES,
        SETTING_NAMES,
        SETTINGS,
        SUBSETS,
        TRIVIAL,
    )

__all__ = [
    "DEMO_IDENTIFY",
    "GROUPINGS",
    "METHOD_SCORES",
    "METRICS",
    "REFERENCE_QTYPES",
    "SETTINGS",
    "SETTING_NAMES",
    "SUBSETS",
    "TRIVIAL",
    "FailureProbes",
    "LinkingCurves",
    "RecallItem",
    "RecallRun",
    "Transfer",
    "answer_perplexity_of",
    "check_families",
    "check_trivial",
    "failure_probes",
    "families_of",
    "layerwise_cosine",
    "linking_curves",
    "logit_lens",
    "majority_vote",
    "method_table",
    "plot_accuracy",
    "plot_linking",
    "plot_probe_curves",
    "plot_risk_coverage",
    "recall_items",
    "multiple_choice",
    "MC_LABELS",
    "register",
    "risk_curves",
    "run_recall",
    "select_families",
    "selective_frame",
    "transfer",
]
