"""``demo-smol``: the demo world seen through a real pretrained language model (SmolLM2-135M).

Only the trained parts ship (``checkpoint/``); see :mod:`interp.demo.smol.model`.
"""

from pathlib import Path

CHECKPOINT_DIR: Path = Path(__file__).resolve().parent / "checkpoint"
TRAINED_FILE = "trained.safetensors"

__all__ = ["CHECKPOINT_DIR", "TRAINED_FILE"]
