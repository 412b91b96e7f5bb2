"""The model runs of the study: labelled greedy responses per configuration and decoding
(:func:`interp.generate`), and the contrastive-decoding diagnostic's methods."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

import interp
from interp.samples import Sample, ensure_samples
from interp.store import substore
from interventions.decoding import contrast

from .analysis import ConflictResponses
from .items import (
    Source,
    _check_source,
    check_items,
    default_configurations,
    infer_sources,
    item_order,
    source_set,
)
from .labels import Matcher, _config_labels, bias_label, dropped_source

if TYPE_CHECKING:
    from interp.model import VLM


def conflict_responses(
    vlm: VLM,
    samples: Sequence[Sample],
    *,
    configurations: dict[str, str] | None = None,
    decodings: dict[str, Any] | None = None,
    sources: Sequence[Source] | str | None = None,
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
        configurations: name → condition (default: for the ``demo`` source set
            :data:`CONFIGURATIONS`, both images, the perceptual image alone, the propositional
            image alone, each with the caption; for ``trimodal`` the full input, the evidence
            form being each item's ``meta["evidence"]``).
        sources: the source set (its name in :data:`SOURCE_SETS`, or the sources); default: the
            set every item's order names belong to (:func:`infer_sources`).
        decodings: name → a decoding method of :mod:`interventions.decoding` or None (plain);
            default plain decoding only.
        matcher, synonyms: see :func:`bias_label`.
        store: a folder; each (configuration, decoding) run keeps its own store under it.

    Raises:
        DataFormatError: an item without a source label, with a bad order, or a caption that is
            not in its question (before any compute).
    """
    samples = ensure_samples(samples)
    sources = _sources(samples, sources)
    check_items(samples, sources)
    configurations = dict(configurations or default_configurations(sources))
    decodings = dict(decodings or {"greedy": None})
    rows = []
    for config, condition in configurations.items():
        for dname, dec in decodings.items():
            where = substore(store, f"{_slug(config)}-{_slug(dname)}")
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
                        "condition": str(condition),
                        "evidence": str(s.meta.get("evidence") or config),
                        "decoding": dname,
                        "order": _shown_order(s, condition, sources),
                        "agreement": _agreement(labels),
                        "response": text,
                        "label": bias_label(text, labels, matcher=matcher, synonyms=synonyms),
                    }
                )
    return ConflictResponses(pd.DataFrame(rows), sources)


def _sources(
    samples: Sequence[Sample], sources: Sequence[Source] | str | None
) -> tuple[Source, ...]:
    if sources is None:
        return infer_sources(samples)[1]
    if isinstance(sources, str):
        return source_set(sources)
    return tuple(sources)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_") or "run"


def _shown_order(sample: Sample, condition: str, sources: Sequence[Source]) -> str:
    gone = dropped_source(condition)
    return ",".join(s.order_name for s in item_order(sample, sources) if s.name != gone)


def _agreement(labels: dict[str, str]) -> str:
    distinct = len(set(labels.values()))
    if distinct == 1:
        return "all_agree"
    return "all_differ" if distinct == len(labels) else "partly_agree"


# -- contrastive decoding ------------------------------------------------------------------------


def favouring(
    favour: Sequence[str] = ("image", "text"), alpha: float = 0.5, beta: float = 0.1
) -> dict[str, Any]:
    """The paper's contrastive-decoding diagnostic, one method per source: the amateur is the
    input without that source (``without:<source>``; the paper's is ``without:image``), α = 0.5,
    β = 0.1, named ``"favour <source>"``. The contrast ``(1+α)·z − α·z'`` amplifies what the
    removed source adds to the next-token logits; which way each source's bias then moves is
    what :meth:`ConflictResponses.contrast_effect` measures (the paper reports image bias down
    and a residual text bias). Amateurs that drop a modality run in one batch with the expert:
    a family that cannot mix rows with and without it is refused before compute."""
    out: dict[str, Any] = {"greedy": None}
    for name in favour:
        _check_source(name)
        out[f"favour {name}"] = contrast(f"without:{name}", alpha=alpha, beta=beta)
    return out
