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

Every rate comes with a percentile-bootstrap interval (:func:`probes.bootstrap.estimate`, the same seed
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
:class:`InContext`), :func:`grpo_lora` (the paper's GRPO-with-LoRA mitigation; the ``grpo``
extra), :func:`text_only_baseline`, :func:`make_judge`; figures
:func:`plot_main_table`, :func:`plot_ablation`, :func:`plot_categories`, :func:`plot_in_context`;
the command ``interp ablation`` (alias ``ablate``; :func:`register`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from interp._lazy import lazy_exports
from interp.study_registry import StudyEntry

ENTRY = StudyEntry(
    "ablation",
    "No-image ablation",
    "accuracy with and without the image, per wording",
    audit=".audit:STUDY",
    recipe="interp.studies.reproduce.recipes:ABLATION",
    docs="docs/ablation.md",
    notebook="notebooks/05_ablation_no_image.ipynb",
    bench="bench/ablation.py",
    order=7,
)
"""This study in the study registry (:mod:`interp.study_registry`)."""


_LAZY = {
    "AblationError": "errors",
    "ImageShownError": "errors",
    "JudgeError": "errors",
    "MissingLabelError": "errors",
    "TooFewExamplesError": "errors",
    "UnknownVariantError": "errors",
    "ALL": "variants",
    "DEFAULT_CONDITIONS": "variants",
    "DEMO_VARIANT_NAMES": "variants",
    "DEMO_VARIANT_ORDER": "variants",
    "EXAMPLE_TEMPLATE": "variants",
    "PAPER_VARIANTS": "variants",
    "SOURCES": "variants",
    "PaperVariant": "variants",
    "Judge": "judge",
    "default_judge": "judge",
    "exact_judge": "judge",
    "make_judge": "judge",
    "GRPOResult": "grpo",
    "grpo_lora": "grpo",
    "Items": "items",
    "check_without": "items",
    "resolve_variants": "items",
    "select_items": "items",
    "select_examples": "context",
    "shot_sample": "context",
    "Ablation": "analysis",
    "InContext": "analysis",
    "paired_difference": "analysis",
    "rate": "analysis",
    "text_only_baseline": "analysis",
    "variants_frame": "analysis",
    "ContextLengthWarning": "measure",
    "in_context": "measure",
    "no_image_ablation": "measure",
    "plot_ablation": "figures",
    "plot_categories": "figures",
    "plot_in_context": "figures",
    "plot_main_table": "figures",
    "register": "cli",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

if TYPE_CHECKING:
    from .analysis import (
        Ablation,
        InContext,
        paired_difference,
        rate,
        text_only_baseline,
        variants_frame,
    )
    from .cli import register
    from .context import select_examples, shot_sample
    from .errors import (
        AblationError,
        ImageShownError,
        JudgeError,
        MissingLabelError,
        TooFewExamplesError,
        UnknownVariantError,
    )
    from .figures import plot_ablation, plot_categories, plot_in_context, plot_main_table
    from .grpo import GRPOResult, grpo_lora
    from .items import Items, check_without, resolve_variants, select_items
    from .judge import Judge, default_judge, exact_judge, make_judge
    from .measure import ContextLengthWarning, in_context, no_image_ablation
    from .variants import (
        ALL,
        DEFAULT_CONDITIONS,
        DEMO_VARIANT_NAMES,
        DEMO_VARIANT_ORDER,
        EXAMPLE_TEMPLATE,
        PAPER_VARIANTS,
        SOURCES,
        PaperVariant,
    )

__all__ = [
    "GRPOResult",
    "grpo_lora",
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
