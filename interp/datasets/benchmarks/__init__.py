"""The papers' benchmarks as data sources: ``interp.read_benchmark("mme")``, ``--data mme``.

:mod:`~interp.datasets.benchmarks.registry` holds the registry and the readers' plumbing (local copy or hub), a leaf;
:mod:`~interp.datasets.benchmarks.coe_sets` the chain-of-embedding paper's six benchmarks and its controlled baseline;
:mod:`~interp.datasets.benchmarks.recall_sets` the recall paper's CIFAR-100, Food-101, Landmarks, MNIST and OK-VQA;
:mod:`~interp.datasets.benchmarks.drives_sets` the drives paper's LLaVA-Video-178K, MiraData and VLMBias;
:mod:`~interp.datasets.benchmarks.other_sets` POPE, MAVIS and the benchmarks that are not published (reading them says what
to give instead); :mod:`~interp.datasets.benchmarks.catalog` the look-ups over all of them (it imports the built-in sets).
``tests/fixtures/benchmarks/`` holds each published layout with its source.
"""

from __future__ import annotations

from .catalog import get_benchmark, list_benchmarks, parse_benchmark_spec, read_benchmark
from .registry import (
    BENCHMARKS,
    ROOT_ENV,
    Benchmark,
    BenchmarkNotPublicError,
    BenchmarkSourceError,
    Options,
    judge_answer,
    register_benchmark,
)

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
