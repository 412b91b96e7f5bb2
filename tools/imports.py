"""The import graph of the project's packages (``interp``, ``interventions``, ``probes``), read
from the source with ``ast``: every import counts, at module level, inside a function or under
``if TYPE_CHECKING:``.

An edge ``a → b`` means module ``a`` names module ``b`` in an import: ``import b``,
``from b import name`` (``b`` the package when ``name`` is not a submodule), ``from . import b``.
Importing a submodule runs its package's ``__init__`` too, but the packages' ``__init__`` files are
lazy (PEP 562), so that is not counted as an edge to the package. A cycle is a strongly connected
component of more than one module.

The layers are those of ``docs/architecture.md``'s table, from the bottom up (:data:`LAYERS`,
which the architecture test holds to the table): a module may import its own layer and the
layers below it; an import of a higher layer is an *upward* import (:func:`upward`).

``python -m tools.imports`` prints the cycles and the upward imports.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("interp", "interventions", "probes")

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("statistics", ("probes/",)),
    ("foundation", ("interp/errors.py", "interp/_lazy.py", "interp/reprs.py")),
    ("run options", ("interp/options.py", "interp/shards.py")),
    ("inputs", ("interp/samples.py", "interp/media.py", "interp/datasets/")),
    (
        "adapters",
        ("interp/adapters/", "interp/prompts.py", "interp/region_layouts.py", "interp/thinker.py"),
    ),
    ("conditions", ("interp/conditions/",)),
    ("encoding", ("interp/encoding/",)),
    ("old import paths", ("interp/positions.py", "interp/targets.py")),
    (
        "model",
        (
            "interp/model.py",
            "interp/hub.py",
            "interp/sources.py",
            "interp/threads.py",
            "interp/layout_check.py",
        ),
    ),
    (
        "edits and reads",
        ("interp/edits.py", "interp/tracing.py", "interp/plain.py", "interp/wire.py"),
    ),
    ("token → region maps", ("interp/regions.py",)),
    (
        "the run loop",
        (
            "interp/runner.py",
            "interp/store.py",
            "interp/locks.py",
            "interp/outputs.py",
            "interp/prefix.py",
            "interp/resume.py",
        ),
    ),
    (
        "measurements",
        (
            "interp/residual.py",
            "interp/generation.py",
            "interp/scoring.py",
            "interp/attention.py",
            "interp/gradients.py",
        ),
    ),
    ("interventions", ("interventions/",)),
    ("public names", ("interp/__init__.py",)),
    ("support", ("interp/demo/", "interp/testing/", "interp/figures.py", "interp/headlines.py")),
    (
        "command line",
        (
            "interp/cli.py",
            "interp/command.py",
            "interp/data_spec.py",
            "interp/help.py",
            "interp/doctor.py",
            "interp/study_registry.py",
        ),
    ),
    ("studies", ("interp/studies/",)),
)
"""The layers from the bottom up, each a name and its files and folders (paths from the
repository root; a folder holds everything under it). The same rows, in the same order, as the
table of ``docs/architecture.md``."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(packages: Iterable[str] = PACKAGES) -> dict[str, Path]:
    """Every module of ``packages``: dotted name → file."""
    return {module_name(p): p for pkg in packages for p in sorted((ROOT / pkg).rglob("*.py"))}


def _absolute(path: Path, level: int, module: str | None) -> str:
    package = module_name(path)
    if path.name != "__init__.py":
        package = package.rpartition(".")[0]
    for _ in range(level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{module}" if module else package


def imports(path: Path, known: dict[str, Path]) -> set[str]:
    """The project modules ``path`` imports (see the module docstring)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                name = alias.name
                while name and name not in known:
                    name = name.rpartition(".")[0]
                if name:
                    out.add(name)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(path, node.level, node.module) if node.level else (node.module or "")
            if base.split(".")[0] not in PACKAGES:
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in known:
                    out.add(sub)
                else:
                    target = base
                    while target and target not in known:
                        target = target.rpartition(".")[0]
                    if target:
                        out.add(target)
    out.discard(module_name(path))
    return out


def graph(packages: Iterable[str] = PACKAGES) -> dict[str, set[str]]:
    """module → the project modules it imports."""
    known = modules(packages)
    return {name: imports(path, known) for name, path in known.items()}


def cycles(edges: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[frozenset[str]] = []
    counter = 0

    def visit(v: str) -> None:
        nonlocal counter
        work = [(v, iter(sorted(edges.get(v, ()))))]
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on.add(v)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in edges:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    w = stack.pop()
                    on.discard(w)
                    component.add(w)
                    if w == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(found, key=lambda c: sorted(c))


def layer_of(name: str, known: dict[str, Path] | None = None) -> int:
    """The index in :data:`LAYERS` of module ``name``: the row of the longest entry that is its
    file or a folder above it.

    Raises:
        KeyError: no layer holds the module (add it to :data:`LAYERS` and the doc's table).
    """
    path = (known or modules())[name].relative_to(ROOT).as_posix()
    best: tuple[int, int] | None = None
    for k, (_, entries) in enumerate(LAYERS):
        for entry in entries:
            hit = path.startswith(entry) if entry.endswith("/") else path == entry
            if hit and (best is None or len(entry) > best[1]):
                best = (k, len(entry))
    if best is None:
        raise KeyError(f"no layer of LAYERS holds {name} ({path})")
    return best[0]


def upward(edges: dict[str, set[str]] | None = None) -> list[tuple[str, str]]:
    """The imports ``(importer, imported)`` whose imported module lies in a higher layer than
    the importer, sorted."""
    known = modules()
    edges = graph() if edges is None else edges
    rank = {name: layer_of(name, known) for name in edges}
    return sorted((a, b) for a, targets in edges.items() for b in targets if rank[b] > rank[a])


def main() -> int:
    edges = graph()
    found = cycles(edges)
    print(f"{len(edges)} modules, {sum(map(len, edges.values()))} import edges")
    print(f"{len(found)} cycles")
    for c in found:
        print("  " + " ↔ ".join(sorted(c)))
    climbs = upward(edges)
    print(f"{len(climbs)} upward imports")
    known = modules()
    for a, b in climbs:
        print(f"  {a} ({LAYERS[layer_of(a, known)][0]}) → {b} ({LAYERS[layer_of(b, known)][0]})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
