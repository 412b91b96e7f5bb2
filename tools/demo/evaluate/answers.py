"""The model runs of the demo evaluation: greedy answers with and without the image, one row per
sample (:func:`evaluate`), and loading a demo checkpoint offline (:func:`load_checkpoint`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from transformers import AutoModelForImageTextToText, AutoProcessor, PreTrainedModel, ProcessorMixin

from interp.datasets.world import SOURCES, generation_label
from interp.demo import CHECKPOINT_DIR
from interp.generation import generate
from interp.model import PLAIN_FORWARDS, VLM
from interp.samples import Sample, ensure_samples


def greedy_answers(
    model: PreTrainedModel,
    processor: ProcessorMixin,
    samples: Sequence[Sample],
    with_image: bool = True,
    batch_size: int = 64,
    max_new_tokens: int = 20,
) -> list[str]:
    """Greedy answers (special tokens removed, whitespace normalised) through the library's
    :func:`interp.generate`: one nnsight generate trace per left-padded batch, under the ``full``
    condition or, with ``with_image=False``, ``blind`` (the chat turn with the image items removed).
    """
    condition = "full" if with_image else "blind"
    gen = generate(
        VLM(model, processor),
        list(samples),
        condition,
        max_new_tokens=max_new_tokens,
        batch_size=batch_size,
        progress_bar=False,
    )
    return [" ".join(text.split()) for text in gen.texts]


def follows(pred: str, meta: dict[str, Any]) -> str:
    """Which conflict sources an answer matches: the sources (in :data:`SOURCES` order) whose label
    equals the answer, joined by ``+`` (``"perceptual+text"`` when those two agree), or
    ``"other"`` (Tri-PvP's HALLUCINATION: no source's label)."""
    labels = {
        "perceptual": meta["image_label"],
        "propositional": meta["propositional_label"],
        "text": meta["text_label"],
    }
    matched = [s for s in SOURCES if labels[s] == pred]
    return "+".join(matched) if matched else "other"


def evaluate(
    model: PreTrainedModel,
    processor: ProcessorMixin,
    samples: Sequence[Sample],
    batch_size: int = 64,
    max_new_tokens: int = 20,
) -> pd.DataFrame:
    """Answer each sample with and without its image; one row per sample.

    Columns: ``id``, ``question``, ``answer``, every ``meta`` key, ``pred_image``, ``pred_blind``,
    ``correct_image``, ``correct_blind`` (exact match; ``NaN`` where the sample has no answer),
    ``prior_image`` / ``prior_blind`` (the prediction equals ``meta["prior_answer"]``),
    ``follows_image`` (conflict items: :func:`follows`) and ``generation`` (items whose image
    contradicts the prior: :func:`~interp.datasets.world.generation_label` of the answer with the
    image).
    """
    samples = ensure_samples(list(samples))
    was_training = model.training
    model.eval()
    try:
        pred_image = greedy_answers(model, processor, samples, True, batch_size, max_new_tokens)
        pred_blind = greedy_answers(model, processor, samples, False, batch_size, max_new_tokens)
    finally:
        model.train(was_training)
    rows = []
    for s, pi, pb in zip(samples, pred_image, pred_blind, strict=True):
        meta = dict(s.meta)
        row: dict[str, Any] = {"id": s.id, "question": s.question, "answer": s.answer, **meta}
        row.update(pred_image=pi, pred_blind=pb)
        if s.answer is None:
            row.update(correct_image=np.nan, correct_blind=np.nan)
        else:
            row.update(correct_image=float(pi == s.answer), correct_blind=float(pb == s.answer))
        prior = meta.get("prior_answer")
        row["prior_image"] = np.nan if prior is None else float(pi == prior)
        row["prior_blind"] = np.nan if prior is None else float(pb == prior)
        row["follows_image"] = follows(pi, meta) if meta.get("qtype") == "conflict" else None
        row["generation"] = generation_label(pi, meta) if meta.get("qtype") else None
        rows.append(row)
    return pd.DataFrame(rows)


def load_checkpoint(path: str | Path = CHECKPOINT_DIR) -> tuple[PreTrainedModel, ProcessorMixin]:
    """Load a demo checkpoint offline (fp32, eval mode)."""
    model = AutoModelForImageTextToText.from_pretrained(path, dtype=torch.float32, **PLAIN_FORWARDS)
    processor = AutoProcessor.from_pretrained(path)
    return model.eval(), processor
