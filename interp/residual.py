"""Reading the residual stream: :func:`residual_stream` (one forward of the prompts) and
:func:`generate_states` (greedy answers, with the prompt's states read in the same generate trace)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import torch
from jaxtyping import Float
from torch import Tensor

from . import generation
from .conditions import Condition
from .edits import Batch, Intervention, check_edits, local_only
from .encoding import append_targets, batches
from .errors import ConditionError, InterpError
from .options import RunOptions
from .plain import attention_kind, residual_sites
from .reprs import Summary
from .runner import Job
from .runner import run as run_job
from .samples import Sample, ensure_samples
from .tracing import Position, forward_reads, resolve_layers, trace_states

if TYPE_CHECKING:
    from .model import VLM

ReadAt = Literal["prompt", "generated"]
READ_AT = ("prompt", "generated")


def residual_stream(
    vlm: VLM,
    samples: Sequence[Sample] | Sample,
    condition: str | Condition = "full",
    *,
    layers: Iterable[int] | None = None,
    position: Position = "last",
    edits: Sequence[Intervention] | None = None,
    run: RunOptions | None = None,
    **options: Any,
) -> Float[Tensor, "n layer d"]:
    """Residual-stream states of every sample at the chosen layers, one nnsight trace per batch.

    Index convention (``docs/conventions.md``): 0 = input embeddings, l = output of decoder layer l
    (before the final norm), so with ``layers=None`` the result has L+1 entries along ``layer``.

    Args:
        condition: how samples become inputs (see :mod:`interp.conditions`).
        layers: indices in 0..L, increasing (None = all).
        position: ``"last"`` (last prompt token) or a negative offset from the end of the prompt.
        edits: interventions applied during the forward (see :mod:`interp.edits`).
        run: how it runs (:class:`~interp.options.RunOptions`: ``batch_size`` — results do not
            depend on it —, a resumable ``store``, ``overwrite``, ``shard``, ``progress_bar``,
            and the nnsight trace options ``remote``, ``backend``, ``trace``); its fields may
            also be given as keywords (``batch_size=4``, ``remote=True``), and any other keyword
            is passed to nnsight's ``trace`` untouched.

    Returns:
        float32 CPU tensor ``[N, len(layers), d_model]`` in the order of ``samples``.
    """
    opts, trace, samples, cond = generation.prompt_run(samples, condition, run, options)
    wanted = resolve_layers(vlm, layers)
    local_only(vlm, trace, "residual_stream", edits=edits or ())  # refused before any check
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
        for idx, enc in batches(vlm, chunk, cond, opts.batch_size, all_samples=samples):
            rows = [chunk[i] for i in idx]
            batch = Batch(vlm, enc, rows, cond, "forward", samples, trace_options=trace)
            out[idx] = trace_states(vlm, batch, wanted, position, edits, **trace)
        return {"states": out}, [{} for _ in chunk]

    _, tensors, _ = run_job(vlm, samples, job, compute, opts)
    return tensors["states"]


@dataclass(repr=False)
class GeneratedStates(Summary):
    """Greedy answers of N samples under each condition, with residual states read at the last
    prompt token or at the last generated token (:func:`generate_states`).

    Attributes:
        conditions: the condition names, in the order given.
        layers: layer indices of ``states`` (0 = embeddings, l = output of decoder layer l).
        sample_ids: ``Sample.id`` of each row.
        states: condition → float32 CPU ``[N, len(layers), d_model]``: ``h^l`` at the read
            position (``read_at``): the last prompt token, or the last generated token.
        token_ids: condition → generated ids per sample, cut at the first end-of-sequence token.
        texts: condition → decoded answers (special tokens removed, stripped).
        logprobs: with ``token_logprobs=True``, condition → per sample the natural-log
            probability ``log p(y_t | x, y_<t)`` of each chosen token, up to and including the
            end-of-sequence token (else None).
        first_token: with ``token_logprobs=True``, condition → per sample the token chosen at the
            first step (the end-of-sequence token for an empty answer), else None.
        visual_attention: with ``visual_attention=True``, float32 ``[N]``: under the first
            condition, the read position's attention mass on image tokens, averaged over heads
            and layers; else None.
        read_at: ``"prompt"`` or ``"generated"`` (see :func:`generate_states`).
        final_states: with ``final_norm=True``, condition → float32 ``[N, d]``: the decoder's
            final norm's output at the read position, ``norm(h^L)`` (read in the trace, so on
            the model's machine); else None.
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
    read_at: ReadAt = "prompt"
    final_states: dict[str, Float[Tensor, "n d"]] | None = None

    def _repr_head(self) -> dict[str, Any]:
        return {
            "n": len(self),
            "conditions": self.conditions,
            "layers": len(self.layers),
            "read_at": self.read_at,
        }

    def __len__(self) -> int:
        return len(self.sample_ids)


