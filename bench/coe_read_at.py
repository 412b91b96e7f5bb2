"""The chain of embedding read at the last generated token (the paper's, Appendix C) and at the
last prompt token, on the shipped demo models: the VIP under every rule, mean TVI per group,
Spearman ρ of post- and pre-VIP TVI with correctness, the Eq. 10 baselines, and the time.

Data: ``interp coe --data demo`` (the colour questions of the demo benchmark, 600 items, seed 0),
``full`` vs ``blind``, greedy answers of 8 tokens, cosine distances, the agreement split — the
settings of ``make demo``. For each model and read position:

    python bench/coe_read_at.py [--models demo demo-smol] [--n 600] [--read-at generated prompt]
                                [--out bench/results/coe_read_at.json]

The JSON it writes is the stored source of the numbers ``docs/papers.md`` and the README quote
(``tests/demo/test_quoted_numbers.py`` checks them).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

import interp  # noqa: E402
from interp.data_spec import load_data  # noqa: E402
from interp.studies.coe import chain_of_embedding, diagnose  # noqa: E402
from interp.studies.coe.diagnosis import compare_vip_rules  # noqa: E402
from probes.stats import spearman  # noqa: E402


def _rho(x: np.ndarray, y: np.ndarray) -> dict[str, float]:
    keep = ~np.isnan(x) & ~np.isnan(y)
    r = spearman(x[keep], y[keep])
    return {"rho": round(float(r.rho), 4), "p": float(f"{r.p_value:.3g}")}


def measure(model: str, n: int, read_at: str, batch_size: int) -> dict:
    vlm = interp.load(model, attn_implementation="eager")
    samples = load_data("demo", n, 0, default_qtypes=("color",))
    start = time.perf_counter()
    coe = chain_of_embedding(
        vlm,
        samples,
        read_at=read_at,
        visual_attention=True,
        batch_size=batch_size,
        progress_bar=False,
    )
    seconds = time.perf_counter() - start
    out: dict = {"n": len(samples), "seconds": round(seconds, 1)}
    lengths = [len(t) for t in coe.answer_ids["full"]] + [len(t) for t in coe.answer_ids["blind"]]
    out["answer_tokens"] = {"min": min(lengths), "max": max(lengths)}
    for rule in ("changepoint", "eq9"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            diag = diagnose(coe, rule=rule, fallback_vip=vlm.n_layers)
        vt = diag.in_vt
        row = {
            "vip": diag.vip,
            "vip_method": diag.vip_method,
            "statistic": round(float(diag.detector.result_.statistic[diag.vip]), 2),
            "d_vt": int(vt.sum()),
            "d_t": int((~vt).sum()),
            "mean_tvi_vt": round(float(diag.tvi[vt].mean()), 4),
            "mean_tvi_t": round(float(diag.tvi[~vt].mean()), 4),
            "accuracy": round(float(np.nanmean(diag.correct)), 4),
            "rho_post": _rho(diag.tvi, diag.correct),
            "rho_pre": _rho(diag.pre_tvi, diag.correct),
            "rho_output_divergence": _rho(diag.output_divergence, diag.correct),
            "rho_visual_attention": _rho(coe.visual_attention, diag.correct),
        }
        out[rule] = row
    table = compare_vip_rules(diag.distances, diag.in_vt, diag.correct)
    out["rules"] = {
        r: (None if v is None or (isinstance(v, float) and np.isnan(v)) else int(v))
        for r, v in zip(table["rule"], table["vip"])
    }
    gap = diag.detector.result_.difference
    out["gap"] = [round(float(g), 4) for g in gap]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--models", nargs="+", default=["demo", "demo-smol"])
    parser.add_argument("--n", type=int, default=600)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("bench/results/coe_read_at.json"))
    parser.add_argument(
        "--read-at", nargs="+", default=["generated", "prompt"], choices=["generated", "prompt"]
    )
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    for model in args.models:
        for read_at in args.read_at:
            row = measure(model, args.n, read_at, args.batch_size)
            # read just before writing: runs of other models or read positions may share the file
            results = json.loads(args.out.read_text()) if args.out.exists() else {}
            results.setdefault(model, {})[read_at] = row
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(results, indent=1) + "\n")
            print(model, read_at, json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
