"""The wheel holds the installed packages alone and each of its modules imports from the wheel
alone: the wheel is built (setuptools' own backend, offline, from a copy of the source tree), unpacked
into a temporary folder and every module its ``RECORD`` lists is imported in a fresh interpreter
that cannot reach the repository — ``python -I -S`` (no current folder, no ``PYTHONPATH``, no
``.pth`` files: the editable install's finder, which points at a checkout, never runs), from a
temporary folder, with the unpacked wheel first on the path and the environment's site-packages
after it for the dependencies. A module that reads a path of the repository at import time
(``Path(__file__).parents[2] / "docs"`` ...) fails here, and no module of the wheel uses
``.parents[...]`` at all (the way each of them reached the repository). The repository's tooling is
``tools/``, which the wheel leaves out, with ``tests/``, ``bench/``, ``docs/`` and ``notebooks/``."""

from __future__ import annotations

import json
import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("interp", "interventions", "probes")
# run by path, never imported: it blocks this library's imports in its own process
# (docs/api/testing.md)
NOT_IMPORTED = {"interp.testing.ndif_server"}
# imported before the rest, as the suite does (tests/conftest.py): beartype, which it imports, fails
# to import once some of the dependencies are loaded ("unhashable type: 'instancemethod'" building
# its set of object's slot wrappers), in the editable install as much as here
FIRST = ("interp.testing.typechecking",)
# what the copy of the source tree leaves behind: version control, environments, caches, outputs
LEFT_BEHIND = (
    ".git",
    ".venv",
    "__pycache__",
    "*.egg-info",
    "build",
    "dist",
    "results",
    ".pytest_cache",
    ".ruff_cache",
    "_build",
)

CHILD = r"""
import importlib, json, sys
wheel, site_dirs, names = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
sys.path.insert(0, wheel)
sys.path.extend(site_dirs)
failed = {}
outside = {}
for name in names:
    try:
        module = importlib.import_module(name)
    except BaseException as err:  # noqa: BLE001 - every failure is reported by module
        failed[name] = f"{type(err).__name__}: {err}"
        continue
    if not str(module.__file__).startswith(wheel + "/"):
        outside[name] = module.__file__
# every project module loaded (also those imported on the way) came from the wheel
for name, module in list(sys.modules.items()):
    top = name.split(".")[0]
    if top in ("interp", "interventions", "probes", "tools") and getattr(module, "__file__", None):
        if not str(module.__file__).startswith(wheel + "/"):
            outside[name] = module.__file__
print(json.dumps({"failed": failed, "outside": outside, "tools": "tools" in sys.modules}))
"""


def _build_wheel(tmp: Path) -> Path:
    source = tmp / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*LEFT_BEHIND))
    out = tmp / "dist"
    out.mkdir()
    build = (
        "import sys; from setuptools import build_meta; print(build_meta.build_wheel(sys.argv[1]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", build, str(out)],
        cwd=source,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    (wheel,) = out.glob("*.whl")
    return wheel


def _modules(files: list[str]) -> list[str]:
    names = []
    for f in files:
        if not f.endswith(".py"):
            continue
        parts = f[: -len(".py")].split("/")
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names.append(".".join(parts))
    return sorted(names)


def test_the_wheel_holds_the_packages_alone_and_imports_without_the_repository(tmp_path):
    wheel = _build_wheel(tmp_path)
    with zipfile.ZipFile(wheel) as archive:
        files = archive.namelist()
        unpacked = tmp_path / "wheel"
        archive.extractall(unpacked)
    tops = {f.split("/")[0] for f in files if not f.split("/")[0].endswith(".dist-info")}
    assert tops == set(PACKAGES), f"the wheel holds {sorted(tops)}"
    assert not any(f.startswith(("tools/", "tests/", "bench/", "docs/")) for f in files)

    # the wheel's modules are the source tree's
    source = sorted(
        ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for pkg in PACKAGES
        for p in (ROOT / pkg).rglob("*.py")
    )
    names = _modules(files)
    assert names == source, sorted(set(names) ^ set(source))

    # RECORD names every file of the wheel; the modules it lists are those above
    (record,) = (f for f in files if f.endswith(".dist-info/RECORD"))
    recorded = [line.split(",")[0] for line in (unpacked / record).read_text().splitlines()]
    assert _modules(recorded) == names

    # no module climbs from its own file to the repository (``Path(__file__).parents[2] / ...``);
    # its own data sits beside it (``Path(__file__).parent / "checkpoint"``)
    climbing = sorted(
        f for f in files if f.endswith(".py") and ".parents[" in (unpacked / f).read_text()
    )
    assert not climbing, f"modules that reach above their package: {climbing}"

    site_dirs = [d for d in site.getsitepackages() if Path(d).is_dir()]
    run = tmp_path / "elsewhere"
    run.mkdir()
    to_import = [*FIRST, *(n for n in names if n not in NOT_IMPORTED and n not in FIRST)]
    done = subprocess.run(
        [
            sys.executable,
            "-I",
            "-S",
            "-c",
            CHILD,
            str(unpacked),
            json.dumps(site_dirs),
            json.dumps(to_import),
        ],
        cwd=run,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "HOME": str(run), "HF_HUB_OFFLINE": "1"},
    )
    assert done.returncode == 0, done.stderr[-4000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert not found["failed"], (
        f"modules of the wheel that do not import from it: {found['failed']}"
    )
    assert not found["outside"], f"modules loaded from outside the wheel: {found['outside']}"
    assert not found["tools"], "an installed module imports the repository's tools/"
