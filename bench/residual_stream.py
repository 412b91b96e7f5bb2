"""Cost of reading the residual stream through nnsight vs a bare HF forward.

Both sides encode the same samples into the same batches with the library's encoder, then
- ``interp.residual_stream``: one nnsight trace per batch reading every layer at the last token;
- bare HF: ``model(**inputs, output_hidden_states=True)`` and the same last-token gather.
Prints the median time of each and the ratio (target ≤ 1.10×), on the demo model and on a tiny
random model of each given architecture. Peak memory is measured in fresh subprocesses.

Edits must not cost the LM head: on Gemma 4's tiny model with its real 262k-token vocabulary
(``tools.real_models``, after ``make real-tokenizers``) the read is timed without and with
a ``Steer`` edit, each against the bare HF forward (which computes the head).

    python bench/residual_stream.py [--n 256] [--batch-size 16] [--arch llava qwen2_vl]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import torch  # noqa: E402
from _common import (  # noqa: E402
    bench_parser,
    hf_last_states,
    parse,
    peak_rss_mib,
    run_memory_child,
    timed,
    workload,
)

import interp  # noqa: E402
import interp.testing  # noqa: E402


def measure(vlm: interp.VLM, samples, batch_size: int) -> dict[str, float]:
    ours = timed(
        lambda: interp.residual_stream(vlm, samples, batch_size=batch_size, progress_bar=False)
    )
    bare = timed(lambda: hf_last_states(vlm, samples, batch_size))
    return {"interp_s": ours, "hf_s": bare, "ratio": ours / bare}


def measure_steered(vlm: interp.VLM, samples, batch_size: int) -> dict[str, float]:
    """``residual_stream`` with a ``Steer`` edit at layer 1 against the bare HF forward."""
    from interventions import Steer

    edit = Steer(1, torch.ones(vlm.d_model), "last", 0.5)
    ours = timed(
        lambda: interp.residual_stream(
            vlm, samples, batch_size=batch_size, edits=[edit], progress_bar=False
        )
    )
    bare = timed(lambda: hf_last_states(vlm, samples, batch_size))
    return {"interp_s": ours, "hf_s": bare, "ratio": ours / bare}


def large_vocab_rows(samples, batch_size: int) -> list[tuple[str, dict[str, float]]]:
    """Gemma 4 with its real vocabulary: reads without and with an edit (none if the real
    tokenizers are not fetched)."""
    # the repository's tooling (tools/, not installed): the repository root on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tools.real import RealTokenizerMissing
    from tools.real_models import real_vlm

    try:
        vlm = real_vlm("gemma4")
    except RealTokenizerMissing as err:
        print(f"note: the large-vocabulary rows are skipped ({err})")
        return []
    small = [interp.Sample(s.question, s.image, s.answer, s.id) for s in samples[:16]]
    vocab = vlm.hf.config.get_text_config().vocab_size
    return [
        (f"gemma4 real vocab {vocab // 1000}k", measure(vlm, small, 8)),
        ("gemma4 real vocab, Steer edit", measure_steered(vlm, small, 8)),
    ]


def _memory_child(kind: str, n: int, batch_size: int, model: str) -> None:
    vlm, samples = workload(n, model=model)
    before = peak_rss_mib()
    if kind == "interp":
        interp.residual_stream(vlm, samples, batch_size=batch_size, progress_bar=False)
    else:
        hf_last_states(vlm, samples, batch_size)
    print(json.dumps({"peak_mib": peak_rss_mib(), "before_mib": before}))


def main() -> None:
    parser = bench_parser(__doc__, n=256, batch_size=16)
    parser.add_argument("--arch", nargs="*", default=["llava", "qwen2_vl", "idefics3", "gemma3"])
    parser.add_argument("--memory-child", default=None, help=argparse.SUPPRESS)
    args = parse(parser)
    if args.memory_child:
        _memory_child(args.memory_child, args.n, args.batch_size, args.model)
        return

    vlm, samples = workload(args.n, model=args.model)
    rows = [(f"demo (Llava, {vlm.n_layers} layers)", measure(vlm, samples, args.batch_size))]
    for arch in args.arch:
        tiny = interp.testing.tiny_vlm(arch)
        small = [interp.Sample(s.question, s.image, s.answer, s.id) for s in samples[:64]]
        rows.append((f"tiny {arch}", measure(tiny, small, args.batch_size)))
    rows += large_vocab_rows(samples, args.batch_size)
    print(f"residual_stream vs bare HF forward(output_hidden_states=True), batch {args.batch_size}")
    print(f"{'model':32s} {'interp s':>9s} {'HF s':>9s} {'ratio':>7s}")
    for name, r in rows:
        print(f"{name:32s} {r['interp_s']:9.3f} {r['hf_s']:9.3f} {r['ratio']:7.2f}x")
    for kind in ("hf", "interp"):
        mem = run_memory_child(__file__, kind, args, "--n", str(args.n))
        print(
            f"peak RSS ({kind}, demo, N={args.n}): {mem['peak_mib']:.0f} MiB "
            f"(after loading: {mem['before_mib']:.0f} MiB)"
        )


if __name__ == "__main__":
    main()
