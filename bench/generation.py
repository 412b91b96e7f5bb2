"""Speed of ``interp.generate`` with and without a steering edit, against bare HF ``generate``.

On the same batches of demo items, greedy decoding of up to ``--max-new-tokens`` tokens:

- bare HF: ``model.generate(**inputs, do_sample=False)``;
- ``interp.generate`` (one nnsight generate trace per batch; the library reads the logits and
  chooses every token itself);
- ``interp.generate`` with ``Steer(layer, v, "all")`` — an edit applied at the prompt forward and
  at every generated step;
- the same steering by hand in bare HF: a torch forward hook on the layer.

Prints the times and the ratios to bare HF.

    python bench/generation.py [--n 256] [--batch-size 16] [--max-new-tokens 16]
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from _common import bench_parser, hf_generate, parse, timed, workload  # noqa: E402

import interp  # noqa: E402
from interp.encoding import batches  # noqa: E402
from interventions import Steer  # noqa: E402


def bare_generate(vlm: interp.VLM, samples, batch_size: int, max_new_tokens: int, hook=None):
    hooks = [(vlm.adapter.layers(vlm.hf)[5], "forward", hook)] if hook is not None else []
    for _, enc in batches(vlm, samples, "full", batch_size):
        hf_generate(vlm, enc, max_new_tokens, hooks)


def main() -> None:
    parser = bench_parser(__doc__, n=256, batch_size=16, max_new_tokens=16)
    args = parse(parser)
    vlm, samples = workload(args.n, model=args.model)
    vector = 0.1 * torch.randn(vlm.d_model, generator=torch.Generator().manual_seed(0))
    kw = dict(batch_size=args.batch_size, max_new_tokens=args.max_new_tokens, progress_bar=False)

    def add(module, inputs, output):
        h = output[0] if isinstance(output, tuple) else output
        return h + vector

    bare = timed(lambda: bare_generate(vlm, samples, args.batch_size, args.max_new_tokens))
    bare_steer = timed(
        lambda: bare_generate(vlm, samples, args.batch_size, args.max_new_tokens, hook=add)
    )
    ours = timed(lambda: interp.generate(vlm, samples, **kw))
    steered = timed(lambda: interp.generate(vlm, samples, edits=[Steer(6, vector, "all")], **kw))
    print(
        f"generate on {args.model!r}, N={args.n}, batch {args.batch_size}, up to "
        f"{args.max_new_tokens} new tokens (greedy)"
    )
    print(f"  bare HF generate:                  {bare:.2f} s")
    print(f"  bare HF generate + steering hook:  {bare_steer:.2f} s ({bare_steer / bare:.2f}x)")
    print(f"  interp.generate:                   {ours:.2f} s ({ours / bare:.2f}x)")
    print(
        f"  interp.generate + Steer edit:      {steered:.2f} s ({steered / bare:.2f}x; "
        f"{steered / bare_steer:.2f}x the hooked bare HF)"
    )


if __name__ == "__main__":
    main()
