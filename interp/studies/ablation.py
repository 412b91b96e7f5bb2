"""No-image ablation across question wordings: is the model answering from the image or the text?

From Singla, Garg, Singh and Chopra, *视觉语言模型是在“看”还是在“猜”？通过措辞控制的基准测试衡量并减少对文本
先验的依赖* (roughly: "Are vision-language models looking or guessing? Measuring and reducing text-prior
reliance with a wording-controlled benchmark", arXiv:2606.10400). The paper fixes the images and
varies only the wording of the question — four variants per image that leak more or less of the
answer — and removes the image: on the same items, accuracy **with** the image (``full``) vs
**without** it, per variant and per reasoning category.

What this module measures, for items ``i`` of a cell (a variant, a category, or both):

- ``acc(c) = (1/n) Σ_i judge(answer_i(c), sample_i)`` under the image condition ``c``: ``full``, and
  every "without the image" condition side by side (``blind``: the same prompt with no image;
  ``null:black`` / ``null:noise``: a trivial image; ``swap:next``: the image of the next item *of the
  same wording*, i.e. another image — a mismatched image);
- the **drop** ``acc(full) − acc(c)`` on the same items, with a paired bootstrap interval;
- **agreement** ``(1/n) Σ_i [norm(answer_i(full)) = norm(answer_i(c))]``: how often the model gives
  the same answer without the image (``norm`` = :func:`probes.text.normalize_text`);
- the **text-only baseline** (:func:`text_only_baseline`): what the question text alone gives, with
  no model — the paper's level that no-image accuracy "falls to";
- **in-context examples matched to the variant** (:func:`in_context`): k question-answer pairs of
  *other* items of the same variant (and category) written before the question — text-only examples,
  their images are not shown — and how much accuracy they recover.

Every rate comes with a percentile-bootstrap interval (:func:`probes.stats.estimate`, the same seed
for every cell). Answers are matched by a replaceable **judge** ``judge(prediction, sample) -> bool``
(the paper uses an LLM judge, Qwen3-14B); the default is the normalised two-way inclusion match of
:mod:`probes.text`, which contains the normalised exact match (:func:`make_judge`).

The paper's variants and the demo world's wordings (``sample.meta["variant"]``), from the one whose
text leaks the most to the image-anchored one (:data:`PAPER_VARIANTS`, :data:`DEMO_VARIANT_ORDER`):

====================================  ============  =============================================
paper variant (how it is written)     demo          demo example (colour) — what it leaks
====================================  ============  =============================================
question-guided: the source question  ``plain``     ``what colour is the heart ?`` — names the
paraphrased (base QA)                               object (its colour prior) or offers two options
sub-question-guided: perception       ``polite``    ``please tell me the colour of the heart .``
sub-questions fused in one pass                     — the same content reworded
multi-signal: sub-questions elicited  ``terse``     ``colour ?`` — the question type only
turn by turn (dialogue-guided)
vision-anchored: written from the     ``anchored``  ``what colour is the object in the image ?``
image alone                                         — refers only to the image
====================================  ============  =============================================

The demo world has two leak levels, not four: ``plain`` and ``polite`` name the object (colour,
description) or offer the two options (identify, count, position, digit), ``terse`` and
``anchored`` name nothing. ``anchored`` is the one written with reference to the image only, so it
takes the vision-anchored slot; ``terse`` takes the dialogue-guided slot by elimination. The
order within each level is a convention, not a measured ranking. For other data, pass your own
labels and order (``variants=[...]``, ``variant_key=``, ``variant_names=``).

Entry points: :func:`no_image_ablation` (→ :class:`Ablation`), :func:`in_context` (→
:class:`InContext`), :func:`text_only_baseline`, :func:`make_judge`; figures
:func:`plot_main_table`, :func:`plot_ablation`, :func:`plot_categories`, :func:`plot_in_context`;
the command ``interp ablate`` (:func:`register`).
"""

from __future__ import annotations

import argparse
import warnings
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from jaxtyping import Bool, Float

from interp.cli import (
    UsageError,
    add_common_arguments,
    check_common_arguments,
    check_model,
    check_output_dir,
    load_data,
    write_summary,
)
from interp.conditions import Condition, condition_sources, prepare, stable_seed
from interp.errors import ConditionError, InterpError, TooFewSamplesError
from interp.samples import Sample, ensure_samples, image_digest
from probes.stats import estimate
from probes.text import exact_match, inclusion_match, normalize_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from interp.model import VLM


# -- errors ----------------------------------------------------------------------------------------


class AblationError(InterpError, ValueError):
    """The no-image ablation cannot run on this input as asked (raised before any compute)."""


class UnknownVariantError(AblationError):
    """A variant name that no item carries (the message lists the ones the data holds)."""


class MissingLabelError(AblationError):
    """An item lacks what the ablation needs: a variant or category label, a reference answer, or
    an image to remove."""


class TooFewExamplesError(AblationError, TooFewSamplesError):
    """An item has fewer eligible in-context examples than the k asked for."""


class ImageShownError(ConditionError):
    """A condition given as "without the image" still shows some item its own image (``full``,
    ``distort:<t>``, or ``swap:`` onto an item with the same picture)."""


class JudgeError(AblationError):
    """The judge is not callable or returned something other than a bool."""


# -- variants --------------------------------------------------------------------------------------


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


def variants_frame() -> pd.DataFrame:
    """:data:`PAPER_VARIANTS` as a table (one row per variant, in the paper's order)."""
    return pd.DataFrame([vars(v) for v in PAPER_VARIANTS])


# -- the judge -------------------------------------------------------------------------------------

Judge = Callable[[str, Sample], bool]


