"""The audit itself: every registered study the samples support, then ``report.html`` and
``summary.json``."""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from interp.errors import InterpError, RemoteError
from interp.options import RunOptions, refuse_remote
from interp.samples import Sample, ensure_samples

from .registry import AuditOptions, AuditStudy, plan
from .report import Section, data_fingerprint, render, versions

if TYPE_CHECKING:
    from interp.model import VLM

logger = logging.getLogger(__name__)


def failure_reason(study: AuditStudy, err: Exception, n: int) -> str:
    """Why a study stopped on these data, in the user's terms: the study's own words when it
    has them (what the data lack, which option or label would help), else the library's
    message."""
    words = study.failure_reason(err, n)
    if words:
        return words
    if isinstance(err, InterpError):
        return f"it stopped on these data: {type(err).__name__}: {err}"
    return (
        f"it stopped on an internal error ({type(err).__name__}: {err}); the other studies "
        "are unaffected — please report this with the command below"
    )


def audit(
    vlm: VLM,
    samples: Sequence[Sample],
    out: str | Path,
    *,
    model: str = "",
    data: str = "",
    command: str = "",
    studies: Sequence[str] | None = None,
    options: AuditOptions | None = None,
    n_per_kind: int | None = None,
    run: RunOptions | None = None,
    **run_options: Any,
) -> dict[str, Any]:
    """Run every study the samples support; write ``report.html`` and ``summary.json`` into
    ``out``; return the summary.

    A study the samples cannot serve is skipped, and one that fails while it runs (e.g. the
    agreement split leaves a group empty) becomes a section saying why: the report and the
    summary are written whatever happens to the studies (``summary["studies"][key]["status"]``
    is ``ran``, ``skipped`` or ``failed``). ``n_per_kind`` is the ``--n`` the data was drawn
    with, for the page's header.

    ``options`` are the settings every section receives (:class:`AuditOptions`); ``run`` is how
    the audit runs (:class:`~interp.options.RunOptions`; its fields may also be given as
    keywords): its ``progress_bar``, and its ``batch_size``, ``store`` and ``overwrite`` where
    given (they replace ``options``').

    On a model loaded for NDIF (``interp.load(name, remote=True)``) every study runs remotely
    where it can (``docs/remote.md``); one that cannot is skipped with the reason (its refusal
    comes before any request), and the decoding and attribution sections leave out sampled runs,
    PAI and the gradient and attention maps.

    Raises:
        RemoteError: ``run`` asks for a remote run of a model loaded here (its traces name this
            library's model class, which NDIF cannot build): load it with ``remote=True``.
    """
    from interp.runner import weights_fingerprint
    from interp.tracing import progress

    ro = RunOptions.resolve(run, **run_options)
    if ro.is_remote and not vlm.remote:
        refuse_remote(
            ro.trace_options(),
            "audit",
            "a remote audit runs on a model loaded for NDIF: interp.load(name, remote=True)",
        )
    samples = ensure_samples(samples)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    given = {
        k: getattr(ro, k)
        for k in ("batch_size", "store", "overwrite")
        if run is not None or k in run_options
    }
    if given.get("store") is not None:
        given["store"] = Path(given["store"])
    opts = dataclasses.replace(options or AuditOptions(), **given)  # the caller's is unchanged
    if opts.store is None:
        opts.store = out / "store"
    planned = plan(samples, studies)
    todo = [(st, chosen) for st, chosen, _ in planned if chosen]
    results: dict[str, Section] = {}
    for study, chosen in progress(
        todo, total=len(todo), desc="audit", enabled=ro.progress_bar, unit="study"
    ):
        try:
            results[study.key] = study.section(vlm, chosen, opts)
        except RemoteError as err:  # refused before any request: nothing ran
            results[study.key] = Section(
                study.key, study.title, ran=False, n=len(chosen), reason=f"not on NDIF: {err}"
            )
        except Exception as err:  # one study's failure must not cost the whole report
            if not isinstance(err, InterpError):
                logger.debug("the %s study failed", study.key, exc_info=True)
            results[study.key] = Section(
                study.key,
                study.title,
                ran=False,
                failed=True,
                n=len(chosen),
                reason=failure_reason(study, err, len(chosen)),
            )
    sections = [
        results.get(st.key) or Section(st.key, st.title, ran=False, reason=reason)
        for st, _, reason in planned
    ]
    summary = {
        "model": model or str(vlm.source or type(vlm.hf).__name__),
        "data": data,
        "n_samples": len(samples),
        "n_per_kind": n_per_kind,
        "fingerprints": {"model": weights_fingerprint(vlm), "data": data_fingerprint(samples)},
        "versions": versions(),
        "command": command,
        "studies": {s.key: s.summary() for s in sections},
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    (out / "report.html").write_text(render(summary, sections))
    return summary


__all__ = ["audit", "failure_reason"]
