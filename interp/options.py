"""How a measurement runs: :class:`RunOptions`, the one place for every run and trace option.

Every measurement and study takes ``run=RunOptions(...)``; the keywords users pass today
(``batch_size=8``, ``store=...``, ``remote=True``) are still accepted and fold into it
(:meth:`RunOptions.resolve`), so a new option is added here once and reaches every trace.

Two kinds of option live here:

- **run options** (:mod:`interp.runner`): rows per forward, the result store, this process's
  shard, the progress bar, how long a sharded run waits for its peers;
- **trace options** (nnsight's ``trace`` / ``generate`` keywords): ``remote`` (``True`` runs on
  NDIF, a URL string on that host, ``"local"`` nnsight's in-process dry run of the remote path),
  ``backend`` (an nnsight backend object) and ``trace`` (any further nnsight keyword). Every
  trace a measurement opens gets :meth:`RunOptions.trace_options`, condition preparation
  (a null image's features, a swap) included.

A step that cannot run where the model is remote raises :class:`~interp.errors.RemoteError`
naming it before any request is sent (:func:`refuse_remote`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import RemoteError
from .shards import Shard


@dataclass(frozen=True)
class RunOptions:
    """How a measurement runs, the same for every measurement and study.

    Attributes:
        batch_size: rows per forward; results do not depend on it (left padding is handled).
        store: a folder to write results to batch by batch and resume from (None: in memory).
        overwrite: discard a stored run and start over.
        shard: this process's share ``(i, n)``, ``"i/n"`` or ``"auto"`` (see :mod:`interp.runner`).
        progress_bar: show a progress bar.
        wait_timeout, idle_timeout: how long a sharded run waits for its peers, and for a peer
            that is not running.
        share_prefix: contexts that begin with the same tokens and media run that prefix once
            and only their own suffixes after it, when scoring (:mod:`interp.prefix`) and when
            generating (:mod:`interp.prefix_generation`; results equal within float tolerance);
            False runs every context in full.
        resume_layers: a sweep of edits confined to windows of decoder layers (the information-flow
            study's knockouts) runs the clean forward once per batch, keeps the residual stream at
            each window's first layer and runs each window's forward from there, the layers below
            it skipped (:mod:`interp.resume`; results equal within float tolerance); False runs
            every forward in full. Local runs on verified families only.
        remote: run every trace on NDIF (``True``: the configured host, with nnsight's API key
            from its config or ``NDIF_API_KEY``), on the NDIF host at a URL, or ``"local"``
            (nnsight's in-process dry run of the remote path). The model should be loaded with
            ``interp.load(name, remote=True)`` so no weights are read here.
        backend: an nnsight backend object every trace runs through (e.g. a non-blocking
            ``RemoteBackend``).
        trace: further nnsight ``trace`` keywords, passed to every trace untouched.
    """

    batch_size: int = 8
    store: str | Path | None = None
    overwrite: bool = False
    shard: Shard = None
    progress_bar: bool = True
    wait_timeout: float = 24 * 3600.0
    idle_timeout: float = 60.0
    share_prefix: bool = True
    resume_layers: bool = True
    remote: bool | str = False
    backend: Any = None
    trace: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def resolve(cls, run: RunOptions | None = None, **keywords: Any) -> RunOptions:
        """``run`` (or the defaults) with ``keywords`` applied on top: a keyword naming a field
        sets it, any other keyword is an nnsight trace option (added to ``trace``)."""
        base = run if run is not None else cls()
        if not isinstance(base, RunOptions):
            raise TypeError(f"run= takes a RunOptions, got {type(run).__name__}")
        names = {f.name for f in dataclasses.fields(cls)}
        fields = {k: v for k, v in keywords.items() if k in names and k != "trace"}
        extra = {k: v for k, v in keywords.items() if k not in names}
        trace = {**base.trace, **dict(keywords.get("trace") or {}), **extra}
        return dataclasses.replace(base, **fields, trace=trace) if fields or trace else base

    @property
    def is_remote(self) -> bool:
        """Whether traces leave this process (``remote`` set, or a backend given)."""
        return is_remote(self.trace_options())

    def trace_options(self) -> dict[str, Any]:
        """The keywords every nnsight trace of the run gets (only those set)."""
        out = dict(self.trace)
        if self.remote:
            out["remote"] = self.remote
        if self.backend is not None:
            out["backend"] = self.backend
        return out


LENS_RUN = RunOptions(batch_size=16)
"""The defaults of a logit lens over states already read (:meth:`interp.VLM.unembed` calls of
16 rows each), where no ``run=`` is given."""

NOT_LOWERED = "its traces still carry library objects (conditions, edits)"
"""Why a study whose traces are not lowered to plain data yet refuses a remote run."""


def is_remote(trace_options: Mapping[str, Any]) -> bool:
    """Whether trace keywords send the trace away (``remote`` set, or a backend given)."""
    return bool(trace_options.get("remote")) or trace_options.get("backend") is not None


def refuse_remote(
    trace_options: Mapping[str, Any], step: str, why: str, *, vlm: Any = None
) -> None:
    """Raise :class:`~interp.errors.RemoteError` naming ``step`` when the trace options send
    traces away, or ``vlm`` was loaded to trace remotely (``load(..., remote=True)``): called
    before any request is made, so nothing half-runs remotely."""
    if is_remote(trace_options) or getattr(vlm, "remote", False):
        raise RemoteError(
            f"{step} cannot run remotely yet: {why}. Run it on a local model "
            "(interp.load(name) without remote=True), or leave it out of the remote run."
        )


__all__ = ["LENS_RUN", "NOT_LOWERED", "RunOptions", "is_remote", "refuse_remote"]
