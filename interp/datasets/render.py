"""Rendering of the demo world's small RGB images.

Every image is ``IMAGE_SIZE`` x ``IMAGE_SIZE`` RGB (uint8). Scenes place objects in the four cells of
a 2 x 2 grid over a noisy grey background; each object is blended in with its own opacity, so the
visual evidence is graded (opacity 0 leaves only background noise). Digits and written words
(propositional images) are drawn from small bitmap fonts defined here. All randomness comes from the
``numpy.random.Generator`` passed in, so a seeded generator gives identical pixels.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from PIL import Image

IMAGE_SIZE = 32
CELL_SIZE = IMAGE_SIZE // 2
OBJECT_SIZE = 12
BACKGROUND_GREY = 60.0
NOISE_SIGMA = 20.0

# Reading order of the 2 x 2 grid; the names are also the answers of position questions.
CELLS: tuple[str, ...] = ("top left", "top right", "bottom left", "bottom right")

COLORS: dict[str, tuple[int, int, int]] = {
    "red": (220, 30, 30),
    "orange": (245, 140, 20),
    "yellow": (240, 230, 40),
    "green": (40, 180, 50),
    "blue": (40, 80, 230),
    "purple": (150, 50, 200),
    "pink": (250, 130, 200),
    "white": (245, 245, 245),
}

TRIVIAL_IMAGES: tuple[str, ...] = ("black", "white", "noise")

_SUPERSAMPLE = 4


def _grid(size: int) -> tuple[np.ndarray, np.ndarray]:
    """Supersampled pixel-centre coordinates in [-1, 1] (u to the right, v downwards)."""
    n = size * _SUPERSAMPLE
    c = (np.arange(n) + 0.5) / n * 2.0 - 1.0
    v, u = np.meshgrid(c, c, indexing="ij")
    return u, v


def _inside(kind: str, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Boolean silhouette of ``kind`` on normalised coordinates."""
    if kind == "circle":
        return u**2 + v**2 <= 0.85**2
    if kind == "square":
        return (np.abs(u) <= 0.72) & (np.abs(v) <= 0.72)
    if kind == "triangle":  # apex up, wide base
        return (v >= -0.85) & (v <= 0.8) & (np.abs(u) <= 0.95 * (v + 0.85) / 1.65)
    if kind == "diamond":
        return np.abs(u) + np.abs(v) <= 0.95
    if kind == "cross":
        return ((np.abs(u) <= 0.3) & (np.abs(v) <= 0.92)) | (
            (np.abs(v) <= 0.3) & (np.abs(u) <= 0.92)
        )
    if kind == "banana":  # crescent opening to the top right
        return (u**2 + v**2 <= 0.92**2) & ((u - 0.38) ** 2 + (v + 0.38) ** 2 > 0.78**2)
    if kind == "leaf":  # pointed lens along the diagonal
        a = (u - v) / np.sqrt(2.0)
        b = (u + v) / np.sqrt(2.0)
        return (np.abs(a) <= 1.0) & (np.abs(b) <= 0.5 * (1.0 - (a / 1.0) ** 2))
    if kind == "carrot":  # tall narrow wedge, point down
        return (v >= -0.92) & (v <= 0.95) & (np.abs(u) <= 0.5 * (0.95 - v) / 1.87)
    if kind == "heart":
        x = u * 1.25
        y = -v * 1.25 + 0.2
        return (x**2 + y**2 - 1.0) ** 3 - x**2 * y**3 <= 0.0
    if kind == "drop":  # round bottom, point up
        body = u**2 + (v - 0.3) ** 2 <= 0.6**2
        tip = (v >= -0.95) & (v <= 0.3) & (np.abs(u) <= 0.58 * (v + 0.95) / 1.25)
        return body | tip
    raise ValueError(f"unknown object kind {kind!r}; known kinds: {', '.join(SHAPE_KINDS)}")


SHAPE_KINDS: tuple[str, ...] = (
    "circle",
    "square",
    "triangle",
    "diamond",
    "cross",
    "banana",
    "leaf",
    "carrot",
    "heart",
    "drop",
)


