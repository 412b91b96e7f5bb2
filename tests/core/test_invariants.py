"""The core's shape: no import cycles in ``interp/``, ``interventions/`` and ``probes/`` (every import
counts, function-local and ``TYPE_CHECKING`` ones too; see :mod:`tools.imports`), no new
import from a lower layer up to a higher one, the encoding stages import only the stages before
them, and ``docs/architecture.md`` places every module in exactly one layer, in the order of
:data:`tools.imports.LAYERS`."""

from __future__ import annotations

import re
from pathlib import Path

from tools.imports import (
    LAYERS,
    ROOT,
    cycles,
    graph,
    imported_layers,
    imports,
    layer_of,
    layers_table,
    modules,
    upward,
    write_doc,
)

# The cycles allowed for now, each as its modules: none. The list may only shrink (a cycle that is
# gone must leave it); a new cycle fails.
ALLOWED_CYCLES: list[frozenset[str]] = []

# The imports that climb from a lower layer of LAYERS to a higher one, allowed for now: none (the
# model layer's four into interp/demo/ went when the demo models became a registered model source,
# interp/sources.py). The list may only shrink; a new upward import fails.
ALLOWED_UPWARD: set[tuple[str, str]] = set()

# interp/encoding/: one module per stage, in pipeline order, after the codec (what the stages know
# of the model) and before teacher forcing (targets appended to an assembled encoding)
PIPELINE = ("resolve", "batch", "render", "process", "locate", "mask", "assemble", "select")
STAGES = ("codec", *PIPELINE, "targets")

DOC = ROOT / "docs" / "architecture.md"


def _show(cycle: frozenset[str]) -> str:
    return " ↔ ".join(sorted(cycle))


def test_no_import_cycle_outside_the_shrinking_allowlist():
    found = set(cycles(graph()))
    new = sorted(_show(c) for c in found - set(ALLOWED_CYCLES))
    gone = sorted(_show(c) for c in set(ALLOWED_CYCLES) - found)
    assert not new, f"new import cycles: {new}"
    assert not gone, f"cycles gone but still allowed (remove them from ALLOWED_CYCLES): {gone}"


def test_no_new_upward_import():
    found = set(upward())
    new = sorted(found - ALLOWED_UPWARD)
    gone = sorted(ALLOWED_UPWARD - found)
    assert not new, f"imports from a lower layer up to a higher one (see LAYERS): {new}"
    assert not gone, (
        f"upward imports gone but still allowed (remove them from ALLOWED_UPWARD): {gone}"
    )


def test_the_upward_count_finds_an_import_that_climbs():
    # probes is the bottom layer, interp.cli near the top: probes → cli climbs, cli → probes not
    edges = {"probes.stats": {"interp.cli"}, "interp.cli": {"probes.stats"}}
    assert upward(edges) == [("probes.stats", "interp.cli")]


def test_the_cycle_finder_finds_a_cycle_through_a_function_local_import(tmp_path: Path):
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(edges) == [frozenset({"a", "b", "c"})]
    # a TYPE_CHECKING import and an import inside a function both count
    package = tmp_path / "interp"
    package.mkdir()
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from .x import X\n"
        "def f():\n    from . import y\n"
    )
    (package / "w.py").write_text(source)
    known = {"interp.x": package / "x.py", "interp.y": package / "y.py"}
    import tools.imports as graph_module

    root = graph_module.ROOT
    graph_module.ROOT = tmp_path
    try:
        assert imports(package / "w.py", known) == {"interp.x", "interp.y"}
    finally:
        graph_module.ROOT = root


def _encoding_stage(name: str) -> str | None:
    prefix = "interp.encoding."
    if not name.startswith(prefix):
        return None
    return name[len(prefix) :].split(".")[0]


def test_each_encoding_stage_imports_only_earlier_stages_and_never_the_model():
    folder = ROOT / "interp" / "encoding"
    present = sorted(p.stem for p in folder.glob("*.py") if p.stem != "__init__")
    assert present == sorted(STAGES), f"interp/encoding/ holds {present}, not the stages {STAGES}"
    edges = graph()
    for k, stage in enumerate(STAGES):
        name = f"interp.encoding.{stage}"
        for target in sorted(edges[name]):
            assert target != "interp.model", f"{name} imports interp.model (pass a codec)"
            assert not target.startswith("interp.studies"), f"{name} imports {target}"
            later = _encoding_stage(target)
            if later is not None:
                assert later in STAGES[:k], f"{name} imports {target}, not an earlier stage"


