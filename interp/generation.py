"""Greedy generation: :func:`generate`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import nnsight
import pandas as pd
import torch
from torch import Tensor

from .conditions import Condition
from .encoding import Encoding, batches
from .samples import Sample, ensure_samples
from .tracing import progress

if TYPE_CHECKING:
    from .model import VLM


@dataclass
class Generation:
    """Greedy answers of a set of samples under one condition.

    Attributes:
        texts: decoded answers (special tokens removed, stripped).
        token_ids: generated ids per sample, cut at the first end-of-sequence token (exclusive).
        sample_ids: ``Sample.id`` of each row.
        condition: the condition the answers were generated under.
    """

    texts: list[str]
    token_ids: list[list[int]]
    sample_ids: list[str]
    condition: str

    def __len__(self) -> int:
        return len(self.texts)

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "sample_id": self.sample_ids,
                "condition": self.condition,
                "answer": self.texts,
                "n_tokens": [len(t) for t in self.token_ids],
            }
        )


def _stop_ids(vlm: VLM) -> set[int]:
    ids: set[int] = set()
    for source in (vlm.hf.generation_config, vlm.hf.config, vlm.tokenizer):
        value = getattr(source, "eos_token_id", None)
        if isinstance(value, int):
            ids.add(value)
        elif isinstance(value, (list, tuple)):
            ids.update(int(v) for v in value)
    return ids


def greedy_trace(vlm: VLM, enc: Encoding, max_new_tokens: int, **trace_kwargs: Any) -> Any:
    """The nnsight trace of greedy generation (temperature 0) on one encoded batch; use it as a
    ``with`` block: reads and edits inside apply to the prompt's forward unless ``tracer.iter``
    selects other steps, and ``tracer.result`` holds the prompt + generated ids."""
    return vlm.trace_encoding(
        enc,
        generate=True,
        max_new_tokens=max_new_tokens,
        do_sample=False,
        pad_token_id=vlm.tokenizer.pad_token_id,
        **trace_kwargs,
    )


def trace_generate(
    vlm: VLM, enc: Encoding, max_new_tokens: int, **trace_kwargs: Any
) -> list[list[int]]:
    """Greedy-decode one batch inside one nnsight ``generate`` trace; new ids per row, cut at EOS."""
    with torch.no_grad(), greedy_trace(vlm, enc, max_new_tokens, **trace_kwargs) as tracer:
        result = nnsight.save(tracer.result)
    return cut_at_eos(vlm, result[:, enc.input_ids.shape[1] :])


def cut_at_eos(vlm: VLM, new_ids: Tensor) -> list[list[int]]:
    stops = _stop_ids(vlm)
    out = []
    for row in new_ids.tolist():
        cut = next((i for i, t in enumerate(row) if t in stops), len(row))
        out.append(row[:cut])
    return out


def generate(
    vlm: VLM,
    samples: Sequence[Sample] | Sample,
    condition: str | Condition = "full",
    *,
    max_new_tokens: int = 16,
    batch_size: int = 8,
    progress_bar: bool = True,
    **trace_kwargs: Any,
) -> Generation:
    """Greedy answers (temperature 0) of every sample under ``condition``, batched, one nnsight
    generate trace per batch.

    Args:
        max_new_tokens: generation budget; answers stop earlier at the model's end-of-sequence token.
        **trace_kwargs: passed to nnsight untouched (e.g. ``remote=True``).
    """
    samples = ensure_samples(samples)
    ids: list[list[int]] = [[] for _ in samples]
    for idx, enc in progress(
        batches(vlm, samples, condition, batch_size),
        total=len(samples),
        desc=f"generate[{condition}]",
        enabled=progress_bar,
    ):
        for i, row in zip(idx, trace_generate(vlm, enc, max_new_tokens, **trace_kwargs)):
            ids[i] = row
    texts = [vlm.tokenizer.decode(row, skip_special_tokens=True).strip() for row in ids]
    return Generation(texts, ids, [str(s.id) for s in samples], str(Condition.parse(condition)))


__all__ = ["Generation", "cut_at_eos", "generate", "greedy_trace", "trace_generate"]
