"""``docs/architecture.md`` against the tree: the paths and names it gives exist, every study
package is listed, and its import rules hold in every module (read with ``ast``, so imports inside
functions count too)."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
ROOTS = (
    "interp/",
    "interventions/",
    "probes/",
    "tests/",
    "docs/",
    "bench/",
    "notebooks/",
    "tools/",
)


def _doc() -> str:
    return DOC.read_text()


def _quoted() -> list[str]:
    return re.findall(r"`([^`\s]+)`", _doc())


def _paths() -> set[str]:
    return {
        q
        for q in _quoted()
        if (q.startswith(ROOTS) or q in ("pyproject.toml", "Makefile")) and "<" not in q
    }


def _dotted() -> set[str]:
    return {q for q in _quoted() if re.fullmatch(r"(interp|probes|interventions)(\.\w+)+", q)}


def _modules(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[str, str | None]]:
    """(module, name) of every import in the file; name is None for ``import module``. Relative
    imports are resolved against the file's package."""
    package = _module_name(path)
    if path.name != "__init__.py":
        package = package.rpartition(".")[0]
    out: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(a.name, None) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            out += [(module, a.name) for a in node.names]
    return out


def _attribute_chains(path: Path) -> set[str]:
    """Dotted attribute chains rooted at a plain name, e.g. ``interp.runner.run``."""
    chains = set()
    for node in ast.walk(ast.parse(path.read_text())):
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and parts:
            chains.add(".".join([node.id, *reversed(parts)]))
    return chains


def _runner_internals() -> set[str]:
    """The dotted names of the doc's rule on the run loop's internals."""
    text = _doc()
    start = text.index("No study imports the run loop's internals")
    rule = text[start : text.index("Public pieces", start)]
    names = set(re.findall(r"`(interp\.[\w.]+)`", rule))
    assert len(names) >= 10, names
    return names


def _studies() -> list[Path]:
    return sorted(p.parent for p in (ROOT / "interp" / "studies").glob("*/__init__.py"))


def test_every_path_and_name_the_doc_gives_exists():
    missing = sorted(p for p in _paths() if not (ROOT / p.rstrip("/")).exists())
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"
    for dotted in sorted(_dotted()):
        module, _, attr = dotted.rpartition(".")
        try:
            found = importlib.import_module(dotted)
        except ImportError:
            found = getattr(importlib.import_module(module), attr, None)
        assert found is not None, f"docs/architecture.md names {dotted}, which does not exist"


def test_every_study_package_is_listed():
    listed = _paths()
    for study in _studies():
        name = f"{study.relative_to(ROOT).as_posix()}/"
        assert name in listed, f"{name} is not described in docs/architecture.md"


def _layer_rows() -> list[str]:
    """The rows of the layers table (its lines that begin with ``|``, less header and rule)."""
    text = _doc()
    start = text.index("## The layers")
    section = text[start : text.index("\n## ", start + 1)]
    return [line for line in section.splitlines() if line.startswith("|")][2:]


def test_a_folder_described_module_by_module_names_each_of_its_modules():
    """Where a row of the layers table names some of a folder's modules by file name beside the
    folder (``interp/adapters/`` (``base.py``: ...)), it names every one: a module added to the
    folder is described, not left out of a list that reads as complete (``logits.py`` was).
    Every module is placed in exactly one layer by tests/core/test_invariants.py; this is the
    description of a folder whose row lists its parts."""
    for row in _layer_rows():
        quoted = set(re.findall(r"`([^`\s]+)`", row))
        for folder in sorted(q for q in quoted if q.endswith("/") and (ROOT / q).is_dir()):
            modules = {p.name for p in (ROOT / folder).glob("*.py") if p.name != "__init__.py"}
            named = modules & quoted
            missing = sorted(modules - named)
            assert not named or not missing, (
                f"docs/architecture.md lists the modules of {folder} but not {missing}"
            )


def test_no_study_imports_the_run_loops_internals():
    internals = _runner_internals()
    short = {name.rpartition(".")[2] for name in internals}
    for path in _modules("interp/studies"):
        for module, name in _imports(path):
            where = path.relative_to(ROOT)
            assert f"{module}.{name}" not in internals, f"{where} imports {module}.{name}"
            assert not (module == "interp" and name in short), f"{where} imports interp.{name}"
            assert module != "interp.runner" or name is not None, f"{where} imports the runner"
        used = _attribute_chains(path)
        for name in internals:
            top = "interp." + name.rpartition(".")[2]
            assert name not in used and top not in used, f"{path.relative_to(ROOT)} uses {name}"


def test_the_runner_internals_are_real_names():
    for dotted in sorted(_runner_internals()):
        module, _, attr = dotted.rpartition(".")
        assert hasattr(importlib.import_module(module), attr), dotted


def test_no_study_imports_another():
    for study in _studies():
        if study.name == "audit":
            continue
        own = f"interp.studies.{study.name}"
        for path in study.rglob("*.py"):
            for module, name in _imports(path):
                full = module if name is None else f"{module}.{name}"
                if full.startswith("interp.studies.") and not full.startswith(own):
                    if module == "interp.studies" and name == study.name:
                        continue  # the package itself (its lazy exports)
                    if path.name == "audit.py" and full.startswith("interp.studies.audit"):
                        continue  # a study's audit module speaks the audit's protocol
                    pytest.fail(f"{path.relative_to(ROOT)} imports {full}")


def test_the_core_never_imports_a_study_or_an_intervention():
    for path in _modules("interp"):
        if "studies" in path.relative_to(ROOT / "interp").parts:
            continue
        for module, name in _imports(path):
            full = module if name is None else f"{module}.{name}"
            where = path.relative_to(ROOT)
            assert not full.startswith("interp.studies"), f"{where} imports {full}"
            # interp/testing sits in the support layer, above interventions (docs/architecture.md):
            # its zoo checks run the real Steer on each type
            if "testing" not in path.relative_to(ROOT / "interp").parts:
                assert not full.startswith("interventions"), f"{where} imports {full}"


def test_interventions_never_import_a_study():
    for path in _modules("interventions"):
        for module, name in _imports(path):
            full = module if name is None else f"{module}.{name}"
            assert not full.startswith("interp.studies"), f"{path.relative_to(ROOT)}: {full}"


def test_probes_import_neither_torch_nor_interp():
    banned = ("torch", "transformers", "nnsight", "interp", "interventions")
    for path in _modules("probes"):
        for module, _ in _imports(path):
            top = module.split(".")[0]
            assert top not in banned, f"{path.relative_to(ROOT)} imports {module}"


def _loaded_after(code: str, names: tuple[str, ...]) -> list[str]:
    probe = f"import sys; {code}; print(sorted(m for m in {names!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return ast.literal_eval(out.stdout.strip())


def test_importing_probes_loads_neither_torch_nor_interp():
    assert _loaded_after("import probes", ("torch", "transformers", "nnsight", "interp")) == []


def test_importing_the_core_and_the_command_loads_no_study():
    assert _loaded_after("import interp, interp.cli", ("interp.studies",)) == []
