"""The demo world: a seeded generator of small images with questions, answers and labels.

The world has ten object kinds drawn as silhouettes, eight colours, digits and written words, and
plants several priors whose strength is known, so that every measurement of the library can be
checked against ground truth:

- **colour prior** (language prior): five kinds have a canonical colour (the banana is yellow, the
  leaf green, the carrot orange, the heart red, the drop blue); in the training split they are drawn
  in that colour with probability :data:`PRIOR_STRENGTH`, in the evaluation splits a controlled
  share is counterfactual. Colour questions and descriptions that name the kind leak the prior.
- **co-occurrence prior** (object hallucination, as measured by POPE: Li et al., "Evaluating Object
  Hallucination in Large Vision-Language Models", arXiv:2305.10355): in the training scenes of
  existence questions a kind brings its partner (:data:`CO_OCCURRENCE`, e.g. the banana the leaf)
  with probability :data:`CO_OCCURRENCE_STRENGTH`, and some kinds are more frequent than others
  (:data:`KIND_FREQUENCY`). Evaluation asks about absent kinds drawn three ways: random, popular,
  adversarial (the partner of a present kind).
- **modality trust** (conflicts between a perceptual image, a propositional image and a caption,
  as in Tri-PvP: "Exposing Modality Bias in Omni-Modal Large Language Models through
  Perceptual-Propositional Evidence Conflicts"): the answer follows the evidence with the largest
  summed trust, which depends on the evidence form, its place in the prompt and its visibility
  (:func:`conflict_answer`).
- **wordings**: every vision question type is asked in four wordings (:data:`VARIANTS`); two name
  the object or offer two options and so leak answer information to a reader without the image.
- **reference**: every kind is an entity with two facts, every digit can be added to, every kind
  name is a word with a letter count; each is asked by naming the entity (textual reference) or as
  "the object / digit / word in the image" (visual reference), three families.

**World v3** adds audio and video, in question types generated only when named
(:data:`V3_QTYPES`; ``demo_world(qtypes=V3_QTYPES)``, ``--data demo:v3`` or ``demo:trimodal``),
from their own random streams, so every other request returns exactly the items it always did:

- ``trimodal``: an image (a drawn object | a sentence written in the image), an audio clip (the
  kind's synthetic sound, :mod:`~interp.datasets.world.audio` | a spoken sentence, :mod:`~interp.datasets.world.speech`) and a caption
  naming three different kinds (or agreeing), in the four evidence conditions and six input
  orders, answered by the trust rule :func:`trimodal_answer` (:mod:`~interp.datasets.world.trimodal`);
- ``hear``: one audio clip alone (sound or speech), which kind is it;
- ``motion``: videos of an object moving or two objects appearing in turn (:mod:`~interp.datasets.world.motion`).

Their samples carry :data:`META_KEYS` plus :data:`V3_META_KEYS`.

See :func:`demo_world` for the question types and :data:`META_KEYS` for the labels. Generation is by
item index from ``numpy.random.default_rng([seed, split, ...])``: the same ``(split, seed, start,
n)`` always gives the same samples, and a longer request extends a shorter one without changing it.

The package holds one module per question family over a shared core: :mod:`~interp.datasets.world.core` (the colour
prior, :data:`META_KEYS`, scene drawing), :mod:`~interp.datasets.world.wordings`, :mod:`~interp.datasets.world.perception` (colour, identity,
count, position, digit, description), :mod:`~interp.datasets.world.existence`, :mod:`~interp.datasets.world.text`, :mod:`~interp.datasets.world.reference`,
:mod:`~interp.datasets.world.conflict`, and :mod:`~interp.datasets.world.generate` (the question types, the mixtures and the entry points).
Images are drawn by :mod:`interp.datasets.render`.
"""

from __future__ import annotations

from ...samples import IMAGE_SLOT

