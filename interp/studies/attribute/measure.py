"""Occlusion maps: how much the answer's log-probability drops when one region of the image is
hidden from the model.

For sample i with answer a and region r (a cell of a ``rows × cols`` grid, or a given box),

    score[i, r] = log p(a | x_i) − log p(a | x_i with the image tokens of r ablated or null-swapped)

teacher-forced, natural log, summed over the answer's tokens. The image tokens of a region come
from :func:`interp.token_regions` (every view: a tile token and a base token that see the region
are both hidden). Each sample is scored once unedited and once per region: the rows are copies of
the sample under ids ``<id>#r<k>``, scored together by :func:`interp.score` with one
:class:`~interventions.AblateImageTokens` (or :class:`~interventions.SwapImageTokens`) edit that
hides, in each copy, its region's tokens — regions + 1 teacher-forced forwards per sample, batched,
resumable through ``store``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

import interp
from interp.errors import EmptyInputError, RegionError
from interp.options import RunOptions
from interp.regions import Box, TokenRegions
from interp.reprs import Summary
from interp.samples import Sample, ensure_samples

if TYPE_CHECKING:
    from interp.model import VLM

Hide = Literal["ablate", "swap"]


@dataclass(repr=False)
class Attribution(Summary):
    """Per-sample, per-region attribution scores of one method.

    Attributes:
        method: ``"occlusion"``, ``"attention"`` or ``"gradient"``.
        scores: ``[n, R]`` the score of region r for sample i (occlusion: the drop of the
            answer's log-probability when r is hidden; positive = the region supports the answer).
        base: ``[n]`` log p(answer) of the unedited input.
        region_boxes: per sample the ``[R, 4]`` pixel boxes of its regions.
        regions: per sample its :class:`~interp.TokenRegions`.
        groups: per sample, per region, the prompt positions (of the sample encoded alone) hidden.
        sample_ids, questions, answers: the samples and the answers scored.
        settings: how regions were hidden (``hide``, ``mode`` / ``source``, grid or boxes).
        per_head: for ``"attention"``, ``[n, R, L, heads]``: the mass per layer and head.
    """

    method: str
    scores: np.ndarray
    base: np.ndarray
    region_boxes: list[np.ndarray]
    regions: list[TokenRegions]
    groups: list[list[np.ndarray]]
    sample_ids: list[str]
    questions: list[str]
    answers: list[str]
    settings: dict[str, object]
    per_head: np.ndarray | None = None

    def _repr_head(self) -> dict[str, Any]:
        return {"n": len(self), "method": self.method}

    def __len__(self) -> int:
        return len(self.sample_ids)

    def index(self, sample: int | str | Sample) -> int:
        """The row of ``sample`` (a row number, an id or a Sample)."""
        if isinstance(sample, Sample):
            sample = str(sample.id)
        if isinstance(sample, str):
            if sample not in self.sample_ids:
                raise RegionError(f"sample {sample!r} is not in this attribution")
            return self.sample_ids.index(sample)
        if not 0 <= sample < len(self):
            raise RegionError(f"row {sample} is out of range (0..{len(self) - 1})")
        return int(sample)

    def token_values(self, sample: int | str | Sample) -> np.ndarray:
        """One value per token of the sample's :class:`TokenRegions` (its region's score; NaN for
        tokens in no region), e.g. for :meth:`TokenRegions.to_pixels`. A token in several regions
        (overlapping boxes) gets the mean of their scores."""
        i = self.index(sample)
        reg = self.regions[i]
        total, count = np.zeros(len(reg)), np.zeros(len(reg))
        for k, group in enumerate(self.groups[i]):
            hit = np.isin(reg.positions, group)
            total[hit] += self.scores[i, k]
            count[hit] += 1
        with np.errstate(invalid="ignore"):
            return total / np.where(count > 0, count, np.nan)

    def heatmap(self, sample: int | str | Sample) -> np.ndarray:
        """The sample's scores painted onto its original image, ``[height, width]`` (NaN where no
        region's token sees the pixel): :meth:`TokenRegions.to_pixels` of :meth:`token_values`."""
        i = self.index(sample)
        return self.regions[i].to_pixels(self.token_values(i))

    def to_frame(self) -> pd.DataFrame:
        """One row per sample and region: ids, the region's box and token count, the score."""
        rows = []
        for i, sid in enumerate(self.sample_ids):
            for k, box in enumerate(self.region_boxes[i]):
                rows.append(
                    {
                        "sample_id": sid,
                        "method": self.method,
                        "region": k,
                        "x0": box[0],
                        "y0": box[1],
                        "x1": box[2],
                        "y1": box[3],
                        "tokens": len(self.groups[i][k]),
                        "score": float(self.scores[i, k]),
                        "base_logprob": float(self.base[i]),
                        "answer": self.answers[i],
                    }
                )
        return pd.DataFrame(rows)


