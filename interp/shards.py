"""Which share of the samples this process computes (``--shard``, ``accelerate launch``,
``torchrun``). A leaf: the command line checks ``--shard`` with it before any heavy import."""

from __future__ import annotations

import os

Shard = tuple[int, int] | str | None


def resolve_shard(shard: Shard) -> tuple[int, int] | None:
    """``(i, n)`` from a tuple, an ``"i/n"`` string, or ``"auto"`` (``RANK`` / ``WORLD_SIZE`` of
    ``accelerate launch`` and ``torchrun``; None when they are absent or the world is one
    process)."""
    if shard is None:
        return None
    if shard == "auto":
        world = int(os.environ.get("WORLD_SIZE", "1"))
        rank = int(os.environ.get("RANK", os.environ.get("LOCAL_RANK", "0")))
        return (rank, world) if world > 1 else None
    if isinstance(shard, str):
        try:
            i, n = (int(x) for x in shard.split("/"))
        except ValueError:
            raise ValueError(f"a shard is 'i/n' (e.g. '0/2'), got {shard!r}") from None
    else:
        i, n = shard
    if not (n >= 1 and 0 <= i < n):
        raise ValueError(f"shard {i}/{n}: need n >= 1 and 0 <= i < n")
    return (i, n) if n > 1 else None


__all__ = ["Shard", "resolve_shard"]