# ``X as X``: public names of the one-module world kept reachable here, outside ``__all__``
# (the repository's tools/demo/evaluate/ reads SHAPE_KINDS from here)
from ..render import CELLS as CELLS
from ..render import COLORS as COLORS
from ..render import SHAPE_KINDS as SHAPE_KINDS
from ..render import TRIVIAL_IMAGES as TRIVIAL_IMAGES
from .audio import SOUND_SIGNATURES, object_sound
from .conflict import (
    AGREEMENTS,
    CONFLICT_ORDERS,
    FULL_VISIBILITY,
    POSITION_TRUST,
    SOURCE_TRUST,
    SOURCES,
    conflict_answer,
)
from .conflict import CAPTION as CAPTION
from .conflict import CONFLICT_QUESTION as CONFLICT_QUESTION
from .core import (
    CATEGORIES,
    COLOR_NAMES,
    COLOR_WORDS,
    EVAL_COUNTERFACTUAL_SHARE,
    META_KEYS,
    PLAIN_KINDS,
    PRIOR_COLORS,
    PRIOR_KINDS,
    PRIOR_STRENGTH,
    SPLITS,
    V3_META_KEYS,
)
from .existence import (
    CO_OCCURRENCE,
    CO_OCCURRENCE_STRENGTH,
    KIND_FREQUENCY,
    PARTNER_OPACITY,
    POPE_NEGATIVES,
    POPULAR_KINDS,
)
from .generate import (
    ALL_QTYPES,
    CONFLICT_QTYPES,
    FAINT,
    QTYPES,
    REFERENCE_QTYPES,
    TEXT_MIX,
    TEXT_QTYPES,
    TRAIN_MIX,
    V3_QTYPES,
    V3_TRAIN_MIX,
    VISION_QTYPES,
    demo_world,
    generation_label,
    text_corpus,
    world_vocabulary,
)
from .motion import DIRECTIONS, MOTION_QUESTIONS, VIDEO_KINDS, describe_motion
from .perception import describe_answer, parse_description
from .reference import (
    FACTS,
    FAMILIES,
    NUMBER_WORDS,
    RELATIONS,
    linked_digit,
    linked_recall,
    linked_word,
)
from .speech import SPEECH_PHRASINGS, SPEECH_VOICES, speech_clip, speech_manifest
from .trimodal import (
    EVIDENCE_CONDITIONS,
    TRI_ORDERS,
    TRI_POSITION_TRUST,
    TRI_SOURCES,
    TRI_TRUST,
    control_answer,
    label_triple,
    trimodal_answer,
)
from .wordings import NAMING_VARIANTS, VARIANTS, WORDED_QTYPES

__all__ = [
    "AGREEMENTS",
    "ALL_QTYPES",
    "CATEGORIES",
    "COLOR_NAMES",
    "COLOR_WORDS",
    "CONFLICT_ORDERS",
    "CONFLICT_QTYPES",
    "CO_OCCURRENCE",
    "CO_OCCURRENCE_STRENGTH",
    "DIRECTIONS",
    "EVAL_COUNTERFACTUAL_SHARE",
    "EVIDENCE_CONDITIONS",
    "FACTS",
    "FAINT",
    "FAMILIES",
    "FULL_VISIBILITY",
    "IMAGE_SLOT",
    "KIND_FREQUENCY",
    "META_KEYS",
    "MOTION_QUESTIONS",
    "NAMING_VARIANTS",
    "NUMBER_WORDS",
    "PARTNER_OPACITY",
    "PLAIN_KINDS",
    "POPE_NEGATIVES",
    "POPULAR_KINDS",
    "POSITION_TRUST",
    "PRIOR_COLORS",
    "PRIOR_KINDS",
    "PRIOR_STRENGTH",
    "QTYPES",
    "REFERENCE_QTYPES",
    "RELATIONS",
    "SOUND_SIGNATURES",
    "SOURCES",
    "SOURCE_TRUST",
    "SPEECH_PHRASINGS",
    "SPEECH_VOICES",
    "SPLITS",
    "TEXT_MIX",
    "TEXT_QTYPES",
    "TRAIN_MIX",
    "TRI_ORDERS",
    "TRI_POSITION_TRUST",
    "TRI_SOURCES",
    "TRI_TRUST",
    "V3_META_KEYS",
    "V3_QTYPES",
    "V3_TRAIN_MIX",
    "VARIANTS",
    "VIDEO_KINDS",
    "VISION_QTYPES",
    "WORDED_QTYPES",
    "conflict_answer",
    "control_answer",
    "demo_world",
    "describe_answer",
    "describe_motion",
    "generation_label",
    "label_triple",
    "linked_digit",
    "linked_recall",
    "linked_word",
    "object_sound",
    "parse_description",
    "speech_clip",
    "speech_manifest",
    "text_corpus",
    "trimodal_answer",
    "world_vocabulary",
]
