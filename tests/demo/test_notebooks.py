"""Every notebook under notebooks/ executes top to bottom without error and is stored clean (the
README's Python examples: tests/demo/test_readme_blocks.py)."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_executes(path, tmp_path):
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    client.execute()  # raises CellExecutionError with the failing cell's traceback
    errors = [
        o
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if o.get("output_type") == "error"
    ]
    assert not errors


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebooks_are_stored_without_machine_paths_or_progress_bars(path):
    assert not re.search(r"(/work|/root|/home|/tmp)/", path.read_text()), "a machine path"
    nb = nbformat.read(path, as_version=4)
    outputs = " ".join(
        str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", ""))
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
    )
    assert not re.search(r"\d+(\.\d+)?(it|sample)/s\]", outputs), "progress-bar debris"
    assert "Loading weights" not in outputs and "TqdmWarning" not in outputs
