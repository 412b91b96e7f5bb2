"""From a chain of embedding to the paper's findings: split → VIP → TVI → correlations.

:func:`diagnose` turns a :class:`~interp.studies.coe.chain.ChainOfEmbedding` into a :class:`Diagnosis`: the
per-layer distances d(z_vis^l, z_blind^l), the D_VT / D_T split, the VIP (automatic under a rule of
:data:`probes.vip.RULES` — ``changepoint`` by default, ``eq9`` the paper's — or manual), per-sample TVI (Eq. 4), its pre-VIP and std-reweighted (Eq. 11) variants, the Eq. 10
baselines, correctness, and the Spearman correlations of Tables 1, 3, 4, 6 and 9 as DataFrames.

Inference is at the level of the independent unit, a sample's ``meta["group"]`` (the demo world's
image, shared by its wordings; :attr:`Diagnosis.clusters`): the gap between the groups per layer
comes with a cluster-bootstrap interval and Holm-adjusted p-values over the layers
(:func:`probes.vip_clustered.clustered_two_sample_test`, :attr:`Diagnosis.gap_test`), beside the
paper's test (Lemma F.1, samples taken as independent), which the VIP rules use.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
from jaxtyping import Bool, Float

from interp.errors import EmptyGroupError, NoVIPError, TooFewSamplesError
from interp.reprs import Summary
from probes.split import is_correct
from probes.stats import (
    ClusteredCorrelation,
    ConstantInputWarning,
    CorrelationResult,
    clustered_spearman,
    spearman,
)
from probes.tvi import pre_vip_tvi, tvi, weighted_tvi
from probes.vip import RULES, VIPDetector, automatic_vip, significance_floor
from probes.vip_clustered import ClusteredTwoSampleResult, clustered_two_sample_test

from .chain import ChainOfEmbedding

SplitSpec = Literal["agreement"] | str | Sequence[bool] | np.ndarray
MatchMode = Literal["exact", "inclusion"]


def _split(coe: ChainOfEmbedding, split: SplitSpec) -> Bool[np.ndarray, " n"]:
    if isinstance(split, str) and split == "agreement":
        return coe.agreement()
    if isinstance(split, str):
        values = [s.meta.get(split) for s in coe.samples]
        if any(v is None for v in values):
            raise KeyError(f"split={split!r}: some samples have no meta[{split!r}] label")
        return np.asarray(values, dtype=bool)
    labels = np.asarray(split, dtype=bool)
    if labels.shape != (len(coe),):
        raise ValueError(f"split labels have shape {labels.shape}, expected ({len(coe)},)")
    return labels


def _safe_spearman(x: np.ndarray, y: np.ndarray) -> CorrelationResult:
    """Spearman that reports NaN (instead of raising) for fewer than 3 pairs or constant input."""
    if len(x) < 3:
        return CorrelationResult(float("nan"), float("nan"), len(x))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstantInputWarning)
        return spearman(x, y)


def _tvi_rho(distances: np.ndarray, layer: int, correct: np.ndarray) -> dict[str, float]:
    """``rho`` and ``p_value``: Spearman of the post-``layer`` TVI with correctness on the
    scored samples (correct not NaN), as each VIP table reports it."""
    scored = ~np.isnan(correct)
    r = _safe_spearman(tvi(distances, layer)[scored], correct[scored])
    return {"rho": r.rho, "p_value": r.p_value}


@dataclass(repr=False)
class Diagnosis(Summary):
    """Everything the chain-of-embedding analysis derives for one model and dataset.

    Attributes:
        coe: the chain of embedding it was computed from.
        metric: the distance used (``"cosine"`` by default).
        distances: ``[N, L+1]`` d(z_a^l, z_b^l).
        in_vt: D_VT membership (agreement split or given labels).
        detector: the fitted :class:`probes.vip.VIPDetector`.
        vip: the VIP layer used for TVI (the detector's, or ``fallback_vip`` when the automatic rule
            found none — ``vip_method`` says which).
        vip_rule: the automatic rule asked for (a name of :data:`probes.vip.RULES`; with a manual
            VIP it was not applied).
        tvi, pre_tvi, weighted_tvi: per-sample TVI (Eq. 4), pre-VIP aggregate (Table 1), Eq. 11.
        output_divergence: d(Z_a^L, Z_b^L) on the final states, after the final norm (Eq. 10;
            Hugging Face's ``hidden_states[-1]``).
        correct: 1.0 / 0.0 where the answer under the image condition matches / misses the
            reference, NaN for samples without a reference (None when no sample has one).
            Correlations use the samples with a reference.
        gap_test: the gap D_VT − D_T per layer with its 95 % interval over resamples of whole
            clusters (:attr:`clusters`) and Holm-adjusted p-values over the layers
            (:func:`probes.vip_clustered.clustered_two_sample_test`, 10,000 resamples, seed 0);
            None where there are fewer than 2 clusters. The detector's statistic is the paper's
            test, which takes the samples as independent.
    """

    coe: ChainOfEmbedding
    metric: str
    distances: Float[np.ndarray, "n layer"]
    in_vt: Bool[np.ndarray, " n"]
    detector: VIPDetector
    vip: int
    vip_method: str
    tvi: Float[np.ndarray, " n"]
    pre_tvi: Float[np.ndarray, " n"]
    weighted_tvi: Float[np.ndarray, " n"]
    output_divergence: Float[np.ndarray, " n"]
    correct: Float[np.ndarray, " n"] | None
    vip_rule: str = "changepoint"
    notes: list[str] = field(default_factory=list)
    gap_test: ClusteredTwoSampleResult | None = None

    def _repr_head(self) -> dict[str, Any]:
        return {
            "n": len(self.tvi),
            "D_VT": int(self.in_vt.sum()),
            "D_T": int((~self.in_vt).sum()),
            "vip": self.vip,
            "metric": self.metric,
            "mean_tvi": float(np.nanmean(self.tvi)) if len(self.tvi) else None,
        }

    @property
    def n_layers(self) -> int:
        return self.distances.shape[1] - 1

    # -- tables -----------------------------------------------------------------------------------

    def to_frame(self) -> pd.DataFrame:
        """One row per sample: labels, answers, group, TVI variants, baselines, correctness."""
        frame = self.coe.meta_frame()
        frame["group"] = np.where(self.in_vt, "D_VT", "D_T")
        frame["tvi"] = self.tvi
        frame["pre_vip_tvi"] = self.pre_tvi
        frame["weighted_tvi"] = self.weighted_tvi
        frame["output_divergence"] = self.output_divergence
        if self.correct is not None:
            frame["correct"] = self.correct
        return frame

    def layer_frame(self) -> pd.DataFrame:
        """Fig. 2's numbers: per layer, group means/stds of the distance, the paper's t statistic
        and p-value (samples taken as independent), whether it is the VIP, and the clustered
        inference of :attr:`gap_test`: the gap's 95 % interval (``gap_low``, ``gap_high``), its
        bootstrap p-value (``p_cluster``), Holm-adjusted over the layers (``p_holm``), and
        ``n_clusters``."""
        frame = self.detector.result_.to_frame()
        frame["is_vip"] = frame.index == self.vip
        if self.gap_test is not None:
            clustered = self.gap_test.to_frame()
            keep = ["gap_low", "gap_high", "p_cluster", f"p_{self.gap_test.correction}"]
            frame = frame.join(clustered[[*keep, "n_clusters"]])
        return frame

    def _subsets(self, by: str | None) -> dict[str, np.ndarray]:
        subsets = {"all": np.ones(len(self.tvi), dtype=bool)}
        if by is not None:
            labels = self.coe.meta_frame().get(by)
            if labels is None:
                raise KeyError(f"no meta column {by!r} to group by")
            for value in pd.unique(labels):
                subsets[f"{by}={value}"] = np.asarray(labels == value)
        return subsets

    @property
    def clusters(self) -> np.ndarray:
        """The independent unit of each sample: its ``meta["group"]`` (the demo world's image,
        shared by its wordings), else the sample itself."""
        return sample_clusters(self.coe)

    def correlations(
        self, scores: dict[str, np.ndarray] | None = None, *, by: str | None = None
    ) -> pd.DataFrame:
        """Spearman ρ between each score and correctness, overall and per ``by`` group: the
        paper's p-value (pairs taken as independent, Tables 1, 3 and 9) and, beside it, the 95 %
        interval of ρ over resamples of whole clusters (:attr:`clusters`: the wordings of one
        image move together; :func:`probes.stats.clustered_spearman`, 1,000 resamples, seed 0)
        with ``n_clusters``.

        Default scores: post-VIP TVI, pre-VIP TVI, std-reweighted TVI, output divergence and (when
        measured) visual attention — the rows of Tables 1, 3 and 9.
        """
        if self.correct is None:
            raise TooFewSamplesError(
                "correlations need reference answers (Sample.answer) to score correctness"
            )
        if scores is None:
            scores = {
                "TVI (post-VIP)": self.tvi,
                "TVI (pre-VIP)": self.pre_tvi,
                "TVI (std-reweighted)": self.weighted_tvi,
                "output divergence": self.output_divergence,
            }
            if self.coe.visual_attention is not None:
                scores["visual attention"] = self.coe.visual_attention
        rows = []
        y = self.correct
        clusters = self.clusters
        for subset, mask in self._subsets(by).items():
            mask = mask & ~np.isnan(y)
            for name, values in scores.items():
                x = np.asarray(values, dtype=np.float64)
                keep = mask & ~np.isnan(x)  # e.g. pre-VIP TVI with the VIP at layer 1: no layers
                r = _safe_spearman(x[keep], y[keep])
                c = _clustered(x[keep], y[keep], clusters[keep])
                rows.append(
                    {
                        "subset": subset,
                        "score": name,
                        "rho": r.rho,
                        "p_value": r.p_value,
                        "n": r.n,
                        "ci_low": c.low if c is not None else float("nan"),
                        "ci_high": c.high if c is not None else float("nan"),
                        "n_clusters": len(set(clusters[keep].tolist())),
                        "accuracy": float(y[mask].mean()) if mask.any() else float("nan"),
                    }
                )
        return pd.DataFrame(rows)

    def _gap_lines(self) -> list[str]:
        """The clustered gap at the VIP and the layers where it survives the correction."""
        g = self.gap_test
        if g is None:
            return [
                "gap D_VT − D_T: no clustered interval (fewer than 2 clusters); only the paper's "
                "test above, which takes the samples as independent"
            ]
        name = {"holm": "Holm", "bh": "Benjamini-Hochberg"}.get(g.correction, "no correction")
        layers = np.flatnonzero(g.significant)
        return [
            f"gap D_VT − D_T at the VIP: {g.words(self.vip)} ({g.ci:.0%} CI over {g.unit}; "
            f"{name} over {int(np.isfinite(g.p_value).sum())} layers)"
            + ("" if g.significant[self.vip] else ": inconclusive"),
            f"layers whose gap is significant after {name} (α = {g.alpha}): "
            + (_layer_ranges(layers) if len(layers) else "none"),
        ]

    def _rule_line(self) -> str:
        if self.vip_method == "manual":
            return f"VIP rule: none (a manual VIP; the automatic rule would be {self.vip_rule!r})"
        return f"VIP rule: {self.vip_rule} — {RULES[self.vip_rule]}"

    def summary(self) -> str:
        """A short text report: split sizes, VIP, the statistic, Spearman ρ of TVI with correctness."""
        res = self.detector.result_
        lines = [
            f"samples: {len(self.tvi)}  (D_VT: {int(self.in_vt.sum())}, D_T: {int((~self.in_vt).sum())})",
            f"distance: {self.metric}; layers 0..{self.n_layers} (0 = embeddings)"
            + (
                "; states at the last generated token of each condition's answer"
                if self.coe.read_at == "generated"
                else ""
            ),
            f"VIP: layer {self.vip} ({self.vip_method}); the paper's two-sample statistic there "
            f"(Lemma F.1, samples taken as independent) t = {res.statistic[self.vip]:.2f} "
            f"(p = {res.p_value[self.vip]:.2g}); max t = {np.nanmax(res.statistic):.2f} at "
            f"layer {int(np.nanargmax(res.statistic))}",
            *self._gap_lines(),
            self._rule_line(),
            f"mean TVI: D_VT {self.tvi[self.in_vt].mean():.4f}, D_T {self.tvi[~self.in_vt].mean():.4f}",
        ]
        if self.correct is not None:
            scored = ~np.isnan(self.correct)
            lines.append(
                f"accuracy ({self.coe.conditions[0]}): {np.nanmean(self.correct):.3f} "
                f"over {int(scored.sum())} samples with a reference answer"
            )
            lines.append(
                "p-values take the samples as independent (the paper's test); the 95% CIs "
                "resample whole clusters (a sample's meta['group'], the demo world's image with "
                "its wordings; else the sample alone)"
            )
            for _, row in self.correlations().iterrows():
                if row["subset"] == "all" and row["score"] in ("TVI (post-VIP)", "TVI (pre-VIP)"):
                    if np.isfinite(row["rho"]):
                        lines.append(
                            f"Spearman({row['score']}, correct) = {row['rho']:.3f} (p = {row['p_value']:.2g}, n = {row['n']}; "
                            + _interval_words(row)
                            + ")"
                        )
                    else:
                        lines.append(
                            f"Spearman({row['score']}, correct): not defined — "
                            f"{_why_no_correlation(self.correct)} (n = {row['n']})"
                        )
        lines.extend(self.notes)
        return "\n".join(lines)


def sample_clusters(coe: ChainOfEmbedding) -> np.ndarray:
    """Each sample's independent unit: its ``meta["group"]`` (the demo world's image, shared by
    its wordings), else the sample itself (``"sample:<id>"``)."""
    return np.array(
        [str(s.meta.get("group") or f"sample:{s.id}") for s in coe.samples], dtype=object
    )


def _layer_ranges(layers: np.ndarray) -> str:
    """``[1, 2, 3, 7, 9, 10]`` → ``"1–3, 7, 9–10"``."""
    parts: list[str] = []
    start = prev = int(layers[0])
    for layer in [int(x) for x in layers[1:]] + [None]:
        if layer is not None and layer == prev + 1:
            prev = layer
            continue
        parts.append(str(start) if start == prev else f"{start}–{prev}")
        if layer is not None:
            start = prev = layer
    return ", ".join(parts)


def _gap_test(
    distances: np.ndarray, in_vt: np.ndarray, clusters: np.ndarray
) -> ClusteredTwoSampleResult | None:
    """:func:`probes.vip_clustered.clustered_two_sample_test` with Holm over the layers, or None
    with fewer than 2 clusters."""
    if len(set(clusters.tolist())) < 2:
        return None
    return clustered_two_sample_test(distances, in_vt, clusters)


def _clustered(x: np.ndarray, y: np.ndarray, clusters: np.ndarray) -> ClusteredCorrelation | None:
    """The cluster-bootstrap interval of ρ, or None where it is undefined (too few pairs or
    clusters, constant input)."""
    if len(x) < 3 or len(set(clusters.tolist())) < 2 or np.all(x == x[0]) or np.all(y == y[0]):
        return None
    return clustered_spearman(x, y, clusters)


def _interval_words(row: pd.Series) -> str:
    """``95% CI [a, b] over K clusters`` and, where it holds 0, that the sign is not settled."""
    if not np.isfinite(row["ci_low"]):
        return f"no interval over {row['n_clusters']} clusters"
    text = f"95% CI [{row['ci_low']:.3f}, {row['ci_high']:.3f}] over {row['n_clusters']} clusters"
    if row["ci_low"] <= 0 <= row["ci_high"]:
        text += ": inconclusive"
    return text


def _why_no_correlation(correct: np.ndarray) -> str:
    """Why a rank correlation with correctness is undefined, in words."""
    scored = correct[~np.isnan(correct)]
    if len(scored) < 3:
        return f"only {len(scored)} samples have a reference answer (3 are needed)"
    if np.all(scored == scored[0]):
        return (
            "every answer is "
            + ("correct" if scored[0] else "wrong")
            + ", so correctness does not vary"
        )
    return "the score does not vary across the samples"


_FIX = (
    "Pass vip= (CLI: --vip), a manual VIP read off the distance curves, or fallback_vip= "
    "(--fallback-vip)."
)


def _no_vip_error(detector: VIPDetector, beta: float, alpha: float | None) -> NoVIPError:
    """Why the automatic rule found no VIP, naming the rule: for ``eq9``, Eq. 9 itself or the
    significance floor; for the others, :func:`probes.vip.why_no_vip`'s reason."""
    stats = detector.statistic_
    shown = ", ".join(f"{t:.1f}" for t in stats)
    rule = detector.rule_
    other = ", ".join(r for r in RULES if r != rule)
    fix = f"{_FIX} Or choose another rule: rule= (--vip-rule) {other}."
    if rule != "eq9":
        cause, reason = detector.no_vip_ or ("eq9", "no layer qualifies")
        return NoVIPError(
            f"the automatic rule {rule!r} found no VIP: {reason}. {fix} Statistics by layer: "
            f"{shown}; gaps: " + ", ".join(f"{g:.4f}" for g in detector.gap_) + ".",
            cause=cause,
            rule=rule,
        )
    eq9 = automatic_vip(stats, beta, None, rule="eq9") if alpha is not None else None
    if eq9 is not None:
        n_layers = len(stats) - 1
        floor = significance_floor(n_layers, alpha)
        return NoVIPError(
            f"Eq. 9 is met at layer {eq9} (t = {stats[eq9]:.2f}), but no layer meeting it passes "
            f"the significance floor alpha={alpha} (t >= {floor:.2f}, one-sided, Bonferroni over "
            f"{n_layers - 2} layers), so the groups' difference there may be noise. Lower alpha "
            f"(alpha=None / --alpha 0 is Eq. 9 alone) or: {fix} Statistics by layer: {shown}.",
            cause="alpha",
            rule=rule,
        )
    return NoVIPError(
        f"the automatic rule (Eq. 9) found no VIP: no layer's two-sample statistic rises to "
        f"beta={beta} times the mean of the earlier layers' (statistics by layer: {shown}). {fix}",
        cause="eq9",
        rule=rule,
    )


