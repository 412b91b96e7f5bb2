"""Rates of the response labels with Wilson 95 % CIs (:func:`probes.stats.wilson`): per group,
per source position, and accuracy where the sources agree."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from interp.errors import EmptyInputError
from probes.stats import wilson

from .items import DEMO_SOURCES, NO_BIAS, Source, all_labels


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
class ConflictResponses:
    """Responses of conflict items under each configuration (and decoding), labelled.

    Attributes:
        frame: one row per (configuration, decoding, sample): ``sample_id``, ``group``,
            ``configuration``, ``decoding``, ``order``, ``agreement``, ``response``, ``label``,
            ``first`` (the first source in the order).
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
        the last before the question = len(order)), with CIs — recency vs primacy."""
        part = self.frame if agreement is None else self.frame[self.frame["agreement"] == agreement]
        rows = []
        for src in self.sources:
            pos = part["order"].map(
                lambda o, name=src.order_name: (
                    (o.split(",").index(name) + 1) if name in o.split(",") else None
                )
            )
            for (config, p), grp in (
                part.assign(position=pos)
                .dropna(subset=["position"])
                .groupby(["configuration", "position"], sort=True)
            ):
                k, n = int((grp["label"] == src.bias).sum()), len(grp)
                lo, hi = wilson(k, n)
                rows.append(
                    {
                        "configuration": config,
                        "source": src.name,
                        "position": int(p),
                        "rate": k / n,
                        "low": lo,
                        "high": hi,
                        "n": n,
                    }
                )
        return pd.DataFrame(rows)

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
