"""Checks of the project's error contract, for its tests and for tests of extensions.

A bad input to the library is refused with a typed error (:mod:`interp.errors`) whose message names
the problem and the fix: :func:`refused`. The ``interp`` command prints one line ``error: ...``
and exits 2, never a traceback: :func:`one_error_line`, with :data:`INTERP` and
:data:`OFFLINE_ENV` to run the installed command in a subprocess.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from jaxtyping import TypeCheckError

_SCRIPT = Path(sys.executable).with_name("interp")
# the installed ``interp`` command beside this Python, else the module run by this Python
INTERP: list[str] = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "interp.cli"]
# this process's environment with the Hugging Face hub off and one thread
OFFLINE_ENV: dict[str, str] = {
    **os.environ,
    "OMP_NUM_THREADS": "1",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
}


@contextmanager
def refused(*errors: type[BaseException], match: str | None = None) -> Iterator[None]:
    """The block must raise one of ``errors`` (whose message must match the regular expression
    ``match``), or a ``jaxtyping.TypeCheckError``: under a run-time type checker
    (:mod:`interp.testing.typechecking`) a wrong type or shape may be refused by the annotation
    before the library's own check sees it."""
    try:
        yield
    except TypeCheckError:
        return
    except errors as err:
        if match is not None and not re.search(match, str(err)):
            raise AssertionError(
                f"{type(err).__name__} message {str(err)!r} misses {match!r}"
            ) from err
        return
    raise AssertionError(f"expected {[e.__name__ for e in errors]} (or a TypeCheckError)")


def one_error_line(err: str) -> str:
    """``err`` (a command's stderr) holds exactly one line, ``error: ...``, and no traceback;
    returns that line."""
    lines = err.strip().splitlines()
    if "Traceback" in err or len(lines) != 1 or not lines[0].startswith("error: "):
        raise AssertionError(f"expected one line 'error: ...' and no traceback, got:\n{err}")
    return lines[0]


__all__ = ["INTERP", "OFFLINE_ENV", "one_error_line", "refused"]
