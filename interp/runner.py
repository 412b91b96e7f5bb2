"""The loop every measurement shares: validate the samples, key them, resume from a store, split
the work across processes, run batches with a progress bar, and put the results back in order.

A measurement describes itself with a :class:`Job` (its name and run-level settings, which become
the store's configuration) and a ``compute(chunk)`` function that turns a list of samples into
per-sample tensors and JSON records; :func:`run` does the rest. Scale-out: with ``shard=(i, n)``
(or ``shard="auto"`` under ``accelerate launch`` / ``torchrun``, read from ``RANK`` and
``WORLD_SIZE``) process i computes batches i, i+n, i+2n ... into the shared store, then waits for
the others and returns the merged result — equal to a single-process run (each process takes
whole batches of the sample order, so every batch is composed as in a single process).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from torch import Tensor

from .conditions import Condition, condition_sources
from .edits import Intervention, edits_fingerprint
from .encoding import check_pixel_conditions, warn_unknown_tokens
from .errors import BatchDependentWarning, StoreError
from .locks import lock_is_free
from .options import RunOptions
from .samples import Sample, ensure_samples
from .shards import Shard, resolve_shard
from .store import ResultStore, content_key, stack_rows
from .tracing import progress

if TYPE_CHECKING:
    from .model import VLM

logger = logging.getLogger(__name__)
_OPENED: set[Path] = set()  # stores this process started (their results are its own)

Compute = Callable[[list[Sample]], tuple[dict[str, Tensor], list[dict[str, Any]]]]


@dataclass
class Job:
    """What identifies a measurement run: its name, run-level settings (JSON-able), the
    conditions it uses, its edits, and optional per-sample extras (e.g. teacher-forcing targets)
    that enter each sample's key."""

    name: str
    settings: dict[str, Any]
    conditions: Sequence[str | Condition] = ("full",)
    edits: Sequence[Intervention] = ()
    extras: Sequence[Any] | None = None
    pool: Sequence[Sample] = field(default_factory=list)


