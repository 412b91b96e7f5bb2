"""Stage 1, resolve: each :class:`~interp.Sample` under its :class:`~interp.Condition` as one
:class:`Row`, whose media load on first use and whose condition is applied once (the batch stage
reads a row's frame counts from the same resolved row the processor later gets)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ..conditions import Condition, ConditionContext
from ..conditions.apply import Prepared, carries, prepare
from ..samples import Sample


@dataclass(eq=False)
class Row:
    """One sample under one condition.

    Attributes:
        sample: the sample as given.
        condition: the parsed condition of this row.
        context: the processor and the sample pool ``swap`` parts draw from.
    """

    sample: Sample
    condition: Condition
    context: ConditionContext = field(repr=False)

    def carries(self, kind: str) -> bool:
        """Whether the row's input carries ``kind`` (``"image"``, ``"audio"``, ``"video"``),
        read from the sample and the condition without loading any media."""
        return carries(self.sample, self.condition, kind)

    @cached_property
    def seen(self) -> Prepared:
        """The sample as the model sees it: the condition applied (once; this loads the media)."""
        return prepare(
            [self.sample], self.condition, self.context.processor, all_samples=self.context.pool
        )[0]

    def release(self) -> None:
        """Forget the loaded media (the row is encoded; :attr:`seen` would load them again)."""
        self.__dict__.pop("seen", None)

    @property
    def frames(self) -> tuple[int, ...]:
        """The frame count of each video the row carries (empty when it carries none)."""
        if not self.carries("video"):
            return ()
        return tuple(len(v) for v in self.seen.videos)


def row_conditions(
    condition: str | Condition | Sequence[str | Condition], n: int
) -> list[Condition]:
    """One parsed condition per row: ``condition`` for every row, or a sequence of ``n``."""
    if isinstance(condition, (str, Condition)):
        return [Condition.parse(condition)] * n
    conds = [Condition.parse(c) for c in condition]
    if len(conds) != n:
        raise ValueError(f"{len(conds)} conditions for {n} rows; give one per row")
    return conds


def resolve(
    samples: Sequence[Sample],
    condition: str | Condition | Sequence[str | Condition],
    processor: Any,
    *,
    all_samples: Sequence[Sample] | None = None,
) -> list[Row]:
    """One :class:`Row` per sample (nothing is loaded yet). ``condition`` is one condition for
    every row or one per row; ``all_samples`` is the pool ``swap`` parts draw from (default:
    ``samples``)."""
    conds = row_conditions(condition, len(samples))
    pool = list(all_samples) if all_samples is not None else list(samples)
    context = ConditionContext(processor, pool)
    return [Row(s, c, context) for s, c in zip(samples, conds)]


__all__ = ["Row", "resolve", "row_conditions"]
