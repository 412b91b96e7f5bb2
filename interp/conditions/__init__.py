"""Conditions: how a :class:`~interp.Sample` is turned into model input.

A condition is parsed once, at the API boundary, into a :class:`Condition` of up to three parts
joined by ``+`` — what happens to the **image**, to the **question**, and to the generated
**prefix** — so that, e.g., "no image and no question" (P0 of the temporal-causal-drives paper) is
the one condition ``"blind+no_question"``.

=========================  =====================================================================
image part                 input
=========================  =====================================================================
``full``                   the sample's image(s) (the default when no image part is given)
``blind``                  the same chat prompt with every image item removed (Z_blind, Eq. 2 of
                           the chain-of-embedding paper): no image tokens at all
``null:black``             a black image of each real image's size in its place
``null:white``             a white image
``null:noise``             uniform RGB noise, seeded by the sample id (reproducible)
``null:mean``              a uniform image of the processor's normalisation mean: after
                           normalisation every pixel value is 0
``swap:next``              the image(s) of the next sample with an image (cyclic)
``swap:<id>``              the image(s) of the sample with that id, for every sample
``distort:<t>``            the real image with VCD's forward-diffusion noise at step ``t`` of
                           1,000 added to the *normalised* pixel values, seeded by the sample id
=========================  =====================================================================

=========================  =====================================================================
question / prefix part     input
=========================  =====================================================================
``no_question``            an empty question (the image(s) alone)
``ask:<text>``             the question replaced by ``<text>`` (e.g. ``ask:Please provide a
                           response.``)
``instruct:<text>``        ``<text>`` placed before the question, as an instruction prefix (ICD's
                           disturbance instruction)
``no_prefix``              teacher-forced scoring only: every answer token is scored right after
                           the prompt, without the answer tokens before it
=========================  =====================================================================

Audio and video parts are listed below; a condition holds at most one of each.

``null_question`` is kept as the name of ``full+no_question``. Text arguments may hold ``:`` but not
``+``; build a :class:`Condition` directly for any text. Null images take the size of the image
they replace, so architectures with dynamic resolution get exactly as many image tokens. A sample
without an image gets one null image of the processor's nominal input size.

New conditions are registered in a few lines (see :func:`register_image_condition` and
:func:`register_question_condition`)::

    from PIL import ImageFilter
    import interp

    @interp.register_image_condition("blur", check=float)
    def blur(sample, arg, ctx):
        return [im.filter(ImageFilter.GaussianBlur(float(arg))) for im in sample.load_images()]

    interp.residual_stream(vlm, samples, "blur:2+no_question")

A condition holds at most one audio part and one video part besides its image and question parts,
all joined by ``+``: ``"blind+no_audio+no_question"`` is P0 of the temporal-causal-drives paper on
an omni input. Without an audio (video) part the sample's own audio (video) is used.

==========================  ====================================================================
audio part                  input
==========================  ====================================================================
``no_audio``                every audio item removed from the prompt (no audio tokens at all)
``null_audio:silence``      zeros of each audio's length and rate in its place
``null_audio:noise``        white Gaussian noise (std 0.1), seeded by the sample id
``null_audio:mean``         a constant at each waveform's mean (its DC part: no temporal content)
``swap_audio:next``         the audio of the next sample with audio (cyclic)
``swap_audio:<id>``         the audio of the sample with that id
``distort_audio:<snr_db>``  the real audio plus white Gaussian noise at that signal-to-noise ratio
                            (dB, over the whole waveform), seeded by the sample id
==========================  ====================================================================

==========================  ====================================================================
video part                  input
==========================  ====================================================================
``no_video``                every video item removed from the prompt
``null_video:black``        black frames of each video's shape
``null_video:mean``         frames of the processor's normalisation mean (0 after normalising)
``swap_video:next|<id>``    another sample's video
``frames:<k>``              k frames sampled uniformly (``linspace(0, T-1, k)`` rounded)
``shuffle_frames``          the frames in a random order, seeded by the sample id
``still:<i>``               frame ``i`` repeated T times (the video without motion)
==========================  ====================================================================

One rule for every modality, as ``null`` for images: a ``null`` part replaces each of the sample's
inputs of that kind by its null form, and gives a row without any one null input — one second at
the processor's rate under ``null_audio``, 4 frames of the processor's nominal size under
``null_video`` (``null`` gives an image of the nominal size). The null input is the ``V = ∅`` of
the drives paper: the input is present and carries nothing. Use ``no_audio`` / ``no_video`` for a
prompt without the input at all. Every waveform is
resampled to the processor's audio rate afterwards (:mod:`interp.media`). New parts are registered
with :func:`register_audio_condition` / :func:`register_video_condition`.

The package: :mod:`~interp.conditions.registry` (the part registries, a leaf), :mod:`~interp.conditions.condition` (parsing),
:mod:`~interp.conditions.image`, :mod:`~interp.conditions.question`, :mod:`~interp.conditions.audio`, :mod:`~interp.conditions.video` (the built-in parts of each kind and
their ``register_*`` functions), :mod:`~interp.conditions.apply` (a sample as the model sees it under a condition).
"""

from __future__ import annotations

from . import audio, image, question, video  # noqa: F401  (each registers its built-in parts)
from .apply import (
    Prepared,
    carries,
    condition_inputs,
    condition_sources,
    prepare,
    video_frames,
)
from .audio import NULL_AUDIO_KINDS, register_audio_condition
from .condition import Condition, Part, Prefix, condition_help
from .image import (
    DIFFUSION_STEPS,
    NULL_KINDS,
    diffusion_alphas_cumprod,
    diffusion_noise,
    nominal_size,
    null_image,
    register_image_condition,
)
from .question import register_question_condition
from .registry import (
    AUDIO_CONDITIONS,
    IMAGE_CONDITIONS,
    QUESTION_CONDITIONS,
    VIDEO_CONDITIONS,
    ConditionContext,
    ImageCondition,
    MediaCondition,
    QuestionCondition,
    stable_seed,
)
from .video import NULL_VIDEO_KINDS, register_video_condition

__all__ = [
    "AUDIO_CONDITIONS",
    "DIFFUSION_STEPS",
    "IMAGE_CONDITIONS",
    "NULL_AUDIO_KINDS",
    "NULL_KINDS",
    "NULL_VIDEO_KINDS",
    "QUESTION_CONDITIONS",
    "VIDEO_CONDITIONS",
    "Condition",
    "ConditionContext",
    "ImageCondition",
    "MediaCondition",
    "Part",
    "Prefix",
    "Prepared",
    "QuestionCondition",
    "carries",
    "condition_help",
    "condition_inputs",
    "condition_sources",
    "diffusion_alphas_cumprod",
    "diffusion_noise",
    "nominal_size",
    "null_image",
    "prepare",
    "register_audio_condition",
    "register_image_condition",
    "register_question_condition",
    "register_video_condition",
    "stable_seed",
    "video_frames",
]
