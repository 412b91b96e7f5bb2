"""``reproduce(paper, model)``: run a paper's recipe and put its table beside the paper's rows.

Writes into ``out``: one sub-folder per study run (the study's own outputs and store, so a rerun
resumes), ``table.csv`` (this run: one row per table cell), ``published.csv`` (the paper's rows,
:mod:`~interp.studies.reproduce.published`), and ``table.md`` (both side by side, the paper's rows for this model first
when it has some).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from interp.errors import InterpError
from interp.options import RunOptions, refuse_remote
from interp.reprs import Summary

from .published import PUBLISHED, model_key
from .recipes import Recipe, Run, is_demo, recipes


class ReproduceError(InterpError, ValueError):
    """A recipe cannot run: an unknown paper, data missing for a run, or a study run failed."""


@dataclass(repr=False)
class Reproduction(Summary):
    """What :func:`reproduce` produced: ``table`` (this run), ``published`` (the paper's rows,
    those of this model first), the model's key in the paper (None: the paper has no row for it)
    and the output folder."""

    paper: str
    model: str
    table: pd.DataFrame
    published: pd.DataFrame
    model_key: str | None
    out: Path
    remote_notes: tuple[str, ...] = ()

    def _repr_head(self) -> dict[str, Any]:
        return {"paper": self.paper, "model": self.model, "rows": len(self.table)}

    def markdown(self) -> str:
        """``table.md``: this run's table, the paper's rows beside it, and the recipe's notes."""
        recipe = recipes()[self.paper]
        lines = [f"# {self.paper}: {recipe.title}", f"model: {self.model}", ""]
        lines += ["## this run", "", _md(self.table), "", "## the paper"]
        if (
            self.model_key is None
            or self.published.empty
            or not (self.published["model"] == self.model_key).any()
        ):
            lines.append("(the paper has no row for this model; its rows for its own models:)")
        lines += ["", _md(self.published)]
        notes = (*recipe.notes, *self.remote_notes)
        lines += ["", "## notes", ""] + [f"- {n}" for n in notes]
        return "\n".join(lines) + "\n"


def _cell(value: object) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return ""
    if isinstance(value, float):
        value = int(value) if value.is_integer() else f"{value:.4g}"
    return str(value).replace("|", "\\|")


def _md(frame: pd.DataFrame) -> str:
    if frame.empty:
        return "(none)"
    cols = list(frame.columns)
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, r in frame.iterrows():
        out.append("| " + " | ".join(_cell(r[c]) for c in cols) + " |")
    return "\n".join(out)


def run_data(
    recipe: Recipe,
    run: Run,
    model: str,
    data_root: str | Path | None,
    data: Mapping[str, str] | None,
) -> str:
    """The ``--data`` of one run: the user's (by run label, or the only run's), the demo
    stand-in on a demo model, else the registered benchmark (from ``data_root`` when given)."""
    given = dict(data or {})
    if run.label in given:
        return given[run.label]
    if "*" in given and len(recipe.runs) == 1:
        return given["*"]
    if is_demo(model):
        return run.demo_omni if (model == "demo-omni" and run.demo_omni) else run.demo
    if run.benchmark is None:
        raise ReproduceError(
            f"{recipe.paper}: the data of {run.label!r} is not published; give it with --data "
            f"{run.label!r}=FILE (a JSONL file or table with the study's labels)"
        )
    if data_root is None:
        return run.benchmark  # the hub, or $INTERP_DATA_ROOT
    from interp.datasets.benchmarks import get_benchmark

    folder = Path(os.path.expanduser(str(data_root))) / get_benchmark(run.benchmark).folder
    return f"{run.benchmark}@{folder}"


