"""Table 1: probes trained on the other families and applied, without retraining, to a held-out
one (:func:`transfer` → :class:`Transfer`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
from sklearn.metrics import balanced_accuracy_score

from interp.errors import RecallError
from interp.reprs import Summary
from probes.layerwise import LayerwiseProbe
from probes.stats import auroc

from .analysis import method_table, selective_frame
from .items import check_families
from .probes import _check_folds, _fit_methods, _one_thread, _predict_methods, _probe_inputs
from .result import RecallRun


@dataclass(repr=False)
class Transfer(Summary):
    """Probes trained on the other families and applied, without retraining, to a held-out one
    (Sec. 6.2, Table 1).

    Attributes:
        predictions: one row per held-out item (column ``held_out``), the methods' decisions and
            scores as in :class:`FailureProbes`; ``layer`` is the one chosen by CV on the
            training families.
        layer_scores: per held-out family and layer, the training families' CV balanced
            accuracy (what chose the layer) and the held-out balanced accuracy and AUROC of that
            layer's probe.
        probes: held-out family -> the :class:`probes.LayerwiseProbe` fitted on the others.
    """

    predictions: pd.DataFrame
    layer_scores: pd.DataFrame
    probes: dict[str, LayerwiseProbe]
    settings: dict[str, Any]

    def _repr_head(self) -> dict[str, Any]:
        return {"held_out": self.held_out, "rows": len(self.predictions)}

    @property
    def held_out(self) -> list[str]:
        return list(dict.fromkeys(self.predictions["held_out"]))

    def _each(self, fn: Any, **kw: Any) -> pd.DataFrame:
        parts = []
        for fam in self.held_out:
            part = self.predictions[self.predictions["held_out"] == fam]
            parts.append(fn(part, **kw).assign(held_out=fam))
        return pd.concat(parts, ignore_index=True)

    def table(self, *, ci: float = 0.95, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
        """Accuracy of each method on each held-out family (Table 2's columns, out of domain)."""
        return self._each(method_table, ci=ci, n_boot=n_boot, seed=seed)

    def selective(self, *, ci: float = 0.95, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
        """Coverage and risk per method and held-out family (long form of Table 1)."""
        return self._each(selective_frame, ci=ci, n_boot=n_boot, seed=seed)

    def table1(self) -> pd.DataFrame:
        """Table 1 as the paper prints it: one row per held-out family, coverage and risk (in
        percent) of perplexity, probe and ensemble, and Δ (perplexity → ensemble)."""
        sel = self.selective(n_boot=200)
        rows = []
        for fam in self.held_out:
            part = sel[sel["held_out"] == fam].set_index("method")
            row: dict[str, Any] = {"held_out": fam}
            for method in ("perplexity", "probe", "ensemble"):
                row[f"{method}_coverage"] = 100 * part.loc[method, "coverage"]
                row[f"{method}_risk"] = 100 * part.loc[method, "risk"]
            row["delta_coverage"] = row["ensemble_coverage"] - row["perplexity_coverage"]
            row["delta_risk"] = row["ensemble_risk"] - row["perplexity_risk"]
            row["n"] = int(part.loc["probe", "n"])
            rows.append(row)
        return pd.DataFrame(rows)

    def to_frame(self) -> pd.DataFrame:
        """Table 1 as the paper prints it (:meth:`table1`)."""
        return self.table1()


@_one_thread
def transfer(
    run: RecallRun,
    held_out: Sequence[str] | str | None = None,
    *,
    layers: Sequence[int] | None = None,
    layer: int | None = None,
    cv: int = 5,
    groups: str | None = "pair",
    subset: str = "kept",
    metric: str = "inclusion",
    estimator: Any = None,
    seed: int = 0,
) -> Transfer:
    """Train on all families but one, apply to that one without retraining (Sec. 6.2, Table 1:
    "trained on all three other datasets and applied to the test dataset without retraining").

    For each held-out family F: on the items of the other families, a
    :class:`probes.LayerwiseProbe` (``cv`` folds, ``groups``) chooses the layer (unless ``layer``
    is given); the probe of that layer, the perplexity threshold, the majority baseline and the
    ensemble (calibrated on the probe's out-of-fold outputs) are fitted there and predict F.

    Raises:
        RecallError: fewer than two families (before any fitting, as the next two).
        UnknownFamilyError: a held-out family the run lacks.
        ProbeError: a training or held-out set with a single class, or too few items per class
            for ``cv``.
    """
    families = run.families_with_items(subset)
    if len(families) < 2:
        raise RecallError(
            f"transfer trains on some families and tests on another: the run has "
            f"{len(families)} family with items in subset {subset!r} ({', '.join(families)})"
        )
    targets = check_families(families, held_out)
    keep = run.mask(subset)
    fam_col = run.frame["family"].to_numpy()
    plans = []
    for fam in targets:  # every check before any fitting
        train_rows = keep & (fam_col != fam)
        test_rows = keep & (fam_col == fam)
        Xtr, ytr, ptr, gtr = _probe_inputs(
            run, train_rows, metric, groups, f"training families for held-out {fam!r}"
        )
        _check_folds(ytr, gtr, cv, f"training families for held-out {fam!r}")
        Xte, yte, pte, _ = _probe_inputs(run, test_rows, metric, None, f"held-out family {fam!r}")
        plans.append((fam, (Xtr, ytr, ptr, gtr), (Xte, yte, pte), test_rows))

    parts, layer_rows, probes_ = [], [], {}
    for fam, (Xtr, ytr, ptr, gtr), (Xte, yte, pte), test_rows in plans:
        fitted = _fit_methods(
            Xtr, ytr, ptr, gtr, layers=layers, cv=cv, estimator=estimator, seed=seed, layer=layer
        )
        pred = _predict_methods(fitted, Xte, pte)
        parts.append(
            pd.DataFrame(
                {
                    "held_out": fam,
                    "item_id": run.frame["item_id"].to_numpy()[test_rows],
                    "family": fam,
                    "correct": yte,
                    "perplexity": pte,
                    **pred,
                }
            )
        )
        probe = fitted["probe"]
        probes_[fam] = probe
        true_col = list(probe.classes_).index(True)
        for lay in probe.layers_:
            p = probe.predict_proba(Xte, lay)[:, true_col]
            layer_rows.append(
                {
                    "held_out": fam,
                    "layer": lay,
                    "train_cv_balanced_accuracy": float(
                        probe.scores_.loc[lay, "balanced_accuracy_mean"]
                    ),
                    "held_out_balanced_accuracy": float(
                        balanced_accuracy_score(yte, probe.predict(Xte, lay))
                    ),
                    "held_out_auroc": auroc(p, yte),
                    "chosen": lay == fitted["layer"],
                }
            )
    settings = {"cv": cv, "groups": groups, "subset": subset, "metric": metric, "layer": layer}
    return Transfer(
        pd.concat(parts, ignore_index=True), pd.DataFrame(layer_rows), probes_, settings
    )
