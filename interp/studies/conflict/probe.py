"""Layer-wise probes of the response label from the last prompt token's residual state
(:func:`interp.residual_stream`, :class:`probes.LayerwiseProbe`): from which layer the winning
source is linearly decodable, before any token is generated (the paper's Sec. 6.2)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from scipy.stats import ttest_1samp

import interp
from interp.errors import EmptyInputError
from interp.samples import Sample
from probes.layerwise import LayerwiseProbe

from .analysis import ConflictResponses
from .items import CONFIGURATIONS

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from interp.model import VLM


@dataclass
class BiasProbe:
    """Layer-wise probes of the response label from the last prompt token.

    Attributes:
        probe: the fitted :class:`probes.LayerwiseProbe` (``scores_`` per layer).
        labels: the label of each probed item; ``dropped``: labels left out because they had
            fewer items than CV folds.
        chance: the balanced accuracy of a constant guess, 1 / classes.
    """

    probe: LayerwiseProbe
    labels: list[str]
    dropped: dict[str, int] = field(default_factory=dict)

    @property
    def chance(self) -> float:
        return 1.0 / len(self.probe.classes_)

    def to_frame(self) -> pd.DataFrame:
        return self.probe.to_frame()

    def above_chance(self) -> pd.DataFrame:
        """Per layer: mean balanced accuracy and the one-sided p-value of a one-sample t-test of
        the fold scores against chance, Bonferroni-corrected over the layers (``p_adjusted``)."""
        folds = self.probe.fold_scores_
        rows = []
        layers = list(self.probe.layers_)
        for layer in layers:
            scores = folds[folds["layer"] == layer]["balanced_accuracy"].to_numpy(float)
            if np.allclose(scores, scores[0]):
                p = 0.0 if scores[0] > self.chance else 1.0
            else:
                p = float(ttest_1samp(scores, self.chance, alternative="greater").pvalue)
            rows.append({"layer": layer, "balanced_accuracy": float(scores.mean()), "p": p})
        out = pd.DataFrame(rows).set_index("layer")
        out["p_adjusted"] = np.minimum(1.0, out["p"] * len(layers))
        return out

    def decodable_from(self, level: float = 0.05) -> int | None:
        """The first layer whose fold scores are above chance at ``level`` (one-sided t-test,
        Bonferroni over layers); None if no layer is."""
        table = self.above_chance()
        hits = table.index[table["p_adjusted"] < level]
        return int(hits.min()) if len(hits) else None

    def plot(self) -> Figure:
        fig = self.probe.plot()
        ax = fig.axes[0]
        ax.axhline(self.chance, color="grey", ls=":", lw=0.8, label="chance")
        first = self.decodable_from()
        if first is not None:
            ax.axvline(first, color="k", ls="--", lw=0.8, label="above chance from")
        ax.legend(fontsize=8)
        return fig


def bias_probe(
    vlm: VLM,
    samples: Sequence[Sample],
    responses: ConflictResponses,
    *,
    configuration: str = "PercI+PropI",
    decoding: str = "greedy",
    agreement: str | None = "all_differ",
    cv: int = 5,
    layers: Sequence[int] | None = None,
    batch_size: int = 16,
    progress_bar: bool = True,
) -> BiasProbe:
    """Fit a :class:`probes.LayerwiseProbe` of the response label on the residual stream at the
    last prompt token, every layer (0 = embeddings … L), folds grouped by ``meta["group"]``.

    Labels with fewer items than ``cv`` are left out (recorded in ``BiasProbe.dropped``).

    Raises:
        EmptyInputError: no responses for the configuration, or fewer than two labels left.
    """
    part = responses.frame[
        (responses.frame["configuration"] == configuration)
        & (responses.frame["decoding"] == decoding)
    ]
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
    condition = CONFIGURATIONS.get(configuration, configuration)
    states = interp.residual_stream(
        vlm, chosen, condition, batch_size=batch_size, progress_bar=progress_bar
    )
    probe = LayerwiseProbe(layers=layers, cv=cv)
    probe.fit(states.numpy(), part["label"].to_numpy(), groups=part["group"].astype(str).to_numpy())
    return BiasProbe(probe, part["label"].tolist(), dropped)
