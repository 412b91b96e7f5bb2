"""Typed errors. Every message names the problem and what would fix it.

All errors derive from :class:`InterpError`, and each also derives from the built-in exception a
caller would naturally catch (``ValueError``, ``TypeError``, ``FileNotFoundError``), so both
``except InterpError`` and ``except ValueError`` work. The root and the statistics errors are
defined in :mod:`probes.errors` (the statistics package needs them and must not import ``interp``)
and are the same classes here.
"""

from __future__ import annotations

from probes.errors import (
    EmptyGroupError,
    EmptyInputError,
    InterpError,
    ProbeError,
    ProbeTypeError,
    TooFewSamplesError,
    UnknownVIPRuleError,
    VIPParameterError,
    VIPTypeError,
)


class UnsupportedArchitectureError(InterpError, TypeError):
    """The model's class has no adapter entry."""


class AdapterCheckError(UnsupportedArchitectureError):
    """An adapter's invariant fails on the loaded model (the layer path, the final norm, a
    feature site); the message names the field to set."""


class ModelNotFoundError(InterpError, FileNotFoundError):
    """The model folder does not exist (or a hub id cannot be reached offline)."""


class ModelConfigError(InterpError, ValueError):
    """The model folder exists, but its ``config.json`` cannot be read (not valid JSON)."""


class ProcessorMissingError(InterpError, ValueError):
    """A model loaded without a processor (its configuration alone) was asked to encode inputs."""


class ImageError(InterpError, ValueError):
    """An image is missing, unreadable or of an unusable type."""


class MissingImageError(ImageError, FileNotFoundError):
    """An image path does not exist."""


class ImageTokenMismatchError(InterpError, ValueError):
    """The number of image-token positions does not match the image features."""


class AudioError(InterpError, ValueError):
    """An audio input is unreadable or of an unusable type, shape, dtype or sampling rate."""


class MissingAudioError(AudioError, FileNotFoundError):
    """An audio file path does not exist."""


class VideoError(InterpError, ValueError):
    """A video input is unreadable or of an unusable type, shape or dtype (or needs a decoder that
    is not installed)."""


class MissingVideoError(VideoError, FileNotFoundError):
    """A video file path does not exist."""


class RemoteError(InterpError, NotImplementedError):
    """A step of a measurement cannot run where the model is remote (NDIF): raised before any
    request is sent, naming the step."""


class ModalityError(InterpError, ValueError):
    """Audio or video given where it cannot go: a family that does not take that modality, a
    ``{audio}`` / ``{video}`` slot count that does not match the sample's inputs, or placeholder
    tokens that do not match the inputs after encoding."""


class PromptError(InterpError, ValueError):
    """Rendered prompts that cannot be tokenized as Hugging Face would: e.g. some rows of a batch
    begin with the BOS token and others do not."""


class EmptyTargetError(EmptyInputError):
    """A teacher-forcing target tokenises to no tokens."""


class DuplicateSampleError(InterpError, ValueError):
    """Two samples share an id."""


class ConditionError(InterpError, ValueError):
    """An unknown or malformed condition string."""


class InterventionError(InterpError, ValueError):
    """An intervention cannot be applied as asked (bad layer, shape, position or model)."""


class PositionError(InterventionError):
    """A named position (the question, an image) cannot be located in a row's prompt."""


class DecodingError(InterpError, ValueError):
    """A decoding method cannot run as asked (unknown method, bad parameter, an amateur equal to
    the expert, or a model family that cannot batch the expert and amateur inputs)."""


class RecallError(InterpError, ValueError):
    """Visual-reference recall data or settings that the study cannot use (samples without the
    reference labels, a group without its visual-reference question, a trivial condition that
    shows the entity, fewer than two families for a transfer)."""


class UnknownFamilyError(RecallError):
    """A reference family that the data does not hold; the message lists the ones it does."""


