"""Adapters inferred from the config and the module tree, and the checks every adapter passes at load.

Only types of transformers' ``MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES`` are inferred (a type outside
it, such as a renamed or remote-code model, needs an entry). Three patterns cover most decoder-only multimodal models transformers ships:

- ``llava-like``: an image-token id in the config, a ``vision_config``, and a projector module
  (the first of :data:`PROJECTORS` the model has) whose output is placed at the image tokens;
- ``qwen-vl-like``: a vision config with ``spatial_merge_size`` and ``temporal_patch_size``
  (M-RoPE, patches flattened over the batch): the features come from ``model.visual``;
- ``audio-lm``: an audio-token id and no image-token id: the projector (else the audio tower).

The rules, in order (:func:`infer_adapter` reads the config, :func:`complete` the module tree):

1. token ids: ``image_token_id`` / ``image_token_index`` (``audio_…``, ``video_…``) on the config
   or its text config; a modality is taken when its id is set (not None) and the config does not
   leave its tower out (``vision_config`` / ``audio_config`` declared but None: Gemma 4 Unified
   without audio; :meth:`~interp.adapters.Adapter.narrowed`); a config that declares
   the fields but leaves them all None (transformers' default for Voxtral and MiniCPM-V, which
   their checkpoints set) is refused with the fields to set (:func:`unset_ids`);
2. refused up front: encoder–decoder configs, Q-Former configs (``qformer_config``), decoders
   with hyper-connections (``hc_mult`` or ``hc_count`` > 1: several residual streams per position,
   GLM-5 Next, HY-V4, Qwen4-Exp), configs with no placeholder-token id;
3. the decoder is ``model.get_decoder()`` and must hold ``.layers``;
4. the final norm is the decoder's first attribute among :data:`NORMS`;
5. the head is ``model.get_output_embeddings()`` (an entry's ``head_path`` where that gives
   none);
6. the feature site: ``model.visual`` (qwen-vl-like), else the first of :data:`PROJECTORS`, else
   the first of :data:`TOWERS` that holds its own projection — its last linear (or
   convolution) layer outputs the decoder's width (a tower whose merger is its projector:
   LLaVA-OneVision-1.5, dots3, Inkling 2, Granite Docling); a tower whose last such layer
   outputs another width (Ovis2's visual-vocabulary head, whose features a table lookup outside
   the tower makes) is not taken.

An inferred adapter's pixel and token layouts are not verified against the processor, so every
layout-dependent feature (pixel-space conditions such as ``distort``, token regions, attribution
maps, region edits) raises :class:`~interp.errors.LayoutNotMappedError` on it before compute.

:func:`verify` runs on every adapter when a model loads (meta shapes suffice): the layer path holds
the text config's number of decoder layers, the final norm's width equals the head's input width,
each feature site resolves. A failure raises :class:`~interp.errors.AdapterCheckError` naming the
field to set.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from ..errors import AdapterCheckError
from .base import NORMS, Adapter, get_path

PROJECTORS = (
    "model.multi_modal_projector",
    "model.connector",
    "model.mm_projector",
    "model.multimodal_projector",
    "model.vision_projection",
    "model.projector",
    "model.embed_vision",
    "model.audio_projector",
    "model.aligner",
    "model.resampler_model",
    "model.merger",
)
TOWERS = ("model.visual", "model.vision_tower", "model.vision_model")
AUDIO_SITES = (
    "model.multi_modal_projector",
    "model.audio_projector",
    "model.projector",
    "model.embed_audio",
    "model.audio_tower",
)
PATTERNS = ("llava-like", "qwen-vl-like", "audio-lm")
TOWER_CONFIGS = ("vision_config", "audio_config")


def _token(config: Any, kind: str) -> int | None:
    for cfg in (config, _text(config)):
        for attr in (f"{kind}_token_id", f"{kind}_token_index"):
            value = getattr(cfg, attr, None)
            if value is not None:
                return int(value)
    return None


def unset_ids(config: Any) -> list[str]:
    """The placeholder-token id fields ``config`` (or its text config) declares but leaves None,
    for a modality whose tower config it has (``vision_config`` for images and video,
    ``audio_config`` for audio): transformers' default for some types (Voxtral's
    ``audio_token_id``, MiniCPM-V's ``image_token_id``), which their checkpoints set."""
    towers = {"image": "vision_config", "video": "vision_config", "audio": "audio_config"}
    kinds = [k for k, t in towers.items() if getattr(config, t, None) is not None]
    names: list[str] = []
    for cfg in (config, _text(config)):
        for kind in kinds:
            for attr in (f"{kind}_token_id", f"{kind}_token_index"):
                if attr in vars(cfg) and getattr(cfg, attr) is None and attr not in names:
                    names.append(attr)
    return names


