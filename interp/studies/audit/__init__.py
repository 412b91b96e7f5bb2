"""``interp audit`` — one command, one report: is this model looking at the image?

Runs every study the data supports on one model and writes:

- ``report.html`` — self-contained (figures embedded as PNG data, no network, opens from disk): a
  summary of the verdicts in plain words with the numbers behind them, then one section per study
  (figures and tables), the model and data fingerprints, the versions and the exact command;
- ``summary.json`` — every headline number, for scripts;
- ``store/`` — one resumable result store per study: a killed audit re-run with the same command
  resumes and gives the same ``summary.json``.

The report and ``summary.json`` are always written. A study runs on the samples that carry what
it needs and is skipped with a line saying what is missing; a study that stops on the data while
it runs (e.g. removing the image changes every answer, so the chain of embedding has one group
only) becomes a section saying why. The studies that did not run are listed at the end of the
report, in ``summary.json`` (``status`` ``skipped`` or ``failed``, with the ``reason``) and on
stdout; the exit status is 0 when at least one study ran. ``--n`` is the number of samples *per
question kind* (the ``qtype`` label): the demo mix has 120 of each by default (descriptions a third
as many), a data file is used whole unless ``--n`` is given.

**The audit asks the studies.** Each study package has a module ``audit`` whose ``STUDY`` says
which samples it needs (``select``, documented there) and builds its section of the report
(``section``); the audit finds them through the study registry (each study's entry names its
``STUDY``; :mod:`interp.study_registry`, :mod:`~interp.studies.audit.registry`) and knows none of
them. The project's studies, in the report's order: ``coe`` (short-answer questions with an
image), ``flow`` (questions with an image and an answer, not conflict items), ``recall``
(visual-reference items), ``drives`` (long answers), ``ablation`` (``variant`` / ``category``
labels), ``decoding`` (yes/no questions with both answers), ``conflict`` (conflict items),
``attribute`` (demo-world scene questions with the asked object's box).

``--data`` takes ``demo`` (a mix of the demo world's colour, existence and conflict questions),
the project's JSONL, a VLMEvalKit TSV benchmark file (base64 images, options A–D) or a POPE
question file with ``--images`` (see :mod:`interp.datasets.formats`).

Modules: :mod:`~interp.studies.audit.report` (sections, numbers in words, the page), :mod:`~interp.studies.audit.registry` (the study
protocol and discovery), :mod:`~interp.studies.audit.run` (:func:`audit`), :mod:`~interp.studies.audit.data` (``--data``), :mod:`~interp.studies.audit.kinds`
(sample kinds studies share), :mod:`~interp.studies.audit.cli` (the command).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from interp._lazy import lazy_exports
from interp.study_registry import StudyEntry

ENTRY = StudyEntry(
    "audit",
    "One report",
    "every study the data supports, on one model, in one HTML report",
    docs="docs/audit.md",
    order=2,
)
"""This study in the study registry (:mod:`interp.study_registry`)."""


_LAZY = {
    "Labels": "report",
    "Section": "report",
    "data_fingerprint": "report",
    "figure_data": "report",
    "headline": "report",
    "label": "report",
    "render": "report",
    "show": "report",
    "AuditOptions": "registry",
    "AuditStudy": "registry",
    "Selection": "registry",
    "Study": "registry",
    "add_study": "registry",
    "plan": "registry",
    "remove_study": "registry",
    "studies": "registry",
    "audit": "run",
    "DEMO_N": "data",
    "demo_data": "data",
    "per_kind": "data",
    "read_data": "data",
    "register": "cli",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

if TYPE_CHECKING:
    from .cli import register
    from .data import DEMO_N, demo_data, per_kind, read_data
    from .registry import (
        AuditOptions,
        AuditStudy,
        Selection,
        Study,
        add_study,
        plan,
        remove_study,
        studies,
    )
    from .report import (
        Labels,
        Section,
        data_fingerprint,
        figure_data,
        headline,
        label,
        render,
        show,
    )
    from .run import audit

__all__ = [
    "DEMO_N",
    "AuditOptions",
    "AuditStudy",
    "Labels",
    "Section",
    "Selection",
    "Study",
    "add_study",
    "audit",
    "data_fingerprint",
    "demo_data",
    "figure_data",
    "headline",
    "label",
    "per_kind",
    "plan",
    "read_data",
    "register",
    "remove_study",
    "render",
    "show",
    "studies",
]