class NoVIPError(InterpError, ValueError):
    """The automatic VIP rule found no layer; a manual VIP (or another rule) is needed.

    Attributes:
        cause: ``"eq9"`` (no layer meets Eq. 9), ``"alpha"`` (the layer the rule picks misses the
            significance floor), ``"effect"`` (layers meeting Eq. 9 and the floor miss the
            effect-size floor of rule ``effect``) or ``"rise"`` (the gap does not rise where rule
            ``jump`` / ``changepoint`` looks).
        rule: the rule that failed, a name of :data:`probes.vip.RULES`.
    """

    def __init__(self, message: str, cause: str = "eq9", rule: str = "changepoint") -> None:
        super().__init__(message)
        self.cause = cause
        self.rule = rule


class ContextError(InterpError, ValueError):
    """A multi-context measurement (:func:`interp.scoring.score_contexts`) got not one target per
    sample, or samples with different numbers of contexts."""


class DriveError(InterpError, ValueError):
    """A causal-drive measurement cannot run as asked (targets that do not match the samples, a
    result of other samples, a drive result without the terms a step needs)."""


class SupportError(DriveError):
    """The support of observed (image, question) contexts cannot be formed: K < 1, K (or M
    held-out contexts) larger than the pairs available, or a context without an image."""


class StoreError(InterpError, RuntimeError):
    """A result store is inconsistent with the run asked of it (other model, data or settings)."""


class StoreLockedError(StoreError):
    """Another process is writing the same store (or the same shard of it)."""


class DataFormatError(InterpError, ValueError):
    """A data file (e.g. JSONL) is malformed."""


class MissingColumnError(DataFormatError):
    """A table (parquet, Hugging Face dataset) lacks a column the sample fields need; the message
    lists the columns it has and the ``--columns`` mapping that would fix it."""


class DataSourceError(DataFormatError, FileNotFoundError):
    """``--data`` names nothing readable: no such file, a folder of no known layout, a split the
    data does not have, or a hub dataset that cannot be reached (no network)."""


class RegionError(InterpError, ValueError):
    """Token-to-region maps cannot be made as asked (see :func:`interp.token_regions`)."""


class NoSpatialLayoutError(RegionError, TypeError):
    """The family's image tokens have no place in the image (InstructBLIP's query tokens;
    Mllama's image reaches the text through cross-attention, with no image tokens in the
    sequence)."""


class LayoutNotMappedError(RegionError, NotImplementedError):
    """The family (or a processor setting of it) has image tokens with a spatial layout that the
    library does not map yet."""


class MissingExtraError(InterpError, ImportError):
    """An optional dependency is not installed; the message names the extra that provides it."""


class UnknownTokenWarning(UserWarning):
    """Prompt words that the model's tokenizer maps to its unknown token."""


class BatchDependentWarning(UserWarning):
    """The family's forward depends on the batch's other rows, so each row runs alone."""


class ConfigMisreadWarning(UserWarning):
    """transformers built a text decoder of another size than the folder's ``config.json``
    states (its configuration class does not read the file's layout)."""


__all__ = [
    "AdapterCheckError",
    "AudioError",
    "MissingAudioError",
    "MissingVideoError",
    "ModalityError",
    "PromptError",
    "VideoError",
    "ConditionError",
    "ContextError",
    "DataFormatError",
    "DataSourceError",
    "DecodingError",
    "DriveError",
    "DuplicateSampleError",
    "EmptyGroupError",
    "EmptyInputError",
    "EmptyTargetError",
    "ImageError",
    "ImageTokenMismatchError",
    "InterpError",
    "InterventionError",
    "MissingColumnError",
    "LayoutNotMappedError",
    "MissingExtraError",
    "MissingImageError",
    "ModelConfigError",
    "ModelNotFoundError",
    "NoSpatialLayoutError",
    "NoVIPError",
    "PositionError",
    "ProbeError",
    "ProbeTypeError",
    "ProcessorMissingError",
    "RecallError",
    "RegionError",
    "StoreError",
    "StoreLockedError",
    "SupportError",
    "TooFewSamplesError",
    "UnknownFamilyError",
    "UnknownTokenWarning",
    "BatchDependentWarning",
    "ConfigMisreadWarning",
    "UnknownVIPRuleError",
    "UnsupportedArchitectureError",
    "VIPParameterError",
    "VIPTypeError",
]
