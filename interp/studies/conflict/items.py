"""Evidence sources and conflict items: the sources, the source sets, the items' validation and
the ``without:<source>`` condition (the input without one source), registered when this module is
imported.

A source names its modality (``kind``): an ``image``, ``audio`` or ``video`` source is one
``{image}`` / ``{audio}`` / ``{video}`` slot of the question (with its input), a ``text`` source is
the ``caption`` text inside the question. Items are :class:`~interp.Sample` objects whose ``meta``
holds each source's label, the ``order`` (the sources' order names joined by commas, in prompt
order; the question comes last) and, with a text source, the ``caption`` exactly as it stands in
the question. The ``only:<source>`` condition keeps one source and removes the others. Two source sets ship (:data:`SOURCE_SETS`):

- ``demo`` (:data:`DEMO_SOURCES`): a perceptual image, a propositional image (the label written in
  an image) and a caption — the demo world's v2 conflict items (order names ``perceptual``,
  ``propositional``, ``text``);
- ``trimodal`` (:data:`TRIMODAL_SOURCES`): an image, an audio clip and a caption, as the paper's
  Tri-PvP items (order names ``image``, ``audio``, ``text``; labels ``image_label``,
  ``audio_label``, ``text_label``); whether each image / audio is perceptual or propositional is
  the item's ``evidence`` (``PercI-PercA`` ... ``PropI-PropA``), not a source of its own.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from interp.conditions import register_image_condition
from interp.errors import DataFormatError
from interp.media import AUDIO_SLOT, VIDEO_SLOT
from interp.samples import IMAGE_SLOT, Sample

NO_BIAS = "NO_BIAS"
HALLUCINATION = "HALLUCINATION"
Kind = Literal["image", "audio", "video", "text"]
KINDS: tuple[str, ...] = ("image", "audio", "video", "text")
SLOTS: dict[str, str] = {"image": IMAGE_SLOT, "audio": AUDIO_SLOT, "video": VIDEO_SLOT}


@dataclass(frozen=True)
class Source:
    """One evidence source of a conflict item.

    Attributes:
        name: the source's name in labels (``BIAS_<NAME>``) and in ``without:<name>``.
        label_key: the ``meta`` key holding the label this source shows.
        order_name: how ``meta["order"]`` names the source.
        kind: its modality: ``"image"``, ``"audio"``, ``"video"`` (one ``{image}`` /
            ``{audio}`` / ``{video}`` slot of the question, with its input) or ``"text"`` (the
            ``caption`` text inside the question).
    """

    name: str
    label_key: str
    order_name: str
    kind: Kind

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"a source's kind is one of {', '.join(KINDS)}, got {self.kind!r}")

    @property
    def bias(self) -> str:
        return f"BIAS_{self.name.upper()}"


DEMO_SOURCES: tuple[Source, ...] = (
    Source("image", "image_label", "perceptual", "image"),
    Source("prop_image", "propositional_label", "propositional", "image"),
    Source("text", "text_label", "text", "text"),
)
TRIMODAL_SOURCES: tuple[Source, ...] = (
    Source("image", "image_label", "image", "image"),
    Source("audio", "audio_label", "audio", "audio"),
    Source("text", "text_label", "text", "text"),
)
VIDEO_SOURCE = Source("video", "video_label", "video", "video")
SOURCE_SETS: dict[str, tuple[Source, ...]] = {"demo": DEMO_SOURCES, "trimodal": TRIMODAL_SOURCES}
# every source name ``without:<name>`` accepts (the first source of a name wins)
SOURCES: dict[str, Source] = {}
for _src in (*DEMO_SOURCES, *TRIMODAL_SOURCES, VIDEO_SOURCE):
    SOURCES.setdefault(_src.name, _src)

# the paper's evidence-form conditions, as conditions on the demo world's v2 items
CONFIGURATIONS: dict[str, str] = {
    "PercI+PropI": "full",
    "PercI": "without:prop_image",
    "PropI": "without:image",
}
# tri-modal items carry their evidence form in meta["evidence"]: one configuration, the full input
TRIMODAL_CONFIGURATIONS: dict[str, str] = {"full": "full"}
EVIDENCE_TYPES: tuple[str, ...] = ("PercI-PercA", "PercI-PropA", "PropI-PercA", "PropI-PropA")


def register_source(source: Source, *, overwrite: bool = False) -> Source:
    """Make ``source`` known to ``without:<name>`` and to the labelling (e.g. a second audio
    source); use it in a source set with :func:`register_source_set`."""
    if source.name in SOURCES and not overwrite:
        raise ValueError(f"a source named {source.name!r} exists; pass overwrite=True")
    if not re.fullmatch(r"[a-z][a-z0-9_]*", source.name):
        raise ValueError(f"a source name is lower-case letters, digits and '_': {source.name!r}")
    SOURCES[source.name] = source
    return source


def register_source_set(
    name: str, sources: Sequence[Source], *, overwrite: bool = False
) -> tuple[Source, ...]:
    """Register a source set (``--sources <name>``; items whose order names all belong to it are
    recognised as its items)."""
    if name in SOURCE_SETS and not overwrite:
        raise ValueError(f"a source set named {name!r} exists; pass overwrite=True")
    names = [s.order_name for s in sources]
    if len(set(names)) != len(names) or len({s.name for s in sources}) != len(names):
        raise ValueError(f"source set {name!r} repeats a source name or order name")
    for s in sources:
        SOURCES.setdefault(s.name, s)
    SOURCE_SETS[name] = tuple(sources)
    return SOURCE_SETS[name]


def all_labels(sources: Sequence[Source] = DEMO_SOURCES) -> list[str]:
    """Every response label, single biases first, then pairs, ``NO_BIAS``, ``HALLUCINATION``
    (for :data:`TRIMODAL_SOURCES` the paper's eight)."""
    names = [s.name.upper() for s in sources]
    pairs = [f"BIAS_{a}_{b}" for i, a in enumerate(names) for b in names[i + 1 :]]
    return [f"BIAS_{n}" for n in names] + pairs + [NO_BIAS, HALLUCINATION]


def default_configurations(sources: Sequence[Source]) -> dict[str, str]:
    """The configurations a source set runs under by default: the demo set's three evidence-form
    conditions, else the full input only."""
    return dict(CONFIGURATIONS if tuple(sources) == DEMO_SOURCES else TRIMODAL_CONFIGURATIONS)


# -- items ---------------------------------------------------------------------------------------


def _order_names(sample: Sample) -> list[str]:
    raw = sample.meta.get("order")
    if not isinstance(raw, str) or not raw.strip():
        return []
    return [n.strip() for n in raw.split(",")]


def item_order(sample: Sample, sources: Sequence[Source] = DEMO_SOURCES) -> list[Source]:
    """The item's sources in prompt order, from ``meta["order"]``.

    Raises:
        DataFormatError: no order, an unknown source name, or a source given twice.
    """
    by_order = {s.order_name: s for s in sources}
    names = _order_names(sample)
    if not names:
        raise DataFormatError(
            f"sample {sample.id!r}: a conflict item needs meta 'order' (its sources in prompt "
            f"order joined by commas, from {sorted(by_order)})"
        )
    raw = sample.meta["order"]
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


def infer_sources(samples: Sequence[Sample]) -> tuple[str, tuple[Source, ...]]:
    """The registered source set every item's order names belong to (``demo`` first).

    Raises:
        DataFormatError: an item without an order, or no set holding every item's sources.
    """
    names: set[str] = set()
    for s in samples:
        order = _order_names(s)
        if not order:
            item_order(s)  # raises the 'needs meta order' error
        names.update(order)
    for set_name, sources in SOURCE_SETS.items():
        if names <= {s.order_name for s in sources}:
            return set_name, sources
    raise DataFormatError(
        f"no source set holds the items' sources {sorted(names)}; the sets are "
        + "; ".join(f"{k}: {', '.join(s.order_name for s in v)}" for k, v in SOURCE_SETS.items())
        + " (register one with register_source_set)"
    )


def source_set(name: str) -> tuple[Source, ...]:
    """A registered source set by name.

    Raises:
        DataFormatError: an unknown name.
    """
    if name not in SOURCE_SETS:
        raise DataFormatError(f"unknown source set {name!r}; use one of {', '.join(SOURCE_SETS)}")
    return SOURCE_SETS[name]


def check_items(samples: Sequence[Sample], sources: Sequence[Source] = DEMO_SOURCES) -> None:
    """Validate conflict items before any compute: every source label present, the order valid,
    one slot and one input per image / audio / video source in the order, and the caption inside
    the question.

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
        for kind, slot in SLOTS.items():
            n = sum(src.kind == kind for src in order)
            inputs = {"image": s.images, "audio": s.audios, "video": s.videos}[kind]
            if s.question.count(slot) != n or len(inputs) != n:
                raise DataFormatError(
                    f"sample {s.id!r}: its order has {n} {kind} source(s) but the question has "
                    f"{s.question.count(slot)} '{slot}' slot(s) and {len(inputs)} {kind} "
                    f"input(s); give one slot and one input per {kind} source, in order"
                )
        if any(src.kind == "text" for src in order):
            caption = s.meta.get("caption")
            if not isinstance(caption, str) or caption not in s.question:
                raise DataFormatError(
                    f"sample {s.id!r}: the text source needs meta 'caption', the caption text "
                    "exactly as it stands in the question"
                )


# -- the without:<source> condition --------------------------------------------------------------


def _item_sources(sample: Sample, name: str) -> list[Source]:
    """The sample's sources in prompt order, read with the first source set that holds all its
    order names and a source named ``name``, else with every known source by order name."""
    names = set(_order_names(sample))
    union: dict[str, Source] = {}
    for sources in (*SOURCE_SETS.values(), tuple(SOURCES.values())):
        for s in sources:
            union.setdefault(s.order_name, s)
        by_order = {s.order_name for s in sources}
        if names and names <= by_order and any(s.name == name for s in sources):
            return item_order(sample, sources)
    return item_order(sample, tuple(union.values()))  # raises a clear error if unknown


def without_source(sample: Sample, name: str) -> Sample:
    """The item without source ``name``: an image / audio / video source loses its slot and its
    input (the other inputs keep their order), a text source its caption text; ``meta["order"]``
    no longer names it. The other sources' slots stay where they were."""
    order = _item_sources(sample, name)
    drop = next((o for o in order if o.name == name), None)
    if drop is None:
        raise DataFormatError(f"sample {sample.id!r} has no {name!r} source to remove")
    text = sample.question
    changes: dict[str, Any] = {}
    if drop.kind == "text":
        caption = str(sample.meta.get("caption") or "")
        if not caption or caption not in text:
            raise DataFormatError(f"sample {sample.id!r}: its caption is not in the question")
        text = text.replace(caption, " ", 1)
    else:
        slot = SLOTS[drop.kind]
        k = [o for o in order if o.kind == drop.kind].index(drop)
        pieces = text.split(slot)
        if len(pieces) - 1 != sum(o.kind == drop.kind for o in order):
            raise DataFormatError(
                f"sample {sample.id!r}: its question has {len(pieces) - 1} '{slot}' slot(s) for "
                f"{sum(o.kind == drop.kind for o in order)} {drop.kind} source(s)"
            )
        # join the text before and after the k-th slot: the slot disappears
        text = slot.join(pieces[: k + 1]) + " " + slot.join(pieces[k + 1 :])
        inputs = {"image": sample.images, "audio": sample.audios, "video": sample.videos}
        changes[drop.kind] = [x for i, x in enumerate(inputs[drop.kind]) if i != k] or None
    kept = ",".join(o.order_name for o in order if o is not drop)
    return replace(
        sample,
        question=re.sub(r"\s+", " ", text).strip(),
        meta={**sample.meta, "order": kept},
        **changes,
    )


def only_source(sample: Sample, name: str) -> Sample:
    """The item with source ``name`` alone: every other source removed as by
    :func:`without_source` (an image / audio / video source's slot and input, a text source's
    caption), the question kept. The amateur that carries one source's pull (condition
    ``only:<source>``)."""
    order = _item_sources(sample, name)
    if not any(o.name == name for o in order):
        raise DataFormatError(f"sample {sample.id!r} has no {name!r} source to keep")
    for other in order:
        if other.name != name:
            sample = without_source(sample, other.name)
    return sample


def _check_source(arg: str | None) -> None:
    if arg not in SOURCES:
        raise ValueError(f"unknown source {arg!r}; sources: {', '.join(SOURCES)}")


def _register_source_part(name: str, rewrite: Callable[[Sample, str], Sample]) -> None:
    """Register ``<name>:<source>``: the sample rewritten by ``rewrite`` (its own images kept)."""
    register_image_condition(
        name,
        lambda sample, arg, ctx: list(sample.load_images()) or None,
        check=_check_source,
        usage=f"{name}:<source>",
        rewrite=lambda sample, arg: rewrite(sample, str(arg)),
        overwrite=True,
    )


_register_source_part("without", without_source)
_register_source_part("only", only_source)
