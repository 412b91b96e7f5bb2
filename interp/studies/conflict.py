"""Modality conflict with perceptual vs propositional evidence, on a vision-language model (*Tri-PvP:
Exposing Modality Bias in Omni-Modal Large Language Models through Perceptual-Propositional Evidence
Conflicts*).

Each conflict item shows the same question with several evidence **sources** that carry their
own label: here a perceptual image (a drawn object), a propositional image (the label written in an
image) and a text caption, in some **order** before the question. The study:

- labels each response by the sources it matches (the paper's Sec. 4.2, its "judge" replaced by a
  matching function the user can swap): one source → ``BIAS_<SOURCE>`` (``BIAS_IMAGE``,
  ``BIAS_PROP_IMAGE``, ``BIAS_TEXT``); two → ``BIAS_<A>_<B>``; every source, or a response that
  acknowledges the conflict → ``NO_BIAS``; none → ``HALLUCINATION``. On items whose sources all
  agree, answering their label is ``NO_BIAS`` (competence);
- gives bias rates with Wilson 95 % CIs per **evidence-form configuration** (both images; the
  perceptual image alone; the propositional image alone — each with the caption, as the paper's
  PercI / PropI conditions) and per **input order** (all permutations), plus the rate of each
  source's bias by its position (the paper's Table 1: recency or primacy);
- fits layer-wise probes (:class:`probes.LayerwiseProbe`, balanced logistic regression, balanced
  accuracy, folds grouped by item so an item's orders never straddle train and test) of the bias
  label from the last prompt token's residual state: from which layer the winning source is
  linearly decodable, before any token is generated (the paper's Sec. 6.2);
- runs contrastive decoding as the paper's diagnostic (α = 0.5, β = 0.1): the amateur is the input
  *without* the source the decoding should favour (condition ``without:<source>``), which pushes
  the answer towards that source; bias rates before and after, and accuracy on agreeing items
  (competence kept).

Items are :class:`~interp.Sample` objects whose ``meta`` holds each source's label (``Source``
below: the demo world's ``image_label``, ``propositional_label``, ``text_label``), the ``order``
(source names joined by commas, question last) and, for a text source, the ``caption`` exactly as it
stands in the question; image sources appear as ``{image}`` slots in prompt order.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from interp.cli import (
    UsageError,
    add_common_arguments,
    check_common_arguments,
    check_model,
    check_output_dir,
    load_data,
    write_summary,
)
from interp.conditions import register_image_condition
from interp.errors import DataFormatError, EmptyInputError, ProbeError
from interp.samples import IMAGE_SLOT, Sample, ensure_samples

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from interp.model import VLM
    from probes.layerwise import LayerwiseProbe

NO_BIAS = "NO_BIAS"
HALLUCINATION = "HALLUCINATION"
Kind = Literal["image", "text"]
Matcher = Callable[[str, str], bool]


@dataclass(frozen=True)
class Source:
    """One evidence source of a conflict item.

    Attributes:
        name: the source's name in labels (``BIAS_<NAME>``) and in ``without:<name>``.
        label_key: the ``meta`` key holding the label this source shows.
        order_name: how ``meta["order"]`` names the source.
        kind: ``"image"`` (an ``{image}`` slot of the question) or ``"text"`` (the ``caption``
            text inside the question).
    """

    name: str
    label_key: str
    order_name: str
    kind: Kind

    @property
    def bias(self) -> str:
        return f"BIAS_{self.name.upper()}"


DEMO_SOURCES: tuple[Source, ...] = (
    Source("image", "image_label", "perceptual", "image"),
    Source("prop_image", "propositional_label", "propositional", "image"),
    Source("text", "text_label", "text", "text"),
)
SOURCES: dict[str, Source] = {s.name: s for s in DEMO_SOURCES}

# the paper's evidence-form conditions, as conditions on the demo world's items
CONFIGURATIONS: dict[str, str] = {
    "PercI+PropI": "full",
    "PercI": "without:prop_image",
    "PropI": "without:image",
}


def register_source(source: Source, *, overwrite: bool = False) -> Source:
    """Make ``source`` known to ``without:<name>`` and to the labelling (e.g. an audio source)."""
    if source.name in SOURCES and not overwrite:
        raise ValueError(f"a source named {source.name!r} exists; pass overwrite=True")
    if not re.fullmatch(r"[a-z][a-z0-9_]*", source.name):
        raise ValueError(f"a source name is lower-case letters, digits and '_': {source.name!r}")
    SOURCES[source.name] = source
    return source


def all_labels(sources: Sequence[Source] = DEMO_SOURCES) -> list[str]:
    """Every response label, single biases first, then pairs, ``NO_BIAS``, ``HALLUCINATION``."""
    names = [s.name.upper() for s in sources]
    pairs = [f"BIAS_{a}_{b}" for i, a in enumerate(names) for b in names[i + 1 :]]
    return [f"BIAS_{n}" for n in names] + pairs + [NO_BIAS, HALLUCINATION]


# -- items ---------------------------------------------------------------------------------------


def item_order(sample: Sample, sources: Sequence[Source] = DEMO_SOURCES) -> list[Source]:
    """The item's sources in prompt order, from ``meta["order"]``.

    Raises:
        DataFormatError: no order, an unknown source name, or a source given twice.
    """
    by_order = {s.order_name: s for s in sources}
    raw = sample.meta.get("order")
    if not isinstance(raw, str) or not raw.strip():
        raise DataFormatError(
            f"sample {sample.id!r}: a conflict item needs meta 'order' (its sources in prompt "
            f"order joined by commas, from {sorted(by_order)})"
        )
    names = [n.strip() for n in raw.split(",")]
    unknown = [n for n in names if n not in by_order]
    if unknown:
        raise DataFormatError(
            f"sample {sample.id!r}: unknown source {unknown[0]!r} in order {raw!r}; the sources "
            f"are {sorted(by_order)}"
        )
    if len(set(names)) != len(names):
        raise DataFormatError(
            f"sample {sample.id!r}: order {raw!r} repeats a source; each source appears once"
        )
    return [by_order[n] for n in names]


def check_items(samples: Sequence[Sample], sources: Sequence[Source] = DEMO_SOURCES) -> None:
    """Validate conflict items before any compute: every source label present, the order valid,
    one ``{image}`` slot per image source in the order, and the caption inside the question.

    Raises:
        DataFormatError: the first item that breaks a rule, naming the sample and the fix.
    """
    for s in samples:
        order = item_order(s, sources)
        for src in order:
            label = s.meta.get(src.label_key)
            if not isinstance(label, str) or not label.strip():
                raise DataFormatError(
                    f"sample {s.id!r}: the {src.name!r} source has no label (meta "
                    f"{src.label_key!r}); every source in its order needs one"
                )
        n_images = sum(src.kind == "image" for src in order)
        if s.question.count(IMAGE_SLOT) != n_images or len(s.images) != n_images:
            raise DataFormatError(
                f"sample {s.id!r}: its order has {n_images} image source(s) but the question has "
                f"{s.question.count(IMAGE_SLOT)} '{IMAGE_SLOT}' slot(s) and {len(s.images)} "
                "image(s); give one slot and one image per image source, in order"
            )
        for src in order:
            caption = s.meta.get("caption")
            if src.kind == "text" and (not isinstance(caption, str) or caption not in s.question):
                raise DataFormatError(
                    f"sample {s.id!r}: the text source needs meta 'caption', the caption text "
                    "exactly as it stands in the question"
                )


def _without_images(sample: Sample, arg: str | None, ctx: Any) -> list[Any] | None:
    order = item_order(sample, list(SOURCES.values()))
    drop = SOURCES[str(arg)]
    images = list(sample.load_images())
    kept = [im for src, im in zip([o for o in order if o.kind == "image"], images) if src != drop]
    return kept or None


def _without_question(text: str, arg: str | None, sample: Sample) -> str:
    order = item_order(sample, list(SOURCES.values()))
    drop = SOURCES[str(arg)]
    if drop not in order:
        raise DataFormatError(f"sample {sample.id!r} has no {drop.name!r} source to remove")
    if drop.kind == "text":
        caption = str(sample.meta.get("caption") or "")
        if not caption or caption not in text:
            raise DataFormatError(f"sample {sample.id!r}: its caption is not in the question")
        out = text.replace(caption, " ", 1)
    else:
        k = [o for o in order if o.kind == "image"].index(drop)
        pieces = text.split(IMAGE_SLOT)
        # join the text before and after the k-th slot: the slot disappears
        out = IMAGE_SLOT.join(pieces[: k + 1]) + " " + IMAGE_SLOT.join(pieces[k + 1 :])
    return re.sub(r"\s+", " ", out).strip()


def _check_source(arg: str | None) -> None:
    if arg not in SOURCES:
        raise ValueError(f"unknown source {arg!r}; sources: {', '.join(SOURCES)}")


register_image_condition(
    "without",
    _without_images,
    check=_check_source,
    usage="without:<source>",
    question=_without_question,
    overwrite=True,
)


# -- labelling responses -------------------------------------------------------------------------

_ACKNOWLEDGE = re.compile(
    r"\b(conflict\w*|contradict\w*|disagree\w*|inconsistent|mismatch\w*|cannot tell|unclear)\b"
)


def word_match(response: str, label: str, synonyms: dict[str, Sequence[str]] | None = None) -> bool:
    """Whether ``label`` (or one of its synonyms) occurs in ``response`` as whole words, after
    lower-casing and removing punctuation."""

    def norm(text: str) -> str:
        return " " + re.sub(r"[^\w\s]", " ", text.lower()).strip() + " "

    words = re.sub(r"\s+", " ", norm(response))
    forms = [label, *(synonyms or {}).get(label, ())]
    return any(re.sub(r"\s+", " ", norm(f)) in words for f in forms if f.strip())


def bias_label(
    response: str,
    labels: dict[str, str],
    *,
    matcher: Matcher | None = None,
    synonyms: dict[str, Sequence[str]] | None = None,
) -> str:
    """The response label of the paper's Sec. 4.2 for one response.

    Args:
        labels: source name → the label it shows, in source order (``{"image": "leaf", ...}``).
        matcher: ``(response, label) -> bool`` (default :func:`word_match` with ``synonyms``).

    Returns:
        ``BIAS_<A>`` when exactly one source matches, ``BIAS_<A>_<B>`` for two (in the order of
        ``labels``), ``NO_BIAS`` when every source matches or the response acknowledges the
        conflict, ``HALLUCINATION`` when none does.
    """
    match = matcher or (lambda r, lab: word_match(r, lab, synonyms))
    matched = [name for name, lab in labels.items() if match(response, lab)]
    if len(matched) == len(labels) or _ACKNOWLEDGE.search(response.lower()):
        return NO_BIAS
    if not matched:
        return HALLUCINATION
    return "BIAS_" + "_".join(n.upper() for n in matched)


def source_labels(sample: Sample, sources: Sequence[Source] = DEMO_SOURCES) -> dict[str, str]:
    """The labels of the sources the item shows, in the canonical source order."""
    shown = set(item_order(sample, sources))
    return {s.name: str(sample.meta[s.label_key]) for s in sources if s in shown}


def _config_labels(sample: Sample, condition: str, sources: Sequence[Source]) -> dict[str, str]:
    labels = source_labels(sample, sources)
    m = re.fullmatch(r"without:(\w+)", condition)
    if m:
        labels.pop(m.group(1), None)
    return labels


# -- rates ---------------------------------------------------------------------------------------


def wilson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a proportion k/n (scipy's ``binomtest``)."""
    from scipy.stats import binomtest

    if n == 0:
        return float("nan"), float("nan")
    ci = binomtest(int(k), int(n)).proportion_ci(confidence, method="wilson")
    return float(ci.low), float(ci.high)


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


