"""Generation: :func:`generate`, greedy or sampled, with edits at every step.

Every batch is one nnsight ``generate`` trace. At each step the library reads the next-token
logits (after every edit), chooses the token itself — the argmax, or a draw from the sample's own
random generator — and writes a one-hot (0 / −inf) row into the logits, so Hugging Face's loop
continues with exactly that token. This makes the decoding the library's, not the model's
``generation_config`` (no hidden repetition penalties or warpers), and makes sampling depend only
on the sample and the seed: each sample draws from a ``torch.Generator`` seeded with
``(seed, sample id)``, so results do not depend on batch size or order.

Sampling follows Hugging Face's warpers, in their order: temperature, then top-k (keep the k
largest logits, ties kept), then top-p (keep the smallest set of most likely tokens whose
probability reaches p, at least one).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import nnsight
import pandas as pd
import torch
from jaxtyping import Float, Int
from torch import Tensor
from transformers import GenerationConfig

from .conditions import Condition, stable_seed
from .edits import Batch, Intervention, apply_edits, check_edits, prepare_edits, quiet_unreached
from .encoding import batches
from .errors import ConditionError
from .runner import Job, Shard, run
from .samples import Sample, ensure_samples

if TYPE_CHECKING:
    from .model import VLM


@dataclass(frozen=True)
class Sampling:
    """Decoding settings: greedy (``do_sample=False``) or seeded sampling.

    Attributes:
        do_sample: draw tokens instead of taking the argmax.
        temperature: logits are divided by it before sampling (> 0).
        top_k: keep only the k most likely tokens (None or 0: all).
        top_p: keep the smallest set of most likely tokens whose probability reaches p (None or
            1.0: all).
        seed: with the sample id, seeds each sample's generator.
    """

    do_sample: bool = False
    temperature: float = 1.0
    top_k: int | None = None
    top_p: float | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.temperature > 0:
            raise ValueError(f"temperature must be > 0, got {self.temperature}")
        if self.top_k is not None and self.top_k < 0:
            raise ValueError(f"top_k must be >= 0, got {self.top_k}")
        if self.top_p is not None and not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")

    def warp(self, logits: Float[Tensor, "batch vocab"]) -> Float[Tensor, "batch vocab"]:
        """Temperature, top-k and top-p filtering (−inf outside the kept set), as Hugging Face's
        ``TemperatureLogitsWarper``, ``TopKLogitsWarper`` and ``TopPLogitsWarper`` do."""
        scores = logits.float() / self.temperature
        if self.top_k:
            k = min(int(self.top_k), scores.shape[-1])
            kth = torch.topk(scores, k, dim=-1).values[..., -1:]
            scores = scores.masked_fill(scores < kth, float("-inf"))
        if self.top_p is not None and self.top_p < 1.0:
            sorted_scores, order = torch.sort(scores, descending=False, dim=-1)
            cumulative = sorted_scores.softmax(dim=-1).cumsum(dim=-1)
            remove_sorted = cumulative <= (1 - self.top_p)
            remove_sorted[..., -1:] = False  # keep at least the most likely token
            remove = remove_sorted.scatter(-1, order, remove_sorted)
            scores = scores.masked_fill(remove, float("-inf"))
        return scores

    def generators(self, sample_ids: Sequence[str]) -> list[torch.Generator] | None:
        """One generator per row, seeded by ``(seed, sample id)`` (None when greedy)."""
        if not self.do_sample:
            return None
        return [
            torch.Generator().manual_seed(stable_seed(f"{self.seed}:{sid}")) for sid in sample_ids
        ]

    def choose(
        self, logits: Float[Tensor, "batch vocab"], generators: list[torch.Generator] | None
    ) -> Int[Tensor, " batch"]:
        """The next token of each row: the argmax, or a draw from the warped distribution with
        the row's own generator."""
        if generators is None:
            return logits.argmax(dim=-1)
        probs = self.warp(logits).softmax(dim=-1).cpu()
        draws = [torch.multinomial(probs[r], 1, generator=g) for r, g in enumerate(generators)]
        return torch.cat(draws).to(logits.device)


GREEDY = Sampling()


@dataclass
class Generation:
    """Answers of a set of samples under one condition.

    Attributes:
        texts: decoded answers (special tokens removed, stripped).
        token_ids: generated ids per sample, cut at the first end-of-sequence token (exclusive).
        sample_ids: ``Sample.id`` of each row.
        condition: the condition the answers were generated under.
        sampling: the decoding settings.
    """

    texts: list[str]
    token_ids: list[list[int]]
    sample_ids: list[str]
    condition: str
    sampling: Sampling = GREEDY

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


def stop_ids(vlm: VLM) -> set[int]:
    """End-of-sequence token ids of the model (generation config, config and tokenizer)."""
    ids: set[int] = set()
    for source in (vlm.hf.generation_config, vlm.hf.config, vlm.tokenizer):
        value = getattr(source, "eos_token_id", None)
        if isinstance(value, int):
            ids.add(value)
        elif isinstance(value, (list, tuple)):
            ids.update(int(v) for v in value)
    return ids


def plain_generation_config(vlm: VLM, max_new_tokens: int) -> GenerationConfig:
    """A generation config whose logits processors are all neutral: the library chooses every
    token (the model's own repetition penalties, warpers or forced tokens do not apply)."""
    return GenerationConfig(
        max_new_tokens=max_new_tokens,
        do_sample=False,
        num_beams=1,
        eos_token_id=sorted(stop_ids(vlm)) or None,
        pad_token_id=vlm.tokenizer.pad_token_id,
        repetition_penalty=1.0,
        encoder_repetition_penalty=1.0,
        no_repeat_ngram_size=0,
        min_length=0,
        length_penalty=1.0,
        suppress_tokens=[],
        begin_suppress_tokens=[],
    )


