"""Prompt building: a sample's question (with optional ``{image}`` / ``{audio}`` / ``{video}``
slots) as one user turn of the processor's chat template. :attr:`interp.Adapter.build_prompt`
defaults to :func:`chat_prompt`; a family whose processor has no template gives its own builder."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .media import AUDIO_SLOT, VIDEO_SLOT
from .samples import IMAGE_SLOT

# Build the text prompt of one sample: (processor, question, n_images) -> str. Builders of
# families that take audio or video also accept the keywords ``n_audio`` and ``n_video``; they are
# passed only when a row carries audio or video.
PromptBuilder = Callable[..., str]

_SLOTS = {IMAGE_SLOT: "image", AUDIO_SLOT: "audio", VIDEO_SLOT: "video"}
_SLOT_RE = re.compile("|".join(re.escape(slot) for slot in _SLOTS))


def chat_content(
    question: str, n_images: int, n_audio: int = 0, n_video: int = 0
) -> list[dict[str, str]]:
    """The user turn's content items for a question with ``n_images`` images (and ``n_audio``
    audio inputs, ``n_video`` videos).

    A question with one :data:`IMAGE_SLOT` (``"{image}"``) per image interleaves text and images
    in that order (each text piece stripped, empty pieces dropped); otherwise the images come
    first, then the question, as the model cards of the supported families do. An empty question
    beside images, audio or video adds no text item (the image-only conversation, as Hugging Face
    renders it); with nothing else it is one empty text item. Without images the
    text pieces are joined by one space into one text item — the blind prompt is the image prompt
    with its image items removed (Z_blind of Eq. 2 of the chain-of-embedding paper). Audio
    (``{"type": "audio"}``, ``"{audio}"`` slots) and video (``{"type": "video"}``, ``"{video}"``
    slots) follow the same rule, each kind on its own: a kind whose slots do not match its count
    comes first (images, then videos, then audio), its slots dropped.
    """
    counts = {"image": n_images, "audio": n_audio, "video": n_video}
    found = [_SLOTS[m.group()] for m in _SLOT_RE.finditer(question)]
    placed = {kind: n > 0 and found.count(kind) == n for kind, n in counts.items()}
    content: list[dict[str, str]] = [
        {"type": kind}
        for kind in ("image", "video", "audio")
        if not placed[kind]
        for _ in range(counts[kind])
    ]
    text: list[str] = []
    pieces = _SLOT_RE.split(question)
    for k, piece in enumerate(pieces):
        if piece.strip():
            text.append(piece.strip())
        kind = found[k] if k < len(found) else None
        if kind is not None and placed[kind]:
            if text:
                content.append({"type": "text", "text": " ".join(text)})
                text = []
            content.append({"type": kind})
    if text or not content:
        # no empty text item beside images, audio or video: templates write characters for it
        # (LLaVA's ``text + ' '``), which the image-only conversation does not have
        content.append({"type": "text", "text": " ".join(text)})
    return content


def _render(processor: Any, content: list[dict[str, str]]) -> str:
    return processor.apply_chat_template(
        [{"role": "user", "content": content}], add_generation_prompt=True, tokenize=False
    )


def _glues_text(processor: Any, content: list[dict[str, str]]) -> bool:
    """Whether the template writes two text items with nothing between them: one that renders
    all images first and then the text items back to back (LLaVA-NeXT-Mistral's) would turn
    ``"in {image} made"`` into ``"inmade"``."""
    if sum(item["type"] == "text" for item in content) < 2:
        return False
    marked = [
        {"type": "text", "text": f"\ue000{k}\ue001"} if item["type"] == "text" else item
        for k, item in enumerate(content)
    ]
    return "\ue001\ue000" in _render(processor, marked)


def chat_prompt(
    processor: Any, question: str, n_images: int | bool, n_audio: int = 0, n_video: int = 0
) -> str:
    """Default prompt: one user turn (see :func:`chat_content`) through the processor's chat
    template, with the generation prompt appended. Where the template cannot interleave (it
    would write the question's pieces back to back), the images come first and the pieces are
    joined by one space, as for a question without slots."""
    content = chat_content(question, int(n_images), n_audio, n_video)
    if _glues_text(processor, content):
        images = [item for item in content if item["type"] != "text"]
        text = " ".join(item["text"] for item in content if item["type"] == "text")
        content = [*images, {"type": "text", "text": text}]
    return _render(processor, content)


__all__ = ["PromptBuilder", "chat_content", "chat_prompt"]
