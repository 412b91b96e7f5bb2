"""Modality conflict with perceptual vs propositional evidence, on a vision-language model (*Tri-PvP:
Exposing Modality Bias in Omni-Modal Large Language Models through Perceptual-Propositional Evidence
Conflicts*).

Each conflict item shows the same question with several evidence **sources** that carry their
own label: here a perceptual image (a drawn object), a propositional image (the label written in an
image) and a text caption, in some **order** before the question. The study:

- labels each response by the sources it matches (the paper's Sec. 4.2, its "judge" replaced by a
  matching function the user can swap): one source → ``BIAS_<SOURCE>`` (``BIAS_IMAGE``,
  ``BIAS_PROP_IMAGE``, ``BIAS_TEXT``); two → ``BIAS_<A>_<B>``; every source, or a response that
  acknowledges the conflict → ``NO_BIAS``; none → ``HALLUCINATION``. On items whose sources all
  agree, answering their label is ``NO_BIAS`` (competence);
- gives bias rates with Wilson 95 % CIs per **evidence-form configuration** (both images; the
  perceptual image alone; the propositional image alone — each with the caption, as the paper's
  PercI / PropI conditions) and per **input order** (all permutations), plus the rate of each
  source's bias by its position (the paper's Table 1: recency or primacy);
- fits layer-wise probes (:class:`probes.LayerwiseProbe`, balanced logistic regression, balanced
  accuracy, folds grouped by item so an item's orders never straddle train and test) of the bias
  label from the last prompt token's residual state: from which layer the winning source is
  linearly decodable, before any token is generated (the paper's Sec. 6.2);
- runs contrastive decoding as the paper's diagnostic (α = 0.5, β = 0.1): the amateur is the input
  *without* the source the decoding should favour (condition ``without:<source>``), which pushes
  the answer towards that source; bias rates before and after, and accuracy on agreeing items
  (competence kept).

Items are :class:`~interp.Sample` objects whose ``meta`` holds each source's label (``Source``
below: the demo world's ``image_label``, ``propositional_label``, ``text_label``), the ``order``
(source names joined by commas, question last) and, for a text source, the ``caption`` exactly as it
stands in the question; image sources appear as ``{image}`` slots in prompt order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from interp._lazy import lazy_exports

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
    "ConflictResponses": "analysis",
    "rates": "analysis",
    "wilson": "analysis",
    "conflict_responses": "measure",
    "favouring": "measure",
    "BiasProbe": "probe",
    "bias_probe": "probe",
    "plot_bias": "figures",
    "plot_positions": "figures",
    "register": "cli",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

if TYPE_CHECKING:
    from .analysis import ConflictResponses, rates, wilson
    from .cli import register
    from .figures import plot_bias, plot_positions
    from .items import (
        CONFIGURATIONS,
        DEMO_SOURCES,
        HALLUCINATION,
        NO_BIAS,
        SOURCES,
        Source,
        all_labels,
        check_items,
        item_order,
        register_source,
    )
    from .labels import bias_label, source_labels, word_match
    from .measure import conflict_responses, favouring
    from .probe import BiasProbe, bias_probe

__all__ = [
    "CONFIGURATIONS",
    "DEMO_SOURCES",
    "HALLUCINATION",
    "NO_BIAS",
    "SOURCES",
    "BiasProbe",
    "ConflictResponses",
    "Source",
    "all_labels",
    "bias_label",
    "bias_probe",
    "check_items",
    "conflict_responses",
    "favouring",
    "item_order",
    "plot_bias",
    "plot_positions",
    "rates",
    "register",
    "register_source",
    "source_labels",
    "wilson",
    "word_match",
]
