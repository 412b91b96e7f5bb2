"""The runtime type checker the test suite installs on the project's modules (through jaxtyping's
import hook): beartype, with the numeric tower of PEP 484 (an ``int`` is a valid ``float``)."""

from __future__ import annotations

from beartype import BeartypeConf, beartype

typecheck = beartype(conf=BeartypeConf(is_pep484_tower=True))

__all__ = ["typecheck"]
