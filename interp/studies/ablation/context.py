"""In-context examples matched to the variant: which other items are written before each
question (:func:`select_examples`) and the prompt that holds them (:func:`shot_sample`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from interp.conditions import stable_seed
from interp.samples import Sample

from .errors import AblationError, TooFewExamplesError
from .items import Items
from .variants import EXAMPLE_TEMPLATE, SOURCES


def select_examples(
    items: Items,
    k: int,
    source: str = "matched",
    *,
    same_category: bool = True,
    seed: int = 0,
) -> list[list[int]]:
    """Indices of ``k`` in-context examples for every item.

    ``matched``: other items of the same variant; ``mismatched``: items of the other variants
    (a control). With ``same_category`` (default) only items of the same category. Never the item
    itself, another wording of its image (same group label) or an item showing the same picture.
    Each item draws a random order of its eligible examples from a generator seeded by
    ``(seed, source, sample id)`` and takes the first ``k``, so the examples for a smaller k are a
    prefix of those for a larger one.

    Raises:
        AblationError: an unknown source or a negative k.
        TooFewExamplesError: an item with fewer than ``k`` eligible examples.
    """
    if source not in SOURCES:
        raise AblationError(f"unknown example source {source!r}; use one of {SOURCES}")
    if k < 0:
        raise AblationError(f"k must be >= 0, got {k}")
    out: list[list[int]] = []
    for i, s in enumerate(items.samples):
        pool = [
            j
            for j in range(len(items))
            if not items.related(i, j)
            and (items.variants[j] == items.variants[i]) == (source == "matched")
            and (not same_category or items.categories[j] == items.categories[i])
        ]
        if len(pool) < k:
            where = f"variant {items.variants[i]!r}" + (
                f", category {items.categories[i]!r}" if same_category else ""
            )
            raise TooFewExamplesError(
                f"sample {s.id!r} has {len(pool)} eligible {source} in-context examples ({where}, "
                f"other images only) but k = {k} were asked; lower k, add items, or pass "
                "same_category=False"
            )
        rng = np.random.default_rng(stable_seed(f"{seed}:{source}:{s.id}"))
        out.append([pool[int(p)] for p in rng.permutation(len(pool))[:k]])
    return out


def shot_sample(
    sample: Sample, examples: Sequence[Sample], template: str = EXAMPLE_TEMPLATE
) -> Sample:
    """``sample`` with ``examples`` written before its question as text: each example is
    ``template.format(question=..., answer=...)`` (image slots removed from its question), joined
    by spaces. The image, answer, id and labels stay the sample's."""
    shots = [
        template.format(question=" ".join(p for p in ex.text_parts() if p), answer=ex.answer)
        for ex in examples
    ]
    return replace(sample, question=" ".join([*shots, sample.question]))


__all__ = ["select_examples", "shot_sample"]