def shape_mask(kind: str, size: int = OBJECT_SIZE) -> np.ndarray:
    """Anti-aliased coverage mask in [0, 1] of shape ``[size, size]``."""
    u, v = _grid(size)
    inside = _inside(kind, u, v).astype(np.float32)
    return inside.reshape(size, _SUPERSAMPLE, size, _SUPERSAMPLE).mean(axis=(1, 3))


# 5 x 7 digit glyphs and 3 x 5 lowercase letters, drawn for this project ('#' = ink).
_DIGITS: dict[str, tuple[str, ...]] = {
    "0": (".###.", "#...#", "#..##", "#.#.#", "##..#", "#...#", ".###."),
    "1": ("..#..", ".##..", "..#..", "..#..", "..#..", "..#..", ".###."),
    "2": (".###.", "#...#", "....#", "...#.", "..#..", ".#...", "#####"),
    "3": ("####.", "....#", "....#", ".###.", "....#", "....#", "####."),
    "4": ("...#.", "..##.", ".#.#.", "#..#.", "#####", "...#.", "...#."),
    "5": ("#####", "#....", "####.", "....#", "....#", "#...#", ".###."),
    "6": ("..##.", ".#...", "#....", "####.", "#...#", "#...#", ".###."),
    "7": ("#####", "....#", "...#.", "..#..", ".#...", ".#...", ".#..."),
    "8": (".###.", "#...#", "#...#", ".###.", "#...#", "#...#", ".###."),
    "9": (".###.", "#...#", "#...#", ".####", "....#", "...#.", ".##.."),
}

_LETTERS: dict[str, tuple[str, ...]] = {
    "a": (".#.", "#.#", "###", "#.#", "#.#"),
    "b": ("##.", "#.#", "##.", "#.#", "##."),
    "c": (".##", "#..", "#..", "#..", ".##"),
    "d": ("##.", "#.#", "#.#", "#.#", "##."),
    "e": ("###", "#..", "##.", "#..", "###"),
    "f": ("###", "#..", "##.", "#..", "#.."),
    "g": (".##", "#..", "#.#", "#.#", ".##"),
    "h": ("#.#", "#.#", "###", "#.#", "#.#"),
    "i": ("###", ".#.", ".#.", ".#.", "###"),
    "j": ("..#", "..#", "..#", "#.#", ".#."),
    "k": ("#.#", "#.#", "##.", "#.#", "#.#"),
    "l": ("#..", "#..", "#..", "#..", "###"),
    "m": ("#.#", "###", "###", "#.#", "#.#"),
    "n": ("##.", "#.#", "#.#", "#.#", "#.#"),
    "o": (".#.", "#.#", "#.#", "#.#", ".#."),
    "p": ("##.", "#.#", "##.", "#..", "#.."),
    "q": (".#.", "#.#", "#.#", "##.", ".##"),
    "r": ("##.", "#.#", "##.", "#.#", "#.#"),
    "s": (".##", "#..", ".#.", "..#", "##."),
    "t": ("###", ".#.", ".#.", ".#.", ".#."),
    "u": ("#.#", "#.#", "#.#", "#.#", "###"),
    "v": ("#.#", "#.#", "#.#", "#.#", ".#."),
    "w": ("#.#", "#.#", "###", "###", "#.#"),
    "x": ("#.#", "#.#", ".#.", "#.#", "#.#"),
    "y": ("#.#", "#.#", ".#.", ".#.", ".#."),
    "z": ("###", "..#", ".#.", "#..", "###"),
}

DIGIT_SCALE = 2  # digits are 10 x 14 pixels
LETTER_HEIGHT_SCALE = 2  # letters are 3 x 10 pixels, one pixel apart


def _bitmap(rows: Sequence[str]) -> np.ndarray:
    return np.array([[ch == "#" for ch in row] for row in rows], dtype=np.float32)


