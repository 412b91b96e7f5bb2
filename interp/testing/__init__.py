"""Tiny random VLMs with working offline processors, for tests, notebooks and users' own checks."""

from .tokenizer import chat_template, tiny_tokenizer

__all__ = ["chat_template", "tiny_tokenizer"]
