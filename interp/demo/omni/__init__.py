"""``demo-omni``: a small Qwen2.5-Omni thinker (image + audio + video) trained on the demo world v3.

``CHECKPOINT_DIR`` is where ``make train-demo-omni`` (``python -m interp.demo.omni.train``) writes
the checkpoint that ``interp.load("demo-omni")`` reads; see :mod:`interp.demo.omni.model` for the
architecture and processor and :mod:`interp.demo.omni.train` for the recipe.
"""

from pathlib import Path

CHECKPOINT_DIR: Path = Path(__file__).resolve().parent / "checkpoint"

__all__ = ["CHECKPOINT_DIR"]
