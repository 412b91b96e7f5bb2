"""The Python examples of the README and of the documentation pages that carry the library's worked
examples run as written, each alone in a fresh interpreter (a file of its own, so that under
``make test``'s two workers they can run beside the notebooks)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _python_blocks(markdown: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", markdown, flags=re.S)


# the README and the site's pages whose examples moved there from it (the other pages' examples are
# checked by their own tests)
DOCS = [
    "README.md",
    "docs/getting_started.md",
    "docs/concepts.md",
    "docs/extending.md",
    "docs/decoding.md",
    "docs/conflict.md",
    "docs/drives.md",
    "docs/ablation.md",
    "docs/recall.md",
]
BLOCKS = [(doc, block) for doc in DOCS for block in _python_blocks((ROOT / doc).read_text())]


def test_readme_has_its_python_examples():
    assert sum(doc == "README.md" for doc, _ in BLOCKS) >= 1  # the quick start
    assert len(BLOCKS) >= 10


@pytest.mark.slow
@pytest.mark.parametrize(
    "doc, block", BLOCKS, ids=[f"{d}:block{i}" for i, (d, _) in enumerate(BLOCKS)]
)
def test_readme_block_runs_alone(doc, block, tmp_path):
    """Each Python block, as a user would paste it into a fresh interpreter: its own file, its own
    process, nothing defined by another block."""
    script = tmp_path / "block.py"
    script.write_text("import matplotlib\nmatplotlib.use('Agg')\n" + block)
    out = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "TQDM_DISABLE": "1"},
    )
    assert out.returncode == 0, f"{doc}:\n{block}\n{out.stderr[-3000:]}"
    if "class NoisyImage" in block:
        assert "sigma 8.0: accuracy" in out.stdout
