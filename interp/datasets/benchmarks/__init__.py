"""The papers' benchmarks as data sources: ``interp.read_benchmark("mme")``, ``--data mme``.

:mod:`.registry` holds the registry and the readers' plumbing (local copy or hub);
:mod:`.coe_sets` the chain-of-embedding paper's six benchmarks and its controlled baseline;
:mod:`.recall_sets` the recall paper's CIFAR-100, Food-101, Landmarks, MNIST and OK-VQA;
:mod:`.drives_sets` the drives paper's LLaVA-Video-178K, MiraData and VLMBias;
:mod:`.other_sets` POPE, MAVIS and the benchmarks that are not published (reading them says what
to give instead). ``tests/fixtures/benchmarks/`` holds each published layout with its source.
"""

from __future__ import annotations

from .registry import (
    BENCHMARKS,
    ROOT_ENV,
    Benchmark,
    BenchmarkNotPublicError,
    BenchmarkSourceError,
    Options,
    get_benchmark,
    judge_answer,
    parse_benchmark_spec,
    read_benchmark,
    register_benchmark,
)

_LOADED = False


def _load_all() -> None:
    """Import the modules that register the built-in benchmarks (once)."""
    global _LOADED
    if not _LOADED:
        from . import coe_sets, drives_sets, other_sets, recall_sets  # noqa: F401

        _LOADED = True


def list_benchmarks() -> list[Benchmark]:
    """Every registered benchmark, by name."""
    _load_all()
    return [BENCHMARKS[k] for k in sorted(BENCHMARKS)]


__all__ = [
    "BENCHMARKS",
    "ROOT_ENV",
    "Benchmark",
    "BenchmarkNotPublicError",
    "BenchmarkSourceError",
    "Options",
    "get_benchmark",
    "judge_answer",
    "list_benchmarks",
    "parse_benchmark_spec",
    "read_benchmark",
    "register_benchmark",
]
