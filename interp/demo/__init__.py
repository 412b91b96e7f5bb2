"""The embedded demo VLM: a small Llava trained on the demo world (ships with the project).

``CHECKPOINT_DIR`` holds the HF-format checkpoint (``AutoModelForImageTextToText`` /
``AutoProcessor`` load it offline). ``make train-demo`` reproduces it from a seed and
``make evaluate-demo`` prints its evaluation table: the training and evaluation code is the
repository's ``tools/demo/``, not part of the installed package.
"""

from pathlib import Path

CHECKPOINT_DIR: Path = Path(__file__).resolve().parent / "checkpoint"

__all__ = ["CHECKPOINT_DIR"]
