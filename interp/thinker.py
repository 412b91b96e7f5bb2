"""Checkpoints whose model wraps the part the library runs: the omni checkpoints' thinker.

A full Qwen2.5-Omni or Qwen3-Omni checkpoint (``config.model_type`` ``qwen2_5_omni`` /
``qwen3_omni_moe``, as every ``Qwen/Qwen2.5-Omni-*`` and ``Qwen/Qwen3-Omni-*`` folder is saved)
holds three models: the *thinker* (vision and audio encoders and the text decoder: everything that
reads the inputs and writes the text), the *talker* (text → speech codes) and the speech decoder
(``token2wav`` / ``code2wav``). Every measurement of this library reads the thinker, so
:func:`interp.load` builds the thinker alone from the checkpoint's ``thinker_config`` and reads only
its weights (the checkpoint stores them under ``thinker.``; transformers maps them onto the thinker
class): the talker and the speech decoder are never built, on any device.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import torch
from transformers import PretrainedConfig

from .errors import ConfigMisreadWarning


@dataclass(frozen=True)
class Wrapper:
    """A checkpoint type whose model wraps a supported one.

    Attributes:
        model_type: the checkpoint's ``config.model_type``.
        part: the config attribute holding the wrapped model's config (its ``model_type`` is the
            supported one).
        skipped: the wrapper's other sub-configs, whose models are not built.
    """

    model_type: str
    part: str
    skipped: tuple[str, ...]


WRAPPERS: dict[str, Wrapper] = {
    w.model_type: w
    for w in (
        Wrapper("qwen2_5_omni", "thinker_config", ("talker_config", "token2wav_config")),
        Wrapper("qwen3_omni_moe", "thinker_config", ("talker_config", "code2wav_config")),
    )
}


def wrapper_of(config: Any) -> Wrapper | None:
    """The :class:`Wrapper` of ``config``'s model type, or None."""
    return WRAPPERS.get(getattr(config, "model_type", None) or "")


def inner_config(config: PretrainedConfig) -> PretrainedConfig:
    """The config of the model the library runs: the thinker's for an omni checkpoint, else
    ``config`` itself."""
    wrapper = wrapper_of(config)
    if wrapper is None:
        return config
    inner = getattr(config, wrapper.part)
    if not inner.architectures:
        from transformers.models.auto import modeling_auto

        name = modeling_auto.MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES.get(inner.model_type)
        inner.architectures = [name] if name else None
    return inner


def skipped_parameters(config: PretrainedConfig) -> dict[str, int | None]:
    """Parameters of each part of an omni checkpoint that :func:`interp.load` does not build,
    counted on the meta device (no memory is allocated): ``{"talker": n, "token2wav": m}``. A part
    whose default config transformers cannot build reports None."""
    wrapper = wrapper_of(config)
    if wrapper is None:
        return {}
    out: dict[str, int | None] = {}
    for attr in wrapper.skipped:
        name = attr.removesuffix("_config")
        sub = getattr(config, attr, None)
        try:
            with torch.device("meta"):
                model = _part_model(config, name, sub) if sub is not None else None
        except Exception:  # noqa: BLE001 - a default sub-config transformers cannot build
            model = None
        if model is None:
            out[name] = None
            continue
        out[name] = sum(p.numel() for p in model.parameters())
        del model
    return out


def _part_model(config: PretrainedConfig, name: str, sub: PretrainedConfig) -> torch.nn.Module:
    """The wrapper model's own class for one part (what ``enable_talker`` builds)."""
    import transformers

    prefix = {"qwen2_5_omni": "Qwen2_5Omni", "qwen3_omni_moe": "Qwen3OmniMoe"}[config.model_type]
    cls = {
        "talker": f"{prefix}TalkerForConditionalGeneration",
        "token2wav": f"{prefix}Token2WavModel",
        "code2wav": f"{prefix}Code2Wav",
    }[name]
    return getattr(transformers, cls)._from_config(sub)


def warn_misread(data: dict[str, Any], config: PretrainedConfig, source: str) -> None:
    """Warn where the decoder transformers built has another width or depth than the file's
    ``text_config`` (or its thinker's) states: a configuration class that does not read the
    file's layout silently keeps its defaults (Qwen3-ASR's ``thinker_config``)."""
    stated = (data.get("thinker_config") or data).get("text_config")
    built = inner_config(config).get_text_config()
    for key in ("hidden_size", "num_hidden_layers") if isinstance(stated, dict) else ():
        want, got = stated.get(key), getattr(built, key, None)
        if isinstance(want, int) and isinstance(got, int) and want != got:
            warnings.warn(
                ConfigMisreadWarning(
                    f"{source!r}: its config.json states a text decoder with {key}={want}, but "
                    f"transformers built {key}={got} (its {type(config).__name__} does not read "
                    "the file's layout); the model will not be the checkpoint's"
                ),
                stacklevel=3,
            )


__all__ = [
    "WRAPPERS",
    "Wrapper",
    "inner_config",
    "skipped_parameters",
    "warn_misread",
    "wrapper_of",
]
