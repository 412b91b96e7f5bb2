"""Audio and video in samples, prompts and conditions (no model forward): accepted forms, typed
errors, content fingerprints, prompt content items, and each audio/video condition against a
numpy/scipy reference written here."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile
from scipy.signal import resample_poly

import interp
from interp.adapters import chat_content
from interp.conditions import Condition, condition_sources, prepare
from interp.errors import (
    AudioError,
    ConditionError,
    MissingAudioError,
    MissingExtraError,
    MissingVideoError,
    ModalityError,
    VideoError,
)
from interp.media import Audio, to_audio
from interp.testing.tolerance import PCM16_STEP, approx_close

RATE = 16000


def tone(seconds: float = 0.5, rate: int = RATE, freq: float = 440.0) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (0.3 * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def clip(frames: int = 6, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (frames, 8, 12, 3), dtype=np.uint8)


class FakeProcessor:
    """What conditions read from a processor: the audio rate and the normalisation mean."""

    class feature_extractor:  # noqa: N801
        sampling_rate = RATE

    class image_processor:  # noqa: N801
        image_mean = (0.5, 0.25, 0.0)
        size = {"height": 16, "width": 16}


# -- samples -------------------------------------------------------------------------------------


def test_audio_forms_agree(tmp_path):
    wave = tone()
    wav, flac = tmp_path / "a.wav", tmp_path / "a.flac"
    soundfile.write(wav, wave, RATE, subtype="FLOAT")
    soundfile.write(flac, wave, RATE)  # 16-bit PCM
    pair = interp.Sample("q", audio=(wave, RATE)).load_audios()[0]
    obj = interp.Sample("q", audio=Audio(wave, RATE)).load_audios()[0]
    from_wav = interp.Sample("q", audio=wav).load_audios()[0]
    from_flac = interp.Sample("q", audio=str(flac)).load_audios()[0]
    for a in (pair, obj, from_wav, from_flac):
        assert a.sampling_rate == RATE and a.waveform.dtype == np.float32
    np.testing.assert_array_equal(pair.waveform, wave)
    np.testing.assert_array_equal(from_wav.waveform, wave)
    # the 16-bit file holds the float tone to its quantisation: half a step of rounding, plus
    # max|x| = 0.3 of a step should the writer scale by 32767 where the reader divides by 32768
    approx_close(from_flac.waveform, wave, PCM16_STEP, why="16-bit PCM quantisation")
    # stereo (samples x channels) is averaged; int16 PCM is scaled by 32768, as soundfile reads
    # a 16-bit file (tests/core/test_media.py holds the file-vs-array check)
    stereo = np.stack([wave, -wave * 0 + wave], axis=1)
    # both exact: the mean of two equal float32 channels is the channel; q / 32768 of an int16 q
    # is exact in float32 (at most 16 significant bits, a power-of-two divisor)
    np.testing.assert_array_equal(to_audio((stereo, RATE)).waveform, wave)
    pcm = (wave * 32767).astype(np.int16)
    np.testing.assert_array_equal(to_audio((pcm, RATE)).waveform, pcm / 32768)


def test_resampling_is_scipy_resample_poly():
    wave = tone(rate=44100)
    got = interp.Sample("q", audio=(wave, 44100)).load_audios(RATE)[0]
    ref = resample_poly(wave, 160, 441)  # 16000/44100 reduced
    assert got.sampling_rate == RATE
    np.testing.assert_array_equal(got.waveform, ref)  # the same resampler on the same float32


@pytest.mark.parametrize(
    ("audio", "error"),
    [
        ((np.zeros((2, 3, 4), np.float32), RATE), AudioError),  # 3-D
        ((np.zeros(0, np.float32), RATE), AudioError),  # empty
        ((np.array(["a", "b"]), RATE), AudioError),  # not numbers
        ((np.array([0.0, np.nan], np.float32), RATE), AudioError),
        ((np.zeros(10, np.float32), 0), AudioError),  # bad rate
        ("sound.mp3", AudioError),  # not WAV/FLAC
        (42, AudioError),
    ],
)
def test_bad_audio_is_refused_when_the_sample_is_made(audio, error):
    with pytest.raises(error, match="Sample 'x'"):
        interp.Sample("q", audio=audio, id="x")


def test_missing_audio_file_is_named(tmp_path):
    s = interp.Sample("q", audio=tmp_path / "none.wav", id="x")  # checked when read
    with pytest.raises(MissingAudioError, match="none.wav"):
        s.load_audios()


def test_video_forms_and_errors(tmp_path):
    frames = clip()
    as_list = interp.Sample("q", video=list(frames)).load_videos()[0]
    np.testing.assert_array_equal(as_list, frames)
    assert interp.Sample("q", video=frames).n_video == 1
    assert interp.Sample("q", video=[frames, clip(3, 1)]).n_video == 2
    with pytest.raises(VideoError, match="uint8"):
        interp.Sample("q", video=frames.astype(np.float32) / 255)
    with pytest.raises(VideoError, match="T×H×W×3"):
        interp.Sample("q", video=frames[..., 0])
    with pytest.raises(VideoError, match="one size"):
        interp.Sample("q", video=[frames[0], frames[0, :4]])
    with pytest.raises(MissingVideoError):
        interp.Sample("q", video=tmp_path / "none.mp4").load_videos()
    movie = tmp_path / "clip.mp4"
    movie.write_bytes(b"\x00" * 16)
    try:
        import av  # noqa: F401
    except ImportError:
        with pytest.raises(MissingExtraError, match="pip install av"):
            interp.Sample("q", video=movie).load_videos()


def test_slots_must_match_the_inputs():
    with pytest.raises(ModalityError, match="2 '\\{audio\\}' slot\\(s\\) for 1 audio"):
        interp.Sample("hear {audio} and {audio}", audio=(tone(), RATE))
    with pytest.raises(ModalityError, match="video"):
        interp.Sample("watch {video}", video=None)
    ok = interp.Sample("hear {audio} then {video}", audio=(tone(), RATE), video=clip())
    assert (ok.n_audio, ok.n_video) == (1, 1)


def test_fingerprints_cover_audio_and_video_content():
    base = interp.Sample("q", id="a")
    with_audio = interp.Sample("q", id="a", audio=(tone(), RATE))
    other_audio = interp.Sample("q", id="a", audio=(tone(freq=880.0), RATE))
    same_audio = interp.Sample("q", id="a", audio=Audio(tone(), RATE))
    with_video = interp.Sample("q", id="a", video=clip())
    other_video = interp.Sample("q", id="a", video=clip(seed=1))
    keys = [s.fingerprint() for s in (base, with_audio, other_audio, with_video, other_video)]
    assert len(set(keys)) == 5
    assert same_audio.fingerprint() == with_audio.fingerprint()


# -- prompt content ------------------------------------------------------------------------------


def test_chat_content_places_audio_and_video():
    assert chat_content("what {audio} and {video} ?", 0, 1, 1) == [
        {"type": "text", "text": "what"},
        {"type": "audio"},
        {"type": "text", "text": "and"},
        {"type": "video"},
        {"type": "text", "text": "?"},
    ]
    # without slots: images, videos, audio first, then the text
    assert chat_content("say it", 1, 1, 1) == [
        {"type": "image"},
        {"type": "video"},
        {"type": "audio"},
        {"type": "text", "text": "say it"},
    ]
    # a kind whose slots do not match goes first; the other keeps its place
    assert chat_content("a {image} b {audio} c", 1, 0, 0) == [
        {"type": "text", "text": "a"},
        {"type": "image"},
        {"type": "text", "text": "b c"},
    ]


# -- conditions ----------------------------------------------------------------------------------


def test_conditions_parse_compose_and_print():
    c = Condition.parse("blind+no_audio+no_question")
    assert str(c) == "blind+no_audio+no_question" and not c.uses_audio and not c.uses_image
    assert str(Condition.parse("frames:4+null_audio:silence")) == "full+null_audio:silence+frames:4"
    names = [
        "full",
        "no_audio",
        "null_audio:silence",
        "null_audio:noise",
        "null_audio:mean",
        "swap_audio:next",
        "distort_audio:10",
        "distort_audio:0",
        "no_video",
        "null_video:black",
        "null_video:mean",
        "frames:2",
        "frames:3",
        "shuffle_frames",
        "still:0",
        "still:1",
    ]
    assert len({str(Condition.parse(n)) for n in names}) == len(names)
    for bad in ("null_audio:loud", "frames:0", "still:-1", "no_audio+null_audio:silence"):
        with pytest.raises(ConditionError):
            Condition.parse(bad)


def _prep(samples, condition):
    return prepare(samples, condition, FakeProcessor(), all_samples=samples)


def test_audio_conditions_against_numpy():
    a = interp.Sample("hear {audio} now", audio=(tone(rate=8000), 8000), id="a")
    b = interp.Sample("q", audio=(tone(freq=880.0), RATE), id="b")
    up = resample_poly(tone(rate=8000), 2, 1)  # 8 kHz -> the processor's 16 kHz
    full = _prep([a, b], "full")[0]
    np.testing.assert_array_equal(full.audios[0].waveform, up)  # the same resampler: bit for bit
    removed = _prep([a], "no_audio")[0]
    assert removed.audios == [] and removed.sample.question == "hear now"
    silence = _prep([a], "null_audio:silence")[0].audios[0]
    assert silence.sampling_rate == RATE and len(silence.waveform) == len(up)
    assert not silence.waveform.any()
    mean = _prep([a], "null_audio:mean")[0].audios[0].waveform
    np.testing.assert_allclose(mean, resample_poly(np.full(4000, tone(rate=8000).mean()), 2, 1))
    n1, n2 = (_prep([a], "null_audio:noise")[0].audios[0].waveform for _ in range(2))
    np.testing.assert_array_equal(n1, n2)  # seeded by the sample id
    assert 0.08 < n1.std() < 0.12
    swapped = _prep([a, b], "swap_audio:next")
    np.testing.assert_array_equal(swapped[0].audios[0].waveform, tone(freq=880.0))
    assert condition_sources(a, "swap_audio:next", [a, b]) == [b]
    long = interp.Sample("q", audio=(tone(seconds=4.0), RATE), id="c")
    noisy = _prep([long], "distort_audio:10")[0].audios[0].waveform
    clean = tone(seconds=4.0)
    snr = 10 * np.log10(np.mean(clean**2) / np.mean((noisy - clean) ** 2))
    assert abs(snr - 10) < 0.2
    with pytest.raises(AudioError, match="needs audio"):
        _prep([interp.Sample("q", id="d")], "distort_audio:10")


def test_video_conditions_against_numpy():
    frames = clip(6)
    v = interp.Sample("watch {video} here", video=frames, id="v")
    w = interp.Sample("q", video=clip(4, seed=3), id="w")
    np.testing.assert_array_equal(_prep([v], "frames:3")[0].videos[0], frames[[0, 2, 5]])
    np.testing.assert_array_equal(_prep([v], "frames:6")[0].videos[0], frames)
    still = _prep([v], "still:2")[0].videos[0]
    assert still.shape == frames.shape and (still == frames[2]).all()
    shuffled = _prep([v], "shuffle_frames")[0].videos[0]
    order = [int(np.flatnonzero((frames == f).all(axis=(1, 2, 3)))[0]) for f in shuffled]
    assert sorted(order) == list(range(6)) and order != list(range(6))
    again = _prep([v], "shuffle_frames")[0].videos[0]
    np.testing.assert_array_equal(shuffled, again)
    other = interp.Sample("q", video=frames, id="v2")
    assert not np.array_equal(_prep([other], "shuffle_frames")[0].videos[0], shuffled)
    black = _prep([v], "null_video:black")[0].videos[0]
    assert black.shape == frames.shape and not black.any()
    mean = _prep([v], "null_video:mean")[0].videos[0]
    assert (mean == np.array([128, 64, 0], np.uint8)).all()
    gone = _prep([v], "no_video")[0]
    assert gone.videos == [] and gone.sample.question == "watch here"
    np.testing.assert_array_equal(_prep([v, w], "swap_video:next")[0].videos[0], clip(4, seed=3))
    with pytest.raises(VideoError, match="frames:9"):
        _prep([v], "frames:9")
    with pytest.raises(VideoError, match="still:6"):
        _prep([v], "still:6")


def test_a_sample_without_audio_or_video_gets_one_null_input():
    s = interp.Sample("q", id="t")
    silence = _prep([s], "null_audio:silence")[0].audios
    assert len(silence) == 1 and silence[0].sampling_rate == RATE
    assert len(silence[0].waveform) == RATE and not silence[0].waveform.any()
    black = _prep([s], "null_video:black")[0].videos
    assert len(black) == 1 and black[0].shape == (4, 16, 16, 3)


def test_image_family_refuses_audio_before_compute():
    vlm = interp.testing.tiny_vlm("llava")
    sample = interp.Sample("q", audio=(tone(), RATE), id="a")
    with pytest.raises(ModalityError, match="llava takes image inputs, not audio"):
        interp.residual_stream(vlm, [sample], progress_bar=False)
    # dropping the audio with a condition runs
    states = interp.residual_stream(vlm, [sample], "no_audio", progress_bar=False)
    assert states.shape[0] == 1
