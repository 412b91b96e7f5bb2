"""A loopback NDIF for checking that a measurement (or a custom intervention) runs remotely:
:func:`loopback_ndif` starts :mod:`interp.testing.ndif_server` in its own process — this library
cannot be imported there, the model is built from the request's model key, NDIF's whitelists
apply — and yields a :class:`Loopback` whose ``url`` goes to ``remote=`` (nnsight's own
``RemoteBackend`` client then speaks to it). ``docs/remote.md`` says what it stands in for."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import InterpError

SERVER = Path(__file__).with_name("ndif_server.py")


class Loopback:
    """A running loopback server: its ``url``, and what it has served (:meth:`stats`)."""

    def __init__(self, url: str) -> None:
        self.url = url

    def stats(self) -> dict[str, Any]:
        """``requests`` (count), ``model_keys`` (one per request) and ``errors`` (the
        descriptions sent back)."""
        with urllib.request.urlopen(f"{self.url}/stats", timeout=30) as answer:
            return json.load(answer)

    def requests(self) -> int:
        return int(self.stats()["requests"])


@contextmanager
def loopback_ndif(timeout: float = 120.0) -> Iterator[Loopback]:
    """Start the loopback server (a subprocess of this Python, outside the checkout's folder);
    stop it on exit. Its stderr goes to a temporary file quoted in the error if it fails to start."""
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "server.log"
        with log.open("w") as err:
            proc = subprocess.Popen(
                [sys.executable, str(SERVER)],
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                cwd=folder,
            )
            try:
                line = proc.stdout.readline() if proc.stdout is not None else ""
                if not line.startswith("PORT "):
                    raise InterpError(f"the loopback NDIF did not start: {log.read_text()[-2000:]}")
                yield Loopback(f"http://127.0.0.1:{int(line.split()[1])}")
            finally:
                proc.kill()
                proc.wait(timeout=timeout)


@contextmanager
def local_repo_ids() -> Iterator[None]:
    """nnsight canonicalises a model key's repo id through the Hugging Face hub (cached per id);
    while this is open a local folder is its own id, with no hub to ask."""
    from nnsight.modeling import huggingface

    class _SelfNamed(dict):
        def __contains__(self, key: object) -> bool:
            return True

        def __missing__(self, key: str) -> str:
            return key

    saved = huggingface._ID_CACHE
    huggingface._ID_CACHE = _SelfNamed()
    try:
        yield
    finally:
        huggingface._ID_CACHE = saved


__all__ = ["SERVER", "Loopback", "local_repo_ids", "loopback_ndif"]
