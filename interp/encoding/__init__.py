"""Turning samples under a condition into one collated model input, as one-way stages (one module
each, each importing only the stages before it; none imports :mod:`interp.model`, they read a
:class:`~interp.encoding.codec.Codec`):

resolve (Sample + Condition → :class:`~interp.encoding.resolve.Row`, the condition applied once)
→ batch (groups of rows that may share a forward) → render (the adapter's prompt + the question's
character spans) → process (the processor call) → locate (the spans in the text the tokenizer
read) → mask (placeholder positions, checked) → assemble (:class:`Encoding`) → select (named
positions: the only place a position name is resolved). ``targets`` appends teacher-forcing
targets to an encoding.

Every batch is built by the model's own processor with its chat template and left padding; the last
prompt token's position and the placeholder masks are derived from the encoding itself, so they are
correct whatever the padding side.
"""

from __future__ import annotations

from .assemble import Encoding, batches, check_pixel_conditions, encode, last_positions
from .batch import batch_indices
from .codec import Codec, codec_of
from .render import unknown_words, warn_unknown_tokens
from .resolve import row_conditions
from .select import image_slot_mask, question_mask, select
from .targets import append_targets, target_ids

__all__ = [
    "Codec",
    "Encoding",
    "append_targets",
    "batch_indices",
    "batches",
    "check_pixel_conditions",
    "codec_of",
    "encode",
    "image_slot_mask",
    "last_positions",
    "question_mask",
    "row_conditions",
    "select",
    "target_ids",
    "unknown_words",
    "warn_unknown_tokens",
]
