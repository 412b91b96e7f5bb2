"""Named prompt positions from character spans.

A named position (the question, each image) is found as a span of *characters* of the text the
tokenizer actually read, then mapped to the tokens whose character offsets overlap it. No substring
is ever tokenized on its own, so a word that the tokenizer splits differently inside the prompt
than alone (SentencePiece after ``<image>\\n``: ``"Which"`` → ``"Wh" "ich"``) is still found whole.

Three texts are involved for each row:

- the *question pieces*: the row's question text split at its ``{image}`` slots, each stripped;
- the *prompt* P: what the adapter's prompt builder renders (the chat template's output);
- the *tokenized text* S: what the processor hands its tokenizer — P with every image placeholder
  expanded (one token per image feature vector, tile markers, ...), and for some processors with
  text added around it (PaliGemma's BOS and newline).

The pieces are located in P by rendering the prompt once more with sentinels in place of the pieces
(exact for every template that inserts message text verbatim); P-spans move to S through the
processor's text-replacement offsets, or — where a processor changes the text in other ways — by
taking the same occurrence counted from the end of the text, ignoring occurrences inside special
tokens. A span whose characters are not all under the selected tokens is reported, never used (the
test-suite decodes the tokens back against each family's real tokenizer).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from jaxtyping import Bool, Int
from torch import Tensor

from .media import AUDIO_SLOT, VIDEO_SLOT
from .samples import IMAGE_SLOT

if TYPE_CHECKING:
    from .encoding import Encoding

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


def special_token_pattern(tokenizer: Any) -> re.Pattern[str] | None:
    """A regex matching the tokenizer's added special tokens in text (longest first)."""
    tokens = sorted(
        {str(t) for t in getattr(tokenizer, "all_special_tokens", []) if str(t)}
        | {
            str(t.content)
            for t in getattr(tokenizer, "added_tokens_decoder", {}).values()
            if getattr(t, "special", False) and str(t.content)
        },
        key=len,
        reverse=True,
    )
    if not tokens:
        return None
    return re.compile("|".join(re.escape(t) for t in tokens))


def _occurrences(text: str, piece: str, blocked: list[Span]) -> list[int]:
    """Start indices of ``piece`` in ``text`` (non-overlapping, left to right), skipping those
    that overlap a blocked span."""
    found, start = [], text.find(piece)
    while start >= 0:
        end = start + len(piece)
        if not any(a < end and b > start for a, b in blocked):
            found.append(start)
        start = text.find(piece, end)
    return found


def _blocked(text: str, pattern: re.Pattern[str] | None) -> list[Span]:
    return [] if pattern is None else [m.span() for m in pattern.finditer(text)]


def map_spans(
    spans: Sequence[Span],
    texts: Sequence[str],
    prompt: str,
    tokenized: str,
    replacements: Sequence[dict[str, Any]] | None,
    special: re.Pattern[str] | None,
) -> list[Span] | None:
    """Move character spans of ``prompt`` to the text the tokenizer read.

    First through the processor's replacement offsets (each expanded placeholder's old and new
    span); where that does not land on the same text, the occurrence of the text at the same
    rank counted from the end of each string, ignoring occurrences inside special tokens.
    """
    out: list[Span] = []
    for (a, b), text in zip(spans, texts):
        shift = 0
        for r in replacements or ():
            old, new = r["span"], r["new_span"]
            if old[1] <= a:
                shift += (new[1] - new[0]) - (old[1] - old[0])
        if tokenized[a + shift : b + shift] == text:
            out.append((a + shift, b + shift))
            continue
        in_prompt = _occurrences(prompt, text, _blocked(prompt, special))
        if a not in in_prompt:
            return None
        rank = len(in_prompt) - in_prompt.index(a)  # 1 = last occurrence
        in_text = _occurrences(tokenized, text, _blocked(tokenized, special))
        if len(in_text) < rank:
            return None
        start = in_text[-rank]
        out.append((start, start + len(text)))
    return out


def span_tokens(
    offsets: Int[Tensor, "seq 2"], spans: Sequence[Span], exclude: Bool[Tensor, " seq"]
) -> Bool[Tensor, " seq"]:
    """Positions whose character offsets overlap any of ``spans`` (tokens with an empty offset,
    such as padding and BOS, never do), less ``exclude``."""
    start, end = offsets[:, 0], offsets[:, 1]
    mask = torch.zeros(offsets.shape[0], dtype=torch.bool)
    for a, b in spans:
        mask |= (start < b) & (end > a) & (end > start)
    return mask & ~exclude


def uncovered(offsets: Int[Tensor, "n 2"], spans: Sequence[Span], text: str) -> str:
    """The non-space characters of ``spans`` (in ``text``) that no token's offsets cover."""
    covered = set()
    for a, b in offsets.tolist():
        covered.update(range(a, b))
    return "".join(
        text[i] for a, b in spans for i in range(a, b) if i not in covered and not text[i].isspace()
    )


