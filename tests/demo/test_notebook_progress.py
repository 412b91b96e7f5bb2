"""Progress bars render as widgets in Jupyter (ipywidgets is in the notebook and dev extras), not
as an ``IProgress not found`` warning per bar."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]


def _extra(name: str) -> list[str]:
    """The package names of an extra (its one-line list in pyproject.toml)."""
    line = re.search(rf"^{name} = \[(.*)\]$", (ROOT / "pyproject.toml").read_text(), re.M)
    assert line, f"no extra {name!r}"
    return [re.split(r"[<>=\[ ]", r.strip().strip('"'))[0] for r in line.group(1).split(",")]


def test_ipywidgets_is_in_the_notebook_extra_and_in_what_ci_installs():
    assert "ipywidgets" in _extra("notebook")
    assert "ipywidgets" in _extra("dev")  # the suite executes the notebooks


@pytest.mark.slow
def test_a_progress_bar_in_a_kernel_is_a_widget_without_a_warning(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
            "from interp.tracing import progress\n"
            "list(progress(range(3), total=3, desc='x', enabled=True))"
        )
    ]
    NotebookClient(nb, timeout=300, kernel_name="python3").execute()
    outputs = nb.cells[0]["outputs"]
    text = " ".join(str(o.get("text", "")) for o in outputs)
    assert "IProgress not found" not in text
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in outputs)
