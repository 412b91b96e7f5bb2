"""The study registry (:mod:`interp.study_registry`): a study is declared once and found
everywhere. A study scaffolded in a temporary folder (its package and one entry point, nothing of
the project edited) becomes an ``interp`` command, an audit section and an ``interp reproduce``
paper; every list of the studies written by hand (the docs, the README, the packages' docstrings)
names exactly the registered studies."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from interp import study_registry
from interp.cli import build_parser
from interp.study_registry import StudyEntry

ROOT = Path(__file__).resolve().parents[2]
NAME = "scaffolded"

# the study's package: what a new study writes (its tests aside)
SCAFFOLD = {
    "scaffolded_study/__init__.py": '''
        """A scaffolded study."""
        from interp.study_registry import StudyEntry

        ENTRY = StudyEntry(
            "scaffolded",
            "Scaffolded",
            "whether a study declared once is found everywhere",
            audit=".audit:STUDY",
            recipe=".cli:RECIPE",
        )
    ''',
    "scaffolded_study/cli.py": '''
        """``interp scaffolded``: a scaffolded study's command."""
        from interp.studies.reproduce.recipes import Recipe, Run


        def register(sub):
            p = sub.add_parser("scaffolded", help="a scaffolded study")
            p.add_argument("--size", type=int, default=1)
            p.set_defaults(func=lambda args: 0)


        RECIPE = Recipe(
            "scaffolded", "scaffolded", "a table", (Run("toy", None, "demo"),),
            lambda model: [], lambda out, run: [],
        )
    ''',
    "scaffolded_study/audit.py": '''
        """The scaffolded study's audit section."""
        from interp.studies.audit.registry import Selection, Study

        STUDY = Study(
            "scaffolded", "Scaffolded", 99,
            lambda samples: Selection.skip("a scaffold runs nothing"),
            lambda vlm, samples, options: None,
        )
    ''',
    # the one registration: the line a project's pyproject.toml gives, as installed
    "scaffolded_study-0.1.dist-info/entry_points.txt": """
        [interp.studies]
        scaffolded = scaffolded_study:ENTRY
    """,
}


@pytest.fixture
def scaffolded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The scaffolded study on ``sys.path``; the files it took."""
    written = []
    for name, text in SCAFFOLD.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
        written.append(path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield written
    for module in [m for m in sys.modules if m.startswith("scaffolded_study")]:
        del sys.modules[module]


def test_a_registration_naming_the_command_finds_the_study_beside_it(scaffolded: list[Path]):
    """``name = "<package>.cli:register"``, the form before the registry (an install whose
    metadata predates it): the study its package declares is still found."""
    registration = scaffolded[-1]
    registration.write_text("[interp.studies]\nscaffolded = scaffolded_study.cli:register\n")
    entry = study_registry.study(NAME)
    assert entry is not None and entry.ref("audit") == "scaffolded_study.audit:STUDY"
    from interp.studies.reproduce.cli import papers

    assert NAME in papers()


def _subcommands(argv: list[str]) -> dict[str, object]:
    parser = build_parser(argv)
    action = next(a for a in parser._actions if a.dest == "command")
    return dict(action.choices)  # type: ignore[arg-type]


def test_a_study_declared_once_is_found_everywhere(scaffolded: list[Path]):
    # its package and one registration, plus its tests: at most 5 files
    assert len(scaffolded) + 1 <= 5
    entry = study_registry.study(NAME)
    assert entry is not None and entry.package == "scaffolded_study"
    assert entry.ref("cli") == "scaffolded_study.cli:register"
    # the command line: listed by `interp --help` without importing the study, then run
    assert NAME in _subcommands(["--help"])
    assert "scaffolded_study.cli" not in sys.modules
    args = build_parser([NAME, "--size", "3"]).parse_args([NAME, "--size", "3"])
    assert args.size == 3 and args.func(args) == 0
    # the audit
    from interp.studies.audit.registry import studies

    assert NAME in [s.key for s in studies()]
    # reproduce: its list of papers and its recipes
    from interp.studies.reproduce.cli import papers
    from interp.studies.reproduce.recipes import recipes

    assert NAME in papers() and recipes()[NAME].title == "a table"
    # this project's docs list its own studies only (the scaffold declares no docs page)
    assert "scaffolded" not in study_registry.studies_page() + study_registry.studies_api()
    argv = ["reproduce", NAME, "--model", "demo", "--out", "x"]
    assert build_parser(argv).parse_args(argv).paper == NAME


def test_the_project_studies_are_its_packages():
    entries = study_registry.studies()
    packages = sorted(p.parent.name for p in (ROOT / "interp/studies").glob("*/__init__.py"))
    assert sorted(e.name for e in entries) == packages
    for entry in entries:
        assert entry.package == f"interp.studies.{entry.name}"
        assert entry.name in study_registry.load(f"{entry.package}:ENTRY").name


def test_each_declared_part_exists():
    from interp.studies.audit.registry import AuditStudy

    for entry in study_registry.studies():
        assert callable(entry.load("cli")), entry.name
        if entry.audit is not None:
            study = entry.load("audit")
            assert isinstance(study, AuditStudy) and study.key == entry.name
        for path in (entry.docs, entry.notebook, entry.bench):
            assert path is None or (ROOT / path).is_file(), (entry.name, path)
        assert entry.docs is not None, f"{entry.name} declares no docs page"


def test_the_audit_and_reproduce_lists_are_the_registry():
    from interp.studies.audit.registry import studies
    from interp.studies.reproduce.cli import papers
    from interp.studies.reproduce.recipes import RECIPES, recipes

    entries = study_registry.studies()
    assert {s.key for s in studies()} == {e.name for e in entries if e.audit}
    assert set(papers()) == {e.name for e in entries if e.recipe} == set(RECIPES)
    assert recipes() == RECIPES


def test_reading_the_registry_imports_no_study_code():
    probe = (
        "import sys, interp.study_registry as r; r.studies(); import interp.cli as c; "
        "c.build_parser(['--help']); print(sorted(m for m in sys.modules if m.startswith("
        "'interp.studies.') and m.count('.') > 2 or m in ('torch', 'interp.doctor')))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


# -- the lists written by hand name exactly the registered studies ---------------------------------


def _names() -> set[str]:
    return {e.name for e in study_registry.studies()}


def _between(text: str, start: str, end: str) -> str:
    i = text.index(start)
    return text[i : text.index(end, i + len(start))]


def test_the_studies_docstring_table():
    import interp.studies

    table = _between(interp.studies.__doc__ or "", "=====", "\n\n")
    assert set(re.findall(r"^``(\w+)``", table, flags=re.M)) == _names()


def test_the_docs_studies_page_is_generated_from_the_registry():
    text = (ROOT / "docs/studies.md").read_text()
    assert study_registry.STUDIES_MARKER in text and "| [" not in text  # no list by hand
    page = study_registry.studies_page()
    rows = {line for line in page.splitlines() if line.startswith("| [")}
    assert rows == {
        f"| [{e.title}]({Path(e.docs or '').name}) | `interp {e.name}` | {e.purpose} |"
        for e in study_registry.studies()
    }
    toctree = _between(page, "```{toctree}", "\n```").splitlines()[3:]
    assert set(toctree) == {Path(e.docs or "").stem for e in study_registry.studies()}


def test_the_readme_architecture_and_api_lists():
    """The README and the architecture page are read on GitHub as they are: written by hand,
    checked here; the API page's study sections are generated."""
    readme = _between((ROOT / "README.md").read_text(), "## Studies", "\n## ")
    listed = set(re.findall(r"^- \[`interp (\w+)`\]\((\S+)\)", readme, flags=re.M))
    assert listed == {(e.name, e.docs) for e in study_registry.studies()}
    arch = _between((ROOT / "docs/architecture.md").read_text(), "## The studies", "\n## ")
    assert set(re.findall(r"^\| `interp/studies/(\w+)/` \| `interp \1`", arch, re.M)) == _names()
    api = (ROOT / "docs/api/studies.md").read_text()
    assert study_registry.API_MARKER in api and "interp.studies.coe" not in api  # generated
    generated = study_registry.studies_api()
    assert set(re.findall(r"^## `interp\.studies\.(\w+)`$", generated, flags=re.M)) == _names()


def test_the_getting_started_tree_and_the_audit_docstring():
    tree = _between((ROOT / "docs/getting_started.md").read_text(), "interp/studies/ ", "\ninterp/")
    assert set(re.findall(r"\b(\w+) \([^()]*`interp \1`", tree)) == _names()
    import interp.studies.audit
    from interp.studies.audit.registry import studies

    doc = _between(interp.studies.audit.__doc__ or "", "The project's studies", "\n\n")
    assert re.findall(r"``(\w+)``\s+\(", doc) == [s.key for s in studies()]  # the report's order


def test_the_notebooks_page_lists_each_study_notebook():
    page = (ROOT / "docs/notebooks.md").read_text()
    for entry in study_registry.studies():
        if entry.notebook is not None:
            assert Path(entry.notebook).stem in page, entry.name


def test_a_registration_that_is_not_an_entry_is_a_command_error():
    from importlib.metadata import EntryPoint

    value = "interp.study_registry:ENTRY_POINT_GROUP"  # a string: neither entry nor function
    found = study_registry.command(EntryPoint("broken", value, "interp.studies"))
    assert found.study is None and isinstance(found.error, ImportError)
    entry = StudyEntry("x", "X", "y", package="p")
    assert entry.ref("cli") == "p.cli:register" and entry.ref("audit") is None
