"""interp: mechanistic interpretability of vision-language models on nnsight.

Is the model looking at the image, or answering from its language prior? Load any supported Hugging
Face VLM with :func:`load`, describe items as :class:`Sample`, and measure inside the model under
conditions such as ``"full"``, ``"blind"`` or ``"null:black"``.
"""

from .adapters import ADAPTERS, Adapter, adapter_for, register_adapter, supported_architectures
from .conditions import Condition, null_image
from .encoding import Encoding, encode
from .errors import (
    ConditionError,
    DataFormatError,
    EmptyGroupError,
    EmptyInputError,
    EmptyTargetError,
    ImageError,
    ImageTokenMismatchError,
    InterpError,
    MissingImageError,
    NoVIPError,
    StoreError,
    TooFewSamplesError,
    UnsupportedArchitectureError,
)
from .generation import Generation, generate
from .model import VLM, load
from .residual import residual_stream
from .samples import Sample, ensure_samples, read_jsonl, write_jsonl
from .scoring import TokenScores, score

__version__ = "0.1.0"

__all__ = [
    "ADAPTERS",
    "VLM",
    "Adapter",
    "Condition",
    "ConditionError",
    "DataFormatError",
    "EmptyGroupError",
    "EmptyInputError",
    "EmptyTargetError",
    "Encoding",
    "Generation",
    "ImageError",
    "ImageTokenMismatchError",
    "InterpError",
    "MissingImageError",
    "NoVIPError",
    "Sample",
    "StoreError",
    "TokenScores",
    "TooFewSamplesError",
    "UnsupportedArchitectureError",
    "adapter_for",
    "encode",
    "ensure_samples",
    "generate",
    "load",
    "null_image",
    "read_jsonl",
    "register_adapter",
    "residual_stream",
    "score",
    "supported_architectures",
    "write_jsonl",
]
