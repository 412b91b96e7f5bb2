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

import contextlib
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import nnsight
import pandas as pd
import torch
from einops import rearrange
from torch import Tensor
from transformers import GenerationConfig

from . import prefix, prefix_generation
from .conditions import Condition, stable_seed
from .contrast import check_decoding, contrast_batch
from .edits import (
    Batch,
    Decoding,
    Intervention,
    check_edits,
    edit_hook,
    local_only,
    quiet_unreached,
)
from .encoding import batch_indices, encode
from .errors import ConditionError
from .options import RunOptions, is_remote
from .plain import head_transform
from .reprs import Summary
from .runner import Job
from .runner import run as run_job
from .samples import Sample, ensure_samples
from .store import stack_rows
from .wire import apply_writes, read_site, row_weights

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

    def seeds(self, sample_ids: Sequence[str]) -> list[int] | None:
        """Each row's seed, from ``(seed, sample id)`` (None when greedy): the generation block
        draws row r's tokens with ``torch.Generator().manual_seed(seeds[r])`` on the CPU, so a
        sample's draws depend on neither its batch nor the device."""
        if not self.do_sample:
            return None
        return [stable_seed(f"{self.seed}:{sid}") for sid in sample_ids]

    def plain(self) -> tuple[float, int, float]:
        """``(temperature, top_k, top_p)`` as plain numbers (0 and 1.0: no cut), for the block."""
        return float(self.temperature), int(self.top_k or 0), float(self.top_p or 1.0)


GREEDY = Sampling()


