"""The scaffold every study command shares: options, checks before compute, output folder, model,
data, and the outputs helper.

A study's ``cli.py`` declares its command in a few module-level names (``HELP``, ``DESCRIPTION``,
optional ``ALIASES``, ``DATA_HELP``, ...: see :func:`add_command`), adds its own options in
``register`` and writes its checks as small hooks; the scaffold runs them in one fixed order,
cheapest first, so that a refused command loads no model and leaves no folder:

1. the common options (:func:`interp.cli.check_common_arguments`) and ``--max-new-tokens`` >= 1;
   ``--remote`` on a command whose traces cannot run remotely yet (a
   :class:`~interp.errors.RemoteError`);
   ``--out`` is (or can become) a writable folder — nothing is created yet; the data's files
   (:func:`interp.data_spec.check_data_files`: the source exists, a JSONL's rows parse, every media
   file it names opens) — all without importing torch or transformers, so these errors print
   in well under 2 s;
2. ``check_options(inv)``: the study's own options (e.g. a list of conditions);
3. ``--out`` again (an option hook may have created nothing; the check is cheap);
4. the model's configuration alone (architecture supported, decoder depth L); ``check_layers(inv)``
   checks layer options against ``inv.n_layers``;
5. ``load_samples(inv)``: the samples (or the study's items), every image opened
   (:meth:`Invocation.load_data` by default), with the study's data checks;
6. the output folder is created (staged, see :mod:`interp.outputs`).

Then the model is loaded, one header line is printed, and the run (``RUN``, by default the study's
``report.report``, imported only now, so that registering a command imports none of the study's
model code) computes and writes through ``inv.out`` (an :class:`Outputs`: tables, figures at one
dpi and closed, the list of files written). The summary text it returns is written to
``summary.txt`` and printed, and the outputs are moved into ``--out``.

Each hook may return a mapping, merged into ``inv.plan``: what the checks resolved, for the run.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .cli import (
    DEMO_HELP,
    DefaultsFormatter,
    UsageError,
    add_common_arguments,
    check_common_arguments,
    check_label,
    check_model,
    check_output_dir,
    check_split_label,
    finish_outputs,
    partial_outputs_folder,
    use_adapter,
)
from .data_spec import check_data_files, load_data
from .options import NOT_LOWERED, refuse_remote

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .model import VLM

DPI = 130  # every figure a command writes

Hook = Callable[["Invocation"], Mapping[str, Any] | None]  # a check; what it resolved, for the run
DataHook = Callable[["Invocation"], Sequence[Any]]  # the samples (or items), checked
Run = Callable[["Invocation"], str | None]  # the summary text, or None: nothing more to write


class Outputs:
    """The files a command writes into its (staged) output folder, in the order written."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.files: list[str] = []

    @property
    def store(self) -> Path:
        """The resumable result store, ``<out>/store``."""
        return self.folder / "store"

    def path(self, name: str) -> Path:
        """Where ``name`` goes; recorded as written."""
        if name not in self.files:
            self.files.append(name)
        return self.folder / name

    def csv(self, frame: Any, name: str, **options: Any) -> Any:
        """Write a DataFrame as ``name``; its index only with ``index=True`` or an
        ``index_label``."""
        options.setdefault("index", "index_label" in options)
        frame.to_csv(self.path(name), **options)
        return frame

    def figure(self, fig: Figure, name: str) -> None:
        """Save a figure as ``name`` at :data:`DPI` and close it."""
        import matplotlib.pyplot as plt

        fig.savefig(self.path(name), dpi=DPI)
        plt.close(fig)

    def text(self, name: str, text: str) -> None:
        """Write ``text`` as ``name``."""
        self.path(name).write_text(text)

    def summary(self, text: str) -> Path:
        """The end of a command: ``summary.txt``, the text on stdout, then the outputs moved into
        place and the list of files printed; returns the real output folder."""
        self.text("summary.txt", text + "\n")
        print(text)
        return self.finish()

    def finish(self) -> Path:
        """Move the outputs into ``--out``, print the list of files written, and return the real
        output folder (:func:`interp.cli.finish_outputs`)."""
        return finish_outputs(self.folder)

    def partial_folder(self) -> Path:
        """Where this run's files will be kept if it fails now."""
        return partial_outputs_folder(self.folder)


