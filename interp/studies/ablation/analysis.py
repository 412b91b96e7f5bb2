"""Tables and statistics of the ablation, pure functions of the measured answers: rates and
paired drops with bootstrap intervals, the text-only baseline, the :class:`Ablation` and
:class:`InContext` results with their tables."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
from jaxtyping import Bool, Float

from interp.errors import ConditionError
from interp.reprs import Summary
from probes.stats import estimate, mean_ci
from probes.text import normalize_text

from .errors import AblationError, JudgeError
from .items import Items
from .judge import Judge, _check_judge, _judge_name, _judged, default_judge
from .variants import ALL, PAPER_VARIANTS


def variants_frame() -> pd.DataFrame:
    """:data:`PAPER_VARIANTS` as a table (one row per variant, in the paper's order)."""
    return pd.DataFrame([vars(v) for v in PAPER_VARIANTS])


def _difference(a: Float[np.ndarray, " n"], b: Float[np.ndarray, " n"]) -> float:
    return float(np.mean(a) - np.mean(b))


def rate(
    x: Float[np.ndarray, " n"] | Bool[np.ndarray, " n"], *, ci: float, n_boot: int, seed: int
) -> tuple[float, float, float]:
    """``mean(x)`` with its percentile-bootstrap interval, as ``(value, low, high)``:
    :func:`probes.bootstrap.mean_ci` (``(value, NaN, NaN)`` for a single item, all NaN for none)."""
    e = mean_ci(np.asarray(x, dtype=float), ci=ci, n_boot=n_boot, seed=seed)
    return (e.value, e.low, e.high)


def paired_difference(
    a: Float[np.ndarray, " n"] | Bool[np.ndarray, " n"],
    b: Float[np.ndarray, " n"] | Bool[np.ndarray, " n"],
    *,
    ci: float,
    n_boot: int,
    seed: int,
) -> tuple[float, float, float]:
    """``mean(a) − mean(b)`` on the same items, with a paired bootstrap interval (each resample
    draws items, keeping ``a_i`` and ``b_i`` together).

    The small-sample rule of :func:`probes.bootstrap.paired_difference`, but the statistic stays the
    difference of the two means: that function takes the mean of ``a − b``, equal up to rounding
    in the last bit, which would change the full-precision numbers of the study's tables."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) == 0:
        return (np.nan, np.nan, np.nan)
    if len(a) < 2:
        return (float(a.mean() - b.mean()), np.nan, np.nan)
    e = estimate(_difference, a, b, ci=ci, n_boot=n_boot, seed=seed)
    return (e.value, e.low, e.high)


def text_only_baseline(
    items: Items,
    judge: Judge = default_judge,
    *,
    options_key: str | None = "options",
) -> Float[np.ndarray, " n"]:
    """Expected correctness of a model-free reader of the question text alone, per item.

    The reader has seen the other items' answers, never this image's: for item ``i`` its
    neighbours ``N_i`` are the items with the same question text, or, when no other item shares
    the text, the items of the same variant and category — leaving out item ``i``, the other
    wordings of its image (same group label) and items showing the same picture. It answers the
    most frequent normalised reference answer among ``N_i``, restricted to the options the
    question offers (``meta[options_key]``, when present)::

        P_i = argmax_{a ∈ A_i} |{j ∈ N_i : norm(answer_j) = a}|,
        baseline_i = (1 / |P_i|) Σ_{a ∈ P_i} judge(a, sample_i)    (ties averaged)

    with ``A_i`` the options, or the answers of ``N_i``. An item with neither options nor
    neighbours gets NaN. On the demo world this gives 1/2 for a wording that offers two options,
    the canonical colour's share for "what colour is the banana ?", and the majority answer's
    share for a wording that names nothing.
    """
    norm_answers = [normalize_text(str(s.answer)) for s in items.samples]
    by_text: dict[str, list[int]] = defaultdict(list)
    by_cell: dict[tuple[str, str], list[int]] = defaultdict(list)
    for j, s in enumerate(items.samples):
        by_text[normalize_text(s.question)].append(j)
        by_cell[(items.variants[j], items.categories[j])].append(j)
    out = np.full(len(items), np.nan)
    for i, s in enumerate(items.samples):
        neighbours = [j for j in by_text[normalize_text(s.question)] if not items.related(i, j)]
        if not neighbours:
            cell = (items.variants[i], items.categories[i])
            neighbours = [j for j in by_cell[cell] if not items.related(i, j)]
        counts = Counter(norm_answers[j] for j in neighbours)
        spelled = {norm_answers[j]: str(items.samples[j].answer) for j in neighbours}
        options = s.meta.get(options_key) if options_key else None
        if options:
            candidates = {normalize_text(str(o)): str(o) for o in options}
        else:
            candidates = spelled
        if not candidates:
            continue
        best = max(counts.get(a, 0) for a in candidates)
        chosen = [text for a, text in candidates.items() if counts.get(a, 0) == best]
        out[i] = float(np.mean([_judged(judge, text, s) for text in chosen]))
    return out


@dataclass(repr=False)
class Ablation(Summary):
    """Answers of the same items with the image and under each condition without it.

    Attributes:
        answers: one row per item and condition (``full`` first): ``sample_id``, ``variant``,
            ``category``, ``condition``, ``answer``, ``correct`` (the judge's verdict) and
            ``agrees`` (the answer equals the item's answer with the image, normalised).
        baseline: one row per item: ``sample_id``, ``variant``, ``category``, ``reference`` and
            ``text_only`` (:func:`text_only_baseline`).
        conditions: the conditions without the image, in the order given.
        variants: the variant order; ``categories``: the categories in order of first appearance.
        variant_names: display name of each variant.
        judge: the judge's name.
        ci, n_boot, seed: the bootstrap settings of every interval.
    """

    answers: pd.DataFrame
    baseline: pd.DataFrame
    conditions: tuple[str, ...]
    variants: tuple[str, ...]
    categories: tuple[str, ...]
    variant_names: dict[str, str]
    judge: str
    ci: float = 0.95
    n_boot: int = 1000
    seed: int = 0
    items: Items | None = field(default=None, repr=False)
    _frame: pd.DataFrame | None = field(default=None, init=False, repr=False)

    def _repr_head(self) -> dict[str, Any]:
        return {
            "items": len(self.baseline),
            "variants": len(self.variants),
            "categories": len(self.categories),
            "judge": self.judge,
        }

    def _rows(self, variant: str, category: str) -> np.ndarray:
        b = self.baseline
        keep = np.ones(len(b), bool)
        if variant != ALL:
            keep &= (b["variant"] == variant).to_numpy()
        if category != ALL:
            keep &= (b["category"] == category).to_numpy()
        return np.flatnonzero(keep)

    def _column(self, condition: str, column: str) -> np.ndarray:
        part = self.answers[self.answers["condition"] == condition]
        return part[column].to_numpy()

    def to_frame(self) -> pd.DataFrame:
        """One row per (variant, category, condition), ``all`` rows pooling variants or
        categories: ``n``, ``with_image``, ``without``, ``drop`` (paired), ``agreement`` and
        ``text_only``, each with ``*_low`` / ``*_high`` bootstrap bounds."""
        if self._frame is not None:
            return self._frame
        kw = {"ci": self.ci, "n_boot": self.n_boot, "seed": self.seed}
        full = self._column("full", "correct").astype(float)
        base = self.baseline["text_only"].to_numpy(dtype=float)
        rows = []
        for variant in (*self.variants, ALL):
            for category in (*self.categories, ALL):
                idx = self._rows(variant, category)
                if len(idx) == 0:
                    continue
                b = base[idx]
                text = rate(b[~np.isnan(b)], **kw)
                with_image = rate(full[idx], **kw)
                for cond in self.conditions:
                    without = self._column(cond, "correct").astype(float)[idx]
                    agrees = self._column(cond, "agrees").astype(float)[idx]
                    stats = {
                        "with_image": with_image,
                        "without": rate(without, **kw),
                        "drop": paired_difference(full[idx], without, **kw),
                        "agreement": rate(agrees, **kw),
                        "text_only": text,
                    }
                    row: dict[str, Any] = {
                        "variant": variant,
                        "category": category,
                        "condition": cond,
                        "n": len(idx),
                    }
                    for name, (value, low, high) in stats.items():
                        row.update({name: value, f"{name}_low": low, f"{name}_high": high})
                    rows.append(row)
        self._frame = pd.DataFrame(rows)
        return self._frame

    def _name(self, variant: str) -> str:
        return self.variant_names.get(variant, variant)

    def main_table(self, category: str = ALL, digits: int = 2) -> pd.DataFrame:
        """The paper's main table: one row per variant (then ``all``), columns accuracy with the
        image, under each condition without it, and the text-only baseline, as
        ``value [low, high]``; ``n`` items per row."""
        frame = self.to_frame()
        part = frame[frame["category"] == category]
        out = []
        for variant in (*self.variants, ALL):
            rows = part[part["variant"] == variant]
            if rows.empty:
                continue
            first = rows.iloc[0]
            row = {"variant": self._name(variant), "n": int(first["n"])}
            row["with image"] = _cell(first, "with_image", digits)
            for _, r in rows.iterrows():
                row[str(r["condition"])] = _cell(r, "without", digits)
            row["text-only baseline"] = _cell(first, "text_only", digits)
            out.append(row)
        return pd.DataFrame(out).set_index("variant")

    def category_table(self, condition: str | None = None, column: str = "drop") -> pd.DataFrame:
        """``column`` (``with_image``, ``without``, ``drop``, ``agreement``, ``text_only``) per
        category (rows) and variant (columns) under one condition (default: the first)."""
        cond = condition or self.conditions[0]
        if cond not in self.conditions:
            raise ConditionError(f"condition {cond!r} is not in this ablation {self.conditions}")
        frame = self.to_frame()
        part = frame[frame["condition"] == cond]
        table = part.pivot(index="category", columns="variant", values=column)
        cols = [v for v in (*self.variants, ALL) if v in table.columns]
        rows = [c for c in (*self.categories, ALL) if c in table.index]
        table = table.loc[rows, cols]
        table.columns = [self._name(v) for v in cols]
        return table

    def with_judge(self, judge: Judge) -> Ablation:
        """The same answers scored by another judge (no generation): ``correct`` and the
        text-only baseline are recomputed, agreement stays."""
        judge = _check_judge(judge)
        if self.items is None:
            raise JudgeError("this Ablation does not hold its items; rerun no_image_ablation")
        by_id = {str(s.id): s for s in self.items.samples}
        answers = self.answers.copy()
        answers["correct"] = [
            _judged(judge, str(a), by_id[str(sid)])
            for a, sid in zip(answers["answer"], answers["sample_id"])
        ]
        baseline = self.baseline.copy()
        baseline["text_only"] = text_only_baseline(self.items, judge)
        return replace(self, answers=answers, baseline=baseline, judge=_judge_name(judge))

    def summary(self, digits: int = 2) -> str:
        """The main table, the drop per category and variant, and the agreement, as text."""
        lines = [
            f"no-image ablation: {len(self.baseline)} items, {len(self.variants)} variants, "
            f"{len(self.categories)} categories; judge {self.judge}; {int(self.ci * 100)}% "
            f"bootstrap intervals ({self.n_boot} resamples, seed {self.seed})",
            "",
            "accuracy with and without the image, per variant:",
            self.main_table(digits=digits).to_string(),
        ]
        for cond in self.conditions:
            lines += ["", f"drop (with image - {cond}) per category and variant:"]
            lines.append(self.category_table(cond, "drop").round(digits).to_string())
        lines += ["", "agreement with the answer given with the image, per variant:"]
        frame = self.to_frame()
        part = frame[frame["category"] == ALL]
        agree = part.pivot(index="variant", columns="condition", values="agreement")
        agree = agree.loc[[v for v in (*self.variants, ALL) if v in agree.index]]
        agree = agree[list(self.conditions)]
        agree.index = [self._name(v) for v in agree.index]
        lines.append(agree.round(digits).to_string())
        return "\n".join(lines)


def _cell(row: pd.Series, name: str, digits: int) -> str:
    value, low, high = row[name], row[f"{name}_low"], row[f"{name}_high"]
    if np.isnan(value):
        return "-"
    if np.isnan(low):
        return f"{value:.{digits}f}"
    return f"{value:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def _check_bootstrap(ci: float, n_boot: int) -> None:
    if not 0.0 < ci < 1.0:
        raise AblationError(f"ci must lie in (0, 1), got {ci}")
    if n_boot < 1:
        raise AblationError(f"n_boot must be >= 1, got {n_boot}")


@dataclass(repr=False)
class InContext(Summary):
    """Answers with ``k`` in-context examples per item, per example source and condition.

    Attributes:
        answers: one row per (source, k, condition, item): ``source``, ``k``, ``condition``,
            ``sample_id``, ``variant``, ``category``, ``answer``, ``correct``. The k = 0 run is
            shared by the sources.
        examples: per source, the example sample ids of each item (for the largest k; smaller k
            take a prefix).
        shots, sources, conditions, variants, variant_names, judge, ci, n_boot, seed: the settings.
    """

    answers: pd.DataFrame
    examples: dict[str, dict[str, list[str]]]
    shots: tuple[int, ...]
    sources: tuple[str, ...]
    conditions: tuple[str, ...]
    variants: tuple[str, ...]
    variant_names: dict[str, str]
    judge: str
    ci: float = 0.95
    n_boot: int = 1000
    seed: int = 0
    _frame: pd.DataFrame | None = field(default=None, init=False, repr=False)

    def _repr_head(self) -> dict[str, Any]:
        return {"rows": len(self.answers), "shots": self.shots, "judge": self.judge}

    def _correct(self, source: str, k: int, condition: str) -> pd.DataFrame:
        a = self.answers
        return a[(a["source"] == source) & (a["k"] == k) & (a["condition"] == condition)]

    def to_frame(self) -> pd.DataFrame:
        """One row per (variant or ``all``, source, condition, k): ``n``, ``accuracy``, ``gain``
        = accuracy(k) − accuracy(0) on the same items (paired), each with bootstrap bounds, and
        for conditions without the image ``recovered`` = gain / (accuracy(full, 0) − accuracy(0)):
        the share of the no-image drop the examples win back (NaN without a ``full`` run or a
        positive drop)."""
        if self._frame is not None:
            return self._frame
        kw = {"ci": self.ci, "n_boot": self.n_boot, "seed": self.seed}
        rows = []
        for variant in (*self.variants, ALL):
            for source in self.sources:
                for cond in self.conditions:
                    zero = self._correct(source, 0, cond)
                    full0 = self._correct(source, 0, "full") if "full" in self.conditions else None
                    for k in self.shots:
                        part = self._correct(source, k, cond)
                        keep = np.ones(len(part), bool)
                        if variant != ALL:
                            keep = (part["variant"] == variant).to_numpy()
                        now = part["correct"].to_numpy(dtype=float)[keep]
                        before = zero["correct"].to_numpy(dtype=float)[keep]
                        acc = rate(now, **kw)
                        gain = paired_difference(now, before, **kw)
                        recovered = np.nan
                        if cond != "full" and full0 is not None:
                            drop = full0["correct"].to_numpy(dtype=float)[keep].mean()
                            drop -= before.mean()
                            recovered = gain[0] / drop if drop > 0 else np.nan
                        rows.append(
                            {
                                "variant": variant,
                                "source": source,
                                "condition": cond,
                                "k": k,
                                "n": int(keep.sum()),
                                "accuracy": acc[0],
                                "accuracy_low": acc[1],
                                "accuracy_high": acc[2],
                                "gain": gain[0],
                                "gain_low": gain[1],
                                "gain_high": gain[2],
                                "recovered": recovered,
                            }
                        )
        self._frame = pd.DataFrame(rows)
        return self._frame

    def table(
        self, condition: str = "full", source: str = "matched", digits: int = 2
    ) -> pd.DataFrame:
        """Accuracy ``value [low, high]`` per variant (rows) and k (columns) for one condition
        and source."""
        frame = self.to_frame()
        part = frame[(frame["condition"] == condition) & (frame["source"] == source)]
        if part.empty:
            raise AblationError(f"no run for condition {condition!r} and source {source!r}")
        out = part.assign(cell=[_cell(r, "accuracy", digits) for _, r in part.iterrows()])
        table = out.pivot(index="variant", columns="k", values="cell")
        table = table.loc[[v for v in (*self.variants, ALL) if v in table.index]]
        table.index = [self.variant_names.get(v, v) for v in table.index]
        table.columns = [f"k={k}" for k in table.columns]
        return table


__all__ = [
    "Ablation",
    "InContext",
    "paired_difference",
    "rate",
    "text_only_baseline",
    "variants_frame",
]
