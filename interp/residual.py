"""Reading the residual stream: :func:`residual_stream` (one forward of the prompts) and
:func:`generate_states` (greedy answers, with the prompt's states read in the same generate trace)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from jaxtyping import Float
from torch import Tensor

from . import generation
from .conditions import Condition
from .edits import Batch, Intervention, check_edits
from .encoding import batches
from .errors import ConditionError, InterpError
from .runner import Job, RunOptions, Shard, run
from .samples import Sample, ensure_samples
from .tracing import Position, read_states, resolve_layers, trace_states

if TYPE_CHECKING:
    from .model import VLM


def residual_stream(
    vlm: VLM,
    samples: Sequence[Sample] | Sample,
    condition: str | Condition = "full",
    *,
    layers: Iterable[int] | None = None,
    position: Position = "last",
    edits: Sequence[Intervention] | None = None,
    batch_size: int = 8,
    store: str | Path | None = None,
    overwrite: bool = False,
    shard: Shard = None,
    progress_bar: bool = True,
    **trace_kwargs: Any,
) -> Float[Tensor, "n layer d"]:
    """Residual-stream states of every sample at the chosen layers, one nnsight trace per batch.

    Index convention (``docs/conventions.md``): 0 = input embeddings, l = output of decoder layer l
    (before the final norm), so with ``layers=None`` the result has L+1 entries along ``layer``.

    Args:
        condition: how samples become inputs (see :mod:`interp.conditions`).
        layers: indices in 0..L, increasing (None = all).
        position: ``"last"`` (last prompt token) or a negative offset from the end of the prompt.
        edits: interventions applied during the forward (see :mod:`interp.edits`).
        batch_size: rows per forward; results do not depend on it (left padding is handled).
        store: a folder to write results to batch by batch and resume from (see
            :mod:`interp.store`); ``overwrite`` starts it over; ``shard`` splits the samples
            across processes sharing the store (see :mod:`interp.runner`).
        **trace_kwargs: passed to nnsight's ``trace`` untouched (e.g. ``remote=True``).

    Returns:
        float32 CPU tensor ``[N, len(layers), d_model]`` in the order of ``samples``.
    """
    samples = ensure_samples(samples)
    cond = Condition.parse(condition)
    if cond.prefix == "removed":
        raise ConditionError("'no_prefix' applies to teacher-forced scoring (interp.score) only")
    wanted = resolve_layers(vlm, layers)
    edits = check_edits(vlm, edits)
    job = Job(
        "residual_stream",
        {"layers": wanted, "position": position},
        conditions=[cond],
        edits=edits,
        pool=samples,
    )

    def compute(chunk: list[Sample]) -> tuple[dict[str, Tensor], list[dict[str, Any]]]:
        out = torch.empty(len(chunk), len(wanted), vlm.d_model)
        for idx, enc in batches(vlm, chunk, cond, batch_size, all_samples=samples):
            batch = Batch(vlm, enc, [chunk[i] for i in idx], cond, "forward", samples)
            out[idx] = trace_states(vlm, batch, wanted, position, edits, **trace_kwargs)
        return {"states": out}, [{} for _ in chunk]

    _, tensors, _ = run(
        vlm, samples, job, compute, RunOptions(batch_size, store, overwrite, shard, progress_bar)
    )
    return tensors["states"]


@dataclass
class GeneratedStates:
    """Greedy answers of N samples under each condition, with the last prompt token's residual
    states read in the same generate trace (:func:`generate_states`).

    Attributes:
        conditions: the condition names, in the order given.
        layers: layer indices of ``states`` (0 = embeddings, l = output of decoder layer l).
        sample_ids: ``Sample.id`` of each row.
        states: condition → float32 CPU ``[N, len(layers), d_model]``: ``h^l`` of the last prompt
            token at the prompt forward (before any token is generated).
        token_ids: condition → generated ids per sample, cut at the first end-of-sequence token.
        texts: condition → decoded answers (special tokens removed, stripped).
        logprobs: with ``token_logprobs=True``, condition → per sample the natural-log
            probability ``log p(y_t | x, y_<t)`` of each chosen token, up to and including the
            end-of-sequence token (else None).
        first_token: with ``token_logprobs=True``, condition → per sample the token chosen at the
            first step (the end-of-sequence token for an empty answer), else None.
        visual_attention: with ``visual_attention=True``, float32 ``[N]``: under the first
            condition, the last prompt token's attention mass on image tokens, averaged over heads
            and layers; else None.
    """

    conditions: list[str]
    layers: list[int]
    sample_ids: list[str]
    states: dict[str, Float[Tensor, "n layer d"]]
    token_ids: dict[str, list[list[int]]]
    texts: dict[str, list[str]]
    logprobs: dict[str, list[list[float]]] | None = None
    first_token: dict[str, list[int]] | None = None
    visual_attention: Float[Tensor, " n"] | None = None

    def __len__(self) -> int:
        return len(self.sample_ids)


def check_visual_attention(vlm: VLM) -> None:
    """Raise unless the model can return the attention weights the visual-attention mass needs
    (eager attention, image tokens in the decoder's sequence)."""
    impl = getattr(vlm.hf.config, "_attn_implementation", None)
    if impl != "eager":
        raise InterpError(
            f"visual attention needs eager attention weights, but the model uses {impl!r}: load it with "
            "interp.load(..., attn_implementation='eager')"
        )
    if vlm.adapter.fusion != "tokens":
        raise InterpError(
            f"visual attention (attention mass on image tokens) is undefined for {vlm.adapter.name!r}, "
            "whose image enters through cross-attention"
        )


def generate_states(
    vlm: VLM,
    samples: Sequence[Sample] | Sample,
    conditions: Sequence[str | Condition] | str | Condition = ("full",),
    *,
    layers: Iterable[int] | None = None,
    max_new_tokens: int = 16,
    token_logprobs: bool = False,
    visual_attention: bool = False,
    edits: Sequence[Intervention] | None = None,
    batch_size: int = 8,
    store: str | Path | None = None,
    overwrite: bool = False,
    shard: Shard = None,
    progress_bar: bool = True,
    measurement: str = "generate_states",
    labels: Mapping[str, Any] | None = None,
    **trace_kwargs: Any,
) -> GeneratedStates:
    """Generate a greedy answer under each condition and read the last prompt token's residual
    stream at every chosen layer in the same trace: one nnsight generate trace per batch and
    condition, the states read during its first (prompt) forward.

    For sample x under condition c the states are ``h^l(c(x))[last prompt token]`` for l in
    ``layers`` (the values :func:`residual_stream` returns for ``position="last"``), and the answer
    is ``y_t = argmax_v p(v | c(x), y_<t)`` until the end-of-sequence token or ``max_new_tokens``
    (the tokens :func:`interp.generate` returns).

    Args:
        conditions: one condition or several (each gets its own states and answers; a batch of
            samples runs under every condition before the next batch).
        layers: indices in 0..L, increasing (None = all).
        token_logprobs: also keep the log-probability of each chosen token and the first chosen
            token (:attr:`GeneratedStates.logprobs`, :attr:`GeneratedStates.first_token`).
        visual_attention: also measure, under the first condition, the attention mass of the last
            prompt token on image tokens (mean over heads and layers; needs
            ``attn_implementation="eager"`` and a model whose image tokens sit in the sequence).
        edits: interventions applied at the prompt forward and, for ``steps = "all"`` edits, at
            every generated step.
        store, overwrite, shard: see :func:`residual_stream`.
        measurement, labels: the name and any further settings the store records as its
            configuration (a study names its runs; a store is only resumed by an equal
            configuration).
        **trace_kwargs: passed to nnsight untouched.

    Raises:
        ConditionError: a ``no_prefix`` condition, or the same condition twice.
        InterpError: ``visual_attention`` on a model that cannot give attention weights.
    """
    samples = ensure_samples(samples)
    given = [conditions] if isinstance(conditions, (str, Condition)) else list(conditions)
    conds = [Condition.parse(c) for c in given]
    names = [str(c) for c in conds]
    if not conds or len(set(names)) != len(names):
        raise ConditionError(f"give one or more different conditions, got {given!r}")
    if any(c.prefix == "removed" for c in conds):
        raise ConditionError("'no_prefix' applies to teacher-forced scoring (interp.score) only")
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
    wanted = resolve_layers(vlm, layers)
    if visual_attention:
        check_visual_attention(vlm)
    edits = check_edits(vlm, edits)
    settings: dict[str, Any] = {
        "layers": wanted,
        "max_new_tokens": max_new_tokens,
        "visual_attention": visual_attention,
    }
    if token_logprobs:
        settings["token_logprobs"] = True
    job = Job(
        measurement,
        {**settings, **(labels or {})},
        conditions=conds,
        edits=edits,
        pool=samples,
    )

    def compute(chunk: list[Sample]) -> tuple[dict[str, Tensor], list[dict[str, Any]]]:
        tensors: dict[str, Tensor] = {}
        records: list[dict[str, Any]] = [{} for _ in chunk]
        for k, (cond, name) in enumerate(zip(conds, names)):
            attend = visual_attention and k == 0
            states = torch.empty(len(chunk), len(wanted), vlm.d_model)
            attn = torch.full((len(chunk),), float("nan"))
            for idx, enc in batches(vlm, chunk, cond, batch_size, all_samples=samples):
                batch = Batch(vlm, enc, [chunk[i] for i in idx], cond, "generate", samples)
                read = partial(
                    read_states,
                    vlm,
                    wanted,
                    torch.arange(len(enc), device=enc.last_index.device),
                    enc.last_index,
                    skipped=batch.skipped_layers,
                    image_mask=enc.image_mask.to(torch.float32) if attend else None,
                )
                ids, (st, mass), scores = generation.generate_batch(
                    vlm,
                    batch,
                    max_new_tokens,
                    edits=edits,
                    on_prompt=read,
                    output_scores=token_logprobs,
                    **trace_kwargs,
                )
                states[idx] = st.detach().to("cpu", torch.float32)
                if mass is not None:
                    attn[idx] = mass.detach().cpu().float()
                for row, i in enumerate(idx):
                    records[i][f"ids:{name}"] = ids[row]
                if scores is not None:
                    # greedy: the chosen token is the argmax, its log-probability the max
                    logp = scores.float().log_softmax(-1)
                    best, first = logp.max(-1).values, logp[:, 0].argmax(-1)
                    for row, i in enumerate(idx):
                        steps = min(len(ids[row]) + 1, logp.shape[1])
                        records[i][f"logprobs:{name}"] = best[row, :steps].tolist()
                        records[i][f"first:{name}"] = int(first[row])
            tensors[f"states:{name}"] = states
            if attend:
                tensors["visual_attention"] = attn
        return tensors, records

    _, tensors, records = run(
        vlm, samples, job, compute, RunOptions(batch_size, store, overwrite, shard, progress_bar)
    )
    token_ids = {name: [r[f"ids:{name}"] for r in records] for name in names}
    return GeneratedStates(
        conditions=names,
        layers=wanted,
        sample_ids=[str(s.id) for s in samples],
        states={name: tensors[f"states:{name}"] for name in names},
        token_ids=token_ids,
        texts={
            name: [vlm.tokenizer.decode(t, skip_special_tokens=True).strip() for t in ids]
            for name, ids in token_ids.items()
        },
        logprobs={n: [r[f"logprobs:{n}"] for r in records] for n in names}
        if token_logprobs
        else None,
        first_token={n: [r[f"first:{n}"] for r in records] for n in names}
        if token_logprobs
        else None,
        visual_attention=tensors.get("visual_attention"),
    )


__all__ = ["GeneratedStates", "check_visual_attention", "generate_states", "residual_stream"]
