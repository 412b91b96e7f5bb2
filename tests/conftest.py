"""Shared fixtures: tiny VLMs of every architecture, a small sample set with varied images, and a
guard that a command never loads its model. Helpers the tests call (sample builders, references,
error checks) live in :mod:`interp.testing`."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# Check every jaxtyping annotation (dtype and shape, with dimensions consistent within a call) at
# run time: the import hook decorates the project's functions before they are first imported.
from interp.testing.typechecking import install

install()

import pytest
import torch

import interp
import interp.model
from interp.testing import ARCHITECTURES, make_samples, shared_tiny_vlm

# Tiny models run fastest single-threaded (thread start-up dominates a millisecond forward).
torch.set_num_threads(1)
if os.environ.get("PYTEST_XDIST_WORKER"):
    # under pytest-xdist (`make test` runs `-n 2`) each worker holds one core: the processes a test
    # starts (notebook kernels, README blocks, CLI runs) take one thread too
    os.environ["OMP_NUM_THREADS"] = "1"


@pytest.fixture(params=ARCHITECTURES)
def arch(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def vlm(arch: str) -> interp.VLM:
    """The shared tiny model of each architecture (read-only)."""
    return shared_tiny_vlm(arch)


@pytest.fixture(scope="session")
def samples() -> list[interp.Sample]:
    return make_samples()


@pytest.fixture
def no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if the command gets as far as loading the model."""

    def load(*args: object, **kwargs: object) -> None:
        raise AssertionError("the model was loaded: the error should have been found up front")

    monkeypatch.setattr(interp.model, "load", load)
