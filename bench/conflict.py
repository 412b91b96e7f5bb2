"""Cost of the modality-conflict study against bare HF on the same inputs.

- responses: ``conflict_responses`` (greedy; the two-image set: three evidence-form
  configurations; the tri-modal set: the full input, image + audio + caption) vs bare HF
  ``generate`` of the same encoded batches;
- probe extraction: ``interp.residual_stream`` at the last prompt token, every layer, vs a bare HF
  forward with ``output_hidden_states=True`` on the same batches;
- probe fitting: ``LayerwiseProbe`` over every layer (5 folds) on those states.

The items: ``--data demo`` (the demo world's two-image conflict items) or ``trimodal`` (its
image + audio + caption items, for a model that takes audio: ``--model demo-omni``); default:
``trimodal`` when the model takes audio.

    python bench/conflict.py [--n 600] [--batch-size 32] [--model demo-omni] [--data trimodal]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
from _common import bench_parser, hf_generate, parse, timed  # noqa: E402

import interp  # noqa: E402
from interp.cli import model_modalities  # noqa: E402
from interp.datasets import demo_world  # noqa: E402
from interp.encoding import batch_indices, encode  # noqa: E402
from interp.studies.conflict import conflict_responses, infer_sources  # noqa: E402
from interp.studies.conflict.items import default_configurations  # noqa: E402
from probes import LayerwiseProbe  # noqa: E402
from probes.errors import ProbeError  # noqa: E402


def main() -> None:
    parser = bench_parser(__doc__, n=600, batch_size=32, max_new_tokens=3)
    parser.add_argument("--data", choices=("demo", "trimodal"), default=None)
    args = parse(parser)
    data = args.data or ("trimodal" if "audio" in model_modalities(args.model) else "demo")
    vlm = interp.load(args.model)
    items = demo_world("test", n=args.n, qtypes=["trimodal" if data == "trimodal" else "conflict"])
    configurations = default_configurations(infer_sources(items)[1])
    b, m = args.batch_size, args.max_new_tokens

    def bare_generate() -> None:
        for cond in configurations.values():
            for idx in batch_indices(vlm, items, cond, b):
                hf_generate(vlm, encode(vlm, [items[i] for i in idx], cond), m)

    def ours() -> object:
        return conflict_responses(vlm, items, max_new_tokens=m, batch_size=b, progress_bar=False)

    t_bare, t_ours = timed(bare_generate), timed(ours)

    def bare_states() -> None:
        with torch.no_grad():
            for idx in batch_indices(vlm, items, "full", b):
                enc = encode(vlm, [items[i] for i in idx])
                out = vlm.hf(**enc.inputs, output_hidden_states=True)
                rows = torch.arange(len(idx))
                torch.stack([h[rows, enc.last_index] for h in out.hidden_states], 1)

    def states() -> torch.Tensor:
        return interp.residual_stream(vlm, items, batch_size=b, progress_bar=False)

    t_bare_states, t_states = timed(bare_states), timed(states)
    print(
        f"modality conflict on {args.model!r}: {len(items)} {data} items, batch {b}, "
        f"{args.threads} threads"
    )
    print(
        f"  responses, {len(configurations)} configuration(s): {t_ours:.2f} s vs bare HF "
        f"generate {t_bare:.2f} s ({t_ours / t_bare:.2f}x)"
    )
    x = states().numpy()
    print(
        f"  probe states (last token, {x.shape[1]} layers): {t_states:.2f} s vs bare HF "
        f"output_hidden_states {t_bare_states:.2f} s ({t_states / t_bare_states:.2f}x)"
    )
    first = next(iter(configurations))
    y = ours().frame.query(f"configuration == {first!r}")["label"].to_numpy()
    groups = np.array([str(s.meta["group"]) for s in items])
    labels, counts = np.unique(y, return_counts=True)
    keep = np.isin(y, labels[counts >= 20])  # rare labels cannot fill five grouped folds
    x, y, groups = x[keep], y[keep], groups[keep]
    start = time.perf_counter()
    try:
        LayerwiseProbe(cv=5).fit(x, y, groups=groups)
    except ProbeError as err:  # too few items of a second label, or too few groups
        print(f"  LayerwiseProbe fit skipped: {err}")
        return
    t_probe = time.perf_counter() - start
    print(
        f"  LayerwiseProbe fit, N = {len(y)}, {x.shape[1]} layers x 5 folds, d = {x.shape[2]}: "
        f"{t_probe:.2f} s"
    )


if __name__ == "__main__":
    main()
