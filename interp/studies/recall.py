"""Visual-reference recall: can the model recall what it knows about an entity from its image?

Reproduces *Can VLMs Recall Factual Associations From Visual References?* (Ashok, Chaubey, Arai,
May, Thomason; see ``docs/papers.md``) on the engine. Each **item** is one entity image and one
fact about the entity, asked two ways: a *textual-reference* question that names the entity and a
*visual-reference* question that refers to "the object in the image". Three settings (Sec. 4,
Fig. 2):

- **Text-Only**: a trivial image (no information about the entity) and the textual question. The
  trivial images are black, white, uniform noise and none (Appendix B); the setting's answer is the
  majority vote over them, ties broken at random (seeded; :func:`majority_vote`).
- **Visual**: the entity image and the visual-reference question — the model must link the image
  to its knowledge.
- **Full Info**: the entity image and the textual question (Sec. 6.1).

Answers are scored by exact match, two-way inclusion and BLEU (Sec. 4, Appendix C; :mod:`probes.text`).
The benchmark's model-specific filters (Sec. 3, Appendix A) keep an item only if the model answers
it in Full Info, does *not* answer the visual question from a trivial image (a language-prior
guess) and names the entity when asked what the image shows (:attr:`RecallRun.kept`).

Inside the model (Sec. 6), at the last prompt token of the Visual setting, ``h^(l)`` for
``l = 0..L`` (the project's layer convention):

- **logit lens** (Sec. 6.1, Fig. 4 top): ``p_l = softmax(U · norm(h^(l)))[t*]``, the probability of
  the eventual output token ``t*`` (the first generated token) at every layer (:func:`logit_lens`);
- **cosine similarity** of the Visual and Full Info states (Sec. 6.1, Fig. 4 bottom),
  ``cos(h^(l), h~^(l))`` (:func:`layerwise_cosine`); both split into linking successes and failures
  (:func:`linking_curves`);
- **failure probes** (Sec. 6.2, Table 2): a linear probe on ``h^(l)`` of the layer chosen by
  validation, against the majority-class and the perplexity-threshold baselines, with selective
  prediction (coverage and risk) of perplexity, probe and their ensemble (:func:`failure_probes`);
- **transfer** (Sec. 6.2, Table 1): probes trained on the other families and applied, without
  retraining, to a held-out one (:func:`transfer`).

Entry points: :func:`run_recall` (→ :class:`RecallRun`, the model runs), the pure-numpy analyses
above, figures (:func:`plot_accuracy`, :func:`plot_linking`, :func:`plot_probe_curves`,
:func:`plot_risk_coverage`) and the command ``interp recall`` (:func:`register`).
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from jaxtyping import Bool, Float, Int

from interp.cli import (
    UsageError,
    add_common_arguments,
    check_common_arguments,
    check_model,
    check_output_dir,
    load_data,
    write_summary,
)
from interp.errors import EmptyInputError, ProbeError, RecallError, UnknownFamilyError
from interp.samples import Sample
from probes.distances import cosine_distance, to_numpy
from probes.text import bleu, exact_match, inclusion_match, normalize_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from interp.edits import Intervention
    from interp.model import VLM
    from probes.layerwise import LayerwiseProbe
    from probes.selective import RiskCoverage

TensorLike = Any
"""A torch tensor. Annotated without importing torch, so that the ``interp`` command (which imports
every study to register it) stays light; jaxtyping still checks shape and dtype at run time."""

SETTINGS: tuple[str, ...] = ("text_only", "visual", "full_info")
SETTING_NAMES: dict[str, str] = {
    "text_only": "Text-Only",
    "visual": "Visual",
    "full_info": "Full Info",
}
TRIVIAL: tuple[str, ...] = ("null:black", "null:white", "null:noise", "blind")
"""The trivial images of Appendix B: black, white, uniform noise, and none (``blind``: the prompt
without an image). The paper passes a mean image for "none" to VLMs that tuned their language
model; ``null:mean`` is that input here."""
METRICS: tuple[str, ...] = ("inclusion", "exact", "bleu")
GROUPINGS: tuple[str, ...] = ("pair", "item", "entity", "none")
SUBSETS: tuple[str, ...] = ("kept", "all")
DEMO_IDENTIFY: dict[str, str] = {
    "facts": "which object is in the image ?",
    "arithmetic": "what digit is in the image ?",
    "words": "which object is in the image ?",
}
"""The identification question of each demo-world family (the world's own anchored wordings of
its ``identify`` and ``digit`` questions), for the benchmark's identification filter."""
REFERENCE_QTYPES: tuple[str, ...] = ("recall", "digit_arith", "letters")


# -- items ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RecallItem:
    """One entity image with one fact about the entity, asked with a textual and a visual
    reference.

    Attributes:
        id: unique item id.
        image: the entity image (anything :class:`interp.Sample` accepts).
        textual: the question that names the entity ("what is the banana known for ?").
        visual: the question that refers to the image ("what is the object in the image known
            for ?").
        answer: the gold answer.
        family: the reference family (the paper's dataset: the demo world's ``facts``,
            ``arithmetic``, ``words``).
        entity: the entity's name, for the identification filter (None: not filtered on it).
        identify: the question asking what the image shows (None: no identification filter).
        meta: free labels (the demo world's visual-reference sample ``meta``: ``linked`` ...).
    """

    id: str
    image: Any
    textual: str
    visual: str
    answer: str
    family: str
    entity: str | None = None
    identify: str | None = None
    meta: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def pair(self) -> str:
        """The question-answer pair the item instantiates (family, entity, visual question): the
        paper pairs one QA pair with several images, so pairs are the unit of grouped CV."""
        return f"{self.family}|{self.entity}|{self.visual}"

    def sample(self, setting: str) -> Sample:
        """The item as an :class:`interp.Sample`: ``"visual"`` (visual question), ``"full_info"``
        (textual question; the Text-Only inputs are this sample under a trivial condition) or
        ``"identify"`` (the identification question)."""
        question = {"visual": self.visual, "full_info": self.textual, "identify": self.identify}
        if setting not in question:
            raise RecallError(f"unknown setting {setting!r}; use visual, full_info or identify")
        text = question[setting]
        if text is None:
            raise RecallError(f"item {self.id!r} has no identification question")
        target = self.entity if setting == "identify" else self.answer
        meta = {"item": self.id, "family": self.family, "setting": setting}
        return Sample(text, self.image, target, f"{self.id}/{setting}", meta)


def _meta(sample: Sample, key: str) -> Any:
    if key not in sample.meta or sample.meta[key] is None:
        raise RecallError(
            f"sample {sample.id!r} has no {key!r} label; recall items are built from samples "
            "labelled group (one per item), setting (text_only / full_info / visual) and family, "
            "as demo_world(qtypes=['recall', 'digit_arith', 'letters']) makes them, or give "
            "RecallItem objects"
        )
    return sample.meta[key]


def recall_items(
    samples: Sequence[Sample],
    *,
    families: Sequence[str] | None = None,
    identify: Mapping[str, str] | None = DEMO_IDENTIFY,
) -> list[RecallItem]:
    """Recall items from samples labelled like the demo world's reference questions.

    Samples sharing ``meta["group"]`` form one item: the ``visual`` sample gives the visual
    question, the entity image and the item's ``meta``; the ``full_info`` (or ``text_only``)
    sample gives the textual question. ``meta["family"]`` names the family, ``meta["entity"]`` the
    entity; the identification question is the visual sample's ``meta["identify"]`` if it has
    one, else ``identify[family]`` (``identify=None``: no identification filter).

    Args:
        families: keep these families only (None: all, in order of appearance).

    Raises:
        EmptyInputError: no samples.
        RecallError: a sample lacks a label, a group lacks its visual or textual question, or its
            samples disagree on the answer, family or entity.
        UnknownFamilyError: a family in ``families`` that the samples do not hold.
    """
    if not samples:
        raise EmptyInputError("no samples were given to build recall items from")
    groups: dict[str, dict[str, Sample]] = {}
    for s in samples:
        setting = _meta(s, "setting")
        if setting not in SETTINGS:
            raise RecallError(
                f"sample {s.id!r}: setting {setting!r} is not one of {', '.join(SETTINGS)}"
            )
        group = groups.setdefault(str(_meta(s, "group")), {})
        if setting in group:
            raise RecallError(
                f"group {_meta(s, 'group')!r} has two {setting!r} samples ({group[setting].id!r}, "
                f"{s.id!r}); one item holds one sample per setting"
            )
        group[setting] = s
    items: list[RecallItem] = []
    for gid, group in groups.items():
        visual = group.get("visual")
        textual = group.get("full_info") or group.get("text_only")
        if visual is None or textual is None:
            missing = "visual" if visual is None else "full_info or text_only"
            raise RecallError(
                f"group {gid!r} has no {missing} sample, so it is not a whole item (demo_world "
                "cuts the last group short when n is not a multiple of 3: ask for a multiple of 3)"
            )
        for key in ("family", "answer", "entity"):
            values = {str(s.answer if key == "answer" else s.meta.get(key)) for s in group.values()}
            if len(values) > 1:
                raise RecallError(f"the samples of group {gid!r} disagree on {key}: {values}")
        if visual.image is None:
            raise RecallError(f"sample {visual.id!r}: a visual-reference item needs its image")
        if not visual.answer:
            raise RecallError(f"sample {visual.id!r} has no answer; recall needs a gold answer")
        family = str(_meta(visual, "family"))
        entity = visual.meta.get("entity")
        items.append(
            RecallItem(
                id=gid,
                image=visual.image,
                textual=textual.question,
                visual=visual.question,
                answer=str(visual.answer),
                family=family,
                entity=None if entity is None else str(entity),
                identify=_identify_question(visual, family, entity, identify),
                meta=dict(visual.meta),
            )
        )
    return select_families(items, families)


