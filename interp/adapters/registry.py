"""The registry of adapter entries: ``config.model_type`` → :class:`~interp.adapters.Adapter`.

A leaf: it holds the table and the look-up; the built-in entries
(:mod:`interp.adapters.families`) and the inferred ones (:mod:`interp.adapters.infer`) register
into it from the package's ``__init__``, and packages may add theirs through the
``vlm_interp.adapters`` entry-point group (each entry point names an :class:`Adapter`, or a
callable registering entries).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from transformers import PretrainedConfig, PreTrainedModel

from ..errors import UnsupportedArchitectureError
from .base import Adapter

ADAPTERS: dict[str, Adapter] = {}
# model_type -> hook refining the registered entry from the config (a variant the entry's facts do
# not hold for, e.g. a llava config with a Pixtral vision tower)
VARIANTS: dict[str, Callable[[Any, Adapter], Adapter]] = {}
ENTRY_POINT_GROUP = "vlm_interp.adapters"
_PLUGINS: list[bool] = []


def register_adapter(adapter: Adapter, *, overwrite: bool = False) -> Adapter:
    """Make an architecture loadable by :func:`interp.load`.

    Each of ``adapter.model_types`` is mapped to the entry. Pass ``overwrite=True`` to replace an
    existing entry (e.g. to correct a module path for another transformers version).
    """
    for model_type in adapter.model_types:
        if model_type in ADAPTERS and not overwrite and ADAPTERS[model_type] != adapter:
            raise ValueError(
                f"an adapter for model_type {model_type!r} is already registered "
                f"({ADAPTERS[model_type].name!r}); pass overwrite=True to replace it"
            )
        ADAPTERS[model_type] = adapter
    return adapter


def register_variant(model_type: str, refine: Callable[[Any, Adapter], Adapter]) -> None:
    """``refine(config, entry)`` gives the entry for ``config`` when its model type's registered
    entry does not hold as it is (:func:`adapter_for` applies it)."""
    VARIANTS[model_type] = refine


def load_plugins() -> None:
    """Register the adapters of installed packages (the ``vlm_interp.adapters`` entry points),
    once per process."""
    if _PLUGINS:
        return
    _PLUGINS.append(True)
    from importlib.metadata import entry_points

    for point in entry_points(group=ENTRY_POINT_GROUP):
        value = point.load()
        if isinstance(value, Adapter):
            register_adapter(value, overwrite=True)
        elif callable(value):
            value()


def adapter_from_spec(spec: str, option: str = "adapter") -> Adapter:
    """Import the :class:`Adapter` named ``module:name`` and register it (replacing any entry of
    its model types); the command line's ``--adapter``.

    Raises:
        UnsupportedArchitectureError: not ``module:name``, the module does not import, or the
            name is not an ``Adapter``.
    """
    import importlib

    module, _, name = spec.partition(":")
    if not module or not name:
        raise UnsupportedArchitectureError(
            f"{option} {spec!r}: give module:name, e.g. my_pkg.adapters:MY_VLM"
        )
    try:
        value = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as err:
        raise UnsupportedArchitectureError(f"{option} {spec!r}: {err}") from None
    if not isinstance(value, Adapter):
        raise UnsupportedArchitectureError(
            f"{option} {spec!r} is a {type(value).__name__}, not an interp.Adapter"
        )
    return register_adapter(value, overwrite=True)


def supported_architectures() -> list[str]:
    """Registered ``config.model_type`` values."""
    load_plugins()
    return sorted(ADAPTERS)


def _class_name(model: Any, config: Any) -> str:
    if not isinstance(model, PretrainedConfig):
        return type(model).__name__
    names = getattr(config, "architectures", None) or []
    return names[0] if names else type(config).__name__.removesuffix("Config")


def adapter_for(model: PreTrainedModel | PretrainedConfig) -> Adapter:
    """The adapter for a loaded HF model (or its config), resolved from ``config.model_type``:
    a registered entry, else one inferred from the config's pattern
    (:func:`interp.adapters.infer.infer_adapter`); either narrowed to the towers the config has
    (:meth:`Adapter.narrowed`: Gemma 4 31B, whose ``audio_config`` is None, takes image and
    video, not audio).

    Raises:
        UnsupportedArchitectureError: no entry serves this model type and none can be inferred
            (the message names the nearest supported pattern and how to register an entry), or
            the config has none of the entry's towers.
    """
    from ..thinker import inner_config
    from .infer import infer_adapter, nearest_pattern

    load_plugins()
    config = model if isinstance(model, PretrainedConfig) else getattr(model, "config", None)
    if isinstance(config, PretrainedConfig):
        config = inner_config(config)  # a full omni checkpoint: its thinker's entry
    model_type = getattr(config, "model_type", None)
    if model_type in ADAPTERS:
        entry = ADAPTERS[model_type]
        refine = VARIANTS.get(model_type)
        if refine is not None and config is not None:
            entry = refine(config, entry)
        return entry.narrowed(config)  # the towers this checkpoint has
    inferred, why = infer_adapter(config) if config is not None else (None, "no config")
    if inferred is not None:
        return inferred.narrowed(config)
    raise UnsupportedArchitectureError(
        f"{_class_name(model, config)} (config.model_type={model_type!r}) has no adapter: {why}. "
        f"Nearest supported pattern: {nearest_pattern(config)}. Registered model types: "
        f"{', '.join(supported_architectures())}. To run it anyway, pass your own entry: "
        "interp.load(..., adapter=interp.Adapter(name=..., model_types=(model_type,), "
        "image_features='<path of the module producing image features>')), "
        "`--adapter module:name` on the command line, or register one with "
        "interp.register_adapter (see interp/adapters/)."
    )


__all__ = [
    "ADAPTERS",
    "ENTRY_POINT_GROUP",
    "VARIANTS",
    "adapter_for",
    "adapter_from_spec",
    "load_plugins",
    "register_adapter",
    "register_variant",
    "supported_architectures",
]
