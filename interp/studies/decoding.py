"""Training-free decoding study: do contrastive decoding methods make the model look at the image?

POPE-style evaluation ("Evaluating Object Hallucination in Large Vision-Language Models", Li et
al., 2023) of each decoding method of :mod:`interventions.decoding` — greedy **and** sampled (one
run per seed, reported as mean ± std), so a method is never compared with a sampled baseline only:

- the questions are existence questions (``is there a <object> in the image?``) whose truth is
  ``yes`` for objects in the image and ``no`` for absent ones; absent objects are drawn in three
  ways (the ``pope_negative`` label): ``random``, ``popular`` (frequent objects) and
  ``adversarial`` (objects that co-occur with one in the image — where a language prior says yes);
- each setting is scored on the positive questions plus that setting's negatives, as POPE
  balances them;
- an answer counts as ``no`` if its words hold ``no`` or ``not``, else ``yes`` (POPE's rule);
- metrics (positive class ``yes``): accuracy, precision, recall, F1 and the yes-ratio.

Entry points: :func:`evaluate_decoding` (→ :class:`DecodingRuns`), :func:`parameter_sweep`
(α and β of one method), :func:`plot_methods` and :func:`plot_sweep` (matplotlib Figures), and
the command ``interp decode`` (:func:`register`).
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from interp.cli import (
    UsageError,
    add_common_arguments,
    check_common_arguments,
    check_model,
    check_output_dir,
    load_data,
    write_summary,
)
from interp.conditions import Condition
from interp.errors import DecodingError, EmptyInputError
from interp.samples import Sample, ensure_samples

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from interp.model import VLM

SETTINGS: tuple[str, ...] = ("random", "popular", "adversarial")
METRICS: tuple[str, ...] = ("accuracy", "precision", "recall", "f1", "yes_ratio")
DEFAULT_METHODS: tuple[str, ...] = ("greedy", "vcd", "icd", "m3id", "vdd", "pai")


# -- answers and metrics -------------------------------------------------------------------------


def yes_no(answer: str) -> str:
    """POPE's reading of a free answer: ``"no"`` if its words hold ``no`` or ``not`` (also
    ``n't``), else ``"yes"``."""
    words = re.findall(r"[a-z']+", str(answer).lower())
    return "no" if any(w in ("no", "not") or w.endswith("n't") for w in words) else "yes"


def pope_metrics(predicted: Sequence[str], truth: Sequence[str]) -> dict[str, float]:
    """Accuracy, precision, recall, F1 (positive class ``yes``) and the share of ``yes`` answers.

    ``predicted`` and ``truth`` hold ``"yes"`` / ``"no"``. Precision is NaN when nothing is
    predicted ``yes``; recall is NaN without a ``yes`` in ``truth``; F1 is 0 when precision and
    recall are both 0.

    Raises:
        EmptyInputError: no answers, or the two lists differ in length.
    """
    pred = np.asarray([p == "yes" for p in predicted])
    true = np.asarray([t == "yes" for t in truth])
    if pred.size == 0 or pred.shape != true.shape:
        raise EmptyInputError(
            f"need as many answers as truths, at least one (got {pred.size} and {true.size})"
        )
    tp = float(np.sum(pred & true))
    fp = float(np.sum(pred & ~true))
    fn = float(np.sum(~pred & true))
    precision = tp / (tp + fp) if tp + fp else float("nan")
    recall = tp / (tp + fn) if tp + fn else float("nan")
    if np.isnan(precision) or np.isnan(recall):
        f1 = float("nan")
    else:
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "accuracy": float(np.mean(pred == true)),
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "yes_ratio": float(np.mean(pred)),
        "n": int(pred.size),
    }


