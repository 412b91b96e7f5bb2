"""Which studies the audit runs: each study says what data it needs and builds its own section.

A study joins the audit through its entry in the study registry (:mod:`interp.study_registry`):
its ``StudyEntry.audit`` names an :class:`AuditStudy` (the project's studies: ``STUDY`` in the
package's module ``audit``, e.g. ``interp.studies.coe.audit``), so adding a study touches no line
of the audit or of the core. A plain command's entry point (``"<package>.cli:register"``, as
plugins were declared before the registry) joins with the ``STUDY`` of a module ``audit`` beside
it. A study outside any entry point (a notebook's, a test's) joins with :func:`add_study`. The
sections appear in the report by ``order``, then ``key``.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Protocol, runtime_checkable

from interp.samples import Sample
from interp.store import substore
from interp.study_registry import ENTRY_POINT_GROUP, commands, load

from .report import Labels, Section

if TYPE_CHECKING:
    from interp.model import VLM

MODULE = "audit"  # the module of a study package that holds its STUDY
logger = logging.getLogger(__name__)


@dataclass
class AuditOptions:
    """Settings every section receives."""

    batch_size: int = 16
    max_new_tokens: int = 8
    seeds: tuple[int, ...] = (0,)
    store: Path | None = None
    overwrite: bool = False

    def store_for(self, key: str) -> Path | None:
        """The result store of one study (or part of one) under the audit's store."""
        return substore(self.store, key)


class Selection(NamedTuple):
    """The samples a study would run on; when there are none, ``reason`` says what the data
    lack (the report's "skipped" line)."""

    samples: list[Sample]
    reason: str = ""

    @classmethod
    def skip(cls, reason: str) -> Selection:
        return cls([], reason)


@runtime_checkable
class AuditStudy(Protocol):
    """What the audit needs from a study.

    Attributes:
        key: the section's id (``--studies`` takes it; ``summary.json`` keys by it).
        title: its name where it did not run.
        order: its place in the report (smaller first; the project's studies use 10-60).
    """

    key: str
    title: str
    order: int

    def select(self, samples: Sequence[Sample]) -> Selection:
        """The samples this study uses, or none and why."""
        ...

    def section(self, vlm: VLM, samples: list[Sample], options: AuditOptions) -> Section:
        """Run the study on ``samples`` and build its section."""
        ...

    def failure_reason(self, err: Exception, n: int) -> str | None:
        """Why the study stopped on these data, in the user's terms (None: the generic words)."""
        ...


@dataclass(frozen=True)
class Study:
    """An :class:`AuditStudy` made of functions (what a study's ``audit`` module defines).

    Attributes:
        labels: the study's keys in words, handed to its sections (:meth:`new_section`).
        explain: optional ``(error, n) -> words`` for a failure the study can explain.
    """

    key: str
    title: str
    order: int
    selector: Callable[[Sequence[Sample]], Selection]
    builder: Callable[[VLM, list[Sample], AuditOptions], Section]
    labels: Labels = Labels()
    explain: Callable[[Exception, int], str | None] | None = None

    def select(self, samples: Sequence[Sample]) -> Selection:
        """The samples this study uses, or none and why (its ``selector``)."""
        return Selection(*self.selector(samples))

    def section(self, vlm: VLM, samples: list[Sample], options: AuditOptions) -> Section:
        """Run the study on ``samples`` and build its section (its ``builder``)."""
        return self.builder(vlm, samples, options)

    def failure_reason(self, err: Exception, n: int) -> str | None:
        """Why the study stopped on these data (``explain``), or None for the generic words."""
        return None if self.explain is None else self.explain(err, n)

    def new_section(self, heading: str, samples: Sequence[Sample]) -> Section:
        """An empty section of this study with its words, under ``heading``."""
        return Section(self.key, heading, n=len(samples), labels=self.labels)


_ADDED: dict[str, AuditStudy] = {}


def add_study(study: AuditStudy) -> None:
    """Put a study in the audit that no entry point brings (replacing one with its key)."""
    if not isinstance(study, AuditStudy):
        raise TypeError(f"{study!r} is not an audit study (see AuditStudy)")
    _ADDED[study.key] = study


def remove_study(key: str) -> None:
    """Take out a study :func:`add_study` put in (nothing if it is not there)."""
    _ADDED.pop(key, None)


def _audit_module(value: str) -> str | None:
    """``pkg.audit`` for an entry point ``pkg.cli:register`` (the module's package); None when
    there is no such module."""
    module = value.partition(":")[0].strip()
    package = module.rpartition(".")[0]
    if not package:
        return None
    name = f"{package}.{MODULE}"
    try:
        return name if importlib.util.find_spec(name) is not None else None
    except (ImportError, ValueError):
        return None


def _audit_ref(register: str) -> str | None:
    """``pkg.audit:STUDY`` for a plain command's ``pkg.cli:register``, if that module exists."""
    name = _audit_module(register)
    return None if name is None else f"{name}:STUDY"


def studies() -> list[AuditStudy]:
    """Every study the audit can run: the :class:`AuditStudy` each registered study's entry names
    (``StudyEntry.audit``; for a plain command, the ``STUDY`` of the ``audit`` module beside it),
    and those :func:`add_study` put in, by ``order`` then ``key``."""
    found: dict[str, AuditStudy] = {}
    for command in commands():
        if command.error is not None:
            continue
        ref = command.study.ref("audit") if command.study else _audit_ref(command.register)
        if ref is None:
            continue
        try:
            study = load(ref)
        except (ImportError, AttributeError) as err:  # a plugin that cannot load: the rest run
            logger.warning("%s cannot be loaded (%s); its study is left out", ref, err)
            continue
        if isinstance(study, AuditStudy):
            found.setdefault(study.key, study)
        elif study is not None:
            logger.warning("%s is not an audit study; left out", ref)
    found.update(_ADDED)
    return sorted(found.values(), key=lambda s: (s.order, s.key))


def plan(
    samples: Sequence[Sample], only: Sequence[str] | None = None
) -> list[tuple[AuditStudy, list[Sample], str]]:
    """Each study with the samples it would run on and, if none, why it is skipped."""
    out = []
    for study in studies():
        if only is not None and study.key not in only:
            out.append((study, [], "not asked for (--studies)"))
            continue
        chosen, reason = study.select(samples)
        out.append((study, chosen, reason))
    return out


__all__ = [
    "AuditOptions",
    "AuditStudy",
    "ENTRY_POINT_GROUP",
    "Selection",
    "Study",
    "add_study",
    "plan",
    "remove_study",
    "studies",
]