def _identify_question(
    visual: Sample, family: str, entity: Any, identify: Mapping[str, str] | None
) -> str | None:
    """The item's identification question: the sample's own ``identify`` label, else the family's
    entry of ``identify``; None without an entity or with ``identify=None`` (no filter)."""
    if identify is None or entity is None:
        return None
    own = visual.meta.get("identify")
    return str(own) if own else identify.get(family)


def families_of(items: Sequence[RecallItem]) -> list[str]:
    """The families of ``items`` in order of first appearance."""
    return list(dict.fromkeys(item.family for item in items))


def check_families(available: Sequence[str], families: Sequence[str] | str | None) -> list[str]:
    """``families`` (None: all available) after checking each exists.

    Raises:
        UnknownFamilyError: a name the data does not hold (the message lists those it does).
        RecallError: an empty selection or a family named twice.
    """
    if families is None:
        return list(available)
    wanted = [families] if isinstance(families, str) else list(families)
    if not wanted:
        raise RecallError("families is empty; name at least one (or None for all)")
    unknown = [f for f in wanted if f not in available]
    if unknown:
        raise UnknownFamilyError(
            f"unknown famil{'ies' if len(unknown) > 1 else 'y'} {', '.join(map(repr, unknown))}; "
            f"the data holds: {', '.join(available) or '(none)'}"
        )
    if len(set(wanted)) != len(wanted):
        raise RecallError(f"families {wanted} name a family twice")
    return wanted


def select_families(
    items: Sequence[RecallItem], families: Sequence[str] | str | None
) -> list[RecallItem]:
    """The items of ``families`` (None: all). Raises UnknownFamilyError for a missing family."""
    keep = set(check_families(families_of(items), families))
    return [item for item in items if item.family in keep]


def check_trivial(trivial: Sequence[str]) -> tuple[str, ...]:
    """The trivial-image conditions, parsed and checked: each must replace or remove the image
    (``null:*`` or ``blind``) and keep the question.

    Raises:
        RecallError: an empty list, a repeated condition, or one that shows the real image or
            changes the question.
        ConditionError: a condition that does not parse.
    """
    from interp.conditions import Condition

    if isinstance(trivial, str) or not trivial:
        raise RecallError(
            f"trivial must be a non-empty list of conditions, e.g. {list(TRIVIAL)}; got {trivial!r}"
        )
    out = []
    for text in trivial:
        cond = Condition.parse(text)
        if cond.kind not in ("null", "blind") or cond.question is not None or cond.prefix != "kept":
            raise RecallError(
                f"trivial condition {str(cond)!r} is not a trivial image: use null:black, "
                "null:white, null:noise, null:mean or blind (the question must stay)"
            )
        out.append(str(cond))
    if len(set(out)) != len(out):
        raise RecallError(f"trivial conditions {out} name a condition twice")
    return tuple(out)


# -- majority vote, logit lens, cosine -------------------------------------------------------------


def majority_vote(
    answers: Sequence[str], key: str, seed: int = 0, normalize: Any = normalize_text
) -> str:
    """The modal answer of ``answers`` (Appendix B: "the final output ... is the result of a
    majority vote ... Ties are broken randomly").

    Answers are compared after ``normalize``; among the normalised answers with the highest count
    one is drawn uniformly by a generator seeded with ``(seed, key)`` — so the draw depends on the
    item (``key``) and the seed, not on the order of ``answers``. Returns the first raw answer
    whose normalisation won.

    Raises:
        EmptyInputError: no answers.
    """
    from interp.conditions import stable_seed

    if not answers:
        raise EmptyInputError(f"no answers to vote on for {key!r}")
    norm = [normalize(a) for a in answers]
    counts: dict[str, int] = {}
    for n in norm:
        counts[n] = counts.get(n, 0) + 1
    top = max(counts.values())
    tied = sorted(n for n, c in counts.items() if c == top)
    rng = np.random.default_rng(stable_seed(f"{seed}:{key}"))
    winner = tied[int(rng.integers(len(tied)))] if len(tied) > 1 else tied[0]
    return answers[norm.index(winner)]


def logit_lens(
    vlm: VLM,
    states: Float[TensorLike, "n layer d"],
    tokens: Int[TensorLike, " n"],
    *,
    batch_size: int = 16,
) -> Float[TensorLike, "n layer"]:
    """The probability of token ``tokens[i]`` read off every layer (Sec. 6.1, Fig. 4 top):
    ``p_i^(l) = softmax(U · norm(h_i^(l)))[t_i]`` with ``norm`` the final norm and ``U`` the
    unembedding (``vlm.unembed``). At the last index (l = L) this is the model's own next-token
    probability; the paper applies ``U`` to ``h`` directly, which the final norm only rescales
    in most decoders but which shifts the distribution of un-normalised states.

    Args:
        states: residual-stream states ``[N, L+1, d]`` (e.g. of :func:`interp.residual_stream`).
        tokens: ``[N]`` token ids (the eventual output token of each row).

    Returns:
        float32 CPU tensor ``[N, L+1]``.
    """
    import torch

    if states.dim() != 3 or tokens.dim() != 1 or len(tokens) != len(states):
        raise RecallError(
            f"logit_lens takes states [N, L+1, d] and one token per row [N]; got "
            f"{tuple(states.shape)} and {tuple(tokens.shape)}"
        )
    out = torch.empty(states.shape[:2])
    for start in range(0, len(states), batch_size):
        sl = slice(start, start + batch_size)
        probs = vlm.unembed(states[sl]).float().softmax(-1).cpu()  # [b, L+1, V]
        idx = tokens[sl].long().cpu()[:, None, None].expand(-1, probs.shape[1], 1)
        out[sl] = probs.gather(-1, idx)[..., 0]
    return out


def layerwise_cosine(
    a: Float[Any, "n layer d"], b: Float[Any, "n layer d"]
) -> Float[np.ndarray, "n layer"]:
    """Cosine similarity ``cos(h_i^(l), h~_i^(l)) = <h, h~> / (|h| |h~|)`` of two runs' states,
    per item and layer (Sec. 6.1, Fig. 4 bottom: Visual vs Full Info); 1 exactly where the
    states are equal (:func:`probes.distances.cosine_distance`)."""
    x, y = to_numpy(a), to_numpy(b)
    if x.ndim != 3 or x.shape != y.shape:
        raise RecallError(
            f"layerwise_cosine takes two state arrays [N, L+1, d] of one shape; got {x.shape} and "
            f"{y.shape}"
        )
    return 1.0 - cosine_distance(x, y)


