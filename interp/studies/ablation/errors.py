"""Errors of the no-image ablation: every one is raised before any generation."""

from __future__ import annotations

from interp.errors import ConditionError, InterpError, TooFewSamplesError


class AblationError(InterpError, ValueError):
    """The no-image ablation cannot run on this input as asked (raised before any compute)."""


class UnknownVariantError(AblationError):
    """A variant name that no item carries (the message lists the ones the data holds)."""


class MissingLabelError(AblationError):
    """An item lacks what the ablation needs: a variant or category label, a reference answer, or
    an image to remove."""


class TooFewExamplesError(AblationError, TooFewSamplesError):
    """An item has fewer eligible in-context examples than the k asked for."""


class ImageShownError(ConditionError):
    """A condition given as "without the image" still shows some item its own image (``full``,
    ``distort:<t>``, or ``swap:`` onto an item with the same picture)."""


class JudgeError(AblationError):
    """The judge is not callable or returned something other than a bool."""


__all__ = [
    "AblationError",
    "ImageShownError",
    "JudgeError",
    "MissingLabelError",
    "TooFewExamplesError",
    "UnknownVariantError",
]
