"""Datasets: the embedded demo world (a seeded generator of images, questions and labels).

``demo_world(split, n, seed, qtypes=...)`` is the entry point; ``text_corpus`` gives the
text-only items used to pretrain the demo model's language side; ``render`` draws the images;
``generation_label`` says from ``meta`` alone whether an answer followed the prior or the image.
"""

from . import world
from .render import (
    CELLS,
    COLORS,
    IMAGE_SIZE,
    SHAPE_KINDS,
    TRIVIAL_IMAGES,
    SceneObject,
    render_digit,
    render_scene,
    render_word,
    trivial_image,
)
from .world import *  # noqa: F403 (the world's public names: world.__all__)

__all__ = [
    "CELLS",
    "COLORS",
    "IMAGE_SIZE",
    "SHAPE_KINDS",
    "TRIVIAL_IMAGES",
    "SceneObject",
    "render_digit",
    "render_scene",
    "render_word",
    "trivial_image",
]
# the world's public names are listed once, in interp.datasets.world
__all__ += world.__all__
