"""Modality conflict with perceptual vs propositional evidence across image, audio, video and text
(*Tri-PvP: Exposing Modality Bias in Omni-Modal Large Language Models through
Perceptual-Propositional Evidence Conflicts*).

Each conflict item shows the same question with several evidence **sources** that carry their
own label, in some **order** before the question. A source names its modality: an image, audio or
video source is an ``{image}`` / ``{audio}`` / ``{video}`` slot with its input, a text source the
caption inside the question. Two source sets ship: ``trimodal`` (an image, an audio clip and a
caption, each image / audio perceptual or propositional as the item's ``evidence`` says:
``PercI-PercA``, ``PercI-PropA``, ``PropI-PercA``, ``PropI-PropA``) and ``demo`` (a perceptual
image, a propositional image and a caption; its evidence-form configurations remove one image).
The study:

- labels each response by the sources it matches (the paper's Sec. 4.2; its LLM judge replaced by
  a swappable judge: :func:`rule_judge` for free-form answers ships, :class:`LLMJudge` is the hook
  for a language-model judge): one source → ``BIAS_<SOURCE>`` (``BIAS_IMAGE``,
  ``BIAS_AUDIO``, ``BIAS_TEXT``); two → ``BIAS_<A>_<B>`` (``BIAS_IMAGE_AUDIO``,
  ``BIAS_IMAGE_TEXT``, ``BIAS_AUDIO_TEXT``); every source, or a response that acknowledges the
  conflict → ``NO_BIAS``; none → ``HALLUCINATION`` — the paper's eight labels. On items whose
  sources all agree, answering their label is ``NO_BIAS`` (competence);
- gives label rates with Wilson 95 % CIs per **evidence type** (the paper's Fig. 3) and per
  **input order** (all permutations, Table 1), plus each source's bias rate by its position
  (recency or primacy);
- fits layer-wise probes (:class:`probes.LayerwiseProbe`, balanced logistic regression, balanced
  accuracy, folds grouped by item so an item's orders never straddle train and test) of the bias
  label from the last prompt token's residual state, with a per-layer permutation test against
  chance: from which layer the winning source is linearly decodable, before any token is
  generated (the paper's Sec. 6.2);
- runs contrastive decoding as a diagnostic (the paper's text gives neither its amateur nor α, β;
  here α = 0.5, β = 0.1) with two kinds of amateur: one source *alone* (condition
  ``only:<source>``; the contrast pushes away from that source, the effect the paper describes:
  image bias down, a residual text bias) and the input *without* one source
  (``without:<source>``; the contrast favours that source): each source's bias rate before and
  after with intervals on the change, and accuracy on agreeing items (competence kept).

Items are :class:`~interp.Sample` objects whose ``meta`` holds each source's label
(``image_label``, ``audio_label``, ``text_label``; the demo set's ``propositional_label``), the
``order`` (source names joined by commas in prompt order, question last), the ``caption`` exactly
as it stands in the question and, for tri-modal items, the ``evidence`` type.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from interp._lazy import lazy_exports
from interp.study_registry import StudyEntry

ENTRY = StudyEntry(
    "conflict",
    "Modality conflict",
    "which source wins when the image, written text, audio and caption disagree",
    audit=".audit:STUDY",
    recipe="interp.studies.reproduce.recipes:CONFLICT",
    docs="docs/conflict.md",
    notebook="notebooks/06_conflict_modality.ipynb",
    bench="bench/conflict.py",
    order=4,
)
"""This study in the study registry (:mod:`interp.study_registry`)."""


# Modules: .items (the sources, item checks and the ``without:<source>`` condition, registered when
# .items is first imported: by any public name below except ``register``), .labels (response
# labels), .analysis (rates, :class:`ConflictResponses`), .measure (the model runs, the
# contrastive-decoding diagnostic), .probe (:class:`BiasProbe`), .figures and .cli (the command).
_LAZY = {
    "HALLUCINATION": "items",
    "NO_BIAS": "items",
    "CONFIGURATIONS": "items",
    "DEMO_SOURCES": "items",
    "SOURCES": "items",
    "Source": "items",
    "all_labels": "items",
    "check_items": "items",
    "item_order": "items",
    "register_source": "items",
    "bias_label": "labels",
    "source_labels": "labels",
    "word_match": "labels",
    "Judge": "labels",
    "JUDGE_PROMPT": "labels",
    "LLMJudge": "labels",
    "allowed_labels": "labels",
    "rule_judge": "labels",
    "only_source": "items",
    "AMATEURS": "measure",
    "contrastive_decodings": "measure",
    "NULLS": "probe",
    "ConflictResponses": "analysis",
    "rates": "analysis",
    "wilson": "analysis",
    "evidence_forms": "analysis",
    "conflict_responses": "measure",
    "favouring": "measure",
    "BiasProbe": "probe",
    "bias_probe": "probe",
    "plot_bias": "figures",
    "plot_positions": "figures",
    "register": "cli",
    "EVIDENCE_TYPES": "items",
    "SOURCE_SETS": "items",
    "TRIMODAL_CONFIGURATIONS": "items",
    "TRIMODAL_SOURCES": "items",
    "VIDEO_SOURCE": "items",
    "infer_sources": "items",
    "register_source_set": "items",
    "source_set": "items",
    "without_source": "items",
    "dropped_source": "labels",
    "RateTable": "analysis",
    "plot_rates": "figures",
    "permutation_test": "probe",
    "balanced_accuracy": "probe",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

if TYPE_CHECKING:
    from .analysis import ConflictResponses, RateTable, evidence_forms, rates, wilson
    from .cli import register
    from .figures import plot_bias, plot_positions, plot_rates
    from .items import (
        CONFIGURATIONS,
        DEMO_SOURCES,
        EVIDENCE_TYPES,
        HALLUCINATION,
        NO_BIAS,
        SOURCE_SETS,
        SOURCES,
        TRIMODAL_CONFIGURATIONS,
        TRIMODAL_SOURCES,
        VIDEO_SOURCE,
        Source,
        all_labels,
        check_items,
        infer_sources,
        item_order,
        only_source,
        register_source,
        register_source_set,
        source_set,
        without_source,
    )
    from .labels import (
        JUDGE_PROMPT,
        Judge,
        LLMJudge,
        allowed_labels,
        bias_label,
        dropped_source,
        rule_judge,
        source_labels,
        word_match,
    )
    from .measure import AMATEURS, conflict_responses, contrastive_decodings, favouring
    from .probe import NULLS, BiasProbe, balanced_accuracy, bias_probe, permutation_test

__all__ = [
    "AMATEURS",
    "CONFIGURATIONS",
    "DEMO_SOURCES",
    "EVIDENCE_TYPES",
    "HALLUCINATION",
    "JUDGE_PROMPT",
    "NO_BIAS",
    "NULLS",
    "SOURCES",
    "SOURCE_SETS",
    "TRIMODAL_CONFIGURATIONS",
    "TRIMODAL_SOURCES",
    "VIDEO_SOURCE",
    "BiasProbe",
    "ConflictResponses",
    "Judge",
    "LLMJudge",
    "RateTable",
    "Source",
    "all_labels",
    "allowed_labels",
    "balanced_accuracy",
    "bias_label",
    "bias_probe",
    "check_items",
    "conflict_responses",
    "contrastive_decodings",
    "dropped_source",
    "evidence_forms",
    "favouring",
    "infer_sources",
    "item_order",
    "only_source",
    "permutation_test",
    "plot_bias",
    "plot_positions",
    "plot_rates",
    "rates",
    "register",
    "register_source",
    "register_source_set",
    "rule_judge",
    "source_labels",
    "source_set",
    "wilson",
    "without_source",
    "word_match",
]
