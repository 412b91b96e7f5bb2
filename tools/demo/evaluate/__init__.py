"""Evaluate a VLM on the demo world: ``python -m tools.demo.evaluate``.

:func:`evaluate` answers every sample greedily with the image and without it (the blind prompt:
the same chat turn with the image items removed) and returns one row per sample.
:func:`summarize` turns those rows into the detailed tables: accuracy per question type against
chance, the colour prior (canonical vs counterfactual, which errors follow the prior), the no-image
ablation across wordings, POPE object existence, modality conflicts, textual vs visual reference,
and long answers labelled prior-driven vs grounded; :func:`phenomenon_tables` condenses them into
one table per planted phenomenon (what was planted, how it is measured, the number).

One module per job: ``answers`` (the model runs), ``tables`` (the detailed tables), ``phenomena``
(the planted-phenomenon tables) and ``report`` (markdown, CSV and the command).
"""

from __future__ import annotations

from .answers import evaluate, follows, greedy_answers, load_checkpoint
from .phenomena import phenomenon_tables
from .report import main, to_long, to_markdown
from .tables import (
    CHANCE,
    accuracy_table,
    conflict_table,
    generation_table,
    pope_table,
    prior_table,
    reference_table,
    summarize,
    wording_table,
)

__all__ = [
    "CHANCE",
    "accuracy_table",
    "conflict_table",
    "evaluate",
    "follows",
    "generation_table",
    "greedy_answers",
    "load_checkpoint",
    "main",
    "phenomenon_tables",
    "pope_table",
    "prior_table",
    "reference_table",
    "summarize",
    "to_long",
    "to_markdown",
    "wording_table",
]
