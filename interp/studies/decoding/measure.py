"""The model runs of the decoding study: every decoding method's answers, greedy and sampled.

:func:`evaluate_decoding` generates the answers of each method of :mod:`interventions.decoding`
(greedy, and once per sampling seed) through ``interp.generate`` and reads them as POPE
(→ :class:`DecodingRuns`, whose tables are the POPE metrics per run and their mean ± std over
seeds); :func:`parameter_sweep` sweeps α and β of one method; :func:`resolve_methods` builds and
validates the method objects before any compute.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import pandas as pd

import interp
from interp.conditions import Condition
from interp.edits import check_edits, local_only
from interp.errors import DecodingError, EmptyInputError
from interp.generation import check_decoding
from interp.options import RunOptions
from interp.reprs import Summary
from interp.samples import Sample, ensure_samples
from interp.store import substore
from interventions.decoding import PLAIN
from interventions.decoding import method as decoding_method

from .analysis import (
    DEFAULT_METHODS,
    METRICS,
    compare_methods,
    pope_metrics,
    pope_settings,
    yes_no,
)

if TYPE_CHECKING:
    from interp.model import VLM


@dataclass(repr=False)
class DecodingRuns(Summary):
    """Answers of every (method, mode, seed) run on the same questions.

    Attributes:
        answers: one row per run and sample: ``method``, ``mode`` (``greedy`` / ``sampled``),
            ``seed`` (-1 for greedy), ``sample_id``, ``truth``, ``answer``, ``predicted``
            (yes / no).
        settings: row indices (into the sample order) of each POPE setting.
        methods: the methods' reprs by name.
        groups: each sample's ``meta["group"]`` in sample order (the image its question is
            about: the unit :meth:`comparisons` resamples), or None where a sample has none.
    """

    answers: pd.DataFrame
    settings: dict[str, list[int]]
    methods: dict[str, str] = field(default_factory=dict)
    groups: list[Any] | None = None

    def _repr_head(self) -> dict[str, Any]:
        return {"rows": len(self.answers), "methods": list(self.methods) or None}

    def comparisons(
        self, setting: str, mode: str = "greedy", seed: int | None = None, n_boot: int = 2000
    ) -> pd.DataFrame:
        """The methods of one run ranked by accuracy on ``setting`` with paired bootstrap 95%
        intervals of each difference from plain decoding and from the top method
        (:func:`~interp.studies.decoding.analysis.compare_methods`): questions resampled by
        their :attr:`groups` (whole images) where every sample has one and the setting holds
        two or more, else one by one.
        ``mode="sampled"`` compares the runs of ``seed`` (default: the first seed).

        Raises:
            EmptyInputError: an unknown setting, or no run of that mode and seed.
        """
        if setting not in self.settings:
            raise EmptyInputError(f"no setting {setting!r}; the runs have {list(self.settings)}")
        runs = self.answers[self.answers["mode"] == mode]
        if seed is None and mode == "sampled" and len(runs):
            seed = int(runs["seed"].iloc[0])
        runs = runs[runs["seed"] == (-1 if mode == "greedy" else seed)]
        if runs.empty:
            raise EmptyInputError(f"no {mode} run (seed {seed}) to compare")
        rows = self.settings[setting]
        correct = {
            str(m): (run["predicted"] == run["truth"]).to_numpy()[rows]
            for m, run in runs.groupby("method", sort=False)
        }
        clusters = None if self.groups is None else [self.groups[i] for i in rows]
        if clusters is not None and len(set(clusters)) < 2:  # one image: resample questions
            clusters = None
        return compare_methods(correct, clusters, n_boot=n_boot)

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

    def to_frame(self) -> pd.DataFrame:
        """Mean and standard deviation over seeds (greedy runs have one seed, std 0) per
        (setting, method, mode); columns ``<metric>`` and ``<metric>_std``."""
        frame = self.metrics()
        keys = ["setting", "method", "mode"]
        mean = frame.groupby(keys, sort=False)[list(METRICS)].mean()
        std = frame.groupby(keys, sort=False)[list(METRICS)].std(ddof=0).add_suffix("_std")
        runs = frame.groupby(keys, sort=False)["seed"].count().rename("runs")
        return pd.concat([mean, std, runs], axis=1).reset_index()

    def summary(self, metric: str = "f1") -> str:
        """The readable table of one metric (:meth:`table`) as text."""
        return self.table(metric).to_string()

    def table(self, metric: str = "f1", setting: str | None = None) -> pd.DataFrame:
        """A readable table of one metric: methods as rows, ``mode`` as columns, cells
        ``mean ± std`` (for one setting, or one column block per setting)."""
        if metric not in METRICS:
            raise ValueError(f"unknown metric {metric!r}; use one of {METRICS}")
        s = self.to_frame()
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
    """Method objects by label, validated before any compute: each method under the name it
    was asked by (plain decoding, ``None``, as ``greedy`` or ``plain``; ``none`` reads as
    ``plain``).

    Raises:
        DecodingError: an unknown or repeated method, or bad parameters.
    """
    params = params or {}
    out: dict[str, Any] = {}
    for name in methods:
        key = str(name).strip().lower()
        label = "plain" if key == "none" else key
        if label in out or (key in PLAIN and any(v is None for v in out.values())):
            raise DecodingError(f"method {name!r} is listed twice")
        out[label] = decoding_method(key, **params.get(key, {}))
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
    run: RunOptions | None = None,
    **options: Any,
) -> DecodingRuns:
    """Generate the answers of every method, greedy and with each seed, and read them as POPE.

    Args:
        methods: names of :func:`interventions.decoding.method` (``greedy`` / ``plain`` is plain
            decoding, the baseline).
        params: per-method parameters overriding the defaults, e.g. ``{"vcd": {"alpha": 0.5}}``.
        greedy, seeds: run greedy decoding, and sampled decoding once per seed (VCD's scripts
            sample with temperature 1, no top-k or top-p).
        run: how it runs (:class:`~interp.options.RunOptions`; default ``batch_size`` 16): a
            ``store`` folder keeps each run's resumable store under it; its fields may also be
            given as keywords (``batch_size=8``, ``store=...``).

    Runs remotely (``remote=`` / a model loaded for NDIF) with every method (each lowers to
    plain data, PAI's attention boost included), greedy and sampled: one generation request per
    batch and run, the expert and amateur rows together.

    Raises:
        RemoteError: a remote run with a method that does not lower (a user's), before any
            compute.
        DecodingError: an unknown method or bad parameter, or a method the model cannot run
            (checked for every method before any compute).
        EmptyInputError: answers that are not yes/no, or no run asked for.
    """
    opts = _options(run, options)
    decoders = resolve_methods(methods, params)
    runs = _runs(seeds, greedy)
    _check_remote(vlm, opts, decoders, "evaluate_decoding")
    samples = ensure_samples(samples)
    settings = pope_settings(samples, setting_label)
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
                # plain decoding's store keeps the name it had before its label followed the
                # name asked for: an earlier run resumes
                run=replace(
                    opts,
                    store=substore(
                        opts.store, f"{'plain' if dec is None else name}-{mode}-{max(seed, 0)}"
                    ),
                ),
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
    groups = [s.meta.get("group") for s in samples]
    return DecodingRuns(
        pd.concat(frames, ignore_index=True),
        settings,
        reprs,
        groups=None if any(g is None for g in groups) else groups,
    )


def _options(run: RunOptions | None, options: dict[str, Any]) -> RunOptions:
    """The run options of an entry point (default ``batch_size`` 16)."""
    return RunOptions.resolve(run if run is not None else RunOptions(batch_size=16), **options)


def _check_remote(vlm: VLM, opts: RunOptions, decoders: dict[str, Any], step: str) -> None:
    """Before any compute: a remote run holds only methods that lower to plain data (every
    built-in one does; a user's method whose rule or edits do not is refused)."""
    trace = opts.trace_options()
    for name, dec in decoders.items():
        local_only(vlm, trace, f"{step} ({name})", decoding=dec)


def _check_all(vlm: VLM, samples: Sequence[Sample], decoders: dict[str, Any]) -> None:
    """Every method's checks (amateurs, batching, its edits) before the first generation."""
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
    run: RunOptions | None = None,
    **options: Any,
) -> pd.DataFrame:
    """Greedy POPE metrics of ``method`` over ``alphas`` (β fixed at ``beta``) and over ``betas``
    (α fixed at ``alpha``): one row per (swept parameter, value, setting).

    ``run`` is how each point runs (:class:`~interp.options.RunOptions`; default ``batch_size``
    16, no progress bar; a ``store`` folder keeps each point's runs under it); its fields may also
    be given as keywords.

    Raises:
        RemoteError: a remote run of a method that does not lower, before any compute.
    """
    default = RunOptions(batch_size=16, progress_bar=False)
    opts = _options(run if run is not None else default, options)
    _check_remote(vlm, opts, resolve_methods([method]), "parameter_sweep")
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
            run=replace(opts, store=substore(opts.store, f"{swept}-{value}")),
        )
        for _, r in runs.metrics().iterrows():
            rows.append({"parameter": swept, "value": value, **r.to_dict()})
    return pd.DataFrame(rows)


__all__ = [
    "DEFAULT_METHODS",
    "DecodingRuns",
    "evaluate_decoding",
    "parameter_sweep",
    "resolve_methods",
]