def make_judge(mode: str = "inclusion", *, whole_words: bool = True) -> Judge:
    """A judge ``judge(prediction, sample) -> bool`` against ``sample.answer``.

    - ``"exact"``: :func:`probes.text.exact_match` — ``norm(p) = norm(a)``;
    - ``"inclusion"`` (default): exact **or** two-way inclusion — ``norm(p) ⊂ norm(a)`` or
      ``norm(a) ⊂ norm(p)`` (:func:`probes.text.inclusion_match`; an exact match is included), on
      whole words unless ``whole_words=False`` (``"2"`` does not match inside ``"12"``).

    ``norm`` is :func:`probes.text.normalize_text` (lower case, no punctuation or articles). Any
    function of the same signature — an LLM judge — can be passed instead.
    """
    if mode == "exact":

        def judge(prediction: str, sample: Sample) -> bool:
            return exact_match(prediction, str(sample.answer))

    elif mode == "inclusion":

        def judge(prediction: str, sample: Sample) -> bool:
            answer = str(sample.answer)
            return exact_match(prediction, answer) or inclusion_match(
                prediction, answer, whole_words=whole_words
            )

    else:
        raise JudgeError(f"unknown judge mode {mode!r}; use 'exact' or 'inclusion'")
    judge.__name__ = f"{mode}_match" + ("" if whole_words or mode == "exact" else "_chars")
    return judge


default_judge: Judge = make_judge("inclusion")
exact_judge: Judge = make_judge("exact")


def _judge_name(judge: Judge) -> str:
    return getattr(judge, "__name__", type(judge).__name__)


def _check_judge(judge: Any) -> Judge:
    if not callable(judge):
        raise JudgeError(
            f"judge must be a function judge(prediction, sample) -> bool, got {type(judge).__name__}"
        )
    return judge


def _judged(judge: Judge, prediction: str, sample: Sample) -> bool:
    verdict = judge(prediction, sample)
    if not isinstance(verdict, (bool, np.bool_)):
        raise JudgeError(
            f"the judge {_judge_name(judge)} returned {verdict!r} ({type(verdict).__name__}) for "
            f"sample {sample.id!r}; a judge returns True or False"
        )
    return bool(verdict)


# -- items -----------------------------------------------------------------------------------------


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


@dataclass
class Items:
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


# -- statistics ------------------------------------------------------------------------------------


def _mean(x: Float[np.ndarray, " n"]) -> float:
    return float(np.mean(x))


def _difference(a: Float[np.ndarray, " n"], b: Float[np.ndarray, " n"]) -> float:
    return float(np.mean(a) - np.mean(b))


def rate(
    x: Float[np.ndarray, " n"] | Bool[np.ndarray, " n"], *, ci: float, n_boot: int, seed: int
) -> tuple[float, float, float]:
    """``mean(x)`` with its percentile-bootstrap interval (:func:`probes.stats.estimate`);
    ``(value, NaN, NaN)`` for a single item, all NaN for none."""
    x = np.asarray(x, dtype=float)
    if len(x) == 0:
        return (np.nan, np.nan, np.nan)
    if len(x) < 2:
        return (float(x.mean()), np.nan, np.nan)
    e = estimate(_mean, x, ci=ci, n_boot=n_boot, seed=seed)
    return (e.value, e.low, e.high)


