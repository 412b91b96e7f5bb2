"""A content-addressed, resumable on-disk store for long runs: :class:`ResultStore`.

Layout of a store folder::

    manifest.json                      the run configuration + the shards one writer finished
    manifest-1-of-2.json               ... one manifest per writer (a process of a sharded run)
    shard-main-00000.safetensors       per-sample tensors of one batch; keys, ids and JSON
    shard-1-of-2-00000.safetensors     records (answers ...) as metadata
    .lock, .lock-1-of-2                advisory locks held while a writer runs

**Content addressing.** Every sample's results are stored under a *key*: a hash of everything
that went into them — the sample's id, question, answer and image content (file bytes or pixels),
the content of any other sample a condition draws from (``swap``), and per-sample extras such as
a teacher-forcing target. The run-level settings (measurement, model weights, conditions, layers,
edits, generation settings) are the store's *configuration*. A re-run resumes exactly the samples
whose keys are stored; a sample whose image or text changed gets a new key and is recomputed, so a
store never serves results for inputs that changed. A store written with another configuration is
refused with :class:`~interp.errors.StoreError` (``overwrite=True`` starts it over).

**Crash safety.** Every file is written to a temporary name and moved into place with
``os.replace`` (atomic on POSIX), and a manifest lists a shard only once the shard is complete: a
run killed at any point leaves finished shards and at most an unlisted temporary file, which the
next run ignores — never a corrupt result.

**Concurrency.** A writer holds an advisory lock for as long as the store is open: a second
process opening a store that is being written is refused with
:class:`~interp.errors.StoreLockedError`. Processes of one sharded run (``shard=(i, n)``) share the
store, each under its own lock and manifest; the same shard twice is refused.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file
from torch import Tensor

from .errors import StoreError, StoreLockedError
from .locks import Lock
from .outputs import unstaged
from .reprs import Summary

_VERSION = 2
_MANIFEST = re.compile(r"^manifest(?:-(\d+)-of-(\d+))?\.json$")


def _atomic_write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


_MODE: list[int] = []


def file_mode() -> int:
    """The permissions a plain new file gets under this process's umask (e.g. 0o644), which
    every store file gets too (some writers create theirs 0o600)."""
    if not _MODE:
        umask = os.umask(0o022)
        os.umask(umask)
        _MODE.append(0o666 & ~umask)
    return _MODE[0]


def content_key(*parts: Any) -> str:
    """A 32-hex-digit hash of JSON-able parts (sample fingerprints, targets, ...)."""
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


class ResultStore(Summary):
    """Per-sample tensors and JSON records under content keys, written batch by batch, resumable.

    Args:
        path: the store folder (created if needed).
        config: what identifies the run (measurement, model, conditions, layers, edits ...). A
            store is only resumed by a run with an equal config.
        overwrite: discard an existing store at ``path`` instead of resuming it (single-process
            runs only).
        shard: ``(i, n)`` for process i of an n-process run sharing this store; None for a single
            writer.

    Raises:
        StoreError: the store was written with another configuration.
        StoreLockedError: another process is writing the store (or this shard of it).
    """

    def __init__(
        self,
        path: str | Path,
        config: Mapping[str, Any],
        *,
        overwrite: bool = False,
        shard: tuple[int, int] | None = None,
    ) -> None:
        self.path = unstaged(path)  # a command's staging folder links to its real store
        self.config = json.loads(json.dumps(dict(config), default=str))  # JSON-comparable
        self.shard = shard
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise StoreError(f"cannot create the store folder {str(self.path)!r}: {err}") from err
        if not os.access(self.path, os.W_OK):
            raise StoreError(f"the store folder {str(self.path)!r} is not writable")
        if overwrite and shard is not None:
            raise StoreError(
                "overwrite=True cannot be combined with a sharded run (the processes would wipe "
                "each other's results); clear the store with one process first"
            )
        self._locks: list[Lock] = []
        self._lock(shard)
        self.writer = "main" if shard is None else f"{shard[0]}-of-{shard[1]}"
        self._manifest = self.path / (
            "manifest.json" if shard is None else f"manifest-{self.writer}.json"
        )
        if overwrite:
            for old in [*self.path.glob("shard-*.safetensors"), *self.path.glob("manifest*.json")]:
                old.unlink()
        self._check_config()
        self._entries: dict[str, dict[str, Any]] = {}  # key -> {"file", "id"}
        self._own: list[dict[str, Any]] = []
        self.refresh()
        if not self._manifest.exists():
            self._write_manifest(complete=False)

    # -- locking ----------------------------------------------------------------------------------

    def _lock(self, shard: tuple[int, int] | None) -> None:
        try:
            self._locks.append(Lock(self.path / ".lock", shared=shard is not None))
        except BlockingIOError:
            raise StoreLockedError(
                f"the store at {str(self.path)!r} is being written by another process"
                + (" (a single-process run)" if shard is not None else "")
                + "; wait for it to finish or use another output folder"
            ) from None
        if shard is not None:
            try:
                self._locks.append(Lock(self.shard_lock(*shard), shared=False))
            except BlockingIOError:
                self.close()
                raise StoreLockedError(
                    f"shard {shard[0]}/{shard[1]} of the store at {str(self.path)!r} is being "
                    "written by another process"
                ) from None

    def shard_lock(self, index: int, count: int) -> Path:
        return self.path / f".lock-{index}-of-{count}"

    def close(self) -> None:
        """Release the store's locks (also released when the process ends)."""
        for lock in self._locks:
            lock.release()
        self._locks.clear()

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- manifests --------------------------------------------------------------------------------

    def _manifests(self) -> list[Path]:
        return sorted(p for p in self.path.glob("manifest*.json") if _MANIFEST.match(p.name))

    def _check_config(self) -> None:
        for manifest in self._manifests():
            data = json.loads(manifest.read_text())
            if data.get("version") != _VERSION:
                raise StoreError(
                    f"the store at {str(self.path)!r} was written by another version of the "
                    "library; use another output folder, or overwrite to start over"
                )
            theirs = data.get("config", {})
            if theirs != self.config:
                diff = sorted(
                    k for k in set(theirs) | set(self.config) if theirs.get(k) != self.config.get(k)
                )
                raise StoreError(
                    f"the store at {str(self.path)!r} holds results of a different run (differs "
                    f"in: {', '.join(diff)}). Use another output folder, or overwrite it "
                    "(overwrite=True; CLI: --overwrite) to start over."
                )

    def refresh(self) -> None:
        """Re-read every writer's manifest (other processes of a sharded run add to them)."""
        entries: dict[str, dict[str, Any]] = {}
        for manifest in self._manifests():
            data = json.loads(manifest.read_text())
            for shard in data.get("shards", []):
                for key, sid in zip(shard["keys"], shard["ids"]):
                    entries[key] = {"file": shard["file"], "id": sid}
            if manifest == self._manifest:
                self._own = list(data.get("shards", []))
        self._entries = entries

    def _write_manifest(self, complete: bool) -> None:
        _atomic_write_text(
            self._manifest,
            json.dumps(
                {
                    "version": _VERSION,
                    "config": self.config,
                    "writer": self.writer,
                    "complete": complete,
                    "shards": self._own,
                },
                indent=1,
            ),
        )

    def mark_complete(self) -> None:
        """Record that this writer finished its share."""
        self._write_manifest(complete=True)

    def writer_complete(self, index: int, count: int) -> bool:
        """Whether process ``index`` of an ``count``-process run marked its share finished."""
        manifest = self.path / f"manifest-{index}-of-{count}.json"
        if not manifest.exists():
            return False
        return bool(json.loads(manifest.read_text()).get("complete"))

    # -- state ------------------------------------------------------------------------------------

    @property
    def done_keys(self) -> set[str]:
        """Keys of every sample already stored (by any writer)."""
        return set(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def _repr_head(self) -> dict[str, Any]:
        return {"samples": len(self), "writer": self.writer, "path": str(self.path)}

    def _repr_rows(self) -> list[tuple[str, Any]]:
        files = {entry["file"] for entry in self._entries.values()}
        return [
            ("path", self.path),
            ("writer", self.writer),
            ("samples stored", len(self)),
            ("shard files", len(files)),
            ("this writer's files", len(self._own)),
            ("locked", bool(self._locks)),
            ("config", self.config),
        ]

    # -- writing ----------------------------------------------------------------------------------

    def write(
        self,
        keys: Sequence[str],
        ids: Sequence[str],
        tensors: Mapping[str, Tensor],
        records: Sequence[Mapping[str, Any]],
    ) -> None:
        """Store one batch: ``tensors[k]`` has one row per key; ``records[i]`` is JSON for
        ``keys[i]`` (sample ``ids[i]``)."""
        keys, ids = [str(k) for k in keys], [str(i) for i in ids]
        n = len(keys)
        if len(ids) != n or len(records) != n or any(t.shape[0] != n for t in tensors.values()):
            raise ValueError("every tensor, the ids and the records must have one row per key")
        name = f"shard-{self.writer}-{len(self._own):05d}.safetensors"
        tmp = self.path / f".{name}.tmp"
        save_file(
            {k: v.detach().contiguous().cpu() for k, v in tensors.items()},
            str(tmp),
            metadata={
                "keys": json.dumps(keys),
                "ids": json.dumps(ids),
                "records": json.dumps(list(records)),
            },
        )
        os.chmod(tmp, file_mode())
        os.replace(tmp, self.path / name)
        self._own.append({"file": name, "keys": keys, "ids": ids})
        for key, sid in zip(keys, ids):
            self._entries[key] = {"file": name, "id": sid}
        self._write_manifest(complete=False)

    # -- reading ----------------------------------------------------------------------------------

    def load(self, keys: Sequence[str]) -> tuple[dict[str, Tensor], list[dict[str, Any]]]:
        """The stored tensors (stacked, one row per key; rows whose trailing sizes differ are
        zero-padded to the largest) and records, in the order of ``keys``.

        Raises:
            StoreError: a key is not in the store, or a listed shard is missing.
        """
        missing = [k for k in keys if k not in self._entries]
        if missing:
            raise StoreError(f"{len(missing)} samples are not in the store, e.g. {missing[:3]}")
        by_file: dict[str, list[str]] = {}
        for key in keys:
            by_file.setdefault(self._entries[key]["file"], []).append(key)
        rows: dict[str, dict[str, Tensor]] = {}
        records: dict[str, dict[str, Any]] = {}
        for name in by_file:
            file = self.path / name
            if not file.exists():
                raise StoreError(f"shard {name} listed in a manifest is missing from {self.path}")
            with safe_open(str(file), framework="pt") as f:
                meta = f.metadata()
            data = load_file(str(file))
            where = {k: i for i, k in enumerate(json.loads(meta["keys"]))}
            shard_records = json.loads(meta["records"])
            for key in by_file[name]:
                i = where[key]
                rows[key] = {k: v[i] for k, v in data.items()}
                records[key] = shard_records[i]
        names = sorted({k for r in rows.values() for k in r})
        tensors = {k: stack_rows([rows[key][k] for key in keys]) for k in names}
        return tensors, [records[key] for key in keys]


def substore(store: str | Path | None, *parts: str) -> Path | None:
    """The folder of one run under a study's store: ``store/part/...``, or None when the study runs
    without a store (each run of a study keeps its own resumable :class:`ResultStore`)."""
    return None if store is None else Path(store).joinpath(*parts)


def stack_rows(rows: list[Tensor]) -> Tensor:
    """Stack per-sample rows; rows whose sizes differ are zero-padded to the largest."""
    shapes = {tuple(r.shape) for r in rows}
    if len(shapes) == 1:
        return torch.stack(rows)
    ndim = {len(s) for s in shapes}
    if len(ndim) != 1:
        raise StoreError(f"stored rows have different ranks: {sorted(shapes)}")
    size = [max(s[d] for s in shapes) for d in range(next(iter(ndim)))]
    out = torch.zeros(len(rows), *size, dtype=rows[0].dtype)
    for i, r in enumerate(rows):
        out[(i, *[slice(0, n) for n in r.shape])] = r
    return out


__all__ = ["ResultStore", "content_key", "stack_rows", "substore"]
