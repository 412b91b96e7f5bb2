"""Training-free decoding study: do contrastive decoding methods make the model look at the image?

POPE-style evaluation ("Evaluating Object Hallucination in Large Vision-Language Models", Li et
al., 2023) of each decoding method of :mod:`interventions.decoding` — greedy **and** sampled (one
run per seed, reported as mean ± std), so a method is never compared with a sampled baseline only:

- the questions are existence questions (``is there a <object> in the image?``) whose truth is
  ``yes`` for objects in the image and ``no`` for absent ones; absent objects are drawn in three
  ways (the ``pope_negative`` label): ``random``, ``popular`` (frequent objects) and
  ``adversarial`` (objects that co-occur with one in the image — where a language prior says yes);
- each setting is scored on the positive questions plus that setting's negatives, as POPE
  balances them;
- an answer counts as ``no`` if its words hold ``no`` or ``not``, else ``yes`` (POPE's rule);
- metrics (positive class ``yes``): accuracy, precision, recall, F1 and the yes-ratio.

Modules: :mod:`~interp.studies.decoding.measure` (the runs: :func:`evaluate_decoding` → :class:`DecodingRuns`,
:func:`parameter_sweep` over α and β of one method), :mod:`~interp.studies.decoding.analysis` (POPE's answers, metrics and
settings; :func:`compare_methods`: the methods ranked by accuracy with paired bootstrap intervals), :mod:`~interp.studies.decoding.figures` (:func:`plot_methods`, :func:`plot_sweep`) and :mod:`~interp.studies.decoding.cli` (the command
``interp decoding``, alias ``interp decode``, :func:`register`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from interp._lazy import lazy_exports
from interp.study_registry import StudyEntry

ENTRY = StudyEntry(
    "decoding",
    "Contrastive decoding",
    "how VCD, ICD, VDD, M3ID and PAI change POPE-style answers",
    audit=".audit:STUDY",
    docs="docs/decoding.md",
    notebook="notebooks/02_decoding_contrastive.ipynb",
    bench="bench/decoding.py",
    order=3,
)
"""This study in the study registry (:mod:`interp.study_registry`)."""


_LAZY = {
    "DEFAULT_METHODS": "analysis",
    "METRICS": "analysis",
    "SETTINGS": "analysis",
    "compare_methods": "analysis",
    "pope_metrics": "analysis",
    "pope_settings": "analysis",
    "yes_no": "analysis",
    "DecodingRuns": "measure",
    "evaluate_decoding": "measure",
    "parameter_sweep": "measure",
    "resolve_methods": "measure",
    "plot_methods": "figures",
    "plot_sweep": "figures",
    "register": "cli",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

if TYPE_CHECKING:
    from .analysis import (
        DEFAULT_METHODS,
        METRICS,
        SETTINGS,
        compare_methods,
        pope_metrics,
        pope_settings,
        yes_no,
    )
    from .cli import register
    from .figures import plot_methods, plot_sweep
    from .measure import DecodingRuns, evaluate_decoding, parameter_sweep, resolve_methods

__all__ = [
    "DEFAULT_METHODS",
    "METRICS",
    "SETTINGS",
    "DecodingRuns",
    "compare_methods",
    "evaluate_decoding",
    "parameter_sweep",
    "plot_methods",
    "plot_sweep",
    "pope_metrics",
    "pope_settings",
    "register",
    "resolve_methods",
    "yes_no",
]