def answers_for(
    vlm: VLM,
    samples: list[Sample],
    answers: Literal["given", "greedy"] | Sequence[str],
    condition: str,
    *,
    max_new_tokens: int = 8,
    run: RunOptions | None = None,
    **options: Any,
) -> list[str]:
    """The answers to attribute: each sample's own (``"given"``), the model's greedy answer
    (``"greedy"``) or one string per sample.

    ``run``: how the greedy answers are generated (:class:`~interp.options.RunOptions`; default
    no progress bar); its fields may also be given as keywords.

    Raises:
        EmptyInputError: ``"given"`` and a sample without an answer; an empty greedy answer.
    """
    # remote: runs through residual_stream / score / generate
    opts = RunOptions.resolve(run if run is not None else RunOptions(progress_bar=False), **options)
    if answers == "given":
        missing = [s.id for s in samples if not s.answer]
        if missing:
            raise EmptyInputError(
                f"samples {missing[:5]} have no answer; pass answers='greedy' to attribute the "
                "model's own answer"
            )
        return [str(s.answer) for s in samples]
    if answers == "greedy":
        gen = interp.generate(vlm, samples, condition, max_new_tokens=max_new_tokens, run=opts)
        empty = [s.id for s, t in zip(samples, gen.texts) if not t]
        if empty:
            raise EmptyInputError(f"the model's greedy answer to samples {empty[:5]} is empty")
        return list(gen.texts)
    out = [str(a) for a in answers]
    if len(out) != len(samples):
        raise ValueError(f"{len(out)} answers for {len(samples)} samples: give one per sample")
    return out


def region_groups(
    reg: TokenRegions, grid: tuple[int, int] | None, boxes: Sequence[Box] | None
) -> tuple[list[np.ndarray], np.ndarray]:
    """The regions of one sample: the cells of ``grid`` (rows, cols) or the tokens of ``boxes``;
    their positions and pixel boxes."""
    if boxes is not None:
        return [reg.in_box(tuple(b)) for b in boxes], np.asarray(boxes, dtype=float).reshape(-1, 4)
    assert grid is not None
    rows, cols = grid
    return reg.grid(rows, cols), reg.cell_boxes(rows, cols)


@dataclass
class _Layout:
    """The regions of each sample, relative to the sample encoded alone, and each region's
    image-token ranks (which do not depend on padding)."""

    regions: list[TokenRegions]
    groups: list[list[np.ndarray]]
    ranks: list[list[list[int]]]
    region_boxes: list[np.ndarray]