def pope_settings(samples: Sequence[Sample], label: str = "pope_negative") -> dict[str, list[int]]:
    """Row indices of each POPE setting: every positive question (answer ``yes``) plus the
    negatives whose ``label`` is the setting. Samples without the label anywhere form one setting
    ``"all"``.

    Raises:
        EmptyInputError: a sample's answer is not yes/no, or no sample is positive or negative.
    """
    truths = []
    for s in samples:
        answer = (s.answer or "").strip().lower()
        if answer not in ("yes", "no"):
            raise EmptyInputError(
                f"sample {s.id!r}: a POPE question's answer is 'yes' or 'no', got {s.answer!r}"
            )
        truths.append(answer)
    positives = [i for i, t in enumerate(truths) if t == "yes"]
    negatives = [i for i, t in enumerate(truths) if t == "no"]
    if not positives or not negatives:
        raise EmptyInputError(
            f"POPE scores need questions answered yes and no; got {len(positives)} yes and "
            f"{len(negatives)} no"
        )
    kinds = [samples[i].meta.get(label) for i in negatives]
    if all(k is None for k in kinds):
        return {"all": sorted(positives + negatives)}
    found = sorted({str(k) for k in kinds if k is not None}, key=_setting_order)
    return {
        kind: sorted(positives + [i for i, k in zip(negatives, kinds) if str(k) == kind])
        for kind in found
    }


def _setting_order(kind: str) -> tuple[int, str]:
    return (SETTINGS.index(kind) if kind in SETTINGS else len(SETTINGS), kind)


# -- the runs ------------------------------------------------------------------------------------


@dataclass
class DecodingRuns:
    """Answers of every (method, mode, seed) run on the same questions.

    Attributes:
        answers: one row per run and sample: ``method``, ``mode`` (``greedy`` / ``sampled``),
            ``seed`` (-1 for greedy), ``sample_id``, ``truth``, ``answer``, ``predicted``
            (yes / no).
        settings: row indices (into the sample order) of each POPE setting.
        methods: the methods' reprs by name.
    """

    answers: pd.DataFrame
    settings: dict[str, list[int]]
    methods: dict[str, str] = field(default_factory=dict)

    def metrics(self) -> pd.DataFrame:
        """One row per (method, mode, seed, setting) with :func:`pope_metrics`."""
        rows = []
        for (method, mode, seed), run in self.answers.groupby(
            ["method", "mode", "seed"], sort=False
        ):
            run = run.reset_index(drop=True)
            for setting, idx in self.settings.items():
                part = run.iloc[idx]
                m = pope_metrics(part["predicted"].tolist(), part["truth"].tolist())
                rows.append({"method": method, "mode": mode, "seed": seed, "setting": setting, **m})
        return pd.DataFrame(rows)

    def summary(self) -> pd.DataFrame:
        """Mean and standard deviation over seeds (greedy runs have one seed, std 0) per
        (setting, method, mode); columns ``<metric>`` and ``<metric>_std``."""
        frame = self.metrics()
        keys = ["setting", "method", "mode"]
        mean = frame.groupby(keys, sort=False)[list(METRICS)].mean()
        std = frame.groupby(keys, sort=False)[list(METRICS)].std(ddof=0).add_suffix("_std")
        runs = frame.groupby(keys, sort=False)["seed"].count().rename("runs")
        return pd.concat([mean, std, runs], axis=1).reset_index()

    def to_frame(self) -> pd.DataFrame:
        return self.summary()

    def table(self, metric: str = "f1", setting: str | None = None) -> pd.DataFrame:
        """A readable table of one metric: methods as rows, ``mode`` as columns, cells
        ``mean ± std`` (for one setting, or one column block per setting)."""
        if metric not in METRICS:
            raise ValueError(f"unknown metric {metric!r}; use one of {METRICS}")
        s = self.summary()
        if setting is not None:
            s = s[s["setting"] == setting]
        cell = s.apply(
            lambda r: (
                f"{r[metric]:.3f}"
                if r["mode"] == "greedy"
                else f"{r[metric]:.3f} ± {r[metric + '_std']:.3f}"
            ),
            axis=1,
        )
        s = s.assign(cell=cell)
        out = s.pivot_table(
            index="method", columns=["setting", "mode"], values="cell", aggfunc="first", sort=False
        )
        return out


def _runs(seeds: Sequence[int], greedy: bool) -> list[tuple[str, int]]:
    return ([("greedy", -1)] if greedy else []) + [("sampled", int(s)) for s in seeds]


