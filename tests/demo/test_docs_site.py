"""The documentation site (``docs/``, ``make docs``) builds with warnings as errors: a broken link or
cross-reference, a bad fence, a docstring that does not parse, a page outside every table of
contents or a module autodoc cannot import fails here. The API reference names every public module.

The build runs in its own process (autodoc imports every module of the project; the suite's import
hooks stay out of it) into a temporary folder, and never executes the notebooks
(``nb_execution_mode = "off"``: ``tests/demo/test_notebooks.py`` executes them).
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PACKAGES = ("interp", "interventions", "probes")
# scripts run by path, not importable as modules (docs/api/testing.md says why)
SCRIPTS = {"interp.testing.ndif_server"}


def _public_modules() -> list[str]:
    """Every module of the three packages with no underscore-prefixed part (checkpoint folders hold
    data, not code)."""
    names = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if any(p.startswith("_") for p in parts) or "checkpoint" in parts:
                continue
            names.append(".".join(parts))
    return [n for n in names if n not in SCRIPTS]


def _documented_modules() -> list[str]:
    """The modules the API pages name, with the studies' sections the site build adds from the
    study registry (``docs/conf.py``)."""
    from interp.study_registry import API_MARKER, studies_api

    return [
        m
        for page in sorted((DOCS / "api").glob("*.md"))
        for m in re.findall(
            r"^\.\. automodule:: (\S+)$",
            page.read_text().replace(API_MARKER, studies_api()),
            flags=re.M,
        )
    ]


def test_the_api_reference_names_every_public_module_once():
    documented = _documented_modules()
    missing = sorted(set(_public_modules()) - set(documented))
    assert not missing, f"add a section to a page of docs/api/ for: {missing}"
    twice = sorted({m for m in documented if documented.count(m) > 1})
    assert not twice, twice
    stale = sorted(set(documented) - set(_public_modules()))
    assert not stale, f"docs/api/ names modules that do not exist: {stale}"


def _exported() -> dict[str, object]:
    """Every function and class a package of the project exports (``__all__``), with the public
    methods each class defines, by dotted name."""
    packages = [*PACKAGES, "interp.datasets", "interp.testing"]
    packages += [
        f"interp.studies.{p.name}" for p in sorted((ROOT / "interp" / "studies").iterdir())
    ]
    found: dict[str, object] = {}
    for name in packages:
        if not (ROOT / name.replace(".", "/") / "__init__.py").is_file():
            continue
        module = importlib.import_module(name)
        for export in getattr(module, "__all__", []):
            obj = getattr(module, export)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            found[f"{name}.{export}"] = obj
            if inspect.isclass(obj):
                for attr, value in vars(obj).items():
                    if not attr.startswith("_") and inspect.isfunction(value):
                        found[f"{name}.{export}.{attr}"] = getattr(obj, attr)
    return found


def test_every_exported_name_has_a_docstring():
    """The API reference renders each public name with its docstring (one inherited from the
    method it overrides counts)."""
    names = _exported()
    assert "interp.load" in names and "interventions.Steer" in names
    missing = sorted(n for n, obj in names.items() if not (inspect.getdoc(obj) or "").strip())
    assert not missing, f"public names without a docstring: {missing}"


def fence_problems(markdown: str) -> list[str]:
    """Code fences that swallow text: a line inside a block that starts with the block's fence
    and goes on (``"``` Options: ..."`` does not close a block, CommonMark reads it as code), or a
    block still open at the end of the file."""
    problems, open_at, marker = [], None, ""
    for number, line in enumerate(markdown.split("\n"), start=1):
        stripped = line.strip()
        fence = re.match(r"(`{3,}|~{3,})(.*)", stripped)
        if fence is None:
            continue
        if open_at is None:
            open_at, marker = number, fence.group(1)
        elif fence.group(1).startswith(marker) and not fence.group(2).strip():
            open_at = None
        elif fence.group(1).startswith(marker):
            problems.append(
                f"line {number}: a fence with text after it inside the block of line {open_at}"
            )
    if open_at is not None:
        problems.append(f"line {open_at}: a code block never closed")
    return problems


def test_no_code_fence_swallows_text():
    pages = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
    bad = {
        str(p.relative_to(ROOT)): fence_problems(p.read_text())
        for p in pages
        if "_build" not in p.parts and fence_problems(p.read_text())
    }
    assert not bad, bad
    # the check itself: the README's old "``` Options:" line is caught
    assert fence_problems("```bash\ninterp coe\n``` Options: `--metric`\n\ntext\n```\n")


def test_every_study_command_has_a_page():
    """Each study subcommand (the ``interp.studies`` entry points) is listed on the studies page."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    table = pyproject.split('[project.entry-points."interp.studies"]')[1].split("\n[")[0]
    commands = set(re.findall(r"^(\w+) = ", table, flags=re.M)) - {"doctor"}
    assert {"coe", "audit", "flow"} <= commands, commands
    from interp.study_registry import STUDIES_MARKER, studies_page

    page = (DOCS / "studies.md").read_text()
    assert STUDIES_MARKER in page  # the table is the study registry's, added when the site builds
    listed = page.replace(STUDIES_MARKER, studies_page())
    missing = sorted(c for c in commands if f"`interp {c}`" not in listed)
    assert not missing, f"docs/studies.md lists no page for: {missing}"


@pytest.mark.slow
def test_the_site_builds_with_warnings_as_errors(tmp_path):
    pytest.importorskip("sphinx", reason="the docs extra is not installed (make install adds it)")
    pytest.importorskip("myst_nb", reason="the docs extra is not installed (make install adds it)")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-b",
            "html",
            "-W",
            "--keep-going",
            "-q",
            "-d",
            str(tmp_path / "doctrees"),
            str(DOCS),
            str(tmp_path / "html"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"},
    )
    assert out.returncode == 0, f"sphinx-build failed:\n{out.stderr[-6000:]}"
    html = tmp_path / "html"
    # the pages the index promises, the notebooks rendered, the API reference
    for page in ("index", "getting_started", "concepts", "studies", "extending", "performance"):
        assert (html / f"{page}.html").is_file(), page
    assert len(list((html / "notebooks").glob("*.html"))) == len(
        list((ROOT / "notebooks").glob("*.ipynb"))
    )
    api = (html / "api" / "core.html").read_text()
    assert 'id="interp.model.load"' in api and 'id="interp.samples.Sample"' in api
