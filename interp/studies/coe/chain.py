"""Contrasting chain-of-embedding (chain-of-embedding paper, §3.1): :func:`chain_of_embedding`.

For every sample and each of two conditions (default: ``full`` = (x_v, x_t) and ``blind`` =
(∅, x_t)), the last prompt token's residual stream at every layer,

    z_vis^l = f_l(x_v, x_t),   z_blind^l = f_l(∅, x_t),   l = 0..L,

together with the greedy answer of each condition (for the agreement split of §3.2) and, optionally,
the visual-attention baseline of Eq. 10. Each batch of each condition is **one** nnsight ``generate``
trace: the states are read during its first (prompt) forward, the answer is what it decodes.
Only last-token states are kept: memory is linear in N · (L+1) · d.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import nnsight
import numpy as np
import pandas as pd
import torch
from jaxtyping import Bool, Float
from torch import Tensor

from probes.distances import get_distance
from probes.split import agreement_split

from .conditions import Condition
from .encoding import Encoding, batches
from .errors import InterpError
from .generation import cut_at_eos, greedy_trace
from .samples import Sample, ensure_samples
from .store import ResultStore
from .tracing import progress, read_states, resolve_layers

if TYPE_CHECKING:
    from .model import VLM

LOGIT_LENS_METRICS = ("kl", "js")


@dataclass
class ChainOfEmbedding:
    """Last-token chains of embedding of N samples under two conditions.

    Attributes:
        states: condition name → float32 ``[N, n_layers, d]`` (layer indices in ``layers``).
        answers: condition name → greedy answer text per sample.
        answer_ids: condition name → generated token ids per sample.
        visual_attention: ``[N]`` mean over layers and heads of the last prompt token's attention
            mass on image tokens under the first condition (Eq. 10), or None if not measured.
        conditions: the two condition names, (image condition, contrast condition).
        layers: layer indices (0 = embeddings, l = output of decoder layer l).
        samples: the samples, in row order.
    """

    states: dict[str, Float[Tensor, "n layer d"]]
    answers: dict[str, list[str]]
    answer_ids: dict[str, list[list[int]]]
    conditions: tuple[str, str]
    layers: list[int]
    samples: list[Sample]
    visual_attention: Float[np.ndarray, " n"] | None = None
    vlm: VLM | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.samples)

    @property
    def sample_ids(self) -> list[str]:
        return [str(s.id) for s in self.samples]

    def distance(
        self, metric: str = "cosine", *, vlm: VLM | None = None, batch_size: int = 16
    ) -> Float[np.ndarray, "n layer"]:
        """Per-sample, per-layer distance d(z_a^l, z_b^l) between the two conditions.

        ``"cosine"`` (default, 1 − cos) and ``"l2"`` compare the hidden states; ``"kl"`` (KL(p_a‖p_b))
        and ``"js"`` compare logit-lens distributions softmax(lm_head(final_norm(z^l))) (Table 4 /
        Fig. 13 ablation) and need the model (``vlm=``, or the one that produced this result).
        """
        a, b = (self.states[c] for c in self.conditions)
        fn = get_distance(metric)
        if metric not in LOGIT_LENS_METRICS:
            return fn(a, b)
        model = vlm or self.vlm
        if model is None:
            raise InterpError(
                f"metric {metric!r} projects states through the model's head: pass vlm="
            )
        out = np.empty(a.shape[:2])
        for start in range(0, len(a), batch_size):
            sl = slice(start, start + batch_size)
            la = model.unembed(a[sl]).float().log_softmax(-1).cpu()
            lb = model.unembed(b[sl]).float().log_softmax(-1).cpu()
            out[sl] = fn(la, lb)
        return out

    def agreement(self) -> Bool[np.ndarray, " n"]:
        """D_VT membership (§3.2): True where the greedy answers of the two conditions differ."""
        a, b = (self.answers[c] for c in self.conditions)
        return agreement_split(a, b)

    def meta_frame(self) -> pd.DataFrame:
        """One row per sample: id, reference answer, both answers and the sample's ``meta`` labels."""
        a, b = self.conditions
        rows = []
        for i, s in enumerate(self.samples):
            rows.append(
                {
                    "sample_id": str(s.id),
                    "question": s.question,
                    "answer": s.answer,
                    f"answer_{a}": self.answers[a][i],
                    f"answer_{b}": self.answers[b][i],
                    **s.meta,
                }
            )
        frame = pd.DataFrame(rows)
        if self.visual_attention is not None:
            frame["visual_attention"] = self.visual_attention
        return frame


def _fingerprint(samples: Sequence[Sample]) -> str:
    h = hashlib.sha256()
    for s in samples:
        h.update(json.dumps([str(s.id), s.question, s.answer], ensure_ascii=False).encode())
        if isinstance(s.image, (str, Path)):
            h.update(str(s.image).encode())
    return h.hexdigest()[:16]


