"""The model runs of the study: labelled greedy responses per configuration and decoding
(:func:`interp.generate`), and the contrastive-decoding diagnostic's methods."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pandas as pd

import interp
from interp.edits import local_only
from interp.options import RunOptions
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
from .labels import Judge, Matcher, _config_labels, bias_label, judged

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
    judge: Judge | None = None,
    max_new_tokens: int = 4,
    run: RunOptions | None = None,
    **options: Any,
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
        matcher, synonyms: see :func:`bias_label` (used when ``judge`` is None).
        judge: ``judge(response, labels, sample) -> label`` in place of :func:`bias_label`:
            :func:`rule_judge` for free-form responses, :class:`LLMJudge` for a language-model
            judge (give a larger ``max_new_tokens`` so free-form answers are not cut).
        run: how it runs (:class:`~interp.options.RunOptions`; default ``batch_size`` 16): a
            ``store`` folder keeps each (configuration, decoding) run's store under it;
            ``remote=True`` generates on NDIF (with the decoding methods that lower: all but
            pai); its fields may also be given as keywords.

    Raises:
        RemoteError: a remote run with a decoding method that does not lower (before any
            compute).
        DataFormatError: an item without a source label, with a bad order, or a caption that is
            not in its question (before any compute).
    """
    opts = RunOptions.resolve(run if run is not None else RunOptions(batch_size=16), **options)
    # remote: runs through generate, with the decoding methods that lower to plain data
    for dname, dec in (decodings or {}).items():
        local_only(vlm, opts.trace_options(), f"conflict_responses ({dname})", decoding=dec)
    samples = ensure_samples(samples)
    if judge is not None and not callable(judge):
        raise TypeError(f"judge must be a function (response, labels, sample) -> label: {judge!r}")
    sources = _sources(samples, sources)
    check_items(samples, sources)
    configurations = dict(configurations or default_configurations(sources))
    decodings = dict(decodings or {"greedy": None})
    rows = []
    for config, condition in configurations.items():
        for dname, dec in decodings.items():
            where = substore(opts.store, f"{_slug(config)}-{_slug(dname)}")
            gen = interp.generate(
                vlm,
                samples,
                condition,
                decoding=dec,
                max_new_tokens=max_new_tokens,
                run=replace(opts, store=where),
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
                        "label": (
                            bias_label(text, labels, matcher=matcher, synonyms=synonyms)
                            if judge is None
                            else judged(judge, text, labels, s)
                        ),
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
    shown = _config_labels(sample, condition, sources)
    return ",".join(s.order_name for s in item_order(sample, sources) if s.name in shown)


def _agreement(labels: dict[str, str]) -> str:
    distinct = len(set(labels.values()))
    if distinct == 1:
        return "all_agree"
    return "all_differ" if distinct == len(labels) else "partly_agree"


# -- contrastive decoding ------------------------------------------------------------------------


AMATEURS: dict[str, str] = {"alone": "only", "without": "without"}
"""The two amateur kinds of the contrastive diagnostic: ``alone`` (the input with one source only,
``only:<source>``: the amateur carries that source's pull, so the contrast pushes away from it)
and ``without`` (the input without one source, ``without:<source>``: the contrast amplifies
what that source adds, so it pushes towards it)."""


def contrastive_decodings(
    sources: Sequence[str] = ("image", "audio", "text"),
    amateurs: Sequence[str] = ("alone", "without"),
    alpha: float = 0.5,
    beta: float = 0.1,
) -> dict[str, Any]:
    """The contrastive diagnostic with both kinds of amateur, one method per (source, kind):
    ``"against <source> alone"`` (amateur ``only:<source>``) and ``"favour <source>"``
    (amateur ``without:<source>``), plus ``"greedy"``.

    The paper (its Sec. 1 and 6) says it adapts contrastive decoding as a diagnostic that
    "reduces image bias without parameter updates but introduces a residual text bias"; its text
    gives neither the amateur nor α, β. With the contrast ``(1+α)·z − α·z'`` an amateur that
    carries the image's pull (the image alone) lowers the image's share, which is the effect the
    paper describes; an amateur without the image amplifies what the image adds. α = 0.5,
    β = 0.1 (VCD's plausibility cut) are this project's choice, not the paper's.

    Raises:
        ValueError: an unknown source or amateur kind.
    """
    out: dict[str, Any] = {"greedy": None}
    for kind in amateurs:
        if kind not in AMATEURS:
            raise ValueError(f"unknown amateur kind {kind!r}; use {' or '.join(AMATEURS)}")
    for kind in amateurs:
        for name in sources:
            _check_source(name)
            title = f"against {name} alone" if kind == "alone" else f"favour {name}"
            out[title] = contrast(f"{AMATEURS[kind]}:{name}", alpha=alpha, beta=beta)
    return out


def favouring(
    favour: Sequence[str] = ("image", "text"), alpha: float = 0.5, beta: float = 0.1
) -> dict[str, Any]:
    """Contrastive decoding whose amateur is the input without one source
    (``without:<source>``), one method per source, named ``"favour <source>"``, plus
    ``"greedy"``; α = 0.5, β = 0.1 are this project's choice (the paper gives none). The
    contrast ``(1+α)·z − α·z'`` amplifies what the removed source adds to the next-token
    logits, so it favours that source; the amateur that matches the paper's description (image
    bias down, a residual text bias) is the source alone (:func:`contrastive_decodings`). Which
    way each source's bias moves is what :meth:`ConflictResponses.decoding_effects` measures.
    Amateurs that drop a modality run in one batch with the expert: a family that cannot mix
    rows with and without it is refused before compute."""
    out: dict[str, Any] = {"greedy": None}
    for name in favour:
        _check_source(name)
        out[f"favour {name}"] = contrast(f"without:{name}", alpha=alpha, beta=beta)
    return out
