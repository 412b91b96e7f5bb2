"""The embedded demo VLM: a small Llava trained on the demo world (ships with the project).

``CHECKPOINT_DIR`` holds the HF-format checkpoint (``AutoModelForImageTextToText`` /
``AutoProcessor`` load it offline). ``python -m interp.demo.train`` reproduces it from a seed and
``python -m interp.demo.evaluate`` prints its evaluation table.
"""

from pathlib import Path

CHECKPOINT_DIR: Path = Path(__file__).resolve().parent / "checkpoint"

__all__ = ["CHECKPOINT_DIR"]
