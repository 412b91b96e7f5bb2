"""Recall items: one entity image with one fact, asked with a textual and a visual reference;
built from samples labelled like the demo world's reference questions; family and trivial-image
checks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from interp.conditions import Condition, stable_seed
from interp.errors import EmptyInputError, RecallError, UnknownFamilyError
from interp.samples import Sample

from .settings import DEMO_IDENTIFY, SETTINGS, TRIVIAL


@dataclass(frozen=True)
class RecallItem:
    """One entity image with one fact about the entity, asked with a textual and a visual
    reference.

    Attributes:
        id: unique item id.
        image: the entity image (anything :class:`interp.Sample` accepts).
        textual: the question that names the entity ("what is the banana known for ?").
        visual: the question that refers to the image ("what is the object in the image known
            for ?").
        answer: the gold answer.
        family: the reference family (the paper's dataset: the demo world's ``facts``,
            ``arithmetic``, ``words``).
        entity: the entity's name, for the identification filter (None: not filtered on it).
        identify: the question asking what the image shows (None: no identification filter).
        meta: free labels (the demo world's visual-reference sample ``meta``: ``linked`` ...).
    """

    id: str
    image: Any
    textual: str
    visual: str
    answer: str
    family: str
    entity: str | None = None
    identify: str | None = None
    meta: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def pair(self) -> str:
        """The question-answer pair the item instantiates (family, entity, visual question): the
        paper pairs one QA pair with several images, so pairs are the unit of grouped CV."""
        return f"{self.family}|{self.entity}|{self.visual}"

    def sample(self, setting: str) -> Sample:
        """The item as an :class:`interp.Sample`: ``"visual"`` (visual question), ``"full_info"``
        (textual question; the Text-Only inputs are this sample under a trivial condition) or
        ``"identify"`` (the identification question)."""
        question = {"visual": self.visual, "full_info": self.textual, "identify": self.identify}
        if setting not in question:
            raise RecallError(f"unknown setting {setting!r}; use visual, full_info or identify")
        text = question[setting]
        if text is None:
            raise RecallError(f"item {self.id!r} has no identification question")
        target = self.entity if setting == "identify" else self.answer
        meta = {"item": self.id, "family": self.family, "setting": setting}
        return Sample(text, self.image, target, f"{self.id}/{setting}", meta)


def _meta(sample: Sample, key: str) -> Any:
    if key not in sample.meta or sample.meta[key] is None:
        raise RecallError(
            f"sample {sample.id!r} has no {key!r} label; recall items are built from samples "
            "labelled group (one per item), setting (text_only / full_info / visual) and family, "
            "as demo_world(qtypes=['recall', 'digit_arith', 'letters']) makes them, or give "
            "RecallItem objects"
        )
    return sample.meta[key]


def recall_items(
    samples: Sequence[Sample],
    *,
    families: Sequence[str] | None = None,
    identify: Mapping[str, str] | None = DEMO_IDENTIFY,
) -> list[RecallItem]:
    """Recall items from samples labelled like the demo world's reference questions.

    Samples sharing ``meta["group"]`` form one item: the ``visual`` sample gives the visual
    question, the entity image and the item's ``meta``; the ``full_info`` (or ``text_only``)
    sample gives the textual question. ``meta["family"]`` names the family, ``meta["entity"]`` the
    entity; the identification question is the visual sample's ``meta["identify"]`` if it has
    one, else ``identify[family]`` (``identify=None``: no identification filter).

    Args:
        families: keep these families only (None: all, in order of appearance).

    Raises:
        EmptyInputError: no samples.
        RecallError: a sample lacks a label, a group lacks its visual or textual question, or its
            samples disagree on the answer, family or entity.
        UnknownFamilyError: a family in ``families`` that the samples do not hold.
    """
    if not samples:
        raise EmptyInputError("no samples were given to build recall items from")
    groups: dict[str, dict[str, Sample]] = {}
    for s in samples:
        setting = _meta(s, "setting")
        if setting not in SETTINGS:
            raise RecallError(
                f"sample {s.id!r}: setting {setting!r} is not one of {', '.join(SETTINGS)}"
            )
        group = groups.setdefault(str(_meta(s, "group")), {})
        if setting in group:
            raise RecallError(
                f"group {_meta(s, 'group')!r} has two {setting!r} samples ({group[setting].id!r}, "
                f"{s.id!r}); one item holds one sample per setting"
            )
        group[setting] = s
    items: list[RecallItem] = []
    for gid, group in groups.items():
        visual = group.get("visual")
        textual = group.get("full_info") or group.get("text_only")
        if visual is None or textual is None:
            missing = "visual" if visual is None else "full_info or text_only"
            raise RecallError(
                f"group {gid!r} has no {missing} sample, so it is not a whole item (demo_world "
                "cuts the last group short when n is not a multiple of 3: ask for a multiple of 3)"
            )
        for key in ("family", "answer", "entity"):
            values = {str(s.answer if key == "answer" else s.meta.get(key)) for s in group.values()}
            if len(values) > 1:
                raise RecallError(f"the samples of group {gid!r} disagree on {key}: {values}")
        if visual.image is None:
            raise RecallError(f"sample {visual.id!r}: a visual-reference item needs its image")
        if not visual.answer:
            raise RecallError(f"sample {visual.id!r} has no answer; recall needs a gold answer")
        family = str(_meta(visual, "family"))
        entity = visual.meta.get("entity")
        items.append(
            RecallItem(
                id=gid,
                image=visual.image,
                textual=textual.question,
                visual=visual.question,
                answer=str(visual.answer),
                family=family,
                entity=None if entity is None else str(entity),
                identify=_identify_question(visual, family, entity, identify),
                meta=dict(visual.meta),
            )
        )
    return select_families(items, families)


def _identify_question(
    visual: Sample, family: str, entity: Any, identify: Mapping[str, str] | None
) -> str | None:
    """The item's identification question: the sample's own ``identify`` label, else the family's
    entry of ``identify``; None without an entity or with ``identify=None`` (no filter)."""
    if identify is None or entity is None:
        return None
    own = visual.meta.get("identify")
    return str(own) if own else identify.get(family)


def families_of(items: Sequence[RecallItem]) -> list[str]:
    """The families of ``items`` in order of first appearance."""
    return list(dict.fromkeys(item.family for item in items))


def check_families(available: Sequence[str], families: Sequence[str] | str | None) -> list[str]:
    """``families`` (None: all available) after checking each exists.

    Raises:
        UnknownFamilyError: a name the data does not hold (the message lists those it does).
        RecallError: an empty selection or a family named twice.
    """
    if families is None:
        return list(available)
    wanted = [families] if isinstance(families, str) else list(families)
    if not wanted:
        raise RecallError("families is empty; name at least one (or None for all)")
    unknown = [f for f in wanted if f not in available]
    if unknown:
        raise UnknownFamilyError(
            f"unknown famil{'ies' if len(unknown) > 1 else 'y'} {', '.join(map(repr, unknown))}; "
            f"the data holds: {', '.join(available) or '(none)'}"
        )
    if len(set(wanted)) != len(wanted):
        raise RecallError(f"families {wanted} name a family twice")
    return wanted


def select_families(
    items: Sequence[RecallItem], families: Sequence[str] | str | None
) -> list[RecallItem]:
    """The items of ``families`` (None: all). Raises UnknownFamilyError for a missing family."""
    keep = set(check_families(families_of(items), families))
    return [item for item in items if item.family in keep]


def check_trivial(trivial: Sequence[str]) -> tuple[str, ...]:
    """The trivial-image conditions, parsed and checked: each must replace or remove the image
    (``null:*`` or ``blind``) and keep the question.

    Raises:
        RecallError: an empty list, a repeated condition, or one that shows the real image or
            changes the question.
        ConditionError: a condition that does not parse.
    """
    if isinstance(trivial, str) or not trivial:
        raise RecallError(
            f"trivial must be a non-empty list of conditions, e.g. {list(TRIVIAL)}; got {trivial!r}"
        )
    out = []
    for text in trivial:
        cond = Condition.parse(text)
        if cond.kind not in ("null", "blind") or cond.question is not None or cond.prefix != "kept":
            raise RecallError(
                f"trivial condition {str(cond)!r} is not a trivial image: use null:black, "
                "null:white, null:noise, null:mean or blind (the question must stay)"
            )
        out.append(str(cond))
    if len(set(out)) != len(out):
        raise RecallError(f"trivial conditions {out} name a condition twice")
    return tuple(out)


MC_LABELS: tuple[str, ...] = ("A", "B", "C", "D")
MC_TEMPLATE = "{question} {options}"
"""The multiple-choice prompt: the question, then the options as ``(A) x (B) y (C) z (D) w``."""


def multiple_choice(
    items: Sequence[RecallItem],
    *,
    labels: Sequence[str] = MC_LABELS,
    template: str = MC_TEMPLATE,
    seed: int = 0,
) -> list[RecallItem]:
    """The paper's multiple-choice conversion (Sec. 5, Fig. 4): each question gets
    ``len(labels)`` options (four by default, as the paper) and its answer becomes the label of
    the correct option, so the first generated token — the label — decides correctness.

    The paper has an LLM write three plausible wrong options per question; here they are other
    answers of the same family (distinct from the gold answer and each other), drawn with a
    generator seeded by ``seed`` and the item id, and the gold option's place is drawn the same
    way. Both the textual and the visual question get the same options in the same order;
    ``meta`` records ``options``, ``correct_option`` and ``format = "multiple_choice"``. Score
    the converted runs with ``metric="exact"`` (a bare label).

    Raises:
        RecallError: fewer than ``len(labels)`` distinct answers in a family, fewer than two
            labels, or a template without ``{question}`` and ``{options}``.
    """
    labels = [str(lab) for lab in labels]
    if len(labels) < 2 or len(set(labels)) != len(labels):
        raise RecallError(f"labels must be at least two distinct option labels, got {labels}")
    if "{question}" not in template or "{options}" not in template:
        raise RecallError("template must contain {question} and {options}")
    pools: dict[str, list[str]] = {}
    for item in items:
        pool = pools.setdefault(item.family, [])
        if item.answer not in pool:
            pool.append(item.answer)
    for family, pool in pools.items():
        if len(pool) < len(labels):
            raise RecallError(
                f"family {family!r} has {len(pool)} distinct answers, too few for "
                f"{len(labels)} options; pass fewer labels or more items"
            )
    out = []
    for item in items:
        rng = np.random.default_rng([seed, stable_seed(item.id)])
        others = [a for a in pools[item.family] if a != item.answer]
        picked = [others[i] for i in rng.choice(len(others), len(labels) - 1, replace=False)]
        where = int(rng.integers(len(labels)))
        options = picked[:where] + [item.answer] + picked[where:]
        shown = " ".join(f"({lab}) {opt}" for lab, opt in zip(labels, options))

        def ask(question: str, shown: str = shown) -> str:
            return template.format(question=question, options=shown)

        out.append(
            replace(
                item,
                textual=ask(item.textual),
                visual=ask(item.visual),
                answer=labels[where],
                meta={
                    **item.meta,
                    "options": options,
                    "correct_option": item.answer,
                    "format": "multiple_choice",
                },
            )
        )
    return out