def _text(config: Any) -> Any:
    try:
        return config.get_text_config()
    except Exception:  # noqa: BLE001 - configs without a text config
        return config


def pattern_of(config: Any) -> tuple[str | None, str]:
    """The pattern ``config`` follows (one of :data:`PATTERNS`), or None and why not."""
    if config is None:
        return None, "no config"
    if getattr(config, "is_encoder_decoder", False) or getattr(
        _text(config), "is_encoder_decoder", False
    ):
        return None, "an encoder-decoder model (the library reads decoder-only models)"
    if getattr(config, "qformer_config", None) is not None:
        return None, (
            "Q-Former fusion (the image tokens are learned queries): register an entry like "
            "the instructblip one"
        )
    for field in ("hc_mult", "hc_count"):
        streams = getattr(_text(config), field, None)
        if isinstance(streams, int) and streams > 1:
            return None, (
                f"hyper-connections ({streams} residual streams per position, {field}): the "
                "library reads, edits and scores one residual vector per position"
            )
    image, audio = _token(config, "image"), _token(config, "audio")
    vision = getattr(config, "vision_config", None)
    absent = _absent_towers(config)
    if image is not None and "vision_config" in absent:  # an id, but no tower to fill it
        image = None
    if audio is not None and "audio_config" in absent:
        audio = None
    if absent and not any(getattr(config, t, None) is not None for t in TOWER_CONFIGS):
        return None, (
            f"its config has no tower ({' / '.join(absent)} None): a text-only checkpoint; "
            "load its language model alone"
        )
    if image is not None and vision is not None:
        if getattr(vision, "spatial_merge_size", None) and getattr(
            vision, "temporal_patch_size", None
        ):
            return "qwen-vl-like", ""
        return "llava-like", ""
    if audio is not None and image is None:
        return "audio-lm", ""
    if image is not None:
        return None, "an image-token id but no vision_config"
    unset = unset_ids(config)
    if unset:
        return None, (
            f"its config leaves {' / '.join(unset)} unset (None), as transformers' default "
            "does; a checkpoint sets it: set it to the placeholder token's id"
        )
    return None, _no_placeholder(config)


def _absent_towers(config: Any) -> list[str]:
    """The tower sub-configs ``config`` declares but leaves None (no such tower is built)."""
    return [t for t in TOWER_CONFIGS if hasattr(config, t) and getattr(config, t) is None]


def _no_placeholder(config: Any) -> str:
    """Why a config with no placeholder-token id is outside the patterns, from its sub-configs."""
    towers = [t for t in ("vision_config", "audio_config") if getattr(config, t, None) is not None]
    nested = [
        f"{t}.{kind}_token_id"
        for t, kind in (("vision_config", "image"), ("audio_config", "audio"))
        if getattr(getattr(config, t, None), f"{kind}_token_id", None) is not None
    ]
    if nested:
        return (
            f"its placeholder ids sit in its tower configs ({' / '.join(nested)}) and the "
            "features are merged inside its embedding module: register an entry"
        )
    for key, why in _FUSED_OTHERWISE:
        if getattr(config, key, None) is not None:
            return why
    if towers:
        return (
            f"a tower ({' / '.join(towers)}) but no placeholder-token id: its inputs reach the "
            "text another way (cross-attention, prepended embeddings, a position mask or a "
            "stream), not at placeholder tokens"
        )
    return "no image or audio tower and no placeholder-token id in its config"


