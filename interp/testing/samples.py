"""Small sample sets for tests: random images of varied sizes, questions of varied lengths.

Deterministic in their seeds and offline. The varied sizes and lengths matter: batches mix image
sizes (different numbers of image tokens) and prompt lengths (padding), as real data does.
"""

from __future__ import annotations

import numpy as np
from PIL import Image

from ..samples import Sample

QUESTIONS: tuple[str, ...] = (
    "what color is the banana?",
    "how many objects are there?",
    "what shape is the object in the image? answer with one word.",
    "where is the object?",
    "which digit is drawn?",
    "describe the image in detail.",
    "is the object on the left?",
    "what is two plus three?",
    "what color is the sky?",
)
# (width, height) of the images, cycled
SIZES: tuple[tuple[int, int], ...] = (
    (32, 32),
    (48, 40),
    (40, 48),
    (32, 32),
    (64, 32),
    (36, 36),
    (32, 48),
    (48, 48),
    (40, 40),
)
ANSWERS: tuple[str, ...] = ("yellow", "two", "circle")


def random_image(height: int, width: int, seed: int) -> Image.Image:
    """A uniform-noise RGB image, reproducible from ``seed``."""
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (height, width, 3), dtype=np.uint8), "RGB")


SHARED_QUESTIONS: tuple[str, ...] = (
    "What color is the car?",
    "How many dogs are there in the picture?",
    "Is it day?",
)


def shared_media_samples() -> list[Sample]:
    """Six samples for prefix sharing: the three :data:`SHARED_QUESTIONS` on one image, the last
    two on a second (groups of 3 and 2 with suffixes of several lengths: pads in the middle) and
    one image alone (a group of its own)."""
    a, b, c = (random_image(40, 48, seed) for seed in (3, 4, 5))
    out = [Sample(question=q, image=a, id=f"a{i}") for i, q in enumerate(SHARED_QUESTIONS)]
    out += [Sample(question=q, image=b, id=f"b{i}") for i, q in enumerate(SHARED_QUESTIONS[1:])]
    out.append(Sample(question=SHARED_QUESTIONS[0], image=c, id="c"))
    return out


def make_samples(n: int = 9, seed: int = 0) -> list[Sample]:
    """``n`` samples (ids ``s0``, ``s1``, ...) with random images of the varied :data:`SIZES`,
    the :data:`QUESTIONS` and :data:`ANSWERS` cycled."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        w, h = SIZES[i % len(SIZES)]
        image = Image.fromarray(rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8), "RGB")
        out.append(
            Sample(
                question=QUESTIONS[i % len(QUESTIONS)],
                image=image,
                answer=ANSWERS[i % len(ANSWERS)],
                id=f"s{i}",
            )
        )
    return out


__all__ = [
    "ANSWERS",
    "QUESTIONS",
    "SHARED_QUESTIONS",
    "SIZES",
    "make_samples",
    "random_image",
    "shared_media_samples",
]
