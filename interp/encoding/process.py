"""Stage 4, process: one call of the model's processor on the rendered prompts with each row's
images, audio and videos (as the resolve stage left them), asking for the character offsets of
every token and of every expanded placeholder in the text the tokenizer read (see
:mod:`interp.processing`)."""

from __future__ import annotations

from collections.abc import Sequence

from ..processing import _Processed as Processed
from ..processing import _processor_call
from .codec import Codec
from .render import Rendered


def process(codec: Codec, rendered: Sequence[Rendered]) -> Processed:
    """The processor's output for the rendered rows: model inputs (CPU), the texts the tokenizer
    read, token offsets and placeholder-replacement offsets."""
    seen = [r.row.seen for r in rendered]
    return _processor_call(
        codec,  # type: ignore[arg-type]  (reads processor, tokenizer, adapter, image_token_id)
        [r.prompt for r in rendered],
        [p.images for p in seen],
        [p.audios for p in seen],
        [p.videos for p in seen],
    )


__all__ = ["Processed", "process"]