def conflict_responses(
    vlm: VLM,
    samples: Sequence[Sample],
    *,
    configurations: dict[str, str] | None = None,
    decodings: dict[str, Any] | None = None,
    sources: Sequence[Source] = DEMO_SOURCES,
    matcher: Matcher | None = None,
    synonyms: dict[str, Sequence[str]] | None = None,
    max_new_tokens: int = 4,
    batch_size: int = 16,
    store: str | Path | None = None,
    overwrite: bool = False,
    progress_bar: bool = True,
) -> ConflictResponses:
    """Greedy responses of every item under each configuration (and each decoding method),
    labelled with :func:`bias_label` against the sources the configuration shows.

    Args:
        configurations: name → condition (default :data:`CONFIGURATIONS`: both images, the
            perceptual image alone, the propositional image alone, each with the caption).
        decodings: name → a decoding method of :mod:`interventions.decoding` or None (plain);
            default plain decoding only.
        matcher, synonyms: see :func:`bias_label`.
        store: a folder; each (configuration, decoding) run keeps its own store under it.

    Raises:
        DataFormatError: an item without a source label, with a bad order, or a caption that is
            not in its question (before any compute).
    """
    import interp

    samples = ensure_samples(samples)
    sources = tuple(sources)
    check_items(samples, sources)
    configurations = dict(configurations or CONFIGURATIONS)
    decodings = dict(decodings or {"greedy": None})
    rows = []
    for config, condition in configurations.items():
        for dname, dec in decodings.items():
            where = None if store is None else Path(store) / f"{_slug(config)}-{_slug(dname)}"
            gen = interp.generate(
                vlm,
                samples,
                condition,
                decoding=dec,
                max_new_tokens=max_new_tokens,
                batch_size=batch_size,
                store=where,
                overwrite=overwrite,
                progress_bar=progress_bar,
            )
            for s, text in zip(samples, gen.texts):
                labels = _config_labels(s, condition, sources)
                rows.append(
                    {
                        "sample_id": str(s.id),
                        "group": s.meta.get("group", s.id),
                        "configuration": config,
                        "decoding": dname,
                        "order": _shown_order(s, condition, sources),
                        "agreement": _agreement(labels),
                        "response": text,
                        "label": bias_label(text, labels, matcher=matcher, synonyms=synonyms),
                    }
                )
    return ConflictResponses(pd.DataFrame(rows), sources)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_") or "run"


