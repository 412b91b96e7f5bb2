"""Cost of contrastive decoding: time per generation step of each method against plain greedy
decoding, batched against a batch-1 loop, and peak memory.

On the same demo items (``describe`` questions, whose answers run to many tokens), greedy, up to
``--max-new-tokens`` tokens:

- ``plain``: ``interp.generate`` without a method, and bare HF ``generate`` for reference;
- each method (``vcd``, ``icd``, ``vdd``, ``m3id``, ``pai``): ``interp.generate(decoding=...)`` at
  batch ``--batch-size``; expert and amateur rows run in one batched forward per step, so the
  physical floor is about 2× plain for one amateur (twice the rows);
- the way the public implementations run contrastive decoding: batch 1, two model calls per step
  (expert and amateur, each with its own KV cache), the VCD formula applied between them — bare
  HF forwards, timed on the same items.

Time per step = wall time / generation steps (a batch runs until its longest answer ends, so the
steps are counted per batch). Peak memory is the peak RSS of a fresh process running one method.

    python bench/decoding.py [--n 64] [--batch-size 16] [--max-new-tokens 16]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from _common import (  # noqa: E402
    bench_parser,
    current_rss_mib,
    hf_generate,
    parse,
    peak_rss_mib,
    run_child,
    timed,
)

import interp  # noqa: E402
from interp.datasets import demo_world  # noqa: E402
from interp.encoding import batch_indices, encode  # noqa: E402
from interventions.decoding import method  # noqa: E402

METHODS = ("vcd", "icd", "vdd", "m3id", "pai")


def steps_of(gen: interp.Generation, batch_size: int, max_new_tokens: int) -> int:
    """Generation steps run: per batch, its longest answer (+1 for the end token), capped."""
    lengths = [min(len(ids) + 1, max_new_tokens) for ids in gen.token_ids]
    return sum(max(lengths[i : i + batch_size]) for i in range(0, len(lengths), batch_size))


def batch1_two_calls(vlm: interp.VLM, samples, amateur: str, max_new_tokens: int) -> int:
    """Batch 1, two model calls per step (expert, amateur), VCD's formula (α = 1, β = 0.1);
    returns the steps run."""
    steps = 0
    stops = interp.generation.stop_ids(vlm)
    with torch.no_grad():
        for s in samples:
            states = []
            for cond in ("full", amateur):
                enc = encode(vlm, [s], cond)
                out = vlm.hf(**enc.inputs, use_cache=True)
                states.append([out.logits[:, -1], out.cache, enc.attention_mask])
            for _ in range(max_new_tokens):
                z, zp = states[0][0].float(), states[1][0].float()
                scores = 2 * z - zp
                cut = z < math.log(0.1) + z.max(-1, keepdim=True).values
                token = scores.masked_fill(cut, -math.inf).argmax(-1)
                steps += 1
                if int(token) in stops:
                    break
                for st in states:
                    st[2] = torch.cat([st[2], torch.ones_like(st[2][:, :1])], 1)
                    out = vlm.hf(
                        input_ids=token[:, None],
                        attention_mask=st[2],
                        cache=st[1],
                        use_cache=True,
                    )
                    st[0], st[1] = out.logits[:, -1], out.cache
    return steps


def child(args: argparse.Namespace) -> None:
    """One method in this (fresh) process: print its peak memory as JSON."""
    vlm = interp.load(args.model, attn_implementation="eager")
    samples = demo_world("test", n=args.n, qtypes=["describe"])
    before = current_rss_mib()
    dec = method(args.child)
    interp.generate(
        vlm,
        samples,
        decoding=dec,
        max_new_tokens=args.max_new_tokens,
        batch_size=args.batch_size,
        progress_bar=False,
    )
    print(json.dumps({"peak_mib": peak_rss_mib(), "before_mib": before}))


def main() -> None:
    parser = bench_parser(__doc__, n=64, batch_size=16, max_new_tokens=16)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parse(parser)
    if args.child:
        child(args)
        return
    vlm = interp.load(args.model, attn_implementation="eager")
    samples = demo_world("test", n=args.n, qtypes=["describe"])
    b, m = args.batch_size, args.max_new_tokens
    kw = dict(batch_size=b, max_new_tokens=m, progress_bar=False)

    def bare() -> None:
        for idx in batch_indices(vlm, samples, "full", b):
            hf_generate(vlm, encode(vlm, [samples[i] for i in idx], "full"), m)

    t_bare = timed(bare)
    plain = interp.generate(vlm, samples, **kw)
    t_plain = timed(lambda: interp.generate(vlm, samples, **kw))
    s_plain = steps_of(plain, b, m)
    per_plain = t_plain / s_plain
    print(
        f"contrastive decoding on {args.model!r}: N={args.n} describe items, batch {b}, up to {m} "
        f"new tokens, greedy, {args.threads} threads"
    )
    print(f"  bare HF generate:      {t_bare:.2f} s")
    print(
        f"  plain interp.generate: {t_plain:.2f} s, {s_plain} steps, "
        f"{1000 * per_plain:.1f} ms/step ({t_plain / t_bare:.2f}x bare HF)"
    )
    for name in METHODS:
        dec = method(name)
        gen = interp.generate(vlm, samples, decoding=dec, **kw)
        t = timed(lambda dec=dec: interp.generate(vlm, samples, decoding=dec, **kw))
        steps = steps_of(gen, b, m)
        print(
            f"  {name:5s} batch {b}: {t:.2f} s, {steps} steps, {1000 * t / steps:.1f} ms/step = "
            f"{t / steps / per_plain:.2f}x plain per step"
        )
    one = timed(
        lambda: interp.generate(vlm, samples, decoding=method("vcd"), **{**kw, "batch_size": 1}),
        repeats=1,
    )
    loop_steps = {}
    loop = timed(
        lambda: loop_steps.update(n=batch1_two_calls(vlm, samples, "distort:500", m)), repeats=1
    )
    vcd_batched = timed(lambda: interp.generate(vlm, samples, decoding=method("vcd"), **kw))
    print(f"  vcd, interp batch {b}:                     {vcd_batched:.2f} s")
    print(f"  vcd, interp batch 1:                       {one:.2f} s ({one / vcd_batched:.1f}x)")
    print(
        f"  vcd, bare HF batch 1, two calls per step:  {loop:.2f} s "
        f"({loop / vcd_batched:.1f}x the batched run; {loop_steps['n']} steps)"
    )
    script = str(Path(__file__).resolve())
    common = ["--n", str(args.n), "--batch-size", str(b), "--max-new-tokens", str(m)]
    common += ["--model", args.model, "--threads", str(args.threads)]
    print("  peak RSS of a fresh process (model loaded first):")
    for name in ("greedy", *METHODS):
        r = run_child(script, "--child", name, *common)
        print(
            f"    {name:6s} {r['peak_mib']:.0f} MiB (model loaded: {r['before_mib']:.0f} MiB, "
            f"+{r['peak_mib'] - r['before_mib']:.0f})"
        )


if __name__ == "__main__":
    main()
