"""Stage 3, render: each resolved row's prompt text through the adapter's prompt builder, and
where its question text lies in that prompt (character spans).

A question is located by rendering the prompt once more with a sentinel in place of each text
piece (exact for every template that inserts message text verbatim); replacing the sentinels by
the text the builder put there must give the prompt back. Where a builder does not insert the text
verbatim, each piece is searched from the end of the prompt. No substring is ever tokenized on its
own: the locate stage maps these spans to tokens through the character offsets of the text the
tokenizer read.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ImageTokenMismatchError, UnknownTokenWarning
from ..media import AUDIO_SLOT, VIDEO_SLOT
from ..samples import IMAGE_SLOT, Sample
from .codec import Codec
from .resolve import Row

Span = tuple[int, int]

# Private-use characters: no template alters them and no question holds them.
_OPEN, _CLOSE = "\ue000", "\ue001"
_SENTINEL = re.compile(f"{_OPEN}(\\d+){_CLOSE}")
# every input slot, kept by re.split (a capturing group)
_SLOTS = re.compile(
    "(" + "|".join(re.escape(s) for s in (IMAGE_SLOT, AUDIO_SLOT, VIDEO_SLOT)) + ")"
)


def question_pieces(question: str) -> list[str]:
    """The question's text pieces between ``{image}`` (``{audio}``, ``{video}``) slots,
    stripped, empty ones dropped."""
    return [p.strip() for p in _SLOTS.split(question)[::2] if p.strip()]


def prompt_spans(
    build: Callable[[str], str], question: str, prompt: str
) -> tuple[list[Span], list[str]] | None:
    """Character spans, in ``prompt``, of the question text the prompt builder placed there.

    ``build(question)`` renders a prompt (the adapter's builder with the processor and image count
    bound); ``prompt`` is its output for ``question``. The question is rendered again with a
    sentinel in place of each text piece; replacing the sentinels by the text the builder put there
    must give ``prompt`` back, which fixes every piece's span exactly (a one-word question such as
    ``"A"`` is not confused with the ``A`` of ``ASSISTANT``).

    Returns:
        the spans and the text of each (the builder may join pieces, e.g. the blind prompt joins
        them with a space, so a span can hold several pieces); None when the builder does not
        insert the text verbatim.
    """
    pieces = question_pieces(question)
    if not pieces:
        return [], []
    parts, k = [], 0
    for i, raw in enumerate(_SLOTS.split(question)):
        if i % 2 == 0 and raw.strip():  # a text piece (odd items are the slots themselves)
            parts.append(f"{_OPEN}{k}{_CLOSE}")
            k += 1
        else:
            parts.append(raw)
    marked = build("".join(parts))
    spans: list[Span] = []
    texts: list[str] = []
    out: list[str] = []
    cursor = 0  # position in ``prompt`` of the marked text's next character
    last = 0
    order: list[int] = []
    for m in _SENTINEL.finditer(marked):
        out.append(marked[last : m.start()])
        cursor += m.start() - last
        index = int(m.group(1))
        if index >= len(pieces):
            return None
        order.append(index)
        spans.append((cursor, cursor + len(pieces[index])))
        texts.append(pieces[index])
        out.append(pieces[index])
        cursor += len(pieces[index])
        last = m.end()
    out.append(marked[last:])
    if "".join(out) != prompt or sorted(order) != list(range(len(pieces))):
        return None
    return _merge_adjacent(spans, texts, prompt)


def _merge_adjacent(
    spans: list[Span], texts: list[str], prompt: str
) -> tuple[list[Span], list[str]]:
    """Join spans separated only by spaces (pieces the builder joined into one text)."""
    merged: list[Span] = []
    joined: list[str] = []
    for span, text in zip(spans, texts):
        if merged and prompt[merged[-1][1] : span[0]].strip(" ") == "":
            merged[-1] = (merged[-1][0], span[1])
            joined[-1] = prompt[merged[-1][0] : span[1]]
        else:
            merged.append(span)
            joined.append(text)
    return merged, joined


def search_spans(question: str, prompt: str) -> tuple[list[Span], list[str]] | None:
    """Fallback for builders that do not insert the text verbatim: each piece searched from the
    end of the prompt, right to left. None when a piece is not in the prompt."""
    pieces = question_pieces(question)
    spans: list[Span] = []
    end = len(prompt)
    for piece in reversed(pieces):
        start = prompt.rfind(piece, 0, end)
        if start < 0:
            return None
        spans.append((start, start + len(piece)))
        end = start
    return spans[::-1], pieces


@dataclass
class Rendered:
    """One row's prompt.

    Attributes:
        row: the resolved row.
        prompt: the adapter's prompt for the row's question (as the condition left it) and inputs.
        question: that question text.
        spans / texts: where each run of question text lies in ``prompt``, and its text.
        problem: why the question could not be located in ``prompt``, or None.
    """

    row: Row
    prompt: str
    question: str
    spans: list[Span] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    problem: str | None = None


def _builder(codec: Codec, n_images: int, n_audio: int, n_video: int) -> Callable[[str], str]:
    """The adapter's prompt builder with the processor and the counts bound; audio and video
    counts are passed only when nonzero, so image-only builders keep their three-argument form."""
    extra = {k: n for k, n in (("n_audio", n_audio), ("n_video", n_video)) if n}
    return lambda question: codec.adapter.build_prompt(codec.processor, question, n_images, **extra)


def check_row(codec: Codec, row: Row) -> None:
    """The family takes the row's inputs, and its question holds no image placeholder token.

    Raises:
        ModalityError: the family does not take one of the row's input kinds.
        ImageTokenMismatchError: the question contains the image placeholder token.
    """
    seen = row.seen
    for kind, items in (("image", seen.images), ("audio", seen.audios), ("video", seen.videos)):
        if items:
            codec.adapter.require(kind)
    ids = codec.tokenizer(seen.sample.question, add_special_tokens=False)["input_ids"]
    if codec.image_token_id in ids:
        raise ImageTokenMismatchError(
            f"sample {row.sample.id!r}: the question contains the model's image placeholder "
            f"token ({codec.tokenizer.convert_ids_to_tokens(codec.image_token_id)!r}); remove it "
            "from the text and pass the image through Sample.image (with '{image}' slots to "
            "place several images)"
        )


def render(codec: Codec, rows: Sequence[Row]) -> list[Rendered]:
    """Each row's prompt and its question's spans in it (rows checked first, see
    :func:`check_row`)."""
    for row in rows:
        check_row(codec, row)
    out = []
    for row in rows:
        seen = row.seen
        question = seen.sample.question
        build = _builder(codec, len(seen.images), len(seen.audios), len(seen.videos))
        prompt = build(question)
        rendered = Rendered(row, prompt, question)
        if question_pieces(question):
            found = prompt_spans(build, question, prompt) or search_spans(question, prompt)
            if found is None:
                rendered.problem = (
                    "the prompt builder did not place the question text in the prompt verbatim"
                )
            else:
                rendered.spans, rendered.texts = found
        out.append(rendered)
    return out


def unknown_words(vlm: Any, texts: Sequence[str]) -> tuple[int, list[str]]:
    """How many of ``texts`` hold words the tokenizer maps to its unknown token, and those words
    (first occurrence order). ``vlm``: a model or a :class:`Codec` (its ``tokenizer`` is read)."""
    unk = vlm.tokenizer.unk_token_id
    if unk is None:
        return 0, []
    count, words = 0, []
    for text in texts:
        if not text:
            continue
        enc = vlm.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        bad = [text[a:b] for t, (a, b) in zip(enc["input_ids"], enc["offset_mapping"]) if t == unk]
        if bad:
            count += 1
            words.extend(w for w in bad if w not in words)
    return count, words


def warn_unknown_tokens(vlm: Any, samples: Sequence[Sample]) -> None:
    """One :class:`~interp.errors.UnknownTokenWarning` if any question has words the tokenizer
    cannot represent (they reach the model as its unknown token)."""
    texts = [" ".join(question_pieces(s.question)) for s in samples]  # without input slots
    count, words = unknown_words(vlm, texts)
    if count:
        shown = ", ".join(repr(w) for w in words[:5])
        warnings.warn(
            f"{count} of {len(samples)} questions hold words the tokenizer maps to its unknown "
            f"token {vlm.tokenizer.unk_token!r} (e.g. {shown}); the model sees "
            f"{vlm.tokenizer.unk_token!r} in their place. Check the wording and spelling.",
            UnknownTokenWarning,
            stacklevel=3,
        )


__all__ = [
    "Rendered",
    "Span",
    "check_row",
    "prompt_spans",
    "question_pieces",
    "render",
    "search_spans",
    "unknown_words",
    "warn_unknown_tokens",
]
