"""The VIP under every rule of ``probes.vip.RULES``, on the shipped demo models, and its sensitivity
to the number of samples N.

Data, as notebooks 01 and 07 compute it: :func:`interp.studies.coe.chain_of_embedding` (last
prompt token, ``full`` vs ``blind``, greedy answers of 8 tokens), cosine distances per layer and the
agreement split, for

- the demo model on the ``demo`` benchmark (``interp coe --data demo``: colour questions of the
  test split),
- ``demo-smol`` on the same ``demo`` benchmark,
- ``demo-smol`` (and, for comparison, the demo model) on notebook 07's faint-object items
  (colour questions about objects at opacity :data:`interp.datasets.world.FAINT`,
  draws from 5000 on).

Each (model, dataset) is measured once on ``--n`` items and kept in ``--cache`` (delete it to
measure again). Then:

1. the VIP per rule on all items (:func:`interp.studies.coe.compare_vip_rules`: the layer, the
   gap there as a share of the largest gap, the statistic, Spearman ρ of the post-VIP TVI with
   correctness);
2. the N-sensitivity: for N in ``--ns`` (and all), ``--seeds`` random subsets of N items each, the
   VIP of each rule; reported as the most frequent layer with its share of the seeds, the range,
   and how many seeds found none;
3. the effect rule's floor ``min_fraction`` at 0.1, 0.25 and 0.5.

    python bench/vip_rules.py [--n 1600] [--ns 100 200 400 800] [--seeds 10] [--markdown out.md]

``docs/vip_rules.md`` holds the tables of a run. Subsets are drawn by item; the demo world asks
about each image in four wordings, so items are not independent and N overstates the information.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # the repository root, for tools/
from _common import bench_parser, parse  # noqa: E402

from interp.studies.coe import compare_vip_rules  # noqa: E402
from probes.vip import RULES, VIPDetector  # noqa: E402
from tools.demo.evaluate import to_markdown  # noqa: E402

SETTINGS = (
    ("demo", "demo"),
    ("demo", "faint"),
    ("demo-smol", "demo"),
    ("demo-smol", "faint"),
)


def items(dataset: str, n: int) -> list:
    """The ``demo`` benchmark (colour questions) or notebook 07's faint-object colour items."""
    from interp.datasets import demo_world
    from interp.datasets.world import FAINT

    if dataset == "demo":
        return demo_world("test", n=n, qtypes=["color"])
    return demo_world("test", n=n, qtypes=["color"], opacity=FAINT, start=5000)


def measure(model: str, dataset: str, n: int, batch_size: int, cache: Path) -> dict:
    """Distances ``[N, L+1]``, the agreement split and correctness, from the cache or measured."""
    path = cache / f"{model}_{dataset}_{n}.npz"
    if path.exists():
        with np.load(path) as z:
            return {k: z[k] for k in z.files}
    import interp
    from interp.studies.coe import chain_of_embedding
    from interp.studies.coe.diagnosis import correctness

    start = time.perf_counter()
    vlm = interp.load(model)
    coe = chain_of_embedding(vlm, items(dataset, n), batch_size=batch_size, progress_bar=False)
    correct = correctness(coe)
    data = {
        "distances": coe.distance("cosine"),
        "in_vt": coe.agreement(),
        "correct": np.full(n, np.nan) if correct is None else correct,
    }
    cache.mkdir(parents=True, exist_ok=True)
    np.savez(path, **data)
    print(f"measured {model} on {dataset}: {n} items in {time.perf_counter() - start:.0f}s")
    return data


def fit_all(distances: np.ndarray, in_vt: np.ndarray, **options: object) -> dict[str, int | None]:
    """The VIP under each rule (None where it finds none)."""
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for rule in RULES:
            out[rule] = VIPDetector(rule=rule, **options).fit(distances, in_vt).layer_  # type: ignore[arg-type]
    return out