def correctness(coe: ChainOfEmbedding, mode: MatchMode = "exact") -> Float[np.ndarray, " n"] | None:
    """1.0 / 0.0: whether the first condition's greedy answer matches each sample's reference answer;
    NaN where a sample has none (None if no sample has one)."""
    if all(s.answer is None for s in coe.samples):
        return None
    answers = coe.answers[coe.conditions[0]]
    return np.array(
        [
            float(is_correct(a, s.answer, mode=mode)) if s.answer is not None else np.nan
            for a, s in zip(answers, coe.samples)
        ]
    )


def diagnose(
    coe: ChainOfEmbedding,
    *,
    metric: str = "cosine",
    split: SplitSpec = "agreement",
    vip: int | None = None,
    beta: float = 2.0,
    alpha: float | None = 0.05,
    fallback_vip: int | None = None,
    match: MatchMode = "exact",
    rule: str = "changepoint",
    min_fraction: float | None = 0.25,
    min_effect: float | None = None,
) -> Diagnosis:
    """Run the chain-of-embedding analysis.

    Args:
        metric: distance (``cosine``, ``l2``, ``kl``, ``js``).
        split: ``"agreement"`` (§3.2: answers with vs without the image differ), the name of a boolean
            ``meta`` label (e.g. ``"needs_image"``), or explicit labels (True = D_VT).
        vip: a manual VIP; None = automatic, by ``rule``. Every rule's layer must pass the
            significance floor ``alpha`` of :func:`probes.vip.automatic_vip` (the layer's own
            one-sided test, Bonferroni-corrected over the candidate layers); ``alpha=None`` drops
            it (with ``rule="eq9"``, Eq. 9 exactly). ``beta`` is Eq. 9's weight.
        rule: the automatic rule, a name of :data:`probes.vip.RULES`: ``"changepoint"`` (the
            default: a two-segment fit of the gap; the rule that agrees with the causal
            integration layer of the flow study), ``"eq9"`` (the paper's Eq. 9 plus the floor),
            ``"effect"`` (eq9 plus an effect-size floor: a gap of at least ``min_fraction`` of
            the largest, Cohen's d of at least ``min_effect``) or ``"jump"`` (the largest growth
            of the gap). ``docs/vip_rules.md`` compares them on the demo models.
        fallback_vip: the layer to use for TVI when the automatic rule finds no VIP (recorded in
            ``vip_method`` and the notes); None = raise instead.
        match: how answers are scored against references (``exact`` or two-way ``inclusion``).

    Raises:
        EmptyGroupError: the split leaves D_VT or D_T empty.
        NoVIPError: the automatic rule found no VIP and no ``fallback_vip`` was given (its
            ``rule`` and ``cause`` say which rule failed and why).
        UnknownVIPRuleError: ``rule`` is not a name of :data:`probes.vip.RULES`.
    """
    distances = coe.distance(metric)
    in_vt = _split(coe, split)
    if in_vt.all() or not in_vt.any():
        empty = "D_T" if in_vt.all() else "D_VT"
        raise EmptyGroupError(
            f"the {split if isinstance(split, str) else 'given'} split leaves {empty} empty "
            f"({len(in_vt)} samples): the VIP compares two groups. Add samples of the other kind, or "
            "split by a boolean ground-truth label (split='needs_image'; CLI: --split needs_image)."
        )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        detector = VIPDetector(
            beta=beta,
            layer=vip,
            alpha=alpha,
            rule=rule,
            min_fraction=min_fraction,
            min_effect=min_effect,
        ).fit(distances, in_vt)
    notes = [str(w.message) for w in caught]
    layer, method = detector.layer_, detector.method_
    if layer is None:
        if fallback_vip is None:
            raise _no_vip_error(detector, beta, alpha)
        layer, method = int(fallback_vip), "fallback (automatic rule found none)"
    correct = correctness(coe, match)
    return Diagnosis(
        coe=coe,
        metric=metric,
        distances=distances,
        in_vt=in_vt,
        detector=detector,
        vip=int(layer),
        vip_method=method,
        tvi=tvi(distances, layer),
        pre_tvi=pre_vip_tvi(distances, layer) if layer > 1 else np.full(len(distances), np.nan),
        weighted_tvi=weighted_tvi(distances, layer),
        output_divergence=coe.output_divergence(metric)
        if coe.final_states is not None
        else np.full(len(distances), np.nan),
        correct=correct,
        vip_rule=rule,
        notes=notes,
        gap_test=_gap_test(distances, in_vt, sample_clusters(coe)),
    )


