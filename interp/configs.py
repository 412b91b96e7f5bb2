"""A model's configuration without its weights: :func:`model_config` (with a clear error where
it cannot be found, a full omni checkpoint's thinker), :func:`config_only` (a folder holding a
published ``config.json`` alone) and the auto class and pipeline task that build it
(:func:`auto_class`, :func:`task`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from transformers import AutoConfig, AutoModelForImageTextToText, PretrainedConfig

from .errors import ModelConfigError, ModelNotFoundError
from .hub import looks_like_path, offline_kwargs
from .sources import locate
from .thinker import inner_config, warn_misread

# Files any processor or tokenizer of a saved checkpoint is read from; a folder with none of them
# holds a configuration only.
_PREPROCESSOR_FILES = (
    "processor_config.json",
    "preprocessor_config.json",
    "tokenizer_config.json",
    "tokenizer.json",
    "tokenizer.model",
)


def config_only(source: str | Path) -> bool:
    """Whether ``source`` is a local folder with ``config.json`` and no processor or tokenizer
    file: a published configuration without the checkpoint's other files."""
    path = Path(source).expanduser()
    return (
        path.is_dir()
        and (path / "config.json").is_file()
        and not any((path / name).is_file() for name in _PREPROCESSOR_FILES)
    )


def _check_config_json(path: Path, source: str) -> dict[str, Any]:
    """A local folder's ``config.json`` must be a JSON object (transformers would report a broken
    file as a hub failure); returns it.

    Raises:
        ModelConfigError: it is not valid JSON, or not an object.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ModelConfigError(
            f"{source!r}: its config.json is not valid JSON ({err}); repair or replace the file "
            f"{str(path)!r}"
        ) from None
    if not isinstance(data, dict):
        raise ModelConfigError(
            f"{source!r}: its config.json holds a {type(data).__name__}, not a JSON object; "
            f"repair or replace the file {str(path)!r}"
        )
    return data


def model_config(model: str | Path, *, whole: bool = False, **kwargs: Any) -> PretrainedConfig:
    """The model's configuration (no weights are read), with a clear error when it cannot be
    found. For a full omni checkpoint this is its thinker's configuration, the model the library
    runs (``whole=True``: the checkpoint's own).

    Raises:
        ModelNotFoundError: no such local folder, or a hub id that cannot be fetched (offline).
    """
    source = locate(model)
    if not source.strip():
        raise ModelNotFoundError("the model name is empty; give 'demo', a local folder or a hub id")
    try:
        path = Path(source).expanduser()
    except RuntimeError as err:  # '~user' with no such user
        raise ModelNotFoundError(f"model folder not found: {source!r} ({err})") from None
    if not path.is_dir() and looks_like_path(source):
        raise ModelNotFoundError(
            f"model folder not found: {source!r}. Give an existing folder holding config.json "
            "(and the weights), a hub id such as 'llava-hf/llava-1.5-7b-hf', or 'demo'."
        )
    if path.is_dir() and not (path / "config.json").is_file():
        raise ModelNotFoundError(
            f"{source!r} is a folder without config.json: not a saved Hugging Face model"
        )
    data = _check_config_json(path / "config.json", source) if path.is_dir() else None
    if not path.is_dir():
        kwargs = {**offline_kwargs(source), **kwargs}
    try:
        config = AutoConfig.from_pretrained(str(path) if path.is_dir() else source, **kwargs)
    except OSError as err:
        raise ModelNotFoundError(
            f"cannot load {source!r}: it is not a local folder, and the Hugging Face hub did not "
            f"provide it ({str(err).splitlines()[0]}). Without network access, give a local "
            "model folder or 'demo'."
        ) from None
    if data is not None:
        warn_misread(data, config, source)
    return config if whole else inner_config(config)


def auto_class(config: Any) -> Any:
    """The auto class that builds ``config``'s model: image-text-to-text for the vision families,
    multimodal-LM for those outside it (the audio-language Qwen2-Audio)."""
    from transformers import AutoModelForMultimodalLM
    from transformers.models.auto import modeling_auto

    if config.model_type in modeling_auto.MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES:
        return AutoModelForImageTextToText
    if config.model_type in modeling_auto.MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES:
        return AutoModelForMultimodalLM
    return AutoModelForImageTextToText  # its own error names the supported types


def task(config: Any) -> str:
    """The pipeline task whose model class is :func:`auto_class`'s (nnsight's lazy and remote
    loads build the model through the task)."""
    return (
        "any-to-any"
        if auto_class(config).__name__ == "AutoModelForMultimodalLM"
        else ("image-text-to-text")
    )


__all__ = ["auto_class", "config_only", "model_config", "task"]
