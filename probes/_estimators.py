"""Pieces shared by the scikit-learn-style estimators of :mod:`probes`: the label input check and
the input tags of estimators that take one score per sample."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.exceptions import DataConversionWarning

from .distances import ArrayLike, to_numpy
from .errors import ProbeError


def label_vector(y: ArrayLike | Sequence[Any] | None, owner: str, name: str = "y") -> np.ndarray:
    """``y`` as an array, refused when it is ``None`` (the target is required) and flattened with
    scikit-learn's ``DataConversionWarning`` when it is an ``[N, 1]`` column, as scikit-learn's
    own estimators treat a target. The caller checks the shape that is left."""
    if y is None:
        raise ProbeError(f"{owner} requires {name} to be passed, but the target y is None")
    arr = np.asarray(to_numpy(y))
    if arr.ndim == 2 and arr.shape[1] == 1:
        warnings.warn(
            f"A column-vector y was passed when a 1d array was expected ({name} has shape "
            f"{arr.shape}); it is flattened",
            DataConversionWarning,
            stacklevel=4,  # the warning names the line that called the estimator's method
        )
        arr = arr[:, 0]
    return arr


class OneScoreInput:
    """Mixin (left of scikit-learn's bases) for a binary classifier that takes one score per
    sample: a 1-D input (``[N, 1]`` is accepted too), declared as scikit-learn's own
    one-dimensional estimators declare it."""

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()  # type: ignore[misc]
        tags.input_tags.one_d_array = True
        tags.input_tags.two_d_array = False
        tags.classifier_tags.multi_class = False
        return tags