def _shown_order(sample: Sample, condition: str, sources: Sequence[Source]) -> str:
    m = re.fullmatch(r"without:(\w+)", condition)
    gone = m.group(1) if m else None
    return ",".join(s.order_name for s in item_order(sample, sources) if s.name != gone)


def _agreement(labels: dict[str, str]) -> str:
    distinct = len(set(labels.values()))
    if distinct == 1:
        return "all_agree"
    return "all_differ" if distinct == len(labels) else "partly_agree"


# -- probes --------------------------------------------------------------------------------------


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
        from scipy.stats import ttest_1samp

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
    import interp
    from probes.layerwise import LayerwiseProbe

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


# -- contrastive decoding ------------------------------------------------------------------------


def favouring(
    favour: Sequence[str] = ("image", "text"), alpha: float = 0.5, beta: float = 0.1
) -> dict[str, Any]:
    """The paper's contrastive-decoding diagnostic, one method per favoured source: the amateur is
    the input without that source (``without:<source>``), α = 0.5, β = 0.1."""
    from interventions.decoding import contrast

    out: dict[str, Any] = {"greedy": None}
    for name in favour:
        _check_source(name)
        out[f"favour {name}"] = contrast(f"without:{name}", alpha=alpha, beta=beta)
    return out


# -- figures -------------------------------------------------------------------------------------


