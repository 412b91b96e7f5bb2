"""The benchmark registry, a leaf: each paper's benchmark under one name, read from its
published layout, and the readers' plumbing the benchmark modules share.

A :class:`Benchmark` knows its hub dataset id (and config / split), the local layouts it accepts
and how to turn the published rows into :class:`~interp.Sample` s with the paper's selection and
conversion. The modules of the built-in benchmarks (:mod:`~interp.datasets.benchmarks.coe_sets`, :mod:`~interp.datasets.benchmarks.other_sets`) import
this one and register theirs; :mod:`~interp.datasets.benchmarks.catalog` imports them all and holds the look-ups,
:func:`~.catalog.read_benchmark` the entry point (and ``--data <name>[:variant][@copy]`` on the
command line):

- ``root`` given (a folder, a parquet file or the benchmark's original files): read it, no network;
- no ``root``: the hub by dataset id, through ``datasets`` (imported only then). Offline
  (``HF_HUB_OFFLINE`` / ``HF_DATASETS_OFFLINE`` or the hub unreachable) this raises
  :class:`BenchmarkSourceError` at once, naming the local layout to give instead.

Rows reach the converters as plain dicts, exactly as the published table stores them: an
``Image`` feature as a ``{"bytes": ..., "path": ...}`` struct (arrow / parquet storage), a
``Sequence`` of structs as a dict of lists, missing values as None.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import DataSourceError, EmptyInputError
from ...samples import Sample
from ..tabular import _image_cell, _parquet_files, _parquet_rows, hub_offline

ROOT_ENV = "INTERP_DATA_ROOT"
"""A folder holding local copies of the benchmarks, one sub-folder per benchmark (its
``Benchmark.folder``), used by ``--data <name>`` when no ``@copy`` is given."""


class BenchmarkSourceError(DataSourceError):
    """A benchmark cannot be read: an unknown name, a local copy of the wrong layout, or the hub
    needed without a network (the message names the local layout to use)."""


class BenchmarkNotPublicError(BenchmarkSourceError):
    """The benchmark's data is not published in a form this library can name (the message says
    what the reader expects instead)."""


Judge = Callable[[str, str, Sample], bool]
"""An answer judge: ``(model answer, reference, sample) -> correct``."""


@dataclass
class Options:
    """What a converter may use besides the rows: ``n`` (first rows only, after selection),
    ``seed`` (pairings), ``variant`` (``pope:adversarial``), ``convert`` (an LLM hook for a
    conversion the paper did with a language model)."""

    n: int | None = None
    seed: int = 0
    variant: str | None = None
    convert: Callable[[str], str] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Benchmark:
    """One benchmark.

    Attributes:
        name: the registry name (``--data <name>``).
        paper: the study whose paper uses it (``coe``, ``recall``, ``drives``, ``ablation``,
            ``conflict``, ``decoding``).
        title: the benchmark's name as its paper writes it.
        hub: ``(dataset id, config, split)`` of the published copy, or None when there is none.
        folder: the sub-folder name under ``$INTERP_DATA_ROOT`` / ``--data-root``.
        layout: one line: the local layouts the reader accepts.
        read: ``(root or None, options) -> samples``.
        variants: the accepted ``:variant`` suffixes (empty: none).
        note: selection / conversion in one line, or why it is not public.
        public: False when the data is not published (``read`` then raises with what it expects).
    """

    name: str
    paper: str
    title: str
    hub: tuple[str, str | None, str | None] | None
    folder: str
    layout: str
    read: Callable[[Path | None, Options], list[Sample]]
    variants: tuple[str, ...] = ()
    note: str = ""
    public: bool = True


BENCHMARKS: dict[str, Benchmark] = {}


def register_benchmark(bench: Benchmark, *, overwrite: bool = False) -> Benchmark:
    """Add a benchmark to the registry (``overwrite=True`` to replace one)."""
    if bench.name in BENCHMARKS and not overwrite:
        raise ValueError(f"a benchmark named {bench.name!r} is registered; pass overwrite=True")
    BENCHMARKS[bench.name] = bench
    return bench


# -- rows from a local copy or the hub ---------------------------------------------------------------


def _arrow_rows(ds: Any) -> list[dict[str, Any]]:
    return ds.with_format("arrow")[: len(ds)].to_pylist()


def hub_rows(bench: Benchmark, split: str | None = None) -> list[dict[str, Any]]:
    """Every row of the benchmark's hub copy (``datasets.load_dataset``), images undecoded.

    Raises:
        BenchmarkSourceError: no hub copy, no network (naming the local layout), or a load error.
    """
    if bench.hub is None:
        raise BenchmarkSourceError(
            f"{bench.name} has no hub copy; give a local copy: {bench.layout}"
        )
    repo, config, default_split = bench.hub
    reason = hub_offline()
    if reason is not None:
        raise BenchmarkSourceError(
            f"{bench.name}: the hub dataset {repo!r} needs a network ({reason}); give a local "
            f"copy ({bench.layout}) with --data {bench.name}@DIR, --data-root DIR or "
            f"${ROOT_ENV}/{bench.folder}"
        )
    try:
        import datasets
    except ImportError:
        from ...errors import MissingExtraError

        raise MissingExtraError(
            f"reading {bench.name} from the hub needs 'datasets': pip install 'vlm-interp[data]'"
        ) from None
    try:
        ds = datasets.load_dataset(repo, name=config, split=split or default_split)
    except (OSError, ValueError, datasets.exceptions.DatasetsError) as err:
        raise BenchmarkSourceError(f"{bench.name}: {repo!r} cannot be loaded ({err})") from err
    return _arrow_rows(ds)


def table_rows(
    bench: Benchmark, root: Path | None, split: str | None = None
) -> tuple[list[dict[str, Any]], Path | None]:
    """The rows of a benchmark published as one table: from ``root`` (a parquet file, a folder
    of parquet files — a hub snapshot's ``data/<split>-*.parquet`` — or a ``save_to_disk``
    folder), else the hub. Returns the rows and the folder image paths are relative to."""
    split = split or (bench.hub[2] if bench.hub else None)
    if root is None:
        return hub_rows(bench, split), None
    if root.is_file():
        if root.suffix.lower() not in (".parquet", ".pq"):
            raise BenchmarkSourceError(
                f"{bench.name}: {root} is not a parquet file ({bench.layout})"
            )
        return list(_parquet_rows(root, None)[1]), root.parent
    if (root / "dataset_dict.json").is_file() or (root / "state.json").is_file():
        try:
            import datasets
        except ImportError:
            from ...errors import MissingExtraError

            raise MissingExtraError(
                f"{root} is a datasets folder: pip install 'vlm-interp[data]'"
            ) from None
        loaded = datasets.load_from_disk(str(root))
        if isinstance(loaded, datasets.DatasetDict):
            if split not in loaded:
                raise BenchmarkSourceError(
                    f"{bench.name}: {root} has no split {split!r} (it has {', '.join(loaded)})"
                )
            loaded = loaded[split]
        return _arrow_rows(loaded), root
    files = sorted(p for p in root.rglob("*.parquet") if p.is_file())
    if not files:
        raise BenchmarkSourceError(
            f"{bench.name}: {root} holds no parquet files and no datasets folder; {bench.name} "
            f"reads {bench.layout}"
        )
    shards = [f for f in files if f.name.startswith((f"{split}-", f"{split}.", f"{split}_"))]
    chosen = shards if (split and shards) else _parquet_files(files, None, str(root))
    rows: list[dict[str, Any]] = []
    for f in chosen:
        rows.extend(_parquet_rows(f, None)[1])
    return rows, root


def image_of(value: Any, base: Path | None, where: str) -> Any:
    """One image cell (struct, bytes, path, PIL image) as the library's image value."""
    return _image_cell(value, [base] if base is not None else [Path.cwd()], where)