@dataclass
class Invocation:
    """One run of a study command: its arguments and what the checks found."""

    args: argparse.Namespace
    command: StudyCommand
    shard: tuple[int, int] | None = None
    n_layers: int | None = None
    samples: list[Any] = field(default_factory=list)  # the samples, or the study's items
    plan: dict[str, Any] = field(default_factory=dict)  # what the study's checks resolved
    attn_implementation: str | None = None  # e.g. "eager", for edits inside attention
    out: Outputs | None = None
    vlm: VLM | None = None

    def run_options(self, store: str | None = None) -> dict[str, Any]:
        """What every study's measurements take from the common options, as keywords of
        :class:`~interp.options.RunOptions`: ``batch_size``, ``store`` (``<out>/store``, or its
        sub-folder ``store``), ``overwrite``, ``progress_bar`` and, with ``--remote``,
        ``remote=True``."""
        assert self.out is not None
        a = self.args
        out: dict[str, Any] = {
            "batch_size": a.batch_size,
            "store": self.out.store / store if store else self.out.store,
            "overwrite": a.overwrite,
            "progress_bar": not a.no_progress,
        }
        if getattr(a, "remote", False):
            out["remote"] = True
        return out

    def load_data(
        self, default_qtypes: Sequence[str], *, spec: str | None = None, n: int | None = None
    ) -> list[Any]:
        """The samples of ``--data`` (``spec`` instead, e.g. a translated demo name; ``n``
        instead of ``--n``) — see :func:`interp.data_spec.load_data`."""
        a = self.args
        count = a.n if n is None else n
        return load_data(
            spec or a.data, count, a.seed, default_qtypes=default_qtypes, columns=a.columns
        )


def _resolve(target: Run | str) -> Run:
    if not isinstance(target, str):
        return target
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


@dataclass
class StudyCommand:
    """A study command as the scaffold runs it (the parser's ``func``)."""

    name: str
    run: Run | str
    aliases: tuple[str, ...] = ()
    one_process: bool = True
    noun: str | None = "samples"  # the header counts these; None: no header
    options: Hook | None = None
    layers: Hook | None = None
    data: DataHook | None = None
    default_qtypes: Sequence[str] = ()
    remote: bool = False  # whether its traces can run on NDIF (``--remote``)

    def _hook(self, hook: Hook | None, inv: Invocation) -> None:
        if hook is not None:
            inv.plan.update(hook(inv) or {})

    def check(self, args: argparse.Namespace) -> Invocation:
        """Everything checked before the model is loaded, in the order of the module docstring;
        the output folder is created last."""
        inv = Invocation(args, self)
        inv.shard = check_common_arguments(
            args, one_process=f"interp {self.name}" if self.one_process else None
        )
        if getattr(args, "remote", False) and not self.remote:
            refuse_remote({"remote": True}, f"interp {self.name}", NOT_LOWERED)
        at_least(getattr(args, "max_new_tokens", 1), "--max-new-tokens", 1)
        check_output_dir(args.out, create=False)
        check_data_files(args.data, args.n, args.seed, args.columns)  # no heavy import yet
        self._hook(self.options, inv)
        check_output_dir(args.out, create=False)
        use_adapter(getattr(args, "adapter", None))
        inv.n_layers = check_model(args.model)
        self._hook(self.layers, inv)
        if self.data is None:
            inv.samples = inv.load_data(self.default_qtypes)
        else:
            inv.samples = list(self.data(inv) or [])
        inv.out = Outputs(check_output_dir(args.out))
        return inv

    def __call__(self, args: argparse.Namespace) -> int:
        inv = self.check(args)  # before the heavy imports: a refused command prints at once
        import matplotlib

        matplotlib.use("Agg")  # a command only writes files
        from . import model

        run = _resolve(self.run)
        # --remote: a model skeleton here (no weights read), every trace on NDIF
        remote = {"remote": True} if getattr(args, "remote", False) else {}
        inv.vlm = model.load(args.model, attn_implementation=inv.attn_implementation, **remote)
        if self.noun is not None and (inv.shard is None or inv.shard[0] == 0):
            print(f"{inv.vlm}\n{len(inv.samples)} {self.noun} from {args.data!r}", flush=True)
        text = run(inv)
        if isinstance(text, str):
            assert inv.out is not None
            inv.out.summary(text)
        return 0