def cut_at_eos(vlm: VLM, new_ids: Tensor) -> list[list[int]]:
    stops = stop_ids(vlm)
    out = []
    for row in new_ids.tolist():
        cut = next((i for i, t in enumerate(row) if t in stops), len(row))
        out.append(row[:cut])
    return out


def generate_batch(
    vlm: VLM,
    batch: Batch,
    max_new_tokens: int,
    *,
    sampling: Sampling = GREEDY,
    edits: Sequence[Intervention] = (),
    on_prompt: Callable[[], Any] | None = None,
    **trace_kwargs: Any,
) -> tuple[list[list[int]], Any]:
    """Generate for one batch inside one nnsight generate trace.

    ``on_prompt``, if given, is called inside the trace during the prompt forward (before the
    logits are read), e.g. to read residual states; whatever it returns (saved with
    ``nnsight.save``) comes back as the second value.

    Returns:
        the new token ids per row (cut at the end-of-sequence token), and ``on_prompt``'s value.
    """
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
    states = prepare_edits(vlm, batch, edits)
    generators = sampling.generators(batch.encoding.sample_ids)
    trace, inputs = vlm.open_trace(
        batch.encoding,
        generate=True,
        generation_config=plain_generation_config(vlm, max_new_tokens),
        **trace_kwargs,
    )
    chosen: list[Tensor] = []
    prompt_reads: dict[str, Any] = {}
    with torch.no_grad(), quiet_unreached(), trace as tracer:
        # Edits first: at a shared site (the logits) they act before the token is chosen.
        apply_edits(tracer, vlm, batch, edits, states, generating=True)
        with tracer.invoke(**inputs):
            for step in tracer.iter[:]:
                if step == 0 and on_prompt is not None:
                    prompt_reads["value"] = nnsight.save(on_prompt())
                out = vlm.lm_head.output
                token = sampling.choose(out[:, -1], generators)
                forced = torch.full_like(out[:, -1], float("-inf"))
                forced[torch.arange(forced.shape[0], device=forced.device), token] = 0.0
                out[:, -1] = forced
                chosen.append(token.cpu())
    ids = torch.stack(chosen, dim=1) if chosen else torch.zeros(len(batch), 0, dtype=torch.long)
    return cut_at_eos(vlm, ids), prompt_reads.get("value")


def generate(
    vlm: VLM,
    samples: Sequence[Sample] | Sample,
    condition: str | Condition = "full",
    *,
    max_new_tokens: int = 16,
    do_sample: bool = False,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    seed: int = 0,
    edits: Sequence[Intervention] | None = None,
    batch_size: int = 8,
    store: str | Path | None = None,
    overwrite: bool = False,
    shard: Shard = None,
    progress_bar: bool = True,
    **trace_kwargs: Any,
) -> Generation:
    """Answers of every sample under ``condition``, batched, one nnsight generate trace per batch.

    Args:
        max_new_tokens: generation budget; answers stop earlier at the model's end-of-sequence token.
        do_sample, temperature, top_k, top_p, seed: greedy (default) or seeded sampling (see
            :class:`Sampling`); sampled answers depend only on the sample and the seed.
        edits: interventions applied at the prompt forward and, for ``steps = "all"`` edits, at
            every generated step.
        store, overwrite, shard: see :func:`interp.residual_stream`.
        **trace_kwargs: passed to nnsight untouched (e.g. ``remote=True``).
    """
    samples = ensure_samples(samples)
    cond = Condition.parse(condition)
    if cond.prefix == "removed":
        raise ConditionError("'no_prefix' applies to teacher-forced scoring (interp.score) only")
    sampling = Sampling(do_sample, temperature, top_k, top_p, seed)
    edits = check_edits(vlm, edits)
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
    job = Job(
        "generate",
        {"max_new_tokens": max_new_tokens, "sampling": asdict(sampling)},
        conditions=[cond],
        edits=edits,
        pool=samples,
    )

    def compute(chunk: list[Sample]) -> tuple[dict[str, Tensor], list[dict[str, Any]]]:
        records: list[dict[str, Any]] = [{} for _ in chunk]
        for idx, enc in batches(vlm, chunk, cond, batch_size, all_samples=samples):
            batch = Batch(vlm, enc, [chunk[i] for i in idx], cond, "generate", samples)
            ids, _ = generate_batch(
                vlm, batch, max_new_tokens, sampling=sampling, edits=edits, **trace_kwargs
            )
            for row, i in enumerate(idx):
                records[i] = {"ids": ids[row]}
        return {}, records

    _, _, records = run(
        vlm,
        samples,
        job,
        compute,
        batch_size=batch_size,
        store=store,
        overwrite=overwrite,
        shard=shard,
        progress_bar=progress_bar,
    )
    ids = [r["ids"] for r in records]
    texts = [vlm.tokenizer.decode(row, skip_special_tokens=True).strip() for row in ids]
    return Generation(texts, ids, [str(s.id) for s in samples], str(cond), sampling)


__all__ = [
    "GREEDY",
    "Generation",
    "Sampling",
    "cut_at_eos",
    "generate",
    "generate_batch",
    "plain_generation_config",
    "stop_ids",
]
