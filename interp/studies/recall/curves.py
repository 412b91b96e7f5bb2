"""Fig. 4: the logit lens of the eventual output token and the Visual-vs-Full-Info cosine per
layer, split into linking successes and failures (:func:`linking_curves` → :class:`LinkingCurves`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from jaxtyping import Bool, Float, Int
from scipy import stats

from interp.errors import EmptyInputError, ProbeError, RecallError
from interp.reprs import Summary
from probes.distances import to_numpy
from probes.stats import auroc, cliffs_delta, mean_difference

from .analysis import layerwise_cosine
from .result import RecallRun


@dataclass(repr=False)
class LinkingCurves(Summary):
    """Per-item, per-layer logit-lens probability and Visual-vs-Full-Info cosine similarity, with
    each item's linking outcome (Fig. 4).

    Attributes:
        lens: ``[n, L+1]`` probability of the eventual output token at each layer.
        cosine: ``[n, L+1]`` cosine similarity of the Visual and Full Info states.
        success: ``[n]`` whether the Visual answer is right (linking success).
        family: the family of each row.
    """

    lens: Float[np.ndarray, "n layer"]
    cosine: Float[np.ndarray, "n layer"]
    success: Bool[np.ndarray, " n"]
    family: list[str]

    def _repr_head(self) -> dict[str, Any]:
        return {
            "n": len(self.success),
            "successes": int(self.success.sum()),
            "layers": int(self.lens.shape[1]),
        }

    @property
    def layers(self) -> np.ndarray:
        return np.arange(self.lens.shape[1])

    def to_frame(self, ci: float = 0.95) -> pd.DataFrame:
        """Long table: ``measure`` (lens / cosine), ``group`` (success / failure), ``layer``,
        ``mean``, ``low`` / ``high`` (Student-t interval of the mean at level ``ci``), ``n``."""
        rows = []
        for measure, values in (("lens", self.lens), ("cosine", self.cosine)):
            for group, m in (("success", self.success), ("failure", ~self.success)):
                v = values[m]
                n = len(v)
                mean = v.mean(0) if n else np.full(values.shape[1], np.nan)
                if n > 1:
                    half = stats.t.ppf((1 + ci) / 2, n - 1) * v.std(0, ddof=1) / np.sqrt(n)
                else:
                    half = np.full(values.shape[1], np.nan)
                for layer in range(values.shape[1]):
                    rows.append(
                        {
                            "measure": measure,
                            "group": group,
                            "layer": layer,
                            "mean": float(mean[layer]),
                            "low": float(mean[layer] - half[layer]),
                            "high": float(mean[layer] + half[layer]),
                            "n": n,
                        }
                    )
        return pd.DataFrame(rows)

    def separation(self) -> pd.DataFrame:
        """Per layer and measure, the AUROC of the measure for telling successes from failures
        (0.5: no separation): ``P(x_success > x_failure) + P(tie) / 2``."""
        self._two_groups()
        rows = []
        for measure, values in (("lens", self.lens), ("cosine", self.cosine)):
            for layer in range(values.shape[1]):
                rows.append(
                    {
                        "measure": measure,
                        "layer": layer,
                        "auroc": auroc(values[:, layer], self.success),
                    }
                )
        return pd.DataFrame(rows)

    def rise_layer(self, fraction: float = 0.5) -> Int[np.ndarray, " n"]:
        """Per item, the first layer whose lens probability reaches ``fraction`` of its final
        value ``p^(L)``: where the answer "gains its probability mass" (Sec. 6.1)."""
        return np.argmax(self.lens >= fraction * self.lens[:, -1:], axis=1)

    def _two_groups(self) -> None:
        if self.success.all() or not self.success.any():
            raise ProbeError(
                f"all {len(self.success)} items are linking "
                f"{'successes' if self.success.all() else 'failures'}; comparing the groups "
                "needs both"
            )

    def summary(self) -> str:
        """The success-vs-failure comparison (:meth:`table`) as text."""
        return self.table().to_string(index=False)

    def table(self, *, ci: float = 0.95, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
        """Successes vs failures on four statistics: the final-layer probability ``p^(L)``, the
        half-rise layer (:meth:`rise_layer`), the final-layer cosine and the mean cosine over the
        upper half of the layers. Columns: mean per group, their difference (success − failure)
        with a bootstrap interval resampling each group, and Cliff's delta with its interval."""
        self._two_groups()
        upper = self.lens.shape[1] // 2
        top = f"mean cosine, layers {upper}..{self.lens.shape[1] - 1}"
        stats_ = {
            "p(output) at last layer": self.lens[:, -1],
            "half-rise layer": self.rise_layer().astype(np.float64),
            "cosine at last layer": self.cosine[:, -1],
            top: self.cosine[:, upper:].mean(1),
        }
        rows = []
        for name, x in stats_.items():
            a, b = x[self.success], x[~self.success]
            diff = mean_difference(a, b, ci=ci, n_boot=n_boot, seed=seed)
            delta = cliffs_delta(a, b, ci=ci, n_boot=n_boot, seed=seed)
            rows.append(
                {
                    "statistic": name,
                    "success": float(a.mean()),
                    "failure": float(b.mean()),
                    "difference": diff.value,
                    "difference_low": diff.low,
                    "difference_high": diff.high,
                    "cliffs_delta": delta.value,
                    "delta_low": delta.low,
                    "delta_high": delta.high,
                    "n_success": len(a),
                    "n_failure": len(b),
                }
            )
        return pd.DataFrame(rows)


def linking_curves(
    run: RecallRun, *, family: str | None = None, subset: str = "kept", metric: str = "inclusion"
) -> LinkingCurves:
    """The logit lens and the Visual-vs-Full-Info cosine of the items of ``family`` (None: all)
    in ``subset``, each item labelled a linking success when its Visual answer is right by
    ``metric`` (Sec. 6.1, Fig. 4).

    Raises:
        UnknownFamilyError, RecallError: a family the run lacks, a bad subset or metric.
        EmptyInputError: no item is left.
    """
    if metric == "bleu":
        raise RecallError("linking success is binary: use metric 'inclusion' or 'exact'")
    m = run.mask(subset, family)
    if not m.any():
        raise EmptyInputError(f"no item in subset {subset!r} of family {family or 'all'!r}")
    cos = layerwise_cosine(to_numpy(run.states["visual"])[m], to_numpy(run.states["full_info"])[m])
    fam = run.frame["family"].to_numpy()[m]
    return LinkingCurves(run.lens[m], cos, run.correct("visual", metric)[m], [str(f) for f in fam])
