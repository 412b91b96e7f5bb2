"""The test suite's own layout: test files in one subfolder per part of the project, helpers in
:mod:`interp.testing` (the installed conformance kit), in ``tools/`` (the repository's tooling) or as
fixtures in ``tests/conftest.py`` (never imported from a test file or
from ``conftest``), every file name unique (pytest imports each file by its name), and every
mention of a test file in the documentation pointing at a file that exists."""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
# the parts of the project, one folder each; fixtures/ holds data files
SUBFOLDERS = {"core", "interventions", "studies", "probes", "families", "demo", "remote"}


def _python_files() -> list[Path]:
    return [p for p in TESTS.rglob("*.py") if "fixtures" not in p.relative_to(TESTS).parts]


def _imported_modules(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


def test_no_test_file_imports_conftest_or_another_test_file():
    bad = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in _python_files()
        for name in _imported_modules(path)
        if name.split(".")[0] == "conftest" or name.split(".")[-1].startswith("test_")
    ]
    assert not bad, f"move shared helpers to interp.testing, tools or a conftest fixture: {bad}"


def test_every_test_file_is_in_a_subfolder():
    top = sorted(p.name for p in TESTS.iterdir() if p.name not in ("__pycache__", "fixtures"))
    assert top == sorted(["conftest.py", *SUBFOLDERS]), top
    for path in _python_files():
        rel = path.relative_to(TESTS)
        if rel == Path("conftest.py"):
            continue
        assert len(rel.parts) == 2 and rel.parts[0] in SUBFOLDERS, f"{rel}: not in {SUBFOLDERS}"
        assert path.name.startswith("test_") or path.name == "conftest.py", (
            f"{rel}: a helper module among the tests; put it in interp.testing or tools"
        )


def test_test_file_names_are_unique():
    """pytest imports a test file outside a package by its name alone (no __init__.py here)."""
    files = [p for p in _python_files() if p.name != "conftest.py"]
    twice = [name for name, n in Counter(p.name for p in files).items() if n > 1]
    assert not twice, twice
    assert not list(TESTS.rglob("__init__.py"))


def test_mentions_of_test_files_point_at_files_that_exist():
    """README, docs, Makefile, CI and code mention test files by path (``tests/core/test_layout.py``,
    globs such as ``tests/families/test_real_*.py``, optionally ``::test_name``)."""
    sources = [ROOT / "README.md", ROOT / "Makefile", ROOT / ".ci" / "run", ROOT / "pyproject.toml"]
    for folder in ("docs", "interp", "interventions", "probes", "bench", "notebooks", "tests"):
        sources += [
            p
            for p in (ROOT / folder).rglob("*")
            if p.suffix in (".md", ".py", ".ipynb") and "fixtures" not in p.parts
        ]
    mention = re.compile(r"tests/[\w/*.-]+\.py(?:::(\w+))?")
    missing = []
    for source in sources:
        if not source.exists():
            continue
        for match in mention.finditer(source.read_text(errors="replace")):
            pattern = match.group(0).split("::")[0]
            found = sorted(ROOT.glob(pattern))
            if not found:
                missing.append(f"{source.relative_to(ROOT)}: {pattern}")
            elif match.group(1) and not any(
                f"def {match.group(1)}(" in f.read_text() for f in found
            ):
                missing.append(f"{source.relative_to(ROOT)}: {match.group(0)}")
    assert not missing, missing
