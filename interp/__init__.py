"""interp: mechanistic interpretability of vision-language models on nnsight."""

from .errors import *  # noqa: F403
from .samples import Sample, ensure_samples, read_jsonl, write_jsonl

__version__ = "0.1.0"