def layer_text(value: object) -> str:
    """A layer as text; ``none`` for a rule that found none."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "none"
    return str(int(value)) if isinstance(value, (int, float, np.integer)) else str(value)


def spread(found: list[int | None]) -> str:
    """``mode (share)``, the range, and how many found none, e.g. ``24 (10/10)`` or
    ``17 (4/10); 11-24; none 2``."""
    layers = [v for v in found if v is not None]
    if not layers:
        return f"none ({len(found)}/{len(found)})"
    mode, count = collections.Counter(layers).most_common(1)[0]
    text = f"{mode} ({count}/{len(found)})"
    if min(layers) != max(layers):
        text += f"; {min(layers)}–{max(layers)}"
    if len(layers) < len(found):
        text += f"; none {len(found) - len(layers)}"
    return text


def n_sensitivity(data: dict, ns: list[int], seeds: int) -> pd.DataFrame:
    """Rows (N, rule) → the VIP's spread over ``seeds`` random subsets of N items."""
    d, in_vt = data["distances"], data["in_vt"]
    rows = []
    for n in [*ns, len(d)]:
        draws = 1 if n >= len(d) else seeds
        found = collections.defaultdict(list)
        for seed in range(draws):
            pick = np.random.default_rng(seed).choice(len(d), size=min(n, len(d)), replace=False)
            for rule, layer in fit_all(d[pick], in_vt[pick]).items():
                found[rule].append(layer)
        rows += [{"N": n, "rule": rule, "vip": spread(found[rule])} for rule in RULES]
    return pd.DataFrame(rows)


def main() -> None:
    parser = bench_parser(__doc__, n=1600, batch_size=32, model=False, threads=1)
    parser.add_argument("--ns", type=int, nargs="+", default=[100, 200, 400, 800])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--cache", type=Path, default=Path("results/vip_rules"))
    parser.add_argument("--markdown", type=Path, help="also write the tables here")
    parser.add_argument(
        "--settings",
        nargs="+",
        default=[f"{m}/{d}" for m, d in SETTINGS],
        help="model/dataset pairs (default: all four)",
    )
    args: argparse.Namespace = parse(parser)
    settings = [tuple(s.split("/", 1)) for s in args.settings]
    per_setting, sensitivity, fractions = [], [], []
    for model, dataset in settings:
        data = measure(model, dataset, args.n, args.batch_size, args.cache)
        d, in_vt, correct = data["distances"], data["in_vt"], data["correct"]
        name = f"{model} / {dataset}"
        table = compare_vip_rules(d, in_vt, correct)
        table.insert(0, "setting", name)
        table.insert(1, "layers", d.shape[1] - 1)
        table.insert(2, "D_VT / D_T", f"{int(in_vt.sum())} / {int((~in_vt).sum())}")
        per_setting.append(table)
        sens = n_sensitivity(data, args.ns, args.seeds)
        sensitivity.append(sens.pivot(index="N", columns="rule", values="vip")[list(RULES)])
        sensitivity[-1].columns.name = name
        fractions.append(
            {
                "setting": name,
                **{
                    f"min_fraction={f}": fit_all(d, in_vt, min_fraction=f)["effect"]
                    for f in (0.1, 0.25, 0.5)
                },
            }
        )
    vips = pd.concat(per_setting, ignore_index=True)
    vips["vip"] = [layer_text(v) for v in vips["vip"]]
    vips["gap"] = [f"{g:.4f}" for g in vips["gap"]]
    if "p_value" in vips:
        vips["p_value"] = [f"{p:.1g}" for p in vips["p_value"]]
    wide = vips.pivot(index="rule", columns="setting", values="vip").loc[list(RULES)]
    wide = wide[[f"{m} / {s}" for m, s in settings]].reset_index()
    tables = {
        "VIP layer per rule (all items)": wide,
        "Per rule and setting": vips,
        "Effect rule: the floor min_fraction": pd.DataFrame(fractions).map(layer_text),
    }
    for sens in sensitivity:
        tables[f"N-sensitivity: {sens.columns.name}"] = sens.reset_index().rename_axis(None, axis=1)
    text = to_markdown(tables)
    print(text)
    if args.markdown:
        args.markdown.write_text(text)


if __name__ == "__main__":
    main()