def resolve_methods(
    methods: Sequence[str], params: dict[str, dict[str, Any]] | None = None
) -> dict[str, Any]:
    """Method objects by name (``None`` for plain decoding, named ``plain``), validated before
    any compute.

    Raises:
        DecodingError: an unknown or repeated method, or bad parameters.
    """
    from interventions.decoding import PLAIN, method

    params = params or {}
    out: dict[str, Any] = {}
    for name in methods:
        key = str(name).strip().lower()
        label = "plain" if key in PLAIN else key
        if label in out:
            raise DecodingError(f"method {name!r} is listed twice")
        out[label] = method(key, **params.get(key, {}))
    unknown = set(params) - {str(k).strip().lower() for k in methods} - set(PLAIN)
    if unknown:
        raise DecodingError(f"parameters given for methods not run: {sorted(unknown)}")
    if not out:
        raise DecodingError("give at least one decoding method")
    return out


def evaluate_decoding(
    vlm: VLM,
    samples: Sequence[Sample],
    methods: Sequence[str] = DEFAULT_METHODS,
    *,
    params: dict[str, dict[str, Any]] | None = None,
    greedy: bool = True,
    seeds: Sequence[int] = (0, 1, 2),
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    max_new_tokens: int = 4,
    setting_label: str = "pope_negative",
    batch_size: int = 16,
    store: str | Path | None = None,
    overwrite: bool = False,
    progress_bar: bool = True,
) -> DecodingRuns:
    """Generate the answers of every method, greedy and with each seed, and read them as POPE.

    Args:
        methods: names of :func:`interventions.decoding.method` (``greedy`` / ``plain`` is plain
            decoding, the baseline).
        params: per-method parameters overriding the defaults, e.g. ``{"vcd": {"alpha": 0.5}}``.
        greedy, seeds: run greedy decoding, and sampled decoding once per seed (VCD's scripts
            sample with temperature 1, no top-k or top-p).
        store: a folder; each run keeps its own resumable store under it.

    Raises:
        DecodingError: an unknown method or bad parameter, or a method the model cannot run
            (checked for every method before any compute).
        EmptyInputError: answers that are not yes/no, or no run asked for.
    """
    import interp

    samples = ensure_samples(samples)
    settings = pope_settings(samples, setting_label)
    decoders = resolve_methods(methods, params)
    runs = _runs(seeds, greedy)
    if not runs:
        raise EmptyInputError("nothing to run: greedy=False and no seeds")
    _check_all(vlm, samples, decoders)
    truth = [str(s.answer).strip().lower() for s in samples]
    frames = []
    for name, dec in decoders.items():
        for mode, seed in runs:
            gen = interp.generate(
                vlm,
                samples,
                decoding=dec,
                do_sample=mode == "sampled",
                seed=max(seed, 0),
                temperature=temperature,
                top_k=top_k,
                top_p=top_p,
                max_new_tokens=max_new_tokens,
                batch_size=batch_size,
                store=None if store is None else Path(store) / f"{name}-{mode}-{max(seed, 0)}",
                overwrite=overwrite,
                progress_bar=progress_bar,
            )
            frames.append(
                pd.DataFrame(
                    {
                        "method": name,
                        "mode": mode,
                        "seed": seed,
                        "sample_id": gen.sample_ids,
                        "truth": truth,
                        "answer": gen.texts,
                        "predicted": [yes_no(a) for a in gen.texts],
                    }
                )
            )
    reprs = {k: "plain decoding" if v is None else repr(v) for k, v in decoders.items()}
    return DecodingRuns(pd.concat(frames, ignore_index=True), settings, reprs)


def _check_all(vlm: VLM, samples: Sequence[Sample], decoders: dict[str, Any]) -> None:
    """Every method's checks (amateurs, batching, its edits) before the first generation."""
    from interp.conditions import Condition
    from interp.edits import check_edits
    from interp.generation import check_decoding

    for dec in decoders.values():
        if dec is not None:
            check_decoding(vlm, Condition.parse("full"), dec, samples)
            check_edits(vlm, dec.edits)


