"""The registered benchmarks, the built-in ones included: look one up by name
(:func:`get_benchmark`, :func:`parse_benchmark_spec`), list them, read one
(:func:`read_benchmark`).

Importing this module imports the modules that register the built-in benchmarks, so the registry
(:mod:`~interp.datasets.benchmarks.registry`, a leaf they import) is complete before any look-up; a benchmark registered
later with :func:`~.registry.register_benchmark` is found as well.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...errors import EmptyInputError
from ...samples import Sample, ensure_samples
from . import coe_sets, drives_sets, other_sets, recall_sets
from .registry import BENCHMARKS, ROOT_ENV, Benchmark, BenchmarkSourceError, Options

BUILT_IN = (coe_sets, drives_sets, other_sets, recall_sets)
"""The modules whose import registers the built-in benchmarks."""


def parse_benchmark_spec(spec: str) -> tuple[str, str | None, str | None] | None:
    """``name[:variant][@copy]`` → ``(name, variant, copy)`` when ``name`` is registered, else
    None (the spec is a file, a folder or a hub id for :func:`interp.read_dataset`)."""
    head, _, copy = spec.partition("@")
    name, _, variant = head.partition(":")
    if name.lower() not in BENCHMARKS:
        return None
    return name.lower(), (variant or None), (copy or None)


def get_benchmark(name: str) -> Benchmark:
    bench = BENCHMARKS.get(name.lower())
    if bench is None:
        raise BenchmarkSourceError(
            f"no benchmark named {name!r}; the registered ones are {', '.join(sorted(BENCHMARKS))}"
        )
    return bench


def read_benchmark(
    name: str,
    root: str | Path | None = None,
    *,
    n: int | None = None,
    seed: int = 0,
    convert: Callable[[str], str] | None = None,
    **extra: Any,
) -> list[Sample]:
    """The samples of a registered benchmark (``name`` may carry ``:variant``, e.g.
    ``"pope:adversarial"``), with its paper's selection and conversion.

    Args:
        root: a local copy (see each benchmark's ``layout``); None: ``$INTERP_DATA_ROOT/<folder>``
            when that exists, else the hub by dataset id (needs a network and ``datasets``).
        n: keep the first ``n`` samples after selection. seed: seeded pairings (the controlled
            baseline's images). convert: an LLM hook for conversions the paper made with a
            language model (VLind-Bench's statements → Yes/No questions).

    Raises:
        BenchmarkSourceError: unknown name or variant, a copy of the wrong layout, no network for
            the hub. BenchmarkNotPublicError: the benchmark is not published (the message says what
            to give). EmptyInputError: nothing left after selection.
    """
    base, _, variant = name.partition(":")
    bench = get_benchmark(base)
    if variant and variant not in bench.variants:
        raise BenchmarkSourceError(
            f"{bench.name!r} has no variant {variant!r}"
            + (f"; its variants are {', '.join(bench.variants)}" if bench.variants else "")
        )
    if n is not None and n < 1:
        raise BenchmarkSourceError(f"n must be >= 1, got {n}")
    path: Path | None = None
    if root is not None:
        path = Path(os.path.expanduser(str(root)))
        if not path.exists():
            raise BenchmarkSourceError(
                f"{bench.name}: no such file or folder {str(path)!r}; {bench.name} reads "
                f"{bench.layout}"
            )
    elif os.environ.get(ROOT_ENV):
        candidate = Path(os.environ[ROOT_ENV]).expanduser() / bench.folder
        path = candidate if candidate.exists() else None
    opts = Options(n=n, seed=seed, variant=variant or None, convert=convert, extra=extra)
    samples = bench.read(path, opts)
    if n is not None:
        samples = samples[:n]
    if not samples:
        raise EmptyInputError(f"{bench.name}: no samples left after the paper's selection")
    for s in samples:
        s.meta.setdefault("benchmark", bench.name)
    return ensure_samples(samples)


def list_benchmarks() -> list[Benchmark]:
    """Every registered benchmark, by name."""
    return [BENCHMARKS[k] for k in sorted(BENCHMARKS)]


__all__ = ["get_benchmark", "list_benchmarks", "parse_benchmark_spec", "read_benchmark"]
