"""The stack a stored fixture was made under.

``constraints.txt`` pins every package of the test environment (``make install`` installs with
it). Fixtures that depend on transformers' own output (the encoding digests, ``docs/families.md``)
record the transformers version they were made under; :func:`check_made_under` turns a mismatch
into one message that names both versions and both ways out, instead of a wall of changed hashes.
"""

from __future__ import annotations

import re
from pathlib import Path

CONSTRAINTS = Path(__file__).resolve().parents[1] / "constraints.txt"


class MadeUnderAnotherStackError(AssertionError):
    """A fixture was made under another transformers version than the one installed."""


def pinned(package: str, path: Path = CONSTRAINTS) -> str | None:
    """The version ``constraints.txt`` pins ``package`` at (``None`` when it is not pinned)."""
    wanted = re.sub(r"[-_.]+", "-", package).lower()
    for line in path.read_text().splitlines():
        name, sep, version = line.split("#")[0].strip().partition("==")
        if sep and re.sub(r"[-_.]+", "-", name).lower() == wanted:
            return version.strip()
    return None


def check_made_under(made_under: str, what: str, regenerate: str) -> None:
    """Raise :class:`MadeUnderAnotherStackError` unless the installed transformers is
    ``made_under``."""
    import transformers

    if transformers.__version__ != made_under:
        raise MadeUnderAnotherStackError(
            f"{what} was made under transformers {made_under}; this environment has "
            f"{transformers.__version__}. Install the pinned stack (`make install`, or "
            f"`pip install -c constraints.txt -e '.[dev]'`), or, moving the pin, regenerate it "
            f"with `{regenerate}` and update constraints.txt"
        )
