"""The model runs of the ablation: greedy answers of the same items with the image and under
each condition without it (:func:`no_image_ablation`), and with in-context examples matched to the
variant (:func:`in_context`), through :func:`interp.generate` only."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from interp.conditions import Condition
from interp.encoding import encode
from interp.errors import ConditionError
from interp.generation import generate
from interp.options import RunOptions
from interp.samples import Sample
from interp.store import substore
from probes.text import normalize_text

from .analysis import Ablation, InContext, _check_bootstrap, text_only_baseline
from .context import select_examples, shot_sample
from .errors import AblationError
from .items import check_without, select_items
from .judge import Judge, _check_judge, _judge_name, _judged, default_judge
from .variants import DEFAULT_CONDITIONS, EXAMPLE_TEMPLATE, SOURCES, _variant_names

if TYPE_CHECKING:
    from interp.model import VLM


def _store(store: str | Path | None, name: str) -> Path | None:
    return substore(store, name.replace(":", "-").replace("+", "_").replace("/", "_"))


def _options(run: RunOptions | None, options: dict[str, Any]) -> RunOptions:
    """The run options of an entry point (default ``batch_size`` 16).

    remote: runs through generate (no edits): a remote run is left to it."""
    return RunOptions.resolve(run if run is not None else RunOptions(batch_size=16), **options)


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
    ci: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
    run: RunOptions | None = None,
    **options: Any,
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
        run: how it runs (:class:`~interp.options.RunOptions`; default ``batch_size`` 16): a
            ``store`` folder keeps each condition's resumable store under it; ``remote=True``
            generates on NDIF; its fields may also be given as keywords (``batch_size=8``).

    Raises:
        MissingLabelError, UnknownVariantError, ConditionError, ImageShownError, JudgeError,
        AblationError: before any compute.
    """
    # remote: runs through residual_stream / score / generate
    opts = _options(run, options)
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
            run=replace(opts, store=_store(opts.store, cond)),
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


class ContextLengthWarning(UserWarning):
    """A prompt with in-context examples, plus the answer budget, is longer than the positions
    the model was trained on."""


def _check_length(vlm: VLM, prompts: Sequence[Sample], max_new_tokens: int) -> None:
    """Warn when the longest prompt (with its image) plus ``max_new_tokens`` exceeds the model's
    ``max_position_embeddings``."""
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
    ci: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
    run: RunOptions | None = None,
    **options: Any,
) -> InContext:
    """Accuracy with ``k`` in-context examples matched to the variant (the paper's recovery
    analysis), with and without the image.

    Each item's prompt holds ``k`` question-answer pairs of other items (:func:`select_examples`,
    :func:`shot_sample`) — text-only examples: their images are not shown — then its own
    question, under each condition (``full`` and conditions without the image). ``k = 0`` is
    always run; ``sources`` may add ``"mismatched"`` (examples from the other variants) as a
    control for "matched to the variant".

    ``run`` is how it runs (:class:`~interp.options.RunOptions`; default ``batch_size`` 16; a
    ``store`` folder keeps each (condition, k, source) run's store under it; ``remote=True``
    generates on NDIF); its fields may also be given as keywords.

    Raises:
        TooFewExamplesError: an item with fewer eligible examples than the largest k.
        MissingLabelError, UnknownVariantError, ConditionError, ImageShownError, JudgeError,
        AblationError: before any compute.
    """
    # remote: runs through residual_stream / score / generate
    opts = _options(run, options)
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
                run=replace(opts, store=_store(opts.store, f"{cond}-k{k}-{src}")),
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


__all__ = ["ContextLengthWarning", "in_context", "no_image_ablation"]
