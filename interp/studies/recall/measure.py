"""The model runs of the study: greedy answers of every setting, last-prompt-token states at every
layer, the answers' log-probabilities and the logit lens of the eventual output token
(:func:`run_recall` → :class:`~.result.RecallRun`)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from jaxtyping import Float, Int

from interp.edits import check_edits
from interp.errors import EmptyInputError, RecallError
from interp.generation import generate
from interp.options import LENS_RUN, RunOptions
from interp.residual import generate_states
from interp.samples import Sample
from interp.store import substore

from .analysis import answer_perplexity_of, majority_vote
from .items import RecallItem, check_trivial, recall_items, select_families
from .result import RecallRun
from .settings import DEMO_IDENTIFY, TRIVIAL

if TYPE_CHECKING:
    from interp.edits import Intervention
    from interp.model import VLM

TensorLike = Any
"""A torch tensor (jaxtyping still checks shape and dtype at run time)."""


def logit_lens(
    vlm: VLM,
    states: Float[TensorLike, "n layer d"],
    tokens: Int[TensorLike, " n"],
    *,
    run: RunOptions | None = None,
    **options: Any,
) -> Float[TensorLike, "n layer"]:
    """The probability of token ``tokens[i]`` read off every layer (Sec. 6.1, Fig. 4 top):
    ``p_i^(l) = softmax(U · norm(h_i^(l)))[t_i]`` with ``norm`` the final norm and ``U`` the
    unembedding (``vlm.unembed``). At the last index (l = L) this is the model's own next-token
    probability; the paper applies ``U`` to ``h`` directly, which the final norm only rescales
    in most decoders but which shifts the distribution of un-normalised states.

    Args:
        states: residual-stream states ``[N, L+1, d]`` (e.g. of :func:`interp.residual_stream`).
        tokens: ``[N]`` token ids (the eventual output token of each row).
        run: how it runs (:class:`~interp.options.RunOptions`): ``run.batch_size`` rows a
            head call, and its trace options where the lens runs on a model loaded for NDIF
            (``remote=``, ...; one request per batch, :meth:`interp.VLM.unembed`); its fields
            may also be given as keywords.

    Returns:
        float32 CPU tensor ``[N, L+1]``.
    """
    if states.dim() != 3 or tokens.dim() != 1 or len(tokens) != len(states):
        raise RecallError(
            f"logit_lens takes states [N, L+1, d] and one token per row [N]; got "
            f"{tuple(states.shape)} and {tuple(tokens.shape)}"
        )
    opts = RunOptions.resolve(run or LENS_RUN, **options)
    batch_size, trace_options = opts.batch_size, opts.trace_options()
    out = torch.empty(states.shape[:2])
    for start in range(0, len(states), batch_size):
        sl = slice(start, start + batch_size)
        probs = vlm.unembed(states[sl], **trace_options).float().softmax(-1).cpu()  # [b, L+1, V]
        idx = tokens[sl].long().cpu()[:, None, None].expand(-1, probs.shape[1], 1)
        out[sl] = probs.gather(-1, idx)[..., 0]
    return out


@dataclass
class _Generated:
    texts: list[str]
    ids: list[list[int]]
    states: Any  # float32 [N, L+1, d]
    logprobs: list[list[float]]  # per step up to and including the end token
    first: list[int]


def _generate_states(
    vlm: VLM,
    samples: list[Sample],
    name: str,
    *,
    max_new_tokens: int,
    edits: Sequence[Intervention],
    run: RunOptions,
) -> _Generated:
    """Greedy answers, last-prompt-token states at every layer and the log-probability of each
    chosen token (:func:`interp.residual.generate_states`: one generate trace per batch)."""
    gen = generate_states(
        vlm,
        samples,
        "full",
        max_new_tokens=max_new_tokens,
        token_logprobs=True,
        edits=edits,
        measurement="recall_generate",
        labels={"setting": name},
        run=run,
    )
    assert gen.logprobs is not None and gen.first_token is not None
    return _Generated(
        gen.texts["full"],
        gen.token_ids["full"],
        gen.states["full"],
        gen.logprobs["full"],
        gen.first_token["full"],
    )


def _slug(condition: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", condition)


def run_recall(
    vlm: VLM,
    data: Sequence[Sample] | Sequence[RecallItem],
    *,
    families: Sequence[str] | str | None = None,
    trivial: Sequence[str] = TRIVIAL,
    identify: Mapping[str, str] | None = DEMO_IDENTIFY,
    guess_filter: bool = True,
    max_new_tokens: int = 8,
    whole_words: bool = True,
    seed: int = 0,
    edits: Sequence[Intervention] | None = None,
    run: RunOptions | None = None,
    **options: Any,
) -> RecallRun:
    """Run every setting of the visual-reference study (greedy decoding, as Appendix B).

    Passes over the N items, each batched:

    1. Visual (entity image + visual question): answers, the last prompt token's states at every
       layer, the log-probability of each generated token (its perplexity) — one generate trace
       per batch; then the logit lens of the first generated token (:func:`logit_lens`);
    2. Full Info (entity image + textual question): answers and states;
    3. Text-Only: the textual question under each ``trivial`` condition, then the majority vote;
    4. with ``guess_filter``: the visual question under each trivial condition (its majority
       answer being right means the prior alone answers it: the item is filtered out);
    5. with ``identify``: the family's identification question on the entity image.

    Args:
        data: samples labelled as the demo world's reference questions (see
            :func:`recall_items`) or :class:`RecallItem` objects.
        families: run these families only (None: all).
        trivial: the trivial-image conditions (see :data:`TRIVIAL`).
        identify: family -> identification question (None: no identification filter); items
            built by :func:`recall_items` carry it already.
        whole_words: two-way inclusion on word boundaries. The paper's inclusion is on
            characters, which counts the answer ``1`` as matching ``15``; on numeric answers that
            inflates accuracy, so whole words by default (``False``: the paper's exact rule).
        seed: seeds the majority vote's tie-break.
        edits: interventions applied in every pass.
        run: how it runs (:class:`~interp.options.RunOptions`; default ``batch_size`` 16): a
            ``store`` folder keeps each pass's resumable store under it; its fields may also be
            given as keywords (``batch_size=8``, ``store=...``).

    Runs remotely (``remote=`` / a model loaded for NDIF): every pass is greedy generation (one
    request per batch and condition), and the logit lens one more request per batch
    (:meth:`interp.VLM.unembed`).

    Raises:
        RemoteError: a remote run with edits that do not lower, before any compute.
        RecallError, UnknownFamilyError, ConditionError: bad data or settings (before any
            compute).
    """
    opts = RunOptions.resolve(run if run is not None else RunOptions(batch_size=16), **options)
    if data and all(isinstance(d, RecallItem) for d in data):
        items = select_families(list(data), families)  # type: ignore[arg-type]
        if identify is not None:
            items = [
                item
                if item.identify is not None or item.entity is None
                else _with_identify(item, identify.get(item.family))
                for item in items
            ]
    else:
        items = recall_items(list(data), families=families, identify=identify)  # type: ignore[arg-type]
    if not items:
        raise EmptyInputError("no recall items to run")
    ids = [item.id for item in items]
    if len(set(ids)) != len(ids):
        raise RecallError("two recall items share an id; give each item its own")
    conds = check_trivial(trivial)
    edits = check_edits(vlm, edits)
    if max_new_tokens < 1:
        raise RecallError(f"max_new_tokens must be >= 1, got {max_new_tokens}")

    def where(*parts: str) -> RunOptions:
        """The run options of one pass: its own store under ``store``."""
        return replace(opts, store=substore(opts.store, *parts))

    visual = [item.sample("visual") for item in items]
    textual = [item.sample("full_info") for item in items]
    common = {"max_new_tokens": max_new_tokens, "edits": edits}
    gen_v = _generate_states(vlm, visual, "visual", run=where("visual"), **common)
    gen_f = _generate_states(vlm, textual, "full_info", run=where("full_info"), **common)
    answers: dict[str, list[str | None]] = {"visual": list(gen_v.texts)}
    answers["full_info"] = list(gen_f.texts)

    def trivial_answers(samples: list[Sample], setting: str) -> None:
        for cond in conds:
            answers[f"{setting}:{cond}"] = list(
                generate(vlm, samples, cond, run=where(setting, _slug(cond)), **common).texts
            )
        answers[setting] = [
            majority_vote(
                [str(answers[f"{setting}:{c}"][i]) for c in conds], f"{item.id}/{setting}", seed
            )
            for i, item in enumerate(items)
        ]

    trivial_answers(textual, "text_only")
    if guess_filter:
        trivial_answers(visual, "visual_trivial")
    asked = [i for i, item in enumerate(items) if item.identify is not None]
    if asked:
        said = generate(
            vlm, [items[i].sample("identify") for i in asked], run=where("identify"), **common
        ).texts
        answers["identify"] = [None] * len(items)
        for i, text in zip(asked, said):
            answers["identify"][i] = text
    first = torch.tensor(gen_v.first, dtype=torch.long)
    lens = logit_lens(vlm, gen_v.states, first, run=opts)
    ppl = [answer_perplexity_of(lp, len(t)) for lp, t in zip(gen_v.logprobs, gen_v.ids)]
    return RecallRun(
        items=items,
        answers=answers,
        states={"visual": gen_v.states, "full_info": gen_f.states},
        lens=lens.numpy().astype(np.float64),
        perplexity=np.asarray(ppl, dtype=np.float64),
        first_token=first.numpy(),
        trivial=conds,
        whole_words=whole_words,
        seed=seed,
    )


def _with_identify(item: RecallItem, question: str | None) -> RecallItem:
    return replace(item, identify=question)
