"""The demo world's output, pinned: a small seeded dump against digests recorded before a refactor.

The two digests below were computed by this file's ``_digests`` on the one-module generator
(``interp/datasets/world.py``, before it became the ``interp.datasets.world`` package), so they
are an independent record of what the world produced, not a value derived from the code under
test. A change to them means the world's samples changed: the trained demo checkpoints, the
notebooks' numbers and every seeded study depend on these exact samples, so such a change must be
deliberate (then recompute the digests and say why in the commit).

Text and labels (ids, questions, answers, ``meta``) depend only on numpy's seeded generator;
pixels also on the float arithmetic of ``interp.datasets.render``; they are checked apart so that
a failure says which one moved.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
from PIL import Image

from interp import Sample
from interp.datasets import QTYPES, demo_world, text_corpus

LABELS_SHA256 = "c5b6b313b0b6f3c7e7d72458ba6fc3d311193ffdcd7bcd985f058b24e4677aed"
PIXELS_SHA256 = "d3a5dcfe37fdfd266268dc8666d29ad456d4a7e5859c4519455f10540a6fdb0c"


def _dump() -> list[Sample]:
    """Every question type in val/test, the training mixture, an opacity override, the text corpus."""
    return [
        *demo_world("test", 3 * len(QTYPES) * 4, seed=0),
        *demo_world("val", 40, seed=2, qtypes=["exist", "conflict", "recall"], start=3),
        *demo_world("train", 60, seed=1, start=11),
        *demo_world("train", 30, seed=4, qtypes=["color", "describe"], counterfactual_share=0.8),
        *demo_world("test", 20, seed=5, qtypes=["color", "letters"], opacity=(0.05, 0.25)),
        *text_corpus(40, seed=3, start=7),
    ]


def _image_bytes(image: object) -> bytes:
    if image is None:
        return b"none"
    if isinstance(image, list):
        return b"list:" + b"|".join(_image_bytes(i) for i in image)
    assert isinstance(image, Image.Image)
    return f"{image.mode}{image.size}".encode() + np.asarray(image).tobytes()


def _digests(samples: list[Sample]) -> tuple[str, str]:
    labels, pixels = hashlib.sha256(), hashlib.sha256()
    for s in samples:
        record = [s.id, s.question, s.answer, s.meta, list(s.meta)]  # meta's key order too
        labels.update(json.dumps(record, sort_keys=True).encode() + b"\n")
        pixels.update(_image_bytes(s.image) + b"\n")
    return labels.hexdigest(), pixels.hexdigest()


def test_samples_match_the_recorded_digests() -> None:
    samples = _dump()
    assert len(samples) == 3 * len(QTYPES) * 4 + 40 + 60 + 30 + 20 + 40
    labels, pixels = _digests(samples)
    assert labels == LABELS_SHA256, "the world's questions, answers or labels changed"
    assert pixels == PIXELS_SHA256, "the world's images changed (labels did not)"
