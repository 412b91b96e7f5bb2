"""Model sources: what a name given to :func:`interp.load` stands for.

A source turns a model name into what the loader reads, a local folder or a hub id. The sources
are registered as entry points under ``[project.entry-points."interp.sources"]`` in
``pyproject.toml`` — ``<name> = "<module>:<object>"``, the object a :class:`ModelSource` — and
read only when a name is resolved. This project registers one, its demo models
(``demo = "interp.demo.source:SOURCE"``: ``demo``, ``demo-smol``, ``demo-omni``,
``demo-omni-control``); the folder and hub-id source is built in and comes last, so it takes
every name no registered source claims. The core never imports a source: the demo models live in
``interp/demo/`` above it (``docs/architecture.md``).

A source has a ``name``, ``resolves(name)`` (whether the name is its own), ``locate(name)`` (the
folder or hub id the name stands for, built first if need be) and ``processor(folder)`` (the
processor of a folder it wrote in a form ``AutoProcessor`` cannot read, else None). It names a
folder rather than building the model itself, so every option of :func:`interp.load`
(``dtype``, ``dispatch=False``, ``remote``) and :func:`interp.model.model_config` (the
configuration, no weights) works on its names as on any folder.

An install whose metadata predates the group (an editable install not reinstalled since) declares
no ``demo`` entry point: :data:`DEFAULT_SOURCES` is then read in its place, so ``"demo"`` still
loads.
"""

from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

ENTRY_POINT_GROUP = "interp.sources"
DEFAULT_SOURCES: dict[str, str] = {"demo": "interp.demo.source:SOURCE"}
"""This project's own registrations, as ``pyproject.toml`` declares them (the test of this module
holds the two equal): read when the installed metadata lacks them."""

logger = logging.getLogger(__name__)


@runtime_checkable
class ModelSource(Protocol):
    """What a registered source offers (see the module docstring)."""

    name: str

    def resolves(self, name: str) -> bool:
        """Whether ``name`` is one of this source's models."""
        ...

    def locate(self, name: str) -> str:
        """The local folder or hub id holding the model ``name`` stands for.

        Raises:
            ModelNotFoundError: the model cannot be provided (not trained, not installed).
        """
        ...

    def processor(self, folder: Path) -> Any | None:
        """The processor saved in ``folder`` when this source wrote it in a form of its own, else
        None (the loader then uses ``AutoProcessor``)."""
        ...


@dataclass(frozen=True)
class FolderOrHub:
    """The built-in source, last in line: a name is a local folder or a hub id, as it is."""

    name: str = "folder-or-hub"

    def resolves(self, name: str) -> bool:
        return True

    def locate(self, name: str) -> str:
        return name

    def processor(self, folder: Path) -> Any | None:
        return None


BUILT_IN = FolderOrHub()


def registered() -> list[EntryPoint]:
    """The ``interp.sources`` entry points, by name, with :data:`DEFAULT_SOURCES` in place of any
    of this project's own that the installed metadata lacks."""
    found = {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}
    for name, value in DEFAULT_SOURCES.items():
        found.setdefault(name, EntryPoint(name, value, ENTRY_POINT_GROUP))
    return [found[name] for name in sorted(found)]


def _load(ep: EntryPoint) -> ModelSource | None:
    """The source an entry point names; None (with a warning) when it cannot be imported or is
    not a :class:`ModelSource`."""
    module, _, attr = str(ep.value).partition(":")
    try:
        obj: Any = importlib.import_module(module.strip())
        for part in attr.strip().split(".") if attr.strip() else ():
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as err:
        logger.warning("the model source %r cannot be loaded (%s); left out", ep.name, err)
        return None
    if not isinstance(obj, ModelSource):
        logger.warning("the model source %r (%s) is not a ModelSource; left out", ep.name, ep.value)
        return None
    return obj


def sources() -> list[ModelSource]:
    """Every source, in the order names are tried: the registered ones by entry-point name, then
    the built-in folder and hub-id source."""
    return [s for s in map(_load, registered()) if s is not None] + [BUILT_IN]


def source_for(name: str) -> ModelSource:
    """The first source that claims ``name`` (the built-in one when no other does)."""
    return next(s for s in sources() if s.resolves(name))


def locate(model: str | Path) -> str:
    """The local folder or hub id ``model`` stands for (:meth:`ModelSource.locate` of the first
    source claiming it).

    Raises:
        ModelNotFoundError: the source claiming the name cannot provide its model.
    """
    return source_for(str(model)).locate(str(model))


def processor_for(folder: str | Path) -> Any | None:
    """The processor a source reads from ``folder`` in a form of its own; None when no source
    has one (the loader then uses ``AutoProcessor``)."""
    path = Path(folder).expanduser()
    if not path.is_dir():
        return None
    for source in sources():
        found = source.processor(path)
        if found is not None:
            return found
    return None


__all__ = [
    "BUILT_IN",
    "DEFAULT_SOURCES",
    "ENTRY_POINT_GROUP",
    "FolderOrHub",
    "ModelSource",
    "locate",
    "processor_for",
    "registered",
    "source_for",
    "sources",
]
