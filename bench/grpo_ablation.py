"""GRPO with LoRA on the demo model (the no-image ablation paper's mitigation), measured: how long
it trains on this CPU, and the no-image ablation before and after.

- training items: demo-world training-split items of the worded question types that need the
  image *for this model* (its answer without the image, ``blind``, is wrong), all four wordings;
  reward = accuracy (the default judge);
- :func:`grpo_lora`: ``--steps`` optimiser steps, ``--prompts`` items a step, ``--generations``
  completions each, LoRA rank 8 on the language model's q/v projections;
- evaluation: :func:`no_image_ablation` on held-out test items (``full`` vs ``blind``), before and
  after: accuracy with the image, without it, the paired drop and the agreement (the same answer
  without the image: the no-image reliance), per wording and pooled, with bootstrap intervals.

Writes ``--out`` (JSON; default ``bench/results/grpo_ablation.json``) and prints a summary.

    python bench/grpo_ablation.py [--n 240] [--train 400] [--steps 100]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import bench_parser, parse  # noqa: E402

import interp  # noqa: E402
from interp.datasets import WORDED_QTYPES, demo_world  # noqa: E402
from interp.studies.ablation import default_judge, grpo_lora, no_image_ablation  # noqa: E402

COLUMNS = ["variant", "n", "with_image", "with_image_low", "with_image_high", "without"]
COLUMNS += ["without_low", "without_high", "drop", "drop_low", "drop_high", "agreement"]
COLUMNS += ["agreement_low", "agreement_high"]


def table(vlm, items, batch_size):
    abl = no_image_ablation(vlm, items, ("blind",), batch_size=batch_size, progress_bar=False)
    f = abl.to_frame()
    return f[f["category"] == "all"][COLUMNS].round(4).to_dict(orient="records")


def main() -> None:
    parser = bench_parser(__doc__, n=240, batch_size=32, threads=1)
    parser.add_argument("--train", type=int, default=400, help="training-split items drawn")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--prompts", type=int, default=2)
    parser.add_argument("--generations", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results/grpo_ablation.json"))
    args = parse(parser)
    vlm = interp.load(args.model or "demo")
    pool = demo_world("train", n=args.train, qtypes=list(WORDED_QTYPES), seed=args.seed)
    blind = interp.generate(vlm, pool, "blind", batch_size=args.batch_size, progress_bar=False)
    train = [s for s, a in zip(pool, blind.texts) if not default_judge(a, s)]
    test = demo_world("test", n=args.n, qtypes=list(WORDED_QTYPES))
    before = table(vlm, test, args.batch_size)
    start = time.perf_counter()
    run = grpo_lora(
        vlm,
        train,
        steps=args.steps,
        prompts_per_step=args.prompts,
        num_generations=args.generations,
        seed=args.seed,
    )
    total = time.perf_counter() - start
    after = table(run.vlm, test, args.batch_size)
    rewards = run.history["reward"].to_numpy()
    k = max(1, len(rewards) // 5)
    result = {
        "model": args.model or "demo",
        "train_items": len(train),
        "train_pool": len(pool),
        "test_items": len(test),
        "steps": run.steps,
        "prompts_per_step": args.prompts,
        "generations": args.generations,
        "train_seconds": round(run.seconds, 1),
        "seconds_per_step": round(run.seconds_per_step, 3),
        "seconds_with_setup": round(total, 1),
        "reward_first_fifth": round(float(rewards[:k].mean()), 4),
        "reward_last_fifth": round(float(rewards[-k:].mean()), 4),
        "before": before,
        "after": after,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k not in ("before", "after")}, indent=1))
    for name in ("before", "after"):
        pooled = next(r for r in result[name] if r["variant"] == "all")
        print(name, {c: pooled[c] for c in ("with_image", "without", "drop", "agreement")})


if __name__ == "__main__":
    main()