def parameter_sweep(
    vlm: VLM,
    samples: Sequence[Sample],
    method: str = "vcd",
    *,
    alphas: Sequence[float] = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0),
    betas: Sequence[float] = (0.01, 0.05, 0.1, 0.2, 0.5, 1.0),
    alpha: float = 1.0,
    beta: float = 0.1,
    max_new_tokens: int = 4,
    setting_label: str = "pope_negative",
    batch_size: int = 16,
    progress_bar: bool = False,
) -> pd.DataFrame:
    """Greedy POPE metrics of ``method`` over ``alphas`` (β fixed at ``beta``) and over ``betas``
    (α fixed at ``alpha``): one row per (swept parameter, value, setting)."""
    rows = []
    plan = [("alpha", a, {"alpha": a, "beta": beta}) for a in alphas]
    plan += [("beta", b, {"alpha": alpha, "beta": b}) for b in betas]
    for swept, value, kw in plan:
        runs = evaluate_decoding(
            vlm,
            samples,
            [method],
            params={method: kw},
            seeds=(),
            max_new_tokens=max_new_tokens,
            setting_label=setting_label,
            batch_size=batch_size,
            progress_bar=progress_bar,
        )
        for _, r in runs.metrics().iterrows():
            rows.append({"parameter": swept, "value": value, **r.to_dict()})
    return pd.DataFrame(rows)


# -- figures -------------------------------------------------------------------------------------


