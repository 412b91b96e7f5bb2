"""The borrowed processors of the zoo's checks made to give what a type's stock processor gives:
the outputs it drops (:data:`DROPPED`) or renames (:data:`RENAMED`), its own processor where it
builds offline (:data:`STOCK_PROCESSORS`), and placeholders counted on the model
(:class:`CountingProcessor`, :class:`CountingGridProcessor`, :class:`CountingAudioProcessor`: each
image or clip expands to as many placeholders as the model's feature site gives for it). A type's
image inputs are in :mod:`interp.testing.builders.zoo_images`, its config fixes in
:mod:`interp.testing.builders.zoo_configs`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch
from transformers import LlavaProcessor, Qwen2AudioProcessor, Qwen3VLProcessor

# type -> image-processor outputs its stock processor drops (its ``unused_input_names``)
# (Voxtral's gives ``input_features`` alone: its encoder takes the whole padded window)
DROPPED: dict[str, tuple[str, ...]] = {
    "aria": ("num_crops",),
    "shieldgemma2": ("num_crops",),
    "voxtral": ("feature_attention_mask",),
    "granite_docling": ("rows", "cols"),  # the tile grid, which only builds the prompt
    "inkling_mm_model": ("image_grid_hw",),  # the hand-cut patches' grid, for the count only
    "minicpmv4_6": ("grids", "num_patches_per_image"),  # slicing, which only builds the prompt
    "minicpmv4_7": ("grids", "num_patches_per_image"),
    "minicpm_ocr": ("grids", "num_patches_per_image"),
}


# type -> outputs its stock processor renames (Gemma 3's marks image tokens in token_type_ids,
# which its forward reads for bidirectional attention over each image; Qwen3-ASR's names the
# Whisper frames' mask input_features_mask; Video-LLaVA's image processor returns its pixels as
# pixel_values_images, its legacy output and still its default: the name the library must find)
RENAMED: dict[str, dict[str, str]] = {
    "shieldgemma2": {"mm_token_type_ids": "token_type_ids"},
    "video_llava": {"pixel_values": "pixel_values_images"},
    "qwen3_asr": {"feature_attention_mask": "input_features_mask"},
    "fun_asr_nano": {"feature_attention_mask": "input_features_mask"},
}


def _glmasr(borrowed: Any) -> Any:
    """GLM-ASR's own processor (it builds offline: no image processor) around the borrowed
    Qwen2-Audio processor's Whisper features, tokenizer and template: ``input_features_mask``
    and its own audio-token count per audio."""
    from transformers import GlmAsrProcessor

    from .audio import AUDIO_TOKEN

    return GlmAsrProcessor(
        feature_extractor=borrowed.feature_extractor,
        tokenizer=borrowed.tokenizer,
        chat_template=borrowed.chat_template,
        audio_token=AUDIO_TOKEN,
    )


def _omniasr(borrowed: Any) -> Any:
    """OmniASR's own processor (it builds offline): its waveform feature extractor
    (``input_values``, ``padding_mask``) and its count of encoder frames per audio, around the
    borrowed tokenizer, template and audio token."""
    from transformers import OmniASRFeatureExtractor, OmniASRProcessor

    from .audio import AUDIO_TOKEN

    return OmniASRProcessor(
        feature_extractor=OmniASRFeatureExtractor(),
        tokenizer=borrowed.tokenizer,
        chat_template=borrowed.chat_template,
        audio_token=AUDIO_TOKEN,
    )


# type -> its stock processor class built around the borrowed processor's parts (where it
# builds offline)
STOCK_PROCESSORS: dict[str, Callable[[Any], Any]] = {"glmasr": _glmasr, "omniasr": _omniasr}


def _one(inputs: dict[str, Any], idx: int, n: int) -> dict[str, Any]:
    """Image ``idx``'s slice of a batch of ``n`` images' processor outputs."""
    import numpy as np

    out = {}
    for key, value in inputs.items():
        batched = isinstance(value, (torch.Tensor, np.ndarray, list, tuple))
        if batched and getattr(value, "ndim", 1) > 0 and len(value) == n:
            value = value[idx : idx + 1]
            value = value if isinstance(value, torch.Tensor) else torch.as_tensor(np.stack(value))
        out[key] = value
    return out


def _batch_wide(inputs: Mapping[str, Any], idx: int) -> dict[str, Any]:
    """Image ``idx``'s inputs where the batch's views lie side by side in one ``pixel_values``
    ``[1, 3, p, patches * p]`` (MiniCPM-V): its views' ``target_sizes`` rows and their patches."""
    import numpy as np

    sizes = np.asarray(inputs["target_sizes"])
    views = np.cumsum([0, *inputs["num_patches_per_image"]])
    first, last = int(views[idx]), int(views[idx + 1])
    patches = sizes.prod(-1)
    p = int(np.asarray(inputs["pixel_values"]).shape[-2])
    start, stop = int(patches[:first].sum()) * p, int(patches[:last].sum()) * p
    return {
        "pixel_values": torch.as_tensor(np.asarray(inputs["pixel_values"])[..., start:stop]),
        "target_sizes": torch.as_tensor(sizes[first:last]),
    }