def _layout(
    vlm: VLM,
    samples: list[Sample],
    condition: str,
    grid: tuple[int, int],
    boxes: Sequence[Box] | Sequence[Sequence[Box]] | None,
) -> _Layout:
    if boxes is None and (len(grid) != 2 or min(grid) < 1):
        raise RegionError(f"grid must be (rows, cols) with both >= 1, got {grid!r}")
    per_sample = _per_sample_boxes(boxes, len(samples))
    enc = interp.encode(vlm, samples, condition)
    found = interp.token_regions(vlm, samples, condition, enc=enc)
    assert isinstance(found, list)
    mask = enc.image_mask.cpu().numpy()
    attention = enc.attention_mask.cpu().numpy()
    out = _Layout([], [], [], [])
    for i, (s, reg) in enumerate(zip(samples, found)):
        if not len(reg):
            raise RegionError(f"sample {s.id!r} has no image tokens under {condition!r}")
        groups, cell_boxes = region_groups(reg, (grid[0], grid[1]), per_sample[i])
        image_positions = np.flatnonzero(mask[i])
        pad = int(np.argmax(attention[i] > 0))  # left padding of the row
        out.regions.append(replace(reg, positions=reg.positions - pad, row=0))
        out.groups.append([g - pad for g in groups])
        out.ranks.append([np.searchsorted(image_positions, g).tolist() for g in groups])
        out.region_boxes.append(cell_boxes)
    return out


def _settings(grid: tuple[int, int], boxes: object, condition: str, **more: object) -> dict:
    return {
        "grid": None if boxes is not None else f"{grid[0]}x{grid[1]}",
        "boxes": boxes is not None,
        "condition": condition,
        **more,
    }


def occlusion(
    vlm: VLM,
    samples: Sequence[Sample] | Sample,
    *,
    grid: tuple[int, int] = (4, 4),
    boxes: Sequence[Box] | Sequence[Sequence[Box]] | None = None,
    hide: Hide = "ablate",
    mode: str = "zero",
    source: str = "null:black",
    answers: Literal["given", "greedy"] | Sequence[str] = "given",
    condition: str = "full",
    max_new_tokens: int = 8,
    run: RunOptions | None = None,
    **options: Any,
) -> Attribution:
    """Occlusion scores of every region of every sample (see the module docstring).

    Args:
        grid: ``(rows, cols)`` of the coarse grid over the image (ignored with ``boxes``).
        boxes: pixel boxes ``(x0, y0, x1, y1)`` of the original image instead of a grid: one list
            for every sample, or one list per sample (the same number each).
        hide: ``"ablate"`` (the region's image tokens set to zero or their row's mean: ``mode``)
            or ``"swap"`` (replaced by the ``source`` image's tokens, by default a black image's).
        answers: ``"given"`` (each sample's answer), ``"greedy"`` (the model's, generated under
            ``condition``) or one string per sample.
        run: how it runs (:class:`~interp.options.RunOptions`): batch size, progress bar, and
            the resumable ``store`` of the scoring run (see :func:`interp.score`; the greedy
            answers are not stored); its fields may also be given as keywords.

    Runs remotely (``remote=`` / a model loaded for NDIF): the region edits lower to plain
    writes, one scoring request per batch (with ``hide="swap"`` one more per batch reads the
    source image's tokens), and greedy answers one generation request per batch.

    Raises:
        NoSpatialLayoutError, LayoutNotMappedError: the family has no (mapped) token layout.
        RegionError: bad boxes or grid.
    """
    from interventions import AblateImageTokens, SwapImageTokens

    opts = RunOptions.resolve(run if run is not None else RunOptions(batch_size=8), **options)
    samples = ensure_samples(samples)
    if hide not in ("ablate", "swap"):
        raise RegionError(f"hide must be 'ablate' or 'swap', got {hide!r}")
    lay = _layout(vlm, samples, condition, grid, boxes)
    texts = answers_for(
        vlm,
        samples,
        answers,
        condition,
        max_new_tokens=max_new_tokens,
        run=replace(opts, store=None, shard=None),  # not stored: every process makes them
    )
    rows: list[Sample] = []
    targets: list[str] = []
    tokens: dict[str, list[int]] = {}
    for i, s in enumerate(samples):
        rows.append(s)
        targets.append(texts[i])
        for k, ranks in enumerate(lay.ranks[i]):
            copy = replace(s, id=f"{s.id}#r{k}")
            rows.append(copy)
            targets.append(texts[i])
            tokens[str(copy.id)] = ranks
    if hide == "ablate":
        edit = AblateImageTokens(tokens, mode)
    else:
        edit = SwapImageTokens(tokens, source)
    scored = interp.score(
        vlm,
        rows,
        targets,
        condition,
        edits=[edit],
        run=opts,
    )
    total = scored.total.double().numpy()
    width = len(lay.groups[0]) + 1  # the same for every sample (a grid, or as many boxes each)
    table = total.reshape(len(samples), width)
    base, hidden = table[:, 0], table[:, 1:]
    return Attribution(
        method="occlusion",
        scores=base[:, None] - hidden,
        base=base,
        region_boxes=lay.region_boxes,
        regions=lay.regions,
        groups=lay.groups,
        sample_ids=[str(s.id) for s in samples],
        questions=[s.question for s in samples],
        answers=texts,
        settings=_settings(
            grid,
            boxes,
            condition,
            hide=hide,
            mode=mode if hide == "ablate" else None,
            source=source if hide == "swap" else None,
            answers=answers if isinstance(answers, str) else "given per sample",
        ),
    )


