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

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
from einops import reduce
from transformers import PretrainedConfig, PreTrainedModel

from . import region_layouts as rl
from .errors import ModalityError, UnsupportedArchitectureError
from .prompts import PromptBuilder, chat_content, chat_prompt
from .samples import IMAGE_SLOT

Fusion = Literal["tokens", "cross_attention"]

PixelLayout = Literal["images", "patches", "rows", "tiles", "cross_tiles"]
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
class Adapter:
    """What the library needs to know about one architecture family.

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
        decoder_path: override for the decoder (the module holding ``.layers``); default
            ``model.get_decoder()``.
        norm_attr: the decoder's final-norm attribute.
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
            ``[batch, images, tiles, ...]`` with ``aspect_ratio_mask`` marking real tiles (Mllama).
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
    """

    name: str
    model_types: tuple[str, ...]
    image_features: str
    fusion: Fusion = "tokens"
    image_token_attrs: tuple[str, ...] = ("image_token_id", "image_token_index")
    images_per_row: bool = False
    mixed_batches: bool = True
    decoder_path: str | None = None
    norm_attr: str = "norm"
    build_prompt: PromptBuilder = chat_prompt
    target_fields: dict[str, int] = field(default_factory=dict)
    cross_attention_layers_attr: str | None = None
    text_only_module: str | None = None
    forward_inputs: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    blind_by_stripping: bool = False
    pixel_layout: PixelLayout = "images"
    attention_module: str = "self_attn"
    attention_scores_site: tuple[str, ...] = ("attention_interface_1", "nn_functional_softmax_0")
    embeddings_kwarg: str | None = None
    token_layout: rl.LayoutFn | None = None
    no_layout: str = ""
    notes: str = ""
    modalities: tuple[Modality, ...] = ("image",)
    audio_features: str | None = None
    video_features: str | None = None
    audio_token_attrs: tuple[str, ...] = ("audio_token_id", "audio_token_index")
    video_token_attrs: tuple[str, ...] = ("video_token_id", "video_token_index")
    audio_kwarg: str = "audio"
    video_kwarg: str = "videos"
    mixed_audio: bool = True
    mixed_video: bool = True
    video_in_image_tokens: bool = False
    stacked_videos: bool = False

    def __post_init__(self) -> None:
        if self.blind_by_stripping and self.mixed_batches:
            object.__setattr__(self, "mixed_batches", False)

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
        return getattr(self.decoder(model), self.norm_attr)

    def lm_head(self, model: PreTrainedModel) -> torch.nn.Module:
        return model.get_output_embeddings()

    def image_features_module(self, model: PreTrainedModel) -> torch.nn.Module:
        return get_path(model, self.image_features)

    def image_token_id(self, model: PreTrainedModel) -> int:
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
            raise ModalityError(
                f"{self.name} takes {', '.join(self.modalities)} inputs, not {modality}; remove "
                f"the {modality} from the samples or drop it with a condition (no_{modality}), or "
                "load a family that takes it"
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
        """Per row, an index into ``inputs["pixel_values"]`` selecting that row's real image
        pixels (``None`` for a row without images); see ``pixel_layout``. ``video_mask`` marks
        video positions of a family whose video frames share ``pixel_values`` with the images
        (``video_in_image_tokens``): their frames are left out."""
        pixels = inputs["pixel_values"]
        if self.pixel_layout == "tiles" and video_mask is not None and bool(video_mask.any()):
            return _image_tiles(
                image_mask, video_mask, int(processor.image_seq_length), images_per_row
            )
        out: list[Any] = []
        if self.pixel_layout in ("rows", "cross_tiles"):
            for row, n in enumerate(images_per_row):
                if not n:
                    out.append(None)
                elif self.pixel_layout == "cross_tiles":
                    out.append((row, inputs["aspect_ratio_mask"][row].bool()))
                else:
                    # padding images are all zero
                    real = reduce(pixels[row].ne(0), "image ... -> image", "max")
                    out.append((row, real))
            return out
        if self.pixel_layout == "patches":
            grid = inputs["image_grid_thw"]
            sizes = grid.prod(-1).tolist()
            counts, k = [], 0
            for n in images_per_row:
                counts.append(int(sum(sizes[k : k + n])))
                k += n
        elif self.pixel_layout == "tiles":
            seq = int(processor.image_seq_length)
            counts = [int(c) // seq for c in image_mask.sum(1).tolist()]
        else:
            counts = list(images_per_row)
        start = 0
        for n in counts:
            out.append(slice(start, start + n) if n else None)
            start += n
        return out

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


def _image_tiles(
    image_mask: torch.Tensor, video_mask: torch.Tensor, seq: int, images_per_row: Sequence[int]
) -> list[Any]:
    """Per row, the indices of its image tiles in ``pixel_values`` where image tiles and video
    frames lie there together in placement order, ``seq`` placeholder positions each."""
    both = image_mask | video_mask
    is_video = video_mask[both][::seq].cpu()  # one entry per tile or frame, row-major
    row_of = both.nonzero()[:, 0][::seq].cpu()
    out: list[Any] = []
    for row, n in enumerate(images_per_row):
        picked = ((row_of == row) & ~is_video).nonzero().flatten()
        out.append(picked if n and len(picked) else None)
    return out


ADAPTERS: dict[str, Adapter] = {}


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


def supported_architectures() -> list[str]:
    """Registered ``config.model_type`` values."""
    return sorted(ADAPTERS)


def adapter_for(model: PreTrainedModel | PretrainedConfig) -> Adapter:
    """The registered adapter for a loaded HF model (or its config), resolved from
    ``config.model_type``.

    Raises:
        UnsupportedArchitectureError: no entry serves this model type.
    """
    config = model if isinstance(model, PretrainedConfig) else getattr(model, "config", None)
    if isinstance(config, PretrainedConfig):
        from .thinker import inner_config

        config = inner_config(config)  # a full omni checkpoint: its thinker's entry
    model_type = getattr(config, "model_type", None)
    if model_type in ADAPTERS:
        return ADAPTERS[model_type]
    name = (
        type(model).__name__
        if not isinstance(model, PretrainedConfig)
        else (config.architectures or ["?"])[0]
    )
    raise UnsupportedArchitectureError(
        f"{name} (config.model_type={model_type!r}) has no adapter. "
        f"Supported model types: {', '.join(supported_architectures())}. "
        "To add one, register an entry: "
        "interp.register_adapter(interp.Adapter(name=..., model_types=(model_type,), "
        "image_features='<path of the module producing image features>')) — see interp/adapters.py."
    )


# the supported families: one entry each, registered on import
from . import families as _families  # noqa: E402, F401

__all__ = [
    "ADAPTERS",
    "MODALITIES",
    "Modality",
    "IMAGE_SLOT",
    "Adapter",
    "chat_content",
    "adapter_for",
    "chat_prompt",
    "module_path",
    "register_adapter",
    "supported_architectures",
]
