"""The ``--data`` option of every command: the cheap checks that run first
(:func:`check_data_files`, before any heavy import) and the samples it names (:func:`load_data`,
every image opened before the model loads).

A spec is ``demo`` / ``demo:<qtypes>`` (the demo world), a paper's benchmark by name
(:mod:`interp.datasets.benchmarks`), a JSONL file (:func:`interp.read_jsonl`), or a parquet file /
folder / glob, a Hugging Face datasets folder or a hub dataset id (:func:`interp.read_dataset`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from .cli import UsageError
from .errors import DataFormatError


def load_data(
    spec: str,
    n: int | None,
    seed: int,
    *,
    default_qtypes: Sequence[str],
    columns: str | None = None,
    keep: Any = None,
) -> list:
    """Samples from a data spec: ``demo`` / ``demo:prior`` (``default_qtypes``), ``demo:general``
    (every vision and vision-independent question type), ``demo:v3`` (the world-v3 audio and
    video types: ``trimodal``, ``hear``, ``motion``), ``demo:<qtype>[,...]`` (any of
    ``interp.datasets.world.ALL_QTYPES``), a JSONL file
    (see :func:`interp.read_jsonl`), or a parquet file / folder / glob, a Hugging Face datasets
    folder or a hub dataset id, optionally ``:split``, read through ``columns`` (see
    :func:`interp.read_dataset`). Every image is opened, so a missing or unreadable file is
    reported before any model is loaded. ``keep`` (samples → samples) picks from a data file's
    samples before their images are opened.

    Raises:
        MissingImageError, ImageError, DataFormatError (MissingColumnError, DataSourceError),
        MissingExtraError, UsageError.
    """
    import glob

    from .datasets.tabular import is_hub_id, read_dataset, split_spec
    from .samples import ensure_samples

    _check_options(spec, n, seed, columns)
    if _is_demo(spec):
        from .datasets import ALL_QTYPES, TEXT_QTYPES, V3_QTYPES, VISION_QTYPES, demo_world

        if spec in ("demo", "demo:prior"):
            qtypes = list(default_qtypes)
        elif spec == "demo:general":
            qtypes = list(VISION_QTYPES) + list(TEXT_QTYPES)
        elif spec == "demo:v3":
            qtypes = list(V3_QTYPES)
        else:
            qtypes = [q for q in spec.split(":", 1)[1].split(",") if q]
            bad = [q for q in qtypes if q not in ALL_QTYPES]
            if bad or not qtypes:
                what = f"unknown demo question types {bad}" if bad else "no question type given"
                raise UsageError(f"--data {spec!r}: {what}; choose from {', '.join(ALL_QTYPES)}")
        return demo_world(split="test", n=n or 600, seed=seed, qtypes=qtypes)
    from .datasets.benchmarks import parse_benchmark_spec, read_benchmark

    bench = parse_benchmark_spec(spec)
    if bench is not None:  # a paper's benchmark: name[:variant][@local copy]
        if columns is not None:
            raise UsageError(f"--columns does not apply to the benchmark {bench[0]!r}")
        name, variant, copy = bench
        samples = read_benchmark(f"{name}:{variant}" if variant else name, copy, n=n, seed=seed)
        samples = keep(samples) if keep is not None else samples
        for s in samples:
            s.load_images()
        return ensure_samples(samples)
    source = split_spec(spec)[0]
    if not (
        os.path.exists(os.path.expanduser(source))
        or glob.has_magic(source)
        or is_hub_id(source.split(":", 1)[0])
    ):
        raise DataFormatError(
            f"--data {_shown(spec)}: no such file or folder; give a JSONL file, a parquet file, "
            "folder or glob, a Hugging Face datasets folder, a hub dataset id (org/name), a "
            "benchmark name (mme, vilp, pope:adversarial, ...), or one of 'demo', "
            "'demo:general', 'demo:<qtype,...>'"
        )
    samples = read_dataset(spec, columns=columns, n=n)
    if keep is not None:
        samples = keep(samples)
    from .media import check_media_files

    for s in samples:
        s.load_images()  # every image opens, before the model is loaded
        check_media_files(s)  # and every audio file's header reads
    return ensure_samples(samples)


def check_data_files(spec: str, n: int | None, seed: int, columns: str | None = None) -> None:
    """The cheap checks of ``--data`` that run first, before any heavy import (torch,
    transformers) and before the options a study checks: a demo spec names known question
    types; any other spec names something that exists; a JSONL file's first ``n`` rows parse,
    and every image, audio and video file they name exists and (images, audio) has a readable
    header. :func:`load_data` opens everything fully later, still before the model loads.

    Raises:
        UsageError, DataFormatError, MissingImageError, ImageError, AudioError, VideoError.
    """
    import glob

    from .media import check_media_files

    _check_options(spec, n, seed, columns)
    if _is_demo(spec):
        if spec not in ("demo", "demo:prior", "demo:general", "demo:v3"):
            from .datasets import ALL_QTYPES

            qtypes = [q for q in spec.split(":", 1)[1].split(",") if q]
            bad = [q for q in qtypes if q not in ALL_QTYPES]
            if bad or not qtypes:
                what = f"unknown demo question types {bad}" if bad else "no question type given"
                raise UsageError(f"--data {spec!r}: {what}; choose from {', '.join(ALL_QTYPES)}")
        return
    from .datasets.tabular import is_hub_id, split_spec

    source = split_spec(spec)[0]
    try:
        exists = os.path.exists(os.path.expanduser(source))
    except ValueError:  # a NUL byte
        exists = False
    if not exists:
        from .datasets.benchmarks import parse_benchmark_spec

        if parse_benchmark_spec(spec) is not None:  # a paper's benchmark: read_benchmark checks it
            return
    if not (exists or glob.has_magic(source) or is_hub_id(source.split(":", 1)[0])):
        raise DataFormatError(
            f"--data {_shown(spec)}: no such file or folder; give a JSONL file, a parquet file, "
            "folder or glob, a Hugging Face datasets folder, a hub dataset id (org/name), a "
            "benchmark name (mme, vilp, pope:adversarial, ...), or one of 'demo', "
            "'demo:general', 'demo:<qtype,...>'"
        )
    if exists and os.path.isfile(source) and source.lower().endswith(".jsonl"):
        from .samples import read_jsonl

        samples = read_jsonl(source)
        for s in samples[:n] if n is not None else samples:
            check_media_files(s)


def _is_demo(spec: str) -> bool:
    return spec == "demo" or spec.startswith("demo:")


def _check_options(spec: str, n: int | None, seed: int, columns: str | None) -> None:
    """The options ``load_data`` and ``check_data_files`` both refuse, in the same order."""
    if n is not None and n < 1:
        raise UsageError(f"--n must be >= 1, got {n}")
    if seed < 0:
        raise UsageError(f"--seed must be >= 0, got {seed}")
    if _is_demo(spec) and columns is not None:
        raise UsageError("--columns applies to parquet and Hugging Face datasets, not the demo")


def _shown(text: str) -> str:
    from .media import shown

    return shown(text)


__all__ = ["check_data_files", "load_data"]
