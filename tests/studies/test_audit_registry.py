"""The audit asks the studies: a study that ships outside the project joins ``interp audit``
through an ``interp.studies`` entry point (or :func:`add_study`) alone — its section, numbers,
words, table and place in the report — and the project's studies are found the same way."""

from __future__ import annotations

import json
import textwrap
from html.parser import HTMLParser
from importlib.metadata import EntryPoint

import pytest

from interp import study_registry
from interp.cli import main
from interp.datasets import demo_world
from interp.samples import write_jsonl
from interp.studies.audit import Section, Selection, Study, add_study, registry, remove_study

TOY_AUDIT = """
import pandas as pd

from interp.studies.audit import Labels, Selection, Study


def select(samples):
    chosen = [s for s in samples if s.has_image]
    return Selection(chosen) if chosen else Selection.skip("needs samples with an image")


def section(vlm, samples, options):
    sec = STUDY.new_section("Does the toy count the samples?", samples)
    sec.numbers = {"toy_count": len(samples)}
    sec.verdict = f"The toy counted {len(samples)} samples."
    sec.add_table("Toy table", pd.DataFrame({"toy_value": [1.5]}))
    return sec


STUDY = Study("toy", "Toy study", 35, select, section, Labels({"toy_count": "samples counted"}))
"""


class _Sections(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "section":
            self.ids.append(dict(attrs).get("id", ""))


@pytest.fixture
def toy_entry_point(tmp_path, monkeypatch):
    """A package ``toy_audit_study`` on disk with ``cli.py`` and ``audit.py``, listed as one more
    ``interp.studies`` entry point: nothing of the audit or the core is edited."""
    package = tmp_path / "toy_audit_study"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "cli.py").write_text("def register(sub):\n    sub.add_parser('toy', help='toy')\n")
    (package / "audit.py").write_text(textwrap.dedent(TOY_AUDIT))
    monkeypatch.syspath_prepend(str(tmp_path))
    real = study_registry.entry_points
    toy = EntryPoint("toy", "toy_audit_study.cli:register", registry.ENTRY_POINT_GROUP)
    monkeypatch.setattr(study_registry, "entry_points", lambda group: [*real(group=group), toy])


def test_the_project_studies_are_found_through_their_entry_points_in_report_order():
    keys = [s.key for s in registry.studies()]
    assert keys == [
        "coe",
        "flow",
        "recall",
        "drives",
        "ablation",
        "decoding",
        "conflict",
        "attribute",
    ]


def test_a_toy_study_joins_the_audit_through_an_entry_point(toy_entry_point, tmp_path):
    def fails(vlm, samples, options) -> Section:
        raise RuntimeError("the toy broke")

    def skips(samples) -> Selection:
        return Selection.skip("the toy wants nothing here")

    broken = Study(
        "toy_fails",
        "Failing toy",
        36,
        lambda samples: Selection(list(samples)),
        fails,
        explain=lambda err, n: f"the toy gave up on {n} samples ({err})",
    )
    add_study(broken)
    add_study(Study("toy_skips", "Skipping toy", 1, skips, fails))
    try:
        assert [s.key for s in registry.studies()] == [
            "toy_skips", "coe", "flow", "recall", "drives", "toy", "toy_fails", "ablation", "decoding",
            "conflict", "attribute",
        ]  # fmt: skip
        data = write_jsonl(demo_world("test", n=4, qtypes=["color"]), tmp_path / "d.jsonl")
        n_rows = len(data.read_text().splitlines())
        out = tmp_path / "run"
        argv = ["audit", "--model", "demo", "--data", str(data), "--out", str(out)]
        assert main([*argv, "--studies", "toy,toy_fails,toy_skips", "--no-progress"]) == 0
    finally:
        remove_study("toy_fails")
        remove_study("toy_skips")
    summary = json.loads((out / "summary.json").read_text())
    toy = summary["studies"]["toy"]
    assert toy["status"] == "ran" and toy["numbers"] == {"toy_count": n_rows} and toy["n"] == n_rows
    failed = summary["studies"]["toy_fails"]
    assert failed["status"] == "failed"
    assert failed["reason"] == f"the toy gave up on {n_rows} samples (the toy broke)"
    assert summary["studies"]["toy_skips"] == {
        "ran": False, "status": "skipped", "n": 0, "reason": "the toy wants nothing here"
    }  # fmt: skip
    assert summary["studies"]["coe"]["reason"] == "not asked for (--studies)"
    html = (out / "report.html").read_text()
    page = _Sections()
    page.feed(html)
    assert page.ids == ["toy", "not-run"]
    assert f"The toy counted {n_rows} samples." in html
    assert f'<dt title="toy_count">samples counted</dt><dd>{n_rows}</dd>' in html
    assert "<h3>Toy table</h3>" in html and "<th>toy value</th>" in html
    assert (
        "not run: toy_skips, coe, flow, recall, drives, toy_fails, ablation, decoding, conflict, "
        "attribute" in html
    )


def test_add_study_refuses_what_is_not_a_study():
    with pytest.raises(TypeError, match="AuditStudy|not an audit study"):
        add_study(object())  # type: ignore[arg-type]


def test_the_audit_imports_no_study():
    """The audit's own modules import the core and themselves only: a study is reached through
    its entry point, never by name."""
    import ast
    from pathlib import Path

    import interp.studies.audit as package

    folder = Path(package.__file__).parent
    imported = []
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                assert node.level <= 1, (path.name, node.module)  # nothing above the package
                imported.append(node.module or "")
            elif isinstance(node, ast.Import):
                imported += [a.name for a in node.names]
    studies = [m for m in imported if m.startswith("interp.studies")]
    assert all(m.startswith("interp.studies.audit") for m in studies), studies
    assert len(list(folder.glob("*.py"))) >= 5