def _layers_rows() -> list[str]:
    """The rows of the layers table (the lines of the section that begin with ``|``, less the
    header and its rule)."""
    text = DOC.read_text()
    start = text.index("## The layers")
    section = text[start : text.index("\n## ", start + 1)]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    return rows[2:]


def _layers_table() -> str:
    return "\n".join(_layers_rows())


def _expected_entries() -> list[str]:
    """What the layers table must name: every module of ``interp/`` (a sub-package by its
    modules where it is part of the core, else as a folder), every study package, and the
    ``interventions/`` and ``probes/`` packages."""
    out = ["interventions/", "probes/", "interp/__init__.py"]
    for path in sorted((ROOT / "interp").iterdir()):
        if path.suffix == ".py" and path.stem != "__init__":
            out.append(f"interp/{path.name}")
        elif (path / "__init__.py").exists():
            if path.name in ("encoding", "conditions"):
                out += [
                    f"interp/{path.name}/{p.name}"
                    for p in sorted(path.glob("*.py"))
                    if p.stem != "__init__"
                ]
            elif path.name == "studies":
                out += [
                    f"interp/studies/{p.parent.name}/" for p in sorted(path.glob("*/__init__.py"))
                ]
            else:
                out.append(f"interp/{path.name}/")
    return out


def test_the_architecture_doc_places_every_module_in_exactly_one_layer():
    table = _layers_table()
    quoted = re.findall(r"`([^`\s]+)`", table)
    wrong = {
        entry: quoted.count(entry) for entry in _expected_entries() if quoted.count(entry) != 1
    }
    assert not wrong, f"docs/architecture.md's layers table names these not exactly once: {wrong}"
    known = set(_expected_entries())
    extra = [q for q in quoted if q.startswith(("interp/", "interventions/", "probes/"))]
    assert set(extra) <= known, f"the layers table names what is not a module: {set(extra) - known}"


def test_the_layers_table_has_the_rows_of_LAYERS_in_their_order():
    rows = [[cell.strip() for cell in row.strip("|").split("|")] for row in _layers_rows()]
    assert [r[0] for r in rows] == [layer.name for layer in LAYERS]
    names = modules()
    paths = {path.relative_to(ROOT).as_posix(): name for name, path in names.items()}
    for k, row in enumerate(rows):
        for entry in re.findall(r"`([^`\s]+)`", row[1]):
            if not entry.startswith(("interp/", "interventions/", "probes/")):
                continue
            held = [n for p, n in paths.items() if p == entry or p.startswith(entry)]
            assert held, f"{entry} holds no module"
            for name in held:
                layer = layer_of(name, names)
                assert layer == k, (
                    f"{name}: row {row[0]!r} of the doc, {LAYERS[layer][0]!r} in LAYERS"
                )


def test_the_layers_table_is_generated_from_the_code(tmp_path: Path):
    assert layers_table() in DOC.read_text(), (
        "docs/architecture.md's layers table differs from LAYERS and the import graph: "
        "run python -m tools.imports --write"
    )
    stale = tmp_path / "architecture.md"
    stale.write_text(DOC.read_text().replace("| run options |", "| run settings |"))
    assert write_doc(stale) and stale.read_text() == DOC.read_text()
    assert not write_doc(stale)


def test_each_layer_imports_only_the_layers_before_it():
    for k, below in enumerate(imported_layers()):
        assert all(j < k for j in below), (
            f"{LAYERS[k].name} imports {[LAYERS[j].name for j in below]}"
        )
    # the column is measured: the encoding stages read the adapters, the statistics import nothing
    names = [layer.name for layer in LAYERS]
    uses = imported_layers()
    assert names.index("adapters") in uses[names.index("encoding")]
    assert uses[names.index("statistics")] == []


def test_the_architecture_doc_draws_the_encoding_pipeline():
    text = DOC.read_text()
    assert "## The encoding pipeline" in text
    section = text[text.index("## The encoding pipeline") :]
    drawing = section.split("\n## ")[0]
    drawn = sorted((drawing.index(f"`{s}`"), s) for s in PIPELINE if f"`{s}`" in drawing)
    assert [s for _, s in drawn] == list(PIPELINE), f"the pipeline drawing names {drawn}"


def test_every_module_is_importable_as_listed():
    # the graph knows each module by the name Python imports it under
    names = modules()
    assert "interp.testing.tiny" in names and "probes.stats" in names
