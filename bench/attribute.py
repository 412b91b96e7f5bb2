"""Cost of the attribution maps against bare HF on the same demo colour questions.

- ``occlusion``: regions + 1 teacher-forced forwards per sample, against the same number of bare HF
  forwards of prompt + answer (each sample's batch repeated regions + 1 times, no edit);
- ``gradient``: one forward + one backward per sample plus the null image's forward, against one
  bare HF forward + backward of prompt + answer (``torch.autograd.grad`` at the decoder input)
  plus one bare forward.

Prints the times and the ratios (never asserts them).

    python bench/attribute.py [--n 32] [--batch-size 16] [--grid 4] [--repeats 3]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import torch  # noqa: E402
from _common import bench_parser, paired, parse  # noqa: E402

import interp  # noqa: E402
from interp.datasets import demo_world  # noqa: E402
from interp.encoding import append_targets, batches, target_ids  # noqa: E402
from interp.studies.attribute import gradient, occlusion  # noqa: E402


def bare_forwards(vlm, samples, batch_size: int, repeat: int, backward: bool) -> None:
    ids = target_ids(vlm, [s.answer for s in samples])
    by_id = {str(s.id): t for s, t in zip(samples, ids)}
    for idx, enc in batches(vlm, samples, "full", batch_size, all_samples=samples):
        tgt = [by_id[str(samples[i].id)] for i in idx]
        traced, _, _ = append_targets(vlm, enc, tgt)
        for _ in range(repeat):
            if not backward:
                with torch.no_grad():
                    vlm.hf(**traced.inputs)
                continue
            out = vlm.hf(**traced.inputs, output_hidden_states=True)
            first = out.hidden_states[0]
            (grad,) = torch.autograd.grad(out.logits.float().log_softmax(-1).sum(), first)
            del grad
            with torch.no_grad():  # the null image's forward
                vlm.hf(**enc.inputs)


def main() -> None:
    parser = bench_parser(__doc__, n=32, batch_size=16, threads=1)
    parser.add_argument("--grid", type=int, default=4, help="rows = cols of the region grid")
    parser.add_argument("--repeats", type=int, default=3)
    args = parse(parser)
    vlm = interp.load(args.model)
    samples = demo_world("test", n=args.n, qtypes=["color"])
    grid = (args.grid, args.grid)
    kw = dict(grid=grid, batch_size=args.batch_size, progress_bar=False)
    regions = args.grid * args.grid
    ours, bare, ratio = paired(
        lambda: occlusion(vlm, samples, **kw),
        lambda: bare_forwards(vlm, samples, args.batch_size, regions + 1, backward=False),
        args.repeats,
    )
    print(
        f"attribution on {args.model!r}: {len(samples)} samples, {args.grid}x{args.grid} grid, "
        f"batch {args.batch_size}, {args.threads} thread(s)"
    )
    print(f"  occlusion ({regions + 1} forwards/sample): {ours:.2f} s")
    print(f"  bare HF, same forwards:            {bare:.2f} s ({ratio:.2f}x)")
    ours, bare, ratio = paired(
        lambda: gradient(vlm, samples, layer=0, **kw),
        lambda: bare_forwards(vlm, samples, args.batch_size, 1, backward=True),
        args.repeats,
    )
    print(f"  gradient (forward + backward + null forward): {ours:.2f} s")
    print(f"  bare HF forward + backward + forward:         {bare:.2f} s ({ratio:.2f}x)")


if __name__ == "__main__":
    main()
