"""Teacher-forcing targets now live in :mod:`interp.encoding.targets`; this path keeps working."""

from __future__ import annotations

from .encoding.targets import append_targets, target_ids

__all__ = ["append_targets", "target_ids"]
