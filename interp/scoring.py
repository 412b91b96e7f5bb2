"""Teacher-forced scoring: :func:`score`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import nnsight
import pandas as pd
import torch
from jaxtyping import Bool, Float
from torch import Tensor

from .conditions import Condition
from .encoding import Encoding, append_targets, batches, target_ids
from .errors import EmptyInputError
from .samples import Sample, ensure_samples
from .tracing import progress

if TYPE_CHECKING:
    from .model import VLM


@dataclass
class TokenScores:
    """Per-token log-probabilities (natural log) of teacher-forced targets.

    ``logprobs[i, t] = log p(a_t | a_<t, x_i)`` for t < len(target i); entries past a target's end
    are 0 and ``mask`` is False there.
    """

    logprobs: Float[Tensor, "n tgt"]
    mask: Bool[Tensor, "n tgt"]
    token_ids: list[list[int]]
    sample_ids: list[str]
    condition: str

    @property
    def total(self) -> Float[Tensor, " n"]:
        """log p(a_1..a_T | x): the sum over the target's tokens."""
        return (self.logprobs * self.mask).sum(dim=1)

    @property
    def mean(self) -> Float[Tensor, " n"]:
        """Mean per-token log-probability."""
        return self.total / self.mask.sum(dim=1)

    def to_frame(self) -> pd.DataFrame:
        rows = []
        for i, (sid, ids) in enumerate(zip(self.sample_ids, self.token_ids)):
            for t, tok in enumerate(ids):
                rows.append(
                    {
                        "sample_id": sid,
                        "condition": self.condition,
                        "t": t,
                        "token_id": tok,
                        "logprob": float(self.logprobs[i, t]),
                    }
                )
        return pd.DataFrame(rows)


def trace_target_logprobs(
    vlm: VLM, enc: Encoding, targets: Sequence[Sequence[int]], **trace_kwargs: Any
) -> Float[Tensor, "batch tgt"]:
    """One forward of prompt+targets; log p of each target token given everything before it."""
    extended, positions, valid = append_targets(vlm, enc, targets)
    tgt = torch.zeros_like(positions)
    for row, ids in enumerate(targets):
        tgt[row, : len(ids)] = torch.tensor(ids, device=tgt.device)
    rows = torch.arange(len(enc), device=positions.device)[:, None]
    with torch.no_grad(), vlm.trace_encoding(extended, **trace_kwargs):
        # The logit at position p predicts the token at p + 1.
        logits = vlm.lm_head.output[rows, positions - 1].float()
        picked = nnsight.save(logits.log_softmax(-1).gather(-1, tgt[..., None])[..., 0])
    return (picked * valid).detach().cpu()


def score(
    vlm: VLM,
    samples: Sequence[Sample] | Sample,
    targets: Sequence[str | Sequence[int]] | None = None,
    condition: str | Condition = "full",
    *,
    batch_size: int = 8,
    progress_bar: bool = True,
    **trace_kwargs: Any,
) -> TokenScores:
    """Teacher-forced per-token log-probabilities of each target continuation, one trace per batch.

    Args:
        targets: one per sample, a string (tokenised without special tokens) or token ids (e.g. a
            generated answer's); defaults to each sample's ``answer``.

    Raises:
        EmptyTargetError: a target tokenises to nothing.
        EmptyInputError: no targets given and a sample has no answer.
    """
    samples = ensure_samples(samples)
    if targets is None:
        missing = [s.id for s in samples if not s.answer]
        if missing:
            raise EmptyInputError(f"samples {missing[:5]} have no answer; pass targets= explicitly")
        targets = [s.answer for s in samples]  # type: ignore[misc]
    if len(targets) != len(samples):
        raise ValueError(f"{len(targets)} targets for {len(samples)} samples: give one per sample")
    ids = target_ids(vlm, targets)
    width = max(len(t) for t in ids)
    logprobs = torch.zeros(len(samples), width)
    mask = torch.zeros(len(samples), width, dtype=torch.bool)
    for idx, enc in progress(
        batches(vlm, samples, condition, batch_size),
        total=len(samples),
        desc=f"score[{condition}]",
        enabled=progress_bar,
    ):
        batch_ids = [ids[i] for i in idx]
        lp = trace_target_logprobs(vlm, enc, batch_ids, **trace_kwargs)
        for row, i in enumerate(idx):
            n = len(ids[i])
            logprobs[i, :n] = lp[row, :n]
            mask[i, :n] = True
    return TokenScores(
        logprobs, mask, ids, [str(s.id) for s in samples], str(Condition.parse(condition))
    )


__all__ = ["TokenScores", "score", "trace_target_logprobs"]
