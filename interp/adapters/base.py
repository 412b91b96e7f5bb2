"""Per-architecture facts, one small :class:`Adapter` entry per HF model family.

Everything the library needs to know about an architecture lives here, so measurement code never
branches on a model's name. An entry is resolved from the loaded model itself (its
``config.model_type``), never from a hub id. Module locations are resolved from the model through
``get_decoder()`` / ``get_output_embeddings()`` where transformers offers them, so they follow
transformers' own layout across versions; the test-suite checks every entry against the installed
transformers.

Registering a new architecture is a few lines::

    from interp import Adapter, register_adapter

    register_adapter(Adapter(
        name="my_vlm",
        model_types=("my_vlm",),                 # config.model_type of the HF model
        image_features="model.multi_modal_projector",
    ))
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

import torch
from transformers import PreTrainedModel

from .. import region_layouts as rl
from ..errors import ModalityError, UnsupportedArchitectureError
from ..prompts import PromptBuilder, chat_prompt
from .pixels import PIXEL_ROWS, PixelLayout, image_pixels_key

Fusion = Literal["tokens", "cross_attention"]

Modality = Literal["image", "audio", "video"]
MODALITIES: tuple[Modality, ...] = ("image", "audio", "video")


def get_path(root: torch.nn.Module, path: str) -> torch.nn.Module:
    obj: Any = root
    for part in path.split("."):
        obj = obj[int(part)] if part.isdigit() else getattr(obj, part)
    return obj


def module_path(root: torch.nn.Module, module: torch.nn.Module) -> str:
    """The dotted name of ``module`` inside ``root`` (``""`` for the root itself)."""
    for name, mod in root.named_modules():
        if mod is module:
            return name
    raise ValueError(f"{type(module).__name__} is not a submodule of {type(root).__name__}")


@dataclass(frozen=True)
class Prompt:
    """How a family's prompts and encodings are written (see :class:`Adapter` for each field)."""

    build_prompt: PromptBuilder = chat_prompt
    target_fields: dict[str, int] = field(default_factory=dict)
    blind_by_stripping: bool = False
    images_per_row: bool = False


@dataclass(frozen=True)
class Features:
    """Where each modality's features come from and which tokens hold them."""

    image_features: str = ""
    audio_features: str | None = None
    video_features: str | None = None
    fusion: Fusion = "tokens"
    image_token_attrs: tuple[str, ...] = ("image_token_id", "image_token_index")
    audio_token_attrs: tuple[str, ...] = ("audio_token_id", "audio_token_index")
    video_token_attrs: tuple[str, ...] = ("video_token_id", "video_token_index")
    audio_kwarg: str = "audio"
    video_kwarg: str = "videos"


@dataclass(frozen=True)
class Layout:
    """How pixels and image tokens are laid out. ``layout_verified``: a test checks the layout
    against the stock processor, or the loaded model passed the generic check
    (:mod:`interp.layout_check`; its verdict in ``layout_checked``); only then do
    layout-dependent features (pixel-space conditions such as ``distort``, token regions,
    attribution maps, region edits) run (they raise :class:`~interp.errors.LayoutNotMappedError`
    before any compute otherwise, with the check's ``layout_refusal``)."""

    pixel_layout: PixelLayout = "images"
    pixel_input: str = ""
    token_layout: rl.LayoutFn | None = None
    no_layout: str = ""
    layout_verified: bool = False
    layout_checked: str = ""
    layout_refusal: str = ""


@dataclass(frozen=True)
class Modalities:
    """The input kinds a family takes and how rows carrying them may be batched."""

    modalities: tuple[Modality, ...] = ("image",)
    mixed_batches: bool = True
    mixed_audio: bool = True
    mixed_video: bool = True
    video_in_image_tokens: bool = False
    stacked_videos: bool = False
    batch_dependent: str = ""
    tower_configs: tuple[tuple[Modality, str], ...] = (
        ("image", "vision_config"),
        ("audio", "audio_config"),
        ("video", "vision_config"),
    )
    dropped: tuple[tuple[Modality, str], ...] = ()


