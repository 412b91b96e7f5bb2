"""What the ``interp`` command shows in ``--help``, without importing the studies.

``interp --help`` lists every study command with its one-line help, read from the study's source
(``sub.add_parser("<name>", help="...")`` in its ``register``) rather than by importing it: a
study imports torch and transformers, which takes seconds. A command's own ``--help`` opens with
the first paragraph of its module docstring as plain text; the rest of the docstring is the
module's documentation (``python -m pydoc <module>``).
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path
from typing import Any

_ROLES = re.compile(r":(?:func|class|mod|meth|data|attr|exc|obj|ref|doc):`~?([^`]+)`")


def short_description(text: str) -> str:
    """The first paragraph of a docstring as plain text: reST roles (``:func:`x` ``) and
    literals (````x````) lose their markup, lines are joined."""
    paragraph = inspect.cleandoc(text).split("\n\n", 1)[0]
    plain = _ROLES.sub(
        lambda m: m.group(1).split(".")[-1] if "~" in m.group(0) else m.group(1), paragraph
    )
    plain = plain.replace("``", "").replace("*", "")
    return " ".join(plain.split())


_DECLARING = ("add_parser", "add_command")  # sub.add_parser(...), interp.command.add_command(...)


def _called(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _constants(tree: ast.Module) -> dict[str, ast.expr]:
    """A module's ``HELP`` and ``ALIASES`` (see :func:`interp.command.add_command`), as the keyword
    names of ``add_parser``."""
    found: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and target.id in ("HELP", "ALIASES"):
                found[target.id.lower()] = node.value
    return found


def declared_command(ep: Any) -> tuple[str, str, list[str]] | None:
    """The subcommand name, one-line help and aliases a study's ``register`` (``ep``: its
    ``"module:function"``, or an entry point naming it) declares
    (``sub.add_parser("<name>", aliases=[...], help="...")`` or
    ``add_command(sub, "<name>", __name__)`` with the module's ``HELP`` and ``ALIASES``), read from
    its source without importing it (so ``interp --help`` does not import every study); None when
    they cannot be read statically.

    Raises:
        ImportError: the entry point's module does not exist.
    """
    import importlib.util

    module, _, attr = str(ep if isinstance(ep, str) else ep.value).partition(":")
    spec = importlib.util.find_spec(module.strip())
    if spec is None:
        raise ImportError(f"no module named {module.strip()!r}")
    try:
        source = Path(spec.origin).read_text() if spec.origin else ""
        tree = ast.parse(source)
    except (OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == (attr.strip() or "register"):
            for call in ast.walk(node):
                if not isinstance(call, ast.Call) or _called(call) not in _DECLARING:
                    continue
                names = [
                    a.value
                    for a in call.args
                    if isinstance(a, ast.Constant) and isinstance(a.value, str)
                ]
                if names:
                    words = {**_constants(tree), **{k.arg: k.value for k in call.keywords if k.arg}}
                    try:
                        text = ast.literal_eval(words["help"]) if "help" in words else ""
                        aliases = ast.literal_eval(words["aliases"]) if "aliases" in words else []
                    except ValueError:
                        return None
                    return names[0], str(text), [str(a) for a in aliases]
    return None


__all__ = ["declared_command", "short_description"]