def plot_bias(table: pd.DataFrame, title: str = "") -> Figure:
    """Stacked bars of label rates (a :meth:`ConflictResponses.table`), one bar per row."""
    import matplotlib.pyplot as plt

    t = table.drop(columns="n")
    fig, ax = plt.subplots(figsize=(1.2 + 0.9 * len(t), 3.2))
    bottom = np.zeros(len(t))
    for col in t.columns:
        ax.bar(range(len(t)), t[col].to_numpy(), bottom=bottom, label=col)
        bottom += t[col].to_numpy()
    ax.set_xticks(range(len(t)), [str(i) for i in t.index], rotation=30, ha="right")
    ax.set_ylabel("share of responses")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, bbox_to_anchor=(1.02, 1), loc="upper left")
    fig.tight_layout()
    return fig


def plot_positions(effect: pd.DataFrame) -> Figure:
    """Each source's bias rate by its position in the order, one panel per configuration."""
    import matplotlib.pyplot as plt

    configs = list(dict.fromkeys(effect["configuration"]))
    fig, axes = plt.subplots(1, len(configs), figsize=(3.4 * len(configs), 2.8), squeeze=False)
    for ax, config in zip(axes[0], configs):
        part = effect[effect["configuration"] == config]
        for src, grp in part.groupby("source", sort=False):
            err = [grp["rate"] - grp["low"], grp["high"] - grp["rate"]]
            ax.errorbar(grp["position"], grp["rate"], yerr=err, marker="o", capsize=3, label=src)
        ax.set_xlabel("position before the question")
        ax.set_title(config, fontsize=9)
    axes[0, 0].set_ylabel("rate of the source's own bias")
    axes[0, 0].legend(fontsize=8)
    fig.tight_layout()
    return fig


# -- the command ---------------------------------------------------------------------------------


def _validate(args: argparse.Namespace) -> tuple[list[Sample], Path, list[str]]:
    check_common_arguments(args, one_process="interp conflict")
    if args.max_new_tokens < 1:
        raise UsageError(f"--max-new-tokens must be >= 1, got {args.max_new_tokens}")
    if args.cv < 2:
        raise UsageError(f"--cv must be >= 2, got {args.cv}")
    favour = [f.strip() for f in args.favour.split(",") if f.strip()]
    for name in favour:
        if name not in SOURCES:
            raise UsageError(f"--favour: unknown source {name!r}; sources: {', '.join(SOURCES)}")
    check_output_dir(args.out, create=False)
    check_model(args.model)
    samples = load_data(
        args.data, args.n, args.seed, default_qtypes=("conflict",), columns=args.columns
    )
    check_items(samples)
    out = check_output_dir(args.out)
    return samples, out, favour


