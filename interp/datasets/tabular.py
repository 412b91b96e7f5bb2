"""Tabular benchmark data read as :class:`~interp.Sample` lists: Hugging Face ``datasets`` folders,
parquet files and hub datasets.

:func:`read_dataset` takes a **source**:

- a folder written by ``Dataset.save_to_disk`` or ``DatasetDict.save_to_disk`` (a DatasetDict
  needs a split: ``folder:split``, unless it holds only one);
- a parquet file, a folder of parquet files (searched recursively; a hub snapshot's
  ``data/<split>-00000-of-00001.parquet`` files are grouped by split, so ``folder:split`` picks
  one), or a glob such as ``'data/*.parquet'``;
- a hub dataset id, ``org/name``, ``org/name:split`` or ``org/name:config:split``, loaded with
  ``datasets.load_dataset`` where a network exists. Offline (``HF_HUB_OFFLINE`` /
  ``HF_DATASETS_OFFLINE`` set, or the hub's host unreachable) it fails at once with a
  :class:`~interp.errors.DataSourceError` that says to use a local copy;
- the project's JSONL file (:func:`interp.read_jsonl`).

**Columns.** Each row becomes a sample through a column mapping ``{"question": ..., "image": ...,
"answer": ..., "id": ...}`` (the CLI's ``--columns question=query,image=img``). Unmapped roles
take the first column (case-insensitive) of :data:`DEFAULT_COLUMNS` the data has; the question
is required, ``image=none`` reads text-only data, a missing answer is ``None`` and a missing id
is the row's position in the split. An answer cell holding a list (VQA-style ``answers``) gives
its first answer as ``answer`` and all of them as ``meta["answers"]``. Image cells may hold PIL
images (the ``datasets`` Image feature), ``{"bytes": ..., "path": ...}`` structs (how that feature
is stored in arrow and parquet), raw bytes, a file path (relative to the data's folder, or
absolute), a base64 string, or a list of these (a multi-image sample). Every other column with
plain values (text, numbers, booleans, lists of them) goes to ``meta``, so ``--group-by`` and the
studies' labels work on it; ``ClassLabel`` values read as their names. ``audio`` and ``video``
columns (``--columns audio=clip,video=frames``) read as :mod:`interp.datasets.media_cells` says.

Without the ``datasets`` package (the ``[data]`` extra), parquet still reads through ``pyarrow``
(or pandas with a parquet engine); the folder and hub sources raise
:class:`~interp.errors.MissingExtraError` naming ``pip install 'vlm-interp[data]'``.
"""

from __future__ import annotations

import base64
import binascii
import glob
import io
import os
import re
import socket
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np
from PIL import Image, UnidentifiedImageError

from ..errors import (
    DataFormatError,
    DataSourceError,
    EmptyInputError,
    ImageError,
    MissingColumnError,
    MissingExtraError,
    MissingImageError,
)
from ..samples import Sample, ensure_samples, read_jsonl
from .media_cells import audio_cell, video_cell

ROLES = ("question", "image", "answer", "id", "audio", "video")
DEFAULT_COLUMNS: dict[str, tuple[str, ...]] = {
    "question": ("question", "query", "prompt", "text", "instruction"),
    "image": ("image", "img", "images", "image_path", "image_file"),
    "answer": ("answer", "answers", "label", "ground_truth", "gt_answer"),
    "id": ("id", "question_id", "qid", "sample_id", "index"),
    "audio": ("audio", "audio_path", "audio_file"),
    "video": ("video", "video_path", "video_file"),
}
"""Column names tried, in order, for a role the mapping leaves out."""

INSTALL_HINT = "pip install 'vlm-interp[data]'"
_SHARD = re.compile(r"^(?P<split>[\w.]+?)-\d+-of-\d+\.parquet$")
_TRUE = ("1", "true", "yes", "on")


# -- the column mapping -----------------------------------------------------------------------------


