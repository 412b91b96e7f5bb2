"""Tiny random VLMs with working offline processors, for tests, notebooks and users' own checks."""

from .tiny import ARCHITECTURES, MEDIA_ARCHITECTURES, build_tiny, tiny_vlm
from .tokenizer import chat_template, tiny_tokenizer

__all__ = [
    "ARCHITECTURES",
    "MEDIA_ARCHITECTURES",
    "build_tiny",
    "chat_template",
    "tiny_tokenizer",
    "tiny_vlm",
]