def plot_methods(runs: DecodingRuns, metrics: Sequence[str] = ("f1", "yes_ratio")) -> Figure:
    """One panel per (metric, setting): each method's greedy value (bar) and sampled mean ± std
    (bar with error bar), the plain baseline's greedy value as a dashed line."""
    import matplotlib.pyplot as plt

    s = runs.summary()
    settings = list(runs.settings)
    names = list(dict.fromkeys(s["method"]))
    fig, axes = plt.subplots(
        len(metrics),
        len(settings),
        figsize=(3.6 * len(settings), 2.8 * len(metrics)),
        squeeze=False,
        sharey="row",
    )
    x = np.arange(len(names))
    for r, metric in enumerate(metrics):
        for c, setting in enumerate(settings):
            ax = axes[r, c]
            part = s[s["setting"] == setting].set_index(["method", "mode"])
            for k, (mode, colour) in enumerate((("greedy", "C0"), ("sampled", "C1"))):
                vals = [part[metric].get((n, mode), np.nan) for n in names]
                errs = [part[metric + "_std"].get((n, mode), 0.0) for n in names]
                ax.bar(
                    x + (k - 0.5) * 0.38, vals, 0.38, yerr=errs, color=colour, label=mode, capsize=2
                )
            base = part[metric].get(("plain", "greedy"), np.nan)
            if not np.isnan(base):
                ax.axhline(base, color="k", ls="--", lw=0.8)
            ax.set_xticks(x, names, rotation=30)
            ax.set_title(f"{setting}: {metric}", fontsize=9)
    axes[0, 0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_sweep(frame: pd.DataFrame, setting: str = "adversarial") -> Figure:
    """The α and β sweeps of :func:`parameter_sweep` on one setting: F1 and yes-ratio."""
    import matplotlib.pyplot as plt

    part = frame[frame["setting"] == setting]
    fig, axes = plt.subplots(1, 2, figsize=(8, 3))
    for ax, swept in zip(axes, ("alpha", "beta")):
        sub = part[part["parameter"] == swept].sort_values("value")
        for metric, style in (("f1", "o-"), ("yes_ratio", "s--"), ("accuracy", "^:")):
            ax.plot(sub["value"], sub[metric], style, label=metric)
        ax.set_xlabel(swept if swept == "alpha" else "beta (log scale)")
        if swept == "beta":
            ax.set_xscale("log")
        ax.set_title(f"{setting}: {swept} sweep", fontsize=9)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    return fig


# -- the command ---------------------------------------------------------------------------------

DATA_HELP = (
    "'pope' (the demo world's POPE-style existence questions), 'demo:<qtype,...>' with yes/no "
    "answers, or a JSONL file (image, question, answer yes/no, and a 'pope_negative' label "
    "random/popular/adversarial on the negatives)"
)


def _int_list(text: str, option: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise UsageError(f"{option} takes comma-separated integers, got {text!r}") from None
    if any(v < 0 for v in values):
        raise UsageError(f"{option}: seeds must be >= 0, got {text!r}")
    return values


def _validate(args: argparse.Namespace) -> tuple[list[Sample], dict[str, Any], list[int], Path]:
    """Everything checked before the model is loaded: options, methods, output folder, model
    configuration, data (every image opened, yes/no answers)."""
    check_common_arguments(args, one_process="interp decode")
    seeds = _int_list(args.seeds, "--seeds")
    if args.max_new_tokens < 1:
        raise UsageError(f"--max-new-tokens must be >= 1, got {args.max_new_tokens}")
    if not args.temperature > 0:
        raise UsageError(f"--temperature must be > 0, got {args.temperature}")
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    params: dict[str, dict[str, Any]] = {}
    for name in methods:
        key = name.lower()
        if key in ("greedy", "plain", "none", "pai"):
            continue
        if args.alpha is not None and key != "m3id":
            params.setdefault(key, {})["alpha"] = args.alpha
        if args.beta is not None:
            params.setdefault(key, {})["beta"] = args.beta
    if "contrast" in [m.lower() for m in methods]:
        params.setdefault("contrast", {})["amateur"] = args.amateur
    decoders = resolve_methods(methods, params)
    expert = Condition.parse("full")
    for name, dec in decoders.items():
        if dec is not None and expert in dec.amateurs:
            raise DecodingError(
                f"{name}: the amateur condition 'full' equals the expert's input; give an "
                "amateur that removes or degrades something (e.g. --amateur blind)"
            )
    check_output_dir(args.out, create=False)
    check_model(args.model)
    spec = "demo:exist" if args.data == "pope" else args.data
    samples = load_data(spec, args.n, args.seed, default_qtypes=("exist",), columns=args.columns)
    pope_settings(samples)
    out = check_output_dir(args.out)
    return samples, {"methods": methods, "params": params, "decoders": decoders}, seeds, out


def _decode_command(args: argparse.Namespace) -> int:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from interp.model import load

    samples, plan, seeds, out = _validate(args)
    eager = any(d is not None and d.edits for d in plan["decoders"].values())
    vlm = load(args.model, attn_implementation="eager" if eager else None)
    print(f"{vlm}\n{len(samples)} questions from {args.data!r}", flush=True)
    runs = evaluate_decoding(
        vlm,
        samples,
        plan["methods"],
        params=plan["params"],
        seeds=seeds,
        greedy=not args.no_greedy,
        temperature=args.temperature,
        max_new_tokens=args.max_new_tokens,
        batch_size=args.batch_size,
        store=out / "store",
        overwrite=args.overwrite,
        progress_bar=not args.no_progress,
    )
    runs.answers.to_csv(out / "answers.csv", index=False)
    runs.metrics().to_csv(out / "metrics.csv", index=False)
    summary = runs.summary()
    summary.to_csv(out / "summary.csv", index=False)
    plot_methods(runs).savefig(out / "methods.png", dpi=130)
    plt.close("all")
    lines = [f"model {args.model!r}, data {args.data!r}, {len(samples)} questions"]
    lines += [f"  {k}: {v}" for k, v in runs.methods.items()]
    for metric in ("f1", "yes_ratio", "accuracy"):
        lines += ["", f"{metric} (greedy; sampled mean ± std over seeds {seeds}):"]
        lines.append(runs.table(metric).to_string())
    text = "\n".join(lines)
    write_summary(out, text)
    return 0


def register(sub: Any) -> None:
    """Add ``decode`` to the ``interp`` command."""
    d = sub.add_parser(
        "decode",
        help="POPE-style evaluation of contrastive decoding methods (greedy and sampled)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common_arguments(d, data_help=DATA_HELP)
    d.add_argument(
        "--methods",
        default=",".join(DEFAULT_METHODS),
        help="comma-separated: greedy (plain decoding), vcd, icd, vdd, m3id, pai, contrast",
    )
    d.add_argument("--seeds", default="0,1,2", help="sampling seeds ('' for greedy only)")
    d.add_argument("--no-greedy", action="store_true", help="sampled runs only")
    d.add_argument("--temperature", type=float, default=1.0, help="sampling temperature")
    d.add_argument("--alpha", type=float, default=None, help="override α of vcd/icd/vdd/contrast")
    d.add_argument("--beta", type=float, default=None, help="override β of every method but pai")
    d.add_argument(
        "--amateur", default="blind", help="the amateur condition of 'contrast' (default blind)"
    )
    d.add_argument("--max-new-tokens", type=int, default=4)
    d.set_defaults(func=_decode_command)


__all__ = [
    "DEFAULT_METHODS",
    "METRICS",
    "SETTINGS",
    "DecodingRuns",
    "evaluate_decoding",
    "parameter_sweep",
    "plot_methods",
    "plot_sweep",
    "pope_metrics",
    "pope_settings",
    "register",
    "resolve_methods",
    "yes_no",
]
