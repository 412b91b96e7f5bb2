"""Audio and video columns of tabular data (``read_dataset`` / ``--data`` with ``--columns
audio=...,video=...``). The reference is what the test wrote: the waveform soundfile reads back from
the wav file, the ``{array, sampling_rate}`` values, the frames saved as ``.npy`` or a list column."""

from __future__ import annotations

import io

import datasets
import numpy as np
import pandas as pd
import pytest
import soundfile

import interp
from interp.cli import main
from interp.errors import (
    AudioError,
    MissingAudioError,
    MissingColumnError,
    MissingVideoError,
    VideoError,
)

RATE = 16000


def wave(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-0.5, 0.5, n).astype(np.float32)


def frames(t: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (t, 8, 10, 3), dtype=np.uint8)


@pytest.fixture
def media(tmp_path):
    """A parquet file with a wav-path audio column, an {array, sampling_rate} column, a .npy
    video-path column and a nested-list frames column; files relative to the data folder."""
    (tmp_path / "clips").mkdir()
    soundfile.write(tmp_path / "clips" / "a0.wav", wave(3200, 0), RATE, subtype="FLOAT")
    soundfile.write(tmp_path / "clips" / "a1.flac", (wave(2400, 1) * 32767).astype(np.int16), 8000)
    np.save(tmp_path / "clips" / "v0.npy", frames(3, 0))
    rows = pd.DataFrame(
        {
            "question": ["what is heard ?", "and here ?", "no media"],
            "sound": ["clips/a0.wav", "clips/a1.flac", None],
            "decoded": [
                {"array": wave(1000, 2).tolist(), "sampling_rate": 22050},
                None,
                {"array": wave(500, 3).tolist(), "sampling_rate": RATE},
            ],
            "clip": ["clips/v0.npy", None, None],
            "pixels": [frames(2, 1).tolist(), None, frames(4, 2).tolist()],
            "kind": ["x", "y", "z"],
        }
    )
    path = tmp_path / "data.parquet"
    rows.to_parquet(path)
    return path


def test_audio_paths_and_npy_videos_read_back(media):
    samples = interp.read_dataset(media, columns="audio=sound,video=clip")
    a0, a1, text = samples
    (got,) = a0.load_audios()
    ref, rate = soundfile.read(media.parent / "clips" / "a0.wav", dtype="float32")
    assert got.sampling_rate == rate == RATE
    np.testing.assert_array_equal(got.waveform, ref)
    (got1,) = a1.load_audios()
    ref1, rate1 = soundfile.read(media.parent / "clips" / "a1.flac", dtype="float32")
    assert got1.sampling_rate == rate1 == 8000
    np.testing.assert_array_equal(got1.waveform, ref1)  # the same decoder: bit for bit
    np.testing.assert_array_equal(a0.load_videos()[0], frames(3, 0))
    assert not a1.has_video and not text.has_audio and not text.has_video
    # the media columns are not labels; the others are
    assert "sound" not in a0.meta and "clip" not in a0.meta and a0.meta["kind"] == "x"


def test_decoded_audio_dicts_and_frame_lists(media):
    samples = interp.read_dataset(media, columns="audio=decoded,video=pixels")
    (got,) = samples[0].load_audios()
    assert got.sampling_rate == 22050
    np.testing.assert_array_equal(got.waveform, wave(1000, 2))
    assert not samples[1].has_audio and not samples[1].has_video
    np.testing.assert_array_equal(samples[0].load_videos()[0], frames(2, 1))
    np.testing.assert_array_equal(samples[2].load_videos()[0], frames(4, 2))
    # resampled to a model's rate on demand
    assert len(samples[0].load_audios(RATE)[0].waveform) == round(1000 * RATE / 22050)


def test_datasets_audio_feature_bytes(tmp_path):
    """The ``datasets`` Audio feature as stored (``{bytes, path}``), read from a saved folder."""
    buf = io.BytesIO()
    soundfile.write(buf, wave(1600, 4), RATE, format="WAV", subtype="FLOAT")
    ds = datasets.Dataset.from_dict(
        {"question": ["q"], "audio": [{"bytes": buf.getvalue(), "path": None}]}
    ).cast_column("audio", datasets.Audio())  # arrow storage cast: no audio codec needed
    assert type(ds.features["audio"]).__name__ == "Audio"
    ds.save_to_disk(tmp_path / "ds")
    (sample,) = interp.read_dataset(tmp_path / "ds")  # the default column name 'audio'
    (got,) = sample.load_audios()
    assert got.sampling_rate == RATE
    np.testing.assert_array_equal(got.waveform, wave(1600, 4))


def _table(tmp_path, **columns):
    path = tmp_path / "bad.parquet"
    pd.DataFrame({"question": ["q"] * len(next(iter(columns.values()))), **columns}).to_parquet(
        path
    )
    return path


@pytest.mark.parametrize(
    "column,cell,error,words",
    [
        ("audio", "clip.mp3", AudioError, "WAV or FLAC"),
        ("audio", "absent.wav", MissingAudioError, "absent.wav"),
        ("audio", [0.1, 0.2, 0.3], AudioError, "sampling rate"),
        ("audio", {"array": [0.1, 0.2], "sampling_rate": -5}, AudioError, "sampling rate"),
        ("video", "absent.mp4", MissingVideoError, "absent.mp4"),
        ("video", [[[1, 2, 3]]], VideoError, "T×H×W×3"),
        ("video", [[[[1, 2, 300]]]], VideoError, "0..255"),
    ],
)
def test_bad_cells_are_typed_errors_naming_the_row(tmp_path, column, cell, error, words):
    path = _table(tmp_path, **{column: [None, cell]})
    with pytest.raises(error, match="row 1") as info:
        interp.read_dataset(path)
    assert words in str(info.value)


def test_cli_names_a_missing_media_column(media, capsys):
    argv = ["coe", "--model", "demo", "--data", str(media), "--columns", "audio=nope"]
    assert main([*argv, "--out", str(media.parent / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "'nope'" in err[0]
    with pytest.raises(MissingColumnError):
        interp.read_dataset(media, columns="video=nope")