def attention(
    vlm: VLM,
    samples: Sequence[Sample] | Sample,
    *,
    grid: tuple[int, int] = (4, 4),
    boxes: Sequence[Box] | Sequence[Sequence[Box]] | None = None,
    condition: str = "full",
    run: RunOptions | None = None,
    **options: Any,
) -> Attribution:
    """The descriptive baseline: the attention mass of the last prompt position (the one that
    predicts the answer) on the image tokens of each region, per layer and head
    (:attr:`Attribution.per_head`, ``[n, R, L, heads]``); the score is its mean over layers and
    heads. One forward per sample (:func:`interp.attention_weights`); the answer plays no part.
    ``run``: how it runs (:class:`~interp.options.RunOptions`, its fields also as keywords).

    Runs here or on NDIF (eager attention's weights, recomputed from the attention call's inputs
    where eager attention does not run here: :func:`interp.attention_weights`).

    Raises:
        InterpError: flash attention, or cross-attention fusion (checked before any compute).
        NoSpatialLayoutError, LayoutNotMappedError, RegionError: as :func:`occlusion`.
    """
    from interp.residual import check_visual_attention

    opts = RunOptions.resolve(run if run is not None else RunOptions(), **options)
    samples = ensure_samples(samples)
    check_visual_attention(vlm)
    lay = _layout(vlm, samples, condition, grid, boxes)
    weights = interp.attention_weights(vlm, samples, condition, run=opts)
    per_head = np.stack(
        [
            np.stack([weights.mass(i, g).numpy() for g in groups])
            for i, groups in enumerate(lay.groups)
        ]
    ).astype(np.float64)
    return Attribution(
        method="attention",
        scores=per_head.mean(axis=(2, 3)),
        base=np.full(len(samples), np.nan),
        region_boxes=lay.region_boxes,
        regions=lay.regions,
        groups=lay.groups,
        sample_ids=[str(s.id) for s in samples],
        questions=[s.question for s in samples],
        answers=[str(s.answer or "") for s in samples],
        settings=_settings(grid, boxes, condition),
        per_head=per_head,
    )


