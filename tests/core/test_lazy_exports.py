"""Every lazy package ``__init__`` (PEP 562, :func:`interp._lazy.lazy_exports`) lists each public
name the same way three times: in its ``_LAZY`` map (name → submodule), in ``__all__``, and in the
``if TYPE_CHECKING:`` imports type checkers read; and each name is defined in the submodule the map
names. Read with ``ast``, the submodules imported for the last check only."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from tools.imports import PACKAGES, ROOT, module_name

LAZY_PACKAGES = sorted(
    p
    for pkg in PACKAGES
    for p in (ROOT / pkg).rglob("__init__.py")
    if "lazy_exports(" in p.read_text()
)


def _literal(tree: ast.Module, name: str) -> object:
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            assert node.value is not None
            return ast.literal_eval(node.value)
    raise AssertionError(f"no {name} at the top level")


def _type_checking_imports(tree: ast.Module) -> dict[str, str]:
    """name → submodule (relative, as ``_LAZY`` writes it) of the ``if TYPE_CHECKING:`` block."""
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for sub in ast.walk(node):
                if isinstance(sub, ast.ImportFrom) and sub.level == 1 and sub.module:
                    for alias in sub.names:
                        out[alias.asname or alias.name] = sub.module
    return out


def test_the_lazy_packages_are_found():
    assert len(LAZY_PACKAGES) >= 10
    assert ROOT / "interp" / "__init__.py" in LAZY_PACKAGES


@pytest.mark.parametrize("path", LAZY_PACKAGES, ids=lambda p: module_name(p))
def test_lazy_map_all_and_type_checking_imports_agree(path: Path):
    tree = ast.parse(path.read_text())
    lazy = _literal(tree, "_LAZY")
    assert isinstance(lazy, dict)
    public = set(_literal(tree, "__all__"))  # type: ignore[arg-type]
    named = {n for n in lazy if not n.startswith("_")}  # a private lazy name serves the package
    assert named <= public, f"in _LAZY, not in __all__: {sorted(named - public)}"
    eager = {n for n in public if n not in lazy}
    # names in __all__ but not lazy must be defined in the __init__ itself
    defined = {
        t.id
        for node in tree.body
        if isinstance(node, (ast.Assign, ast.AnnAssign))
        for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(t, ast.Name)
    } | {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    assert eager <= defined, f"in __all__, neither lazy nor defined: {sorted(eager - defined)}"
    typed = _type_checking_imports(tree)
    lazy = {n: m for n, m in lazy.items() if n in named}
    assert typed == lazy, {
        "lazy only": sorted(set(lazy) - set(typed)),
        "TYPE_CHECKING only": sorted(set(typed) - set(lazy)),
        "other module": sorted(n for n in set(lazy) & set(typed) if lazy[n] != typed[n]),
    }


@pytest.mark.parametrize("path", LAZY_PACKAGES, ids=lambda p: module_name(p))
def test_each_lazy_name_is_defined_where_the_map_says(path: Path):
    package = module_name(path)
    lazy = _literal(ast.parse(path.read_text()), "_LAZY")
    assert isinstance(lazy, dict)
    for name, sub in sorted(lazy.items()):
        module = importlib.import_module(f"{package}.{sub}")
        assert hasattr(module, name), f"{package}.{sub} defines no {name}"
