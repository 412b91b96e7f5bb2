"""The study registry: each study is declared once, and every list of the studies is read here.

A study registers itself with one line under ``[project.entry-points."interp.studies"]`` in
``pyproject.toml``: ``<name> = "<package>:ENTRY"``, where ``ENTRY``, in the package's
``__init__``, is a :class:`StudyEntry` — the study's name, its title and one-line purpose, where
its command, its audit section and its ``interp reproduce`` recipe are (``"module:attr"``
strings, resolved only when used), its docs page, notebook and bench script. From
:func:`studies` come the ``interp`` subcommands (:mod:`interp.cli`), the audit's sections
(:mod:`interp.studies.audit.registry`), the papers of ``interp reproduce``, and the docs'
studies table and the studies' API sections (:func:`studies_page`, :func:`studies_api`, added by
``docs/conf.py`` when the site builds); the lists written by hand (the README, the architecture
page, ``interp.studies``' docstring, the notebooks page) are checked against it by
``tests/core/test_study_registry.py``.

Reading the registry imports each study package's ``__init__`` (lazy public names: no torch), never
its command, audit or recipe module. An entry point that names a function instead
(``doctor = "interp.doctor:register"``, or a plugin's ``register(subparsers)``) is a plain
command: ``interp`` lists it and nothing else does (the audit still looks for an ``audit`` module
beside it, as it always has) — unless its package declares that study's ``ENTRY``
(``"<package>.cli:register"``, the form before the registry), which is then read as the study's.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import logging
from dataclasses import dataclass, replace
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any

ENTRY_POINT_GROUP = "interp.studies"
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class StudyEntry:
    """One study's declaration (a study package's ``ENTRY``).

    Attributes:
        name: the command's and the entry point's name.
        title: the study in a few words (the docs' table of studies).
        purpose: what it answers, in one line.
        cli: ``"module:function"`` of its ``register(subparsers)``; None: no command.
        audit: ``"module:attr"`` of its :class:`~interp.studies.audit.registry.AuditStudy`;
            None: not in the audit.
        recipe: ``"module:attr"`` of its ``interp reproduce`` recipe
            (:class:`~interp.studies.reproduce.recipes.Recipe`); None: no recipe.
        docs: its docs page, notebook and bench script, as paths from the repository root
            (None: none).
        package: the package declaring it (filled in from the entry point when left empty).
        order: where it comes in every list of the studies (then by name): the project's
            studies keep the order of the docs' table of studies; a plugin's comes after them.

    A module starting with ``.`` is relative to ``package`` (``".cli:register"``).
    """

    name: str
    title: str
    purpose: str
    cli: str | None = ".cli:register"
    audit: str | None = None
    recipe: str | None = None
    docs: str | None = None
    notebook: str | None = None
    bench: str | None = None
    package: str = ""
    order: int = 100

    def ref(self, part: str) -> str | None:
        """The absolute ``"module:attr"`` of ``part`` (``"cli"``, ``"audit"``, ``"recipe"``)."""
        value = getattr(self, part)
        if value is None:
            return None
        module, _, attr = value.partition(":")
        if module.startswith("."):
            module = self.package + module if module != "." else self.package
        return f"{module}:{attr}"

    def load(self, part: str) -> Any:
        """Import and return ``part``'s object (None where the study declares none)."""
        ref = self.ref(part)
        return None if ref is None else load(ref)


@dataclass(frozen=True)
class Command:
    """One ``interp`` subcommand: its entry point's name, the ``"module:function"`` registering
    it, the study it belongs to (None: a plain command) and why it cannot be loaded (if so)."""

    name: str
    register: str
    study: StudyEntry | None = None
    error: ImportError | None = None


def load(ref: str) -> Any:
    """The object a ``"module:attr"`` string names (``attr`` may be dotted)."""
    module, _, attr = ref.partition(":")
    obj: Any = importlib.import_module(module.strip())
    for part in attr.strip().split(".") if attr.strip() else ():
        obj = getattr(obj, part)
    return obj


def registered() -> list[EntryPoint]:
    """The ``interp.studies`` entry points, by name."""
    return sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)


def _names_a_function(ref: str) -> bool:
    """Whether ``"module:name"`` names a function defined at the top of the module's source
    (read, not imported)."""
    module, _, attr = ref.partition(":")
    try:
        spec = importlib.util.find_spec(module.strip())
        origin = spec.origin if spec is not None else None
        tree = ast.parse(Path(origin).read_text()) if origin else None
    except (ImportError, ValueError, OSError, SyntaxError):
        return False
    name = attr.strip()
    return tree is not None and any(
        isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name
        for node in tree.body
    )


