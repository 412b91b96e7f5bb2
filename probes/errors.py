"""Typed errors shared by the project's packages.

The root :class:`InterpError` lives here, in the dependency-free statistics package, so that
``probes`` stays importable without ``interp`` (and without torch) while every error of the project
— raised by a statistic here or by a measurement in ``interp`` — is one ``InterpError``. Each also
derives from the built-in exception a caller would naturally catch (``ValueError`` ...).
"""

from __future__ import annotations


class InterpError(Exception):
    """Base class of every error raised by the project (``interp``, ``interventions``, ``probes``)."""


class EmptyInputError(InterpError, ValueError):
    """An empty list of samples (or an empty target) was given."""


class EmptyGroupError(InterpError, ValueError):
    """A split left one group empty, so a two-group statistic cannot be computed."""


class TooFewSamplesError(InterpError, ValueError):
    """A statistic needs more samples than were given."""


class ProbeError(InterpError, ValueError):
    """A probe or selective-prediction tool cannot be fitted or applied to the given input (wrong
    shape, a single class, too few samples of a class for the folds, a layer out of range ...).
    Raised before any fitting starts."""


class ProbeTypeError(ProbeError, TypeError):
    """A probe's input holds values of a type it cannot use (e.g. non-numeric entries in X)."""


class VIPParameterError(InterpError, ValueError):
    """A Visual Integration Point rule or detector got an unusable setting or input: ``beta <= 0``,
    ``alpha`` outside (0, 1), an effect floor out of range, a manual layer outside ``1..L``, fewer
    than 3 decoder layers, or a rule that needs the group means given only the statistic."""


class UnknownVIPRuleError(VIPParameterError):
    """A VIP rule name that is not one of :data:`probes.vip.RULES` (the message lists them).

    Attributes:
        rule: the name given.
        valid: the valid names.
    """

    def __init__(self, message: str, rule: object = None, valid: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.rule = rule
        self.valid = valid


class VIPTypeError(InterpError, TypeError):
    """A VIP detector setting of the wrong type (a manual layer that is not an int, a rule name
    that is not a string)."""


__all__ = [
    "EmptyGroupError",
    "EmptyInputError",
    "InterpError",
    "ProbeError",
    "ProbeTypeError",
    "TooFewSamplesError",
    "UnknownVIPRuleError",
    "VIPParameterError",
    "VIPTypeError",
]


class ConstantInputWarning(RuntimeWarning):
    """A correlation was asked of a constant input; the result is NaN."""
