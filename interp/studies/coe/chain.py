"""Contrasting chain of embedding: :func:`chain_of_embedding`.

From *Understanding Language Prior of LVLMs by Contrasting Chain-of-Embedding* (see
``docs/papers.md``), §3.1.

For every sample and each of two conditions (default: ``full`` = (x_v, x_t) and ``blind`` =
(∅, x_t)), the residual stream at every layer at one position,

    z_vis^l = f_l(x_v, x_t),   z_blind^l = f_l(∅, x_t),   l = 0..L,

together with the greedy answer of each condition (for the agreement split of §3.2) and, optionally,
the visual-attention baseline of Eq. 10, read at the same position. The position (``read_at``):

- ``"prompt"`` (the default): the last prompt token, the state that produces the first answer
  token, read in the generate trace's prompt forward. The input token there is the same under
  both conditions, so a distance measures what the image changed.
- ``"generated"`` (the wording of the paper's Appendix C: "representation distances are computed
  using the hidden states corresponding to the last generated token"): each condition's own greedy
  answer y_1..y_T (without the end-of-sequence token) is fed back after its prompt in one
  teacher-forced forward, and z^l is the state at y_T — the state whose output predicts the
  end-of-sequence token. A one-token answer is read at that token; an empty answer (the
  end-of-sequence token first) at the last prompt token; the end-of-sequence token itself never.
  Where the two conditions' answers differ (D_VT, by definition) the two states sit on different
  tokens, so the distance holds the token's identity from layer 0 on: on the demo models (answers
  of one or two tokens) the groups then differ most at the embeddings and the VIP rules find none
  (``docs/papers.md``), which is why this reading is an option and not the default.

Only one position's states are kept: memory is linear in N · (L+1) · d.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import torch
from jaxtyping import Bool, Float
from torch import Tensor

from interp.conditions import Condition
from interp.edits import Intervention
from interp.errors import InterpError, ModalityError
from interp.options import LENS_RUN, RunOptions
from interp.reprs import Summary
from interp.residual import READ_AT, ReadAt, generate_states
from interp.samples import Sample, ensure_samples
from interp.tracing import resolve_layers
from probes.distances import get_distance, to_numpy
from probes.split import agreement_split

if TYPE_CHECKING:
    from interp.model import VLM

LOGIT_LENS_METRICS = ("kl", "js")


@dataclass(repr=False)
class ChainOfEmbedding(Summary):
    """Chains of embedding of N samples under two conditions, at one position per sample.

    Attributes:
        states: condition name → float32 ``[N, n_layers, d]`` (layer indices in ``layers``), at
            the read position (``read_at``).
        answers: condition name → greedy answer text per sample.
        answer_ids: condition name → generated token ids per sample.
        visual_attention: ``[N]`` mean over layers and heads of the read position's attention
            mass on image tokens under the first condition (Eq. 10), or None if not measured.
        read_at: ``"prompt"`` (the last prompt token) or ``"generated"`` (the last generated
            token of each condition's own answer).
        final_states: condition name → float32 ``[N, d]``: the final norm applied to the last
            layer's state, Z^L of Eq. 10 (Hugging Face's ``hidden_states[-1]``), or None when
            layer L was not read.
        conditions: the two condition names, (condition, reference condition), e.g.
            ``("full", "blind")`` or ``("full", "no_audio")``.
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
    read_at: ReadAt = "prompt"
    final_states: dict[str, Float[Tensor, "n d"]] | None = None
    vlm: VLM | None = field(default=None, repr=False)

    def _repr_head(self) -> dict[str, Any]:
        return {
            "n": len(self),
            "model": None if self.vlm is None else self.vlm.source,
            "conditions": self.conditions,
            "layers": len(self.layers),
            "read_at": self.read_at,
        }

    def __len__(self) -> int:
        return len(self.samples)

    @property
    def sample_ids(self) -> list[str]:
        return [str(s.id) for s in self.samples]

    def distance(
        self,
        metric: str = "cosine",
        *,
        vlm: VLM | None = None,
        run: RunOptions | None = None,
        **options: Any,
    ) -> Float[np.ndarray, "n layer"]:
        """Per-sample, per-layer distance d(z_a^l, z_b^l) between the two conditions.

        ``"cosine"`` (default, 1 − cos) and ``"l2"`` compare the hidden states; ``"kl"`` (KL(p_a‖p_b))
        and ``"js"`` compare logit-lens distributions softmax(lm_head(final_norm(z^l))) (Table 4 /
        Fig. 13 ablation) and need the model (``vlm=``, or the one that produced this result):
        ``run.batch_size`` rows a head call, with the run's trace options (a model loaded for
        NDIF: one request per batch); its fields may also be given as keywords.
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
        opts = RunOptions.resolve(run or LENS_RUN, **options)
        step, trace = opts.batch_size, opts.trace_options()
        out = np.empty(a.shape[:2])
        for start in range(0, len(a), step):
            sl = slice(start, start + step)
            la = to_numpy(model.unembed(a[sl], **trace).float().log_softmax(-1))
            lb = to_numpy(model.unembed(b[sl], **trace).float().log_softmax(-1))
            out[sl] = fn(la, lb)
        return out

    def output_divergence(self, metric: str = "cosine") -> Float[np.ndarray, " n"]:
        """Eq. 10's output divergence d(Z^L_a, Z^L_b) on the final states (after the final norm).

        For ``"kl"`` / ``"js"`` this is the last layer's logit-lens distance (the logit lens
        applies the final norm). Without ``final_states`` (layer L not read) it raises.
        """
        if self.final_states is None:
            raise InterpError(
                "the output divergence needs the last layer's states: read every layer (layers=None)"
            )
        if metric in LOGIT_LENS_METRICS:
            return self.distance(metric)[:, -1]
        a, b = (self.final_states[c] for c in self.conditions)
        return get_distance(metric)(a, b)

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


def check_media_conditions(vlm: VLM, samples: Sequence[Sample], names: Sequence[str]) -> None:
    """Before compute: an audio or video part in a condition needs a family that takes that
    modality and at least one sample that carries it (otherwise both conditions are the same
    input and every distance is zero).

    Raises:
        ModalityError: the family lacks the modality, or no sample has it.
    """
    for kind in ("audio", "video"):
        parts = [str(getattr(Condition.parse(n), kind)) for n in names]
        used = [p for p in parts if p != "None"]
        if not used:
            continue
        if kind not in vlm.adapter.modalities:
            raise ModalityError(
                f"the condition part {used[0]!r} acts on {kind}, which {vlm.adapter.name} does not "
                f"take (it takes {', '.join(vlm.adapter.modalities)}); compare conditions on those"
            )
        if not any(s.has_audio if kind == "audio" else s.has_video for s in samples):
            raise ModalityError(
                f"the condition part {used[0]!r} acts on {kind}, but no sample has {kind}: both "
                f"conditions would be the same input (give samples with {kind}; a table's column "
                f"with --columns {kind}=<column>)"
            )


def chain_of_embedding(
    vlm: VLM,
    samples: Sequence[Sample],
    conditions: tuple[str, str] = ("full", "blind"),
    *,
    layers: Iterable[int] | None = None,
    read_at: str = "prompt",
    max_new_tokens: int = 8,
    visual_attention: bool = False,
    edits: Sequence[Intervention] | None = None,
    run: RunOptions | None = None,
    **options: Any,
) -> ChainOfEmbedding:
    """States of both conditions at every layer at the read position, plus each condition's
    greedy answer.

    Args:
        conditions: (condition, reference condition), e.g. ``("full", "blind")``,
            ``("full", "null:black")``, ``("full", "null_question")`` (image+text vs image only),
            ``("full", "no_audio")`` (where is the audio integrated?) or ``("full", "no_video")``.
            The diagnosis takes the second as the reference (TVI, VIP, agreement split).
        layers: layer indices 0..L (default all; 0 = embeddings).
        read_at: ``"prompt"`` (default): the last prompt token; ``"generated"`` (Appendix C's
            wording): the last generated token of each condition's own greedy answer, fed back
            teacher-forced (one extra forward per batch and condition); see the module docstring.
        max_new_tokens: greedy answer budget (answers compared for the agreement split).
        visual_attention: also measure Eq. 10's visual attention under the first condition, from
            the read position (needs ``attn_implementation="eager"``).
        edits: interventions applied in both conditions' traces (prompt forward and, for
            ``steps = "all"`` edits, every generated step; with ``read_at="generated"`` also the
            teacher-forced forward, as in :func:`interp.score`).
        run: how it runs (:class:`~interp.options.RunOptions`): ``batch_size``, a ``store`` to
            write results to batch by batch (a re-run with the same settings resumes where the
            last one stopped; ``overwrite`` starts over, ``shard`` splits the samples across
            processes; see :mod:`interp.runner`), ``progress_bar`` and the nnsight trace
            options; its fields may also be given as keywords (``batch_size=16``).

    Raises:
        RemoteError: a remote run (``remote`` or ``backend`` set), before any compute.
    """
    opts = RunOptions.resolve(run, **options)
    # remote (NDIF): generate_states is lowered, and the final norm is read in its trace
    remote = opts.is_remote or bool(vlm.remote)
    if read_at not in READ_AT:
        raise ValueError(
            f"read_at must be 'prompt' (the last prompt token) or 'generated' (the last "
            f"generated token of each condition's answer), got {read_at!r}"
        )
    samples = ensure_samples(samples)
    names = tuple(str(Condition.parse(c)) for c in conditions)
    if len(names) != 2 or names[0] == names[1]:
        raise ValueError(f"give two different conditions, got {conditions!r}")
    check_media_conditions(vlm, samples, names)
    gen = generate_states(
        vlm,
        samples,
        names,
        layers=layers,
        max_new_tokens=max_new_tokens,
        read_at=read_at,
        visual_attention=visual_attention,
        final_norm=remote and resolve_layers(vlm, layers)[-1] == vlm.n_layers,
        edits=edits,
        measurement="chain_of_embedding",
        run=opts,
    )
    va = gen.visual_attention
    final = gen.final_states  # read in the trace where the weights are not here (NDIF)
    if final is None and gen.layers[-1] == vlm.n_layers:
        final = {name: final_norm(vlm, gen.states[name][:, -1]) for name in names}
    return ChainOfEmbedding(
        states=gen.states,
        answers=gen.texts,
        answer_ids=gen.token_ids,
        conditions=(names[0], names[1]),
        layers=gen.layers,
        samples=samples,
        visual_attention=va.numpy().astype(np.float64) if va is not None else None,
        read_at=read_at,
        final_states=final,
        vlm=vlm,
    )


def final_norm(vlm: VLM, hidden: Tensor, batch_size: int = 64) -> Float[Tensor, "n d"]:
    """The decoder's final norm applied to last-layer states ``[N, d]`` (plain torch, no trace):
    Z^L of Eq. 10, float32 on the CPU."""
    norm = vlm.adapter.final_norm(vlm.hf)
    out = torch.empty(hidden.shape, dtype=torch.float32)
    with torch.no_grad():
        for start in range(0, len(hidden), batch_size):
            h = hidden[start : start + batch_size].to(vlm.device, vlm.dtype)
            out[start : start + batch_size] = norm(h).float().cpu()
    return out


__all__ = ["ChainOfEmbedding", "chain_of_embedding", "final_norm"]
