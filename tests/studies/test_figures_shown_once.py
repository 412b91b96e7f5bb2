"""A plotting function that returns a Figure shows it once in Jupyter, however the cell ends: as
the cell's value, followed by ``plt.show()``, or shown again in a later cell. Reference: an IPython
shell with matplotlib's inline backend, counting the PNG images it publishes (in a subprocess, so
the shell's globals stay out of the test session)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SHELL = r"""
import json
import numpy as np
from IPython.testing.globalipapp import start_ipython

ip = start_ipython()
ip.display_formatter.active_types = ["text/plain", "image/png"]
ip.display_formatter.formatters["image/png"].enabled = True
ip.run_line_magic("matplotlib", "inline")
shown = []
ip.display_pub.publish = lambda data, metadata=None, **kw: shown.append("image/png" in data)
ip.displayhook.write_format_data = lambda data, md=None: shown.append("image/png" in data)
ip.run_cell('''
import numpy as np
import matplotlib.pyplot as plt
from interp.studies.drives import CausalDrives, plot_trajectories
rng = np.random.default_rng(0)
mask = np.ones((4, 6), bool)
drives = CausalDrives(
    sample_ids=[f"s{i}" for i in range(4)], token_ids=[[1] * 6] * 4, tokens=[["x"] * 6] * 4,
    answers=["x"] * 4, p0=rng.normal(size=(4, 6)), prefix_drive=rng.normal(size=(4, 6)),
    question_drive=rng.normal(size=(4, 6)), visual_drive=rng.normal(size=(4, 6)), mask=mask,
)
''')
counts = {}
for cell in ["plot_trajectories(drives)", "plot_trajectories(drives)\nplt.show()",
             "fig = plot_trajectories(drives)", "fig"]:
    shown.clear()
    result = ip.run_cell(cell)
    assert result.success, result.error_in_exec
    counts[cell] = sum(shown)
print("\nCOUNTS " + json.dumps(counts))
"""


def test_a_returned_figure_is_shown_once_in_a_notebook():
    run = subprocess.run(
        [sys.executable, "-c", SHELL], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-2000:]
    # the shell's prompts share stdout: the counts follow their marker
    counts = json.loads(run.stdout.rsplit("COUNTS ", 1)[-1])
    assert counts == {
        "plot_trajectories(drives)": 1,  # was 2: the cell's value and the backend's flush
        "plot_trajectories(drives)\nplt.show()": 1,
        "fig = plot_trajectories(drives)": 1,
        "fig": 1,  # shown again in a later cell (pyplot closed it after the first)
    }


def test_no_plotting_function_makes_a_plain_pyplot_figure():
    """Every study's and probe's figure comes from ``interp.figures.subplots`` (a figure shown
    once), not from ``plt.subplots`` / ``plt.figure``."""
    offenders = [
        str(p.relative_to(ROOT))
        for folder in ("interp", "probes")
        for p in sorted((ROOT / folder).rglob("*.py"))
        if p.name != "_figures.py"
        and any(call in p.read_text() for call in ("plt.subplots(", "plt.figure("))
    ]
    assert not offenders, offenders