def check_visual_attention(vlm: VLM) -> None:
    """Raise unless the model's attention weights on image tokens can be read: image tokens in
    the decoder's sequence, and eager attention's weights returned (eager) or recomputed from
    the attention call's inputs (SDPA, and any remote run: :func:`interp.plain.attention_kind`);
    flash attention's inputs hold no 4-D mask to recompute them with."""
    impl = getattr(vlm.hf.config, "_attn_implementation", None)
    if impl not in (None, "eager", "sdpa") and not vlm.remote:
        raise InterpError(
            f"visual attention needs eager attention's weights, which eager returns and SDPA's "
            f"inputs give; the model uses {impl!r}: load it with interp.load(..., "
            "attn_implementation='sdpa') or 'eager'"
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
    read_at: str = "prompt",
    token_logprobs: bool = False,
    visual_attention: bool = False,
    final_norm: bool = False,
    edits: Sequence[Intervention] | None = None,
    measurement: str = "generate_states",
    labels: Mapping[str, Any] | None = None,
    run: RunOptions | None = None,
    **options: Any,
) -> GeneratedStates:
    """Generate a greedy answer under each condition and read the residual stream at every chosen
    layer, at the last prompt token or at the last generated token.

    The answer is ``y_t = argmax_v p(v | c(x), y_<t)`` for sample x under condition c, until the
    end-of-sequence token or ``max_new_tokens`` (the tokens :func:`interp.generate` returns); the
    answer ``y_1..y_T`` is those tokens without the end-of-sequence token (T = 0 when it comes
    first). The states are ``h^l`` for l in ``layers`` at the read position:

    - ``read_at="prompt"``: the last prompt token, read during the prompt forward of the same
      generate trace (one trace per batch and condition; the values :func:`residual_stream`
      returns for ``position="last"``);
    - ``read_at="generated"``: the last generated token ``y_T`` of the condition's own answer: the
      answer is fed back after the prompt in one teacher-forced forward per batch and condition,
      ``h^l(c(x), y_1..y_T)`` at the position of ``y_T`` — the state whose output predicts the
      token after the answer (the end-of-sequence token, when the answer ended by itself). This is
      the state Hugging Face's ``generate(output_hidden_states=True)`` computes at its last step
      for an answer that ends with the end-of-sequence token; for an answer cut at
      ``max_new_tokens`` it is the state generation would compute at the next step. A one-token
      answer ``y_1`` is read at ``y_1`` (the prompt plus one token); the end-of-sequence token is
      never read: an empty answer (T = 0) is read at the last prompt token, as with ``"prompt"``.
      Edits act in the teacher-forced forward as in :func:`interp.score` (``ctx.positions("answer")``
      are ``y_1..y_T``).

    Args:
        conditions: one condition or several (each gets its own states and answers; a batch of
            samples runs under every condition before the next batch).
        layers: indices in 0..L, increasing (None = all).
        read_at: where the states (and the visual attention) are read: ``"prompt"`` or
            ``"generated"`` (above).
        token_logprobs: also keep the log-probability of each chosen token and the first chosen
            token (:attr:`GeneratedStates.logprobs`, :attr:`GeneratedStates.first_token`).
        visual_attention: also measure, under the first condition, the attention mass of the read
            position on image tokens (mean over heads and layers; needs
            ``attn_implementation="eager"`` and a model whose image tokens sit in the sequence).
        final_norm: also read the decoder's final norm's output at the read position
            (``GeneratedStates.final_states``), in the same trace.
        edits: interventions applied at the prompt forward and, for ``steps = "all"`` edits, at
            every generated step.
        measurement, labels: the name and any further settings the store records as its
            configuration (a study names its runs; a store is only resumed by an equal
            configuration).
        run: how it runs (:class:`~interp.options.RunOptions`: batch size, store, shard,
            progress bar, nnsight trace options); its fields may also be given as keywords, as
            in :func:`residual_stream`.

    Raises:
        ConditionError: a ``no_prefix`` condition, or the same condition twice.
        InterpError: ``visual_attention`` on a model that cannot give attention weights.
        ValueError: ``read_at`` is neither ``"prompt"`` nor ``"generated"``.
    """
    opts = RunOptions.resolve(run, **options)
    trace = opts.trace_options()
    if read_at not in READ_AT:
        raise ValueError(
            f"read_at must be 'prompt' (the last prompt token) or 'generated' (the last "
            f"generated token), got {read_at!r}"
        )
    samples = ensure_samples(samples)
    given = [conditions] if isinstance(conditions, (str, Condition)) else list(conditions)
    conds = [Condition.parse(c) for c in given]
    names = [str(c) for c in conds]
    if not conds or len(set(names)) != len(names):
        raise ConditionError(f"give one or more different conditions, got {given!r}")
    generation.refuse_no_prefix(conds)
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
    wanted = resolve_layers(vlm, layers)
    local_only(vlm, trace, measurement, edits=edits or ())
    kind = attention_kind(vlm, trace)
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
    if read_at != "prompt":  # stores of prompt reads keep their configuration
        settings["read_at"] = read_at
    if final_norm:  # stores without it keep their configuration
        settings["final_norm"] = True
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
            normed = torch.empty(len(chunk), vlm.d_model)
            for idx, enc in batches(vlm, chunk, cond, opts.batch_size, all_samples=samples):
                rows = [chunk[i] for i in idx]
                batch = Batch(vlm, enc, rows, cond, "generate", samples, trace_options=trace)
                sites = residual_sites(
                    vlm,
                    wanted,
                    skipped=batch.skipped_layers,
                    attend=attend,
                    normed=final_norm,
                    attention=kind,
                )
                read = (
                    *sites,
                    torch.arange(len(enc), device=enc.last_index.device),
                    enc.last_index,
                    enc.image_mask.to(torch.float32) if attend else None,
                )
                ids, prompt_read, scores = generation.generate_batch(
                    vlm,
                    batch,
                    max_new_tokens,
                    edits=edits,
                    prompt_read=read if read_at == "prompt" else None,
                    output_scores=token_logprobs,
                    **trace,
                )
                if read_at == "prompt":
                    st, mass = prompt_read
                else:
                    fed = Batch(vlm, enc, rows, cond, "score", samples, trace_options=trace)
                    st, mass = read_after_answer(
                        vlm, fed, ids, wanted, edits, attend=attend, normed=final_norm, **trace
                    )
                st = st.detach().to("cpu", torch.float32)
                if final_norm:  # the final norm's output, read after the layers
                    st, normed[idx] = st[:, :-1], st[:, -1]
                states[idx] = st
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
            if final_norm:
                tensors[f"final:{name}"] = normed
            if attend:
                tensors["visual_attention"] = attn
        return tensors, records

    _, tensors, records = run_job(vlm, samples, job, compute, opts)
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
        read_at=read_at,
        final_states={n: tensors[f"final:{n}"] for n in names} if final_norm else None,
    )


