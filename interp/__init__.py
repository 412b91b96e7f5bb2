"""interp: mechanistic interpretability of vision-language models on nnsight.

Is the model looking at the image, or answering from its language prior? Load any supported Hugging
Face VLM with :func:`load`, describe items as :class:`Sample`, and measure inside the model under
conditions such as ``"full"``, ``"blind"``, ``"null:black"`` or ``"blind+no_question"`` — with any
:class:`Intervention` applied (``edits=[...]``). The studies of the five papers live in
:mod:`interp.studies`; statistics in the separate :mod:`probes` package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_exports

__version__ = "0.2.0"

# The public names, imported on first use (PEP 562): `import interp` stays cheap — the command
# line answers --version, --help and argument errors without loading torch and transformers.
_LAZY: dict[str, str] = {
    "ADAPTERS": "adapters",
    "AUDIO_SLOT": "media",
    "Adapter": "adapters",
    "Audio": "media",
    "AudioError": "errors",
    "Batch": "edits",
    "Condition": "conditions",
    "ConditionError": "errors",
    "ContextError": "errors",
    "DataFormatError": "errors",
    "DataSourceError": "errors",
    "Decoding": "edits",
    "DecodingError": "errors",
    "DriveError": "errors",
    "DuplicateSampleError": "errors",
    "EditContext": "edits",
    "EmptyGroupError": "errors",
    "EmptyInputError": "errors",
    "EmptyTargetError": "errors",
    "Encoding": "encoding",
    "GeneratedStates": "residual",
    "Generation": "generation",
    "IMAGE_SLOT": "samples",
    "ImageError": "errors",
    "ImageTokenMismatchError": "errors",
    "InterpError": "errors",
    "Intervention": "edits",
    "InterventionError": "errors",
    "PositionError": "errors",
    "MissingColumnError": "errors",
    "MissingExtraError": "errors",
    "MissingAudioError": "errors",
    "MissingImageError": "errors",
    "MissingVideoError": "errors",
    "ModalityError": "errors",
    "ModelNotFoundError": "errors",
    "NoVIPError": "errors",
    "ProcessorMissingError": "errors",
    "RecallError": "errors",
    "Sample": "samples",
    "Sampling": "generation",
    "StoreError": "errors",
    "StoreLockedError": "errors",
    "SupportError": "errors",
    "TokenScores": "scoring",
    "TooFewSamplesError": "errors",
    "UnknownFamilyError": "errors",
    "UnknownTokenWarning": "errors",
    "UnsupportedArchitectureError": "errors",
    "VIDEO_SLOT": "media",
    "VLM": "model",
    "VideoError": "errors",
    "adapter_for": "adapters",
    "encode": "encoding",
    "ensure_samples": "samples",
    "generate": "generation",
    "generate_states": "residual",
    "load": "model",
    "null_image": "conditions",
    "read_dataset": "datasets.tabular",
    "read_jsonl": "samples",
    "register_adapter": "adapters",
    "register_audio_condition": "media_conditions",
    "register_image_condition": "conditions",
    "register_question_condition": "conditions",
    "register_video_condition": "media_conditions",
    "residual_stream": "residual",
    "score": "scoring",
    "score_contexts": "scoring",
    "supported_architectures": "adapters",
    "write_jsonl": "samples",
}

if TYPE_CHECKING:  # for type checkers and IDEs: the same names, eagerly
    from .adapters import ADAPTERS, Adapter, adapter_for, register_adapter, supported_architectures
    from .conditions import (
        Condition,
        null_image,
        register_image_condition,
        register_question_condition,
    )
    from .datasets.tabular import read_dataset
    from .edits import Batch, Decoding, EditContext, Intervention
    from .encoding import Encoding, encode
    from .errors import (
        AudioError,
        ConditionError,
        ContextError,
        DataFormatError,
        DataSourceError,
        DecodingError,
        DriveError,
        DuplicateSampleError,
        EmptyGroupError,
        EmptyInputError,
        EmptyTargetError,
        ImageError,
        ImageTokenMismatchError,
        InterpError,
        InterventionError,
        MissingAudioError,
        MissingColumnError,
        MissingExtraError,
        MissingImageError,
        MissingVideoError,
        ModalityError,
        ModelNotFoundError,
        NoVIPError,
        PositionError,
        ProcessorMissingError,
        RecallError,
        StoreError,
        StoreLockedError,
        SupportError,
        TooFewSamplesError,
        UnknownFamilyError,
        UnknownTokenWarning,
        UnsupportedArchitectureError,
        VideoError,
    )
    from .generation import Generation, Sampling, generate
    from .media import AUDIO_SLOT, VIDEO_SLOT, Audio
    from .media_conditions import register_audio_condition, register_video_condition
    from .model import VLM, load
    from .residual import GeneratedStates, generate_states, residual_stream
    from .samples import IMAGE_SLOT, Sample, ensure_samples, read_jsonl, write_jsonl
    from .scoring import TokenScores, score, score_contexts


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

__all__ = [
    "ADAPTERS",
    "AUDIO_SLOT",
    "IMAGE_SLOT",
    "VIDEO_SLOT",
    "VLM",
    "Adapter",
    "Audio",
    "AudioError",
    "Batch",
    "Condition",
    "ConditionError",
    "ContextError",
    "DataFormatError",
    "DataSourceError",
    "Decoding",
    "DecodingError",
    "DriveError",
    "DuplicateSampleError",
    "EditContext",
    "EmptyGroupError",
    "EmptyInputError",
    "EmptyTargetError",
    "Encoding",
    "GeneratedStates",
    "Generation",
    "ImageError",
    "ImageTokenMismatchError",
    "InterpError",
    "Intervention",
    "InterventionError",
    "MissingColumnError",
    "MissingExtraError",
    "MissingAudioError",
    "MissingImageError",
    "MissingVideoError",
    "ModalityError",
    "ModelNotFoundError",
    "NoVIPError",
    "PositionError",
    "ProcessorMissingError",
    "RecallError",
    "Sample",
    "Sampling",
    "StoreError",
    "StoreLockedError",
    "SupportError",
    "TokenScores",
    "TooFewSamplesError",
    "UnknownFamilyError",
    "UnknownTokenWarning",
    "UnsupportedArchitectureError",
    "VideoError",
    "adapter_for",
    "encode",
    "ensure_samples",
    "generate",
    "generate_states",
    "load",
    "null_image",
    "read_dataset",
    "read_jsonl",
    "register_adapter",
    "register_audio_condition",
    "register_image_condition",
    "register_question_condition",
    "register_video_condition",
    "residual_stream",
    "score",
    "score_contexts",
    "supported_architectures",
    "write_jsonl",
]