def parse_columns(columns: str | Mapping[str, str | None] | None) -> dict[str, str | None]:
    """A role → column mapping from ``"question=query,image=img"`` or a dict; ``none`` (or None)
    as a column means the data has no such column (``image=none``: text-only items).

    Raises:
        DataFormatError: an unknown role, an entry without ``=``, or a role given twice.
    """
    if columns is None:
        return {}
    if isinstance(columns, str):
        pairs: list[tuple[str, str]] = []
        for entry in (e.strip() for e in columns.split(",")):
            if not entry:
                continue
            role, sep, column = entry.partition("=")
            if not sep or not column.strip():
                raise DataFormatError(
                    f"--columns entry {entry!r} is not role=column (e.g. question=query,image=img)"
                )
            pairs.append((role.strip(), column.strip()))
    else:
        pairs = [(str(k), v) for k, v in columns.items()]  # type: ignore[misc]
    out: dict[str, str | None] = {}
    for role, column in pairs:
        if role not in ROLES:
            raise DataFormatError(
                f"--columns: unknown role {role!r}; the roles are {', '.join(ROLES)} (every other "
                "column goes to the samples' labels)"
            )
        if role in out:
            raise DataFormatError(f"--columns: the role {role!r} is given twice")
        out[role] = None if column is None or column.lower() == "none" else column
    return out


def resolve_columns(
    names: Sequence[str], mapping: Mapping[str, str | None], where: str
) -> dict[str, str | None]:
    """Each role's column in a table with columns ``names`` (see the module docstring).

    Raises:
        MissingColumnError: a mapped column is absent, or no question column is found — naming
            the columns the data has and the ``--columns`` fix.
    """
    lowered = {n.lower(): n for n in names}
    have = ", ".join(names) or "(none)"
    out: dict[str, str | None] = {}
    for role in ROLES:
        if role in mapping:
            column = mapping[role]
            if column is not None and column not in names:
                column = lowered.get(column.lower(), column)
                if column not in names:
                    raise MissingColumnError(
                        f"{where}: no column {mapping[role]!r} (--columns {role}=...); the columns "
                        f"are: {have}"
                    )
            out[role] = column
            continue
        taken = {c for c in mapping.values() if c is not None}
        defaults = [lowered[c] for c in DEFAULT_COLUMNS[role] if c in lowered]
        out[role] = next((c for c in defaults if c not in taken), None)
    if out["question"] is None:
        raise MissingColumnError(
            f"{where}: no question column (looked for {', '.join(DEFAULT_COLUMNS['question'])}); "
            f"the columns are: {have}; name it with --columns question=<column>"
        )
    used = [c for c in out.values() if c is not None]
    if len(used) != len(set(used)):
        raise DataFormatError(f"{where}: one column serves two roles ({out}); fix --columns")
    return out


# -- cell conversion --------------------------------------------------------------------------------


def _is_image_struct(value: Any) -> bool:
    return isinstance(value, Mapping) and "bytes" in value and "path" in value


def _open_bytes(raw: bytes, where: str) -> Image.Image:
    try:
        image = Image.open(io.BytesIO(raw))
        image.load()
    except (UnidentifiedImageError, OSError, ValueError) as err:
        raise ImageError(f"{where}: the image cell does not decode as an image ({err})") from None
    return image


def _image_path(value: str, bases: Sequence[Path]) -> Path | None:
    try:
        path = Path(os.path.expanduser(value))
        candidates = [path] if path.is_absolute() else [b / path for b in bases]
        return next((c for c in candidates if c.is_file()), None)
    except (OSError, RuntimeError):  # a name too long for a path (e.g. base64), '~unknown'
        return None


