"""Every import a user copies from the shipped docs resolves: the README, docs/*.md, the notebooks
and the bench scripts name modules and objects that exist (a moved module keeps its old path), of
the installed packages and of the repository's tools/."""

from __future__ import annotations

import ast
import importlib
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OWN = ("interp", "interventions", "probes", "tools")


def _code_sources() -> dict[str, str]:
    sources: dict[str, str] = {}
    for md in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        blocks = re.findall(r"```python\n(.*?)```", md.read_text(), flags=re.S)
        for k, block in enumerate(blocks):
            sources[f"{md.relative_to(ROOT)}#{k}"] = block
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(nb.read_text())["cells"]
        for k, cell in enumerate(cells):
            if cell["cell_type"] == "code":
                sources[f"{nb.relative_to(ROOT)}#{k}"] = "".join(cell["source"])
    for script in sorted((ROOT / "bench").glob("*.py")):
        sources[str(script.relative_to(ROOT))] = script.read_text()
    return sources


def _imports() -> dict[str, set[str]]:
    """(module, name or "") -> where it is used, for every import of the project's packages."""
    found: dict[str, set[str]] = {}
    for where, source in _code_sources().items():
        # notebook magics and shell lines are not Python
        lines = [ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))]
        tree = ast.parse("\n".join(lines))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                keys = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                keys = [f"{node.module}:{alias.name}" for alias in node.names]
            else:
                continue
            for key in keys:
                if key.split(".")[0].split(":")[0] in OWN:
                    found.setdefault(key, set()).add(where)
    return found


IMPORTS = _imports()


def test_the_docs_import_something() -> None:
    """The scan sees the docs' imports (a broken scan would pass every case below vacuously)."""
    assert len(IMPORTS) >= 20
    assert any(where.startswith("README.md") for where in IMPORTS["interp"])
    assert any(where.startswith("notebooks/") for where in IMPORTS["interp.studies.coe:diagnose"])


@pytest.mark.parametrize("key", sorted(IMPORTS))
def test_import_path_resolves(key: str) -> None:
    module, _, name = key.partition(":")
    mod = importlib.import_module(module)
    if name and name != "*" and not hasattr(mod, name):
        # `from package import submodule` is valid too
        importlib.import_module(f"{module}.{name}")
