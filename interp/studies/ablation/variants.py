"""The paper's four question variants, the demo wordings that stand in for them, and the
study's defaults. Plain data with no heavy imports: the command line reads its defaults here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .errors import UnknownVariantError


@dataclass(frozen=True)
class PaperVariant:
    """One of the paper's four question variants and the demo wording that stands in for it.

    Attributes:
        paper: the paper's name of the variant.
        construction: how the paper writes it.
        demo: the demo world's wording (``meta["variant"]``).
        example: a demo colour question in that wording.
        leaks: what the demo wording gives a reader without the image.
    """

    paper: str
    construction: str
    demo: str
    example: str
    leaks: str


PAPER_VARIANTS: tuple[PaperVariant, ...] = (
    PaperVariant(
        "question-guided",
        "the source question paraphrased into a harder, more image-dependent one (base QA)",
        "plain",
        "what colour is the heart ?",
        "names the object (its colour prior) or offers the two options",
    ),
    PaperVariant(
        "sub-question-guided",
        "perception sub-questions generated in one pass and fused into the question",
        "polite",
        "please tell me the colour of the heart .",
        "the same content as plain, reworded",
    ),
    PaperVariant(
        "multi-signal",
        "sub-questions elicited turn by turn in a dialogue, fused with the source question",
        "terse",
        "colour ?",
        "the question type only",
    ),
    PaperVariant(
        "vision-anchored",
        "written from the image alone, with no text context (leaks the least)",
        "anchored",
        "what colour is the object in the image ?",
        "the question type only; refers to the object in the image",
    ),
)
"""The paper's variants, from the one that leaks the most text to the image-anchored one."""

DEMO_VARIANT_ORDER: tuple[str, ...] = tuple(v.demo for v in PAPER_VARIANTS)
"""The demo wordings in the paper's order: ``plain``, ``polite``, ``terse``, ``anchored``."""

DEMO_VARIANT_NAMES: dict[str, str] = {v.demo: f"{v.demo} ({v.paper})" for v in PAPER_VARIANTS}
DEFAULT_CONDITIONS: tuple[str, ...] = ("blind", "null:black", "null:noise", "swap:next")
ALL = "all"
EXAMPLE_TEMPLATE = "{question} {answer} ."
SOURCES: tuple[str, ...] = ("matched", "mismatched")


def _variant_names(order: Sequence[str], names: Mapping[str, str] | None) -> dict[str, str]:
    if names is None:
        return {v: DEMO_VARIANT_NAMES.get(v, v) for v in order}
    unknown = [k for k in names if k not in order]
    if unknown:
        raise UnknownVariantError(
            f"variant_names names variant(s) {unknown} that are not in the ablation {list(order)}"
        )
    return {v: str(names.get(v, v)) for v in order}


__all__ = [
    "ALL",
    "DEFAULT_CONDITIONS",
    "DEMO_VARIANT_NAMES",
    "DEMO_VARIANT_ORDER",
    "EXAMPLE_TEMPLATE",
    "PAPER_VARIANTS",
    "SOURCES",
    "PaperVariant",
]
