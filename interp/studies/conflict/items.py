"""Evidence sources and conflict items: the sources, the items' validation and the
``without:<source>`` condition (the input without one source), registered when this module is
imported.

Items are :class:`~interp.Sample` objects whose ``meta`` holds each source's label (``Source``
below: the demo world's ``image_label``, ``propositional_label``, ``text_label``), the ``order``
(source names joined by commas, question last) and, for a text source, the ``caption`` exactly as it
stands in the question; image sources appear as ``{image}`` slots in prompt order.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from interp.conditions import register_image_condition
from interp.errors import DataFormatError
from interp.samples import IMAGE_SLOT, Sample

NO_BIAS = "NO_BIAS"
HALLUCINATION = "HALLUCINATION"
Kind = Literal["image", "text"]


@dataclass(frozen=True)
class Source:
    """One evidence source of a conflict item.

    Attributes:
        name: the source's name in labels (``BIAS_<NAME>``) and in ``without:<name>``.
        label_key: the ``meta`` key holding the label this source shows.
        order_name: how ``meta["order"]`` names the source.
        kind: ``"image"`` (an ``{image}`` slot of the question) or ``"text"`` (the ``caption``
            text inside the question).
    """

    name: str
    label_key: str
    order_name: str
    kind: Kind

    @property
    def bias(self) -> str:
        return f"BIAS_{self.name.upper()}"


DEMO_SOURCES: tuple[Source, ...] = (
    Source("image", "image_label", "perceptual", "image"),
    Source("prop_image", "propositional_label", "propositional", "image"),
    Source("text", "text_label", "text", "text"),
)
SOURCES: dict[str, Source] = {s.name: s for s in DEMO_SOURCES}

# the paper's evidence-form conditions, as conditions on the demo world's items
CONFIGURATIONS: dict[str, str] = {
    "PercI+PropI": "full",
    "PercI": "without:prop_image",
    "PropI": "without:image",
}


def register_source(source: Source, *, overwrite: bool = False) -> Source:
    """Make ``source`` known to ``without:<name>`` and to the labelling (e.g. an audio source)."""
    if source.name in SOURCES and not overwrite:
        raise ValueError(f"a source named {source.name!r} exists; pass overwrite=True")
    if not re.fullmatch(r"[a-z][a-z0-9_]*", source.name):
        raise ValueError(f"a source name is lower-case letters, digits and '_': {source.name!r}")
    SOURCES[source.name] = source
    return source


def all_labels(sources: Sequence[Source] = DEMO_SOURCES) -> list[str]:
    """Every response label, single biases first, then pairs, ``NO_BIAS``, ``HALLUCINATION``."""
    names = [s.name.upper() for s in sources]
    pairs = [f"BIAS_{a}_{b}" for i, a in enumerate(names) for b in names[i + 1 :]]
    return [f"BIAS_{n}" for n in names] + pairs + [NO_BIAS, HALLUCINATION]


# -- items ---------------------------------------------------------------------------------------


def item_order(sample: Sample, sources: Sequence[Source] = DEMO_SOURCES) -> list[Source]:
    """The item's sources in prompt order, from ``meta["order"]``.

    Raises:
        DataFormatError: no order, an unknown source name, or a source given twice.
    """
    by_order = {s.order_name: s for s in sources}
    raw = sample.meta.get("order")
    if not isinstance(raw, str) or not raw.strip():
        raise DataFormatError(
            f"sample {sample.id!r}: a conflict item needs meta 'order' (its sources in prompt "
            f"order joined by commas, from {sorted(by_order)})"
        )
    names = [n.strip() for n in raw.split(",")]
    unknown = [n for n in names if n not in by_order]
    if unknown:
        raise DataFormatError(
            f"sample {sample.id!r}: unknown source {unknown[0]!r} in order {raw!r}; the sources "
            f"are {sorted(by_order)}"
        )
    if len(set(names)) != len(names):
        raise DataFormatError(
            f"sample {sample.id!r}: order {raw!r} repeats a source; each source appears once"
        )
    return [by_order[n] for n in names]


def check_items(samples: Sequence[Sample], sources: Sequence[Source] = DEMO_SOURCES) -> None:
    """Validate conflict items before any compute: every source label present, the order valid,
    one ``{image}`` slot per image source in the order, and the caption inside the question.

    Raises:
        DataFormatError: the first item that breaks a rule, naming the sample and the fix.
    """
    for s in samples:
        order = item_order(s, sources)
        for src in order:
            label = s.meta.get(src.label_key)
            if not isinstance(label, str) or not label.strip():
                raise DataFormatError(
                    f"sample {s.id!r}: the {src.name!r} source has no label (meta "
                    f"{src.label_key!r}); every source in its order needs one"
                )
        n_images = sum(src.kind == "image" for src in order)
        if s.question.count(IMAGE_SLOT) != n_images or len(s.images) != n_images:
            raise DataFormatError(
                f"sample {s.id!r}: its order has {n_images} image source(s) but the question has "
                f"{s.question.count(IMAGE_SLOT)} '{IMAGE_SLOT}' slot(s) and {len(s.images)} "
                "image(s); give one slot and one image per image source, in order"
            )
        for src in order:
            caption = s.meta.get("caption")
            if src.kind == "text" and (not isinstance(caption, str) or caption not in s.question):
                raise DataFormatError(
                    f"sample {s.id!r}: the text source needs meta 'caption', the caption text "
                    "exactly as it stands in the question"
                )


def _without_images(sample: Sample, arg: str | None, ctx: Any) -> list[Any] | None:
    order = item_order(sample, list(SOURCES.values()))
    drop = SOURCES[str(arg)]
    images = list(sample.load_images())
    kept = [im for src, im in zip([o for o in order if o.kind == "image"], images) if src != drop]
    return kept or None


def _without_question(text: str, arg: str | None, sample: Sample) -> str:
    order = item_order(sample, list(SOURCES.values()))
    drop = SOURCES[str(arg)]
    if drop not in order:
        raise DataFormatError(f"sample {sample.id!r} has no {drop.name!r} source to remove")
    if drop.kind == "text":
        caption = str(sample.meta.get("caption") or "")
        if not caption or caption not in text:
            raise DataFormatError(f"sample {sample.id!r}: its caption is not in the question")
        out = text.replace(caption, " ", 1)
    else:
        k = [o for o in order if o.kind == "image"].index(drop)
        pieces = text.split(IMAGE_SLOT)
        # join the text before and after the k-th slot: the slot disappears
        out = IMAGE_SLOT.join(pieces[: k + 1]) + " " + IMAGE_SLOT.join(pieces[k + 1 :])
    return re.sub(r"\s+", " ", out).strip()


def _check_source(arg: str | None) -> None:
    if arg not in SOURCES:
        raise ValueError(f"unknown source {arg!r}; sources: {', '.join(SOURCES)}")


register_image_condition(
    "without",
    _without_images,
    check=_check_source,
    usage="without:<source>",
    question=_without_question,
    overwrite=True,
)