# -- running the model -----------------------------------------------------------------------------


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
    batch_size: int,
    store: Path | None,
    overwrite: bool,
    progress_bar: bool,
) -> _Generated:
    """Greedy answers, last-prompt-token states at every layer and the log-probability of each
    chosen token: one nnsight generate trace per batch (states read at the prompt forward)."""
    import torch

    from interp.conditions import Condition
    from interp.edits import Batch
    from interp.encoding import batches
    from interp.generation import generate_batch
    from interp.runner import Job, run
    from interp.tracing import read_states, resolve_layers

    cond = Condition.parse("full")
    wanted = resolve_layers(vlm, None)
    job = Job(
        "recall_generate",
        {"layers": wanted, "max_new_tokens": max_new_tokens, "setting": name},
        conditions=[cond],
        edits=edits,
        pool=samples,
    )

    def compute(chunk: list[Sample]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        states = torch.empty(len(chunk), len(wanted), vlm.d_model)
        records: list[dict[str, Any]] = [{} for _ in chunk]
        for idx, enc in batches(vlm, chunk, cond, batch_size, all_samples=samples):
            batch = Batch(vlm, enc, [chunk[i] for i in idx], cond, "generate", samples)
            read = partial(
                read_states,
                vlm,
                wanted,
                torch.arange(len(enc), device=enc.last_index.device),
                enc.last_index,
                skipped=batch.skipped_layers,
            )
            ids, (st, _), scores = generate_batch(
                vlm, batch, max_new_tokens, edits=edits, on_prompt=read, output_scores=True
            )
            states[idx] = st.detach().to("cpu", torch.float32)
            # greedy: the chosen token is the argmax, its log-probability the max log-softmax
            logp = scores.float().log_softmax(-1)
            best, first = logp.max(-1).values, logp[:, 0].argmax(-1)
            for row, i in enumerate(idx):
                steps = min(len(ids[row]) + 1, logp.shape[1])
                records[i] = {
                    "ids": ids[row],
                    "logprobs": best[row, :steps].tolist(),
                    "first": int(first[row]),
                }
        return {"states": states}, records

    _, tensors, records = run(
        vlm,
        samples,
        job,
        compute,
        batch_size=batch_size,
        store=store,
        overwrite=overwrite,
        progress_bar=progress_bar,
    )
    ids = [r["ids"] for r in records]
    texts = [vlm.tokenizer.decode(t, skip_special_tokens=True).strip() for t in ids]
    return _Generated(
        texts,
        ids,
        tensors["states"],
        [r["logprobs"] for r in records],
        [r["first"] for r in records],
    )


def answer_perplexity_of(logprobs: Sequence[float], n_answer: int) -> float:
    """Per-token perplexity of a generated answer, ``exp(-(1/T) Σ_t log p(a_t | a_<t, x))`` over
    its T answer tokens (the end-of-sequence token excluded); an empty answer (the end token
    first) gets ``1 / p(end token)``. This is the paper's baseline signal (Sec. 6.2: "the
    per-token-perplexity of the output")."""
    lp = np.asarray(logprobs[:n_answer] if n_answer else logprobs[:1], dtype=np.float64)
    if lp.size == 0:
        raise EmptyInputError("no token log-probabilities to take a perplexity of")
    return float(np.exp(-lp.mean()))


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
    batch_size: int = 16,
    store: str | Path | None = None,
    overwrite: bool = False,
    progress_bar: bool = True,
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
        store: a folder; each pass keeps its own resumable store under it.

    Raises:
        RecallError, UnknownFamilyError, ConditionError: bad data or settings (before any
            compute).
    """
    import torch

    from interp.edits import check_edits
    from interp.generation import generate

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
    root = None if store is None else Path(store)
    common = {
        "edits": edits,
        "batch_size": batch_size,
        "overwrite": overwrite,
        "progress_bar": progress_bar,
    }

    def where(*parts: str) -> Path | None:
        return None if root is None else root.joinpath(*parts)

    visual = [item.sample("visual") for item in items]
    textual = [item.sample("full_info") for item in items]
    gen_v = _generate_states(
        vlm, visual, "visual", max_new_tokens=max_new_tokens, store=where("visual"), **common
    )
    gen_f = _generate_states(
        vlm, textual, "full_info", max_new_tokens=max_new_tokens, store=where("full_info"), **common
    )
    answers: dict[str, list[str | None]] = {"visual": list(gen_v.texts)}
    answers["full_info"] = list(gen_f.texts)

    def trivial_answers(samples: list[Sample], setting: str) -> None:
        for cond in conds:
            answers[f"{setting}:{cond}"] = list(
                generate(
                    vlm,
                    samples,
                    cond,
                    max_new_tokens=max_new_tokens,
                    store=where(setting, _slug(cond)),
                    **common,
                ).texts
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
            vlm,
            [items[i].sample("identify") for i in asked],
            max_new_tokens=max_new_tokens,
            store=where("identify"),
            **common,
        ).texts
        answers["identify"] = [None] * len(items)
        for i, text in zip(asked, said):
            answers["identify"][i] = text
    first = torch.tensor(gen_v.first, dtype=torch.long)
    lens = logit_lens(vlm, gen_v.states, first, batch_size=batch_size)
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
    from dataclasses import replace

    return replace(item, identify=question)


# -- the run and its accuracy tables ---------------------------------------------------------------


@dataclass
class RecallRun:
    """Everything the model produced for N recall items (see :func:`run_recall`).

    Attributes:
        items: the items, in row order.
        answers: setting -> one answer per item: ``visual``, ``full_info``, ``text_only`` (the
            majority vote), ``text_only:<condition>`` per trivial condition, ``visual_trivial``
            and ``visual_trivial:<condition>`` (the guess filter, if run), ``identify`` (None for
            items not asked).
        states: ``"visual"`` and ``"full_info"`` -> float32 ``[N, L+1, d]``, last prompt token.
        lens: ``[N, L+1]`` logit-lens probability of the eventual Visual output token.
        perplexity: ``[N]`` per-token perplexity of the Visual answer.
        first_token: ``[N]`` the first generated token of the Visual answer (``t*``).
        trivial: the trivial conditions of the Text-Only vote.
        whole_words: two-way inclusion on word boundaries (see :func:`run_recall`).
        seed: the vote's tie-break seed.
    """

    items: list[RecallItem]
    answers: dict[str, list[str | None]]
    states: dict[str, Float[TensorLike, "n layer d"]]
    lens: Float[np.ndarray, "n layer"]
    perplexity: Float[np.ndarray, " n"]
    first_token: Int[np.ndarray, " n"]
    trivial: tuple[str, ...] = TRIVIAL
    whole_words: bool = True
    seed: int = 0

    def __post_init__(self) -> None:
        n = len(self.items)
        bad = {k: len(v) for k, v in self.answers.items() if len(v) != n}
        if bad or len(self.lens) != n or len(self.perplexity) != n:
            raise RecallError(f"a RecallRun needs one value per item ({n}); got lengths {bad}")
        for key in ("visual", "full_info", "text_only"):
            if key not in self.answers:
                raise RecallError(f"a RecallRun needs {key!r} answers")

    def __len__(self) -> int:
        return len(self.items)

    @property
    def families(self) -> list[str]:
        return families_of(self.items)

    @property
    def n_layers(self) -> int:
        """L+1, the layer slots of the states."""
        return int(self.lens.shape[1])

    def _score(self, preds: Sequence[str | None], refs: Sequence[str]) -> pd.DataFrame:
        rows = []
        for p, r in zip(preds, refs):
            if p is None:
                rows.append({"exact": np.nan, "inclusion": np.nan, "bleu": np.nan})
                continue
            rows.append(
                {
                    "exact": exact_match(p, r),
                    "inclusion": inclusion_match(p, r, whole_words=self.whole_words),
                    "bleu": bleu(p, r) if p.strip() else 0.0,
                }
            )
        return pd.DataFrame(rows)

    @cached_property
    def frame(self) -> pd.DataFrame:
        """One row per item: ids and labels, each setting's answer and scores
        (``<setting>_exact``, ``<setting>_inclusion``, ``<setting>_bleu`` in 0-100), the filters
        (``guessed``, ``identified``, ``kept``), the perplexity and the final-layer lens
        probability; scalar ``meta`` labels of the items are appended."""
        gold = [item.answer for item in self.items]
        out = pd.DataFrame(
            {
                "item_id": [item.id for item in self.items],
                "family": [item.family for item in self.items],
                "entity": [item.entity for item in self.items],
                "pair": [item.pair for item in self.items],
                "textual": [item.textual for item in self.items],
                "visual_question": [item.visual for item in self.items],
                "answer": gold,
            }
        )
        for setting in (*SETTINGS, "visual_trivial"):
            if setting not in self.answers:
                continue
            out[f"answer_{setting}"] = self.answers[setting]
            scores = self._score(self.answers[setting], gold)
            for metric in ("exact", "inclusion", "bleu"):
                out[f"{setting}_{metric}"] = scores[metric].to_numpy()
        for cond in self.trivial:
            for setting in ("text_only", "visual_trivial"):
                if f"{setting}:{cond}" in self.answers:
                    out[f"answer_{setting}:{cond}"] = self.answers[f"{setting}:{cond}"]
        out["full_info_correct"] = out["full_info_inclusion"].astype(bool)
        if "visual_trivial" in self.answers:
            out["guessed"] = out["visual_trivial_inclusion"].astype(bool)
        else:
            out["guessed"] = False
        if "identify" in self.answers:
            out["answer_identify"] = self.answers["identify"]
            out["identified"] = [
                None
                if said is None or item.entity is None
                else inclusion_match(said, item.entity, whole_words=True)
                for said, item in zip(self.answers["identify"], self.items)
            ]
        else:
            out["identified"] = None
        out["kept"] = (
            out["full_info_correct"]
            & ~out["guessed"]
            & out["identified"].map(lambda v: v is None or bool(v)).astype(bool)
        )
        out["perplexity"] = self.perplexity
        out["p_final"] = self.lens[:, -1]
        for key in sorted({k for item in self.items for k in item.meta}):
            if key in out.columns or key in ("group", "setting", "family", "entity"):
                continue
            values = [item.meta.get(key) for item in self.items]
            if all(v is None or isinstance(v, (str, int, float, bool)) for v in values):
                out[key] = values
        return out

    def to_frame(self) -> pd.DataFrame:
        """The per-item table (a copy of :attr:`frame`)."""
        return self.frame.copy()

    @property
    def kept(self) -> Bool[np.ndarray, " n"]:
        """The benchmark's model-specific filters (Sec. 3, Appendix A): the Full Info answer is
        right (the model holds the fact), the visual question is *not* answered from a trivial
        image (no language-prior guess; if the guess filter ran) and the entity is identified
        (where an identification question was asked)."""
        return self.frame["kept"].to_numpy(dtype=bool)

    def mask(self, subset: str = "kept", family: str | None = None) -> Bool[np.ndarray, " n"]:
        """Rows of ``subset`` (``"kept"``: the filtered benchmark, ``"all"``) and ``family``."""
        if subset not in SUBSETS:
            raise RecallError(f"subset must be one of {SUBSETS}, got {subset!r}")
        rows = self.kept if subset == "kept" else np.ones(len(self), dtype=bool)
        if family is not None:
            check_families(self.families, [family])
            rows = rows & (self.frame["family"].to_numpy() == family)
        return rows

    def families_with_items(self, subset: str = "kept") -> list[str]:
        """The families with at least one row in ``subset`` (what :func:`transfer` can use)."""
        return [f for f in self.families if self.mask(subset, f).any()]

    def correct(self, setting: str = "visual", metric: str = "inclusion") -> np.ndarray:
        """``[N]`` correctness (exact, inclusion: bool) or BLEU (0-100) of a setting's answers."""
        if setting not in (*SETTINGS, "visual_trivial") or metric not in METRICS:
            raise RecallError(
                f"setting must be one of {SETTINGS} and metric one of {METRICS}; got "
                f"{setting!r}, {metric!r}"
            )
        values = self.frame[f"{setting}_{metric}"].to_numpy()
        return values.astype(bool) if metric != "bleu" else values.astype(np.float64)

    def accuracy(
        self, subset: str = "kept", *, ci: float = 0.95, n_boot: int = 1000, seed: int = 0
    ) -> pd.DataFrame:
        """Accuracy per setting, family (and ``all``) and metric, the paper's Fig. 3 (inclusion)
        and Figs. 5-6 (exact match, BLEU).

        Columns: ``subset``, ``family``, ``setting``, ``metric``, ``value`` (the mean over items;
        BLEU divided by 100 so that every metric is in [0, 1]), ``low`` / ``high`` (percentile
        bootstrap interval of the mean over items at level ``ci``) and ``n``.
        """
        from probes.stats import estimate

        rows = []
        for family in [*self.families, "all"]:
            m = self.mask(subset, None if family == "all" else family)
            for setting in SETTINGS:
                for metric in METRICS:
                    x = self.correct(setting, metric)[m].astype(np.float64)
                    if metric == "bleu":
                        x = x / 100.0
                    rows.append(
                        {
                            "subset": subset,
                            "family": family,
                            "setting": setting,
                            "metric": metric,
                            **_mean_ci(x, ci, n_boot, seed, estimate),
                        }
                    )
        return pd.DataFrame(rows)

    def gap(
        self,
        metric: str = "inclusion",
        subset: str = "kept",
        *,
        ci: float = 0.95,
        n_boot: int = 1000,
        seed: int = 0,
    ) -> pd.DataFrame:
        """The visual-reference gap per family: Text-Only minus Visual accuracy on the same items,
        with a paired bootstrap interval (items resampled, both settings kept together), and the
        relative decline ``(TO - V) / TO`` (the paper's "58.95 % degradation", Sec. 1 and 5)."""
        from probes.stats import estimate

        rows = []
        for family in [*self.families, "all"]:
            m = self.mask(subset, None if family == "all" else family)
            to = self.correct("text_only", metric)[m].astype(np.float64)
            vis = self.correct("visual", metric)[m].astype(np.float64)
            diff = _mean_ci(to - vis, ci, n_boot, seed, estimate)
            t_mean = float(to.mean()) if len(to) else math.nan
            rows.append(
                {
                    "family": family,
                    "metric": metric,
                    "text_only": t_mean,
                    "visual": float(vis.mean()) if len(vis) else math.nan,
                    "full_info": float(self.correct("full_info", metric)[m].mean())
                    if m.any()
                    else math.nan,
                    "gap": diff["value"],
                    "gap_low": diff["low"],
                    "gap_high": diff["high"],
                    "relative_decline": diff["value"] / t_mean if t_mean else math.nan,
                    "n": int(m.sum()),
                }
            )
        return pd.DataFrame(rows)

    def filters(self) -> pd.DataFrame:
        """How many items each filter removes, per family (the paper's Table 3 analogue)."""
        f = self.frame
        rows = []
        for family in [*self.families, "all"]:
            part = f if family == "all" else f[f["family"] == family]
            ident = part["identified"].dropna()
            rows.append(
                {
                    "family": family,
                    "items": len(part),
                    "full_info_wrong": int((~part["full_info_correct"]).sum()),
                    "guessed_from_trivial_image": int(part["guessed"].sum()),
                    "not_identified": int((~ident.astype(bool)).sum()),
                    "kept": int(part["kept"].sum()),
                }
            )
        return pd.DataFrame(rows)


def _mean_ci(x: np.ndarray, ci: float, n_boot: int, seed: int, estimate: Any) -> dict[str, Any]:
    """Mean of x with a percentile-bootstrap interval (NaN bounds for fewer than 2 values)."""
    n = len(x)
    if n == 0:
        return {"value": math.nan, "low": math.nan, "high": math.nan, "n": 0}
    if n < 2 or np.ptp(x) == 0:
        v = float(np.mean(x))
        return {
            "value": v,
            "low": v if n > 1 else math.nan,
            "high": v if n > 1 else math.nan,
            "n": n,
        }
    e = estimate(np.mean, x, ci=ci, n_boot=n_boot, seed=seed)
    return {"value": e.value, "low": e.low, "high": e.high, "n": n}


# -- Fig. 4: logit lens and cosine similarity, successes vs failures -------------------------------


@dataclass
class LinkingCurves:
    """Per-item, per-layer logit-lens probability and Visual-vs-Full-Info cosine similarity, with
    each item's linking outcome (Fig. 4).

    Attributes:
        lens: ``[n, L+1]`` probability of the eventual output token at each layer.
        cosine: ``[n, L+1]`` cosine similarity of the Visual and Full Info states.
        success: ``[n]`` whether the Visual answer is right (linking success).
        family: the family of each row.
    """

    lens: Float[np.ndarray, "n layer"]
    cosine: Float[np.ndarray, "n layer"]
    success: Bool[np.ndarray, " n"]
    family: list[str]

    @property
    def layers(self) -> np.ndarray:
        return np.arange(self.lens.shape[1])

    def to_frame(self, ci: float = 0.95) -> pd.DataFrame:
        """Long table: ``measure`` (lens / cosine), ``group`` (success / failure), ``layer``,
        ``mean``, ``low`` / ``high`` (Student-t interval of the mean at level ``ci``), ``n``."""
        from scipy import stats

        rows = []
        for measure, values in (("lens", self.lens), ("cosine", self.cosine)):
            for group, m in (("success", self.success), ("failure", ~self.success)):
                v = values[m]
                n = len(v)
                mean = v.mean(0) if n else np.full(values.shape[1], np.nan)
                if n > 1:
                    half = stats.t.ppf((1 + ci) / 2, n - 1) * v.std(0, ddof=1) / np.sqrt(n)
                else:
                    half = np.full(values.shape[1], np.nan)
                for layer in range(values.shape[1]):
                    rows.append(
                        {
                            "measure": measure,
                            "group": group,
                            "layer": layer,
                            "mean": float(mean[layer]),
                            "low": float(mean[layer] - half[layer]),
                            "high": float(mean[layer] + half[layer]),
                            "n": n,
                        }
                    )
        return pd.DataFrame(rows)

    def separation(self) -> pd.DataFrame:
        """Per layer and measure, the AUROC of the measure for telling successes from failures
        (0.5: no separation): ``P(x_success > x_failure) + P(tie) / 2``."""
        from probes.stats import auroc

        self._two_groups()
        rows = []
        for measure, values in (("lens", self.lens), ("cosine", self.cosine)):
            for layer in range(values.shape[1]):
                rows.append(
                    {
                        "measure": measure,
                        "layer": layer,
                        "auroc": auroc(values[:, layer], self.success),
                    }
                )
        return pd.DataFrame(rows)

    def rise_layer(self, fraction: float = 0.5) -> Int[np.ndarray, " n"]:
        """Per item, the first layer whose lens probability reaches ``fraction`` of its final
        value ``p^(L)``: where the answer "gains its probability mass" (Sec. 6.1)."""
        return np.argmax(self.lens >= fraction * self.lens[:, -1:], axis=1)

    def _two_groups(self) -> None:
        if self.success.all() or not self.success.any():
            raise ProbeError(
                f"all {len(self.success)} items are linking "
                f"{'successes' if self.success.all() else 'failures'}; comparing the groups "
                "needs both"
            )

    def summary(self, *, ci: float = 0.95, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
        """Successes vs failures on four statistics: the final-layer probability ``p^(L)``, the
        half-rise layer (:meth:`rise_layer`), the final-layer cosine and the mean cosine over the
        upper half of the layers. Columns: mean per group, their difference (success − failure)
        with a bootstrap interval resampling each group, and Cliff's delta with its interval."""
        from probes.stats import cliffs_delta, mean_difference

        self._two_groups()
        upper = self.lens.shape[1] // 2
        top = f"mean cosine, layers {upper}..{self.lens.shape[1] - 1}"
        stats_ = {
            "p(output) at last layer": self.lens[:, -1],
            "half-rise layer": self.rise_layer().astype(np.float64),
            "cosine at last layer": self.cosine[:, -1],
            top: self.cosine[:, upper:].mean(1),
        }
        rows = []
        for name, x in stats_.items():
            a, b = x[self.success], x[~self.success]
            diff = mean_difference(a, b, ci=ci, n_boot=n_boot, seed=seed)
            delta = cliffs_delta(a, b, ci=ci, n_boot=n_boot, seed=seed)
            rows.append(
                {
                    "statistic": name,
                    "success": float(a.mean()),
                    "failure": float(b.mean()),
                    "difference": diff.value,
                    "difference_low": diff.low,
                    "difference_high": diff.high,
                    "cliffs_delta": delta.value,
                    "delta_low": delta.low,
                    "delta_high": delta.high,
                    "n_success": len(a),
                    "n_failure": len(b),
                }
            )
        return pd.DataFrame(rows)


def linking_curves(
    run: RecallRun, *, family: str | None = None, subset: str = "kept", metric: str = "inclusion"
) -> LinkingCurves:
    """The logit lens and the Visual-vs-Full-Info cosine of the items of ``family`` (None: all)
    in ``subset``, each item labelled a linking success when its Visual answer is right by
    ``metric`` (Sec. 6.1, Fig. 4).

    Raises:
        UnknownFamilyError, RecallError: a family the run lacks, a bad subset or metric.
        EmptyInputError: no item is left.
    """
    if metric == "bleu":
        raise RecallError("linking success is binary: use metric 'inclusion' or 'exact'")
    m = run.mask(subset, family)
    if not m.any():
        raise EmptyInputError(f"no item in subset {subset!r} of family {family or 'all'!r}")
    cos = layerwise_cosine(to_numpy(run.states["visual"])[m], to_numpy(run.states["full_info"])[m])
    fam = run.frame["family"].to_numpy()[m]
    return LinkingCurves(run.lens[m], cos, run.correct("visual", metric)[m], [str(f) for f in fam])


# -- Table 2 and Table 1: failure probes, baselines, selective prediction, transfer ----------------


def _groups(run: RecallRun, rows: np.ndarray, groups: str | None) -> np.ndarray | None:
    if groups is None or groups == "none":
        return None
    if groups not in GROUPINGS:
        raise RecallError(f"groups must be one of {GROUPINGS}, got {groups!r}")
    items = [run.items[i] for i in np.flatnonzero(rows)]
    if groups == "pair":
        return np.asarray([item.pair for item in items])
    if groups == "entity":
        return np.asarray([f"{item.family}|{item.entity}" for item in items])
    return np.asarray([item.id for item in items])


def _labels(run: RecallRun, rows: np.ndarray, metric: str, what: str) -> np.ndarray:
    if metric == "bleu":
        raise RecallError("probe labels are binary: use metric 'inclusion' or 'exact'")
    y = run.correct("visual", metric)[rows]
    if len(y) == 0:
        raise EmptyInputError(f"{what}: no items")
    if y.all() or not y.any():
        raise ProbeError(
            f"{what}: the {len(y)} Visual answers are all "
            f"{'correct' if y.all() else 'wrong'}, so there is a single class; a failure probe "
            "needs both linking successes and failures (use more items or another family)"
        )
    return y


def _check_folds(
    y: np.ndarray, groups: np.ndarray | None, cv: int, what: str, option: str = "cv"
) -> None:
    """The checks LayerwiseProbe would make, up front, so nothing is fitted on bad input."""
    if isinstance(cv, bool) or not isinstance(cv, (int, np.integer)) or cv < 2:
        raise ProbeError(f"{option} must be an int >= 2 folds, got {cv!r}")
    least = int(min(y.sum(), (~y).sum()))
    if least < cv:
        fix = f"use {option}={least} or fewer, or more items" if least >= 2 else "use more items"
        raise ProbeError(
            f"{what}: the least populated class has {least} item(s) ({int(y.sum())} correct, "
            f"{int((~y).sum())} wrong), fewer than {option}={cv} folds; {fix}"
        )
    if groups is not None and len(np.unique(groups)) < cv:
        raise ProbeError(
            f"{what}: {len(np.unique(groups))} groups, fewer than {option}={cv} folds; use fewer "
            "folds or groups='item'"
        )


def _splitter(cv: int, groups: np.ndarray | None, seed: int) -> Any:
    from sklearn.model_selection import StratifiedGroupKFold, StratifiedKFold

    if groups is None:
        return StratifiedKFold(n_splits=cv, shuffle=True, random_state=seed)
    return StratifiedGroupKFold(n_splits=cv, shuffle=True, random_state=seed)


def _fit_methods(
    X: np.ndarray,
    y: np.ndarray,
    ppl: np.ndarray,
    groups: np.ndarray | None,
    *,
    layers: Any,
    cv: int,
    estimator: Any,
    seed: int,
    layer: int | None,
) -> dict[str, Any]:
    """Fit the probe (layer chosen by CV unless given), the perplexity threshold, the majority
    baseline and the ensemble on one training set."""
    from probes.layerwise import LayerwiseProbe
    from probes.selective import EnsembleConfidence, MajorityBaseline, PerplexityThreshold

    probe = LayerwiseProbe(
        estimator=estimator, layers=layers if layer is None else [layer], cv=cv, random_state=seed
    )
    probe.fit(X, y, groups)
    chosen = int(probe.best_layer_)
    threshold = PerplexityThreshold().fit(ppl, y)
    majority = MajorityBaseline().fit(np.zeros((len(y), 1)), y)
    p_oof = probe.cv_predictions_[chosen][:, list(probe.classes_).index(True)]
    both = np.column_stack([p_oof, threshold.decision_function(ppl)])
    ensemble = EnsembleConfidence().fit(both, y)
    # The ensemble answers where its P(correct) clears a cut learned like the perplexity
    # baseline's (balanced accuracy on the training split), so all three methods work at a
    # balanced operating point; a fixed 0.5 on base-rate-calibrated probabilities would answer
    # almost nothing where most answers are wrong.
    cut = PerplexityThreshold(log_scale=False).fit(1.0 - ensemble.predict_proba(both)[:, 1], y)
    return {
        "probe": probe,
        "layer": chosen,
        "threshold": threshold,
        "majority": majority,
        "ensemble": ensemble,
        "ensemble_cut": cut,
    }


def _predict_methods(fitted: dict[str, Any], X: np.ndarray, ppl: np.ndarray) -> dict[str, Any]:
    probe, layer = fitted["probe"], fitted["layer"]
    p = probe.predict_proba(X, layer)[:, list(probe.classes_).index(True)]
    conf_ppl = fitted["threshold"].decision_function(ppl)
    p_ens = fitted["ensemble"].predict_proba(np.column_stack([p, conf_ppl]))[:, 1]
    return {
        "layer": layer,
        "p_probe": p,
        "answer_probe": np.asarray(probe.predict(X, layer), dtype=bool),
        "conf_perplexity": conf_ppl,
        "answer_perplexity": np.asarray(fitted["threshold"].predict(ppl), dtype=bool),
        "p_ensemble": p_ens,
        "answer_ensemble": np.asarray(fitted["ensemble_cut"].predict(1.0 - p_ens), dtype=bool),
        "answer_majority": np.asarray(
            fitted["majority"].predict(np.zeros((len(ppl), 1))), dtype=bool
        ),
    }


METHOD_SCORES = {
    "majority": None,
    "perplexity": "conf_perplexity",
    "probe": "p_probe",
    "ensemble": "p_ensemble",
}


def method_table(
    predictions: pd.DataFrame, *, ci: float = 0.95, n_boot: int = 1000, seed: int = 0
) -> pd.DataFrame:
    """Table 2 from a predictions frame (columns ``correct`` and ``answer_<method>`` /
    ``<score>`` of each method): per method the accuracy of predicting correct vs wrong with a
    bootstrap interval, the balanced accuracy, and the AUROC of its continuous score with a
    class-stratified bootstrap interval (NaN for the majority baseline, which has none)."""
    from sklearn.metrics import balanced_accuracy_score

    from probes.stats import auroc, estimate

    y = predictions["correct"].to_numpy(dtype=bool)
    rows = []
    for method, score in METHOD_SCORES.items():
        pred = predictions[f"answer_{method}"].to_numpy(dtype=bool)
        acc = _mean_ci((pred == y).astype(np.float64), ci, n_boot, seed, estimate)
        row = {
            "method": method,
            "accuracy": acc["value"],
            "low": acc["low"],
            "high": acc["high"],
            "balanced_accuracy": float(balanced_accuracy_score(y, pred)),
            "auroc": math.nan,
            "auroc_low": math.nan,
            "auroc_high": math.nan,
            "n": len(y),
        }
        if score is not None and 0 < y.sum() < len(y):
            a = auroc(predictions[score].to_numpy(dtype=np.float64), y, ci=ci, n_boot=n_boot)
            row.update(auroc=a.value, auroc_low=a.low, auroc_high=a.high)
        rows.append(row)
    return pd.DataFrame(rows)


def selective_frame(
    predictions: pd.DataFrame, *, ci: float = 0.95, n_boot: int = 1000, seed: int = 0
) -> pd.DataFrame:
    """Table 1 from a predictions frame: per method (perplexity, probe, ensemble, and answering
    everything) the coverage ``|A| / N`` and risk ``|A ∩ wrong| / |A|`` of its answer/abstain
    decisions (Sec. 6.2), each with a bootstrap interval (items resampled), and the AURC of its
    confidence score (:func:`probes.selective.risk_coverage`)."""
    from probes.selective import coverage_risk, risk_coverage
    from probes.stats import bootstrap_ci

    y = predictions["correct"].to_numpy(dtype=bool)
    rows = []
    for method in ("perplexity", "probe", "ensemble", "all"):
        answered = (
            np.ones(len(y), dtype=bool)
            if method == "all"
            else predictions[f"answer_{method}"].to_numpy(dtype=bool)
        )
        res = coverage_risk(answered, y)
        row = {"method": method, **vars(res)}
        for name, stat in (
            ("coverage", lambda a, c: float(a.mean())),
            ("risk", lambda a, c: float((a & ~c).sum() / a.sum()) if a.any() else math.nan),
        ):
            try:
                lo, hi = bootstrap_ci(stat, answered, y, n_boot=n_boot, ci=ci, seed=seed)
            except Exception:  # a statistic undefined in most resamples (nothing answered)
                lo, hi = math.nan, math.nan
            row[f"{name}_low"], row[f"{name}_high"] = lo, hi
        score = METHOD_SCORES.get(method)
        row["aurc"] = (
            risk_coverage(predictions[score].to_numpy(dtype=np.float64), y).aurc
            if score is not None
            else math.nan
        )
        rows.append(row)
    cols = ["method", "coverage", "coverage_low", "coverage_high", "risk", "risk_low"]
    cols += ["risk_high", "n_answered", "n_errors", "n", "aurc"]
    return pd.DataFrame(rows)[cols]


def risk_curves(predictions: pd.DataFrame) -> dict[str, RiskCoverage]:
    """The risk-coverage curve of each method's confidence score."""
    from probes.selective import risk_coverage

    y = predictions["correct"].to_numpy(dtype=bool)
    return {
        method: risk_coverage(predictions[score].to_numpy(dtype=np.float64), y)
        for method, score in METHOD_SCORES.items()
        if score is not None
    }


@dataclass
class FailureProbes:
    """Probes that flag linking failures within one family (or all pooled), Table 2.

    Attributes:
        family: the family, or ``"all"``.
        curve: a :class:`probes.LayerwiseProbe` cross-validated on every item at every layer: the
            validation curve over layers (``curve.scores_``) and the layer it chooses
            (``curve.best_layer_``, the paper's "layer 20").
        predictions: one row per item, out-of-fold by nested cross-validation: in each outer fold
            the layer is chosen by an inner CV on the outer training split only, so the reported
            accuracies are not biased by the choice. Columns ``item_id``, ``family``,
            ``correct``, ``fold``, ``layer``, ``perplexity``, and per method ``answer_<method>``
            plus its score (``p_probe``, ``conf_perplexity``, ``p_ensemble``).
        settings: the options used.
    """

    family: str
    curve: LayerwiseProbe
    predictions: pd.DataFrame
    settings: dict[str, Any]

    @property
    def layer(self) -> int:
        """The layer chosen by validation on all items."""
        return int(self.curve.best_layer_)

    def table(self, *, ci: float = 0.95, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
        """Table 2: accuracy of the majority, perplexity, probe (and ensemble) at flagging
        failures (:func:`method_table`)."""
        return method_table(self.predictions, ci=ci, n_boot=n_boot, seed=seed).assign(
            family=self.family
        )

    def selective(self, *, ci: float = 0.95, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
        """In-distribution selective prediction (:func:`selective_frame`)."""
        return selective_frame(self.predictions, ci=ci, n_boot=n_boot, seed=seed).assign(
            family=self.family
        )

    def risk_curves(self) -> dict[str, RiskCoverage]:
        return risk_curves(self.predictions)

    def to_frame(self) -> pd.DataFrame:
        return self.table()


def _one_thread(fn: Any) -> Any:
    """Run ``fn`` with one BLAS / OpenMP thread: the probes are many small logistic fits, which
    run several times faster on one thread than on two of a 2-core CPU (``bench/recall.py``)."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1):
            return fn(*args, **kwargs)

    return wrapper


def _probe_inputs(
    run: RecallRun, rows: np.ndarray, metric: str, groups: str | None, what: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    y = _labels(run, rows, metric, what)
    X = to_numpy(run.states["visual"])[rows].astype(np.float64)
    return X, y, run.perplexity[rows], _groups(run, rows, groups)


@_one_thread
def failure_probes(
    run: RecallRun,
    family: str | None = None,
    *,
    layers: Sequence[int] | None = None,
    layer: int | None = None,
    cv: int = 5,
    inner_cv: int = 3,
    groups: str | None = "pair",
    subset: str = "kept",
    metric: str = "inclusion",
    estimator: Any = None,
    seed: int = 0,
) -> FailureProbes:
    """Linear probes on the Visual setting's last-prompt-token state that flag linking failures
    (Sec. 6.2, Table 2), against the majority-class ("Random") and perplexity-threshold
    baselines, with selective prediction of perplexity, probe and ensemble.

    Label: ``y_i = 1`` when the Visual answer is right (by ``metric``); the probe's
    ``P(y = 1 | h_i^(l))`` is its confidence; it flags a failure when that is below 0.5
    (balanced logistic regression on standardised states, :func:`probes.layerwise.default_probe`).
    Baselines: the most frequent training class; a threshold on the answer's per-token
    perplexity learned on the training split (:class:`probes.selective.PerplexityThreshold`).
    Ensemble: the mean of the calibrated probe and perplexity probabilities
    (:class:`probes.selective.EnsembleConfidence`, calibrated on out-of-fold probe outputs); it
    answers where that mean clears a cut learned on the training split by balanced accuracy (the
    perplexity baseline's rule), so the three methods decide at comparable, balanced operating
    points (the probe: balanced class weights, cut 0.5).

    Fits run on one BLAS thread (see ``bench/recall.py``). Evaluation is nested cross-validation:
    ``cv`` outer folds; inside each outer training split,
    a :class:`probes.LayerwiseProbe` with ``inner_cv`` folds chooses the layer (unless ``layer``
    fixes it) and every method is fitted there, then predicts the outer test split.

    Args:
        family: one family, or None for every item pooled.
        layers: layers the probe may use (None: all of 0..L).
        layer: fix the probe's layer instead of choosing it by validation.
        groups: items sharing a group never straddle train and test: ``"pair"`` (one question-
            answer pair of an entity, the paper's five images of one pair; default), ``"entity"``,
            ``"item"``, or None.
        subset: ``"kept"`` (the filtered benchmark) or ``"all"``.

    Raises (before any fitting):
        UnknownFamilyError: a family the run lacks.
        ProbeError: a single class, fewer items of a class (or groups) than folds in the data or
            in an outer training split.
    """
    what = f"family {family!r}" if family else "all families"
    rows = run.mask(subset, family)
    X, y, ppl, grp = _probe_inputs(run, rows, metric, groups, what)
    _check_folds(y, grp, cv, what)
    from probes.layerwise import _select_layers

    _select_layers(layers, X.shape[1])  # a bad layer is refused before any fitting
    if layer is not None:
        _select_layers([layer], X.shape[1])
    folds = list(_splitter(cv, grp, seed).split(np.zeros((len(y), 1)), y, grp))
    for k, (train, _) in enumerate(folds):
        _check_folds(
            y[train],
            None if grp is None else grp[train],
            inner_cv,
            f"{what}, outer fold {k}",
            "inner_cv",
        )
    from probes.layerwise import LayerwiseProbe

    curve = LayerwiseProbe(estimator=estimator, layers=layers, cv=cv, random_state=seed)
    curve.fit(X, y, grp)
    parts = []
    item_ids = run.frame["item_id"].to_numpy()[rows]
    fams = run.frame["family"].to_numpy()[rows]
    for k, (train, test) in enumerate(folds):
        fitted = _fit_methods(
            X[train],
            y[train],
            ppl[train],
            None if grp is None else grp[train],
            layers=layers,
            cv=inner_cv,
            estimator=estimator,
            seed=seed,
            layer=layer,
        )
        pred = _predict_methods(fitted, X[test], ppl[test])
        parts.append(
            pd.DataFrame(
                {
                    "item_id": item_ids[test],
                    "family": fams[test],
                    "correct": y[test],
                    "fold": k,
                    "perplexity": ppl[test],
                    **pred,
                }
            )
        )
    order = {iid: i for i, iid in enumerate(item_ids)}
    predictions = pd.concat(parts, ignore_index=True)
    predictions = predictions.sort_values("item_id", key=lambda s: s.map(order)).reset_index(
        drop=True
    )
    settings = {
        "cv": cv,
        "inner_cv": inner_cv,
        "groups": groups,
        "subset": subset,
        "metric": metric,
        "layer": layer,
        "seed": seed,
    }
    return FailureProbes(family or "all", curve, predictions, settings)


@dataclass
class Transfer:
    """Probes trained on the other families and applied, without retraining, to a held-out one
    (Sec. 6.2, Table 1).

    Attributes:
        predictions: one row per held-out item (column ``held_out``), the methods' decisions and
            scores as in :class:`FailureProbes`; ``layer`` is the one chosen by CV on the
            training families.
        layer_scores: per held-out family and layer, the training families' CV balanced
            accuracy (what chose the layer) and the held-out balanced accuracy and AUROC of that
            layer's probe.
        probes: held-out family -> the :class:`probes.LayerwiseProbe` fitted on the others.
    """

    predictions: pd.DataFrame
    layer_scores: pd.DataFrame
    probes: dict[str, LayerwiseProbe]
    settings: dict[str, Any]

    @property
    def held_out(self) -> list[str]:
        return list(dict.fromkeys(self.predictions["held_out"]))

    def _each(self, fn: Any, **kw: Any) -> pd.DataFrame:
        parts = []
        for fam in self.held_out:
            part = self.predictions[self.predictions["held_out"] == fam]
            parts.append(fn(part, **kw).assign(held_out=fam))
        return pd.concat(parts, ignore_index=True)

    def table(self, *, ci: float = 0.95, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
        """Accuracy of each method on each held-out family (Table 2's columns, out of domain)."""
        return self._each(method_table, ci=ci, n_boot=n_boot, seed=seed)

    def selective(self, *, ci: float = 0.95, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
        """Coverage and risk per method and held-out family (long form of Table 1)."""
        return self._each(selective_frame, ci=ci, n_boot=n_boot, seed=seed)

    def table1(self) -> pd.DataFrame:
        """Table 1 as the paper prints it: one row per held-out family, coverage and risk (in
        percent) of perplexity, probe and ensemble, and Δ (perplexity → ensemble)."""
        sel = self.selective(n_boot=200)
        rows = []
        for fam in self.held_out:
            part = sel[sel["held_out"] == fam].set_index("method")
            row: dict[str, Any] = {"held_out": fam}
            for method in ("perplexity", "probe", "ensemble"):
                row[f"{method}_coverage"] = 100 * part.loc[method, "coverage"]
                row[f"{method}_risk"] = 100 * part.loc[method, "risk"]
            row["delta_coverage"] = row["ensemble_coverage"] - row["perplexity_coverage"]
            row["delta_risk"] = row["ensemble_risk"] - row["perplexity_risk"]
            row["n"] = int(part.loc["probe", "n"])
            rows.append(row)
        return pd.DataFrame(rows)

    def to_frame(self) -> pd.DataFrame:
        return self.table1()


@_one_thread
def transfer(
    run: RecallRun,
    held_out: Sequence[str] | str | None = None,
    *,
    layers: Sequence[int] | None = None,
    layer: int | None = None,
    cv: int = 5,
    groups: str | None = "pair",
    subset: str = "kept",
    metric: str = "inclusion",
    estimator: Any = None,
    seed: int = 0,
) -> Transfer:
    """Train on all families but one, apply to that one without retraining (Sec. 6.2, Table 1:
    "trained on all three other datasets and applied to the test dataset without retraining").

    For each held-out family F: on the items of the other families, a
    :class:`probes.LayerwiseProbe` (``cv`` folds, ``groups``) chooses the layer (unless ``layer``
    is given); the probe of that layer, the perplexity threshold, the majority baseline and the
    ensemble (calibrated on the probe's out-of-fold outputs) are fitted there and predict F.

    Raises (before any fitting):
        RecallError: fewer than two families.
        UnknownFamilyError: a held-out family the run lacks.
        ProbeError: a training or held-out set with a single class, or too few items per class
            for ``cv``.
    """
    families = run.families_with_items(subset)
    if len(families) < 2:
        raise RecallError(
            f"transfer trains on some families and tests on another: the run has "
            f"{len(families)} family with items in subset {subset!r} ({', '.join(families)})"
        )
    targets = check_families(families, held_out)
    keep = run.mask(subset)
    fam_col = run.frame["family"].to_numpy()
    plans = []
    for fam in targets:  # every check before any fitting
        train_rows = keep & (fam_col != fam)
        test_rows = keep & (fam_col == fam)
        Xtr, ytr, ptr, gtr = _probe_inputs(
            run, train_rows, metric, groups, f"training families for held-out {fam!r}"
        )
        _check_folds(ytr, gtr, cv, f"training families for held-out {fam!r}")
        Xte, yte, pte, _ = _probe_inputs(run, test_rows, metric, None, f"held-out family {fam!r}")
        plans.append((fam, (Xtr, ytr, ptr, gtr), (Xte, yte, pte), test_rows))
    from sklearn.metrics import balanced_accuracy_score

    from probes.stats import auroc

    parts, layer_rows, probes_ = [], [], {}
    for fam, (Xtr, ytr, ptr, gtr), (Xte, yte, pte), test_rows in plans:
        fitted = _fit_methods(
            Xtr, ytr, ptr, gtr, layers=layers, cv=cv, estimator=estimator, seed=seed, layer=layer
        )
        pred = _predict_methods(fitted, Xte, pte)
        parts.append(
            pd.DataFrame(
                {
                    "held_out": fam,
                    "item_id": run.frame["item_id"].to_numpy()[test_rows],
                    "family": fam,
                    "correct": yte,
                    "perplexity": pte,
                    **pred,
                }
            )
        )
        probe = fitted["probe"]
        probes_[fam] = probe
        true_col = list(probe.classes_).index(True)
        for lay in probe.layers_:
            p = probe.predict_proba(Xte, lay)[:, true_col]
            layer_rows.append(
                {
                    "held_out": fam,
                    "layer": lay,
                    "train_cv_balanced_accuracy": float(
                        probe.scores_.loc[lay, "balanced_accuracy_mean"]
                    ),
                    "held_out_balanced_accuracy": float(
                        balanced_accuracy_score(yte, probe.predict(Xte, lay))
                    ),
                    "held_out_auroc": auroc(p, yte),
                    "chosen": lay == fitted["layer"],
                }
            )
    settings = {"cv": cv, "groups": groups, "subset": subset, "metric": metric, "layer": layer}
    return Transfer(
        pd.concat(parts, ignore_index=True), pd.DataFrame(layer_rows), probes_, settings
    )


# -- figures ---------------------------------------------------------------------------------------

_COLORS = {"text_only": "C0", "visual": "C3", "full_info": "C2"}


def plot_accuracy(run: RecallRun, metrics: Sequence[str] = METRICS, subset: str = "kept") -> Figure:
    """Fig. 3 (and Figs. 5-6): accuracy of Text-Only, Visual and Full Info per family, one panel
    per metric, with bootstrap 95 % intervals."""
    import matplotlib.pyplot as plt

    table = run.accuracy(subset)
    fams = [*run.families, "all"]
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.2 * len(metrics), 3.4), squeeze=False)
    x = np.arange(len(fams))
    width = 0.8 / len(SETTINGS)
    for ax, metric in zip(axes[0], metrics):
        part = table[table["metric"] == metric].set_index(["family", "setting"])
        for k, setting in enumerate(SETTINGS):
            vals = np.array([part.loc[(f, setting), "value"] for f in fams])
            lo = np.array([part.loc[(f, setting), "low"] for f in fams])
            hi = np.array([part.loc[(f, setting), "high"] for f in fams])
            err = np.nan_to_num(np.vstack([vals - lo, hi - vals]))
            ax.bar(
                x + (k - 1) * width,
                vals,
                width,
                yerr=err,
                capsize=2,
                color=_COLORS[setting],
                label=SETTING_NAMES[setting],
            )
        ax.set_xticks(x, fams)
        ax.set_ylim(0, 1.05)
        ax.set_title(f"{metric}" + (" / 100" if metric == "bleu" else ""), fontsize=10)
    axes[0, 0].set_ylabel(f"accuracy ({subset} items)")
    axes[0, 0].legend(fontsize=8, frameon=False)
    fig.tight_layout()
    return fig


def plot_linking(curves: LinkingCurves, title: str | None = None) -> Figure:
    """Fig. 4: the logit-lens probability of the eventual output token (top) and the
    Visual-vs-Full-Info cosine similarity (bottom) per layer, linking successes vs failures,
    mean with 95 % intervals."""
    import matplotlib.pyplot as plt

    frame = curves.to_frame()
    fig, axes = plt.subplots(2, 1, figsize=(5.5, 6.0), sharex=True)
    labels = {"lens": "p(eventual output token)", "cosine": "cosine(Visual, Full Info)"}
    for ax, measure in zip(axes, ("lens", "cosine")):
        for group, color in (("success", "C2"), ("failure", "C3")):
            part = frame[(frame["measure"] == measure) & (frame["group"] == group)]
            n = int(part["n"].iloc[0])
            ax.plot(
                part["layer"], part["mean"], color=color, lw=2, label=f"linking {group} (n={n})"
            )
            ax.fill_between(part["layer"], part["low"], part["high"], color=color, alpha=0.2)
        ax.set_ylabel(labels[measure])
        ax.legend(fontsize=8, frameon=False)
    axes[1].set_xlabel("layer (0 = embeddings)")
    if title:
        axes[0].set_title(title)
    fig.tight_layout()
    return fig


def plot_probe_curves(
    results: Mapping[str, FailureProbes], metric: str = "balanced_accuracy"
) -> Figure:
    """The validation curve over layers of each result's probe (mean ± std over folds, clipped
    to the score's range [0, 1]), its chosen layer marked."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for k, (name, res) in enumerate(results.items()):
        scores = res.curve.scores_
        mean, std = scores[f"{metric}_mean"], scores[f"{metric}_std"]
        (line,) = ax.plot(scores.index, mean, marker="o", ms=3, color=f"C{k}", label=name)
        low, high = np.clip(mean - std, 0.0, 1.0), np.clip(mean + std, 0.0, 1.0)  # scores in [0, 1]
        ax.fill_between(scores.index, low, high, color=line.get_color(), alpha=0.15)
        ax.axvline(res.layer, color=line.get_color(), ls="--", lw=1)
    ax.axhline(0.5, color="grey", ls=":", lw=1)
    ax.set_xlabel("layer (0 = embeddings)")
    ax.set_ylabel(f"CV {metric.replace('_', ' ')}")
    ax.set_title("Failure probe per layer (dashed: chosen layer)")
    ax.legend(fontsize=8, frameon=False)
    fig.tight_layout()
    return fig


def plot_risk_coverage(result: FailureProbes | Transfer, held_out: str | None = None) -> Figure:
    """Risk against coverage for the perplexity, probe and ensemble confidences (one panel;
    for a :class:`Transfer`, the ``held_out`` family, default the first)."""
    import matplotlib.pyplot as plt

    pred = result.predictions
    title = f"family {result.family}" if isinstance(result, FailureProbes) else ""
    if isinstance(result, Transfer):
        fam = held_out or result.held_out[0]
        check_families(result.held_out, [fam])
        pred = pred[pred["held_out"] == fam]
        title = f"held out: {fam}"
    fig, ax = plt.subplots(figsize=(4.8, 3.6))
    for method, curve in risk_curves(pred).items():
        curve.plot(ax=ax, label=method)
    ax.axhline(1 - pred["correct"].mean(), color="grey", ls=":", lw=1)
    ax.set_title(f"Risk-coverage ({title})")
    fig.tight_layout()
    return fig


# -- the command -----------------------------------------------------------------------------------

DATA_HELP = (
    "'demo' (the demo world's three reference families: facts, arithmetic, words), or a JSONL "
    "file whose rows carry the labels group, setting (text_only/full_info/visual), family and "
    "entity (and optionally identify: the question asking what the image shows)"
)


def _list(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def _validate(args: argparse.Namespace) -> tuple[list[RecallItem], tuple[str, ...], Path]:
    """Everything checked before the model is loaded: options, trivial conditions, output
    folder, model configuration, data (every image opened), families, items per fold."""
    check_common_arguments(args, one_process="interp recall")
    if args.max_new_tokens < 1:
        raise UsageError(f"--max-new-tokens must be >= 1, got {args.max_new_tokens}")
    for option, value in (("--cv", args.cv), ("--inner-cv", args.inner_cv)):
        if value < 2:
            raise UsageError(f"{option} must be >= 2 folds, got {value}")
    trivial = check_trivial(_list(args.trivial))
    check_output_dir(args.out, create=False)
    n_layers = check_model(args.model)
    if args.layer is not None and not 0 <= args.layer <= n_layers:
        raise UsageError(f"--layer {args.layer} is outside the model's layers 0..{n_layers}")
    n = args.n
    if args.data == "demo" and n is not None:
        n = 3 * math.ceil(n / 3)  # whole items: three settings per item
    samples = load_data(
        args.data, n, args.seed, default_qtypes=REFERENCE_QTYPES, columns=args.columns
    )
    identify = None if args.no_identify else DEMO_IDENTIFY
    families = _list(args.families) if args.families else None
    items = recall_items(samples, families=families, identify=identify)
    for fam in families_of(items):
        count = sum(item.family == fam for item in items)
        if count < args.cv:
            raise UsageError(
                f"family {fam!r} has {count} items, fewer than --cv {args.cv} folds; give more "
                "samples (--n) or fewer folds"
            )
    out = check_output_dir(args.out)
    return items, trivial, out


def _try(what: str, fn: Any, notes: list[str]) -> Any:
    """Run an analysis; a ProbeError (a single class, too few items) or an EmptyInputError (no
    item of a family passed the filters) becomes a note."""
    try:
        return fn()
    except (ProbeError, EmptyInputError) as err:
        notes.append(f"{what}: skipped ({err})")
        return None


def _recall_command(args: argparse.Namespace) -> int:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from interp.model import load

    items, trivial, out = _validate(args)
    vlm = load(args.model)
    print(f"{vlm}\n{len(items)} recall items from {args.data!r}", flush=True)
    run = run_recall(
        vlm,
        items,
        trivial=trivial,
        guess_filter=not args.no_guess_filter,
        max_new_tokens=args.max_new_tokens,
        whole_words=not args.char_inclusion,
        seed=args.seed,
        batch_size=args.batch_size,
        store=out / "store",
        overwrite=args.overwrite,
        progress_bar=not args.no_progress,
    )
    subset = args.subset
    run.to_frame().to_csv(out / "answers.csv", index=False)
    accuracy = pd.concat([run.accuracy("all"), run.accuracy("kept")], ignore_index=True)
    accuracy.to_csv(out / "accuracy.csv", index=False)
    gap = run.gap(subset=subset)
    gap.to_csv(out / "gap.csv", index=False)
    plot_accuracy(run, subset=subset).savefig(out / "fig3_accuracy.png", dpi=130)
    notes: list[str] = []
    lines = [
        f"model {args.model!r}, data {args.data!r}: {len(run)} items, {int(run.kept.sum())} kept "
        "by the benchmark's filters",
        "",
        "filters (items removed):",
        run.filters().to_string(index=False),
        "",
        f"accuracy, {subset} items (value [95% CI]):",
        _accuracy_text(accuracy[accuracy["subset"] == subset]),
        "",
        "visual-reference gap (Text-Only minus Visual, inclusion):",
        gap.to_string(index=False, float_format=lambda v: f"{v:.3f}"),
    ]
    opts = {"cv": args.cv, "groups": args.groups, "subset": subset, "layer": args.layer}
    try:
        curves = linking_curves(run, subset=subset)
        curves.to_frame().to_csv(out / "linking_layers.csv", index=False)
        summary = curves.summary()
        summary.to_csv(out / "linking_summary.csv", index=False)
        plot_linking(curves).savefig(out / "fig4_linking.png", dpi=130)
        lines += ["", "linking success vs failure (Fig. 4):", summary.to_string(index=False)]
    except (ProbeError, EmptyInputError) as err:
        notes.append(f"linking curves: skipped ({err})")
    results: dict[str, FailureProbes] = {}
    for fam in [None, *run.families]:
        res = _try(
            f"failure probe, {fam or 'all families'}",
            lambda fam=fam: failure_probes(run, fam, inner_cv=args.inner_cv, **opts),
            notes,
        )
        if res is not None:
            results[fam or "all"] = res
    if results:
        pd.concat(
            [r.curve.scores_.assign(family=k).reset_index() for k, r in results.items()]
        ).to_csv(out / "probe_curves.csv", index=False)
        table2 = pd.concat([r.table() for r in results.values()], ignore_index=True)
        table2.to_csv(out / "probes.csv", index=False)
        selective = pd.concat([r.selective() for r in results.values()], ignore_index=True)
        selective.to_csv(out / "selective.csv", index=False)
        plot_probe_curves(results).savefig(out / "probe_curves.png", dpi=130)
        plot_risk_coverage(next(iter(results.values()))).savefig(out / "risk_coverage.png", dpi=130)
        layers = ", ".join(f"{k}: {r.layer}" for k, r in results.items())
        lines += [
            "",
            f"failure probes (Table 2; nested {args.cv}-fold CV, groups={args.groups}); layer "
            f"chosen by validation — {layers}:",
            table2[
                ["family", "method", "accuracy", "low", "high", "balanced_accuracy", "auroc"]
            ].to_string(index=False, float_format=lambda v: f"{v:.3f}"),
            "",
            "selective prediction, in distribution:",
            selective[
                ["family", "method", "coverage", "risk", "n_answered", "n", "aurc"]
            ].to_string(index=False, float_format=lambda v: f"{v:.3f}"),
        ]
    with_items = run.families_with_items(subset)
    if len(run.families) >= 2 and len(with_items) < 2:
        notes.append(
            f"transfer: skipped (it needs two families with {subset} items; "
            f"{', '.join(with_items) or 'none'} has some)"
        )
    elif len(run.families) >= 2:
        tr = _try("transfer", lambda: transfer(run, **opts), notes)
        if tr is not None:
            tr.table().to_csv(out / "transfer.csv", index=False)
            tr.selective().to_csv(out / "transfer_selective.csv", index=False)
            tr.layer_scores.to_csv(out / "transfer_layers.csv", index=False)
            lines += [
                "",
                "transfer (Table 1): trained on the other families, applied to the held-out one "
                "(percent):",
                tr.table1().to_string(index=False, float_format=lambda v: f"{v:.1f}"),
            ]
    if notes:
        lines += ["", "notes:", *[f"  {n}" for n in notes]]
    plt.close("all")
    text = "\n".join(lines)
    write_summary(out, text)
    return 0


def _accuracy_text(table: pd.DataFrame) -> str:
    cells = table.assign(
        cell=[
            f"{v:.3f} [{lo:.3f}, {hi:.3f}]"
            for v, lo, hi in zip(table["value"], table["low"], table["high"])
        ]
    )
    wide = cells.pivot_table(
        index=["family", "metric"], columns="setting", values="cell", aggfunc="first", sort=False
    )
    return wide[[s for s in SETTINGS if s in wide.columns]].to_string()


def register(sub: Any) -> None:
    """Add ``recall`` to the ``interp`` command."""
    p = sub.add_parser(
        "recall",
        help="visual-reference recall: Text-Only / Visual / Full Info, logit lens, failure probes",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common_arguments(p, data_help=DATA_HELP)
    p.add_argument("--families", default=None, help="comma-separated families (default: all)")
    p.add_argument(
        "--trivial",
        default=",".join(TRIVIAL),
        help="trivial-image conditions of the Text-Only vote (default: %(default)s)",
    )
    p.add_argument("--max-new-tokens", type=int, default=8)
    p.add_argument("--cv", type=int, default=5, help="(outer) cross-validation folds")
    p.add_argument("--inner-cv", type=int, default=3, help="folds that choose the probe layer")
    p.add_argument("--layer", type=int, default=None, help="fix the probe layer (0..L)")
    p.add_argument(
        "--groups",
        choices=GROUPINGS,
        default="pair",
        help="what never straddles train and test (default: the question-answer pair)",
    )
    p.add_argument("--subset", choices=SUBSETS, default="kept", help="filtered items or all")
    p.add_argument(
        "--char-inclusion",
        action="store_true",
        help="the paper's character-level two-way inclusion (default: on whole words)",
    )
    p.add_argument("--no-identify", action="store_true", help="no identification filter")
    p.add_argument(
        "--no-guess-filter", action="store_true", help="keep items the prior alone answers"
    )
    p.set_defaults(func=_recall_command)


__all__ = [
    "DEMO_IDENTIFY",
    "GROUPINGS",
    "METRICS",
    "SETTINGS",
    "SETTING_NAMES",
    "SUBSETS",
    "TRIVIAL",
    "FailureProbes",
    "LinkingCurves",
    "RecallItem",
    "RecallRun",
    "Transfer",
    "answer_perplexity_of",
    "check_families",
    "check_trivial",
    "failure_probes",
    "families_of",
    "layerwise_cosine",
    "linking_curves",
    "logit_lens",
    "majority_vote",
    "method_table",
    "plot_accuracy",
    "plot_linking",
    "plot_probe_curves",
    "plot_risk_coverage",
    "recall_items",
    "register",
    "risk_curves",
    "run_recall",
    "select_families",
    "selective_frame",
    "transfer",
]