# sub-configs of models whose non-text inputs are not placed at placeholder tokens
_FUSED_OTHERWISE = (
    (
        "vq_config",
        "images enter as VQ codes of the text vocabulary (vq_config): there are no image "
        "feature vectors to place",
    ),
    (
        "codec_config",
        "audio enters as codec frames added to the text embeddings (codec_config), not at "
        "placeholder tokens",
    ),
    (
        "vlm_config",
        "a vision-language-action model (a VLM in vlm_config beside an action expert): load "
        "its VLM on its own",
    ),
    ("protein_encoder_config", "its inputs are protein sequences, not images or audio"),
)


def nearest_pattern(config: Any) -> str:
    """For a refusal message: the supported pattern closest to ``config``."""
    if config is None:
        return "llava-like"
    if getattr(config, "audio_config", None) is not None and _token(config, "image") is None:
        return "audio-lm (an audio_token_id and a projector)"
    vision = getattr(config, "vision_config", None)
    if vision is not None and getattr(vision, "spatial_merge_size", None):
        return "qwen-vl-like (image_token_id, model.visual)"
    return "llava-like (image_token_id, vision_config, model.multi_modal_projector)"


def infer_adapter(config: Any) -> tuple[Adapter | None, str]:
    """An adapter for ``config`` by its pattern (module paths are resolved on the module tree by
    :func:`complete`), or None and why not."""
    from transformers.models.auto import modeling_auto

    if (
        getattr(config, "model_type", None)
        not in modeling_auto.MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES
    ):
        return None, "not a type of transformers' multimodal mapping, so no pattern is assumed"
    pattern, why = pattern_of(config)
    if pattern is None:
        return None, why
    kinds = tuple(k for k in ("image", "audio", "video") if _token(config, k) is not None)
    if pattern == "audio-lm":  # an id whose tower is left out stays, for narrowed() to name
        absent = _absent_towers(config)
        kinds = tuple(k for k in kinds if k == "audio" or "vision_config" in absent)
    model_type = str(config.model_type)
    return (
        Adapter(
            name=f"{model_type} (inferred: {pattern})",
            model_types=(model_type,),
            inferred=pattern,
            modalities=kinds,  # type: ignore[arg-type]
            pixel_layout="patches" if pattern == "qwen-vl-like" else "images",
            notes=f"inferred from the config and the module tree ({pattern}); layout-dependent "
            "features are refused (the pixel and token layouts are not verified)",
        ),
        "",
    )


def _exists(model: torch.nn.Module, path: str) -> bool:
    """Whether ``path`` names a submodule of ``model`` (a None attribute does not count)."""
    obj: Any = model
    for part in path.split("."):
        try:
            obj = obj[int(part)] if part.isdigit() else getattr(obj, part)
        except (AttributeError, IndexError, KeyError, TypeError):
            return False
    return isinstance(obj, torch.nn.Module)


def _projects_to(model: torch.nn.Module, path: str, width: int) -> bool:
    """Whether the module at ``path`` exists and its last linear or convolution layer (in
    registration order) outputs ``width`` features: a tower that holds its own projection into
    the decoder."""
    if not _exists(model, path):
        return False
    kinds = (torch.nn.Linear, torch.nn.Conv1d, torch.nn.Conv2d)
    last = [m for m in get_path(model, path).modules() if isinstance(m, kinds)][-1:]
    if not last:
        return False
    out = last[0].out_features if isinstance(last[0], torch.nn.Linear) else last[0].out_channels
    return out == width