def digit_mask(digit: int) -> np.ndarray:
    """Mask of one digit glyph, ``[7 * DIGIT_SCALE, 5 * DIGIT_SCALE]``."""
    if not 0 <= digit <= 9:
        raise ValueError(f"digit must be in 0..9, got {digit}")
    bm = _bitmap(_DIGITS[str(digit)])
    return np.kron(bm, np.ones((DIGIT_SCALE, DIGIT_SCALE), dtype=np.float32))


def word_mask(word: str) -> np.ndarray:
    """Mask of a lowercase word, letters 3 wide and ``5 * LETTER_HEIGHT_SCALE`` tall."""
    bad = sorted({ch for ch in word if ch not in _LETTERS})
    if bad or not word:
        raise ValueError(f"cannot render word {word!r}: only lowercase a-z are drawable")
    glyphs = [np.kron(_bitmap(_LETTERS[ch]), np.ones((LETTER_HEIGHT_SCALE, 1))) for ch in word]
    gap = np.zeros((5 * LETTER_HEIGHT_SCALE, 1), dtype=np.float32)
    parts: list[np.ndarray] = []
    for i, g in enumerate(glyphs):
        if i:
            parts.append(gap)
        parts.append(g.astype(np.float32))
    out = np.concatenate(parts, axis=1)
    if out.shape[1] > IMAGE_SIZE:
        raise ValueError(f"word {word!r} is {out.shape[1]} px wide; at most {IMAGE_SIZE} fit")
    return out


SENTENCE_WORD_GAP = 2  # pixels between the words of a sentence, one pixel between its lines


def sentence_mask(text: str) -> np.ndarray:
    """Mask of a sentence of lowercase words in letters 3 x 5 pixels, wrapped greedily into lines
    at most ``IMAGE_SIZE`` wide (a propositional image of a whole statement)."""
    words = text.split()
    if not words:
        raise ValueError("cannot render an empty sentence")
    glyphs = [word_mask(w)[::LETTER_HEIGHT_SCALE] for w in words]  # letters 5 px tall
    lines: list[list[np.ndarray]] = [[]]
    width = 0
    for g in glyphs:
        extra = g.shape[1] + (SENTENCE_WORD_GAP if lines[-1] else 0)
        if lines[-1] and width + extra > IMAGE_SIZE:
            lines.append([])
            width, extra = 0, g.shape[1]
        lines[-1].append(g)
        width += extra
    height = 6 * len(lines) - 1
    if height > IMAGE_SIZE:
        raise ValueError(f"sentence {text!r} needs {len(lines)} lines; at most 5 fit")
    rows = [
        np.concatenate(
            [
                p
                for i, g in enumerate(line)
                for p in ([np.zeros((5, SENTENCE_WORD_GAP))] if i else []) + [g]
            ],
            axis=1,
        )
        for line in lines
    ]
    out = np.zeros((height, max(r.shape[1] for r in rows)), dtype=np.float32)
    for i, r in enumerate(rows):
        out[6 * i : 6 * i + 5, : r.shape[1]] = r
    return out


def noisy_background(rng: np.random.Generator, sigma: float = NOISE_SIGMA) -> np.ndarray:
    """Grey float canvas ``[H, W, 3]`` with i.i.d. Gaussian pixel noise."""
    return BACKGROUND_GREY + sigma * rng.standard_normal((IMAGE_SIZE, IMAGE_SIZE, 3))


def blend(
    canvas: np.ndarray, mask: np.ndarray, color: str, opacity: float, top: int, left: int
) -> None:
    """Alpha-blend ``color`` through ``mask`` at ``(top, left)``, in place; opacity 0 is a no-op."""
    if color not in COLORS:
        raise ValueError(f"unknown color {color!r}; known colors: {', '.join(COLORS)}")
    h, w = mask.shape
    alpha = (opacity * mask)[..., None]
    rgb = np.asarray(COLORS[color], dtype=np.float64)
    region = canvas[top : top + h, left : left + w]
    region *= 1.0 - alpha
    region += alpha * rgb


