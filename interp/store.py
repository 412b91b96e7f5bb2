"""A resumable on-disk store for long runs: :class:`ResultStore`.

Layout of a store folder::

    manifest.json                 run configuration + the list of finished shards
    shard-00000.safetensors       per-sample tensors of one batch, records (answers ...) as metadata
    shard-00001.safetensors
    ...

Every file is written to a temporary name and moved into place with ``os.replace`` (atomic on POSIX),
and the manifest lists a shard only after the shard is complete. A run killed at any point therefore
leaves either a finished shard listed in the manifest or an unlisted partial file that the next run
ignores and overwrites: never a corrupt result. Re-opening a store with the same configuration resumes
it; with another configuration it raises :class:`~interp.errors.StoreError`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file
from torch import Tensor

from .errors import StoreError

_MANIFEST = "manifest.json"
_VERSION = 1


def _atomic_write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


class ResultStore:
    """Per-sample tensors and JSON records written batch by batch, resumable.

    Args:
        path: the store folder (created if needed).
        config: what identifies the run (model, data fingerprint, conditions, layers ...). A store is
            only resumed by a run with an equal config.
        overwrite: discard an existing store at ``path`` instead of resuming it.
    """

    def __init__(
        self, path: str | Path, config: Mapping[str, Any], *, overwrite: bool = False
    ) -> None:
        self.path = Path(path)
        self.config = json.loads(json.dumps(dict(config)))  # normalised, JSON-comparable
        self.path.mkdir(parents=True, exist_ok=True)
        manifest = self.path / _MANIFEST
        if manifest.exists() and not overwrite:
            data = json.loads(manifest.read_text())
            if data.get("config") != self.config:
                diff = sorted(
                    k
                    for k in set(data.get("config", {})) | set(self.config)
                    if data.get("config", {}).get(k) != self.config.get(k)
                )
                raise StoreError(
                    f"the store at {str(self.path)!r} was written by a different run (differs in: "
                    f"{', '.join(diff)}). Use another output folder, or overwrite=True to start over."
                )
            self._shards: list[dict[str, Any]] = data["shards"]
        else:
            for old in self.path.glob("shard-*.safetensors"):
                old.unlink()
            self._shards = []
            self._write_manifest()

    # -- state ------------------------------------------------------------------------------------

    def _write_manifest(self) -> None:
        _atomic_write_text(
            self.path / _MANIFEST,
            json.dumps(
                {"version": _VERSION, "config": self.config, "shards": self._shards}, indent=1
            ),
        )

    @property
    def done_ids(self) -> set[str]:
        """Ids of every sample already stored."""
        return {sid for shard in self._shards for sid in shard["ids"]}

    def __len__(self) -> int:
        return sum(len(shard["ids"]) for shard in self._shards)

    # -- writing ----------------------------------------------------------------------------------

    def write(
        self,
        ids: Sequence[str],
        tensors: Mapping[str, Tensor],
        records: Sequence[Mapping[str, Any]],
    ) -> None:
        """Store one batch: ``tensors[k]`` has one row per id; ``records[i]`` is JSON for ``ids[i]``."""
        ids = [str(i) for i in ids]
        if len(records) != len(ids) or any(t.shape[0] != len(ids) for t in tensors.values()):
            raise ValueError("every tensor and the records list must have one row per id")
        clash = self.done_ids.intersection(ids)
        if clash:
            raise StoreError(
                f"samples already stored: {sorted(clash)[:5]}; sample ids must be unique"
            )
        name = f"shard-{len(self._shards):05d}.safetensors"
        tmp = self.path / f".{name}.tmp"
        save_file(
            {k: v.detach().contiguous().cpu() for k, v in tensors.items()},
            str(tmp),
            metadata={"ids": json.dumps(ids), "records": json.dumps(list(records))},
        )
        os.replace(tmp, self.path / name)
        self._shards.append({"file": name, "ids": ids})
        self._write_manifest()

    # -- reading ----------------------------------------------------------------------------------

    def load(
        self, ids: Sequence[str] | None = None
    ) -> tuple[dict[str, Tensor], list[dict[str, Any]]]:
        """All stored tensors (concatenated) and records, in the order of ``ids`` (default: stored
        order).

        Raises:
            StoreError: an id is not in the store, or a listed shard is missing.
        """
        from safetensors import safe_open

        parts: dict[str, list[Tensor]] = {}
        records: list[dict[str, Any]] = []
        order: list[str] = []
        for shard in self._shards:
            file = self.path / shard["file"]
            if not file.exists():
                raise StoreError(
                    f"shard {shard['file']} listed in the manifest is missing from {self.path}"
                )
            with safe_open(str(file), framework="pt") as f:
                meta = f.metadata()
            for key, value in load_file(str(file)).items():
                parts.setdefault(key, []).append(value)
            records.extend(json.loads(meta["records"]))
            order.extend(json.loads(meta["ids"]))
        tensors = {k: torch.cat(v) for k, v in parts.items()}
        if ids is None:
            return tensors, records
        where = {sid: i for i, sid in enumerate(order)}
        missing = [str(i) for i in ids if str(i) not in where]
        if missing:
            raise StoreError(f"{len(missing)} samples are not in the store, e.g. {missing[:5]}")
        index = torch.tensor([where[str(i)] for i in ids], dtype=torch.long)
        return {k: v[index] for k, v in tensors.items()}, [records[int(i)] for i in index]


__all__ = ["ResultStore"]