def require_columns(rows: list[Mapping[str, Any]], columns: tuple[str, ...], what: str) -> None:
    """Every published column the converter reads is present (checked on the first row)."""
    if not rows:
        raise EmptyInputError(f"{what}: no rows")
    missing = [c for c in columns if c not in rows[0]]
    if missing:
        from ...errors import MissingColumnError

        raise MissingColumnError(
            f"{what}: the published layout has the columns {', '.join(columns)}; this copy lacks "
            f"{', '.join(missing)} (it has {', '.join(rows[0])})"
        )


_YES_NO = re.compile(r"\b(yes|no)\b", re.I)


def judge_answer(answer: str, sample: Sample, judge: Judge | None = None) -> bool:
    """Whether a model's answer is right, by the benchmark's answer format
    (``meta["question_type"]``): ``yes/no`` — the first "yes" / "no" word; ``multiple-choice`` —
    the option the answer chooses (its letter or its text,
    :func:`~interp.datasets.formats.extract_choice`); otherwise the normalised answer equals the
    reference (:func:`probes.split.normalize_answer`). ``judge`` replaces the rule — the hook for
    a language-model judge, as the ablation and Tri-PvP papers use.

    Raises:
        ValueError: the sample has no reference answer.
    """
    if sample.answer is None:
        raise ValueError(f"sample {sample.id!r} has no reference answer to judge against")
    if judge is not None:
        return bool(judge(answer, sample.answer, sample))
    kind = sample.meta.get("question_type")
    if kind == "yes/no":
        m = _YES_NO.search(answer)
        return m is not None and m.group(1).lower() == sample.answer.strip().lower()
    if kind == "multiple-choice" and sample.meta.get("options"):
        from ..formats import extract_choice

        return extract_choice(answer, sample.meta["options"]) == sample.answer
    from probes.split import normalize_answer

    return normalize_answer(answer) == normalize_answer(sample.answer)


def take(rows: Iterator[Sample] | list[Sample], n: int | None) -> list[Sample]:
    out = []
    for s in rows:
        out.append(s)
        if n is not None and len(out) >= n:
            break
    return out
