"""Per-architecture facts: one small :class:`Adapter` entry per HF model family.

Everything the library needs to know about an architecture lives here, so measurement code never
branches on a model's name. An entry is resolved from the loaded model itself (its
``config.model_type``), never from a hub id: a registered entry (:mod:`~interp.adapters.families`, a user's
:func:`register_adapter`, a package's ``vlm_interp.adapters`` entry point), else one inferred from
the config and the module tree (:mod:`~interp.adapters.infer`). Module locations are resolved through
``get_decoder()`` / ``get_output_embeddings()`` where transformers offers them, and every entry's
invariants are checked when a model loads.

The package: :mod:`~interp.adapters.base` (the :class:`Adapter` and its parts: :class:`Prompt`,
:class:`Features`, :class:`Layout`, :class:`Modalities`, :class:`Modules`), :mod:`~interp.adapters.pixels` (where
each row's pixels lie, per layout), :mod:`~interp.adapters.registry` (the table; a leaf), :mod:`~interp.adapters.infer` (patterns
and load-time checks), :mod:`~interp.adapters.families` (the built-in entries).

Registering a new architecture is a few lines::

    from interp import Adapter, register_adapter

    register_adapter(Adapter(
        name="my_vlm",
        model_types=("my_vlm",),                 # config.model_type of the HF model
        image_features="model.multi_modal_projector",
    ))
"""

from __future__ import annotations

from ..prompts import chat_content, chat_prompt
from ..samples import IMAGE_SLOT
from . import families as _families  # noqa: F401  (registers the built-in entries)
from .base import (
    FLAT,
    MODALITIES,
    PARTS,
    Adapter,
    Features,
    Fusion,
    Layout,
    Modalities,
    Modality,
    Modules,
    PixelLayout,
    Prompt,
    get_path,
    module_path,
)
from .registry import (
    ADAPTERS,
    ENTRY_POINT_GROUP,
    adapter_for,
    load_plugins,
    register_adapter,
    supported_architectures,
)

__all__ = [
    "ADAPTERS",
    "ENTRY_POINT_GROUP",
    "FLAT",
    "IMAGE_SLOT",
    "MODALITIES",
    "PARTS",
    "Adapter",
    "Features",
    "Fusion",
    "Layout",
    "Modalities",
    "Modality",
    "Modules",
    "PixelLayout",
    "Prompt",
    "adapter_for",
    "chat_content",
    "chat_prompt",
    "get_path",
    "load_plugins",
    "module_path",
    "register_adapter",
    "supported_architectures",
]
