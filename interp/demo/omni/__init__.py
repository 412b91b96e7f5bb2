"""``demo-omni``: a small Qwen2.5-Omni thinker (image + audio + video) trained on the demo world v3.

``CHECKPOINT_DIR`` holds the shipped checkpoint that ``interp.load("demo-omni")`` reads (written by
``make train-demo-omni``, the repository's ``tools/demo/omni/train.py``; its model card is the
folder's ``README.md``); ``CONTROL_DIR`` the control model (``interp.load("demo-omni-control")``), trained
the same way except that both audio forms carry the spoken sentence's trust, so it has no
perceptual / propositional asymmetry in audio. See :mod:`interp.demo.omni.model` for the
architecture and processor and the model card for the recipe.
"""

from pathlib import Path

CHECKPOINT_DIR: Path = Path(__file__).resolve().parent / "checkpoint"
CONTROL_DIR: Path = Path(__file__).resolve().parent / "control"

__all__ = ["CHECKPOINT_DIR", "CONTROL_DIR"]
