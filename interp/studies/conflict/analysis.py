"""Rates of the response labels with Wilson 95 % CIs (:func:`probes.proportions.wilson`): per
group, per source position, and accuracy where the sources agree; and the study's three findings as
differences with intervals (:meth:`ConflictResponses.effects`): which source dominates, the
perceptual / propositional asymmetry per modality, and the order effect."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from interp.errors import EmptyInputError
from interp.reprs import Summary
from probes.proportions import Difference, newcombe, wilson
from probes.stats import Estimate, bootstrap_ci

from .items import DEMO_SOURCES, NO_BIAS, Source, all_labels

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _rate(k: int, n: int) -> dict[str, Any]:
    """The columns every rate table here shares: ``rate`` = k / n with its Wilson 95 % interval
    ``low``, ``high``, then ``k``, ``n`` (NaN rate and bounds where n = 0)."""
    low, high = wilson(k, n) if n else (float("nan"), float("nan"))
    return {"rate": k / n if n else float("nan"), "low": low, "high": high, "k": k, "n": n}


def rates(frame: pd.DataFrame, by: Sequence[str], labels: Sequence[str]) -> pd.DataFrame:
    """Share of each response label per group, with Wilson 95 % CIs: one row per (group, label)
    with ``rate``, ``low``, ``high``, ``k``, ``n``."""
    rows = []
    for key, part in frame.groupby(list(by), sort=False):
        key = key if isinstance(key, tuple) else (key,)
        n = len(part)
        for lab in labels:
            k = int((part["label"] == lab).sum())
            rows.append({**dict(zip(by, key)), "label": lab} | _rate(k, n))
    return pd.DataFrame(rows)


FORM_LETTERS: dict[str, str] = {"I": "image", "A": "audio", "V": "video"}
"""The modality each letter of an evidence name stands for (``PercI-PropA``: image, audio)."""


def evidence_forms(evidence: str) -> dict[str, str]:
    """The form of each modality an evidence name states: ``"PercI-PropA"`` →
    ``{"image": "perceptual", "audio": "propositional"}``; ``{}`` for a name of another shape
    (the demo set's configurations)."""
    forms = {}
    for part in str(evidence).split("-"):
        m = re.fullmatch(r"(Perc|Prop)([IAV])", part)
        if m is None:
            return {}
        forms[FORM_LETTERS[m[2]]] = "perceptual" if m[1] == "Perc" else "propositional"
    return forms


def _effect_row(
    effect: str, source: str, contrast: str, d: Difference | Estimate, direction: str
) -> dict:
    """One finding; the columns a reader needs first (what, which way, how much) lead, so a
    terminal that cuts a wide frame keeps them."""
    low, high, value = d.low, d.high, d.value
    return {
        "effect": effect,
        "source": source,
        "direction": direction,
        "difference": value,
        "low": low,
        "high": high,
        "reported": bool(low > 0 or high < 0),
        "contrast": contrast,
    }


@dataclass(repr=False)
class RateTable(Summary):
    """Label rates with Wilson 95 % CIs per group (:func:`rates`).

    Attributes:
        frame: one row per (group, label): the group columns, ``label``, ``rate``, ``low``,
            ``high``, ``k``, ``n``.
        by: the group columns; ``labels``: every label, in order.
    """

    frame: pd.DataFrame
    by: tuple[str, ...]
    labels: list[str]

    def _repr_head(self) -> dict[str, Any]:
        return {"rows": len(self.frame), "by": self.by, "labels": len(self.labels)}

    def to_frame(self) -> pd.DataFrame:
        """The table: one row per group and label with the rate and its Wilson interval."""
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


@dataclass(repr=False)
class ConflictResponses(Summary):
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

    def _repr_head(self) -> dict[str, Any]:
        return {"rows": len(self.frame), "sources": [s.name for s in self.sources]}

    def to_frame(self) -> pd.DataFrame:
        """One row per response: the sample, its configuration, the answer and its label."""
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
                rows.append(
                    {
                        "configuration": config,
                        "evidence": evidence,
                        "source": src.name,
                        "position": int(p),
                    }
                    | _rate(k, n)
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
                rows.append({"decoding": dname, "measure": name} | _rate(k, n))
        return pd.DataFrame(rows)

    def decoding_effects(
        self,
        decodings: Sequence[str] | None = None,
        baseline: str = "greedy",
        agreement: str = "all_differ",
        configuration: str | None = None,
        seed: int = 0,
    ) -> pd.DataFrame:
        """Each source's bias rate under each decoding beside ``baseline``, on the same items:
        the contrastive-decoding diagnostic with intervals for both the rates and the change.

        One row per (decoding, measure), the measures being each source's ``BIAS_<SOURCE>`` on
        items where the sources ``agreement`` (default: all differ) and ``accuracy where all
        agree`` (``NO_BIAS`` on agreeing items: competence). Columns: ``decoding``, ``measure``,
        ``rate`` with its Wilson 95 % interval ``low``, ``high`` and ``k``, ``n``; ``baseline``
        (the baseline's rate on the same items); ``change`` = rate − baseline with a 95 %
        percentile-bootstrap interval ``change_low``, ``change_high`` that resamples whole
        groups (``group``: an item's orders and evidence conditions) with both decodings'
        responses paired (``seed`` fixed), and ``changed`` when that interval excludes 0.

        Args:
            decodings: which decodings (default: every one in the frame but ``baseline``).
            configuration: which run (default: the first in the frame, the full input).

        Raises:
            EmptyInputError: no responses under ``baseline`` or a decoding named.
        """
        if configuration is None and len(self.frame):
            configuration = str(self.frame["configuration"].iloc[0])
        frame = self.frame[self.frame["configuration"] == configuration]
        names = list(dict.fromkeys(frame["decoding"]))
        decodings = [d for d in names if d != baseline] if decodings is None else list(decodings)
        for name in (baseline, *decodings):
            if name not in names:
                raise EmptyInputError(
                    f"no responses under decoding {name!r} in configuration {configuration!r}; "
                    f"decodings run: {', '.join(names)}"
                )
        base = frame[frame["decoding"] == baseline].set_index("sample_id")
        measures = [(s.bias, agreement, s.bias) for s in self.sources]
        measures.append(("accuracy where all agree", "all_agree", NO_BIAS))
        rows = []
        for name in decodings:
            part = frame[frame["decoding"] == name].set_index("sample_id")
            for measure, agree, label in measures:
                ids = part.index[part["agreement"] == agree]
                n = len(ids)
                hit = (part.loc[ids, "label"] == label).to_numpy(float)
                ref = (base.loc[ids, "label"] == label).to_numpy(float)
                rate = _rate(int(hit.sum()), n)
                change_low = change_high = float("nan")
                if n:
                    groups = part.loc[ids, "group"].astype(str).to_numpy()
                    diff = pd.Series(hit - ref).groupby(groups)
                    sums, counts = diff.sum().to_numpy(), diff.count().to_numpy()
                    if len(sums) >= 2:
                        change_low, change_high = bootstrap_ci(
                            lambda a, b: float(a.sum() / b.sum()), sums, counts, seed=seed
                        )
                change = rate["rate"] - ref.mean() if n else float("nan")
                rows.append(
                    {"decoding": name, "measure": measure}
                    | rate
                    | {"baseline": ref.mean() if n else np.nan}
                    | {"change": change, "change_low": change_low, "change_high": change_high}
                    | {"changed": bool(change_low > 0 or change_high < 0)}
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

    def effects(
        self,
        decoding: str = "greedy",
        agreement: str = "all_differ",
        configuration: str | None = None,
        seed: int = 0,
    ) -> pd.DataFrame:
        """The study's findings as differences with 95 % intervals, on the items where every
        source differs, one decoding and one configuration (default: the first in the frame, the
        full input); a finding is ``reported`` when its interval excludes 0.

        - ``bias`` (which source dominates): for the source followed most often, its bias rate
          minus each other source's, on the same responses; interval: percentile bootstrap over
          items (an item's orders stay together), ``seed`` fixed.
        - ``form`` (the asymmetry, Fig. 3 read per modality): for each source whose modality the
          items' ``evidence`` names (``PercI-PropA``: image perceptual, audio propositional) and
          that shows in both forms, its bias rate under perceptual minus under propositional
          evidence; Newcombe's interval
          (:func:`probes.proportions.newcombe`). Positive: perceptual evidence is followed more.
        - ``order`` (Table 1 read by position): each source's bias rate when shown last (just
          before the question) minus when shown first; Newcombe's interval. Positive: recency.

        Columns: ``effect``, ``source``, ``direction`` (the winning source, ``recency`` /
        ``primacy``, ``perceptual`` / ``propositional``; ``none`` when the interval contains 0),
        ``difference``, ``low``, ``high``, ``reported``, ``contrast``, and the two rates with their counts (``a``, ``n_a``, ``b``,
        ``n_b``). The order and form intervals treat the two groups as independent, although an
        item appears in several orders; the bias interval resamples whole items.
        """
        if configuration is None and len(self.frame):
            configuration = str(self.frame["configuration"].iloc[0])
        part = self.frame[self.frame["decoding"] == decoding]
        part = part[(part["agreement"] == agreement) & (part["configuration"] == configuration)]
        if part.empty:
            raise EmptyInputError(
                f"no responses under decoding {decoding!r} with agreement {agreement!r} in "
                f"configuration {configuration!r}"
            )
        return pd.DataFrame(
            self._bias_effects(part, seed) + self._form_effects(part) + self._order_effects(part)
        )

    def _bias_effects(self, part: pd.DataFrame, seed: int) -> list[dict]:
        rates_ = {s.name: float((part["label"] == s.bias).mean()) for s in self.sources}
        top = max(self.sources, key=lambda s: rates_[s.name])
        rows = []
        for other in self.sources:
            if other is top:
                continue
            diff = (part["label"] == top.bias).astype(float) - (part["label"] == other.bias)
            per_item = diff.groupby(part["sample_id"].to_numpy()).mean().to_numpy()
            if len(per_item) >= 2:
                low, high = bootstrap_ci(np.mean, per_item, seed=seed)
            else:
                low = high = float("nan")
            d = Estimate(rates_[top.name] - rates_[other.name], low, high)
            # top leads by construction; it dominates only where the interval excludes 0
            direction = top.name if low > 0 else "none"
            rows.append(
                _effect_row("bias", top.name, f"{top.name} − {other.name}", d, direction)
                | {"a": rates_[top.name], "n_a": len(part), "b": rates_[other.name]}
                | {"n_b": len(part)}
            )
        return rows

    def _form_effects(self, part: pd.DataFrame) -> list[dict]:
        forms = part["evidence"].map(evidence_forms)
        rows = []
        for src in self.sources:
            shown = part["order"].str.split(",").map(lambda o, n=src.order_name: n in o)
            form = forms.map(lambda f, kind=src.kind: f.get(kind)).where(shown)
            row = _two_groups(
                part,
                form,
                src,
                ("form", "perceptual", "propositional"),
                ("perceptual", "propositional"),
            )
            if row is not None:
                rows.append(row)
        return rows

    def _order_effects(self, part: pd.DataFrame) -> list[dict]:
        rows = []
        shown = part["order"].str.split(",")
        for src in self.sources:
            at = shown.map(
                lambda o, n=src.order_name: (
                    "last" if o[-1] == n else "first" if o[0] == n and len(o) > 1 else None
                )
            )
            row = _two_groups(part, at, src, ("order", "last", "first"), ("recency", "primacy"))
            if row is not None:
                rows.append(row)
        return rows

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
        # without agreeing items: an empty table that still has its columns
        columns = ["configuration", "decoding", "accuracy", "low", "high", "n"]
        return pd.DataFrame(rows, columns=columns)


def _two_groups(
    part: pd.DataFrame,
    groups: pd.Series,
    src: Source,
    names: tuple[str, str, str],
    directions: tuple[str, str],
) -> dict | None:
    """``src``'s bias rate where ``groups == names[1]`` minus where ``groups == names[2]``, with
    Newcombe's interval, as an effect row named ``names[0]``; None when a group is empty."""
    effect, first, second = names
    counts = []
    for name in (first, second):
        grp = part[groups == name]
        counts += [int((grp["label"] == src.bias).sum()), len(grp)]
    k1, n1, k2, n2 = counts
    if not (n1 and n2):  # the source never shows in one of the two groups
        return None
    d = newcombe(k1, n1, k2, n2)
    direction = directions[0] if d.low > 0 else directions[1] if d.high < 0 else "none"
    return _effect_row(effect, src.name, f"{first} − {second}", d, direction) | {
        "a": k1 / n1,
        "n_a": n1,
        "b": k2 / n2,
        "n_b": n2,
    }