def reproduce(
    paper: str,
    model: str,
    *,
    out: str | Path,
    data_root: str | Path | None = None,
    data: Mapping[str, str] | None = None,
    n: int | None = None,
    extra: list[str] | None = None,
    run: RunOptions | None = None,
    **options: Any,
) -> Reproduction:
    """Run ``paper``'s recipe (its study's, :func:`~.recipes.recipes`) on ``model`` and write its
    table beside the paper's published rows (see the module docstring).

    Args:
        model: a checkpoint id or folder, or a demo model (``demo``: the demo world's stand-ins).
        data_root: a folder of local benchmark copies (one sub-folder per benchmark, e.g.
            ``DIR/MME``); None: the hub by dataset id, or ``$INTERP_DATA_ROOT``.
        data: ``{run label: --data spec}`` overriding a run's data (``"*"``: the only run's).
        n: samples per run (default: all). extra: more options for every study command.
        run: how every study command runs (:class:`~interp.options.RunOptions`; its fields may
            also be given as keywords): ``batch_size`` (default: the commands' own, 16),
            ``overwrite`` (start every run afresh) and ``progress_bar`` (default off; the former
            keyword ``progress`` is still read). Each run keeps its store in its own folder.

    ``remote`` (``True``: the configured NDIF host; a URL: that host) runs every study command
    with ``--remote`` on a model loaded for NDIF (every recipe's commands run there, the chain of
    embedding's visual attention included); the table's notes say so.

    Raises:
        RemoteError: a ``backend=`` (the study commands take ``--remote`` only), before any
            compute.
        ReproduceError: an unknown paper, unpublished data not given, or a failed study run.
        TypeError: a keyword that is neither an option of the commands nor of this function.
    """

    if "progress" in options:  # its former name
        options["progress_bar"] = options.pop("progress")
    if "batch_size" in options and options["batch_size"] is None:  # the commands' own
        del options["batch_size"]
    batch_given = run is not None or "batch_size" in options  # else the command's default
    default = RunOptions(batch_size=16, progress_bar=False)
    opts = RunOptions.resolve(run if run is not None else default, **options)
    if opts.backend is not None:
        refuse_remote(
            opts.trace_options(),
            "reproduce with a backend",
            "its study commands take --remote (the configured host, or a URL given as remote=)",
        )
    if opts.trace:  # a study command takes no nnsight keyword: a misspelt option
        raise TypeError(f"reproduce() got unexpected keyword arguments {sorted(opts.trace)}")

    found = recipes()
    recipe = found.get(paper)
    if recipe is None:
        raise ReproduceError(f"no recipe for {paper!r}; the papers are {', '.join(found)}")
    out = Path(out)
    specs = [run_data(recipe, run, model, data_root, data) for run in recipe.runs]  # before compute
    args, remote_notes = recipe.args(model), ()
    if opts.remote:  # every study command of a recipe runs there
        args, remote_notes = [*args, "--remote"], ("run on NDIF",)
    rows = []
    with _host(opts.remote):
        for run, spec in zip(recipe.runs, specs):
            rows += _one_run(
                recipe, run, spec, model, out, args + (extra or []), n, opts, batch_given
            )
    table = pd.DataFrame(rows)
    key = model_key(model)
    published = pd.DataFrame(PUBLISHED.get(paper, []))
    if key is not None and not published.empty:
        published = pd.concat(
            [published[published["model"] == key], published[published["model"] != key]]
        )
    result = Reproduction(
        paper, model, table, published.reset_index(drop=True), key, out, remote_notes
    )
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "table.csv", index=False)
    result.published.to_csv(out / "published.csv", index=False)
    (out / "table.md").write_text(result.markdown())
    return result


@contextmanager
def _host(remote: bool | str) -> Iterator[None]:
    """While open, ``--remote`` goes to ``remote`` where it is a URL (nnsight's configured host
    is set for the run, then restored)."""
    if not isinstance(remote, str):
        yield
        return
    from nnsight import CONFIG

    saved = CONFIG.API.HOST
    CONFIG.API.HOST = remote
    try:
        yield
    finally:
        CONFIG.API.HOST = saved


def _one_run(
    recipe: Recipe,
    run: Run,
    spec: str,
    model: str,
    out: Path,
    args: list[str],
    n: int | None,
    opts: RunOptions,
    batch_given: bool,
) -> list[dict]:
    """One study command of the recipe (its own output folder), and the rows it gives."""
    from interp import cli

    folder = out / run.label.replace(" ", "_").replace("/", "_")
    argv = [recipe.study, "--model", model, "--data", spec, "--out", str(folder), *args]
    if n is not None:
        argv += ["--n", str(n)]
    if batch_given:
        argv += ["--batch-size", str(opts.batch_size)]
    if opts.overwrite:
        argv.append("--overwrite")
    if not opts.progress_bar:
        argv.append("--no-progress")
    status = cli.main(argv)
    if status != 0:
        raise ReproduceError(
            f"{recipe.paper}: the run on {run.label!r} failed (interp {' '.join(argv)} "
            f"returned {status}; its error is printed above)"
        )
    return [{"dataset": run.label, **r} for r in recipe.collect(folder, run)]