def read_after_answer(
    vlm: VLM,
    batch: Batch,
    answers: Sequence[Sequence[int]],
    layers: Sequence[int],
    edits: Sequence[Intervention] = (),
    *,
    attend: bool = False,
    normed: bool = False,
    **trace_kwargs: Any,
) -> tuple[Float[Tensor, "batch layer d"], Float[Tensor, " batch"] | None]:
    """One teacher-forced forward of each row's prompt followed by its answer tokens: the residual
    states at ``layers`` (and with ``attend`` the attention mass on image tokens, mean over heads
    and layers) at each row's last token — the answer's last token, or the last prompt token for
    an empty answer. ``batch`` is a ``"score"`` batch of the prompts; edits act as in
    :func:`interp.score`."""
    traced, positions, valid = append_targets(vlm, batch.encoding, answers)
    answer = torch.zeros_like(traced.image_mask)
    rows = torch.arange(len(traced), device=positions.device)
    answer[rows[:, None].expand_as(positions)[valid], positions[valid]] = True
    batch.traced, batch.answer_mask = traced, answer
    # left padding: every row ends at the last position
    index = torch.full_like(traced.last_index, traced.input_ids.shape[1] - 1)
    return forward_reads(
        vlm,
        batch,
        traced,
        layers,
        rows.to(index.device),
        index,
        edits,
        image_mask=traced.image_mask.to(torch.float32) if attend else None,
        normed=normed,
        stop=not edits,
        **trace_kwargs,
    )


__all__ = [
    "READ_AT",
    "GeneratedStates",
    "check_visual_attention",
    "generate_states",
    "read_after_answer",
    "residual_stream",
]