def _image_cell(value: Any, bases: Sequence[Path], where: str) -> Any:
    """A PIL image, a path or a list of them from one image cell (None: no image)."""
    if value is None:
        return None
    if isinstance(value, Image.Image):
        return value
    if isinstance(value, np.ndarray) and value.dtype == object:
        value = list(value)
    if isinstance(value, (list, tuple)):
        images = [_image_cell(v, bases, f"{where} image {k}") for k, v in enumerate(value)]
        return [im for im in images if im is not None] or None
    if _is_image_struct(value):
        if value["bytes"] is not None:
            return _open_bytes(bytes(value["bytes"]), where)
        if value["path"]:
            found = _image_path(str(value["path"]), bases)
            if found is None:
                raise MissingImageError(
                    f"{where}: the image cell has no bytes and its path {value['path']!r} is not "
                    f"a file (looked in {', '.join(str(b) for b in bases)})"
                )
            return found
        return None
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _open_bytes(bytes(value), where)
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        found = _image_path(text, bases) if len(text) < 4096 else None
        if found is not None:
            return found
        payload = text.split(",", 1)[1] if text.startswith("data:") and "," in text else text
        try:
            raw = base64.b64decode(payload, validate=True)
        except (binascii.Error, ValueError):
            raise MissingImageError(
                f"{where}: the image cell {text[:80]!r} is neither an image file (looked in "
                f"{', '.join(str(b) for b in bases)}) nor a base64-encoded image"
            ) from None
        return _open_bytes(raw, where)
    if isinstance(value, np.ndarray):
        return value  # pixels; Sample validates the shape
    raise ImageError(
        f"{where}: cannot read an image from a {type(value).__name__} cell; give PIL images, "
        "bytes, {'bytes', 'path'} structs, file paths or base64 strings"
    )


_SKIP = object()


def _plain(value: Any) -> Any:
    """A label value (str, number, bool, None, or a list/dict of them), or ``_SKIP`` for cells that
    are no label (images, bytes)."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        items = [_plain(v) for v in value]
        return _SKIP if any(v is _SKIP for v in items) else items
    if isinstance(value, Mapping) and not _is_image_struct(value):
        pairs = {str(k): _plain(v) for k, v in value.items()}
        return _SKIP if any(v is _SKIP for v in pairs.values()) else pairs
    if isinstance(value, (bytes, bytearray, memoryview, Image.Image, Mapping)):
        return _SKIP
    return str(value)  # dates, decimals ...


def _answer_text(value: Any) -> str | None:
    if isinstance(value, Mapping):  # VQA-style {"answer": ..., "answer_confidence": ...}
        value = value.get("answer", value.get("text"))
    if value is None:
        return None
    return str(_plain(value))


def row_to_sample(
    row: Mapping[str, Any],
    columns: Mapping[str, str | None],
    index: int,
    bases: Sequence[Path],
    where: str,
) -> Sample:
    """One table row as a sample (``columns`` from :func:`resolve_columns`; ``where`` names the
    row in errors)."""
    qcol, icol, acol, idcol, aucol, vcol = (columns.get(r) for r in ROLES)
    sid_raw = row.get(idcol) if idcol else None
    sid = str(_plain(sid_raw)) if sid_raw is not None else str(index)
    where = f"{where} (id {sid!r})"
    question = row.get(qcol)  # type: ignore[arg-type]
    if question is None or not str(question).strip():
        raise DataFormatError(f"{where}: empty question (column {qcol!r})")
    image = _image_cell(row.get(icol), bases, where) if icol else None
    audio = audio_cell(row.get(aucol), bases, where) if aucol else None
    video = video_cell(row.get(vcol), bases, where) if vcol else None
    meta: dict[str, Any] = {}
    answer = row.get(acol) if acol else None
    if isinstance(answer, np.ndarray):
        answer = answer.tolist()
    if isinstance(answer, (list, tuple)):
        answers = [a for a in (_answer_text(v) for v in answer) if a is not None]
        meta["answers"] = answers
        answer = answers[0] if answers else None
    else:
        answer = _answer_text(answer)
    for key, value in row.items():
        if key in (qcol, icol, acol, idcol, aucol, vcol) or key in meta:
            continue
        value = _plain(value)
        if value is not _SKIP:
            meta[key] = value
    return Sample(str(question), image, answer, sid, meta=meta, audio=audio, video=video)


# -- sources ----------------------------------------------------------------------------------------


def _import_datasets(what: str) -> Any:
    try:
        import datasets
    except ImportError:
        raise MissingExtraError(f"{what} needs the 'datasets' package: {INSTALL_HINT}") from None
    return datasets


def _parquet_rows(path: Path, limit: int | None) -> tuple[list[str], Iterator[dict[str, Any]]]:
    """The column names and rows (at most ``limit``) of one parquet file, through pyarrow, else
    pandas."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        pq = None
    if pq is not None:
        pf = pq.ParquetFile(path)

        def arrow_rows() -> Iterator[dict[str, Any]]:
            left = limit
            for batch in pf.iter_batches(batch_size=256):
                rows = batch.to_pylist()
                yield from rows if left is None else rows[:left]
                if left is not None:
                    left -= len(rows)
                    if left <= 0:
                        return

        return list(pf.schema_arrow.names), arrow_rows()
    import pandas as pd

    try:
        frame = pd.read_parquet(path)
    except ImportError:
        raise MissingExtraError(
            f"reading parquet needs pyarrow (or fastparquet): {INSTALL_HINT}"
        ) from None
    frame = frame if limit is None else frame.iloc[:limit]
    return [str(c) for c in frame.columns], iter(frame.to_dict("records"))