def gradient(
    vlm: VLM,
    samples: Sequence[Sample] | Sample,
    *,
    layer: int,
    grid: tuple[int, int] = (4, 4),
    boxes: Sequence[Box] | Sequence[Sequence[Box]] | None = None,
    null: str = "null:black",
    answers: Literal["given", "greedy"] | Sequence[str] = "given",
    condition: str = "full",
    max_new_tokens: int = 8,
    run: RunOptions | None = None,
    **options: Any,
) -> Attribution:
    """Attribution patching, the fast approximation of occlusion by a null-swap: per region r,

        score[i, r] = Σ over the image tokens t of r of  ∂ log p(a) / ∂ h_l[t] · (h_l[t] − h_l^null[t])

    at residual index ``layer`` (0 = the decoder input, where it approximates
    :func:`occlusion` with ``hide="swap"``), ``h^null`` the states of the ``null`` image's run.
    One forward and one backward per sample, plus the null image's forward
    (:func:`interp.image_gradients`). :attr:`Attribution.per_head` stays None. ``run``: how it
    runs (:class:`~interp.options.RunOptions`, its fields also as keywords; a ``store`` keeps
    the greedy answers, the gradients and the null image's states in sub-folders).

    Runs here or on NDIF (the backward in the scoring request: :func:`interp.image_gradients`).

    Raises:
        ImageTokenMismatchError: the null image has another number of image tokens.
        NoSpatialLayoutError, LayoutNotMappedError, RegionError: as :func:`occlusion`.
    """
    from interp.errors import ImageTokenMismatchError
    from interp.store import substore

    opts = RunOptions.resolve(run if run is not None else RunOptions(), **options)

    def part(name: str) -> RunOptions:
        return replace(opts, store=substore(opts.store, name))

    samples = ensure_samples(samples)
    lay = _layout(vlm, samples, condition, grid, boxes)
    texts = answers_for(
        vlm,
        samples,
        answers,
        condition,
        max_new_tokens=max_new_tokens,
        run=part("answers"),
    )
    real = interp.image_gradients(vlm, samples, texts, condition, layer=layer, run=part("real"))
    base = interp.image_gradients(
        vlm, samples, None, null, layer=layer, gradients=False, run=part("null")
    )
    assert real.grads is not None and real.logprobs is not None
    scores = np.zeros((len(samples), len(lay.groups[0])))
    for i, s in enumerate(samples):
        if base.states[i].shape != real.states[i].shape:
            raise ImageTokenMismatchError(
                f"sample {s.id!r}: the {null!r} image has {len(base.states[i])} image tokens, "
                f"the real one {len(real.states[i])}; use a null image of the same size"
            )
        per_token = (real.grads[i] * (real.states[i] - base.states[i])).sum(-1).double().numpy()
        for k, ranks in enumerate(lay.ranks[i]):
            scores[i, k] = per_token[ranks].sum()
    return Attribution(
        method="gradient",
        scores=scores,
        base=real.logprobs.double().numpy(),
        region_boxes=lay.region_boxes,
        regions=lay.regions,
        groups=lay.groups,
        sample_ids=[str(s.id) for s in samples],
        questions=[s.question for s in samples],
        answers=texts,
        settings=_settings(grid, boxes, condition, layer=layer, null=null),
    )


def _per_sample_boxes(
    boxes: Sequence[Box] | Sequence[Sequence[Box]] | None, n: int
) -> list[list[Box] | None]:
    if boxes is None:
        return [None] * n
    items = list(boxes)
    if not items:
        raise RegionError("boxes is empty: give at least one (x0, y0, x1, y1) box")
    nested = not np.isscalar(items[0][0])
    lists = [list(b) for b in items] if nested else [items] * n
    if len(lists) != n:
        raise RegionError(f"{len(lists)} box lists for {n} samples: give one list per sample")
    for lst in lists:
        for b in lst:
            if len(b) != 4 or not (b[2] > b[0] and b[3] > b[1]):
                raise RegionError(f"box {tuple(b)} is not (x0, y0, x1, y1) with x1 > x0, y1 > y0")
    if len({len(lst) for lst in lists}) != 1:
        raise RegionError("every sample needs the same number of boxes")
    return lists  # type: ignore[return-value]


__all__ = ["Attribution", "answers_for", "attention", "gradient", "occlusion", "region_groups"]
