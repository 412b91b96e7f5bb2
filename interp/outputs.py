"""A command's outputs as one unit: written aside, moved into ``--out`` only when the run succeeds.

Every ``interp`` command writes its files (tables, figures, ``summary.txt``, the audit's report)
into a staging folder inside ``--out`` and moves them into place when it finishes, so a run that
fails or is interrupted leaves the outputs of the previous run exactly as they were. The result
store is not staged: ``<out>/store`` is shared (the staging folder links to it), so a killed run
still resumes.

A small record, ``interp-run.json``, names the command and the options that shape its results
(everything but the output folder, batching, sharding, threads and progress bars) and lists the
files it wrote. A run whose outputs would replace another command's, or the same command's under
other options, is refused up front; ``--overwrite`` (or another ``--out``) is the way on. When the
run succeeds, the files of the previous run that it did not write again are removed, so a folder
never holds two runs' files.

A failed run's partial files (e.g. ``interp coe``'s distance curves when no VIP is found) go
into ``--out`` when the folder held no complete run, else into ``<out>/failed-run/``.

The command line (:func:`interp.cli.main`) drives this; a library user calling a study's
functions writes wherever they like.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .locks import lock_is_free

MANIFEST = "interp-run.json"
FAILED = "failed-run"
STAGING_PREFIX = ".interp-staging-"
# Options that do not change what a run writes: where, how fast, how it reports.
RUNTIME_OPTIONS = frozenset(
    {"out", "overwrite", "no_progress", "shard", "batch_size", "threads", "func", "command"}
)
# Files a run of an earlier version (without a manifest) leaves: treated as another run's outputs.
LEGACY_OUTPUTS = ("summary.txt", "summary.json", "report.html")


class OutputMixError(ValueError):
    """Raised (as the CLI's UsageError) when a run's outputs would mix with another run's."""


def configuration(args: argparse.Namespace) -> dict[str, Any]:
    """The options of ``args`` that shape a run's results, JSON-comparable."""
    config = {k: v for k, v in vars(args).items() if k not in RUNTIME_OPTIONS}
    return json.loads(json.dumps(config, sort_keys=True, default=str))


def read_manifest(out: Path) -> dict[str, Any] | None:
    """The record of the run whose outputs ``out`` holds, or None."""
    try:
        data = json.loads((out / MANIFEST).read_text())
    except (FileNotFoundError, NotADirectoryError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def _option(key: str) -> str:
    return "--" + key.replace("_", "-")


def mixing_problem(
    out: Path, command: str, config: dict[str, Any], aliases: tuple[str, ...] = ()
) -> str | None:
    """Why a run of ``command`` with ``config`` would mix with the outputs already in ``out``
    (None when it would not: an empty folder, a run that did not finish, or the same command
    with the same options, which gives the same outputs). A run recorded under one of the
    command's ``aliases`` (an earlier name) counts as the same command."""
    manifest = read_manifest(out)
    if manifest is None:
        legacy = [name for name in LEGACY_OUTPUTS if (out / name).exists()]
        if legacy:
            return (
                f"--out {str(out)!r} already holds the outputs of an earlier run ({legacy[0]}) "
                "with no record of its command"
            )
        return None
    if not manifest.get("complete"):
        return None
    theirs = manifest.get("command")
    if theirs != command and theirs not in aliases:
        return f"--out {str(out)!r} holds the outputs of `interp {theirs}`"
    old = manifest.get("configuration", {})
    diff = sorted(k for k in set(old) | set(config) if old.get(k) != config.get(k))
    if not diff:
        return None
    what = ", ".join(f"{_option(k)} {old.get(k)!r} → {config.get(k)!r}" for k in diff[:4])
    more = f" and {len(diff) - 4} more" if len(diff) > 4 else ""
    return (
        f"--out {str(out)!r} holds the outputs of `interp {command}` with other options "
        f"({what}{more})"
    )


def unstaged(path: str | Path) -> Path:
    """``path`` with a command's staging folder taken out: ``<out>/.interp-staging-*/store/x``
    is ``<out>/store/x`` (the staging folder's ``store`` links there), so stores and their
    messages name the real folder."""
    path = Path(path)
    parts = path.parts
    for i, part in enumerate(parts[:-1]):
        if part.startswith(STAGING_PREFIX) and parts[i + 1] == "store":
            return Path(*parts[:i], *parts[i + 1 :])
    return path


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - someone else's process
        return True
    return True


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


def _write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)


@dataclass
class OutputRun:
    """One command's outputs: the staging folder and, at the end, the move into ``out``."""

    command: str
    config: dict[str, Any]
    overwrite: bool
    out_arg: str
    out: Path | None = None
    staging: Path | None = None
    done: bool = False
    files: list[str] = field(default_factory=list)
    aliases: tuple[str, ...] = ()
    created: bool = False  # this run created ``out`` (a failed run that wrote nothing removes it)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> OutputRun:
        return cls(
            command=str(getattr(args, "command", "")),
            config=configuration(args),
            overwrite=bool(getattr(args, "overwrite", False)),
            out_arg=str(args.out),
            aliases=tuple(getattr(getattr(args, "func", None), "aliases", ())),
        )

    def serves(self, out: str | Path) -> bool:
        return self.staging is None and not self.done and Path(out) == Path(self.out_arg)

    def stage(self, out: Path) -> Path:
        """Check that this run's outputs would not mix with those in ``out`` (an existing,
        writable folder), and return the staging folder the command writes into.

        Raises:
            OutputMixError: ``out`` holds another command's or another configuration's outputs
                and ``--overwrite`` was not given.
        """
        if not self.overwrite:
            problem = mixing_problem(out, self.command, self.config, self.aliases)
            if problem:
                raise OutputMixError(
                    f"{problem}; this run's would mix with them. Give --overwrite to replace "
                    "them (and start the store over), or a new --out folder."
                )
        mine = f"{STAGING_PREFIX}{socket.gethostname()}-"
        for old in out.glob(mine + "*"):  # left by a killed run on this machine
            pid = old.name[len(mine) :]
            if not (pid.isdigit() and _alive(int(pid))) or int(pid) == os.getpid():
                _remove(old)
        (out / "store").mkdir(exist_ok=True)
        staging = out / f"{mine}{os.getpid()}"
        staging.mkdir()
        (staging / "store").symlink_to((out / "store").absolute(), target_is_directory=True)
        self.out, self.staging = out, staging
        return staging

    def _staged(self) -> list[Path]:
        assert self.staging is not None
        return sorted(p for p in self.staging.iterdir() if p.name != "store")

    def commit(self, *, complete: bool = True) -> list[str]:
        """Move the staged files into ``out``, remove the previous run's files that this run did
        not write, and record the run. Returns the names moved (none: nothing changes)."""
        if self.staging is None or self.out is None or self.done:
            return self.files
        staged = self._staged()
        if staged:
            old = read_manifest(self.out) or {}
            for path in staged:
                target = self.out / path.name
                if target.is_dir() and not target.is_symlink():
                    shutil.rmtree(target)
                os.replace(path, target)
            names = [p.name for p in staged]
            for name in old.get("files", []):
                stale = self.out / name
                if name not in names and name not in ("store", MANIFEST) and stale.exists():
                    _remove(stale)
            if complete:
                _remove(self.out / FAILED)
            record = {
                "command": self.command,
                "configuration": self.config,
                "files": names,
                "complete": complete,
            }
            media = sys.modules.get("interp.media")  # loaded only by a run that read media
            truncated = media.truncated_audio() if media is not None else []
            if truncated:  # clips cut to the feature extractor's window (interp.media)
                record["audio_truncated"] = truncated
            _write_json(self.out / MANIFEST, record)
            self.files = names
        self.discard()
        return self.files

    def fail(self) -> Path | None:
        """After a failed run: keep its partial files where they mix with nothing (``out``
        itself when it held no complete run, else ``out/failed-run/``); returns where, or None
        when the run wrote nothing."""
        if self.staging is None or self.out is None or self.done:
            return None
        staged = self._staged()
        if not staged:
            self.discard()
            self._prune()
            return None
        manifest = read_manifest(self.out)
        previous = bool(manifest and manifest.get("complete")) or any(
            (self.out / n).exists() for n in LEGACY_OUTPUTS
        )
        if not previous:
            self.commit(complete=False)
            return self.out
        failed = self.out / FAILED
        _remove(failed)
        failed.mkdir()
        for path in staged:
            os.replace(path, failed / path.name)
        self.discard()
        return failed

    def _prune(self) -> None:
        """After a failed run that wrote no output: remove the store folders it left holding no
        result (only a lock and a manifest), then ``out`` itself if this run created it and it
        is empty — a refused run leaves nothing behind. A folder another process holds is kept."""
        assert self.out is not None
        store = self.out / "store"
        if store.is_dir():
            for folder in sorted((p for p in store.rglob("*") if p.is_dir()), reverse=True):
                names = {p.name for p in folder.iterdir()}
                if names <= {".lock", "manifest.json"} and lock_is_free(folder / ".lock"):
                    manifest = folder / "manifest.json"
                    if manifest.exists() and json.loads(manifest.read_text()).get("shards"):
                        continue
                    shutil.rmtree(folder, ignore_errors=True)
            if not any(store.iterdir()):
                store.rmdir()
        if self.created and self.out.is_dir() and not any(self.out.iterdir()):
            self.out.rmdir()

    def where_partial(self) -> Path | None:
        """Where :meth:`fail` would put partial files now (for a command's message)."""
        if self.out is None:
            return None
        manifest = read_manifest(self.out)
        previous = bool(manifest and manifest.get("complete")) or any(
            (self.out / n).exists() for n in LEGACY_OUTPUTS
        )
        return self.out / FAILED if previous else self.out

    def discard(self) -> None:
        """Remove the staging folder (the store it links to stays)."""
        if self.staging is not None and self.staging.exists():
            _remove(self.staging / "store")
            shutil.rmtree(self.staging, ignore_errors=True)
        self.done = True


__all__ = [
    "FAILED",
    "MANIFEST",
    "OutputMixError",
    "OutputRun",
    "configuration",
    "mixing_problem",
    "read_manifest",
    "unstaged",
]