def to_image(canvas: np.ndarray) -> Image.Image:
    """Round and clip a float canvas to an RGB PIL image."""
    return Image.fromarray(np.clip(np.rint(canvas), 0, 255).astype(np.uint8), mode="RGB")


@dataclass(frozen=True)
class SceneObject:
    """One drawn object: ``cell`` is an index into :data:`CELLS`, ``offset`` its jitter in pixels."""

    kind: str
    color: str
    cell: int
    opacity: float
    offset: tuple[int, int] = (2, 2)


def render_scene(objects: Sequence[SceneObject], rng: np.random.Generator) -> Image.Image:
    """Draw objects (at most one per cell) over a noisy background."""
    cells = [o.cell for o in objects]
    if len(set(cells)) != len(cells):
        raise ValueError(f"two objects share a cell: {cells}")
    canvas = noisy_background(rng)
    for o in objects:
        row, col = divmod(o.cell, 2)
        top = row * CELL_SIZE + o.offset[0]
        left = col * CELL_SIZE + o.offset[1]
        blend(canvas, shape_mask(o.kind), o.color, o.opacity, top, left)
    return to_image(canvas)


def _render_anywhere(
    mask: np.ndarray, color: str, opacity: float, rng: np.random.Generator
) -> tuple[Image.Image, tuple[int, int]]:
    """Blend ``mask`` at a random position over a noisy background; returns the image and the
    mask's top-left corner."""
    top = int(rng.integers(0, IMAGE_SIZE - mask.shape[0] + 1))
    left = int(rng.integers(0, IMAGE_SIZE - mask.shape[1] + 1))
    canvas = noisy_background(rng)
    blend(canvas, mask, color, opacity, top, left)
    return to_image(canvas), (top, left)


def render_digit(
    digit: int, color: str, opacity: float, rng: np.random.Generator
) -> tuple[Image.Image, tuple[int, int]]:
    """Draw one digit at a random position; returns the image and the glyph's top-left corner."""
    return _render_anywhere(digit_mask(digit), color, opacity, rng)


def render_word(
    word: str, color: str, opacity: float, rng: np.random.Generator
) -> tuple[Image.Image, tuple[int, int]]:
    """Write ``word`` at a random position (a propositional image); returns image and corner."""
    return _render_anywhere(word_mask(word), color, opacity, rng)


def render_sentence(
    text: str, color: str, opacity: float, rng: np.random.Generator
) -> tuple[Image.Image, tuple[int, int]]:
    """Write a sentence (:func:`sentence_mask`) at a random position; returns image and corner."""
    return _render_anywhere(sentence_mask(text), color, opacity, rng)


def trivial_image(kind: str, rng: np.random.Generator) -> Image.Image:
    """An image without information about any entity: ``black``, ``white`` or uniform ``noise``."""
    if kind == "black":
        return Image.new("RGB", (IMAGE_SIZE, IMAGE_SIZE), (0, 0, 0))
    if kind == "white":
        return Image.new("RGB", (IMAGE_SIZE, IMAGE_SIZE), (255, 255, 255))
    if kind == "noise":
        arr = rng.integers(0, 256, size=(IMAGE_SIZE, IMAGE_SIZE, 3), dtype=np.uint8)
        return Image.fromarray(arr, mode="RGB")
    raise ValueError(f"unknown trivial image {kind!r}; choose one of {', '.join(TRIVIAL_IMAGES)}")


__all__ = [
    "CELLS",
    "CELL_SIZE",
    "COLORS",
    "IMAGE_SIZE",
    "NOISE_SIGMA",
    "OBJECT_SIZE",
    "SHAPE_KINDS",
    "TRIVIAL_IMAGES",
    "SceneObject",
    "blend",
    "digit_mask",
    "noisy_background",
    "render_digit",
    "render_scene",
    "render_sentence",
    "render_word",
    "sentence_mask",
    "shape_mask",
    "to_image",
    "trivial_image",
    "word_mask",
]
