"""Shared fixtures: tiny VLMs of every architecture and a small sample set with varied images."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np
import pytest
import torch
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
