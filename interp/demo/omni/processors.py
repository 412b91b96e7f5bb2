"""Processor pieces without torchvision, for ``demo-omni``'s processor (:mod:`interp.demo.omni.model`)
and the tiny builders of :mod:`interp.testing.builders`, which import them from here.

Every video processor in transformers needs torchvision; where it is absent (this project's CPU
install) a processor is built without one (:func:`processor_without_video`, with
:class:`NoVideoProcessor` as a stand-in where a chat template reads video defaults), and Qwen2-VL's
video preprocessing runs on the image processor (:class:`FramesVideoProcessor`). The chat template
of the omni-modal models renders image, audio and video items (:func:`omni_chat_template`).
"""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar

import numpy as np
from PIL import Image
from transformers import BatchFeature, ProcessorMixin, Qwen2VLImageProcessorPil
from transformers.video_utils import make_batched_metadata

P = TypeVar("P", bound=ProcessorMixin)


class NoVideoProcessor:
    """Stands in for a video processor where torchvision (which every video processor needs) is
    absent: it carries the sampling defaults that some processors read while rendering a chat
    template (SmolVLM reads ``num_frames`` and ``fps``), and refuses videos."""

    num_frames = None
    fps = None
    _auto_class = None
    # added to the processor's own list by some processors (Qwen-Omni)
    model_input_names: ClassVar[list[str]] = []

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("this processor was built without a video processor (no torchvision)")

    def save_pretrained(self, *args: Any, **kwargs: Any) -> None:
        """Nothing to save."""


def processor_without_video(cls: type[P], *, stand_in: bool = False, **kwargs: Any) -> P:
    """Construct the processor class ``cls`` (exactly that class) without a video processor.

    ``ProcessorMixin.__init__`` type-checks every sub-processor against classes that only exist
    when torchvision imports, so a ``None`` video processor is refused. The check is relaxed on
    this one instance, for the video processor only, while ``__init__`` runs; the result is an
    unmodified ``cls`` instance that handles text and images (passing videos fails). With
    ``stand_in``, a :class:`NoVideoProcessor` takes the video processor's place, for processors
    that read video defaults while rendering a chat template.
    """
    processor = cls.__new__(cls)
    strict_check = processor.check_argument_for_proper_class

    def check(argument_name: str, argument: object) -> object:
        if argument_name == "video_processor" and argument is None:
            return None
        return strict_check(argument_name, argument)

    processor.check_argument_for_proper_class = check  # type: ignore[method-assign]
    try:
        cls.__init__(processor, video_processor=None, **kwargs)
    finally:
        del processor.check_argument_for_proper_class
    if stand_in:
        processor.video_processor = NoVideoProcessor()
    return processor


def flat_videos(videos: Any) -> Any:
    """Videos nested per row (``[[clip], [clip, clip]]``, as ``apply_chat_template`` passes them,
    which the stock video processors accept) as one flat list of clips."""
    if isinstance(videos, (list, tuple)) and all(
        isinstance(row, (list, tuple))
        and all(isinstance(c, np.ndarray) and c.ndim == 4 for c in row)
        for row in videos
    ):
        return [clip for row in videos for clip in row]
    return videos


def omni_chat_template(image: str, audio: str = "", video: str = "", system: str = "") -> str:
    """ChatML with ``image`` / ``audio`` / ``video`` written for those content items (text items
    as given); ``system`` (if any) becomes a system turn when the messages carry none."""
    head = ""
    if system:
        head = (
            "{% if messages[0]['role'] != 'system' %}<|im_start|>system\n"
            + system
            + "<|im_end|>\n{% endif %}"
        )
    return (
        head + "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
        "{% if m['content'] is string %}{{ m['content'] }}{% else %}"
        "{% for c in m['content'] %}"
        "{% if c['type'] == 'image' %}" + image + "{% elif c['type'] == 'audio' %}" + audio + ""
        "{% elif c['type'] == 'video' %}" + video + "{% else %}{{ c['text'] }}{% endif %}"
        "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )


class FramesVideoProcessor:
    """Qwen2-VL's video preprocessing without torchvision, built on the stock
    ``Qwen2VLImageProcessorPil``: every frame is resized, rescaled and normalised by the image
    processor (so frames match images of the same size exactly), the frame count is padded to a
    multiple of the temporal patch by repeating the last frame, and each pair of consecutive frames
    fills the two temporal slots of a patch — the layout of ``Qwen2VLVideoProcessor``'s
    ``pixel_values_videos`` (rows ordered by time step, then merge group) with ``video_grid_thw``
    = (frames / 2, patch rows, patch columns)."""

    model_input_names = ["pixel_values_videos", "video_grid_thw"]
    _auto_class = None

    def __init__(self, image_processor: Qwen2VLImageProcessorPil) -> None:
        self.image_processor = image_processor
        self.patch_size = int(image_processor.patch_size)
        self.merge_size = int(image_processor.merge_size)
        self.temporal_patch_size = int(image_processor.temporal_patch_size)
        self.image_mean = image_processor.image_mean
        self.image_std = image_processor.image_std
        self.num_frames = None
        self.fps = None

    def __call__(self, videos: Any, return_tensors: Any = "pt", **kwargs: Any) -> BatchFeature:
        if isinstance(videos, np.ndarray) and videos.ndim == 4:
            videos = [videos]
        videos = flat_videos(videos)
        pixels, grids = [], []
        tp = self.temporal_patch_size
        for video in videos:
            frames = [np.asarray(f) for f in video]
            frames += [frames[-1]] * (-len(frames) % tp)
            out = self.image_processor([Image.fromarray(f) for f in frames], return_tensors="np")
            _, gh, gw = (int(x) for x in out["image_grid_thw"][0])
            n = gh * gw
            # per frame: [n, C, tp, p, p] with the frame copied into every temporal slot
            per_frame = out["pixel_values"].reshape(len(frames), n, 3, tp, *[self.patch_size] * 2)
            single = per_frame[:, :, :, 0]  # [frames, n, C, p, p]
            steps = single.reshape(len(frames) // tp, tp, n, 3, *single.shape[-2:])
            patches = steps.transpose(0, 2, 3, 1, 4, 5)  # [t, n, C, tp, p, p]
            pixels.append(patches.reshape(len(frames) // tp * n, -1))
            grids.append([len(frames) // tp, gh, gw])
        return BatchFeature(
            {
                "pixel_values_videos": np.concatenate(pixels).astype(np.float32),
                "video_grid_thw": np.array(grids, dtype=np.int64),
                # as the stock processor: raw frames carry no fps, which reads as 24 fps
                # (Qwen2.5-VL derives second_per_grid_ts from it); the processor drops it after
                "video_metadata": make_batched_metadata(videos, kwargs.get("video_metadata")),
            },
            tensor_type=return_tensors,
            skip_tensor_conversion=["video_metadata"],
        )

    def save_pretrained(self, *args: Any, **kwargs: Any) -> None:
        """Nothing to save (the image processor's settings define it)."""


__all__ = [
    "FramesVideoProcessor",
    "NoVideoProcessor",
    "flat_videos",
    "omni_chat_template",
    "processor_without_video",
]