def _conflict_command(args: argparse.Namespace) -> int:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from interp.model import load

    samples, out, favour = _validate(args)
    vlm = load(args.model)
    print(f"{vlm}\n{len(samples)} conflict items from {args.data!r}", flush=True)
    kw = dict(
        max_new_tokens=args.max_new_tokens,
        batch_size=args.batch_size,
        overwrite=args.overwrite,
        progress_bar=not args.no_progress,
    )
    resp = conflict_responses(vlm, samples, store=out / "store", **kw)
    cd = conflict_responses(
        vlm,
        samples,
        configurations={"PercI+PropI": "full"},
        decodings={k: v for k, v in favouring(favour).items() if v is not None},
        store=out / "store",
        **kw,
    )
    both = ConflictResponses(pd.concat([resp.frame, cd.frame], ignore_index=True))
    both.frame.to_csv(out / "responses.csv", index=False)
    by_config = resp.table("configuration")
    by_order = resp.bias_rates(("configuration", "order"))
    positions = resp.position_effect()
    base = both.frame[both.frame["configuration"] == "PercI+PropI"]
    decoding = ConflictResponses(base).table("decoding")
    competence = both.competence()
    by_config.to_csv(out / "bias_by_configuration.csv")
    by_order.to_csv(out / "bias_by_order.csv", index=False)
    positions.to_csv(out / "position_effect.csv", index=False)
    decoding.to_csv(out / "decoding.csv")
    competence.to_csv(out / "competence.csv", index=False)
    plot_bias(by_config, "all sources differ").savefig(out / "bias.png", dpi=130)
    plot_positions(positions).savefig(out / "positions.png", dpi=130)
    lines = [f"model {args.model!r}, data {args.data!r}, {len(samples)} items", ""]
    lines += ["bias rates, all sources differ:", by_config.round(3).to_string(), ""]
    lines += ["contrastive decoding (α = 0.5, β = 0.1):", decoding.round(3).to_string(), ""]
    lines += ["accuracy where all sources agree:", competence.round(3).to_string(index=False)]
    try:
        probe = bias_probe(
            vlm,
            samples,
            resp,
            cv=args.cv,
            batch_size=args.batch_size,
            progress_bar=not args.no_progress,
        )
        probe.to_frame().to_csv(out / "probe_layers.csv", index_label="layer")
        probe.plot().savefig(out / "probe.png", dpi=130)
        first = probe.decodable_from()
        best = probe.probe.best_layer_
        top = float(probe.probe.scores_["balanced_accuracy_mean"].max())
        where = (
            f"above chance from layer {first}"
            if first is not None
            else "not above chance at any layer (one-sided t-test over the folds, "
            "Bonferroni-corrected over the layers, level 0.05)"
        )
        lines += [
            "",
            f"bias label probe (last prompt token): {where}; its best balanced accuracy is "
            f"{top:.2f} at layer {best} (chance {probe.chance:.2f})",
        ]
    except (EmptyInputError, ProbeError) as err:  # too few items of some label for the folds
        lines += ["", f"probe skipped: {err}"]
    plt.close("all")
    text = "\n".join(lines)
    write_summary(out, text)
    return 0


def register(sub: Any) -> None:
    """Add ``conflict`` to the ``interp`` command."""
    d = sub.add_parser(
        "conflict",
        help="modality conflict: bias labels per evidence form and order, probes, "
        "contrastive decoding",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common_arguments(
        d,
        data_help="'demo' (the demo world's conflict items, all six orders) or a JSONL file whose "
        "items carry image_label, propositional_label, text_label, order and caption labels",
    )
    d.add_argument(
        "--favour",
        default="image,text",
        help="sources the contrastive-decoding diagnostic favours (comma-separated)",
    )
    d.add_argument("--cv", type=int, default=5, help="folds of the layer-wise probes")
    d.add_argument("--max-new-tokens", type=int, default=4)
    d.set_defaults(func=_conflict_command)


__all__ = [
    "CONFIGURATIONS",
    "DEMO_SOURCES",
    "HALLUCINATION",
    "NO_BIAS",
    "SOURCES",
    "BiasProbe",
    "ConflictResponses",
    "Source",
    "all_labels",
    "bias_label",
    "bias_probe",
    "check_items",
    "conflict_responses",
    "favouring",
    "item_order",
    "plot_bias",
    "plot_positions",
    "rates",
    "register",
    "register_source",
    "source_labels",
    "wilson",
    "word_match",
]