def distance_ablation(
    diag: Diagnosis, metrics: Sequence[str] = ("cosine", "l2", "kl", "js"), *, by: str | None = None
) -> pd.DataFrame:
    """Table 4: Spearman ρ between correctness and TVI computed with each distance, at the same VIP."""
    if diag.correct is None:
        raise TooFewSamplesError("the distance ablation needs reference answers")
    scores = {m: tvi(diag.coe.distance(m), diag.vip) for m in metrics}
    return diag.correlations(scores, by=by).rename(columns={"score": "metric"})


def vip_methods(
    diag: Diagnosis,
    manual: int,
    *,
    beta: float = 2.0,
    alpha: float | None = 0.05,
    rule: str | None = None,
) -> pd.DataFrame:
    """Table 6: manual vs automatic VIP (under ``rule``, default the diagnosis's), with the
    Spearman ρ of the TVI each gives."""
    auto = VIPDetector(beta=beta, alpha=alpha, rule=rule or diag.vip_rule)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        auto.fit(diag.distances, diag.in_vt)
    rows = []
    for method, layer in (("manual", manual), ("automatic", auto.layer_)):
        row: dict[str, object] = {"method": method, "vip": layer}
        if layer is not None and diag.correct is not None:
            row.update(_tvi_rho(diag.distances, int(layer), diag.correct))
        rows.append(row)
    return pd.DataFrame(rows)