def comparable(tokenizer: Any, text: str) -> str:
    """``text`` as the tokenizer's normaliser sees it (lower-casing, Unicode forms, SentencePiece's
    word marker) without whitespace: how decoded tokens are compared with their source text."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    normalizer = getattr(backend, "normalizer", None)
    if normalizer is not None:
        text = normalizer.normalize_str(text)
    return "".join(text.replace("\u2581", " ").split())


@dataclass
class RowSpans:
    """Where the named parts of one row's prompt are, as character spans of the tokenized text.

    Attributes:
        question: spans of the question text (one per run of text between images).
        question_text: the text of each question span.
        images: per image of the row, the span its placeholder expanded to (empty when the
            processor reports no replacement offsets).
        problem: why the question could not be located, or None.
        audio / video: per audio input / video, the span its placeholder expanded to.
    """

    question: list[Span] = field(default_factory=list)
    question_text: list[str] = field(default_factory=list)
    images: list[Span] = field(default_factory=list)
    problem: str | None = None
    audio: list[Span] = field(default_factory=list)
    video: list[Span] = field(default_factory=list)

    def of(self, kind: str) -> list[Span]:
        """The spans of ``kind``: ``"image"``, ``"audio"`` or ``"video"``."""
        return {"image": self.images, "audio": self.audio, "video": self.video}[kind]


def locate_row(
    build: Callable[[str], str],
    question: str,
    prompt: str,
    tokenized: str | None,
    replacements: Sequence[dict[str, Any]] | None,
    special: re.Pattern[str] | None,
) -> RowSpans:
    """The :class:`RowSpans` of one row (see the module docstring for the steps)."""
    found_media = {
        kind: [tuple(r["new_span"]) for r in replacements or () if r.get("type") == kind]
        for kind in ("image", "audio", "video")
    }
    rows = _locate_question(build, question, prompt, tokenized, replacements, special)
    rows.images = found_media["image"]  # type: ignore[assignment]
    rows.audio = found_media["audio"]  # type: ignore[assignment]
    rows.video = found_media["video"]  # type: ignore[assignment]
    return rows


def _locate_question(
    build: Callable[[str], str],
    question: str,
    prompt: str,
    tokenized: str | None,
    replacements: Sequence[dict[str, Any]] | None,
    special: re.Pattern[str] | None,
) -> RowSpans:
    images: list[Span] = []
    if not question_pieces(question):
        return RowSpans(images=images)
    if tokenized is None:
        return RowSpans(
            images=images,  # type: ignore[arg-type]
            problem="the processor did not expose the text it tokenized",
        )
    found = prompt_spans(build, question, prompt) or search_spans(question, prompt)
    if found is None:
        return RowSpans(
            images=images,  # type: ignore[arg-type]
            problem="the prompt builder did not place the question text in the prompt verbatim",
        )
    spans, texts = found
    moved = map_spans(spans, texts, prompt, tokenized, replacements, special)
    if moved is None:
        return RowSpans(
            images=images,  # type: ignore[arg-type]
            problem="the question text is not in the text the processor tokenized",
        )
    return RowSpans(question=moved, question_text=list(texts), images=images)  # type: ignore[arg-type]


def slot_mask(enc: Encoding, kind: str, k: int) -> Bool[Tensor, "batch seq"]:
    """True at the placeholder positions of each row's ``k``-th ``kind`` input (``"image"``,
    ``"audio"``, ``"video"``; 0-based, in prompt order).

    The input's tokens are those inside the character span its placeholder expanded to (the
    processor's replacement offsets); for processors that report none (one image token per image,
    or image tokens prepended outside the text), the ``k``-th run of consecutive placeholder
    tokens. A row with fewer than ``k + 1`` such inputs has no such positions.
    """
    tokens = enc.mask(kind).cpu()
    mask = torch.zeros_like(tokens)
    counts = {"image": enc.n_images, "audio": enc.n_audio, "video": enc.n_video}[kind]
    for row in range(len(enc)):
        spans = enc.spans[row].of(kind) if row < len(enc.spans) else []
        if spans and enc.offsets is not None:
            if k < len(spans):
                mask[row] = span_tokens(enc.offsets[row], [spans[k]], ~tokens[row])
            continue
        runs = _runs(tokens[row])
        n = counts[row] if row < len(counts) else len(runs)
        if len(runs) < n == int(tokens[row].sum()):
            # one token per input (Mllama's <|image|>) with inputs side by side: one run, n inputs
            runs = [(i, i + 1) for i in tokens[row].nonzero().flatten().tolist()]
        if k < len(runs):
            mask[row, runs[k][0] : runs[k][1]] = True
    return mask.to(enc.image_mask.device)


def expansion_mask(
    offsets: Int[Tensor, "batch seq 2"],
    spans: Sequence[RowSpans],
    tokens: Bool[Tensor, "batch seq"],
    kind: str,
) -> Bool[Tensor, "batch seq"]:
    """The ``tokens`` positions inside the text each ``kind`` placeholder expanded to (the
    processor's replacement offsets, read against the tokenizer's character offsets): how a
    family whose videos expand into image tokens (``Adapter.video_in_image_tokens``) tells a
    video's positions from an image's."""
    mask = torch.zeros_like(tokens)
    for row, found in enumerate(spans):
        if found.of(kind):
            mask[row] = span_tokens(offsets[row], found.of(kind), ~tokens[row].cpu())
    return mask


def _runs(flags: Tensor) -> list[tuple[int, int]]:
    """``[start, end)`` of each run of True in a 1-D bool tensor."""
    padded = torch.cat(
        [torch.zeros(1, dtype=torch.int8), flags.to(torch.int8), torch.zeros(1, dtype=torch.int8)]
    )
    edges = padded.diff().nonzero().flatten().tolist()
    return list(zip(edges[::2], edges[1::2]))


__all__ = [
    "RowSpans",
    "Span",
    "comparable",
    "expansion_mask",
    "locate_row",
    "map_spans",
    "prompt_spans",
    "question_pieces",
    "search_spans",
    "slot_mask",
    "span_tokens",
    "special_token_pattern",
    "uncovered",
]