def _shard_split(path: Path) -> str | None:
    m = _SHARD.match(path.name)
    return m.group("split") if m else None


def _in_split(path: Path, split: str) -> bool:
    name = path.name
    return (
        _shard_split(path) == split
        or path.parent.name == split
        or any(name.startswith(split + c) for c in "-_.")
    )


def _parquet_files(files: list[Path], split: str | None, where: str) -> list[Path]:
    if split is not None:
        chosen = [f for f in files if _in_split(f, split)]
        if not chosen:
            raise DataSourceError(
                f"{where}: no parquet file of split {split!r} (files: "
                f"{', '.join(f.name for f in files[:8])})"
            )
        return chosen
    splits = sorted({s for s in map(_shard_split, files) if s is not None})
    if len(splits) > 1:
        raise DataSourceError(
            f"{where} holds the splits {', '.join(splits)}; pick one: {where}:{splits[0]}"
        )
    return files


def _read_parquet(
    files: list[Path], root: Path, mapping: Mapping[str, str | None], n: int | None
) -> list[Sample]:
    samples: list[Sample] = []
    for path in files:
        left = None if n is None else n - len(samples)
        if left is not None and left <= 0:
            break
        names, rows = _parquet_rows(path, left)
        columns = resolve_columns(names, mapping, str(path))
        bases = [path.parent] + ([root] if root != path.parent else [])
        for k, row in enumerate(rows):
            samples.append(row_to_sample(row, columns, len(samples), bases, f"{path} row {k}"))
    return samples


def _read_table_dataset(
    ds: Any, mapping: Mapping[str, str | None], n: int | None, root: Path | None, where: str
) -> list[Sample]:
    """Rows of a ``datasets.Dataset`` from its arrow storage (images undecoded, so an unreadable
    one is reported with its row)."""
    columns = resolve_columns(list(ds.column_names), mapping, where)
    stop = len(ds) if n is None else min(n, len(ds))
    rows = ds.with_format("arrow")[:stop].to_pylist()
    for name, feature in ds.features.items():  # class labels by name, not number
        if type(feature).__name__ == "ClassLabel":
            for row in rows:
                if isinstance(row.get(name), int) and row[name] >= 0:
                    row[name] = feature.int2str(row[name])
    bases = [root] if root is not None else [Path.cwd()]
    return [row_to_sample(row, columns, k, bases, f"{where} row {k}") for k, row in enumerate(rows)]


def _pick_split(dsdict: Any, split: str | None, where: str) -> tuple[Any, str]:
    names = list(dsdict.keys())
    if split is None:
        if len(names) == 1:
            return dsdict[names[0]], names[0]
        raise DataSourceError(
            f"{where} holds the splits {', '.join(names)}; pick one: {where}:{names[0]}"
        )
    if split not in dsdict:
        raise DataSourceError(f"{where} has no split {split!r}; its splits are {', '.join(names)}")
    return dsdict[split], split


