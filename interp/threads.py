"""How many CPU threads the library uses — one policy for the ``interp`` command and Python.

torch starts one thread per physical core. Two such processes on the same cores (two runs, or a
run beside another job) oversubscribe them, and the threads' spinning and waiting at every
operation costs far more than the thread one run gives up: measured by ``bench/threads.py``
(README, Performance). So the library uses half the CPUs it may run on (at least 1) unless told
otherwise: ``--threads N`` (the command) or :func:`set_threads` (Python), else
``$INTERP_THREADS``, else ``$OMP_NUM_THREADS`` (then torch's own setting stands).

The command applies it before anything runs; in Python, the first :func:`interp.load` applies it
unless :func:`set_threads` ran before (``interp.set_threads(n)`` picks the count yourself; call it
after ``torch.set_num_threads`` would be overridden by the first ``load``).
"""

from __future__ import annotations

import os
import sys

from .errors import InterpError


class ThreadsError(InterpError, ValueError):
    """A thread count that is not an integer >= 1."""


THREADS_ENV = "INTERP_THREADS"


def default_threads() -> int:
    """Half the CPUs this process may use, at least 1: two runs side by side (or a run next to
    another job) do not oversubscribe the cores, which costs far more than one thread less."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        usable = os.cpu_count() or 1
    return max(1, usable // 2)


def thread_count(option: int | None) -> tuple[int | None, str]:
    """The CPU thread count to use and where it comes from: ``--threads``, ``$INTERP_THREADS``,
    ``$OMP_NUM_THREADS`` (left to torch: None) or the default policy.

    Raises:
        ThreadsError: a count below 1 or not an integer.
    """
    if option is not None:
        if option < 1:
            raise ThreadsError(f"--threads must be >= 1, got {option}")
        return option, "--threads"
    env = os.environ.get(THREADS_ENV, "").strip()
    if env:
        if not env.isdigit() or int(env) < 1:
            raise ThreadsError(f"${THREADS_ENV} must be an integer >= 1, got {env!r}")
        return int(env), f"${THREADS_ENV}"
    if os.environ.get("OMP_NUM_THREADS", "").strip():
        return None, "$OMP_NUM_THREADS"
    return default_threads(), "default"


_APPLIED = False  # the policy (or set_threads) has been applied in this process


def apply_threads(option: int | None) -> None:
    """Set the CPU thread count of this process (before torch is imported where possible)."""
    global _APPLIED
    count, _ = thread_count(option)
    _APPLIED = True
    if count is None:
        return
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(count)
    if "torch" in sys.modules:
        import torch

        if torch.get_num_threads() != count:
            torch.set_num_threads(count)


def set_threads(n: int | None = None) -> int:
    """Set the CPU threads torch uses in this process: ``n``, else the policy of the command line
    (``$INTERP_THREADS``, else ``$OMP_NUM_THREADS``, else half the usable CPUs). Returns the
    count in force.

    Raises:
        ThreadsError: ``n`` below 1.
    """
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise ThreadsError(f"set_threads takes an integer >= 1 (or None: the policy), got {n!r}")
    apply_threads(n)
    import torch

    return torch.get_num_threads()


def ensure_threads() -> None:
    """Apply the policy once, unless the command line or :func:`set_threads` already did
    (:func:`interp.load` calls this)."""
    if not _APPLIED:
        apply_threads(None)


__all__ = [
    "THREADS_ENV",
    "ThreadsError",
    "apply_threads",
    "default_threads",
    "ensure_threads",
    "set_threads",
    "thread_count",
]
