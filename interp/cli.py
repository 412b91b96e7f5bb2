"""Command line: ``interp <study> ...``.

Each study registers its subcommand through the study registry (:mod:`interp.study_registry`:
the ``interp.studies`` entry points of ``pyproject.toml``), so this module never imports a study:
a study's entry names its ``StudyEntry``, whose ``cli`` is its ``register(subparsers)`` (which
adds its parser and sets ``func``, through the scaffold :func:`interp.command.add_command`); a
plain command (``doctor``, or a third party's) names its ``register`` function directly. The key
is the command's name (and the study package's); a command may keep earlier names as aliases
(``diagnose`` for ``coe``, ``ablate`` for ``ablation``, ``decode`` for ``decoding``). The main job
is ``interp coe`` (the chain-of-embedding study).

Every user error prints one line ``error: ...`` and exits with status 2 — bad arguments, missing
files, unreadable images, stores written by another run — and as much as possible is checked
before the model is loaded. This module also holds the helpers the studies' commands share:
common options, demo/JSONL data loading, validation of the data and output folder, and silencing
progress bars.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any, NoReturn

from .errors import InterpError
from .help import declared_command, short_description
from .outputs import OutputMixError, OutputRun
from .study_registry import ENTRY_POINT_GROUP, command, load, registered
from .threads import THREADS_ENV, apply_threads

_RUN: OutputRun | None = None  # the outputs of the command that main() is running


class UsageError(InterpError, ValueError):
    """A command-line argument is invalid."""


class DefaultsFormatter(argparse.RawDescriptionHelpFormatter):
    """Help text as written (the description's paragraphs kept), with every option's default
    appended where it has one and its help does not already state it."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if (
            action.option_strings
            and default not in (None, False, argparse.SUPPRESS)
            and not isinstance(action, (argparse._HelpAction, argparse._VersionAction))
            and "default" not in text
            and "%(default)" not in text
        ):
            text += " (default: %(default)s)"
        return text


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one ``error: ...`` line and exit status 2, and whose
    ``--help`` opens with the first paragraph of its description as plain text (a study passes
    its module docstring; the rest of it is the module's documentation)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        description = kwargs.get("description")
        if description:
            kwargs["description"] = short_description(description)
            kwargs["formatter_class"] = DefaultsFormatter
        super().__init__(*args, **kwargs)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        """As argparse's; an option without help text still shows its default."""
        default = kwargs.get("default")
        if kwargs.get("help") is None and default not in (None, False, argparse.SUPPRESS):
            kwargs["help"] = "(default: %(default)s)"
        return super().add_argument(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        print(f"error: {self.prog}: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(2)


# -- shared options and validation ----------------------------------------------------------------


def add_common_arguments(
    parser: argparse.ArgumentParser,
    *,
    data_help: str,
    n_help: str = "number of samples (default: demo 600, a data file all)",
) -> None:
    """Options every study command takes: model, data, output folder, sample count, batching,
    store handling, sharding, CPU threads, progress bars and where the traces run
    (``--remote``)."""
    parser.add_argument("--model", required=True, help=MODEL_HELP)
    parser.add_argument("--adapter", default=None, help=ADAPTER_HELP)
    parser.add_argument("--data", required=True, help=f"{data_help}; {DATA_FORMATS_HELP}")
    parser.add_argument(
        "--columns",
        default=None,
        help="which columns of parquet / datasets data hold the sample fields, e.g. "
        "'question=query,image=img,answer=answers,id=qid' (defaults: common names such as "
        "question/query/prompt, image/img, answer/answers/label; image=none: text only; "
        "audio=<col>, video=<col> for audio and video columns); the other columns become labels",
    )
    parser.add_argument(
        "--out",
        required=True,
        help="output folder (holds the resumable store; the outputs are moved in when the run "
        "succeeds)",
    )
    parser.add_argument("--n", type=int, default=None, help=n_help)
    parser.add_argument("--seed", type=int, default=0, help="demo world seed")
    parser.add_argument("--batch-size", type=int, default=16, help="samples per forward")
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the outputs already in --out and discard its store instead of resuming "
        "it (needed when --out holds another command's or another configuration's outputs)",
    )
    parser.add_argument(
        "--shard",
        default="auto",
        help="'i/n': compute every n-th sample starting at i into the shared store, then wait for "
        "the other processes ('auto': from accelerate launch / torchrun, else one process)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help=f"CPU threads for torch (default: ${THREADS_ENV}, else $OMP_NUM_THREADS, else half "
        "the CPUs this process may use; see README, Performance)",
    )
    parser.add_argument(
        "--no-progress", action="store_true", help="no progress bars (transformers' included)"
    )
    parser.add_argument(
        "--remote",
        action="store_true",
        help=f"{REMOTE_HELP}; no weights are read here. A study whose traces cannot run remotely "
        "yet stops before anything is loaded",
    )


def silence_progress() -> None:
    """Turn off every progress bar: the library's, transformers' (e.g. "Loading weights") and
    tqdm's defaults."""
    os.environ["TQDM_DISABLE"] = "1"
    # transformers reads this when it is imported (later, if the command gets that far)
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    if "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()


def check_output_dir(out: str | Path, *, create: bool = True) -> Path:
    """Check that ``out`` is (or can become) a writable folder; create it if ``create``.

    Inside an ``interp`` command, ``create=True`` on the command's ``--out`` also refuses outputs
    that would mix with another run's and returns the staging folder the command writes into
    (see :mod:`interp.outputs`); its ``store`` is the real ``<out>/store``.

    With ``create=False`` nothing is written: an existing ``out`` must be a folder the process
    may write to, a missing one must have a writable folder as its nearest existing ancestor
    (and no file on the way). Run that first, so that a command refused for another reason
    leaves no empty folder behind.

    Raises:
        UsageError: ``out`` is a file, lies under a file, or cannot be created or written.
    """
    path = Path(out)
    if not str(out).strip():
        raise UsageError("--out is empty; give an output folder")
    if create and _RUN is not None and _RUN.serves(out):
        check_output_dir(out, create=False)
        _RUN.created = not path.exists()
        path.mkdir(parents=True, exist_ok=True)
        try:
            return _RUN.stage(path)
        except OutputMixError as err:
            raise UsageError(str(err)) from None
        except OSError as err:
            raise UsageError(
                f"--out {str(path)!r} is not a writable folder ({err.strerror})"
            ) from None
    if not create:
        existing = path.absolute()
        while not existing.exists() and existing != existing.parent:
            existing = existing.parent
        if existing.exists() and not existing.is_dir():
            where = (
                "is a file" if existing == path.absolute() else f"lies under the file {existing}"
            )
            raise UsageError(f"--out {str(path)!r} {where}; give a folder")
        if not os.access(existing, os.W_OK | os.X_OK):
            raise UsageError(
                f"--out {str(path)!r} is not a writable folder (no write permission on {existing})"
            )
        return path
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".interp-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as err:
        raise UsageError(f"--out {str(path)!r} is not a writable folder ({err.strerror})") from None
    return path


MODEL_HELP = (
    "'demo', 'demo-omni' (image + audio + video), 'demo-omni-control', 'demo-smol' (the [smol] extra), a local model folder or "
    "a hub id"
)

DATA_FORMATS_HELP = (
    "also a parquet file, folder or glob, a Hugging Face datasets folder (save_to_disk; "
    "'folder:split' picks a DatasetDict split) or a hub dataset id 'org/name[:split]' (needs a "
    "network) — see --columns; or a paper's benchmark by name, 'NAME[:variant][@local copy]' "
    "(mme, mmbench, mmstar, mmmu, vlind, vilp, csqa-coco, pope:adversarial, mavis, cifar100, "
    "food101, landmarks, mnist, okvqa, llava-video, miradata, vlmbias; see interp.read_benchmark)"
)

DEMO_HELP = (
    "'demo' (the demo world's language-prior benchmark), 'demo:general' (every question type), "
    "'demo:v3' (the audio and video types trimodal, hear, motion), 'demo:<qtype,...>', or a "
    "JSONL file (image, question, answer, labels)"
)


def check_label(samples: Sequence[Any], name: str | None, option: str) -> None:
    """``name`` must be a ``meta`` label of at least one sample.

    Raises:
        UsageError: no sample carries it (the message lists the labels that exist).
    """
    if name is None:
        return
    labels = sorted({k for s in samples for k in s.meta})
    if not any(name in s.meta for s in samples):
        raise UsageError(
            f"{option} {name!r}: no sample has this label; labels in the data: "
            f"{', '.join(labels) or '(none)'}"
        )


def _is_boolean(value: Any) -> bool:
    """True/False, 0/1 or a numpy bool/integer 0/1 (not a string, float or other object)."""
    import numpy as np

    return isinstance(value, (bool, int, np.bool_, np.integer)) and value in (0, 1)


def check_split_label(samples: Sequence[Any], name: str, option: str) -> None:
    """``name`` must be a boolean ``meta`` label (``true``/``false``, or 0/1) of every sample,
    with at least two samples on each side (the two-sample test needs a variance per group).

    Raises:
        UsageError: a sample lacks it, a value is not boolean, or a side has fewer than 2.
    """
    check_label(samples, name, option)
    values = [s.meta.get(name) for s in samples]
    missing = [s.id for s, v in zip(samples, values) if v is None]
    if missing:
        raise UsageError(
            f"{option} {name!r}: {len(missing)} of {len(samples)} samples have no value for this "
            f"label (e.g. sample {missing[0]!r}); every sample needs true or false"
        )
    bad = [v for v in values if not _is_boolean(v)]
    if bad:
        raise UsageError(
            f"{option} {name!r}: not a boolean label (values such as {bad[0]!r}); give a label "
            "whose values are true/false"
        )
    n_true = sum(bool(v) for v in values)
    if min(n_true, len(values) - n_true) < 2:
        raise UsageError(
            f"{option} {name!r}: {n_true} samples are true and {len(values) - n_true} false; each "
            "group needs at least 2 samples"
        )


def model_layers(model: str) -> int:
    """The decoder depth L of a model, read from its configuration only (no weights), for
    validating layer options before the model is loaded."""
    from .model import model_config

    return _decoder_layers(model_config(model), model)


REMOTE_HELP = "run every trace on NDIF (the API key from nnsight's config or NDIF_API_KEY)"

ADAPTER_HELP = (
    "module:name of an interp.Adapter for a model type without a built-in entry (e.g. "
    "my_pkg.adapters:MY_VLM); it is registered for its model_types before --model is checked"
)


def use_adapter(spec: str | None) -> Any:
    """Register the adapter named by ``--adapter module:name`` (None: nothing); return it."""
    from .adapters.registry import adapter_from_spec

    return None if spec is None else adapter_from_spec(spec, "--adapter")


def _decoder_layers(config: Any, model: str) -> int:
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    layers = getattr(text, "num_hidden_layers", None)
    if layers is None:
        raise UsageError(f"cannot read the number of decoder layers from {model!r}'s config")
    return int(layers)


def check_model(model: str) -> int:
    """Check ``--model`` from its configuration alone (no weights are read) and return its
    decoder depth L.

    Checked: the option is not empty; a path that exists is a folder (not a file) and its ``~``
    expands; a name that is no local folder is a well-formed hub id; the configuration can be
    read (a missing folder, a folder without ``config.json`` or a hub id that cannot be fetched
    offline are :class:`~interp.errors.ModelNotFoundError`); an adapter serves its architecture.

    Raises:
        UsageError, ModelNotFoundError, UnsupportedArchitectureError.
    """
    from .errors import ModelNotFoundError

    if not model.strip():
        raise UsageError("--model is empty; give 'demo', a local model folder or a hub id")
    if model != "demo":
        try:
            path = Path(model).expanduser()
        except RuntimeError as err:  # '~user' of an unknown user
            raise ModelNotFoundError(f"model folder not found: {model!r} ({err})") from None
        if path.exists() and not path.is_dir():
            raise ModelNotFoundError(
                f"--model {model!r} is a file; give the model's folder (holding config.json), a hub "
                "id or 'demo'"
            )
        if not path.exists() and model.count("/") == 1 and not model.startswith((".", "/", "~")):
            from huggingface_hub.utils import HFValidationError, validate_repo_id

            try:
                validate_repo_id(model)
            except HFValidationError as err:
                raise ModelNotFoundError(
                    f"model folder not found: {model!r}, and it is not a valid hub id either "
                    f"({str(err).splitlines()[0]})"
                ) from None
    from .adapters import adapter_for
    from .model import model_config

    config = model_config(model)
    adapter_for(config)  # UnsupportedArchitectureError lists the supported ones
    return _decoder_layers(config, model)


def model_modalities(model: str) -> tuple[str, ...]:
    """The input kinds ``--model`` takes (``"image"``, ``"audio"``, ``"video"``), read from its
    configuration alone, so a command can pick its demo items before the weights load."""
    from .adapters import adapter_for
    from .model import model_config

    return tuple(adapter_for(model_config(model)).modalities)


def check_common_arguments(
    args: argparse.Namespace, *, one_process: str | None = None
) -> tuple[int, int] | None:
    """Check the options of :func:`add_common_arguments` that need no data or model, and return
    the resolved shard (``(i, n)``, or None for a single process).

    Checked: ``--n`` and ``--batch-size`` are >= 1, ``--seed`` >= 0, ``--shard`` is ``auto`` or
    ``i/n`` with 0 <= i < n, and ``--overwrite`` is not combined with a sharded run. A command
    that runs in one process passes its name as ``one_process`` and refuses any shard.

    Raises:
        UsageError: one of these does not hold.
    """
    from .shards import resolve_shard

    if args.n is not None and args.n < 1:
        raise UsageError(f"--n must be >= 1, got {args.n}")
    if args.seed < 0:
        raise UsageError(f"--seed must be >= 0, got {args.seed}")
    if args.batch_size < 1:
        raise UsageError(f"--batch-size must be >= 1, got {args.batch_size}")
    try:
        shard = resolve_shard(args.shard)
    except ValueError as err:
        raise UsageError(f"--shard: {err}") from None
    if shard is not None and one_process is not None:
        raise UsageError(f"{one_process} runs in one process; drop --shard")
    if shard is not None and args.overwrite:
        raise UsageError(
            "--overwrite cannot be combined with a sharded run (the processes would wipe each "
            "other's results); clear the store with one process (--overwrite, no --shard) first"
        )
    return shard


def finish_outputs(out: Path) -> Path:
    """Move the command's staged outputs into ``--out`` (when it runs under :func:`main`), print
    the list of files written, and return the real output folder."""
    if _RUN is not None and _RUN.staging is not None and Path(out) == _RUN.staging:
        names = _RUN.commit()
        real = _RUN.out
        assert real is not None
    else:
        names, real = sorted(p.name for p in Path(out).iterdir()), Path(out)
    shown = sorted({*names, "store"} if (real / "store").is_dir() else names)
    print(f"\nwrote {', '.join(shown)} to {real}")
    return real


def partial_outputs_folder(out: Path) -> Path:
    """Where the partial files of a command that is about to fail will be kept: ``--out``
    itself when it held no complete run, else ``<out>/failed-run``."""
    if _RUN is not None and _RUN.staging is not None and Path(out) == _RUN.staging:
        where = _RUN.where_partial()
        if where is not None:
            return where
    return Path(out)


# -- the program ------------------------------------------------------------------------------------


def _studies() -> list[EntryPoint]:
    """The registered commands' entry points, by name (:func:`interp.study_registry.registered`)."""
    return registered()


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The ``interp`` parser. Each study's subcommand is registered lazily: only the command
    named in ``argv`` imports its study (the others are listed with their one-line help), so
    ``interp --help`` and argument errors stay fast. Without ``argv`` every study is loaded."""
    from . import __version__

    parser = Parser(
        prog="interp",
        description="Is this vision-language model looking at the image, or answering from its "
        "language prior? Studies of the vlm-interp library.",
        epilog="Each command's --help lists its options; its module's documentation (e.g. "
        "python -m pydoc interp.studies.audit) says what it writes.",
    )
    parser.add_argument("--version", action="version", version=f"vlm-interp {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    studies = _studies()
    if not studies:
        raise UsageError(
            "no study commands are registered: install the package (pip install -e .) so its "
            f"'{ENTRY_POINT_GROUP}' entry points exist"
        )
    wanted = None
    if argv is not None:
        wanted = next((a for a in argv if not a.startswith("-")), "")
    for ep in studies:
        found = command(ep)
        if not found.register and found.error is None:  # a study without a command
            continue
        try:
            if found.error is not None:
                raise found.error
            declared = declared_command(found.register) if wanted is not None else None
        except ImportError as err:  # a plugin whose module is gone: the other commands still work
            if ep.name == wanted:
                raise UsageError(f"the command {ep.name!r} cannot be loaded ({err})") from None
            sub.add_parser(ep.name, help=f"(cannot be loaded: {err})", add_help=False)
            continue
        if declared is None or wanted in (declared[0], *declared[2]):
            load(found.register)(sub)
        else:
            sub.add_parser(declared[0], aliases=declared[2], help=declared[1], add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``interp <study> ...``; returns the exit status.

    0: done. 2: a user error (an :class:`~interp.errors.InterpError`), printed as one line
    ``error: <ErrorType>: <message>``; argparse's own errors (unknown option, missing required
    one) are one ``error: ...`` line as well and raise ``SystemExit(2)``. 130: interrupted (the
    store keeps what was finished). 1: stdout was closed early (a broken pipe). ``--version``
    prints ``vlm-interp <version>`` and raises ``SystemExit(0)``.
    """
    global _RUN
    argv = list(sys.argv[1:] if argv is None else argv)
    _RUN = None
    try:
        args = build_parser(argv).parse_args(argv)
        if getattr(args, "no_progress", False):
            silence_progress()
        if hasattr(args, "threads"):
            apply_threads(args.threads)
        if hasattr(args, "out"):
            _RUN = OutputRun.from_args(args)
        _log_to_stderr()
        if "interp.runner" in sys.modules:  # an earlier command in this process
            sys.modules["interp.runner"].forget_started_stores()
        if "interp.media" in sys.modules:  # an earlier command's truncations are not this one's
            sys.modules["interp.media"].truncated_audio(clear=True)
        status = int(args.func(args))
        if _RUN is not None:
            if status == 0:
                _RUN.commit()
            else:
                _RUN.fail()
        return status
    except InterpError as err:
        _failed()
        print(f"error: {type(err).__name__}: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # stdout closed early (e.g. piped into `head`): not an error of ours
        if _RUN is not None:
            _RUN.commit()  # the outputs are complete; only the printing stopped
        try:  # so that the interpreter's final flush of stdout is silent
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 1
    except KeyboardInterrupt:
        _failed()
        print(
            "error: interrupted; re-run the same command to resume from the store", file=sys.stderr
        )
        return 130
    except BaseException:
        _failed()
        raise
    finally:
        _RUN = None


def _failed() -> None:
    """After a failed or interrupted command: keep its partial outputs apart (the earlier
    outputs stay as they were) and say where, on stdout (stderr holds the one error line)."""
    if _RUN is None:
        return
    try:
        where = _RUN.fail()
    except OSError:  # pragma: no cover - the folder vanished
        return
    if where is not None and where != _RUN.out:
        print(
            f"this run failed: its partial outputs are in {where}; the earlier outputs in "
            f"{_RUN.out} were left as they were",
            flush=True,
        )


def _log_to_stderr() -> None:
    """The library's notes (e.g. "resuming: 64 of 600 done") on stderr, as plain lines."""
    logger = logging.getLogger("interp")
    if not any(isinstance(h, _Stderr) for h in logger.handlers):
        handler = _Stderr()
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(handler)
    logger.setLevel(logging.INFO)


class _Stderr(logging.StreamHandler):
    """A handler writing to whatever ``sys.stderr`` is at the time of each message."""

    @property
    def stream(self) -> Any:  # type: ignore[override]
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


if __name__ == "__main__":  # run the importable module's main: the studies share its state
    from interp.cli import main as _main

    raise SystemExit(_main())
