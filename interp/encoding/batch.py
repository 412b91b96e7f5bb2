"""Stage 2, batch: the resolved rows cut into the groups that may share one forward.

Rows are grouped first where the adapter cannot mix rows with and without a modality (Mllama,
InstructBLIP, PaliGemma for images), and where it stacks a forward's videos
(``Adapter.stacked_videos``), by their videos' frame counts under the condition (read from the
resolved rows, whose videos the processor then reuses: each video is decoded once); each group is
then cut into batches of at most ``batch_size`` rows, in order."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from ..conditions import Condition
from ..samples import Sample
from .resolve import Row, resolve


def batch_rows(adapter: Any, rows: Sequence[Row], batch_size: int) -> Iterator[list[int]]:
    """The row indices of each batch (see the module docstring)."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    order = list(range(len(rows)))
    groups = [order]
    for kind in ("image", "audio", "video"):
        if not adapter.mixed(kind):
            # rows with and without this modality run in separate forwards
            has = [row.carries(kind) for row in rows]
            groups = [
                part
                for group in groups
                for part in ([i for i in group if has[i]], [i for i in group if not has[i]])
                if part
            ]
    if adapter.stacked_videos:
        frames = {i: rows[i].frames for i in order}
        groups = [
            [i for i in group if frames[i] == key]
            for group in groups
            for key in dict.fromkeys(frames[i] for i in group)
        ]
    for group in groups:
        for start in range(0, len(group), batch_size):
            yield group[start : start + batch_size]


def batch_indices(
    vlm: Any,
    samples: Sequence[Sample],
    condition: str | Condition,
    batch_size: int,
    *,
    all_samples: Sequence[Sample] | None = None,
) -> Iterator[list[int]]:
    """The row indices of each batch :func:`interp.encoding.batches` forms (without encoding
    them); ``vlm``: a model or a :class:`~interp.encoding.codec.Codec` (its ``adapter`` and
    ``processor`` are read)."""
    cond = Condition.parse(condition)
    rows = resolve(samples, cond, vlm.processor, all_samples=all_samples or samples)
    yield from batch_rows(vlm.adapter, rows, batch_size)


__all__ = ["batch_indices", "batch_rows"]