def _weights_fingerprint(vlm: VLM) -> str:
    """A cheap identity of the weights: sums of 16 evenly spaced parameter tensors."""
    params = list(vlm.hf.parameters())
    picked = params[:: max(1, len(params) // 16)]
    sums = [round(float(p.detach().double().sum()), 6) for p in picked]
    return hashlib.sha256(json.dumps([len(params), sums]).encode()).hexdigest()[:16]


def _check_attention(vlm: VLM) -> None:
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


def _trace_chain(
    vlm: VLM,
    enc: Encoding,
    layers: list[int],
    max_new_tokens: int,
    attention: bool,
    **trace_kwargs: Any,
) -> tuple[Tensor, list[list[int]], Tensor | None]:
    """One generate trace: states at ``layers`` (first forward), greedy ids, visual attention."""
    rows = torch.arange(len(enc), device=enc.last_index.device)
    image_mask = enc.image_mask.to(torch.float32) if attention else None
    skipped = vlm.adapter.skipped_layers(vlm.hf, enc.has_image)
    saved_attn = None  # only saved values leave a trace block, so the default is set out here
    with torch.no_grad(), greedy_trace(vlm, enc, max_new_tokens, **trace_kwargs) as tracer:
        states, mass = read_states(
            vlm, layers, rows, enc.last_index, skipped=skipped, image_mask=image_mask
        )
        saved_states = nnsight.save(states)
        if mass is not None:
            saved_attn = nnsight.save(mass)
        result = nnsight.save(tracer.result)
    ids = cut_at_eos(vlm, result[:, enc.input_ids.shape[1] :])
    attn = saved_attn.detach().cpu() if saved_attn is not None else None
    return saved_states.detach().to("cpu", torch.float32), ids, attn


def chain_of_embedding(
    vlm: VLM,
    samples: Sequence[Sample],
    conditions: tuple[str, str] = ("full", "blind"),
    *,
    layers: Iterable[int] | None = None,
    max_new_tokens: int = 8,
    visual_attention: bool = False,
    batch_size: int = 8,
    store: str | Path | ResultStore | None = None,
    progress_bar: bool = True,
    **trace_kwargs: Any,
) -> ChainOfEmbedding:
    """Last-token states of both conditions at every layer, plus each condition's greedy answer.

    Args:
        conditions: (image condition, contrast condition), e.g. ``("full", "blind")``,
            ``("full", "null:black")`` or ``("full", "null_question")`` (image+text vs image only).
        layers: layer indices 0..L (default all; 0 = embeddings).
        max_new_tokens: greedy answer budget (answers compared for the agreement split).
        visual_attention: also measure Eq. 10's visual attention under the first condition (needs
            ``attn_implementation="eager"``).
        store: a folder (or :class:`ResultStore`) to write results to batch by batch; a re-run with
            the same settings resumes where the last one stopped.
        **trace_kwargs: passed to nnsight untouched.
    """
    samples = ensure_samples(samples)
    ids = [str(s.id) for s in samples]
    if len(set(ids)) != len(ids):
        raise ValueError("sample ids must be unique within a chain-of-embedding run")
    names = tuple(str(Condition.parse(c)) for c in conditions)
    if len(names) != 2 or names[0] == names[1]:
        raise ValueError(f"give two different conditions, got {conditions!r}")
    wanted = resolve_layers(vlm, layers)
    if visual_attention:
        _check_attention(vlm)
    if store is not None and not isinstance(store, ResultStore):
        store = ResultStore(
            store,
            {
                "kind": "chain_of_embedding",
                "model": vlm.source or type(vlm.hf).__name__,
                "weights": _weights_fingerprint(vlm),
                "conditions": list(names),
                "layers": wanted,
                "max_new_tokens": max_new_tokens,
                "visual_attention": visual_attention,
                "samples": _fingerprint(samples),
                "n": len(samples),
                "batch_size": batch_size,
            },
        )
    done = store.done_ids if store is not None else set()
    todo = [s for s in samples if str(s.id) not in done]

    results: dict[str, dict[str, Any]] = {}
    chunks = [todo[start : start + batch_size] for start in range(0, len(todo), batch_size)]
    for chunk in progress(chunks, total=len(todo), desc="chain_of_embedding", enabled=progress_bar):
        tensors: dict[str, Tensor] = {}
        records: list[dict[str, Any]] = [{"id": str(s.id)} for s in chunk]
        for k, name in enumerate(names):
            states = torch.empty(len(chunk), len(wanted), vlm.d_model)
            attn = torch.full((len(chunk),), float("nan"))
            for idx, enc in batches(vlm, chunk, name, batch_size, all_samples=samples):
                st, gen, va = _trace_chain(
                    vlm, enc, wanted, max_new_tokens, visual_attention and k == 0, **trace_kwargs
                )
                states[idx] = st
                if va is not None:
                    attn[idx] = va
                for row, i in enumerate(idx):
                    records[i][f"ids:{name}"] = gen[row]
            tensors[f"states:{name}"] = states
            if visual_attention and k == 0:
                tensors["visual_attention"] = attn
        if store is not None:
            store.write([str(s.id) for s in chunk], tensors, records)
        else:
            for row, s in enumerate(chunk):
                results[str(s.id)] = {
                    "tensors": {k: v[row] for k, v in tensors.items()},
                    "record": records[row],
                }

    if store is not None:
        tensors, records = store.load(ids)
    else:
        keys = next(iter(results.values()))["tensors"].keys()
        tensors = {k: torch.stack([results[i]["tensors"][k] for i in ids]) for k in keys}
        records = [results[i]["record"] for i in ids]
    answer_ids = {name: [r[f"ids:{name}"] for r in records] for name in names}
    answers = {
        name: [vlm.tokenizer.decode(t, skip_special_tokens=True).strip() for t in answer_ids[name]]
        for name in names
    }
    va = tensors.get("visual_attention")
    return ChainOfEmbedding(
        states={name: tensors[f"states:{name}"] for name in names},
        answers=answers,
        answer_ids=answer_ids,
        conditions=(names[0], names[1]),
        layers=wanted,
        samples=samples,
        visual_attention=va.numpy().astype(np.float64) if va is not None else None,
        vlm=vlm,
    )


__all__ = ["ChainOfEmbedding", "chain_of_embedding"]
