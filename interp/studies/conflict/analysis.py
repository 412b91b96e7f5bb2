"""Rates of the response labels with Wilson 95 % CIs (:func:`probes.stats.wilson`): per group,
per source position, and accuracy where the sources agree."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

from interp.errors import EmptyInputError
from probes.stats import wilson

from .items import DEMO_SOURCES, NO_BIAS, Source, all_labels

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def rates(frame: pd.DataFrame, by: Sequence[str], labels: Sequence[str]) -> pd.DataFrame:
    """Share of each response label per group, with Wilson 95 % CIs: one row per (group, label)
    with ``rate``, ``low``, ``high``, ``k``, ``n``."""
    rows = []
    for key, part in frame.groupby(list(by), sort=False):
        key = key if isinstance(key, tuple) else (key,)
        n = len(part)
        for lab in labels:
            k = int((part["label"] == lab).sum())
            lo, hi = wilson(k, n)
            rows.append(
                {
                    **dict(zip(by, key)),
                    "label": lab,
                    "rate": k / n,
                    "low": lo,
                    "high": hi,
                    "k": k,
                    "n": n,
                }
            )
    return pd.DataFrame(rows)


@dataclass
class RateTable:
    """Label rates with Wilson 95 % CIs per group (:func:`rates`).

    Attributes:
        frame: one row per (group, label): the group columns, ``label``, ``rate``, ``low``,
            ``high``, ``k``, ``n``.
        by: the group columns; ``labels``: every label, in order.
    """

    frame: pd.DataFrame
    by: tuple[str, ...]
    labels: list[str]

    def to_frame(self) -> pd.DataFrame:
        return self.frame

    def wide(self) -> pd.DataFrame:
        """Groups as rows, labels as columns (rates; labels that never occur left out), ``n``
        last."""
        by = list(self.by)
        t = self.frame.pivot_table(index=by, columns="label", values="rate", sort=False)
        t = t[[c for c in self.labels if c in t.columns and t[c].sum() > 0]]
        t["n"] = self.frame.groupby(by, sort=False)["n"].first()
        return t

    def plot(self, title: str = "") -> Figure:
        """Grouped bars with CI whiskers (the paper's Fig. 3)."""
        from .figures import plot_rates

        return plot_rates(self.frame, self.by, self.labels, title)


@dataclass
class ConflictResponses:
    """Responses of conflict items under each configuration (and decoding), labelled.

    Attributes:
        frame: one row per (configuration, decoding, sample): ``sample_id``, ``group``,
            ``configuration``, ``evidence`` (the item's ``meta["evidence"]``, e.g.
            ``PercI-PropA``, else the configuration's name), ``decoding``, ``order`` (the
            sources shown, in prompt order), ``agreement``, ``response``, ``label``.
        sources: the sources.
    """

    frame: pd.DataFrame
    sources: tuple[Source, ...] = DEMO_SOURCES

    def to_frame(self) -> pd.DataFrame:
        return self.frame

    @property
    def labels(self) -> list[str]:
        return all_labels(self.sources)

    def bias_rates(
        self, by: Sequence[str] = ("configuration",), agreement: str | None = "all_differ"
    ) -> pd.DataFrame:
        """Label rates with CIs per group, on items of one agreement (default: every source
        differs, the paper's design; None: all items)."""
        part = self.frame
        if agreement is not None:
            part = part[part["agreement"] == agreement]
        if part.empty:
            raise EmptyInputError(f"no responses with agreement {agreement!r}")
        return rates(part, by, self.labels)

    def table(
        self, by: str = "configuration", agreement: str | None = "all_differ"
    ) -> pd.DataFrame:
        """Rates as a readable table: groups as rows, labels as columns (labels that never occur
        are left out), ``n`` last."""
        r = self.bias_rates((by,), agreement)
        t = r.pivot_table(index=by, columns="label", values="rate", sort=False)
        t = t[[c for c in self.labels if c in t.columns and t[c].sum() > 0]]
        t["n"] = r.groupby(by, sort=False)["n"].first()
        return t

    def position_effect(self, agreement: str | None = "all_differ") -> pd.DataFrame:
        """Rate of each source's own bias label by the source's position in the order (1 = first,
        the last before the question = len(order)), with CIs, per configuration and evidence
        type — recency vs primacy (the paper's Table 1 read by position)."""
        part = self.frame if agreement is None else self.frame[self.frame["agreement"] == agreement]
        if "greedy" in set(part["decoding"]):
            part = part[part["decoding"] == "greedy"]
        rows = []
        for src in self.sources:
            pos = part["order"].map(
                lambda o, name=src.order_name: (
                    (o.split(",").index(name) + 1) if name in o.split(",") else None
                )
            )
            for (config, evidence, p), grp in (
                part.assign(position=pos)
                .dropna(subset=["position"])
                .groupby(["configuration", "evidence", "position"], sort=True)
            ):
                k, n = int((grp["label"] == src.bias).sum()), len(grp)
                lo, hi = wilson(k, n)
                rows.append(
                    {
                        "configuration": config,
                        "evidence": evidence,
                        "source": src.name,
                        "position": int(p),
                        "rate": k / n,
                        "low": lo,
                        "high": hi,
                        "k": k,
                        "n": n,
                    }
                )
        return pd.DataFrame(rows)

    def evidence_rates(
        self, decoding: str = "greedy", agreement: str | None = "all_differ"
    ) -> RateTable:
        """The paper's Fig. 3: label rates with Wilson CIs per evidence type (``PercI-PercA`` ...,
        or the demo set's configurations), one decoding."""
        return RateTable(self._part(decoding, agreement, ("evidence",)), ("evidence",), self.labels)

    def order_rates(
        self, decoding: str = "greedy", agreement: str | None = "all_differ"
    ) -> RateTable:
        """The paper's Table 1: label rates with Wilson CIs per evidence type and input order."""
        by = ("evidence", "order")
        return RateTable(self._part(decoding, agreement, by), by, self.labels)

    def contrast_effect(
        self,
        decoding: str = "favour image",
        baseline: str = "greedy",
        agreement: str = "all_differ",
    ) -> pd.DataFrame:
        """The contrastive-decoding diagnostic: each source's bias rate where all sources differ
        and the accuracy where they all agree, under ``baseline`` and ``decoding``, with Wilson
        CIs: one row per (decoding, measure) with ``rate``, ``low``, ``high``, ``k``, ``n``."""
        rows = []
        for dname in (baseline, decoding):
            part = self.frame[self.frame["decoding"] == dname]
            if part.empty:
                raise EmptyInputError(f"no responses under decoding {dname!r}")
            differ = part[part["agreement"] == agreement]
            agree = part[part["agreement"] == "all_agree"]
            measures = [(src.bias, differ, src.bias) for src in self.sources]
            measures.append(("accuracy where all agree", agree, NO_BIAS))
            for name, grp, label in measures:
                k, n = int((grp["label"] == label).sum()), len(grp)
                lo, hi = wilson(k, n) if n else (float("nan"), float("nan"))
                rate = k / n if n else float("nan")
                rows.append(
                    {"decoding": dname, "measure": name, "rate": rate, "low": lo, "high": hi}
                    | {"k": k, "n": n}
                )
        return pd.DataFrame(rows)

    def _part(self, decoding: str, agreement: str | None, by: Sequence[str]) -> pd.DataFrame:
        part = self.frame[self.frame["decoding"] == decoding]
        if agreement is not None:
            part = part[part["agreement"] == agreement]
        if part.empty:
            raise EmptyInputError(
                f"no responses under decoding {decoding!r} with agreement {agreement!r}"
            )
        return rates(part, by, self.labels)

    def competence(self) -> pd.DataFrame:
        """Accuracy on items whose sources all agree (answering their label: ``NO_BIAS``), per
        configuration and decoding, with CIs."""
        part = self.frame[self.frame["agreement"] == "all_agree"]
        rows = []
        for key, grp in part.groupby(["configuration", "decoding"], sort=False):
            k, n = int((grp["label"] == NO_BIAS).sum()), len(grp)
            lo, hi = wilson(k, n)
            rows.append(
                {
                    "configuration": key[0],
                    "decoding": key[1],
                    "accuracy": k / n,
                    "low": lo,
                    "high": hi,
                    "n": n,
                }
            )
        return pd.DataFrame(rows)
