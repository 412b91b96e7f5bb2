"""Cost of the library on an omni-modal model with image + audio inputs, against bare HF.

A tiny random omni thinker (default: Qwen2.5-Omni) and N samples, each with a random image and a
random waveform (0.5–1.5 s at 16 kHz; every fourth row carries no audio, so batches mix rows with
and without audio). Both sides encode the same batches with the library's encoder, then

- residual reads: ``interp.residual_stream`` (one nnsight trace per batch, every layer at the last
  token) vs ``model(**inputs, output_hidden_states=True)`` and the same last-token gather;
- generation: ``interp.generate`` (the library reads the logits and chooses every token) vs
  greedy HF ``generate``.

Prints the median times and the median of paired ratios.

    python bench/omni.py [--arch qwen2_5_omni_thinker] [--n 64] [--batch-size 8]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
from _common import hf_generate, hf_last_states, paired  # noqa: E402

import interp  # noqa: E402
import interp.testing  # noqa: E402
from interp.encoding import batches  # noqa: E402

RATE = 16000


def omni_samples(n: int, seed: int = 0) -> list[interp.Sample]:
    """``n`` image + audio questions (every fourth without audio)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        image = rng.integers(0, 256, (32, 32 + 16 * (i % 2), 3), dtype=np.uint8)
        audio = None
        if i % 4 != 3:
            seconds = 0.5 + (i % 3) * 0.5
            audio = (rng.normal(0, 0.1, int(seconds * RATE)).astype(np.float32), RATE)
        out.append(
            interp.Sample(f"what do you see and hear ? item {i}", image=image, audio=audio, id=i)
        )
    return out


def hf_generation(vlm: interp.VLM, samples, batch_size: int, max_new_tokens: int) -> None:
    for _, enc in batches(vlm, samples, "full", batch_size):
        hf_generate(vlm, enc, max_new_tokens)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--arch", default="qwen2_5_omni_thinker")
    parser.add_argument("--n", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    vlm = interp.testing.tiny_vlm(args.arch)
    samples = omni_samples(args.n)
    bs, new = args.batch_size, args.max_new_tokens
    rows = {
        "residual reads": paired(
            lambda: interp.residual_stream(vlm, samples, batch_size=bs, progress_bar=False),
            lambda: hf_last_states(vlm, samples, bs),
            args.repeats,
        ),
        f"generate (≤ {new} new tokens)": paired(
            lambda: interp.generate(
                vlm, samples, batch_size=bs, max_new_tokens=new, progress_bar=False
            ),
            lambda: hf_generation(vlm, samples, bs, new),
            args.repeats,
        ),
    }
    n_audio = sum(s.has_audio for s in samples)
    print(
        f"tiny {args.arch}, N = {args.n} image questions ({n_audio} with audio), batch {bs}, "
        f"{args.threads} threads"
    )
    print(f"{'measurement':28s} {'interp s':>9s} {'HF s':>9s} {'ratio':>7s}")
    for name, (ours, bare, ratio) in rows.items():
        print(f"{name:28s} {ours:9.3f} {bare:9.3f} {ratio:7.2f}x")


if __name__ == "__main__":
    main()
