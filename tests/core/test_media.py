"""One loader for every media input path: the same content gives the same input however it came.

References: soundfile's own reading of a 16-bit WAV (its PCM scaling), numpy channel means, the
file system's own limit on a name's length, and the demo-omni model's states on a clip cut by
hand to the feature extractor's window.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import soundfile
import torch

import interp
from interp import media
from interp.errors import AudioError, MissingImageError
from interp.samples import Sample, read_jsonl
from interp.testing.checks import OFFLINE_ENV, refused


def _pcm(n: int = 1600, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    pcm = rng.integers(-32768, 32768, size=n, dtype=np.int16)
    pcm[:2] = (-32768, 32767)  # both ends of the range
    return pcm


def test_int16_pcm_scales_as_soundfile_reads_the_same_samples_from_a_wav(tmp_path):
    pcm = _pcm()
    path = tmp_path / "clip.wav"
    soundfile.write(str(path), pcm, 16000, subtype="PCM_16")
    want, _ = soundfile.read(str(path), dtype="float32")  # the reference scaling
    from_array = media.to_audio((pcm, 16000), "a").waveform
    from_file = media.to_audio(path, "a").waveform
    assert from_array[0] == -1.0 and from_array.min() >= -1.0
    np.testing.assert_array_equal(from_array, want)
    np.testing.assert_array_equal(from_file, want)


def test_channels_first_audio_is_averaged_over_its_channels():
    pcm = np.stack([_pcm(seed=1), _pcm(seed=2)]).astype(np.float32) / 32768
    want = (pcm[0] + pcm[1]) / 2
    first = media.to_audio((pcm, 16000), "a")  # torchaudio's channels x samples
    last = media.to_audio((pcm.T.copy(), 16000), "a")  # soundfile's samples x channels
    assert first.waveform.shape == (1600,)
    np.testing.assert_allclose(first.waveform, want, rtol=0, atol=0)
    np.testing.assert_allclose(last.waveform, want, rtol=0, atol=0)
    tensor = media.to_audio((torch.from_numpy(pcm), 16000), "a")
    np.testing.assert_array_equal(tensor.waveform, first.waveform)


def test_a_sample_with_channels_first_audio_is_accepted():
    wave = np.zeros((2, 3200), np.float32)
    s = Sample("what is said? {audio}", audio=(wave, 16000), id="s")
    assert s.load_audios()[0].duration == pytest.approx(0.2)


def test_an_integral_float_rate_is_accepted_and_a_fractional_one_refused():
    wave = np.zeros(1600, np.float32)
    assert media.to_audio((wave, 16000.0), "a").sampling_rate == 16000
    assert isinstance(media.to_audio((wave, np.float64(8000)), "a").sampling_rate, int)
    with refused(AudioError, match="whole number of Hz"):
        media.to_audio((wave, 16000.5), "a")


def test_a_name_longer_than_the_file_system_allows_is_a_missing_image(tmp_path):
    name = "a" * 300 + ".png"
    (tmp_path / "data.jsonl").write_text(json.dumps({"question": "q", "image": name}) + "\n")
    (sample,) = read_jsonl(tmp_path / "data.jsonl")
    with pytest.raises(OSError):  # the reference: the file system refuses the name itself
        (tmp_path / name).stat()
    with refused(MissingImageError, match="longer than the file system allows"):
        sample.load_images()
    try:
        sample.fingerprint()
    except MissingImageError as err:
        assert len(str(err)) < 400  # the name is shown cut, not whole
    else:
        raise AssertionError("expected MissingImageError")


def test_images_audio_and_video_load_in_one_module():
    from interp import samples

    assert samples.load_image is media.load_image
    assert samples.image_digest is media.image_digest
    frames = [np.zeros((4, 4, 3), np.uint8), np.full((4, 4, 3), 255, np.uint8)]
    assert media.to_video(frames, "v").shape == (2, 4, 4, 3)


# -- the feature extractor's window --------------------------------------------------------------


@pytest.fixture(scope="module")
def omni() -> interp.VLM:
    with pytest.MonkeyPatch.context() as mp:
        for key, value in OFFLINE_ENV.items():
            mp.setenv(key, value)
        return interp.load("demo-omni")


def _speech(seconds: float, rate: int = 16000) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (0.3 * np.sin(2 * np.pi * 220 * t) * np.sin(2 * np.pi * 0.7 * t)).astype(np.float32)


def test_a_clip_over_the_window_is_cut_with_a_warning_and_read_only_up_to_it(
    omni, tmp_path, monkeypatch
):
    window = media.audio_window(omni.processor)
    # the reference window: the extractor's own constants
    fe = omni.processor.feature_extractor
    assert window == fe.n_samples / fe.sampling_rate
    long = tmp_path / "long.wav"
    soundfile.write(str(long), _speech(10 * window), 16000, subtype="FLOAT")
    reads: list[int] = []
    real_read = soundfile.read

    def read(*args, **kwargs):
        reads.append(kwargs.get("frames", -1))
        return real_read(*args, **kwargs)

    monkeypatch.setattr(soundfile, "read", read)
    media.truncated_audio(clear=True)
    q = "what is said? {audio}"
    with pytest.warns(media.AudioTruncatedWarning, match=rf"{window:g} s window") as caught:
        got = interp.residual_stream(omni, [Sample(q, audio=long, id="x")], progress_bar=False)
    (cut_note,) = [w for w in caught if w.category is media.AudioTruncatedWarning]
    assert f"first {window:.2f} s are used" in str(cut_note.message)
    assert reads and max(reads) <= int(np.ceil(window * 16000))  # never the whole file
    (note,) = media.truncated_audio(clear=True)
    assert note["window_s"] == window and note["clip_s"] == pytest.approx(10 * window)
    # the reference: the same clip cut by hand to the window, given in memory
    cut = _speech(10 * window)[: int(window * 16000)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", media.AudioTruncatedWarning)  # no warning: it fits
        want = interp.residual_stream(
            omni, [Sample(q, audio=(cut, 16000), id="x")], progress_bar=False
        )
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_a_truncation_is_recorded_in_the_run_manifest(tmp_path, monkeypatch):
    from interp.outputs import MANIFEST, OutputRun

    out = tmp_path / "out"
    out.mkdir()
    run = OutputRun(command="flow", config={}, overwrite=False, out_arg=str(out))
    staging = run.stage(out)
    (staging / "summary.txt").write_text("x")
    note = {"sample": "x", "input": 0, "window_s": 2.0, "used_s": 2.0, "clip_s": 20.0}
    monkeypatch.setattr(media, "_TRUNCATED", [note])
    run.commit()
    assert json.loads((out / MANIFEST).read_text())["audio_truncated"] == [note]


def test_a_manifest_without_truncation_has_no_such_key(tmp_path, monkeypatch):
    from interp.outputs import MANIFEST, OutputRun

    out = tmp_path / "out"
    out.mkdir()
    run = OutputRun(command="flow", config={}, overwrite=False, out_arg=str(out))
    (run.stage(out) / "summary.txt").write_text("x")
    monkeypatch.setattr(media, "_TRUNCATED", [])
    run.commit()
    assert "audio_truncated" not in json.loads((out / MANIFEST).read_text())


def test_the_wav_header_is_checked_without_reading_the_samples(tmp_path):
    bad = tmp_path / "bad.wav"
    bad.write_bytes(b"RIFF\x00\x00\x00\x00WAVEjunk")
    with refused(AudioError, match="cannot read audio"):
        media.audio_header(Path(bad), "s")
    good = tmp_path / "good.wav"
    soundfile.write(str(good), _speech(0.5, 8000), 8000)
    assert media.audio_header(good, "s") == (8000, 4000)
