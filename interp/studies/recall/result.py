"""The run of the study (:class:`RecallRun`): every setting's answers, the states, the logit lens
and the perplexities of N items, with the per-item table, the benchmark's filters and the accuracy
and gap tables."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd
from jaxtyping import Bool, Float, Int

from interp.errors import RecallError
from interp.reprs import Summary
from probes.text import bleu, exact_match, inclusion_match

from .analysis import _mean_ci
from .items import RecallItem, check_families, families_of
from .settings import METRICS, SETTINGS, SUBSETS, TRIVIAL

TensorLike = Any
"""A torch tensor, annotated without importing torch."""


@dataclass(repr=False)
class RecallRun(Summary):
    """Everything the model produced for N recall items (see :func:`run_recall`).

    Attributes:
        items: the items, in row order.
        answers: setting -> one answer per item: ``visual``, ``full_info``, ``text_only`` (the
            majority vote), ``text_only:<condition>`` per trivial condition, ``visual_trivial``
            and ``visual_trivial:<condition>`` (the guess filter, if run), ``identify`` (None for
            items not asked).
        states: ``"visual"`` and ``"full_info"`` -> float32 ``[N, L+1, d]``, last prompt token.
        lens: ``[N, L+1]`` logit-lens probability of the eventual Visual output token.
        perplexity: ``[N]`` per-token perplexity of the Visual answer.
        first_token: ``[N]`` the first generated token of the Visual answer (``t*``).
        trivial: the trivial conditions of the Text-Only vote.
        whole_words: two-way inclusion on word boundaries (see :func:`run_recall`).
        seed: the vote's tie-break seed.
    """

    items: list[RecallItem]
    answers: dict[str, list[str | None]]
    states: dict[str, Float[TensorLike, "n layer d"]]
    lens: Float[np.ndarray, "n layer"]
    perplexity: Float[np.ndarray, " n"]
    first_token: Int[np.ndarray, " n"]
    trivial: tuple[str, ...] = TRIVIAL
    whole_words: bool = True
    seed: int = 0

    def _repr_head(self) -> dict[str, Any]:
        return {"n": len(self), "families": len(self.families), "layers": self.n_layers}

    def __post_init__(self) -> None:
        n = len(self.items)
        bad = {k: len(v) for k, v in self.answers.items() if len(v) != n}
        if bad or len(self.lens) != n or len(self.perplexity) != n:
            raise RecallError(f"a RecallRun needs one value per item ({n}); got lengths {bad}")
        for key in ("visual", "full_info", "text_only"):
            if key not in self.answers:
                raise RecallError(f"a RecallRun needs {key!r} answers")

    def __len__(self) -> int:
        return len(self.items)

    @property
    def families(self) -> list[str]:
        return families_of(self.items)

    @property
    def n_layers(self) -> int:
        """L+1, the layer slots of the states."""
        return int(self.lens.shape[1])

    def _score(self, preds: Sequence[str | None], refs: Sequence[str]) -> pd.DataFrame:
        rows = []
        for p, r in zip(preds, refs):
            if p is None:
                rows.append({"exact": np.nan, "inclusion": np.nan, "bleu": np.nan})
                continue
            rows.append(
                {
                    "exact": exact_match(p, r),
                    "inclusion": inclusion_match(p, r, whole_words=self.whole_words),
                    "bleu": bleu(p, r) if p.strip() else 0.0,
                }
            )
        return pd.DataFrame(rows)

    @cached_property
    def frame(self) -> pd.DataFrame:
        """One row per item: ids and labels, each setting's answer and scores
        (``<setting>_exact``, ``<setting>_inclusion``, ``<setting>_bleu`` in 0-100), the filters
        (``guessed``, ``identified``, ``kept``), the perplexity and the final-layer lens
        probability; scalar ``meta`` labels of the items are appended."""
        gold = [item.answer for item in self.items]
        out = pd.DataFrame(
            {
                "item_id": [item.id for item in self.items],
                "family": [item.family for item in self.items],
                "entity": [item.entity for item in self.items],
                "pair": [item.pair for item in self.items],
                "textual": [item.textual for item in self.items],
                "visual_question": [item.visual for item in self.items],
                "answer": gold,
            }
        )
        for setting in (*SETTINGS, "visual_trivial"):
            if setting not in self.answers:
                continue
            out[f"answer_{setting}"] = self.answers[setting]
            scores = self._score(self.answers[setting], gold)
            for metric in ("exact", "inclusion", "bleu"):
                out[f"{setting}_{metric}"] = scores[metric].to_numpy()
        for cond in self.trivial:
            for setting in ("text_only", "visual_trivial"):
                if f"{setting}:{cond}" in self.answers:
                    out[f"answer_{setting}:{cond}"] = self.answers[f"{setting}:{cond}"]
        out["full_info_correct"] = out["full_info_inclusion"].astype(bool)
        if "visual_trivial" in self.answers:
            out["guessed"] = out["visual_trivial_inclusion"].astype(bool)
        else:
            out["guessed"] = False
        if "identify" in self.answers:
            out["answer_identify"] = self.answers["identify"]
            out["identified"] = [
                None
                if said is None or item.entity is None
                else inclusion_match(said, item.entity, whole_words=True)
                for said, item in zip(self.answers["identify"], self.items)
            ]
        else:
            out["identified"] = None
        out["kept"] = (
            out["full_info_correct"]
            & ~out["guessed"]
            & out["identified"].map(lambda v: v is None or bool(v)).astype(bool)
        )
        out["perplexity"] = self.perplexity
        out["p_final"] = self.lens[:, -1]
        for key in sorted({k for item in self.items for k in item.meta}):
            if key in out.columns or key in ("group", "setting", "family", "entity"):
                continue
            values = [item.meta.get(key) for item in self.items]
            if all(v is None or isinstance(v, (str, int, float, bool)) for v in values):
                out[key] = values
        return out

    def to_frame(self) -> pd.DataFrame:
        """The per-item table (a copy of :attr:`frame`)."""
        return self.frame.copy()

    @property
    def kept(self) -> Bool[np.ndarray, " n"]:
        """The benchmark's model-specific filters (Sec. 3, Appendix A): the Full Info answer is
        right (the model holds the fact), the visual question is *not* answered from a trivial
        image (no language-prior guess; if the guess filter ran) and the entity is identified
        (where an identification question was asked)."""
        return self.frame["kept"].to_numpy(dtype=bool)

    def mask(self, subset: str = "kept", family: str | None = None) -> Bool[np.ndarray, " n"]:
        """Rows of ``subset`` (``"kept"``: the filtered benchmark, ``"all"``) and ``family``."""
        if subset not in SUBSETS:
            raise RecallError(f"subset must be one of {SUBSETS}, got {subset!r}")
        rows = self.kept if subset == "kept" else np.ones(len(self), dtype=bool)
        if family is not None:
            check_families(self.families, [family])
            rows = rows & (self.frame["family"].to_numpy() == family)
        return rows

    def families_with_items(self, subset: str = "kept") -> list[str]:
        """The families with at least one row in ``subset`` (what :func:`transfer` can use)."""
        return [f for f in self.families if self.mask(subset, f).any()]

    def correct(self, setting: str = "visual", metric: str = "inclusion") -> np.ndarray:
        """``[N]`` correctness (exact, inclusion: bool) or BLEU (0-100) of a setting's answers."""
        if setting not in (*SETTINGS, "visual_trivial") or metric not in METRICS:
            raise RecallError(
                f"setting must be one of {SETTINGS} and metric one of {METRICS}; got "
                f"{setting!r}, {metric!r}"
            )
        values = self.frame[f"{setting}_{metric}"].to_numpy()
        return values.astype(bool) if metric != "bleu" else values.astype(np.float64)

    def accuracy(
        self, subset: str = "kept", *, ci: float = 0.95, n_boot: int = 1000, seed: int = 0
    ) -> pd.DataFrame:
        """Accuracy per setting, family (and ``all``) and metric, the paper's Fig. 3 (inclusion)
        and Figs. 5-6 (exact match, BLEU).

        Columns: ``subset``, ``family``, ``setting``, ``metric``, ``value`` (the mean over items;
        BLEU divided by 100 so that every metric is in [0, 1]), ``low`` / ``high`` (percentile
        bootstrap interval of the mean over items at level ``ci``) and ``n``.
        """
        rows = []
        for family in [*self.families, "all"]:
            m = self.mask(subset, None if family == "all" else family)
            for setting in SETTINGS:
                for metric in METRICS:
                    x = self.correct(setting, metric)[m].astype(np.float64)
                    if metric == "bleu":
                        x = x / 100.0
                    rows.append(
                        {
                            "subset": subset,
                            "family": family,
                            "setting": setting,
                            "metric": metric,
                            **_mean_ci(x, ci, n_boot, seed),
                        }
                    )
        return pd.DataFrame(rows)

    def gap(
        self,
        metric: str = "inclusion",
        subset: str = "kept",
        *,
        ci: float = 0.95,
        n_boot: int = 1000,
        seed: int = 0,
    ) -> pd.DataFrame:
        """The visual-reference gap per family: Text-Only minus Visual accuracy on the same items,
        with a paired bootstrap interval (items resampled, both settings kept together), and the
        relative decline ``(TO - V) / TO`` (the paper's "58.95 % degradation", Sec. 1 and 5)."""
        rows = []
        for family in [*self.families, "all"]:
            m = self.mask(subset, None if family == "all" else family)
            to = self.correct("text_only", metric)[m].astype(np.float64)
            vis = self.correct("visual", metric)[m].astype(np.float64)
            diff = _mean_ci(to - vis, ci, n_boot, seed)
            t_mean = float(to.mean()) if len(to) else math.nan
            rows.append(
                {
                    "family": family,
                    "metric": metric,
                    "text_only": t_mean,
                    "visual": float(vis.mean()) if len(vis) else math.nan,
                    "full_info": float(self.correct("full_info", metric)[m].mean())
                    if m.any()
                    else math.nan,
                    "gap": diff["value"],
                    "gap_low": diff["low"],
                    "gap_high": diff["high"],
                    "relative_decline": diff["value"] / t_mean if t_mean else math.nan,
                    "n": int(m.sum()),
                }
            )
        return pd.DataFrame(rows)

    def filters(self) -> pd.DataFrame:
        """How many items each filter removes, per family (the paper's Table 3 analogue)."""
        f = self.frame
        rows = []
        for family in [*self.families, "all"]:
            part = f if family == "all" else f[f["family"] == family]
            ident = part["identified"].dropna()
            rows.append(
                {
                    "family": family,
                    "items": len(part),
                    "full_info_wrong": int((~part["full_info_correct"]).sum()),
                    "guessed_from_trivial_image": int(part["guessed"].sum()),
                    "not_identified": int((~ident.astype(bool)).sum()),
                    "kept": int(part["kept"].sum()),
                }
            )
        return pd.DataFrame(rows)