def paired_difference(
    a: Float[np.ndarray, " n"] | Bool[np.ndarray, " n"],
    b: Float[np.ndarray, " n"] | Bool[np.ndarray, " n"],
    *,
    ci: float,
    n_boot: int,
    seed: int,
) -> tuple[float, float, float]:
    """``mean(a) − mean(b)`` on the same items, with a paired bootstrap interval (each resample
    draws items, keeping ``a_i`` and ``b_i`` together)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) == 0:
        return (np.nan, np.nan, np.nan)
    if len(a) < 2:
        return (float(a.mean() - b.mean()), np.nan, np.nan)
    e = estimate(_difference, a, b, ci=ci, n_boot=n_boot, seed=seed)
    return (e.value, e.low, e.high)


# -- the text-only baseline ------------------------------------------------------------------------


def text_only_baseline(
    items: Items,
    judge: Judge = default_judge,
    *,
    options_key: str | None = "options",
) -> Float[np.ndarray, " n"]:
    """Expected correctness of a model-free reader of the question text alone, per item.

    The reader has seen the other items' answers, never this image's: for item ``i`` its
    neighbours ``N_i`` are the items with the same question text, or, when no other item shares
    the text, the items of the same variant and category — leaving out item ``i``, the other
    wordings of its image (same group label) and items showing the same picture. It answers the
    most frequent normalised reference answer among ``N_i``, restricted to the options the
    question offers (``meta[options_key]``, when present):

        P_i = argmax_{a ∈ A_i} |{j ∈ N_i : norm(answer_j) = a}|,
        baseline_i = (1 / |P_i|) Σ_{a ∈ P_i} judge(a, sample_i)    (ties averaged)

    with ``A_i`` the options, or the answers of ``N_i``. An item with neither options nor
    neighbours gets NaN. On the demo world this gives 1/2 for a wording that offers two options,
    the canonical colour's share for "what colour is the banana ?", and the majority answer's
    share for a wording that names nothing.
    """
    norm_answers = [normalize_text(str(s.answer)) for s in items.samples]
    by_text: dict[str, list[int]] = defaultdict(list)
    by_cell: dict[tuple[str, str], list[int]] = defaultdict(list)
    for j, s in enumerate(items.samples):
        by_text[normalize_text(s.question)].append(j)
        by_cell[(items.variants[j], items.categories[j])].append(j)
    out = np.full(len(items), np.nan)
    for i, s in enumerate(items.samples):
        neighbours = [j for j in by_text[normalize_text(s.question)] if not items.related(i, j)]
        if not neighbours:
            cell = (items.variants[i], items.categories[i])
            neighbours = [j for j in by_cell[cell] if not items.related(i, j)]
        counts = Counter(norm_answers[j] for j in neighbours)
        spelled = {norm_answers[j]: str(items.samples[j].answer) for j in neighbours}
        options = s.meta.get(options_key) if options_key else None
        if options:
            candidates = {normalize_text(str(o)): str(o) for o in options}
        else:
            candidates = spelled
        if not candidates:
            continue
        best = max(counts.get(a, 0) for a in candidates)
        chosen = [text for a, text in candidates.items() if counts.get(a, 0) == best]
        out[i] = float(np.mean([_judged(judge, text, s) for text in chosen]))
    return out


# -- the ablation ----------------------------------------------------------------------------------


def _store(store: str | Path | None, name: str) -> Path | None:
    if store is None:
        return None
    return Path(store) / name.replace(":", "-").replace("+", "_").replace("/", "_")


@dataclass
class Ablation:
    """Answers of the same items with the image and under each condition without it.

    Attributes:
        answers: one row per item and condition (``full`` first): ``sample_id``, ``variant``,
            ``category``, ``condition``, ``answer``, ``correct`` (the judge's verdict) and
            ``agrees`` (the answer equals the item's answer with the image, normalised).
        baseline: one row per item: ``sample_id``, ``variant``, ``category``, ``reference`` and
            ``text_only`` (:func:`text_only_baseline`).
        conditions: the conditions without the image, in the order given.
        variants: the variant order; ``categories``: the categories in order of first appearance.
        variant_names: display name of each variant.
        judge: the judge's name.
        ci, n_boot, seed: the bootstrap settings of every interval.
    """

    answers: pd.DataFrame
    baseline: pd.DataFrame
    conditions: tuple[str, ...]
    variants: tuple[str, ...]
    categories: tuple[str, ...]
    variant_names: dict[str, str]
    judge: str
    ci: float = 0.95
    n_boot: int = 1000
    seed: int = 0
    items: Items | None = field(default=None, repr=False)
    _frame: pd.DataFrame | None = field(default=None, init=False, repr=False)

    def _rows(self, variant: str, category: str) -> np.ndarray:
        b = self.baseline
        keep = np.ones(len(b), bool)
        if variant != ALL:
            keep &= (b["variant"] == variant).to_numpy()
        if category != ALL:
            keep &= (b["category"] == category).to_numpy()
        return np.flatnonzero(keep)

    def _column(self, condition: str, column: str) -> np.ndarray:
        part = self.answers[self.answers["condition"] == condition]
        return part[column].to_numpy()

    def to_frame(self) -> pd.DataFrame:
        """One row per (variant, category, condition), ``all`` rows pooling variants or
        categories: ``n``, ``with_image``, ``without``, ``drop`` (paired), ``agreement`` and
        ``text_only``, each with ``*_low`` / ``*_high`` bootstrap bounds."""
        if self._frame is not None:
            return self._frame
        kw = {"ci": self.ci, "n_boot": self.n_boot, "seed": self.seed}
        full = self._column("full", "correct").astype(float)
        base = self.baseline["text_only"].to_numpy(dtype=float)
        rows = []
        for variant in (*self.variants, ALL):
            for category in (*self.categories, ALL):
                idx = self._rows(variant, category)
                if len(idx) == 0:
                    continue
                b = base[idx]
                text = rate(b[~np.isnan(b)], **kw)
                with_image = rate(full[idx], **kw)
                for cond in self.conditions:
                    without = self._column(cond, "correct").astype(float)[idx]
                    agrees = self._column(cond, "agrees").astype(float)[idx]
                    stats = {
                        "with_image": with_image,
                        "without": rate(without, **kw),
                        "drop": paired_difference(full[idx], without, **kw),
                        "agreement": rate(agrees, **kw),
                        "text_only": text,
                    }
                    row: dict[str, Any] = {
                        "variant": variant,
                        "category": category,
                        "condition": cond,
                        "n": len(idx),
                    }
                    for name, (value, low, high) in stats.items():
                        row.update({name: value, f"{name}_low": low, f"{name}_high": high})
                    rows.append(row)
        self._frame = pd.DataFrame(rows)
        return self._frame

    def _name(self, variant: str) -> str:
        return self.variant_names.get(variant, variant)

    def main_table(self, category: str = ALL, digits: int = 2) -> pd.DataFrame:
        """The paper's main table: one row per variant (then ``all``), columns accuracy with the
        image, under each condition without it, and the text-only baseline, as
        ``value [low, high]``; ``n`` items per row."""
        frame = self.to_frame()
        part = frame[frame["category"] == category]
        out = []
        for variant in (*self.variants, ALL):
            rows = part[part["variant"] == variant]
            if rows.empty:
                continue
            first = rows.iloc[0]
            row = {"variant": self._name(variant), "n": int(first["n"])}
            row["with image"] = _cell(first, "with_image", digits)
            for _, r in rows.iterrows():
                row[str(r["condition"])] = _cell(r, "without", digits)
            row["text-only baseline"] = _cell(first, "text_only", digits)
            out.append(row)
        return pd.DataFrame(out).set_index("variant")

    def category_table(self, condition: str | None = None, column: str = "drop") -> pd.DataFrame:
        """``column`` (``with_image``, ``without``, ``drop``, ``agreement``, ``text_only``) per
        category (rows) and variant (columns) under one condition (default: the first)."""
        cond = condition or self.conditions[0]
        if cond not in self.conditions:
            raise ConditionError(f"condition {cond!r} is not in this ablation {self.conditions}")
        frame = self.to_frame()
        part = frame[frame["condition"] == cond]
        table = part.pivot(index="category", columns="variant", values=column)
        cols = [v for v in (*self.variants, ALL) if v in table.columns]
        rows = [c for c in (*self.categories, ALL) if c in table.index]
        table = table.loc[rows, cols]
        table.columns = [self._name(v) for v in cols]
        return table

    def with_judge(self, judge: Judge) -> Ablation:
        """The same answers scored by another judge (no generation): ``correct`` and the
        text-only baseline are recomputed, agreement stays."""
        judge = _check_judge(judge)
        if self.items is None:
            raise JudgeError("this Ablation does not hold its items; rerun no_image_ablation")
        by_id = {str(s.id): s for s in self.items.samples}
        answers = self.answers.copy()
        answers["correct"] = [
            _judged(judge, str(a), by_id[str(sid)])
            for a, sid in zip(answers["answer"], answers["sample_id"])
        ]
        baseline = self.baseline.copy()
        baseline["text_only"] = text_only_baseline(self.items, judge)
        return replace(self, answers=answers, baseline=baseline, judge=_judge_name(judge))

    def summary(self, digits: int = 2) -> str:
        """The main table, the drop per category and variant, and the agreement, as text."""
        lines = [
            f"no-image ablation: {len(self.baseline)} items, {len(self.variants)} variants, "
            f"{len(self.categories)} categories; judge {self.judge}; {int(self.ci * 100)}% "
            f"bootstrap intervals ({self.n_boot} resamples, seed {self.seed})",
            "",
            "accuracy with and without the image, per variant:",
            self.main_table(digits=digits).to_string(),
        ]
        for cond in self.conditions:
            lines += ["", f"drop (with image - {cond}) per category and variant:"]
            lines.append(self.category_table(cond, "drop").round(digits).to_string())
        lines += ["", "agreement with the answer given with the image, per variant:"]
        frame = self.to_frame()
        part = frame[frame["category"] == ALL]
        agree = part.pivot(index="variant", columns="condition", values="agreement")
        agree = agree.loc[[v for v in (*self.variants, ALL) if v in agree.index]]
        agree = agree[list(self.conditions)]
        agree.index = [self._name(v) for v in agree.index]
        lines.append(agree.round(digits).to_string())
        return "\n".join(lines)


def _cell(row: pd.Series, name: str, digits: int) -> str:
    value, low, high = row[name], row[f"{name}_low"], row[f"{name}_high"]
    if np.isnan(value):
        return "-"
    if np.isnan(low):
        return f"{value:.{digits}f}"
    return f"{value:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def _variant_names(order: Sequence[str], names: Mapping[str, str] | None) -> dict[str, str]:
    if names is None:
        return {v: DEMO_VARIANT_NAMES.get(v, v) for v in order}
    unknown = [k for k in names if k not in order]
    if unknown:
        raise UnknownVariantError(
            f"variant_names names variant(s) {unknown} that are not in the ablation {list(order)}"
        )
    return {v: str(names.get(v, v)) for v in order}


def _check_bootstrap(ci: float, n_boot: int) -> None:
    if not 0.0 < ci < 1.0:
        raise AblationError(f"ci must lie in (0, 1), got {ci}")
    if n_boot < 1:
        raise AblationError(f"n_boot must be >= 1, got {n_boot}")


def no_image_ablation(
    vlm: VLM,
    samples: Sequence[Sample],
    conditions: Sequence[str] = DEFAULT_CONDITIONS,
    *,
    variants: Sequence[str] | None = None,
    variant_names: Mapping[str, str] | None = None,
    variant_key: str = "variant",
    category_key: str = "category",
    group_key: str | None = "group",
    judge: Judge = default_judge,
    max_new_tokens: int = 12,
    batch_size: int = 16,
    ci: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
    store: str | Path | None = None,
    overwrite: bool = False,
    progress_bar: bool = True,
) -> Ablation:
    """Greedy answers of the same items with the image and under each condition without it.

    Everything is checked before the first generation (:func:`select_items`,
    :func:`check_without`). The items are generated in variant order, so ``swap:next`` shows each
    item the image of the next item of the same wording — another image, where consecutive items
    of the input are the wordings of one image.

    Args:
        conditions: the conditions without the image, shown side by side.
        variants: variant names in the order to report (default: :func:`resolve_variants`); items
            of other variants are left out.
        variant_names: display names (default: the paper's names for the demo wordings).
        variant_key, category_key, group_key: the ``meta`` labels holding the wording, the
            category, and the image a wording belongs to.
        judge: ``judge(prediction, sample) -> bool`` (default: :data:`default_judge`).
        ci, n_boot, seed: bootstrap settings of every interval (the same seed for every cell).
        store: a folder; each condition keeps its own resumable store under it.

    Raises:
        MissingLabelError, UnknownVariantError, ConditionError, ImageShownError, JudgeError,
        AblationError: before any compute.
    """
    from interp.generation import generate

    judge = _check_judge(judge)
    _check_bootstrap(ci, n_boot)
    items = select_items(
        samples, variants, variant_key=variant_key, category_key=category_key, group_key=group_key
    )
    names = _variant_names(items.order, variant_names)
    conds = check_without(conditions, items, vlm.processor)
    frames = []
    full_texts: list[str] = []
    for cond in ("full", *conds):
        gen = generate(
            vlm,
            items.samples,
            cond,
            max_new_tokens=max_new_tokens,
            batch_size=batch_size,
            store=_store(store, cond),
            overwrite=overwrite,
            progress_bar=progress_bar,
        )
        if cond == "full":
            full_texts = list(gen.texts)
        frames.append(
            pd.DataFrame(
                {
                    "sample_id": [str(s.id) for s in items.samples],
                    "variant": items.variants,
                    "category": items.categories,
                    "condition": cond,
                    "answer": gen.texts,
                    "correct": [_judged(judge, a, s) for a, s in zip(gen.texts, items.samples)],
                    "agrees": [
                        normalize_text(a) == normalize_text(f)
                        for a, f in zip(gen.texts, full_texts)
                    ],
                }
            )
        )
    baseline = pd.DataFrame(
        {
            "sample_id": [str(s.id) for s in items.samples],
            "variant": items.variants,
            "category": items.categories,
            "reference": [str(s.answer) for s in items.samples],
            "text_only": text_only_baseline(items, judge),
        }
    )
    return Ablation(
        answers=pd.concat(frames, ignore_index=True),
        baseline=baseline,
        conditions=conds,
        variants=items.order,
        categories=items.category_order,
        variant_names=names,
        judge=_judge_name(judge),
        ci=ci,
        n_boot=n_boot,
        seed=seed,
        items=items,
    )


# -- in-context examples ---------------------------------------------------------------------------


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


@dataclass
class InContext:
    """Answers with ``k`` in-context examples per item, per example source and condition.

    Attributes:
        answers: one row per (source, k, condition, item): ``source``, ``k``, ``condition``,
            ``sample_id``, ``variant``, ``category``, ``answer``, ``correct``. The k = 0 run is
            shared by the sources.
        examples: per source, the example sample ids of each item (for the largest k; smaller k
            take a prefix).
        shots, sources, conditions, variants, variant_names, judge, ci, n_boot, seed: the settings.
    """

    answers: pd.DataFrame
    examples: dict[str, dict[str, list[str]]]
    shots: tuple[int, ...]
    sources: tuple[str, ...]
    conditions: tuple[str, ...]
    variants: tuple[str, ...]
    variant_names: dict[str, str]
    judge: str
    ci: float = 0.95
    n_boot: int = 1000
    seed: int = 0
    _frame: pd.DataFrame | None = field(default=None, init=False, repr=False)

    def _correct(self, source: str, k: int, condition: str) -> pd.DataFrame:
        a = self.answers
        return a[(a["source"] == source) & (a["k"] == k) & (a["condition"] == condition)]

    def to_frame(self) -> pd.DataFrame:
        """One row per (variant or ``all``, source, condition, k): ``n``, ``accuracy``, ``gain``
        = accuracy(k) − accuracy(0) on the same items (paired), each with bootstrap bounds, and
        for conditions without the image ``recovered`` = gain / (accuracy(full, 0) − accuracy(0)):
        the share of the no-image drop the examples win back (NaN without a ``full`` run or a
        positive drop)."""
        if self._frame is not None:
            return self._frame
        kw = {"ci": self.ci, "n_boot": self.n_boot, "seed": self.seed}
        rows = []
        for variant in (*self.variants, ALL):
            for source in self.sources:
                for cond in self.conditions:
                    zero = self._correct(source, 0, cond)
                    full0 = self._correct(source, 0, "full") if "full" in self.conditions else None
                    for k in self.shots:
                        part = self._correct(source, k, cond)
                        keep = np.ones(len(part), bool)
                        if variant != ALL:
                            keep = (part["variant"] == variant).to_numpy()
                        now = part["correct"].to_numpy(dtype=float)[keep]
                        before = zero["correct"].to_numpy(dtype=float)[keep]
                        acc = rate(now, **kw)
                        gain = paired_difference(now, before, **kw)
                        recovered = np.nan
                        if cond != "full" and full0 is not None:
                            drop = full0["correct"].to_numpy(dtype=float)[keep].mean()
                            drop -= before.mean()
                            recovered = gain[0] / drop if drop > 0 else np.nan
                        rows.append(
                            {
                                "variant": variant,
                                "source": source,
                                "condition": cond,
                                "k": k,
                                "n": int(keep.sum()),
                                "accuracy": acc[0],
                                "accuracy_low": acc[1],
                                "accuracy_high": acc[2],
                                "gain": gain[0],
                                "gain_low": gain[1],
                                "gain_high": gain[2],
                                "recovered": recovered,
                            }
                        )
        self._frame = pd.DataFrame(rows)
        return self._frame

    def table(
        self, condition: str = "full", source: str = "matched", digits: int = 2
    ) -> pd.DataFrame:
        """Accuracy ``value [low, high]`` per variant (rows) and k (columns) for one condition
        and source."""
        frame = self.to_frame()
        part = frame[(frame["condition"] == condition) & (frame["source"] == source)]
        if part.empty:
            raise AblationError(f"no run for condition {condition!r} and source {source!r}")
        out = part.assign(cell=[_cell(r, "accuracy", digits) for _, r in part.iterrows()])
        table = out.pivot(index="variant", columns="k", values="cell")
        table = table.loc[[v for v in (*self.variants, ALL) if v in table.index]]
        table.index = [self.variant_names.get(v, v) for v in table.index]
        table.columns = [f"k={k}" for k in table.columns]
        return table


class ContextLengthWarning(UserWarning):
    """A prompt with in-context examples, plus the answer budget, is longer than the positions
    the model was trained on."""


def _check_length(vlm: VLM, prompts: Sequence[Sample], max_new_tokens: int) -> None:
    """Warn when the longest prompt (with its image) plus ``max_new_tokens`` exceeds the model's
    ``max_position_embeddings``."""
    from interp.encoding import encode

    config = vlm.hf.config
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    limit = getattr(text, "max_position_embeddings", None)
    if not limit:
        return
    counts = [len(ids) for ids in vlm.tokenizer([p.question for p in prompts])["input_ids"]]
    longest = prompts[int(np.argmax(counts))]
    length = int(encode(vlm, [longest], "full").inputs["input_ids"].shape[1]) + max_new_tokens
    if length > limit:
        warnings.warn(
            f"the longest in-context prompt (sample {longest.id!r}) takes {length} positions with "
            f"max_new_tokens={max_new_tokens}, more than the model's {limit}; lower k or pass a "
            "shorter template",
            ContextLengthWarning,
            stacklevel=3,
        )


def in_context(
    vlm: VLM,
    samples: Sequence[Sample],
    shots: Sequence[int] = (0, 1, 2),
    conditions: Sequence[str] = ("full", "blind"),
    *,
    sources: Sequence[str] = ("matched",),
    same_category: bool = True,
    template: str = EXAMPLE_TEMPLATE,
    variants: Sequence[str] | None = None,
    variant_names: Mapping[str, str] | None = None,
    variant_key: str = "variant",
    category_key: str = "category",
    group_key: str | None = "group",
    judge: Judge = default_judge,
    max_new_tokens: int = 12,
    batch_size: int = 16,
    ci: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
    store: str | Path | None = None,
    overwrite: bool = False,
    progress_bar: bool = True,
) -> InContext:
    """Accuracy with ``k`` in-context examples matched to the variant (the paper's recovery
    analysis), with and without the image.

    Each item's prompt holds ``k`` question-answer pairs of other items (:func:`select_examples`,
    :func:`shot_sample`) — text-only examples: their images are not shown — then its own
    question, under each condition (``full`` and conditions without the image). ``k = 0`` is
    always run; ``sources`` may add ``"mismatched"`` (examples from the other variants) as a
    control for "matched to the variant".

    Raises:
        TooFewExamplesError: an item with fewer eligible examples than the largest k.
        MissingLabelError, UnknownVariantError, ConditionError, ImageShownError, JudgeError,
        AblationError: before any compute.
    """
    from interp.generation import generate

    judge = _check_judge(judge)
    _check_bootstrap(ci, n_boot)
    ks = sorted({0, *(int(k) for k in shots)})
    if ks[0] < 0:
        raise AblationError(f"shots must be >= 0, got {list(shots)}")
    srcs = tuple(dict.fromkeys(str(s) for s in sources))
    if not srcs or any(s not in SOURCES for s in srcs):
        raise AblationError(f"sources must be some of {SOURCES}, got {list(sources)}")
    if "{question}" not in template or "{answer}" not in template:
        raise AblationError(f"template must hold {{question}} and {{answer}}, got {template!r}")
    items = select_items(
        samples, variants, variant_key=variant_key, category_key=category_key, group_key=group_key
    )
    names = _variant_names(items.order, variant_names)
    parsed = [str(Condition.parse(c)) for c in conditions]
    if not parsed:
        raise ConditionError("give at least one condition, e.g. 'full' or 'full,blind'")
    if len(set(parsed)) < len(parsed):
        raise ConditionError(f"a condition is listed twice in {parsed}")
    others = [c for c in parsed if c != "full"]
    conds = ("full",) * ("full" in parsed)
    conds += check_without(others, items, vlm.processor) if others else ()
    chosen = {
        src: select_examples(items, ks[-1], src, same_category=same_category, seed=seed)
        for src in srcs
    }
    frames = []
    plan = [("-", 0)] + [(src, k) for src in srcs for k in ks if k > 0]
    prompts_of = {
        (src, k): [
            shot_sample(s, [items.samples[j] for j in chosen[src][i][:k]], template)
            for i, s in enumerate(items.samples)
        ]
        if k
        else list(items.samples)
        for src, k in plan
    }
    _check_length(vlm, [p for ps in prompts_of.values() for p in ps], max_new_tokens)
    for src, k in plan:
        prompts = prompts_of[(src, k)]
        for cond in conds:
            gen = generate(
                vlm,
                prompts,
                cond,
                max_new_tokens=max_new_tokens,
                batch_size=batch_size,
                store=_store(store, f"{cond}-k{k}-{src}"),
                overwrite=overwrite,
                progress_bar=progress_bar,
            )
            correct = [_judged(judge, a, s) for a, s in zip(gen.texts, items.samples)]
            for source in srcs if k == 0 else (src,):
                frames.append(
                    pd.DataFrame(
                        {
                            "source": source,
                            "k": k,
                            "condition": cond,
                            "sample_id": [str(s.id) for s in items.samples],
                            "variant": items.variants,
                            "category": items.categories,
                            "answer": gen.texts,
                            "correct": correct,
                        }
                    )
                )
    examples = {
        src: {
            str(s.id): [str(items.samples[j].id) for j in chosen[src][i]]
            for i, s in enumerate(items.samples)
        }
        for src in srcs
    }
    return InContext(
        answers=pd.concat(frames, ignore_index=True),
        examples=examples,
        shots=tuple(ks),
        sources=srcs,
        conditions=conds,
        variants=items.order,
        variant_names=names,
        judge=_judge_name(judge),
        ci=ci,
        n_boot=n_boot,
        seed=seed,
    )


# -- figures ---------------------------------------------------------------------------------------


def _bars(
    ax: Any,
    frame: pd.DataFrame,
    groups: Sequence[str],
    series: Sequence[tuple[str, str, str]],
    key: str,
    first_colour: int = 0,
) -> None:
    """Grouped bars with bootstrap error bars: ``series`` holds (label, condition, column);
    series ``s`` is drawn in colour ``C{first_colour + s}``."""
    x = np.arange(len(groups))
    width = 0.8 / max(1, len(series))
    for s, (label, cond, column) in enumerate(series):
        vals, lows, highs = [], [], []
        for g in groups:
            row = frame[(frame[key] == g) & (frame["condition"] == cond)]
            r = row.iloc[0] if not row.empty else None
            vals.append(np.nan if r is None else r[column])
            lows.append(np.nan if r is None else r[f"{column}_low"])
            highs.append(np.nan if r is None else r[f"{column}_high"])
        v, lo, hi = (np.asarray(a, dtype=float) for a in (vals, lows, highs))
        err = np.nan_to_num(np.vstack([v - lo, hi - v]), nan=0.0)
        offset = (s - (len(series) - 1) / 2) * width
        colour = f"C{first_colour + s}"
        ax.bar(x + offset, v, width, yerr=err, capsize=2, label=label, color=colour)


def _baseline_marks(ax: Any, frame: pd.DataFrame, groups: Sequence[str], key: str) -> None:
    x = np.arange(len(groups))
    vals = []
    for g in groups:
        row = frame[frame[key] == g]
        vals.append(np.nan if row.empty else row.iloc[0]["text_only"])
    ax.scatter(x, vals, marker="_", s=900, color="k", zorder=5, label="text-only baseline")


def _legend_below(fig: Any, ax: Any, ncol: int) -> None:
    """One legend for the figure, under the axes."""
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=ncol, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.08, 1, 1))


def plot_ablation(ablation: Ablation, category: str = ALL) -> Figure:
    """Accuracy with the image and under each condition without it, per variant (bars with
    bootstrap intervals, the text-only baseline as a black dash), beside the agreement with the
    answer given with the image."""
    import matplotlib.pyplot as plt

    frame = ablation.to_frame()
    part = frame[frame["category"] == category]
    groups = [v for v in (*ablation.variants, ALL) if v in set(part["variant"])]
    first = ablation.conditions[0]
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4.2), gridspec_kw={"width_ratios": [3, 2]})
    series = [("with image", first, "with_image")]
    series += [(c, c, "without") for c in ablation.conditions]
    _bars(ax, part, groups, series, "variant")
    _baseline_marks(ax, part[part["condition"] == first], groups, "variant")
    labels = [ablation._name(g).replace(" (", "\n(") for g in groups]
    ax.set_xticks(np.arange(len(groups)), labels, fontsize=8)
    ax.set_ylabel("accuracy")
    ax.set_ylim(0, 1.05)
    ax.set_title(f"with vs without the image ({category} categories)", fontsize=9)
    series = [(c, c, "agreement") for c in ablation.conditions]
    _bars(bx, part, groups, series, "variant", first_colour=1)
    bx.set_xticks(np.arange(len(groups)), groups, fontsize=8)
    bx.set_ylim(0, 1.05)
    bx.set_ylabel("same answer as with the image")
    bx.set_title("answer agreement without the image", fontsize=9)
    _legend_below(fig, ax, len(ablation.conditions) + 2)
    return fig


def plot_main_table(ablation: Ablation, category: str = ALL, digits: int = 2) -> Figure:
    """The main table (:meth:`Ablation.main_table`) drawn as a figure: one row per variant,
    accuracy ``value [low, high]`` with the image, under each condition without it, and the
    text-only baseline."""
    import matplotlib.pyplot as plt

    table = ablation.main_table(category, digits)
    fig, ax = plt.subplots(figsize=(2.2 + 1.75 * len(table.columns), 0.5 + 0.36 * len(table)))
    ax.axis("off")
    t = ax.table(
        cellText=table.to_numpy().tolist(),
        rowLabels=list(table.index),
        colLabels=list(table.columns),
        loc="center",
        cellLoc="center",
    )
    t.auto_set_font_size(False)
    t.set_fontsize(8)
    t.scale(1.0, 1.3)
    ax.set_title(
        f"accuracy with and without the image, {int(ablation.ci * 100)}% bootstrap intervals "
        f"(judge: {ablation.judge})",
        fontsize=9,
    )
    fig.tight_layout()
    return fig


def plot_categories(ablation: Ablation, conditions: Sequence[str] | None = None) -> Figure:
    """The per-category figure: one panel per category, accuracy per variant with the image and
    under each condition without it (bootstrap intervals), the text-only baseline as a dash."""
    import matplotlib.pyplot as plt

    conds = list(conditions) if conditions is not None else list(ablation.conditions)
    unknown = [c for c in conds if c not in ablation.conditions]
    if unknown:
        raise ConditionError(f"conditions {unknown} are not in this ablation {ablation.conditions}")
    frame = ablation.to_frame()
    cats = list(ablation.categories)
    ncols = min(3, len(cats))
    nrows = int(np.ceil(len(cats) / ncols))
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(4.2 * ncols, 3.0 * nrows + 0.4), squeeze=False, sharey=True
    )
    for ax, cat in zip(axes.ravel(), cats):
        part = frame[(frame["category"] == cat) & (frame["variant"] != ALL)]
        groups = [v for v in ablation.variants if v in set(part["variant"])]
        series = [("with image", conds[0], "with_image")] + [(c, c, "without") for c in conds]
        _bars(ax, part, groups, series, "variant")
        _baseline_marks(ax, part[part["condition"] == conds[0]], groups, "variant")
        ax.set_xticks(np.arange(len(groups)), groups, fontsize=8)
        n = int(part["n"].max()) if not part.empty else 0
        ax.set_title(f"{cat} (n = {n} per variant)", fontsize=9)
        ax.set_ylim(0, 1.05)
    for ax in axes.ravel()[len(cats) :]:
        ax.axis("off")
    axes[0, 0].set_ylabel("accuracy")
    _legend_below(fig, axes[0, 0], len(conds) + 2)
    return fig


def plot_in_context(result: InContext) -> Figure:
    """Accuracy against the number of in-context examples k: one panel per condition, one line
    per variant (solid: matched examples, dashed: mismatched), bootstrap bands."""
    import matplotlib.pyplot as plt

    frame = result.to_frame()
    fig, axes = plt.subplots(
        1, len(result.conditions), figsize=(4.4 * len(result.conditions), 3.2), squeeze=False
    )
    for ax, cond in zip(axes[0], result.conditions):
        for v, variant in enumerate(result.variants):
            for source, style in zip(result.sources, ("-", "--")):
                part = frame[
                    (frame["condition"] == cond)
                    & (frame["source"] == source)
                    & (frame["variant"] == variant)
                ].sort_values("k")
                label = variant if source == result.sources[0] else f"{variant} ({source})"
                ax.plot(part["k"], part["accuracy"], style, marker="o", color=f"C{v}", label=label)
                ax.fill_between(
                    part["k"], part["accuracy_low"], part["accuracy_high"], color=f"C{v}", alpha=0.1
                )
        ax.set_xticks(list(result.shots))
        ax.set_xlabel("in-context examples k")
        ax.set_ylim(0, 1.05)
        ax.set_title(cond, fontsize=9)
    axes[0, 0].set_ylabel("accuracy")
    _legend_below(fig, axes[0, 0], 4)
    fig.tight_layout(rect=(0, 0.08 * len(result.sources), 1, 1))
    return fig


# -- the command -----------------------------------------------------------------------------------

DATA_HELP = (
    "'demo' (the demo world's worded questions: color, identify, count, position, digit, "
    "describe, each in four wordings on one image), 'demo:<qtype,...>', or a JSONL file (image, "
    "question, answer, and the variant / category labels)"
)
WORDED = ("color", "identify", "count", "position", "digit", "describe")


def _list(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def _shots(text: str) -> list[int]:
    try:
        values = [int(v) for v in _list(text)]
    except ValueError:
        raise UsageError(f"--shots takes comma-separated integers, got {text!r}") from None
    if any(v < 1 for v in values):
        raise UsageError(f"--shots: each k must be >= 1 (k = 0 is always run), got {text!r}")
    return sorted(set(values))


def _validate(args: argparse.Namespace) -> dict[str, Any]:
    """Everything checked before the model is loaded: options, output folder, model
    configuration, data (every image opened), labels, variants, conditions, examples."""
    check_common_arguments(args, one_process="interp ablate")
    if args.max_new_tokens < 1:
        raise UsageError(f"--max-new-tokens must be >= 1, got {args.max_new_tokens}")
    if not 0.0 < args.ci < 1.0:
        raise UsageError(f"--ci must lie in (0, 1), got {args.ci}")
    if args.n_boot < 1:
        raise UsageError(f"--n-boot must be >= 1, got {args.n_boot}")
    conditions = [str(Condition.parse(c)) for c in _list(args.conditions)]
    if not conditions:
        raise UsageError("--conditions is empty; give e.g. blind,null:black,null:noise,swap:next")
    shots = _shots(args.shots)
    shot_conditions = [str(Condition.parse(c)) for c in _list(args.shot_conditions)]
    if shots and not shot_conditions:
        raise UsageError("--shot-conditions is empty; give e.g. full,blind")
    variants = _list(args.variants) or None
    judge = make_judge(args.judge)
    check_output_dir(args.out, create=False)
    check_model(args.model)
    samples = load_data(args.data, args.n, args.seed, default_qtypes=WORDED, columns=args.columns)
    group_key = args.group_key or None
    items = select_items(
        samples,
        variants,
        variant_key=args.variant_key,
        category_key=args.category_key,
        group_key=group_key,
    )
    check_without(conditions, items)
    others = [c for c in shot_conditions if c != "full"]
    if shots:
        if others:
            check_without(others, items)
        for source in ("matched",):
            select_examples(items, max(shots), source, seed=args.seed)
    out = check_output_dir(args.out)
    return {
        "samples": samples,
        "variants": list(items.order),
        "conditions": conditions,
        "shots": shots,
        "shot_conditions": shot_conditions,
        "judge": judge,
        "group_key": group_key,
        "out": out,
    }


def _ablate_command(args: argparse.Namespace) -> int:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from interp.model import load

    plan = _validate(args)
    out: Path = plan["out"]
    vlm = load(args.model)
    print(f"{vlm}\n{len(plan['samples'])} items from {args.data!r}", flush=True)
    common = {
        "variants": plan["variants"],
        "variant_key": args.variant_key,
        "category_key": args.category_key,
        "group_key": plan["group_key"],
        "judge": plan["judge"],
        "max_new_tokens": args.max_new_tokens,
        "batch_size": args.batch_size,
        "ci": args.ci,
        "n_boot": args.n_boot,
        "seed": args.seed,
        "overwrite": args.overwrite,
        "progress_bar": not args.no_progress,
    }
    ablation = no_image_ablation(
        vlm, plan["samples"], plan["conditions"], store=out / "store" / "ablation", **common
    )
    ablation.answers.to_csv(out / "answers.csv", index=False)
    ablation.baseline.to_csv(out / "text_only.csv", index=False)
    ablation.to_frame().to_csv(out / "table.csv", index=False)
    ablation.main_table().to_csv(out / "main_table.csv")
    plot_main_table(ablation).savefig(out / "main_table.png", dpi=130)
    plot_ablation(ablation).savefig(out / "ablation.png", dpi=130)
    plot_categories(ablation).savefig(out / "categories.png", dpi=130)
    plt.close("all")
    text = f"model {args.model!r}, data {args.data!r}\n" + ablation.summary()
    if plan["shots"]:
        shots = in_context(
            vlm,
            plan["samples"],
            [0, *plan["shots"]],
            plan["shot_conditions"],
            store=out / "store" / "in_context",
            **common,
        )
        shots.answers.to_csv(out / "in_context_answers.csv", index=False)
        shots.to_frame().to_csv(out / "in_context.csv", index=False)
        plot_in_context(shots).savefig(out / "in_context.png", dpi=130)
        plt.close("all")
        for cond in shots.conditions:
            text += f"\n\nin-context examples matched to the variant, {cond}:\n"
            text += shots.table(cond).to_string()
    write_summary(out, text)
    return 0


def register(sub: Any) -> None:
    """Add ``ablate`` to the ``interp`` command."""
    d = sub.add_parser(
        "ablate",
        help="no-image ablation across question wordings: accuracy with vs without the image",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common_arguments(d, data_help=DATA_HELP)
    d.add_argument(
        "--conditions",
        default=",".join(DEFAULT_CONDITIONS),
        help="conditions without the image, side by side (default: %(default)s)",
    )
    d.add_argument(
        "--variants",
        default="",
        help="variant names in the order to report, most leaking first (default: the paper's "
        "order for the demo wordings, else the order in the data); others are left out",
    )
    d.add_argument("--variant-key", default="variant", help="label holding the wording")
    d.add_argument("--category-key", default="category", help="label holding the category")
    d.add_argument(
        "--group-key",
        default="group",
        help="label shared by the wordings of one image ('' for none: images are compared)",
    )
    d.add_argument(
        "--judge",
        default="inclusion",
        choices=["inclusion", "exact"],
        help="answer matching: normalised exact or two-way inclusion (default), or exact only",
    )
    d.add_argument(
        "--shots",
        default="",
        help="numbers of in-context examples matched to the variant, e.g. 1,2 (default: none)",
    )
    d.add_argument(
        "--shot-conditions", default="full,blind", help="conditions of the in-context runs"
    )
    d.add_argument("--max-new-tokens", type=int, default=12)
    d.add_argument("--ci", type=float, default=0.95, help="bootstrap interval level")
    d.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples")
    d.set_defaults(func=_ablate_command)


__all__ = [
    "ALL",
    "ContextLengthWarning",
    "DEFAULT_CONDITIONS",
    "DEMO_VARIANT_NAMES",
    "DEMO_VARIANT_ORDER",
    "EXAMPLE_TEMPLATE",
    "PAPER_VARIANTS",
    "SOURCES",
    "Ablation",
    "AblationError",
    "ImageShownError",
    "InContext",
    "Items",
    "Judge",
    "JudgeError",
    "MissingLabelError",
    "PaperVariant",
    "TooFewExamplesError",
    "UnknownVariantError",
    "check_without",
    "default_judge",
    "exact_judge",
    "in_context",
    "make_judge",
    "no_image_ablation",
    "paired_difference",
    "plot_ablation",
    "plot_categories",
    "plot_in_context",
    "plot_main_table",
    "rate",
    "register",
    "resolve_variants",
    "select_examples",
    "select_items",
    "shot_sample",
    "text_only_baseline",
    "variants_frame",
]
