"""The import graph of the project's packages (``interp``, ``interventions``, ``probes``), read
from the source with ``ast``: every import counts, at module level, inside a function or under
``if TYPE_CHECKING:``.

An edge ``a → b`` means module ``a`` names module ``b`` in an import: ``import b``,
``from b import name`` (``b`` the package when ``name`` is not a submodule), ``from . import b``.
Importing a submodule runs its package's ``__init__`` too, but the packages' ``__init__`` files are
lazy (PEP 562), so that is not counted as an edge to the package. A cycle is a strongly connected
component of more than one module.

``python -m interp.testing.imports`` prints the cycles and the layer counts.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("interp", "interventions", "probes")


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


def main() -> int:
    edges = graph()
    found = cycles(edges)
    print(f"{len(edges)} modules, {sum(map(len, edges.values()))} import edges")
    print(f"{len(found)} cycles")
    for c in found:
        print("  " + " ↔ ".join(sorted(c)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