class _Counting:
    """What both counting processors share: the model's per-item feature count (``counter``),
    the type's dropped outputs (:data:`DROPPED`) and renamed ones (:data:`RENAMED`)."""

    counter: Callable[[dict[str, Any]], int] | None = None
    dropped: tuple[str, ...] = ()
    renamed: dict[str, str] = {}  # noqa: RUF012 - replaced per instance, never mutated

    def count_for(self, model_type: str, counter: Callable[[dict[str, Any]], int]) -> None:
        """Count with ``counter``; drop and rename ``model_type``'s outputs as its processor does."""
        self.counter = counter
        self.dropped = DROPPED.get(model_type, ())
        self.renamed = RENAMED.get(model_type, {})

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        out = super().__call__(*args, **kwargs)  # type: ignore[misc]
        for old, new in self.renamed.items():
            if old in out:
                out[new] = out.pop(old)
        return out

    def _counted(self, one: dict[str, Any]) -> int:
        if self.counter is None:
            raise RuntimeError(f"{type(self).__name__}.counter is not set")
        return self.counter(one)


class _CountedImages(_Counting):
    """An image placeholder that expands to the feature count the model's ``get_image_features``
    gives for that image (its own inputs, as the image processor made them): the placeholder
    count matches the features by construction, whatever the image size; the zoo's
    ``features`` check then checks the forward's feature site."""

    def replace_image_token(
        self, image_inputs: Mapping[str, Any], image_idx: int, **kwargs: Any
    ) -> str:
        import numpy as np

        grid = image_inputs.get("image_grid_thw", image_inputs.get("image_grid_hw"))
        if grid is not None:  # patch-flattened pixel_values: image_idx's rows of patches
            sizes = [int(torch.as_tensor(np.asarray(g)).prod()) for g in grid]
            start = sum(sizes[:image_idx])
            patches = image_inputs["pixel_values"][start : start + sizes[image_idx]]
            one = {
                k: torch.as_tensor(np.asarray(v[image_idx : image_idx + 1]))
                for k, v in image_inputs.items()
            }
            one["pixel_values"] = torch.as_tensor(np.asarray(patches))
            return self.image_token * self._counted(one)
        if "target_sizes" in image_inputs and "num_patches_per_image" in image_inputs:
            return self.image_token * self._counted(_batch_wide(image_inputs, image_idx))
        n = len(image_inputs["pixel_values"])
        return self.image_token * self._counted(_one(dict(image_inputs), image_idx, n))


class CountingProcessor(_CountedImages, LlavaProcessor):
    """A LLaVA processor whose ``<image>`` expands to the model's feature count."""

    @property
    def unused_input_names(self) -> list[str]:
        return list(self.dropped)


class CountingGridProcessor(_CountedImages, Qwen3VLProcessor):
    """The tiny Qwen3-VL processor whose image placeholder expands to the model's feature count
    for a type whose grid gives another count than Qwen's (HunYuan-VL adds a token per merged
    row and two around the image; Inkling 2's grid is in merged units): its
    :data:`GRID_COUNTED` types."""


# qwen-vl-like types whose image token count is not Qwen's grid / merge² (counted on the model)
GRID_COUNTED = ("hunyuan_vl", "inkling2", "inkling2_loop")


class CountingAudioProcessor(_Counting, Qwen2AudioProcessor):
    """The tiny Qwen2-Audio processor whose ``<|AUDIO|>`` expands to the feature count the
    model's ``get_audio_features`` gives for that clip (its own features, as the extractor made
    them): an encoder with its own pooling or a fixed window (Voxtral: one vector per pair of
    encoder positions over the whole padded window) gets as many placeholders as it gives
    vectors; the ``features`` check then checks the forward's feature site."""

    @property
    def unused_input_names(self) -> list[str]:
        return ["num_audio_tokens", *self.dropped]

    def replace_audio_token(
        self, audio_inputs: Mapping[str, Any], audio_idx: int, **kwargs: Any
    ) -> str:
        n = len(audio_inputs["input_features"])
        one = {
            self.renamed.get(k, k): v for k, v in audio_inputs.items() if k != "num_audio_tokens"
        }
        return self.audio_token * self._counted(_one(one, audio_idx, n))


__all__ = [
    "DROPPED",
    "GRID_COUNTED",
    "RENAMED",
    "STOCK_PROCESSORS",
    "CountingAudioProcessor",
    "CountingGridProcessor",
    "CountingProcessor",
]
