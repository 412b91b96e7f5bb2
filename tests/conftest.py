"""Shared fixtures: tiny VLMs of every architecture and a small sample set with varied images."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# Check every jaxtyping annotation (dtype and shape, with dimensions consistent within a call) at
# run time: the import hook decorates the project's functions before they are first imported.
from jaxtyping import install_import_hook

install_import_hook(["interp", "interventions", "probes"], "typechecking.typecheck")

import re
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest
import torch
from jaxtyping import TypeCheckError
from PIL import Image

import interp
from interp.testing import ARCHITECTURES, tiny_vlm

# Tiny models run fastest single-threaded (thread start-up dominates a millisecond forward).
torch.set_num_threads(1)

QUESTIONS = [
    "what color is the banana?",
    "how many objects are there?",
    "what shape is the object in the image? answer with one word.",
    "where is the object?",
    "which digit is drawn?",
    "describe the image in detail.",
    "is the object on the left?",
    "what is two plus three?",
    "what color is the sky?",
]
SIZES = [(32, 32), (48, 40), (40, 48), (32, 32), (64, 32), (36, 36), (32, 48), (48, 48), (40, 40)]


def random_image(height: int, width: int, seed: int) -> Image.Image:
    """A uniform-noise RGB image, reproducible from ``seed``."""
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (height, width, 3), dtype=np.uint8), "RGB")


def make_samples(n: int = 9, seed: int = 0) -> list[interp.Sample]:
    """n samples with random images of varied sizes and questions of varied lengths."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        w, h = SIZES[i % len(SIZES)]
        image = Image.fromarray(rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8), "RGB")
        out.append(
            interp.Sample(
                question=QUESTIONS[i % len(QUESTIONS)],
                image=image,
                answer=["yellow", "two", "circle"][i % 3],
                id=f"s{i}",
            )
        )
    return out


@contextmanager
def refused(*errors: type[BaseException], match: str | None = None) -> Iterator[None]:
    """An input of the wrong type or shape is refused: by the library's own typed error (whose
    message must match ``match``), or — when the suite's runtime type checker sees the wrong
    annotation first — by a ``jaxtyping.TypeCheckError``."""
    try:
        yield
    except TypeCheckError:
        return
    except errors as err:
        if match is not None and not re.search(match, str(err)):
            raise AssertionError(
                f"{type(err).__name__} message {str(err)!r} misses {match!r}"
            ) from err
        return
    raise AssertionError(f"expected {[e.__name__ for e in errors]} (or a TypeCheckError)")


_CACHE: dict[str, interp.VLM] = {}


def get_vlm(arch: str) -> interp.VLM:
    """One tiny VLM per architecture per test session (they are not mutated by the tests)."""
    if arch not in _CACHE:
        _CACHE[arch] = tiny_vlm(arch, seed=0)
    return _CACHE[arch]


@pytest.fixture(params=ARCHITECTURES)
def arch(request) -> str:
    return request.param


@pytest.fixture
def vlm(arch) -> interp.VLM:
    return get_vlm(arch)


@pytest.fixture(scope="session")
def samples() -> list[interp.Sample]:
    return make_samples()
