"""Typed errors. Every message names the problem and what would fix it.

All errors derive from :class:`InterpError`, and each also derives from the built-in exception a
caller would naturally catch (``ValueError``, ``TypeError``, ``FileNotFoundError``), so both
``except InterpError`` and ``except ValueError`` work.
"""

from __future__ import annotations


class InterpError(Exception):
    """Base class of every error raised by this library."""


class UnsupportedArchitectureError(InterpError, TypeError):
    """The model's class has no adapter entry."""


class ImageError(InterpError, ValueError):
    """An image is missing, unreadable or of an unusable type."""


class MissingImageError(ImageError, FileNotFoundError):
    """An image path does not exist."""


class ImageTokenMismatchError(InterpError, ValueError):
    """The number of image-token positions does not match the image features."""


class EmptyInputError(InterpError, ValueError):
    """An empty list of samples (or an empty target) was given."""


class EmptyTargetError(EmptyInputError):
    """A teacher-forcing target tokenises to no tokens."""


class ConditionError(InterpError, ValueError):
    """An unknown or malformed condition string."""


class EmptyGroupError(InterpError, ValueError):
    """A split left one group empty, so a two-group statistic cannot be computed."""


class TooFewSamplesError(InterpError, ValueError):
    """A statistic needs more samples than were given."""


class NoVIPError(InterpError, ValueError):
    """The automatic VIP rule found no layer; a manual VIP is needed."""


class StoreError(InterpError, RuntimeError):
    """A result store is inconsistent with the run asked of it (other model, data or settings)."""


class DataFormatError(InterpError, ValueError):
    """A data file (e.g. JSONL) is malformed."""


__all__ = [
    "ConditionError",
    "DataFormatError",
    "EmptyGroupError",
    "EmptyInputError",
    "EmptyTargetError",
    "ImageError",
    "ImageTokenMismatchError",
    "InterpError",
    "MissingImageError",
    "NoVIPError",
    "StoreError",
    "TooFewSamplesError",
    "UnsupportedArchitectureError",
]