def _beside(ref: str, name: str) -> StudyEntry | None:
    """The ``ENTRY`` declaring study ``name`` in the package of a ``register`` function's module
    (an entry point written ``"<package>.cli:register"``, as before the registry: an install
    whose metadata predates it still finds its studies); None when there is none."""
    package = ref.partition(":")[0].strip().rpartition(".")[0]
    try:
        entry = getattr(importlib.import_module(package), "ENTRY", None) if package else None
    except ImportError:
        return None
    if not isinstance(entry, StudyEntry) or entry.name != name:
        return None
    return entry if entry.package else replace(entry, package=package)


def command(ep: EntryPoint) -> Command:
    """The subcommand an entry point registers: a function is used as it is (its module is not
    imported; the study its package declares, if any, is its study); anything else is loaded and
    must be a :class:`StudyEntry`."""
    value = str(ep.value)
    if _names_a_function(value):
        entry = _beside(value, ep.name)
        if entry is None:
            return Command(ep.name, value)
        return Command(ep.name, entry.ref("cli") or value, entry)
    try:
        declared = ep.load()
    except ImportError as err:
        return Command(ep.name, value, error=err)
    except AttributeError as err:
        return Command(ep.name, value, error=ImportError(str(err)))
    if callable(declared) and not isinstance(declared, StudyEntry):
        return Command(ep.name, value)
    if not isinstance(declared, StudyEntry):
        return Command(ep.name, value, error=ImportError(f"{value} is not a StudyEntry"))
    entry = declared if declared.package else replace(declared, package=value.partition(":")[0])
    if entry.name != ep.name:
        err = ImportError(f"{value} declares {entry.name!r}, not {ep.name!r}")
        return Command(ep.name, value, error=err)
    return Command(ep.name, entry.ref("cli") or "", entry)


def commands() -> list[Command]:
    """Every registered subcommand, by name (a study without a command is left out)."""
    found = [command(ep) for ep in registered()]
    return [c for c in found if c.register or c.error is not None]


def studies() -> list[StudyEntry]:
    """Every registered study, by ``order`` then name (a study that cannot be loaded is left out, with a
    warning)."""
    out = []
    for ep in registered():
        found = command(ep)
        if found.error is not None:
            logger.warning("the study %r cannot be loaded (%s); left out", ep.name, found.error)
        elif found.study is not None:
            out.append(found.study)
    return sorted(out, key=lambda e: (e.order, e.name))


def study(name: str) -> StudyEntry | None:
    """The registered study ``name``, or None."""
    return next((s for s in studies() if s.name == name), None)


STUDIES_MARKER = "<!-- the studies: generated from the study registry (docs/conf.py) -->"
"""Where ``docs/studies.md`` takes :func:`studies_page` when the site is built."""


def studies_page() -> str:
    """The table of the studies on ``docs/studies.md`` and its hidden table of contents (MyST
    Markdown), from every registered study with a docs page under ``docs/``."""
    entries = [e for e in studies() if e.docs and e.docs.startswith("docs/")]
    pages = [e.docs.removeprefix("docs/") for e in entries if e.docs]
    rows = ["| study | command | what it answers |", "|---|---|---|"]
    rows += [
        f"| [{e.title}]({p}) | `interp {e.name}` | {e.purpose} |" for e, p in zip(entries, pages)
    ]
    toc = ["```{toctree}", ":hidden:", "", *(p.removesuffix(".md") for p in pages), "```"]
    return "\n".join([*rows, "", *toc])


API_MARKER = "<!-- the studies' modules: generated from the study registry (docs/conf.py) -->"
"""Where ``docs/api/studies.md`` takes :func:`studies_api` when the site is built."""


def study_modules(entry: StudyEntry) -> list[str]:
    """The study's package and its public modules (no ``_`` prefix), by name."""
    spec = importlib.util.find_spec(entry.package)
    if spec is None or spec.origin is None:
        return []
    files = sorted(Path(spec.origin).parent.glob("*.py"))
    return [entry.package, *(f"{entry.package}.{f.stem}" for f in files if f.stem[0] != "_")]


def studies_api() -> str:
    """The API reference's sections of every registered study of this project (a package of
    ``interp.studies``, ``:no-members:``: the lazy names are documented where they are defined)
    and of its modules (MyST Markdown)."""
    sections = []
    for entry in (e for e in studies() if e.package.startswith("interp.studies.")):
        for module in study_modules(entry):
            options = "\n   :no-members:" if module == entry.package else ""
            sections.append(
                f"## `{module}`\n\n```{{eval-rst}}\n.. automodule:: {module}{options}\n```\n"
            )
    return "\n".join(sections)


__all__ = [
    "API_MARKER",
    "Command",
    "ENTRY_POINT_GROUP",
    "STUDIES_MARKER",
    "StudyEntry",
    "commands",
    "command",
    "load",
    "registered",
    "studies",
    "studies_api",
    "studies_page",
    "study_modules",
    "study",
]