def compare_vip_rules(
    distances: Float[np.ndarray, "n layer"],
    in_vt: Bool[np.ndarray, " n"],
    correct: Float[np.ndarray, " n"] | None = None,
    rules: Sequence[str] | None = None,
    *,
    beta: float = 2.0,
    alpha: float | None = 0.05,
    min_fraction: float | None = 0.25,
    min_effect: float | None = None,
) -> pd.DataFrame:
    """The VIP under each rule (default: every rule of :data:`probes.vip.RULES`) on the same
    distances ``[N, L+1]`` and split, one row per rule: ``vip`` (None where the rule finds none,
    with ``cause``), the gap, statistic and Cohen's d there, the gap as a share of the largest
    gap, and (given ``correct``: 1/0, NaN = unscored) the Spearman ρ (with p) of the post-VIP
    TVI with correctness."""
    rows = []
    for rule in rules or tuple(RULES):
        det = VIPDetector(
            beta=beta, alpha=alpha, rule=rule, min_fraction=min_fraction, min_effect=min_effect
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            det.fit(distances, in_vt)
        res, layer = det.result_, det.layer_
        row: dict[str, object] = {"rule": rule, "vip": layer}
        if layer is None:
            row["cause"] = det.no_vip_[0] if det.no_vip_ else None
            rows.append(row)
            continue
        top = float(np.max(res.difference[1:]))
        row.update(
            gap=float(res.difference[layer]),
            gap_share=float(res.difference[layer]) / top if top > 0 else np.nan,
            statistic=float(res.statistic[layer]),
            cohens_d=float(res.cohens_d[layer]),
        )
        if correct is not None:
            row.update(_tvi_rho(distances, int(layer), correct))
        rows.append(row)
    return pd.DataFrame(rows)


def vip_rules_table(
    diag: Diagnosis,
    rules: Sequence[str] | None = None,
    *,
    beta: float = 2.0,
    alpha: float | None = 0.05,
    min_fraction: float | None = 0.25,
    min_effect: float | None = None,
) -> pd.DataFrame:
    """:func:`compare_vip_rules` on a diagnosis's distances, split and correctness."""
    return compare_vip_rules(
        diag.distances,
        diag.in_vt,
        diag.correct,
        rules,
        beta=beta,
        alpha=alpha,
        min_fraction=min_fraction,
        min_effect=min_effect,
    )


__all__ = [
    "Diagnosis",
    "compare_vip_rules",
    "correctness",
    "diagnose",
    "distance_ablation",
    "sample_clusters",
    "vip_methods",
    "vip_rules_table",
]
