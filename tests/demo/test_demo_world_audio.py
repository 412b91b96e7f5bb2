"""World v3 audio: the kinds' synthetic sounds are learnable, the shipped speech clips are intact."""

from __future__ import annotations

import hashlib
import itertools

import numpy as np
import pytest
import soundfile
from scipy import signal
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from interp.datasets.render import SHAPE_KINDS
from interp.datasets.world.audio import object_sound
from interp.datasets.world.speech import (
    CLIP_DIR,
    MANIFEST,
    SPEECH_PHRASINGS,
    SPEECH_VOICES,
    speech_clip,
    speech_manifest,
)
from interp.testing.tolerance import approx_close


def _features(waveform: np.ndarray, rate: int) -> np.ndarray:
    """Log band energies of a scipy spectrogram: per band mean, spread, frame-to-frame change and
    second-half minus first-half level (a rising sweep from a falling one), loudness removed."""
    f, _, power = signal.spectrogram(
        waveform.astype(np.float64), fs=rate, nperseg=512, noverlap=256
    )
    edges = np.geomspace(50, 8000, 25)
    bands = np.stack([power[(f >= lo) & (f < hi)].sum(0) for lo, hi in itertools.pairwise(edges)])
    logs = np.log(bands + 1e-10)
    logs -= logs.mean()
    half = logs.shape[1] // 2
    trend = logs[:, half:].mean(1) - logs[:, :half].mean(1)
    loudest = logs.max(0)
    change = np.abs(np.diff(logs, axis=1)).mean(1)
    summary = [loudest.std(), np.abs(np.diff(loudest)).mean()]
    return np.concatenate([logs.mean(1), logs.std(1), change, trend, summary])


def _draws(seed: int, per_kind: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x, y = [], []
    for _ in range(per_kind):
        for kind in SHAPE_KINDS:
            a = object_sound(kind, rng)
            x.append(_features(a.waveform, a.sampling_rate))
            y.append(kind)
    return np.array(x), np.array(y)


def test_object_sounds_are_separable_on_held_out_draws() -> None:
    x_train, y_train = _draws(11, 25)
    x_test, y_test = _draws(12, 15)  # other pitches, durations, loudness and noise
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=3000))
    model.fit(x_train, y_train)
    accuracy = float(np.mean(model.predict(x_test) == y_test))
    assert accuracy >= 0.95, accuracy


def test_object_sounds_vary_and_are_seeded() -> None:
    rng = np.random.default_rng(0)
    sounds = [object_sound("banana", rng) for _ in range(6)]
    durations = {round(a.duration, 3) for a in sounds}
    peaks = [float(np.abs(a.waveform).max()) for a in sounds]
    assert len(durations) == 6 and all(0.6 <= d <= 1.2 for d in durations)
    assert max(peaks) - min(peaks) > 0.1  # loudness varies
    for a in sounds:
        assert a.sampling_rate == 16000 and a.waveform.dtype == np.float32 and a.waveform.ndim == 1
    again = object_sound("banana", np.random.default_rng(0))
    assert np.array_equal(again.waveform, sounds[0].waveform)
    with pytest.raises(ValueError, match="known kinds"):
        object_sound("trumpet", rng)


def test_every_manifest_clip_is_shipped_intact() -> None:
    clips = speech_manifest()
    combos = {(c["kind"], c["phrasing"], c["voice"], c["speed"]) for c in clips}
    expected = {
        (k, p, v, s)
        for k in SHAPE_KINDS
        for p in range(len(SPEECH_PHRASINGS))
        for v, s in SPEECH_VOICES
    }
    assert combos == expected and len(clips) == len(expected)
    total = 0
    for c in clips:
        path = CLIP_DIR / c["file"]
        data = path.read_bytes()
        assert hashlib.sha256(data).hexdigest() == c["sha256"], c["file"]
        total += len(data)
        assert c["text"] == SPEECH_PHRASINGS[c["phrasing"]].format(kind=c["kind"])
        info = soundfile.info(str(path))
        assert (info.samplerate, info.channels, info.format) == (16000, 1, "FLAC")
        approx_close(
            info.duration, c["seconds"], 5e-4, why="the manifest rounds seconds to 3 decimals"
        )
    assert total <= 3_000_000
    assert {p.name for p in CLIP_DIR.iterdir()} == {c["file"] for c in clips} | {MANIFEST.name}


def test_speech_clip_picks_by_kind_phrasing_and_voice() -> None:
    audio, entry = speech_clip("leaf", np.random.default_rng(0), phrasing=1, voice=2)
    assert entry["text"] == "there is a leaf here"
    assert (entry["voice"], entry["speed"]) == SPEECH_VOICES[2]
    clean, rate = soundfile.read(str(CLIP_DIR / entry["file"]), dtype="float64")
    assert rate == audio.sampling_rate == 16000 and len(clean) == len(audio.waveform)
    corr = np.corrcoef(clean, audio.waveform.astype(np.float64))[0, 1]
    assert corr > 0.5  # the clip, scaled, under background noise
    assert not np.allclose(clean, audio.waveform)
    with pytest.raises(ValueError, match="no speech clip"):
        speech_clip("leaf", np.random.default_rng(0), phrasing=len(SPEECH_PHRASINGS), voice=0)