def add_command(sub: Any, name: str, module: str) -> argparse.ArgumentParser:
    """Add the study command ``name`` that the module ``module`` (a study's ``cli``) declares to
    the ``interp`` parser, and return its parser for the study's own options.

    The module declares the command with these names (only ``HELP`` and ``DESCRIPTION`` are
    required; ``interp --help`` reads ``HELP`` and ``ALIASES`` from its source):

    - ``HELP``: the one-line help; ``DESCRIPTION``: the text the command's ``--help`` opens with;
    - ``ALIASES``: earlier names that run the same command (the manifest records ``name``);
    - ``DATA_HELP`` / ``N_HELP``: the help of ``--data`` / ``--n``;
    - ``NOUN``: what the header line counts (``"samples"``; None: no header);
    - ``ONE_PROCESS``: False when the command can run sharded (default True);
    - ``DEFAULT_QTYPES``: the demo question types ``--data demo`` reads;
    - ``REMOTE``: True when every trace the command opens can run on NDIF (``--remote``);
      default False: ``--remote`` is refused before anything is loaded;
    - ``check_options(inv)``, ``check_layers(inv)``, ``load_samples(inv)``: the hooks of
      :class:`StudyCommand` (``options``, ``layers``, ``data``);
    - ``RUN``: the run, ``"module:function"`` (default ``<study package>.report:report``).
    """
    mod = sys.modules[module]
    aliases = tuple(getattr(mod, "ALIASES", ()))
    command = StudyCommand(
        name=name,
        run=getattr(mod, "RUN", f"{module.rpartition('.')[0]}.report:report"),
        aliases=aliases,
        one_process=getattr(mod, "ONE_PROCESS", True),
        noun=getattr(mod, "NOUN", "samples"),
        options=getattr(mod, "check_options", None),
        layers=getattr(mod, "check_layers", None),
        data=getattr(mod, "load_samples", None),
        default_qtypes=getattr(mod, "DEFAULT_QTYPES", ()),
        remote=bool(getattr(mod, "REMOTE", False)),
    )
    parser = sub.add_parser(
        name,
        aliases=list(aliases),
        help=mod.HELP,
        description=mod.DESCRIPTION,
        formatter_class=DefaultsFormatter,
    )
    n_help = getattr(mod, "N_HELP", None)
    common = {"n_help": n_help} if n_help else {}
    add_common_arguments(parser, data_help=getattr(mod, "DATA_HELP", DEMO_HELP), **common)
    parser.set_defaults(func=command, command=name)
    return parser


def at_least(value: float, option: str, minimum: float, note: str = "") -> None:
    """Refuse ``value`` below ``minimum``: ``<option> must be >= <minimum><note>, got <value>``.

    Raises:
        UsageError: ``value < minimum``.
    """
    if value < minimum:
        raise UsageError(f"{option} must be >= {minimum}{note}, got {value}")


def parse_conditions(names: str | Sequence[str]) -> list[str]:
    """Condition names (a comma-separated option, or its items) in their canonical spelling.

    Raises:
        ConditionError: a name is not a condition.
    """
    from .conditions import Condition

    items = split_list(names) if isinstance(names, str) else names
    return [str(Condition.parse(c)) for c in items]


def split_list(text: str) -> list[str]:
    """The non-empty items of a comma-separated option."""
    return [t.strip() for t in text.split(",") if t.strip()]


def int_list(text: str, option: str) -> list[int]:
    """The integers of a comma-separated option.

    Raises:
        UsageError: an item is not an integer.
    """
    try:
        return [int(v) for v in split_list(text)]
    except ValueError:
        raise UsageError(f"{option} takes comma-separated integers, got {text!r}") from None


__all__ = [
    "DEMO_HELP",
    "DPI",
    "Invocation",
    "Outputs",
    "StudyCommand",
    "UsageError",
    "add_command",
    "at_least",
    "check_label",
    "check_split_label",
    "int_list",
    "parse_conditions",
    "split_list",
]
