"""Where in the image: attribution maps over the regions of the picture (SPEC §4.9).

- **occlusion** (exact, causal): per region r of a ``rows × cols`` grid (or of given boxes),
  ``log p(answer) − log p(answer | the image tokens of r ablated or null-swapped)``, teacher-forced,
  regions + 1 forwards per sample, batched through :func:`interp.score` with
  :class:`interventions.AblateImageTokens` / :class:`interventions.SwapImageTokens`;
- **gradient** (attribution patching, the fast approximation): per region, the sum over its image
  tokens of ``∂ log p(answer)/∂h_l · (h_l − h_l^null)`` at residual index l, one forward and one
  backward per sample plus the null image's forward (:func:`interp.image_gradients`);
- **attention** (descriptive baseline): the attention mass of the last prompt position on each
  region's image tokens per layer and head (:func:`interp.attention_weights`, eager attention);
- maps as pictures: :func:`plot_attribution` overlays the scores on the original image;
- planted truth: on the demo world, the share of positive occlusion mass inside the object's box
  against random boxes of the same size (:func:`box_mass`).

The image tokens of a region come from :func:`interp.token_regions`, so every family with a
spatial token layout is covered; families without one (InstructBLIP, Mllama) are refused with
:class:`interp.NoSpatialLayoutError` before any compute.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from interp._lazy import lazy_exports
from interp.study_registry import StudyEntry

ENTRY = StudyEntry(
    "attribute",
    "Attribution maps",
    "which regions of the image the answer depends on",
    audit=".audit:STUDY",
    docs="docs/attribute.md",
    notebook="notebooks/09_where_in_the_image.ipynb",
    bench="bench/attribute.py",
    order=9,
)
"""This study in the study registry (:mod:`interp.study_registry`)."""


_LAZY = {
    "Attribution": "measure",
    "answers_for": "measure",
    "attention": "measure",
    "gradient": "measure",
    "occlusion": "measure",
    "region_groups": "measure",
    "answer_group": "analysis",
    "box_mass": "analysis",
    "mass_table": "analysis",
    "object_box": "analysis",
    "object_shares": "analysis",
    "rank_agreement": "analysis",
    "plot_attribution": "figures",
    "plot_attribution_grid": "figures",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

if TYPE_CHECKING:
    from .analysis import (
        answer_group,
        box_mass,
        mass_table,
        object_box,
        object_shares,
        rank_agreement,
    )
    from .figures import plot_attribution, plot_attribution_grid
    from .measure import (
        Attribution,
        answers_for,
        attention,
        gradient,
        occlusion,
        region_groups,
    )

__all__ = [
    "Attribution",
    "answer_group",
    "answers_for",
    "attention",
    "box_mass",
    "gradient",
    "mass_table",
    "object_box",
    "object_shares",
    "occlusion",
    "plot_attribution",
    "plot_attribution_grid",
    "rank_agreement",
    "region_groups",
]
