"""Interventions: one object per edit, usable by every measurement (``edits=[...]``).

Each is an :class:`interp.Intervention` (see :mod:`interp.edits` for the protocol): an optional
``prepare`` outside the trace and an ``apply`` inside it, at the prompt forward and, for edits that
act on every token, at every generated step. They compose in any order with each other and with the
measurement's reads.

==========================  ====================================================================
intervention                what it does
==========================  ====================================================================
:class:`SwapImage`          another condition's visual tokens (a null image's, another
                            sample's) in place of the real ones — :mod:`interventions.image`
:class:`AblateImage`        zero or mean-ablate the visual tokens
:class:`SwapFeatures`       the same for any modality's feature positions (``"image"``,
                            ``"audio"``, ``"video"``): e.g. a silent waveform's audio features
                            in place of the real ones — :mod:`interventions.features`
:class:`AblateFeatures`     zero or mean-ablate any modality's feature positions
:class:`Steer`              add a vector to the residual stream at chosen layers and positions —
                            :mod:`interventions.steering`
:class:`Patch`              activation patching from another condition's run of the same samples
                            or from given states — :mod:`interventions.patching`
:class:`Knockout`           block chosen query positions from attending to image, audio,
                            video or question tokens — :mod:`interventions.attention`
:class:`AttentionBoost`     PAI's image-attention boost ``a + α·|a|`` before the softmax
==========================  ====================================================================

Contrastive decoding (VCD, ICD, VDD, M3ID, PAI's guidance, the modality-conflict paper's
contrast) lives in :mod:`interventions.decoding`: a method object passed to
``interp.generate(..., decoding=vcd())``, not an edit — it chooses the tokens from the expert's and
the amateur inputs' logits, which run in one batch.

The functions of :mod:`interventions.image` (``swap_image``, ``replace_image_embeddings``,
``ablate_image_tokens``, ``image_embeddings``) do the same by hand inside a trace;
:class:`AblateImageTokens` / :class:`SwapImageTokens` (:mod:`interventions.regions`) edit only
some image tokens per row (occlusion of one region of the picture).
"""

from .attention import AttentionBoost, Knockout, attention_scores
from .features import (
    NULL_SOURCES,
    AblateFeatures,
    AblateImage,
    SwapFeatures,
    SwapImage,
    ablate_media_features,
    feature_counts,
    read_media_features,
    replace_media_features,
)
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
from .patching import Patch
from .regions import AblateImageTokens, SwapImageTokens
from .steering import Steer, difference_of_means

__all__ = [
    "ABLATION_MODES",
    "NULL_SOURCES",
    "AblateFeatures",
    "AblateImage",
    "AblateImageTokens",
    "AblationMode",
    "AttentionBoost",
    "ImageInputs",
    "ImageSwap",
    "Knockout",
    "Patch",
    "Steer",
    "SwapFeatures",
    "SwapImage",
    "SwapImageTokens",
    "ablate_image_tokens",
    "ablate_media_features",
    "attention_scores",
    "difference_of_means",
    "feature_counts",
    "image_counts",
    "image_embeddings",
    "image_position_mask",
    "read_image_inputs",
    "read_media_features",
    "replace_image_embeddings",
    "replace_media_features",
    "swap_image",
]
