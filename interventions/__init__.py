"""Composable nnsight interventions on vision-language models.

Each intervention is a function called *inside* ``with vlm.trace_encoding(enc):`` that edits the
model's tensors there (no monkey-patching, no re-implemented forward), so interventions compose with
each other and with reads in one trace.

- :mod:`interventions.image` — the image's input to the decoder: read it
  (:func:`image_embeddings`, :func:`read_image_inputs`), overwrite it
  (:func:`replace_image_embeddings`), swap it for a null or another image (:func:`swap_image`) and
  ablate it (:func:`ablate_image_tokens`).
"""

from .image import (
    ABLATION_MODES,
    AblationMode,
    ImageInputs,
    ImageSwap,
    ablate_image_tokens,
    image_counts,
    image_embeddings,
    image_position_mask,
    read_image_inputs,
    replace_image_embeddings,
    swap_image,
)

__all__ = [
    "ABLATION_MODES",
    "AblationMode",
    "ImageInputs",
    "ImageSwap",
    "ablate_image_tokens",
    "image_counts",
    "image_embeddings",
    "image_position_mask",
    "read_image_inputs",
    "replace_image_embeddings",
    "swap_image",
]
