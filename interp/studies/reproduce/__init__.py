"""Recipes: each paper's main table on a model, with the paper's settings, beside its rows.

:func:`reproduce` (``interp reproduce <paper>``) runs the recipe the study's registry entry names
(:func:`~.recipes.recipes`; the project's are :data:`RECIPES`) through the study's own command and
writes the table beside :data:`~.published.PUBLISHED`. The recipes reach the studies through their
commands only, never by import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from interp._lazy import lazy_exports
from interp.study_registry import StudyEntry

ENTRY = StudyEntry(
    "reproduce",
    "Benchmarks and tables",
    "each paper's main table on your model, beside the paper's rows",
    docs="docs/benchmarks.md",
    order=10,
)
"""This study in the study registry (:mod:`interp.study_registry`)."""


_LAZY = {
    "RECIPES": "recipes",
    "Recipe": "recipes",
    "PUBLISHED": "published",
    "COE_VIPS": "published",
    "Reproduction": "run",
    "ReproduceError": "run",
    "reproduce": "run",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

if TYPE_CHECKING:
    from .published import COE_VIPS, PUBLISHED
    from .recipes import RECIPES, Recipe
    from .run import ReproduceError, Reproduction, reproduce

__all__ = [
    "COE_VIPS",
    "PUBLISHED",
    "RECIPES",
    "Recipe",
    "ReproduceError",
    "Reproduction",
    "reproduce",
]
