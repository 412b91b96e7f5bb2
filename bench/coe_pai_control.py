"""Table 2 (PAI's attention boost: accuracy and TVI before and after) and Fig. 10 (a controlled split:
colour questions as D_VT, the demo world's language-only questions over an irrelevant scene as D_T) of
the chain-of-embedding paper, as notebook 01 §§9-10 compute them, for any demo model.

    python bench/coe_pai_control.py --model demo-smol [--n 200] [--out bench/results/coe_pai_control.json]

Table 2: ``chain_of_embedding`` on the first ``--n`` items of the ``demo`` benchmark without and with
``interventions.AttentionBoost()`` (PAI's α = 0.2, layers 3..L), TVI of both at the baseline's VIP
(default rule) and split. Fig. 10: ``--n`` / 2 colour questions against as many language-only
questions whose image is a scene of the world, the split given by the question type; the VIP by the
default rule on that split.
"""

from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path

import numpy as np

import interp
from interp.datasets import TEXT_QTYPES, demo_world
from interp.studies.coe import chain_of_embedding, diagnose
from interventions import AttentionBoost
from probes.tvi import tvi
from probes.vip import VIPDetector


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", default="demo-smol")
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("bench/results/coe_pai_control.json"))
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    vlm = interp.load(args.model, attn_implementation="eager")
    benchmark = demo_world("test", n=args.n, qtypes=["color"])
    kw = {"batch_size": args.batch_size, "progress_bar": False}
    base = diagnose(chain_of_embedding(vlm, benchmark, **kw))
    pai = diagnose(
        chain_of_embedding(vlm, benchmark, edits=[AttentionBoost()], **kw),
        split=base.in_vt,
        vip=base.vip,
    )
    row: dict = {
        "n": len(benchmark),
        "vip": base.vip,
        "table2": {
            "accuracy_before": round(float(np.nanmean(base.correct)), 4),
            "accuracy_after": round(float(np.nanmean(pai.correct)), 4),
            "tvi_before": round(float(base.tvi.mean()), 4),
            "tvi_after": round(float(pai.tvi.mean()), 4),
            "answers_changed": int(
                sum(a != b for a, b in zip(base.coe.answers["full"], pai.coe.answers["full"]))
            ),
        },
    }
    half = args.n // 2
    language_only = [
        s
        for s in demo_world("test", n=4 * args.n, qtypes=list(TEXT_QTYPES), start=3 * args.n)
        if s.meta.get("image_kind") == "scene"
    ][:half]
    lang = chain_of_embedding(vlm, language_only, **kw)
    d = np.concatenate([base.distances[:half], lang.distance("cosine")])
    labels = np.r_[np.ones(half, bool), np.zeros(len(language_only), bool)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        layer = VIPDetector().fit(d, labels).layer_
    vip = int(layer) if layer is not None else base.vip
    t = tvi(d, vip)
    row["fig10"] = {
        "n_vt": half,
        "n_t": len(language_only),
        "vip": vip,
        "vip_found": layer is not None,
        "tvi_vt": round(float(t[labels].mean()), 4),
        "tvi_t": round(float(t[~labels].mean()), 4),
    }
    results = json.loads(args.out.read_text()) if args.out.exists() else {}
    results[args.model] = row
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    print(json.dumps(row, indent=1))


if __name__ == "__main__":
    main()
