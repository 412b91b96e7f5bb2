"""The model runs of the study: edges, windows and :func:`information_flow`.

For each edge S → T and each window W of consecutive decoder layers the answer is scored
teacher-forced once with T blocked from attending to S in W (:class:`interventions.Knockout`
through :func:`interp.score`, one batched scoring pass per (edge, window)) and once without any
edit; Δ_W = log p(answer | knockout in W) − log p(answer), summed over the answer's tokens.

The knockout is an edit of the attention mask (:func:`interp.plain.cut`), so the study runs with
eager or SDPA attention, here or on NDIF (``remote=True``: every pass is plain requests, one per
batch).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

import interp
from interp.edits import POSITION_NAMES, PositionSpec, check_position
from interp.errors import EmptyTargetError, InterventionError, PositionError
from interp.options import RunOptions
from interp.resume import why_not
from interp.samples import Sample, ensure_samples
from interp.store import substore
from interp.windows import score_windows
from interventions import Knockout
from probes.split import agreement_split

from .analysis import IMAGE_EDGES, Flow

if TYPE_CHECKING:
    from interp.model import VLM


@dataclass(frozen=True)
class Edge:
    """Source positions → target positions: the targets may not read the sources.

    A target ``"last"`` stands for every position that predicts an answer token: the last prompt
    token and the teacher-forced answer tokens (for a one-token answer, the last prompt token
    alone), so that no answer token can read the sources around the knockout.
    """

    name: str
    source: PositionSpec
    target: PositionSpec

    def knockouts(self, window: Sequence[int]) -> list[Knockout]:
        """The edits that cut this edge in the decoder layers ``window``."""
        layers = list(window)
        if self.target == "last":
            return [
                Knockout(keys=self.source, queries="last", layers=layers),
                Knockout(keys=self.source, queries="answer", layers=layers),
            ]
        return [Knockout(keys=self.source, queries=self.target, layers=layers)]


EDGES: dict[str, Edge] = {
    "image>question": Edge("image>question", "image", "question"),
    "image>last": Edge("image>last", "image", "last"),
    "question>last": Edge("question>last", "question", "last"),
}


def _spec(text: str) -> PositionSpec:
    text = text.strip()
    if re.fullmatch(r"-?\d+(\+-?\d+)*", text):
        values = [int(v) for v in text.split("+")]
        return values[0] if len(values) == 1 else values
    return text


def parse_edge(edge: str | Edge | tuple[PositionSpec, PositionSpec]) -> Edge:
    """An edge from its name (``"image>question"``, ``"image>last"``, ``"question>last"``), any
    ``"SOURCE>TARGET"`` of position names (``"image:1>text"``) or prompt offsets joined by ``+``
    (``"3+4>-1"``), a ``(source, target)`` pair of position specs, or an :class:`Edge`.

    Raises:
        PositionError: not ``SOURCE>TARGET``, an unknown position, or source = target.
    """
    if isinstance(edge, Edge):
        return edge
    if isinstance(edge, tuple):
        source, target = edge
        name = f"{source}>{target}"
    else:
        if edge in EDGES:
            return EDGES[edge]
        parts = str(edge).split(">")
        if len(parts) != 2 or not all(p.strip() for p in parts):
            raise PositionError(
                f"unknown edge {edge!r}: give SOURCE>TARGET, e.g. {', '.join(EDGES)} "
                f"(positions: {', '.join(POSITION_NAMES)}, image:k, prompt offsets)"
            )
        source, target = (_spec(p) for p in parts)
        name = str(edge).replace(" ", "")
    for spec in (source, target):
        try:
            check_position(spec)
        except InterventionError as err:
            raise PositionError(f"edge {name!r}: {err}") from None
    if isinstance(source, str) and source == target:
        raise PositionError(f"edge {name!r}: the source and the target are the same positions")
    return Edge(name, source, target)


def windows(n_layers: int, size: int = 1, stride: int = 1) -> list[tuple[int, ...]]:
    """Windows of ``size`` consecutive decoder layers (1..L), starting at 1, 1 + stride, ...;
    the last one ends at or before L.

    Raises:
        InterventionError: ``size`` outside 1..L or ``stride`` < 1.
    """
    if not 1 <= size <= n_layers:
        raise InterventionError(
            f"window of {size} layers: the model has {n_layers} decoder layers; give a window "
            f"size in 1..{n_layers}"
        )
    if stride < 1:
        raise InterventionError(f"the window stride must be >= 1, got {stride}")
    return [tuple(range(s, s + size)) for s in range(1, n_layers - size + 2, stride)]


def check_flow(vlm: VLM, edges: Sequence[Edge], size: int, stride: int) -> list[tuple[int, ...]]:
    """Everything checked before compute: the windows, every edge's knockout on this model
    (positions, modality, fusion, an attention that takes a 4-D mask). Returns the windows.

    Raises:
        InterventionError: a bad window, an edge this model cannot cut (e.g. image keys on a
            cross-attention family), or an attention implementation without a 4-D mask (flash
            attention).
    """
    found = windows(vlm.n_layers, size, stride)
    if not edges:
        raise PositionError(f"give at least one edge, e.g. {', '.join(EDGES)}")
    for edge in edges:
        for edit in edge.knockouts(found[0]):
            edit.check(vlm)
    return found


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_") or "edge"


def information_flow(
    vlm: VLM,
    samples: Sequence[Sample],
    *,
    edges: Sequence[str | Edge | tuple[PositionSpec, PositionSpec]] = tuple(EDGES),
    window: int = 1,
    stride: int = 1,
    answer: str = "given",
    split: str | None = "agreement",
    max_new_tokens: int = 8,
    run: RunOptions | None = None,
    **options: Any,
) -> Flow:
    """Attention-knockout information flow: Δ per sample, edge and window.

    Args:
        edges: edge names or specs (:func:`parse_edge`); default image → question, image → last,
            question → last.
        window, stride: window size k in layers and the step between window starts.
        answer: ``"given"`` scores each sample's own answer; ``"greedy"`` the model's greedy
            answer to the full input (generated first, up to ``max_new_tokens``).
        split: how samples are grouped: ``"agreement"`` (D_VT: the greedy answer changes without
            the image, D_T: it does not — the chain-of-embedding study's split), a ``meta``
            label, or None (one group ``"all"``).
        run: how it runs (:class:`~interp.options.RunOptions`): batch size, progress bar, and a
            ``store`` folder under which every scoring pass keeps its own resumable store; its
            fields may also be given as keywords (``batch_size=8``, ``store=...``).

    Runs remotely with ``remote=True`` (or on a model loaded for NDIF): the greedy answers and
    the sweep are plain requests; with layer resume the sweep is one request per batch (an
    nnsight session that keeps the states on the server, :mod:`interp.windows`), without it the
    base scores and every knockout pass are one request per batch each.

    Layer resume (``RunOptions.resume_layers``, on by default; :mod:`interp.resume`): a run on a
    family verified for it, here or remote, runs the clean forward of each batch once, keeping
    the residual stream at every window's first layer, and each knockout forward skips the
    decoder layers below its window (and the towers; the embeddings still run). The values are
    the full forwards' within float tolerance; with a ``store`` every batch's clean and knockout
    totals are kept together under ``store/windows`` (resumable, shardable); another family runs
    every forward in full.

    Raises:
        InterventionError: flash attention (no 4-D mask), a window larger than the model, an
            unknown edge (before any compute).
        EmptyTargetError: a sample without an answer (``"given"``) or whose greedy answer is
            empty.
    """
    opts = RunOptions.resolve(run if run is not None else RunOptions(), **options)
    samples = ensure_samples(samples)
    parsed = [parse_edge(e) for e in edges]
    names = [e.name for e in parsed]
    if len(set(names)) != len(names):
        raise PositionError(f"an edge is given twice: {names}")
    found = check_flow(vlm, parsed, window, stride)
    if answer not in ("given", "greedy"):
        raise ValueError(f"answer must be 'given' or 'greedy', got {answer!r}")
    if answer == "given":
        missing = [s.id for s in samples if not s.answer]
        if missing:
            raise EmptyTargetError(
                f"samples {missing[:5]} have no answer: give answers or use answer='greedy'"
            )
    if split not in (None, "agreement"):
        missing = [s.id for s in samples if split not in s.meta]
        if missing:
            raise ValueError(f"samples {missing[:5]} have no meta label {split!r} to group by")

    def part(name: str) -> RunOptions:
        """The run options of one pass: its own store under ``store``."""
        return replace(opts, store=substore(opts.store, name))

    full = blind = None
    if answer == "greedy" or split == "agreement":
        full = interp.generate(
            vlm, samples, "full", max_new_tokens=max_new_tokens, run=part("generate_full")
        )
    if split == "agreement":
        blind = interp.generate(
            vlm, samples, "blind", max_new_tokens=max_new_tokens, run=part("generate_blind")
        )
    if answer == "greedy":
        assert full is not None
        empty = [s.id for s, ids in zip(samples, full.token_ids) if not ids]
        if empty:
            raise EmptyTargetError(
                f"the greedy answers of samples {empty[:5]} are empty (the model ends at once): "
                "score the given answers instead (answer='given')"
            )
        targets: list[str | list[int]] = [list(ids) for ids in full.token_ids]
        texts = list(full.texts)
    else:
        targets = [str(s.answer) for s in samples]
        texts = list(targets)  # type: ignore[arg-type]
    if why_not(vlm, opts) is None:
        passes = [(w[0], edge.knockouts(w)) for edge in parsed for w in found]
        labels = {"edges": names, "windows": [list(w) for w in found], "answer": answer}
        base_total, totals = score_windows(
            vlm, samples, targets, passes, labels=labels, run=part("windows")
        )
        delta = {
            edge.name: np.stack(totals[k * len(found) : (k + 1) * len(found)], 1)
            - base_total[:, None]
            for k, edge in enumerate(parsed)
        }
    else:
        base = interp.score(vlm, samples, targets, edits=[], run=part("base"))
        base_total = base.total.double().numpy()
        delta = {}
        for edge in parsed:
            rows = []
            for w in found:
                where = part(f"{_slug(edge.name)}-{w[0]}-{w[-1]}")
                knocked = interp.score(vlm, samples, targets, edits=edge.knockouts(w), run=where)
                rows.append(knocked.total.double().numpy() - base_total)
            delta[edge.name] = np.stack(rows, axis=1)
    if split == "agreement":
        assert full is not None and blind is not None
        in_vt = agreement_split(full.texts, blind.texts)
        groups = np.where(in_vt, "D_VT", "D_T")
    elif split is None:
        groups = np.full(len(samples), "all")
    else:
        groups = np.array([str(s.meta[split]) for s in samples])
    return Flow(
        delta=delta,
        windows=found,
        base=base_total,
        groups=groups,
        sample_ids=[str(s.id) for s in samples],
        answers=[str(t) for t in texts],
        answer_mode=answer,
        split=split,
        n_layers=vlm.n_layers,
    )


__all__ = [
    "EDGES",
    "IMAGE_EDGES",
    "Edge",
    "check_flow",
    "information_flow",
    "parse_edge",
    "windows",
]
