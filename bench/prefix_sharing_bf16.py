"""Prefix sharing (:mod:`interp.prefix`) in bf16: how far the shared path's log-probabilities lie
from the full forwards', beside how far bf16 itself lies from fp32 on the same rows.

In fp32 the two paths agree within rounding (``bench/prefix_sharing.py``, 1e-5). In bf16 the cached
attention of the shared path and the full attention round differently, so the paths differ by
bf16 rounding: this script measures by how much, against the yardstick of bf16's own error (the
full forward in bf16 against the full forward in fp32, the same weights).

- **demo model**: ``interp.score_contexts`` of each answer under four text conditions of its image
  (``--n`` samples), loaded in fp32 and in bf16;
- **tiny families**: every tiny family whose adapter shares prefixes, the rows of
  ``tests/core/test_prefix_sharing.py`` (one image under several questions and conditions, blind
  rows, a null image, a second image), the same random weights cast to bf16.

Each row prints, over every scored token, the largest and the median ``|shared − full|`` in bf16,
the largest and the median ``|full bf16 − full fp32|``, and the ratio of the two largest. Nothing is
asserted here; ``tests/core/test_prefix_sharing.py`` holds four families to the declared bound
(the shared path's largest difference at most twice bf16's own).

    python bench/prefix_sharing_bf16.py [--n 32]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/, which the test imports
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "core"))
from _common import bench_parser, parse  # noqa: E402
from test_prefix_sharing import TARGETS, _rows  # noqa: E402

import interp  # noqa: E402
from interp import prefix  # noqa: E402
from interp.datasets import demo_world  # noqa: E402
from interp.encoding import target_ids  # noqa: E402
from interp.scoring import score_rows  # noqa: E402
from interp.testing.tiny import ARCHITECTURES, build_tiny  # noqa: E402

CONDITIONS = ["full", "no_question", "instruct:Answer in one word.", "full+no_prefix"]


def row(label: str, shared: np.ndarray, full: np.ndarray, fp32: np.ndarray) -> str:
    """One printed line: the two differences over the scored tokens (padding left out)."""
    keep = full != 0
    d_share = np.abs(shared - full)[keep]
    d_dtype = np.abs(full - fp32)[keep]
    ratio = d_share.max() / d_dtype.max() if d_dtype.max() > 0 else 0.0
    return (
        f"  {label:24} tokens {keep.sum():5d}   shared vs full (bf16): max {d_share.max():.2e} "
        f"median {np.median(d_share):.1e}   bf16 vs fp32 (full): max {d_dtype.max():.2e} "
        f"median {np.median(d_dtype):.1e}   ratio of the maxima {ratio:.2f}"
    )


def demo(n: int, batch_size: int) -> str:
    samples = demo_world("test", n=n, qtypes=["describe"])
    targets = [s.answer for s in samples]
    out = {}
    for dtype in (torch.float32, torch.bfloat16):
        vlm = interp.load("demo", dtype=dtype)
        for share in (True, False):
            lps = interp.score_contexts(
                vlm,
                samples,
                targets,
                lambda i, s: [(s, c) for c in CONDITIONS],
                batch_size=batch_size,
                progress_bar=False,
                share_prefix=share,
            )
            out[dtype, share] = np.concatenate([lp.numpy().ravel() for lp in lps])
    bf = torch.bfloat16
    return row(f"demo model N={n}", out[bf, True], out[bf, False], out[torch.float32, False])


def tiny(arch: str) -> str | None:
    out = {}
    for dtype in (torch.float32, torch.bfloat16):
        model, processor = build_tiny(arch)
        vlm = interp.load(model.to(dtype), processor)
        if not prefix.applies(vlm, (), {}):  # not verified, or each row runs alone
            return None
        rows, targets = _rows(arch), target_ids(vlm, TARGETS)
        for share in (True, False):
            lps = score_rows(vlm, rows, targets, batch_size=4, share_prefix=share)
            out[dtype, share] = torch.cat(lps).numpy()
    bf = torch.bfloat16
    return row(f"tiny {arch}", out[bf, True], out[bf, False], out[torch.float32, False])


def main() -> None:
    parser = bench_parser(__doc__, n=32, batch_size=32, model=False, threads=1)
    args = parse(parser)
    print(
        "prefix sharing in bf16: |shared - full| (both bf16) beside |bf16 - fp32| (both full), "
        "natural-log probabilities of every scored token"
    )
    print(demo(args.n, args.batch_size))
    for arch in ARCHITECTURES:
        line = tiny(arch)
        print(line if line is not None else f"  tiny {arch:19} shares no prefix")


if __name__ == "__main__":
    main()
