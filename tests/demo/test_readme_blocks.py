"""The README's Python examples run as written, each alone in a fresh interpreter (a file of its
own, so that under ``make test``'s two workers they can run beside the notebooks)."""

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


README_BLOCKS = _python_blocks((ROOT / "README.md").read_text())


def test_readme_has_its_python_examples():
    assert len(README_BLOCKS) >= 8


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(README_BLOCKS)), ids=lambda i: f"block{i}")
def test_readme_block_runs_alone(index, tmp_path):
    """Each Python block of the README, as a user would paste it into a fresh interpreter: its
    own file, its own process, nothing defined by another block."""
    block = README_BLOCKS[index]
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
    assert out.returncode == 0, f"README block {index}:\n{block}\n{out.stderr[-3000:]}"
    if "class NoisyImage" in block:
        assert "sigma 8.0: accuracy" in out.stdout
