"""Layer-wise probes of the response label from the last prompt token's residual state
(:func:`interp.residual_stream`, :class:`probes.LayerwiseProbe`): from which layer the winning
source is linearly decodable, before any token is generated (the paper's Sec. 6.2)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

import interp
from interp.errors import EmptyInputError
from interp.options import RunOptions
from interp.reprs import Summary
from interp.samples import Sample
from probes.layerwise import LayerwiseProbe

from .analysis import ConflictResponses
from .items import CONFIGURATIONS

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from interp.model import VLM


NULLS: tuple[str, ...] = ("groups", "cells", "rows")


@dataclass(repr=False)
class BiasProbe(Summary):
    """Layer-wise probes of the response label from the last prompt token.

    Attributes:
        probe: the fitted :class:`probes.LayerwiseProbe` (``scores_`` per layer).
        labels: the label of each probed item; ``dropped``: labels left out because they had
            fewer items than CV folds; ``groups``: each item's group (the permutation blocks);
        cells: each item's design cell (``evidence|order``, the strata of the ``"cells"``
            null).
        chance: the balanced accuracy of a constant guess, 1 / classes.
    """

    probe: LayerwiseProbe
    labels: list[str]
    dropped: dict[str, int] = field(default_factory=dict)
    groups: list[str] = field(default_factory=list)
    cells: list[str] = field(default_factory=list)

    def _repr_head(self) -> dict[str, Any]:
        return {"n": len(self.labels), "classes": len(self.probe.classes_), "chance": self.chance}

    @property
    def chance(self) -> float:
        return 1.0 / len(self.probe.classes_)

    def to_frame(self) -> pd.DataFrame:
        """The per-layer probe scores (the :class:`probes.LayerwiseProbe` table)."""
        return self.probe.to_frame()

    def above_chance(
        self, n_permutations: int = 2000, seed: int = 0, null: str = "groups"
    ) -> pd.DataFrame:
        """Per layer: the balanced accuracy of the pooled out-of-fold predictions and the
        one-sided p-value of a permutation test against chance, Bonferroni-corrected over the
        layers (``p_adjusted``); ``balanced_accuracy_folds`` is the mean over folds.

        ``null`` says what the permutations keep:

        - ``"groups"`` (default): whole groups' label blocks permuted among groups (below);
        - ``"cells"``: labels permuted among the items of one design cell (evidence type ×
          input order): what the states predict *beyond* the design, since every permutation
          keeps each cell's label counts; the items of a cell come from different groups;
        - ``"rows"``: labels permuted freely: the paper's reading (decodable at all, the
          design-driven part included), which ignores that an item's orders hang together.

        The test (:func:`permutation_test`) holds each item's out-of-fold prediction fixed and
        permutes the labels — whole groups' label blocks (an item's orders, ``meta["group"]``)
        among groups of the same size, as the folds keep groups whole: under H0 (the held-out
        predictions carry no information about the label) every such permutation is equally
        likely, so the p-value is exact up to Monte Carlo error, for any number of classes, with
        balanced accuracy itself as the statistic (a binomial test would need plain accuracy, a
        known chance rate and independent rows, which an item's orders are not). It needs no
        refit, unlike permuting before training (it conditions on the fitted probes); a t-test
        over the few fold scores was avoided because folds share training items.
        """
        if null not in NULLS:
            raise ValueError(f"unknown null {null!r}; use one of {', '.join(NULLS)}")
        if null == "cells" and len(self.cells) != len(self.labels):
            raise ValueError("the 'cells' null needs each item's design cell (BiasProbe.cells)")
        y = np.asarray(self.labels)
        rows = []
        for layer in self.probe.layers_:
            scores = self.probe.cv_predictions_[layer]
            tested = ~np.isnan(scores).any(axis=1)
            pred = self.probe.classes_[np.argmax(np.nan_to_num(scores[tested]), axis=1)]
            groups = np.asarray(self.groups)[tested] if null == "groups" and self.groups else None
            strata = np.asarray(self.cells)[tested] if null == "cells" else None
            ba, p = permutation_test(y[tested], pred, n_permutations, seed, groups, strata)
            folds = self.probe.fold_scores_
            mean = float(folds[folds["layer"] == layer]["balanced_accuracy"].mean())
            rows.append(
                {"layer": layer, "balanced_accuracy": ba, "balanced_accuracy_folds": mean, "p": p}
            )
        out = pd.DataFrame(rows).set_index("layer")
        out["p_adjusted"] = np.minimum(1.0, out["p"] * len(out))
        return out

    def decodable_from(self, level: float = 0.05, null: str = "groups") -> int | None:
        """The first layer whose held-out predictions are above chance at ``level`` (one-sided
        permutation test against ``null``, Bonferroni over layers); None if no layer is."""
        table = self.above_chance(null=null)
        hits = table.index[table["p_adjusted"] < level]
        return int(hits.min()) if len(hits) else None

    def plot(self) -> Figure:
        """The probe's scores per layer with the chance level and the first layer above chance."""
        fig = self.probe.plot()
        ax = fig.axes[0]
        ax.axhline(self.chance, color="grey", ls=":", lw=0.8, label="chance")
        first = self.decodable_from()
        if first is not None:
            ax.axvline(first, color="k", ls="--", lw=0.8, label="above chance from")
        ax.legend(fontsize=8)
        return fig


def balanced_accuracy(y_true: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
    """Balanced accuracy (mean recall over the classes of ``y_true``) of one prediction vector
    against each row of ``y_true`` (``[N]`` or ``[R, N]``)."""
    y_true = np.atleast_2d(y_true)
    recalls = []
    for c in np.unique(y_true[0]):
        is_c = y_true == c
        recalls.append((is_c & (y_pred == c)).sum(axis=1) / is_c.sum(axis=1))
    return np.mean(recalls, axis=0)


def permutation_test(
    y_true: np.ndarray,
    y_pred: np.ndarray,
    n_permutations: int = 2000,
    seed: int = 0,
    groups: np.ndarray | None = None,
    strata: np.ndarray | None = None,
) -> tuple[float, float]:
    """Balanced accuracy of ``y_pred`` and its one-sided permutation p-value against chance:
    ``(1 + #{permuted >= observed}) / (1 + n_permutations)``, the labels permuted with the
    predictions held fixed (seeded).

    With ``groups``, whole groups' label blocks are permuted among groups of the same size (each
    block's rows keep their order), so labels that hang together within a group (an item's
    orders) stay together under the null; with ``strata`` (one cell per row), labels are
    permuted among the rows of each stratum only; with neither, single labels are permuted.
    """
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    observed = float(balanced_accuracy(y_true, y_pred)[0])
    rng = np.random.default_rng(seed)
    if groups is not None and strata is not None:
        raise ValueError("permute within groups or within strata, not both")
    if strata is not None:
        cells = [np.flatnonzero(np.asarray(strata) == c) for c in dict.fromkeys(strata)]
        perms = np.stack([_shuffle_within(y_true, cells, rng) for _ in range(n_permutations)])
    elif groups is None:
        perms = np.stack([rng.permutation(y_true) for _ in range(n_permutations)])
    else:
        blocks = _blocks(np.asarray(groups))
        perms = np.stack([_shuffle_blocks(y_true, blocks, rng) for _ in range(n_permutations)])
    null = balanced_accuracy(perms, y_pred)
    p = (1 + int((null >= observed - 1e-12).sum())) / (1 + n_permutations)
    return observed, p


def _shuffle_within(y: np.ndarray, cells: list[np.ndarray], rng: np.random.Generator) -> np.ndarray:
    """``y`` with the labels of each cell's rows permuted among those rows."""
    out = y.copy()
    for idx in cells:
        out[idx] = y[rng.permutation(idx)]
    return out


def _blocks(groups: np.ndarray) -> list[list[np.ndarray]]:
    """The row indices of each group, gathered by group size."""
    by_size: dict[int, list[np.ndarray]] = {}
    for g in dict.fromkeys(groups.tolist()):
        idx = np.flatnonzero(groups == g)
        by_size.setdefault(len(idx), []).append(idx)
    return list(by_size.values())


def _shuffle_blocks(
    y: np.ndarray, blocks: list[list[np.ndarray]], rng: np.random.Generator
) -> np.ndarray:
    """``y`` with the label blocks of equally sized groups shuffled among those groups."""
    out = y.copy()
    for same in blocks:
        for target, k in zip(same, rng.permutation(len(same))):
            out[target] = y[same[k]]
    return out


def bias_probe(
    vlm: VLM,
    samples: Sequence[Sample],
    responses: ConflictResponses,
    *,
    configuration: str | None = None,
    evidence: str | None = None,
    decoding: str = "greedy",
    agreement: str | None = "all_differ",
    cv: int = 5,
    layers: Sequence[int] | None = None,
    run: RunOptions | None = None,
    **options: Any,
) -> BiasProbe:
    """Fit a :class:`probes.LayerwiseProbe` of the response label on the residual stream at the
    last prompt token, every layer (0 = embeddings … L), folds grouped by ``meta["group"]``.

    ``configuration``: which run's responses (default: the first, the full input); ``evidence``:
    only items of that evidence type (default: all). Labels with fewer items than ``cv`` are left
    out (recorded in ``BiasProbe.dropped``). ``run``: how the states are read
    (:class:`~interp.options.RunOptions`, default ``batch_size`` 16; ``remote=True`` reads them
    on NDIF); its fields may also be given as keywords.

    Raises:
        EmptyInputError: no responses for the configuration, or fewer than two labels left.
    """
    # remote: runs through residual_stream / score / generate
    opts = RunOptions.resolve(run if run is not None else RunOptions(batch_size=16), **options)
    frame = responses.frame
    if configuration is None:  # the first configuration run (the full input)
        configuration = str(frame["configuration"].iloc[0]) if len(frame) else "full"
    part = frame[(frame["configuration"] == configuration) & (frame["decoding"] == decoding)]
    if evidence is not None:
        part = part[part["evidence"] == evidence]
    if agreement is not None:
        part = part[part["agreement"] == agreement]
    counts = part["label"].value_counts()
    dropped = {str(k): int(v) for k, v in counts.items() if v < cv}
    part = part[~part["label"].isin(list(dropped))]
    if part["label"].nunique() < 2:
        raise EmptyInputError(
            f"the probe needs two labels with at least {cv} items each; got {counts.to_dict()}"
        )
    by_id = {str(s.id): s for s in samples}
    chosen = [by_id[i] for i in part["sample_id"]]
    if "condition" in part:
        condition = str(part["condition"].iloc[0])
    else:
        condition = CONFIGURATIONS.get(configuration, configuration)
    states = interp.residual_stream(vlm, chosen, condition, run=opts)
    probe = LayerwiseProbe(layers=layers, cv=cv)
    probe.fit(states.numpy(), part["label"].to_numpy(), groups=part["group"].astype(str).to_numpy())
    groups = part["group"].astype(str).tolist()
    cells = (part["evidence"].astype(str) + "|" + part["order"].astype(str)).tolist()
    return BiasProbe(probe, part["label"].tolist(), dropped, groups, cells)
