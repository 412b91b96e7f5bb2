"""Render the demo world's spoken statements with espeak-ng (run once; the clips ship).

``python -m interp.datasets.world.speech_render`` renders every clip described in
:mod:`interp.datasets.world.speech` into its ``speech_clips/`` folder and rewrites the manifest
(needs ``espeak-ng`` on the PATH, e.g. ``apt-get install espeak-ng``); ``--check`` only prints the
shipped clips' count and size. Nothing else imports this module: generating the world reads the
shipped clips.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import soundfile
from scipy.signal import resample_poly

from ..render import SHAPE_KINDS
from .audio import SAMPLE_RATE
from .speech import CLIP_DIR, SPEECH_PHRASINGS, SPEECH_VOICES, speech_manifest

_TRIM = 0.01  # silence: samples below this share of the peak, trimmed at both ends
_PEAK = 0.9
_SUBTYPE = "PCM_S8"


def _espeak(text: str, voice: str, speed: int, exe: str) -> np.ndarray:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "clip.wav"
        subprocess.run([exe, "-v", voice, "-s", str(speed), "-w", str(out), text], check=True)
        data, rate = soundfile.read(str(out), dtype="float64", always_2d=False)
    data = resample_poly(data, SAMPLE_RATE, rate) if rate != SAMPLE_RATE else data
    loud = np.flatnonzero(np.abs(data) >= _TRIM * np.max(np.abs(data)))
    data = data[loud[0] : loud[-1] + 1]
    return (data * (_PEAK / np.max(np.abs(data)))).astype(np.float32)


def render_clips(out_dir: Path = CLIP_DIR) -> list[dict[str, Any]]:
    """Render every clip with espeak-ng into ``out_dir`` and write its ``manifest.json``.

    Raises:
        FileNotFoundError: espeak-ng is not installed.
    """
    exe = shutil.which("espeak-ng")
    if exe is None:
        raise FileNotFoundError(
            "espeak-ng is not on the PATH; install it (apt-get install espeak-ng)"
        )
    version = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout.strip()
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("*.flac"):
        old.unlink()
    clips = []
    for kind in SHAPE_KINDS:
        for p, phrasing in enumerate(SPEECH_PHRASINGS):
            for voice, speed in SPEECH_VOICES:
                text = phrasing.format(kind=kind)
                data = _espeak(text, voice, speed, exe)
                name = f"{kind}-{p}-{voice.replace('+', '_')}-{speed}.flac"
                soundfile.write(
                    str(out_dir / name), data, SAMPLE_RATE, format="FLAC", subtype=_SUBTYPE
                )
                digest = hashlib.sha256((out_dir / name).read_bytes()).hexdigest()
                clips.append(
                    {
                        "file": name,
                        "kind": kind,
                        "phrasing": p,
                        "text": text,
                        "voice": voice,
                        "speed": speed,
                        "seconds": round(len(data) / SAMPLE_RATE, 3),
                        "sha256": digest,
                    }
                )
    manifest = {"engine": version, "rate": SAMPLE_RATE, "subtype": _SUBTYPE, "clips": clips}
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return clips


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="The demo world's spoken statements (espeak-ng).")
    parser.add_argument(
        "--check", action="store_true", help="only print the shipped clips' count and size"
    )
    args = parser.parse_args(argv)
    if args.check:
        clips = speech_manifest()
        size = sum((CLIP_DIR / c["file"]).stat().st_size for c in clips)
        print(f"{len(clips)} clips, {size / 1e6:.2f} MB in {CLIP_DIR}")
        return
    clips = render_clips()
    size = sum((CLIP_DIR / c["file"]).stat().st_size for c in clips)
    print(f"rendered {len(clips)} clips, {size / 1e6:.2f} MB into {CLIP_DIR}")


if __name__ == "__main__":
    main()