def weights_fingerprint(vlm: VLM) -> str:
    """A cheap identity of the weights: sums of 16 evenly spaced parameter tensors, or for a
    model not loaded yet (meta device) the names, sizes and first megabyte of its weight files."""
    params = list(vlm.hf.parameters())
    if params and params[0].device.type == "meta":
        h = hashlib.sha256(str(vlm.source).encode())
        folder = Path(str(vlm.source))
        if folder.is_dir():
            for file in sorted(folder.glob("*.safetensors")) + sorted(folder.glob("*.bin")):
                h.update(f"{file.name}:{file.stat().st_size}".encode())
                with file.open("rb") as f:
                    h.update(f.read(1 << 20))
        return "files:" + h.hexdigest()[:16]
    picked = params[:: max(1, len(params) // 16)]
    sums = [round(float(p.detach().double().sum()), 6) for p in picked]
    return hashlib.sha256(json.dumps([len(params), sums]).encode()).hexdigest()[:16]


def sample_keys(job: Job, samples: Sequence[Sample], vlm: VLM) -> list[str]:
    """Each sample's content key: its fingerprint, the fingerprints of the samples its
    conditions draw from, and its per-sample extra."""
    pool = list(job.pool) or list(samples)
    keys = []
    for i, s in enumerate(samples):
        parts: list[Any] = [s.fingerprint()]
        for cond in job.conditions:
            parts.extend(p.fingerprint() for p in condition_sources(s, cond, pool, vlm.processor))
        if job.extras is not None:
            parts.append(job.extras[i])
        keys.append(content_key(*parts))
    return keys


def store_config(vlm: VLM, job: Job) -> dict[str, Any]:
    return {
        "measurement": job.name,
        "model": vlm.source or type(vlm.hf).__name__,
        "weights": weights_fingerprint(vlm),
        "conditions": [str(Condition.parse(c)) for c in job.conditions],
        "edits": edits_fingerprint(job.edits),
        **job.settings,
    }


def run(
    vlm: VLM,
    samples: Sequence[Sample] | Sample,
    job: Job,
    compute: Compute,
    options: RunOptions | None = None,
    **option_values: Any,
) -> tuple[list[Sample], dict[str, Tensor], list[dict[str, Any]]]:
    """Run ``compute`` over ``samples`` in chunks of ``options.batch_size``; returns the samples
    and the results in sample order. ``options`` may also be given as keywords
    (``batch_size=...``, ``store=...``).

    Raises:
        DuplicateSampleError / EmptyInputError: bad sample list (before any compute).
        LayoutNotMappedError: a condition edits pixels (``distort``) on a family whose pixel
            layout is not verified (before any compute).
        StoreError / StoreLockedError: see :class:`~interp.store.ResultStore`.
    """
    opts = RunOptions.resolve(options, **option_values)
    batch_size, store, overwrite, shard = opts.batch_size, opts.store, opts.overwrite, opts.shard
    progress_bar, wait_timeout, idle_timeout = (
        opts.progress_bar,
        opts.wait_timeout,
        opts.idle_timeout,
    )
    samples = ensure_samples(samples)
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    check_pixel_conditions(vlm.adapter, job.conditions)  # before a store opens or a batch runs
    why = vlm.adapter.batch_dependent
    if why and batch_size > 1:  # the results of a row alone, whatever the batch
        warnings.warn(
            f"{vlm.adapter.name}: {why}; each row runs alone (batch_size {batch_size} -> 1)",
            BatchDependentWarning,
            stacklevel=3,
        )
        batch_size = 1
    warn_unknown_tokens(vlm, samples)
    where = resolve_shard(shard)
    if where is not None and store is None:
        raise StoreError("a sharded run writes into a shared store: pass store=<folder>")
    keys = sample_keys(job, samples, vlm) if store is not None else [str(s.id) for s in samples]
    opened = (
        ResultStore(store, store_config(vlm, job), overwrite=overwrite, shard=where)
        if store is not None
        else None
    )
    try:
        done = opened.done_keys if opened is not None else set()
        if opened is not None and not done:  # what this process stores is no resumption
            _OPENED.add(opened.path)
        # A shard takes whole batches of the full sample order (batch k goes to process
        # k mod n), so every batch has the composition a single process gives it.
        mine = [
            i
            for i in range(len(samples))
            if keys[i] not in done and (where is None or (i // batch_size) % where[1] == where[0])
        ]
        kept: dict[str, tuple[dict[str, Tensor], dict[str, Any]]] = {}
        chunks = [mine[k : k + batch_size] for k in range(0, len(mine), batch_size)]
        label = job.name if where is None else f"{job.name} [{where[0]}/{where[1]}]"
        share = len(mine) + sum(
            1
            for i in range(len(samples))
            if keys[i] in done and (where is None or (i // batch_size) % where[1] == where[0])
        )
        if opened is not None and share > len(mine) and opened.path not in _OPENED:
            logger.info(
                "resuming: %d of %d done (%s, store %s)",
                share - len(mine),
                share,
                label,
                opened.path,
            )
        for chunk in progress(
            chunks, total=share, desc=label, enabled=progress_bar, initial=share - len(mine)
        ):
            tensors, records = compute([samples[i] for i in chunk])
            if opened is not None:
                opened.write(
                    [keys[i] for i in chunk], [str(samples[i].id) for i in chunk], tensors, records
                )
            else:
                for row, i in enumerate(chunk):
                    kept[keys[i]] = ({k: v[row] for k, v in tensors.items()}, records[row])
        if opened is None:
            names = sorted({k for t, _ in kept.values() for k in t})
            tensors = {k: stack_rows([kept[key][0][k] for key in keys]) for k in names}
            return samples, tensors, [kept[key][1] for key in keys]
        if where is not None:
            opened.mark_complete()
            _wait_for_shards(opened, keys, where, wait_timeout, idle_timeout)
        tensors, records = opened.load(keys)
        return samples, tensors, records
    finally:
        if opened is not None:
            opened.close()


def forget_started_stores() -> None:
    """Start a new command: a store met again is a resumption (see :func:`run`'s note)."""
    _OPENED.clear()


def _wait_for_shards(
    store: ResultStore,
    keys: Sequence[str],
    where: tuple[int, int],
    timeout: float,
    idle_timeout: float,
) -> None:
    """Wait until every sample is stored; fail if a process whose share is missing is not
    running (its lock is free and it did not mark its share finished) for ``idle_timeout``
    seconds."""
    start = time.monotonic()
    idle_since: dict[int, float] = {}
    while True:
        store.refresh()
        missing = set(keys) - store.done_keys
        if not missing:
            return
        now = time.monotonic()
        for i in range(where[1]):
            running = not lock_is_free(store.shard_lock(i, where[1]))
            if running or store.writer_complete(i, where[1]):
                idle_since.pop(i, None)
            else:
                idle_since.setdefault(i, now)
                if now - idle_since[i] > idle_timeout:
                    raise StoreError(
                        f"{len(missing)} samples are missing from the store and process {i}/"
                        f"{where[1]} is not running; run it (shard {i}/{where[1]}) to complete "
                        "the store"
                    )
        if now - start > timeout:
            raise StoreError(f"timed out waiting for {len(missing)} samples from other processes")
        time.sleep(0.5)


__all__ = [
    "Job",
    "RunOptions",
    "Shard",
    "resolve_shard",
    "run",
    "sample_keys",
    "store_config",
    "weights_fingerprint",
]