def complete(adapter: Adapter, model: torch.nn.Module) -> Adapter:
    """Narrow ``adapter`` to the towers ``model``'s config has (:meth:`Adapter.narrowed`; an
    entry given to :func:`interp.load` too), then resolve an inferred adapter's module paths on
    ``model``'s module tree (rules 3-6); other adapters are returned as they are.

    Raises:
        AdapterCheckError: a rule finds nothing; the message names the field to set.
        UnsupportedArchitectureError: the config has none of the entry's towers.
    """
    adapter = adapter.narrowed(getattr(model, "config", None))
    if not adapter.inferred:
        return adapter
    changes: dict[str, Any] = {}
    decoder = model.get_decoder()  # type: ignore[operator]
    if decoder is None or not isinstance(getattr(decoder, "layers", None), torch.nn.ModuleList):
        raise AdapterCheckError(
            f"{adapter.name} — get_decoder() gives no module holding .layers; set decoder_path"
        )
    try:
        adapter.final_norm(model)  # type: ignore[arg-type]
    except AttributeError as err:
        raise AdapterCheckError(str(err)) from None
    visual = "model.visual" if _exists(model, "model.visual") else None
    projector = next((p for p in PROJECTORS if _exists(model, p)), None)
    if "image" in adapter.modalities:
        site = visual if adapter.inferred == "qwen-vl-like" and visual else projector
        if site is None:
            width = adapter.final_norm(model).weight.shape[-1]  # type: ignore[arg-type]
            site = next((t for t in TOWERS if _projects_to(model, t, int(width))), None)
        if site is None:
            raise AdapterCheckError(
                f"{adapter.name} — no image-feature module found (looked for "
                f"{', '.join(PROJECTORS)}, and {', '.join(TOWERS)} with a last linear layer "
                "giving the decoder's width); set image_features"
            )
        changes["image_features"] = site
        if "video" in adapter.modalities:
            changes["video_features"] = site
    if "audio" in adapter.modalities:
        site = next((p for p in AUDIO_SITES if _exists(model, p)), None)
        if site is None:
            raise AdapterCheckError(
                f"{adapter.name} — no audio-feature module found (looked for "
                f"{', '.join(AUDIO_SITES)}); set audio_features"
            )
        changes["audio_features"] = site
    return adapter.replace(**changes)


@dataclass(frozen=True)
class Invariant:
    """One load-time check: its name, whether it holds, what was seen, the field to set."""

    name: str
    ok: bool
    detail: str
    field: str = ""


def invariants(adapter: Adapter, model: torch.nn.Module) -> list[Invariant]:
    """The structural invariants of ``adapter`` on ``model`` (meta shapes suffice)."""
    out: list[Invariant] = []
    config = getattr(model, "config", None)
    text = _text(config)
    expected = getattr(text, "num_hidden_layers", None)
    try:
        layers = adapter.layers(model)  # type: ignore[arg-type]
        n = len(layers)
        path_ok = isinstance(layers, torch.nn.ModuleList) and (expected is None or n == expected)
        out.append(
            Invariant(
                "layers",
                path_ok,
                f"{n} decoder layers at the layer path (text config: {expected})",
                "decoder_path",
            )
        )
    except (AttributeError, TypeError) as err:
        out.append(Invariant("layers", False, f"no layer list: {err}", "decoder_path"))
    try:
        norm = adapter.final_norm(model)  # type: ignore[arg-type]
        head = adapter.lm_head(model)  # type: ignore[arg-type]
        width = getattr(norm, "weight", None)
        d = int(width.shape[-1]) if width is not None else None
        d_head = int(head.weight.shape[-1])
        out.append(
            Invariant(
                "final norm feeds the head",
                d == d_head,
                f"final norm width {d}, head input width {d_head}",
                "norm_attr",
            )
        )
    except (AttributeError, TypeError) as err:
        field = "head_path" if "head_path" in str(err) else "norm_attr"
        out.append(Invariant("final norm feeds the head", False, str(err), field))
    for kind in adapter.modalities:
        path = adapter.features_path(kind)  # type: ignore[arg-type]
        out.append(
            Invariant(
                f"{kind} feature site",
                _exists(model, path),
                f"{path!r} {'resolves' if _exists(model, path) else 'is not a module'}",
                f"{kind}_features",
            )
        )
    return out


def verify(adapter: Adapter, model: torch.nn.Module) -> None:
    """Raise :class:`~interp.errors.AdapterCheckError` naming the field to set if an invariant
    of :func:`invariants` fails."""
    for check in invariants(adapter, model):
        if not check.ok:
            raise AdapterCheckError(
                f"adapter {adapter.name!r}: {check.name} fails ({check.detail}); set "
                f"{check.field} (interp.Adapter(..., {check.field}=...))"
            )


__all__ = [
    "AUDIO_SITES",
    "NORMS",
    "PATTERNS",
    "PROJECTORS",
    "TOWERS",
    "Invariant",
    "complete",
    "infer_adapter",
    "invariants",
    "nearest_pattern",
    "pattern_of",
    "verify",
]