@dataclass(frozen=True)
class Modules:
    """Where the decoder's parts are, and the forward's quirks."""

    decoder_path: str | None = None
    norm_attr: str | None = None
    head_path: str | None = None
    attention_module: str = "self_attn"
    attention_scores_site: tuple[str, ...] = ("attention_interface_1", "nn_functional_softmax_0")
    embeddings_kwarg: str | None = None
    cross_attention_layers_attr: str | None = None
    text_only_module: str | None = None
    forward_inputs: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    prefix_sharing: bool = False
    layer_resume: bool = False


# the decoder attributes tried, in order, for the final norm when an entry names none
NORMS = ("norm", "final_layer_norm", "final_layernorm", "ln_f", "norm_f", "final_norm")

# part attribute -> its class; every part field is also readable (and settable in the
# constructor) by its own name on the Adapter: ``adapter.pixel_layout is adapter.layout.pixel_layout``
PARTS: dict[str, type] = {
    "prompt": Prompt,
    "features": Features,
    "layout": Layout,
    "media": Modalities,
    "modules": Modules,
}
FLAT: dict[str, str] = {f.name: part for part, cls in PARTS.items() for f in fields(cls)}


@dataclass(frozen=True, init=False)
class Adapter:
    """What the library needs to know about one architecture family.

    The facts live in five typed parts — ``prompt`` (:class:`Prompt`), ``features``
    (:class:`Features`), ``layout`` (:class:`Layout`), ``media`` (:class:`Modalities`) and
    ``modules`` (:class:`Modules`) — and each part's field is also read, and given to the
    constructor or ``dataclasses.replace``, by its own name (``adapter.pixel_layout`` is
    ``adapter.layout.pixel_layout``), so ``Adapter(name=..., model_types=..., image_features=...)``
    reads as before. ``inferred`` names the pattern of an entry inferred from the config
    (:mod:`interp.adapters.infer`); "" for a written entry. ``layout_verified`` (in ``layout``):
    a test checks the entry's pixel and token layouts against the stock processor; without it
    layout-dependent features raise :class:`~interp.errors.LayoutNotMappedError`.

    Attributes:
        name: short name shown in errors and reprs.
        model_types: ``config.model_type`` values this entry serves.
        image_features: dotted path, from the HF model root, of the module whose output holds the image
            features the language model consumes (placed at image-token positions for ``"tokens"``
            fusion; the cross-attention states for ``"cross_attention"``).
        fusion: ``"tokens"`` (image features replace image-token embeddings) or ``"cross_attention"``
            (Mllama: the text attends to the image in dedicated layers).
        image_token_attrs: config attributes tried, in order, for the image-token id.
        images_per_row: the processor takes images nested per row (``[[img], [], ...]``) rather than a
            flat list over the image-bearing rows.
        mixed_batches: rows with and without an image may share one forward and give the results
            they give alone. When False, the library runs such rows in separate forwards.
        batch_dependent: why the family's forward gives a row other results beside other rows
            (HunYuan-VL's rotary image index counts the batch's images); where set, every row
            runs alone (batch size 1, with a :class:`~interp.errors.BatchDependentWarning`).
        decoder_path: override for the decoder (the module holding ``.layers``); default
            ``model.get_decoder()``.
        norm_attr: the decoder's final-norm attribute; None: the first of :data:`NORMS` the
            decoder has (``norm``, OPT's ``final_layer_norm``, Persimmon's ``final_layernorm`` ...).
        head_path: the output head's module path; default ``model.get_output_embeddings()``
            (a model whose causal LM sits inside it may not offer one: Nemotron-H Omni).
        build_prompt: prompt builder; default :func:`chat_prompt`.
        target_fields: for teacher forcing, per-token encoding fields whose appended-target positions
            take a fixed value instead of copying the last prompt position (PaliGemma marks the answer
            as suffix with ``token_type_ids = 1``).
        cross_attention_layers_attr: text-config attribute listing decoder layers that only run when
            the batch has an image (Mllama's cross-attention layers); a text-only batch skips them, so
            their output is their input.
        text_only_module: dotted path of the causal LM to run for a batch without images, for
            families whose full forward requires an image (InstructBLIP's ``language_model``).
        forward_inputs: a fix-up applied to the model inputs of a single forward (not of
            ``generate``, which derives what it needs itself), e.g. mask-derived ``position_ids``.
        prefix_sharing: the family continues a prompt from its cached prefix exactly (a test runs
            every verified family's shared prefix once and its suffixes from the cache against
            the full forwards: :mod:`interp.prefix`); off where the prompt attends both ways
            (PaliGemma's prefix-LM) or the forward keeps no cache (InstructBLIP), and on no
            inferred entry until checked.
        layer_resume: the decoder's forward does nothing between its layer modules but pass each
            layer's output to the next, so a forward may skip layers ``0..a-1`` and give layer
            ``a-1``'s skip the clean forward's output there (:mod:`interp.resume`; a test checks
            the flow study's values against the full forwards). Off where the forward adds to the
            residual stream between layers (Qwen3-VL's and Qwen3-Omni's DeepStack), feeds layers
            from outside the stream or shares keys and values across layers (Gemma 4's per-layer
            inputs and shared KV), or skips layers by batch (Mllama's cross-attention layers), and
            on every inferred entry.
        blind_by_stripping: the stock processor refuses a batch without images (PaliGemma):
            a text-only batch is encoded as the image prompt of a placeholder image with the image
            tokens and pixels then removed, so the blind prompt is the stock layout minus the image.
            Implies that image and text-only rows are batched apart (``mixed_batches=False``).
        pixel_layout: how the processor lays out ``pixel_values``, to find each row's pixels (for
            pixel-stage conditions such as ``distort``): ``"images"`` — dim 0 enumerates images in
            row order; ``"patches"`` — dim 0 enumerates patches, ``image_grid_thw`` gives each
            image's count (Qwen-VL); ``"rows"`` — dim 0 is the batch row, dim 1 its images, padding
            images all zero (Idefics3/SmolVLM); ``"tiles"`` — dim 0 enumerates tiles, a row has
            ``image tokens / processor.image_seq_length`` of them (InternVL); ``"cross_tiles"`` —
            ``[batch, images, tiles, ...]`` with ``aspect_ratio_mask`` marking real tiles (Mllama);
            ``"side_by_side"`` — ``[1, 3, p, patches · p]``, every view's patches side by side,
            ``target_sizes`` giving each view's (MiniCPM-V 4.6); ``"token_patches"`` — dim 0
            enumerates flattened patches, one per image token of each row (Fuyu).
        pixel_input: the processor output holding the image pixels those conditions edit; ""
            (the default) finds it: the one floating tensor named ``*pixel_values*`` that is not
            a video's (``pixel_values``; Video-LLaVA's ``pixel_values_images``), see
            :func:`~interp.adapters.pixels.image_pixels_key`.
        attention_module: attribute of a decoder layer holding its self-attention.
        attention_scores_site: the path, through nnsight's ``.source``, from the attention module
            to the call whose input is the pre-softmax attention scores ``[batch, heads, query,
            key]`` (mask already added): the site of attention knockout and PAI's boost.
        embeddings_kwarg: the decoder's keyword input holding its input embeddings, read and
            written as residual index 0 instead of ``layers[0].input``, for families whose decoder
            derives more than the first layer's input from them (Gemma 4 projects its per-layer
            inputs from ``inputs_embeds`` before layer 0, so an edit at ``layers[0].input`` would
            miss them); None: ``layers[0].input``.
        token_layout: ``(processor, config, (width, height)) -> ImageLayout``: where each image
            token comes from in the original image (:mod:`interp.region_layouts`); None: not mapped.
        no_layout: why the family's image tokens have no place in the image (then
            :func:`interp.token_regions` raises :class:`~interp.errors.NoSpatialLayoutError`).
        notes: caveats users should know (shown by ``VLM.__repr__``).

    Audio and video (families that take them; image-only entries keep the defaults):

    Attributes:
        modalities: the input kinds the family takes, among ``"image"``, ``"audio"``,
            ``"video"``. A sample with audio or video for a family without that kind is refused
            before compute. An entry without ``"image"`` (Qwen2-Audio) sets ``image_features=""``
            and has no image-token id.
        audio_features: dotted path of the module whose output are the audio features the
            decoder consumes at audio-token positions (Qwen2-Audio: ``model.multi_modal_projector``,
            output ``[audios, max_audio_tokens, d]``, padded past each audio's token count).
        video_features: the same for videos (Qwen2-VL: ``model.visual``, which encodes images and
            videos alike; its ``pooler_output`` holds the merged features in placement order).
        audio_token_attrs / video_token_attrs: config attributes tried, in order, for the id of
            the placeholder token the processor expands once per audio / video feature vector.
        audio_kwarg / video_kwarg: the processor call's keyword for the audio waveforms
            (``audio``) and the videos (``videos``).
        mixed_audio / mixed_video: rows with and without audio (video) may share one forward and
            give the results they give alone; when False, batches group rows by whether they
            carry it.
        video_in_image_tokens: the processor expands a video into runs of the *image*
            placeholder token (InternVL: ``Frame<i>: <img>…</img>`` per frame, the frames then
            encoded as image tiles), so the token id alone cannot tell a video from an image: a
            video's positions are the image-token positions inside the text its placeholder
            expanded to (the processor's replacement offsets), an image's the rest.
        stacked_videos: the processor stacks a forward's videos into one tensor (LLaVA-NeXT-Video,
            LLaVA-OneVision, InternVL), so videos of different frame counts cannot share a
            forward: batches group rows by their videos' frame counts under the condition.
        tower_configs: per modality, the config attribute holding its tower's sub-config. A
            checkpoint whose config declares that attribute but leaves it None has no such
            tower (Gemma 4 31B: ``audio_config: null``): :meth:`narrowed` drops the modality.
        dropped: the modalities :meth:`narrowed` dropped, each with the attribute left None
            (named by :class:`~interp.errors.ModalityError`).
    """

    name: str
    model_types: tuple[str, ...]
    notes: str = ""
    prompt: Prompt = field(default_factory=Prompt)
    features: Features = field(default_factory=Features)
    layout: Layout = field(default_factory=Layout)
    media: Modalities = field(default_factory=Modalities)
    modules: Modules = field(default_factory=Modules)
    inferred: str = ""

    def __init__(
        self,
        name: str,
        model_types: tuple[str, ...],
        *,
        notes: str = "",
        prompt: Prompt | None = None,
        features: Features | None = None,
        layout: Layout | None = None,
        media: Modalities | None = None,
        modules: Modules | None = None,
        inferred: str = "",
        **flat: Any,
    ) -> None:
        unknown = sorted(set(flat) - set(FLAT))
        if unknown:
            raise TypeError(f"Adapter got unknown fields {unknown}; known: {sorted(FLAT)}")
        given = {
            "prompt": prompt,
            "features": features,
            "layout": layout,
            "media": media,
            "modules": modules,
        }
        set_ = object.__setattr__
        set_(self, "name", name)
        set_(self, "model_types", tuple(model_types))
        set_(self, "notes", notes)
        set_(self, "inferred", inferred)
        for part, cls in PARTS.items():
            mine = {k: v for k, v in flat.items() if FLAT[k] == part}
            base = given[part]
            value = cls(**mine) if base is None else replace(base, **mine)
            set_(self, part, value)
        if self.prompt.blind_by_stripping and self.media.mixed_batches:
            set_(self, "media", replace(self.media, mixed_batches=False))

    def __getattr__(self, name: str) -> Any:
        part = FLAT.get(name)
        if part is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(object.__getattribute__(self, part), name)

    def replace(self, **changes: Any) -> Adapter:
        """A copy with ``changes`` (part fields by their own names, or whole parts)."""
        return replace(self, **changes)

    # -- module resolution ------------------------------------------------------------------------

    def decoder(self, model: PreTrainedModel) -> torch.nn.Module:
        """The language decoder: the module holding ``.layers`` and the final norm."""
        if self.decoder_path is not None:
            return get_path(model, self.decoder_path)
        return model.get_decoder()

    def layers(self, model: PreTrainedModel) -> torch.nn.ModuleList:
        """The L decoder layers, in execution order."""
        return self.decoder(model).layers

    def final_norm(self, model: PreTrainedModel) -> torch.nn.Module:
        """The decoder's final norm (``norm_attr``, else the first of the usual names)."""
        decoder = self.decoder(model)
        if self.norm_attr is not None:
            return getattr(decoder, self.norm_attr)
        for name in NORMS:
            norm = getattr(decoder, name, None)
            if isinstance(norm, torch.nn.Module):
                return norm
        raise AttributeError(
            f"{self.name} — the decoder {type(decoder).__name__} has none of the final "
            f"norms {NORMS}; set norm_attr"
        )

    def lm_head(self, model: PreTrainedModel) -> torch.nn.Module:
        """The LM head (``head_path``, else ``get_output_embeddings()``)."""
        if self.head_path is not None:
            return get_path(model, self.head_path)
        head = model.get_output_embeddings()
        if head is None:
            raise AttributeError(
                f"{self.name} — {type(model).__name__}.get_output_embeddings() gives no head; "
                "set head_path"
            )
        return head

    def image_features_module(self, model: PreTrainedModel) -> torch.nn.Module:
        """The module whose output is the image features placed in the sequence (``image_features``)."""
        return get_path(model, self.image_features)

    def image_token_id(self, model: PreTrainedModel) -> int:
        """The image placeholder-token id from the config (-1 for a family without images)."""
        if "image" not in self.modalities:
            return -1  # no token id is -1: the image mask of such a family is all False
        for attr in self.image_token_attrs:
            value = getattr(model.config, attr, None)
            if value is not None:
                return int(value)
        raise UnsupportedArchitectureError(
            f"adapter {self.name!r}: none of the config attributes {self.image_token_attrs} is set"
        )

    def token_id(self, model: PreTrainedModel, modality: Modality) -> int:
        """The placeholder-token id of ``modality`` (``"image"``, ``"audio"``, ``"video"``).

        Raises:
            ModalityError: the family does not take that modality.
            UnsupportedArchitectureError: none of the entry's config attributes is set.
        """
        self.require(modality)
        if modality == "image":
            return self.image_token_id(model)
        attrs = self.audio_token_attrs if modality == "audio" else self.video_token_attrs
        for config in (model.config, model.config.get_text_config()):
            for attr in attrs:
                value = getattr(config, attr, None)
                if value is not None:
                    return int(value)
        raise UnsupportedArchitectureError(
            f"adapter {self.name!r}: none of the config attributes {attrs} is set"
        )

    def features_path(self, modality: Modality) -> str:
        """The dotted path of the module producing ``modality``'s features (see the fields)."""
        self.require(modality)
        path = {
            "image": self.image_features,
            "audio": self.audio_features,
            "video": self.video_features,
        }[modality]
        if not path:
            raise UnsupportedArchitectureError(
                f"adapter {self.name!r} names no {modality} feature module; set {modality}_features"
            )
        return path

    def require(self, modality: str) -> None:
        """Raise :class:`~interp.errors.ModalityError` unless the family takes ``modality``."""
        if modality not in self.modalities:
            why = next((attr for kind, attr in self.dropped if kind == modality), None)
            tower = f" (this checkpoint has no {modality} tower: {why} is None)" if why else ""
            drop = "blind" if modality == "image" else f"no_{modality}"
            raise ModalityError(
                f"{self.name} takes {', '.join(self.modalities)} inputs, not {modality}{tower}; "
                f"remove the {modality} from the samples or drop it with a condition ({drop}), "
                "or load a checkpoint that takes it"
            )

    def narrowed(self, config: Any) -> Adapter:
        """This entry for ``config``: the modalities whose tower the config leaves out (its
        :attr:`tower_configs` attribute declared but None) dropped, with their feature sites.
        Returns the entry itself when nothing is dropped.

        Raises:
            UnsupportedArchitectureError: no modality of the entry keeps its tower.
        """
        absent = {
            kind: attr
            for kind, attr in self.tower_configs
            if kind in self.modalities and hasattr(config, attr) and getattr(config, attr) is None
        }
        if not absent:
            return self
        kept = tuple(k for k in self.modalities if k not in absent)
        if not kept:
            attrs = " / ".join(dict.fromkeys(absent.values()))
            raise UnsupportedArchitectureError(
                f"adapter {self.name!r}: its config has no tower for any input the family takes "
                f"({attrs} None): a text-only checkpoint; load its language model alone"
            )
        sites: dict[str, Any] = {
            "image_features": "" if "image" in absent else self.image_features,
            "audio_features": None if "audio" in absent else self.audio_features,
            "video_features": None if "video" in absent else self.video_features,
        }
        gone = ", ".join(f"{k} ({a} is None)" for k, a in absent.items())
        notes = f"{self.notes}; " if self.notes else ""
        return self.replace(
            modalities=kept,
            dropped=self.dropped + tuple(absent.items()),
            notes=f"{notes}this checkpoint's config has no tower for {gone}: those inputs are "
            "refused",
            **sites,
        )

    def mixed(self, modality: str) -> bool:
        """Whether rows with and without ``modality`` may share one forward."""
        return {
            "image": self.mixed_batches,
            "audio": self.mixed_audio,
            "video": self.mixed_video,
        }[modality]

    def skipped_layers(self, model: PreTrainedModel, has_image: Sequence[bool]) -> frozenset[int]:
        """0-based decoder layers that do not run for a batch whose rows carry ``has_image``."""
        if self.cross_attention_layers_attr is None or any(has_image):
            return frozenset()
        config = model.config.get_text_config()
        return frozenset(int(i) for i in getattr(config, self.cross_attention_layers_attr))

    def processor_images(self, images: Sequence[Sequence[Any]]) -> list[Any] | None:
        """Images in the form the processor takes, from each row's list of images."""
        if not any(images):
            return None
        if self.images_per_row:
            return [list(row) for row in images]
        return [im for row in images for im in row]

    def pixel_rows(
        self,
        inputs: dict[str, Any],
        images_per_row: Sequence[int],
        image_mask: torch.Tensor,
        processor: Any,
        video_mask: torch.Tensor | None = None,
    ) -> list[Any]:
        """Per row, an index into the image pixel tensor (``inputs[self.pixel_key(inputs)]``,
        which the layout function reads as ``pixel_values``) selecting that row's real image
        pixels (``None`` for a row without images); see ``pixel_layout`` and
        :data:`~interp.adapters.pixels.PIXEL_ROWS`. ``video_mask`` marks video positions of a
        family whose video frames share ``pixel_values`` with the images
        (``video_in_image_tokens``): their frames are left out."""
        self.require_layout("pixel-space conditions")
        rows = PIXEL_ROWS[self.pixel_layout]
        pixels = {**inputs, "pixel_values": inputs[self.pixel_key(inputs)]}
        return rows(pixels, images_per_row, image_mask, processor, video_mask)

    def pixel_key(self, inputs: Mapping[str, Any]) -> str:
        """The key of ``inputs`` (the processor's outputs) holding the image pixels that
        pixel-space conditions edit (see ``pixel_input``); the layout is required first.

        Raises:
            LayoutNotMappedError: the layout is not verified, or the tensor is not found (no
                such tensor, or several).
        """
        self.require_layout("pixel-space conditions")
        return image_pixels_key(inputs, self.name, self.pixel_input)

    def require_layout(self, feature: str) -> None:
        """Raise :class:`~interp.errors.LayoutNotMappedError` (before any compute) unless this
        family's pixel and token layouts were verified against its processor."""
        if not self.layout_verified:
            from ..errors import LayoutNotMappedError

            raise LayoutNotMappedError(
                f"{self.name} (model types {', '.join(self.model_types)}): {feature} need the "
                "family's pixel/token layout, which is not verified against its processor for "
                "this type; reads, scores, generation and token-level edits work. To enable it, "
                "register an entry whose layout a test checks (Adapter.pixel_layout, "
                "token_layout, layout_verified=True)"
                + (
                    f". The loaded model's layout: {self.layout_refusal}"
                    if self.layout_refusal
                    else ""
                )
            )

    def deepstack_layers(self, model: PreTrainedModel) -> int:
        """How many DeepStack feature sets the vision model adds after early decoder layers (Qwen3-VL's
        ``vision_config.deepstack_visual_indexes``); 0 for families without DeepStack."""
        vision = getattr(model.config, "vision_config", None)
        return len(getattr(vision, "deepstack_visual_indexes", None) or ())

    def vectors_per_tile(self, model: PreTrainedModel) -> int:
        """Cross-attention fusion: the vision model's vectors per tile (patches + class embedding),
        what HF's forward reshapes the projector output with."""
        vision = getattr(getattr(model, "model", model), "vision_model", None)
        per_tile = getattr(vision, "num_patches", None)
        if per_tile is None:
            raise UnsupportedArchitectureError(
                f"adapter {self.name!r}: cannot find the vision model's num_patches (vectors per tile)"
            )
        return int(per_tile)


__all__ = [
    "FLAT",
    "MODALITIES",
    "NORMS",
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
    "get_path",
    "module_path",
]