def _read_saved(
    folder: Path, split: str | None, mapping: Mapping[str, str | None], n: int | None
) -> list[Sample]:
    datasets = _import_datasets(f"the datasets folder {str(folder)!r}")
    try:
        loaded = datasets.load_from_disk(str(folder))
    except (OSError, ValueError, KeyError) as err:
        raise DataSourceError(f"{folder}: not a readable datasets folder ({err})") from err
    if isinstance(loaded, datasets.DatasetDict):
        loaded, split = _pick_split(loaded, split, str(folder))
    elif split is not None and split != str(loaded.split or ""):
        raise DataSourceError(
            f"{folder} is a single dataset (split {loaded.split!s}), not a DatasetDict; drop "
            f"':{split}'"
        )
    where = f"{folder}" + (f" split {split!r}" if split else "")
    return _read_table_dataset(loaded, mapping, n, folder, where)


def hub_offline() -> str | None:
    """Why the hub cannot be reached, or None: an offline variable is set, or the hub's host does
    not answer a 3-second TCP connect (no retries; skipped behind an HTTP proxy, which the
    direct connect would not use)."""
    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        if os.environ.get(var, "").strip().lower() in _TRUE:
            return f"{var} is set"
    if any(os.environ.get(v) for v in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return None
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    url = urlparse(endpoint)
    host, port = url.hostname or "huggingface.co", url.port or (80 if url.scheme == "http" else 443)
    try:
        socket.create_connection((host, port), timeout=3).close()
    except OSError as err:
        return f"{host} cannot be reached ({err.strerror or err})"
    return None


def is_hub_id(spec: str) -> bool:
    """``org/name`` shaped (no local path prefix)."""
    return bool(re.fullmatch(r"[A-Za-z0-9][\w.-]*/[\w.-]+", spec)) and not spec.endswith(
        (".parquet", ".jsonl", ".json")
    )


def _read_hub(
    repo: str,
    config: str | None,
    split: str | None,
    mapping: Mapping[str, str | None],
    n: int | None,
) -> list[Sample]:
    where = repo + (f":{config}" if config else "")
    datasets = _import_datasets(f"the hub dataset {where!r}")
    reason = hub_offline()
    if reason is not None:
        raise DataSourceError(
            f"{where!r} is no local file or folder, and as a hub dataset id it needs a network "
            f"({reason}); use a local copy: where a network exists, "
            "datasets.load_dataset(...).save_to_disk(folder) (or download its parquet files), "
            "then pass the folder"
        )
    try:
        if split is None:
            loaded = datasets.load_dataset(repo, name=config)
        else:
            loaded = datasets.load_dataset(
                repo, name=config, split=split if n is None else f"{split}[:{n}]"
            )
    except (OSError, ValueError, datasets.exceptions.DatasetsError) as err:
        first = (str(err).strip().splitlines() or [""])[0]
        raise DataSourceError(
            f"the hub dataset {where!r} cannot be loaded ({type(err).__name__}: {first})"
        ) from err
    if split is None:
        loaded, split = _pick_split(loaded, None, where)
    return _read_table_dataset(loaded, mapping, n, None, f"{where} split {split!r}")


def split_spec(spec: str) -> tuple[str, str | None]:
    """``(source, split)`` from ``source`` or ``source:split`` — the suffix counts as a split only
    when the whole spec is no existing path."""
    if os.path.exists(spec) or glob.glob(spec):
        return spec, None
    head, sep, tail = spec.rpartition(":")
    if sep and head and re.fullmatch(r"[\w.-]+", tail) and not re.fullmatch(r"[A-Za-z]", head):
        return head, tail
    return spec, None


def read_dataset(
    source: str | Path | Any,
    *,
    columns: str | Mapping[str, str | None] | None = None,
    split: str | None = None,
    n: int | None = None,
) -> list[Sample]:
    """Samples from a datasets folder, parquet file/folder/glob, hub id, JSONL file or an
    in-memory ``datasets.Dataset`` (see the module docstring).

    Args:
        source: the data; a string may end in ``:split``.
        columns: the role → column mapping (``"question=query,image=img"`` or a dict).
        split: the split of a DatasetDict, a parquet folder or a hub dataset (or ``:split``).
        n: read only the first ``n`` rows.

    Raises:
        DataSourceError: nothing readable at ``source``, an unknown split, or no network for a hub
            id. MissingColumnError: the mapping names an absent column, or no question column.
        ImageError / MissingImageError: an image cell that cannot be decoded (naming the row).
        MissingExtraError: the ``datasets`` package is needed and missing.
        EmptyInputError: no rows. DuplicateSampleError: two rows share an id.
    """
    if n is not None and n < 1:
        raise DataFormatError(f"n must be >= 1, got {n}")
    mapping = parse_columns(columns)
    if not isinstance(source, (str, Path)):
        if not hasattr(source, "with_format"):
            raise TypeError(
                f"source must be a path, a hub id or a datasets.Dataset, got {type(source).__name__}"
            )
        samples = _read_table_dataset(source, mapping, n, None, "dataset")
        return _finish(samples, str(type(source).__name__))
    spec, suffix = split_spec(str(source))
    if suffix is not None and split is not None and suffix != split:
        raise DataSourceError(f"{source!r}: split {suffix!r} in the source and split={split!r}")
    split = split if split is not None else suffix
    path = Path(os.path.expanduser(spec))
    if path.is_file():
        if path.suffix.lower() in (".parquet", ".pq"):
            if split is not None:
                raise DataSourceError(f"{spec} is one parquet file; drop ':{split}'")
            samples = _read_parquet([path], path.parent, mapping, n)
        else:
            if mapping or split is not None:
                raise DataFormatError(
                    f"{spec}: a JSONL file has fixed keys (question, image, answer, id); --columns "
                    "and a split apply to parquet and Hugging Face datasets"
                )
            samples = read_jsonl(path)
            samples = samples[:n] if n else samples
    elif path.is_dir():
        if (path / "dataset_dict.json").is_file() or (path / "state.json").is_file():
            samples = _read_saved(path, split, mapping, n)
        else:
            files = sorted(p for p in path.rglob("*.parquet") if p.is_file())
            if not files:
                raise DataSourceError(
                    f"{spec!r} is a folder, but neither a Hugging Face datasets folder (written by "
                    "save_to_disk: dataset_dict.json or state.json) nor a folder of parquet files"
                )
            samples = _read_parquet(_parquet_files(files, split, spec), path, mapping, n)
    elif glob.has_magic(spec):
        files = sorted(Path(p) for p in glob.glob(os.path.expanduser(spec), recursive=True))
        files = [f for f in files if f.is_file()]
        if not files or any(f.suffix.lower() not in (".parquet", ".pq") for f in files):
            raise DataSourceError(
                f"{spec!r} matches {len(files)} file(s); a pattern must match parquet files only"
            )
        root = Path(os.path.commonpath([f.parent for f in files]))
        samples = _read_parquet(_parquet_files(files, split, spec), root, mapping, n)
    elif is_hub_id(spec.split(":", 1)[0]):
        repo, _, config = spec.partition(":")
        samples = _read_hub(repo, config or None, split, mapping, n)
    else:
        raise DataSourceError(f"no such file or folder: {spec!r} (nor a hub dataset id org/name)")
    return _finish(samples, spec)


def _finish(samples: list[Sample], where: str) -> list[Sample]:
    if not samples:
        raise EmptyInputError(f"{where} holds no rows")
    return ensure_samples(samples)


__all__ = [
    "DEFAULT_COLUMNS",
    "INSTALL_HINT",
    "ROLES",
    "hub_offline",
    "is_hub_id",
    "parse_columns",
    "read_dataset",
    "resolve_columns",
    "row_to_sample",
    "split_spec",
]
