"""Run-time checking of the project's jaxtyping annotations (dtype and shape, with dimensions
consistent within a call), as the test suite does: :func:`install` before the project is imported.

The checker is beartype with the numeric tower of PEP 484 (an ``int`` is a valid ``float``). It needs
the ``beartype`` package (the ``dev`` extra). jaxtyping's import hook decorates each function of the
named packages as its module is imported; the decorator imports this module by name, so it is a
module of the package (already loaded when the hook is installed) rather than a test file.
"""

from __future__ import annotations

from collections.abc import Sequence

from beartype import BeartypeConf, beartype
from jaxtyping import install_import_hook

typecheck = beartype(conf=BeartypeConf(is_pep484_tower=True))

PACKAGES: tuple[str, ...] = ("interp", "interventions", "probes")


def install(packages: Sequence[str] = PACKAGES) -> None:
    """Check the annotations of every function of ``packages`` imported from now on (call it first
    thing, e.g. at the top of ``conftest.py``). Modules imported already keep their functions
    unchecked: here ``interp``'s lazy package module and :mod:`interp.testing`'s."""
    install_import_hook(list(packages), f"{__name__}.typecheck")


__all__ = ["PACKAGES", "install", "typecheck"]
