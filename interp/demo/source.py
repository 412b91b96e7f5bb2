"""The demo models as a model source (:mod:`interp.sources`), registered in ``pyproject.toml``
as ``demo = "interp.demo.source:SOURCE"``.

Its names: ``demo`` (the embedded Llava, :data:`interp.demo.CHECKPOINT_DIR`), ``demo-omni`` and
``demo-omni-control`` (the Qwen2.5-Omni thinker and its control, :mod:`interp.demo.omni`), and
``demo-smol`` (assembled once from SmolLM2's installed weights and the shipped trained parts,
:mod:`interp.demo.smol.assemble`). A folder holding a Qwen2.5-Omni processor saved without a
video processor (as ``demo-omni``'s training writes it) gets its processor from
:func:`interp.demo.omni.model.load_processor`, wherever the folder is.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ModelNotFoundError

NAMES = ("demo", "demo-omni", "demo-omni-control", "demo-smol")


@dataclass(frozen=True)
class DemoSource:
    """The demo models (see the module docstring)."""

    name: str = "demo"

    def resolves(self, name: str) -> bool:
        return name in NAMES

    def locate(self, name: str) -> str:
        """The demo model's folder.

        Raises:
            ModelNotFoundError: ``demo-omni`` / ``demo-omni-control`` has no trained checkpoint
                in this install; ``demo-smol`` cannot be assembled (its extra or SmolLM2's
                weights are missing).
        """
        if name == "demo":
            from . import CHECKPOINT_DIR

            return str(CHECKPOINT_DIR)
        if name in ("demo-omni", "demo-omni-control"):
            from .omni import CHECKPOINT_DIR, CONTROL_DIR

            folder = CHECKPOINT_DIR if name == "demo-omni" else CONTROL_DIR
            if not (folder / "config.json").is_file():
                raise ModelNotFoundError(
                    f"{name} has no trained checkpoint in this install (expected in {folder}); "
                    "train it with `make train-demo-omni` (the repository's tools/demo/omni/train.py)"
                )
            return str(folder)
        if name == "demo-smol":
            from .smol.assemble import assemble

            return str(assemble())
        raise ModelNotFoundError(f"{name!r} is not a demo model (the demo models: {NAMES})")

    def processor(self, folder: Path) -> Any | None:
        """``demo-omni``'s processor when ``folder`` holds one saved without a video processor
        (``AutoProcessor`` cannot read it without torchvision), else None."""
        saved = folder / "processor_config.json"
        if not (saved.is_file() and '"Qwen2_5OmniProcessor"' in saved.read_text()):
            return None
        from .omni.model import is_frames_omni_folder, load_processor

        return load_processor(folder) if is_frames_omni_folder(folder) else None


SOURCE = DemoSource()

__all__ = ["NAMES", "SOURCE", "DemoSource"]
