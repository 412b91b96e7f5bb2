"""Real video files read through PyAV (the ``video`` extra): short clips written losslessly with
PyAV itself come back as exactly the frames written; a missing or corrupt file is a typed
error; a video given as a file runs as the same frames given as an array."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import interp
from interp.errors import MissingVideoError, VideoError
from interp.testing import shared_tiny_vlm

av = pytest.importorskip("av", reason="PyAV (the 'video' extra) is not installed")

# (file name, codec, pixel format): two lossless encodings PyAV's FFmpeg carries
LOSSLESS = [("clip.mkv", "ffv1", "bgr0"), ("clip.mov", "png", "rgb24")]


def frames(n: int = 4, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (n, 32, 32, 3), dtype=np.uint8)


def write(path: Path, video: np.ndarray, codec: str, pix_fmt: str) -> Path:
    """Encode ``video`` (T×H×W×3 RGB uint8) with PyAV at 8 frames per second."""
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream(codec, rate=8)
        stream.width, stream.height = video.shape[2], video.shape[1]
        stream.pix_fmt = pix_fmt
        for rgb in video:
            frame = av.VideoFrame.from_ndarray(rgb, format="rgb24").reformat(format=pix_fmt)
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():  # flush
            container.mux(packet)
    return path


@pytest.mark.parametrize(("name", "codec", "pix_fmt"), LOSSLESS)
def test_a_lossless_video_file_reads_back_as_the_frames_written(tmp_path, name, codec, pix_fmt):
    video = frames()
    path = write(tmp_path / name, video, codec, pix_fmt)
    sample = interp.Sample("what happens ?", video=str(path), id="f")
    got = sample.load_videos()[0]
    assert got.dtype == np.uint8 and got.shape == video.shape
    np.testing.assert_array_equal(got, video)
    # the same clip as a Path, and its fingerprint follows the file's bytes
    assert np.array_equal(interp.Sample("q", video=path).load_videos()[0], video)
    other = write(tmp_path / ("other" + path.suffix), frames(seed=1), codec, pix_fmt)
    assert (
        sample.fingerprint() != interp.Sample("what happens ?", video=other, id="f").fingerprint()
    )


def test_missing_and_corrupt_files_are_typed_errors(tmp_path):
    with pytest.raises(MissingVideoError, match="video file not found"):
        interp.Sample("q", video=str(tmp_path / "absent.mkv"), id="m").load_videos()
    corrupt = tmp_path / "corrupt.mkv"
    corrupt.write_bytes(np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    with pytest.raises(VideoError, match="cannot decode video") as err:
        interp.Sample("q", video=str(corrupt), id="c").load_videos()
    assert not isinstance(err.value, MissingVideoError)
    # a file whose only stream is audio has no video frames to give
    silent = tmp_path / "audio_only.wav"
    with av.open(str(silent), mode="w") as container:
        stream = container.add_stream("pcm_s16le", rate=8000, layout="mono")
        frame = av.AudioFrame.from_ndarray(
            np.zeros((1, 800), np.int16), format="s16", layout="mono"
        )
        frame.sample_rate = 8000
        for packet in [*stream.encode(frame), *stream.encode()]:
            container.mux(packet)
    with pytest.raises(VideoError):
        interp.Sample("q", video=str(silent), id="s").load_videos()


def test_a_video_file_runs_as_its_frames(tmp_path):
    vlm = shared_tiny_vlm("qwen2_vl")
    video = frames(4, seed=2)
    path = write(tmp_path / "clip.mkv", video, "ffv1", "bgr0")
    from_file = interp.residual_stream(
        vlm, [interp.Sample("what happens ?", video=str(path), id="f")], progress_bar=False
    )
    from_array = interp.residual_stream(
        vlm, [interp.Sample("what happens ?", video=video, id="f")], progress_bar=False
    )
    torch.testing.assert_close(from_file, from_array, atol=0, rtol=0)
