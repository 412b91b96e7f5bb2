"""Cost of the visual-reference recall study: probe fitting and state extraction.

1. **Probe fitting over all layers**: ``probes.LayerwiseProbe`` (standardise + balanced logistic
   regression, 5-fold CV, refit on all samples) on synthetic states ``[N, L+1, d]`` with N = 2,000,
   L + 1 = 13, d = 128 — the demo model's shape at the issue's N — on one BLAS thread (as the study
   fits them) and on the default threads; with ``--nested`` also the
   study's nested cross-validation (:func:`interp.studies.recall.failure_probes`: 5 outer folds,
   3 inner folds choosing the layer) on the same states.
2. **State extraction vs a bare HF forward**, on the demo model and the demo world's
   visual-reference questions, each side on the same batches of the library's encoder:
   - ``interp.residual_stream`` (one nnsight trace per batch reading every layer at the last
     token) vs ``model(**inputs, output_hidden_states=True)`` and the same gather;
   - the study's Visual pass (one nnsight generate trace per batch: answers, every layer's
     last-token state and each token's log-probability) vs a bare HF ``generate`` plus a bare
     forward with hidden states (what the same outputs cost without the library).

Prints median wall times and ratios; asserts nothing (timings are not tests).

    python bench/recall.py [--n-probe 2000] [--n 300] [--batch-size 32] [--nested]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
from _common import hf_generate, timed  # noqa: E402

import interp  # noqa: E402
from interp.datasets import demo_world  # noqa: E402
from interp.encoding import batches  # noqa: E402
from interp.studies import recall as rc  # noqa: E402


def synthetic_states(n: int, layers: int, d: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """States whose layers 7-12 carry the label with growing strength (40 % positives)."""
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.4
    X = rng.normal(size=(n, layers, d)).astype(np.float32)
    for layer in range(7, layers):
        X[:, layer, :4] += (0.15 * (layer - 6)) * y[:, None]
    return X, y


def bench_probes(n: int, layers: int, d: int, nested: bool) -> None:
    from threadpoolctl import threadpool_limits

    from probes.layerwise import LayerwiseProbe

    X, y = synthetic_states(n, layers, d)
    probe = LayerwiseProbe(cv=5)
    fits = layers * (5 + 1)
    for threads in (1, None):
        with threadpool_limits(limits=threads):
            seconds = timed(lambda: probe.fit(X, y), repeats=1)
        label = "1 BLAS thread" if threads else "default BLAS threads"
        print(
            f"LayerwiseProbe.fit, N={n}, {layers} layers, d={d}, 5-fold CV + refit, {label}: "
            f"{seconds:.2f} s ({fits} fits, {1000 * seconds / fits:.1f} ms each); best layer "
            f"{probe.best_layer_}"
        )
    if not nested:
        return
    items = [
        rc.RecallItem(f"i{i}", None, "t", f"v{i % 40}", "a", "f", f"e{i % 40}") for i in range(n)
    ]
    run = rc.RecallRun(
        items,
        {
            "visual": ["a" if c else "b" for c in y],
            "full_info": ["a"] * n,
            "text_only": ["a"] * n,
        },
        {"visual": torch.from_numpy(X), "full_info": torch.from_numpy(X)},
        np.full((n, layers), 0.5),
        np.exp(np.random.default_rng(1).normal(size=n) ** 2),
        np.zeros(n, dtype=np.int64),
    )
    seconds = timed(lambda: rc.failure_probes(run, subset="all", groups="pair"), repeats=1)
    print(
        f"failure_probes (nested 5 x 3-fold CV, {layers} layers, 1 BLAS thread), N={n}: {seconds:.2f} s"
    )


def hf_states(vlm: interp.VLM, samples, batch_size: int) -> torch.Tensor:
    out = []
    for _, enc in batches(vlm, samples, "full", batch_size):
        with torch.no_grad():
            hs = vlm.hf(**enc.inputs, output_hidden_states=True).hidden_states
        rows = torch.arange(len(enc))
        out.append(torch.stack([h[rows, enc.last_index] for h in hs], 1))
    return torch.cat(out)


def hf_visual_pass(vlm: interp.VLM, samples, batch_size: int, max_new_tokens: int) -> None:
    for _, enc in batches(vlm, samples, "full", batch_size):
        hf_generate(vlm, enc, max_new_tokens)
        with torch.no_grad():
            vlm.hf(**enc.inputs, output_hidden_states=True)


def bench_extraction(n: int, batch_size: int, max_new_tokens: int) -> None:
    vlm = interp.load("demo")
    data = demo_world("test", n=3 * n, qtypes=list(rc.REFERENCE_QTYPES))
    visual = [item.sample("visual") for item in rc.recall_items(data)]
    ours = timed(
        lambda: interp.residual_stream(vlm, visual, batch_size=batch_size, progress_bar=False)
    )
    bare = timed(lambda: hf_states(vlm, visual, batch_size))
    print(
        f"\nstate extraction, demo model, {len(visual)} Visual prompts, batch {batch_size}, "
        f"{vlm.n_layers + 1} layers at the last token"
    )
    print(f"{'':46s} {'interp s':>9s} {'HF s':>9s} {'ratio':>7s}")
    print(
        f"{'residual_stream vs forward(output_hidden_states)':46s} {ours:9.3f} {bare:9.3f} "
        f"{ours / bare:7.2f}x"
    )

    def study_pass() -> None:
        interp.generate_states(
            vlm,
            visual,
            max_new_tokens=max_new_tokens,
            token_logprobs=True,
            batch_size=batch_size,
            progress_bar=False,
        )

    ours = timed(study_pass)
    bare = timed(lambda: hf_visual_pass(vlm, visual, batch_size, max_new_tokens))
    print(
        f"{'Visual pass vs HF generate + hidden-state forward':46s} {ours:9.3f} {bare:9.3f} "
        f"{ours / bare:7.2f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n-probe", type=int, default=2000, help="samples for the probe fit")
    parser.add_argument("--d", type=int, default=128)
    parser.add_argument("--layers", type=int, default=13, help="L+1 layer slots")
    parser.add_argument("--nested", action="store_true", help="also time failure_probes")
    parser.add_argument("--n", type=int, default=300, help="recall items for state extraction")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-new-tokens", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    bench_probes(args.n_probe, args.layers, args.d, args.nested)
    bench_extraction(args.n, args.batch_size, args.max_new_tokens)


if __name__ == "__main__":
    main()
