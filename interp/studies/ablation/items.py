"""The items of an ablation: labels (variant, category, group), the variant order, and the
check that every "without the image" condition really removes each item's own image."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from interp.conditions import Condition, condition_sources, prepare
from interp.errors import ConditionError
from interp.reprs import Summary
from interp.samples import Sample, ensure_samples, image_digest

from .errors import ImageShownError, MissingLabelError, UnknownVariantError
from .variants import DEMO_VARIANT_ORDER


def _label(sample: Sample, key: str) -> str | None:
    value = sample.meta.get(key)
    return None if value is None else str(value)


def resolve_variants(
    samples: Sequence[Sample],
    variants: Sequence[str] | None = None,
    *,
    variant_key: str = "variant",
) -> tuple[str, ...]:
    """The variant order: ``variants`` as given (each must occur in the data), else the paper's
    order of the demo wordings (:data:`DEMO_VARIANT_ORDER`) when every label is a demo wording,
    else the labels in order of first appearance.

    Raises:
        MissingLabelError: an item without a ``variant_key`` label.
        UnknownVariantError: a name in ``variants`` that no item carries, a repeated name, or an
            empty list.
    """
    present = list(dict.fromkeys(_labels(samples, variant_key, "variant")))
    if variants is None:
        if set(present) <= set(DEMO_VARIANT_ORDER):
            return tuple(v for v in DEMO_VARIANT_ORDER if v in present)
        return tuple(present)
    order = [str(v) for v in variants]
    if not order:
        raise UnknownVariantError("variants is empty; give at least one variant name, or None")
    repeated = sorted({v for v in order if order.count(v) > 1})
    if repeated:
        raise UnknownVariantError(f"variants {repeated} are listed twice; give each name once")
    unknown = [v for v in order if v not in present]
    if unknown:
        raise UnknownVariantError(
            f"unknown variant name(s) {unknown}: no item has {variant_key}={unknown[0]!r}; the data "
            f"holds {present} (set variant_key= if the wording is under another label)"
        )
    return tuple(order)


def _labels(samples: Sequence[Sample], key: str, what: str) -> list[str]:
    values = [_label(s, key) for s in samples]
    missing = [s.id for s, v in zip(samples, values) if v is None]
    if missing:
        raise MissingLabelError(
            f"{len(missing)} of {len(samples)} items have no {what} label meta[{key!r}] (e.g. "
            f"sample {missing[0]!r}); label every item, pass the label that holds it "
            f"({what}_key=...), or leave those items out (demo data: the worded question types "
            "color, identify, count, position, digit, describe)"
        )
    return [str(v) for v in values]


@dataclass(repr=False)
class Items(Summary):
    """The validated items of an ablation, in generation order (by variant, then as given).

    Attributes:
        samples: the items.
        variants / categories: each item's labels.
        groups: each item's group label (``None`` where absent): items of one group are the
            wordings of one image.
        digests: each item's image digests (decoded pixels).
        order: the variant order.
    """

    samples: list[Sample]
    variants: list[str]
    categories: list[str]
    groups: list[str | None]
    digests: list[frozenset[str]]
    order: tuple[str, ...]

    def _repr_head(self) -> dict[str, Any]:
        return {"n": len(self), "variants": len(set(self.variants))}

    def __len__(self) -> int:
        return len(self.samples)

    @property
    def category_order(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.categories))

    def related(self, i: int, j: int) -> bool:
        """Whether item ``j`` is item ``i``, another wording of its image (same group label), or
        shows one of its images."""
        if i == j:
            return True
        gi, gj = self.groups[i], self.groups[j]
        if gi is not None and gi == gj:
            return True
        return bool(self.digests[i] & self.digests[j])


def select_items(
    samples: Sequence[Sample],
    variants: Sequence[str] | None = None,
    *,
    variant_key: str = "variant",
    category_key: str = "category",
    group_key: str | None = "group",
) -> Items:
    """Validate the items and put them in generation order (by variant in the resolved order,
    then in the order given); items of a variant not in ``variants`` are left out.

    Raises:
        MissingLabelError: an item without a variant or category label, a reference answer or an
            image.
        UnknownVariantError: see :func:`resolve_variants`.
    """
    samples = ensure_samples(samples)
    order = resolve_variants(samples, variants, variant_key=variant_key)
    kept = [s for s in samples if _label(s, variant_key) in order]
    rank = {v: k for k, v in enumerate(order)}
    kept.sort(key=lambda s: rank[str(_label(s, variant_key))])  # stable: given order within
    categories = _labels(kept, category_key, "category")
    no_answer = [s.id for s in kept if s.answer is None or not str(s.answer).strip()]
    if no_answer:
        raise MissingLabelError(
            f"{len(no_answer)} items have no reference answer (e.g. sample {no_answer[0]!r}); "
            "accuracy needs sample.answer on every item"
        )
    no_image = [s.id for s in kept if not s.has_image]
    if no_image:
        raise MissingLabelError(
            f"{len(no_image)} items have no image (e.g. sample {no_image[0]!r}); the ablation "
            "removes the image, so every item needs one"
        )
    digests = [frozenset(image_digest(im, s.id) for im in s.load_images()) for s in kept]
    groups = [_label(s, group_key) if group_key else None for s in kept]
    return Items(
        kept, [str(_label(s, variant_key)) for s in kept], categories, groups, digests, order
    )


def check_without(
    conditions: Sequence[str | Condition],
    items: Items,
    processor: Any = None,
) -> tuple[str, ...]:
    """Check that every "without the image" condition removes each item's own image.

    A condition is refused if it has a question or prefix part (the ablation keeps the question),
    is ``full``, or shows any item one of its own images (compared by decoded pixels) — e.g.
    ``distort:<t>`` (the real image under noise) or a ``swap:`` onto an item with the same picture
    or the same group label (another wording of its image).

    Raises:
        ConditionError: an unknown or malformed condition, one listed twice, or none given.
        ImageShownError: a condition that still shows the image.
    """
    if not conditions:
        raise ConditionError("give at least one condition without the image, e.g. 'blind'")
    out: list[str] = []
    for raw in conditions:
        cond = Condition.parse(raw)
        name = str(cond)
        if name in out:
            raise ConditionError(f"condition {name!r} is listed twice")
        if cond.question is not None or cond.prefix != "kept":
            raise ConditionError(
                f"condition {name!r} changes the question; the ablation compares the same "
                "question with and without the image: give an image part only (blind, "
                "null:black, null:noise, swap:next ...)"
            )
        if cond.kind == "full":
            raise ImageShownError(
                f"condition {name!r} shows the image; 'without the image' needs blind, a null "
                "image (null:black, null:noise ...) or another item's image (swap:next)"
            )
        if cond.uses_image:
            prepared = prepare(items.samples, cond, processor, all_samples=items.samples)
            index = {str(s.id): i for i, s in enumerate(items.samples)}
            shown = []
            for i, (s, p) in enumerate(zip(items.samples, prepared)):
                sources = condition_sources(s, cond, items.samples, processor)
                same_image = any(image_digest(im) in items.digests[i] for im in p.images)
                # a source item of the same group is another wording of this image
                if same_image or any(items.related(i, index[str(o.id)]) for o in sources):
                    shown.append(s.id)
            if shown:
                hint = (
                    "distort keeps the real image under noise; use null:noise for pure noise"
                    if cond.kind == "distort"
                    else "use blind, a null image, or a swap onto items with other pictures"
                )
                raise ImageShownError(
                    f"condition {name!r} still shows {len(shown)} of {len(items)} items their own "
                    f"image or another picture of their group (e.g. sample {shown[0]!r}); {hint}"
                )
        out.append(name)
    return tuple(out)


__all__ = ["Items", "check_without", "resolve_variants", "select_items"]
