"""Load time of demo-smol and the cost of residual reads on it vs a bare HF forward.

- first load: SmolLM2 read from the GGUF file and de-quantised, the Llava built, the LoRA factors
  merged, the folder written (into a temporary cache, so the user's cache is not touched);
- cached load: ``interp.load("demo-smol")`` from the assembled folder, beside a bare
  ``AutoModelForImageTextToText.from_pretrained`` of the same folder;
- residual reads: ``interp.residual_stream`` (every layer, last token) vs
  ``model(**inputs, output_hidden_states=True)`` on the same batches (``bench/residual_stream.py``).

    python bench/demo_smol.py [--n 128] [--batch-size 16]
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import torch
import transformers
from transformers import AutoModelForImageTextToText

sys.path.insert(0, str(Path(__file__).parent))
from _common import bench_parser, parse  # noqa: E402
from residual_stream import measure  # noqa: E402

import interp  # noqa: E402
from interp.datasets import demo_world  # noqa: E402
from interp.demo.smol.assemble import CACHE_ENV, assemble  # noqa: E402


def main() -> None:
    parser = bench_parser(__doc__, n=128, batch_size=16, model=False)
    args = parse(parser)
    transformers.utils.logging.disable_progress_bar()
    with tempfile.TemporaryDirectory() as cache:
        before = os.environ.get(CACHE_ENV)
        os.environ[CACHE_ENV] = cache
        t0 = time.perf_counter()
        folder = assemble()
        first = time.perf_counter() - t0
        if before is None:
            del os.environ[CACHE_ENV]
        else:
            os.environ[CACHE_ENV] = before
        t0 = time.perf_counter()
        vlm = interp.load(str(folder))
        cached = time.perf_counter() - t0
        t0 = time.perf_counter()
        AutoModelForImageTextToText.from_pretrained(folder, dtype=torch.float32)
        bare = time.perf_counter() - t0
        print("demo-smol load (s)")
        print(f"  first load (GGUF de-quantised, assembled, written): {first:6.1f}")
        print(f"  interp.load from the assembled folder:              {cached:6.1f}")
        print(f"  bare HF from_pretrained of the same folder:         {bare:6.1f}")
        samples = demo_world("test", n=args.n)
        r = measure(vlm, samples, args.batch_size)
    print(
        f"residual_stream vs bare HF forward(output_hidden_states=True), N={args.n}, batch "
        f"{args.batch_size}, {vlm.n_layers} layers: {r['interp_s']:.2f} s vs {r['hf_s']:.2f} s "
        f"= {r['ratio']:.2f}x"
    )


if __name__ == "__main__":
    main()