@dataclass(repr=False)
class Generation(Summary):
    """Answers of a set of samples under one condition.

    Attributes:
        texts: decoded answers (special tokens removed, stripped).
        token_ids: generated ids per sample, cut at the first end-of-sequence token (exclusive).
        sample_ids: ``Sample.id`` of each row.
        condition: the condition the answers were generated under.
        sampling: the decoding settings.
        decoding: the decoding method (``repr``), None for plain decoding.
        scores: with ``output_scores=True``, per sample the ``[steps, vocab]`` scores each token
            was chosen from (the logits, or the decoding method's combination, before
            temperature, top-k and top-p), one row per step up to and including the
            end-of-sequence token.
    """

    texts: list[str]
    token_ids: list[list[int]]
    sample_ids: list[str]
    condition: str
    sampling: Sampling = GREEDY
    decoding: str | None = None
    scores: list[Tensor] | None = None

    def _repr_head(self) -> dict[str, Any]:
        return {"n": len(self), "condition": self.condition, "decoding": self.decoding or "plain"}

    def __len__(self) -> int:
        return len(self.texts)

    def to_frame(self) -> pd.DataFrame:
        """One row per sample: id, condition, answer, token count, decoding, sampling flag and seed."""
        return pd.DataFrame(
            {
                "sample_id": self.sample_ids,
                "condition": self.condition,
                "answer": self.texts,
                "n_tokens": [len(t) for t in self.token_ids],
                "decoding": self.decoding or "plain",
                "do_sample": self.sampling.do_sample,
                "seed": self.sampling.seed,
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


def plain_generate_kwargs(vlm: VLM, max_new_tokens: int) -> dict[str, Any]:
    """:func:`plain_generation_config` as plain ``generate`` keywords (what a remote trace may
    carry: no ``GenerationConfig`` object): every field where the model's own generation config
    differs from the plain one, so that the config ``generate`` merges from them is the plain one."""
    plain = plain_generation_config(vlm, max_new_tokens).to_dict()
    own = getattr(vlm.hf, "generation_config", None)
    model = (own if own is not None else GenerationConfig()).to_dict()
    skip = {"transformers_version", "_from_model_config", "_commit_hash"}
    missing = object()
    # a field the plain config leaves unset (None) is filled from the model's, as generate does
    return {
        k: v
        for k, v in plain.items()
        if k not in skip and v is not None and model.get(k, missing) != v
    }


PromptRead = tuple[list[tuple[Any, str]], list[int], Tensor, Tensor, Tensor | None]


def generate_batch(
    vlm: VLM,
    batch: Batch,
    max_new_tokens: int,
    *,
    sampling: Sampling = GREEDY,
    edits: Sequence[Intervention] = (),
    prompt_read: PromptRead | None = None,
    decoding: Decoding | None = None,
    output_scores: bool = False,
    server_prefix: prefix_generation.ServerPrefix | None = None,
    **trace_kwargs: Any,
) -> tuple[list[list[int]], tuple[Tensor, Tensor | None] | None, Tensor | None]:
    """Generate for one batch inside one nnsight generate trace.

    With ``decoding``, ``batch`` holds ``batch.experts`` expert rows followed by one block of as
    many rows per amateur condition (see :func:`contrast_batch`); the token chosen for expert row
    i from ``decoding.combine`` is fed to row i of every block.

    ``prompt_read`` = ``(sites, order, rows, index, image_mask)`` (:func:`interp.plain.residual_sites`
    and the positions to read) reads the residual stream during the prompt forward, and with
    ``image_mask`` the attention mass on image tokens (as :func:`interp.tracing.forward_reads`).

    The block holds only envoys, tensors and plain values (:mod:`interp.plain`): greedy
    generation without edits or a decoding method runs here or on NDIF alike; edits, a decoding
    method and seeded sampling are library objects and run here only. With ``server_prefix``
    (a remote run sharing prefixes, :mod:`interp.prefix_generation`) one nnsight session runs
    the prefixes' forward, selects each row's group from the cache it leaves on the server, and
    then the same block from that cache; the results are read once the session has closed.

    Returns:
        the new token ids per expert row (cut at the end-of-sequence token), the prompt read
        ``(states, mass)`` (None without ``prompt_read``), and with ``output_scores`` the scores
        each token was chosen from, ``[rows, steps, vocab]`` (else None).
    """
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
    n = batch.experts if batch.experts is not None else len(batch)
    n_rows = len(batch)
    copies = n_rows // n
    if decoding is not None and copies != 1 + len(decoding.amateurs):
        raise ValueError(
            f"a batch for {decoding!r} holds {n} expert rows and one block per amateur; got "
            f"{len(batch)} rows"
        )
    seeds = sampling.seeds(batch.encoding.sample_ids[:n])
    temperature, top_k, top_p = sampling.plain()
    # plain data only inside the block; library objects only where this process runs it
    head, (scale, cap) = vlm.lm_head, head_transform(vlm)
    writes, hook = edit_hook(vlm, batch, edits, generating=True)
    # a contrastive rule as plain data where it lowers (its formula is repeated in the block)
    contrast = decoding.lower(max_new_tokens) if decoding is not None else None
    combine = decoding.combine if decoding is not None and contrast is None else None
    prompt_states = prompt_mass = None
    keywords, inputs = vlm.trace_keywords(
        batch.encoding,
        generate=True,
        plain=hook is None and combine is None,
        **plain_generate_kwargs(vlm, max_new_tokens),
        **trace_kwargs,
    )
    nn, session, first, rows_of, key, rope = vlm.nn, contextlib.nullcontext(), None, None, "", None
    sent: dict[str, Any] = {}
    if is_remote(keywords):
        # a session per batch, shared or not: nnsight's server reads a file's block source once,
        # so every request from this file must ship the same block (the session's)
        sent = {k: keywords.pop(k) for k in ("remote", "backend") if k in keywords}
        session = nn.session(**sent)
    if server_prefix is not None:
        if not is_remote(sent):  # locally the prefixes' cache comes as a trace keyword
            raise ValueError("server_prefix is for a remote run")
        first, rows_of, key = server_prefix.inputs, server_prefix.rows, server_prefix.cache_kwarg
        rope = server_prefix.rope
    with torch.no_grad(), quiet_unreached(), session:
        if first is not None:  # the prefixes' cache, kept on the server, a row per batch row
            with nn.trace(**first, use_cache=True):
                ran = nn.output
                cache = ran.get("cache")
                if cache is None:
                    cache = ran.get("past_key_values")
            cache.batch_select_indices(rows_of)
            keywords[key] = cache
            if rope is not None:  # M-RoPE: HF's positions plus the row's group's rope delta
                deltas = rope.rope_deltas  # one per group
                delta = deltas[rows_of.to(deltas.device)]
                inputs["position_ids"] = inputs["position_ids"].to(delta.device)[None] + delta
        with nn.trace(**keywords) as tracer:
            # edits first: at a shared site (the logits) they act before the choice
            if hook is not None:
                hook(tracer)
            for prompt_writes, step_writes in writes:  # interp.wire.apply_writes, by source
                # one invoke per edit; every step when it edits generated steps
                with tracer.invoke():
                    for step in tracer.iter[:] if step_writes else [0]:
                        apply_writes(prompt_writes if step == 0 else step_writes, step)
                        if step_writes:  # every step waits for the model (see apply_edits)
                            _ = head.output
            with tracer.invoke(**inputs):
                chosen = nnsight.save([])
                kept = nnsight.save([])
                for step in tracer.iter[:]:
                    # the prompt's states, before the logits
                    if step == 0 and prompt_read is not None:
                        sites, order, rows, index, image_mask = prompt_read
                        states, masses = [], []
                        for s, k in sites:  # in execution order, each cut to the read rows at once
                            if k == "attention" or k.startswith("weights:"):
                                w = row_weights(s, k, rows, index)
                            else:
                                states.append(read_site(s, k, rows, index))
                                continue
                            masses.append((w * image_mask[:, None, :]).sum(-1).mean(-1))
                        prompt_states = torch.stack(states, 1)[:, order].save()
                        if masses:
                            prompt_mass = torch.stack(masses, 1).mean(1).save()
                    out = head.output
                    last = out[:, -1]
                    if scale != 1.0:  # the forward's own transform of the head's output
                        last = last * scale
                    if cap:
                        last = torch.tanh(last / cap) * cap
                    if contrast is not None:  # Decoding.lower's formula
                        logprobs, weights, log_beta = contrast
                        z = last.float().log_softmax(-1) if logprobs else last.float()
                        expert, amateur = z[:n], z[n:].reshape(copies - 1, n, -1).mean(0)
                        w = weights[step]
                        scores = (1.0 + w) * expert - w * amateur
                        cut = expert < log_beta + expert.max(dim=-1, keepdim=True).values
                        scores = scores.masked_fill(cut, float("-inf"))
                    elif combine is None:
                        scores = last
                    else:
                        z = last.float()
                        scores = combine(
                            z[:n], rearrange(z[n:], "(k n) v -> k n v", n=n), int(step) + 1
                        )
                    if seeds is None:
                        token = scores.argmax(dim=-1)
                    else:  # temperature, top-k, top-p (as HF's warpers), a draw per row on the CPU
                        if step == 0:
                            gens = []
                            for s in seeds:
                                gens.append(torch.Generator().manual_seed(s))
                        z = scores.float() / temperature
                        if top_k:
                            kth = torch.topk(z, min(top_k, z.shape[-1]), dim=-1).values[..., -1:]
                            z = z.masked_fill(z < kth, float("-inf"))
                        if top_p < 1.0:
                            ordered, order = torch.sort(z, descending=False, dim=-1)
                            cut = ordered.softmax(dim=-1).cumsum(dim=-1) <= (1 - top_p)
                            cut[..., -1:] = False  # keep at least the most likely token
                            z = z.masked_fill(cut.scatter(-1, order, cut), float("-inf"))
                        probs = z.softmax(dim=-1).cpu()
                        draws = []
                        for r in range(n):
                            draws.append(torch.multinomial(probs[r], 1, generator=gens[r]))
                        token = torch.cat(draws).to(scores.device)
                    if output_scores:  # a copy: without a method, scores is a view of the logits
                        kept.append(scores.detach().to("cpu", torch.float32, copy=True))
                    forced = torch.full_like(last, float("-inf"))
                    forced[torch.arange(n_rows, device=forced.device), token.repeat(copies)] = 0.0
                    out[:, -1] = forced
                    chosen.append(token.cpu())
    ids = torch.stack(chosen, dim=1) if chosen else torch.zeros(n, 0, dtype=torch.long)
    scores_out = torch.stack(kept, dim=1) if output_scores and kept else None
    prompt = None if prompt_read is None else (prompt_states, prompt_mass)
    return cut_at_eos(vlm, ids), prompt, scores_out


def refuse_no_prefix(conds: Sequence[Condition]) -> None:
    """A run that is not teacher-forced has no answer prefix to remove (one message for every
    such entry point)."""
    if any(c.prefix == "removed" for c in conds):
        raise ConditionError("'no_prefix' applies to teacher-forced scoring (interp.score) only")


def prompt_run(
    samples: Sequence[Sample] | Sample,
    condition: str | Condition,
    run: RunOptions | None,
    options: dict[str, Any],
) -> tuple[RunOptions, dict[str, Any], list[Sample], Condition]:
    """The run options, trace keywords, samples and parsed condition of an entry point that runs
    prompts under one condition without teacher forcing (:func:`generate`,
    :func:`interp.residual_stream`): what both resolve and check first, in this order."""
    opts = RunOptions.resolve(run, **options)
    trace = opts.trace_options()
    samples = ensure_samples(samples)
    cond = Condition.parse(condition)
    refuse_no_prefix([cond])
    return opts, trace, samples, cond


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
    decoding: Decoding | None = None,
    edits: Sequence[Intervention] | None = None,
    output_scores: bool = False,
    run: RunOptions | None = None,
    **options: Any,
) -> Generation:
    """Answers of every sample under ``condition``, batched, one nnsight generate trace per batch.

    Args:
        max_new_tokens: generation budget; answers stop earlier at the model's end-of-sequence token.
        do_sample, temperature, top_k, top_p, seed: greedy (default) or seeded sampling (see
            :class:`Sampling`); sampled answers depend only on the sample and the seed.
        decoding: a contrastive decoding method (:class:`Decoding`, e.g.
            ``interventions.decoding.vcd()``): each token is chosen from
            ``decoding.combine(expert logits, amateur logits, t)`` — greedy or sampled alike — and
            the expert and amateur rows run in one batched forward per step.
        edits: interventions applied at the prompt forward and, for ``steps = "all"`` edits, at
            every generated step (with ``decoding``, on the amateur rows too: the model is edited,
            then decoded).
        output_scores: also return the scores each token was chosen from
            (:attr:`Generation.scores`).
        run: how it runs (:class:`~interp.options.RunOptions`: batch size, store, shard,
            progress bar, nnsight trace options such as ``remote``); its fields may also be given
            as keywords, as in :func:`interp.residual_stream`.

    Raises:
        DecodingError: ``decoding`` cannot run on this model or condition (before any compute).
    """
    opts, trace, samples, cond = prompt_run(samples, condition, run, options)
    sampling = Sampling(do_sample, temperature, top_k, top_p, seed)
    if decoding is not None:
        check_decoding(vlm, cond, decoding, samples)
    # a remote run is refused first: the edits' own checks may ask for what the server decides
    local_only(vlm, trace, "generate", edits=edits or (), decoding=decoding)
    edits = check_edits(vlm, [*(edits or []), *(decoding.edits if decoding else ())])
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
    settings: dict[str, Any] = {"max_new_tokens": max_new_tokens, "sampling": asdict(sampling)}
    if decoding is not None:
        settings["decoding"] = decoding.fingerprint()
    if output_scores:
        settings["scores"] = True
    job = Job(
        "generate",
        settings,
        conditions=[cond, *(decoding.amateurs if decoding else ())],
        edits=edits,
        pool=samples,
    )

    # samples that share media run the tokens before their questions once (interp.prefix_generation)
    shared = opts.share_prefix and prefix_generation.applies(vlm, edits, decoding, trace)
    remote = prefix.remote(vlm, trace)  # the prefixes then run in each batch's session

    def compute(chunk: list[Sample]) -> tuple[dict[str, Tensor], list[dict[str, Any]]]:
        records: list[dict[str, Any]] = [{} for _ in chunk]
        kept: list[Tensor | None] = [None] * len(chunk)
        if shared and prefix.worth_trying(chunk, cond):
            once = plain_generation_config(vlm, 1)
            once.return_dict_in_generate = True
            todo: Iterable[tuple[list[int], Any, dict[str, Any]]] = prefix_generation.batches(
                vlm, chunk, cond, samples, opts.batch_size, max_new_tokens, once, remote
            )
        else:
            indices = batch_indices(vlm, chunk, cond, opts.batch_size, all_samples=samples)
            todo = ((idx, None, {}) for idx in indices)
        for idx, enc, cached in todo:
            rows = [chunk[i] for i in idx]
            if decoding is None:
                if enc is None:
                    enc = encode(vlm, rows, cond, all_samples=samples)
                batch = Batch(vlm, enc, rows, cond, "generate", samples, trace_options=trace)
            else:
                batch = contrast_batch(vlm, rows, cond, decoding, samples, trace_options=trace)
            ids, _, scores = generate_batch(
                vlm,
                batch,
                max_new_tokens,
                sampling=sampling,
                edits=edits,
                decoding=decoding,
                output_scores=output_scores,
                **trace,
                **cached,  # the shared prefixes' cache, or remotely their inputs
            )
            for row, i in enumerate(idx):
                records[i] = {"ids": ids[row]}
                if scores is not None:
                    # the steps up to and including the end-of-sequence token
                    kept[i] = scores[row, : min(len(ids[row]) + 1, scores.shape[1])]
        tensors = {}
        if output_scores:
            tensors["scores"] = stack_rows([t for t in kept if t is not None])
        return tensors, records

    _, tensors, records = run_job(vlm, samples, job, compute, opts)
    ids = [r["ids"] for r in records]
    texts = [vlm.tokenizer.decode(row, skip_special_tokens=True).strip() for row in ids]
    scores_list = None
    if output_scores:
        steps = [min(len(row) + 1, max_new_tokens) for row in ids]
        scores_list = [tensors["scores"][i, :n] for i, n in enumerate(steps)]
    return Generation(
        texts,
        ids,
        [str(s.id) for s in samples],
        str(cond),
        sampling,
        repr(decoding) if decoding is not None else None,
        scores_list,
    )


__all__ = [
    "GREEDY",
    "Decoding",
    "check_decoding",
    "contrast_batch",
    "Generation",
    "Sampling",
    "cut_at_eos",
    "generate",
    "generate_batch",
    "plain_generate_kwargs",
    "plain_generation_config",
    "stop_ids",
]
