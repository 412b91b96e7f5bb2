"""Model sources (:mod:`interp.sources`): ``interp.load`` resolves a name through the registered
sources, and the core imports none of them. A source registered by one entry point in a temporary
distribution (nothing of the project edited, as in ``test_study_registry.py``) makes its name
loadable; an unknown name fails as it always has."""

from __future__ import annotations

import ast
import logging
import re
import sys
import textwrap
from pathlib import Path

import pytest

import interp
from interp import sources
from interp.errors import ModelNotFoundError
from interp.model import model_config

ROOT = Path(__file__).resolve().parents[2]
TOY = "toy-name"

# the toy source's module and its one registration, as an installed distribution gives it
PLUGIN = {
    "toy_source.py": '''
        """A toy model source: ``toy-name`` is the demo checkpoint under another name."""
        from dataclasses import dataclass

        from transformers import AutoProcessor

        from interp.demo import CHECKPOINT_DIR

        ASKED = []


        @dataclass(frozen=True)
        class ToySource:
            name: str = "toy"

            def resolves(self, name):
                return name == "toy-name"

            def locate(self, name):
                return str(CHECKPOINT_DIR)

            def processor(self, folder):
                if folder != CHECKPOINT_DIR:
                    return None
                ASKED.append(folder)
                return AutoProcessor.from_pretrained(str(folder))


        SOURCE = ToySource()
    ''',
    "toy_source-0.1.dist-info/METADATA": """
        Metadata-Version: 2.1
        Name: toy-source
        Version: 0.1
    """,
    "toy_source-0.1.dist-info/entry_points.txt": """
        [interp.sources]
        toy = toy_source:SOURCE
    """,
}


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The toy source installed on ``sys.path``; its registration file."""
    for name, text in PLUGIN.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path / "toy_source-0.1.dist-info" / "entry_points.txt"
    sys.modules.pop("toy_source", None)


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # an unknown name fails at once, no hub probe


def _imported(path: Path) -> set[str]:
    """Every module ``path`` names in an import, absolute (relative imports resolved from
    ``interp``)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level <= 1, "a module directly in interp/"
            base = ".".join(["interp", node.module or ""]).rstrip(".")
            base = base if node.level else node.module or ""
            out.add(base)
            out.update(f"{base}.{alias.name}" for alias in node.names)
    return out


def test_the_model_module_imports_nothing_of_the_demo_models():
    names = _imported(ROOT / "interp/model.py")
    assert "interp.sources" in names  # the reading of relative imports works
    assert not [n for n in names if n == "interp.demo" or n.startswith("interp.demo.")]
    assert not [n for n in _imported(ROOT / "interp/sources.py") if n.startswith("interp.demo")]


def test_a_registered_source_makes_its_name_loadable(plugin: Path):
    assert [ep.name for ep in sources.registered()] == ["demo", "toy"]
    assert sources.source_for(TOY).name == "toy"
    assert model_config(TOY).model_type == model_config("demo").model_type
    vlm = interp.load(TOY)
    import toy_source

    assert toy_source.ASKED  # the source's processor hook was asked for its folder
    demo = interp.load("demo")
    assert vlm.source == TOY and (vlm.n_layers, vlm.d_model) == (demo.n_layers, demo.d_model)
    assert vlm.adapter.name == demo.adapter.name


def test_an_unknown_name_is_the_same_typed_error(plugin: Path):
    with pytest.raises(ModelNotFoundError, match="model folder not found: 'no-such-model'"):
        interp.load("no-such-model")
    with pytest.raises(ModelNotFoundError, match="model folder not found: 'no-such-model'"):
        model_config("no-such-model")


def test_a_broken_registration_is_left_out_with_a_warning(
    plugin: Path, caplog: pytest.LogCaptureFixture
):
    plugin.write_text("[interp.sources]\ntoy = toy_source_gone:SOURCE\nz = toy_source:ASKED\n")
    with caplog.at_level(logging.WARNING, logger="interp.sources"):
        found = [s.name for s in sources.sources()]
    assert found == ["demo", "folder-or-hub"]
    assert "'toy' cannot be loaded" in caplog.text and "'z'" in caplog.text
    assert sources.source_for(TOY) is sources.BUILT_IN
    with pytest.raises(ModelNotFoundError, match="model folder not found"):
        model_config(TOY)


def test_the_demo_names_resolve_through_the_demo_source():
    from interp.demo import CHECKPOINT_DIR
    from interp.demo.omni import CONTROL_DIR
    from interp.demo.source import NAMES, SOURCE

    for name in NAMES:
        assert sources.source_for(name) is SOURCE
    assert sources.locate("demo") == str(CHECKPOINT_DIR)
    assert sources.locate("demo-omni-control") == str(CONTROL_DIR)
    for name in ("demo-x", "Demo", "./demo", "llava-hf/llava-1.5-7b-hf"):
        assert sources.source_for(name) is sources.BUILT_IN
        assert sources.locate(name) == name
    # a folder demo-omni's training writes gets its own processor, wherever it is
    assert SOURCE.processor(CHECKPOINT_DIR) is None


def test_the_declared_defaults_are_the_project_registrations():
    """``DEFAULT_SOURCES`` stands in for the project's own entry points where the installed
    metadata predates them: it must be what ``pyproject.toml`` declares."""
    text = (ROOT / "pyproject.toml").read_text()  # read by hand: tomllib needs Python 3.11
    header = f'[project.entry-points."{sources.ENTRY_POINT_GROUP}"]\n'
    section = text[text.index(header) + len(header) :].split("\n\n")[0]
    declared = dict(re.findall(r'^(\S+) = "([^"]+)"$', section, flags=re.M))
    assert declared == sources.DEFAULT_SOURCES
    for ep in sources.registered():
        if ep.name in sources.DEFAULT_SOURCES:
            assert isinstance(ep.load(), sources.ModelSource)


def test_the_demo_omni_folder_gets_its_processor_through_the_source():
    from interp.demo.omni import CHECKPOINT_DIR

    if not (CHECKPOINT_DIR / "config.json").is_file():
        pytest.skip("demo-omni is not trained in this install")
    processor = sources.processor_for(CHECKPOINT_DIR)
    assert type(processor).__name__ == "Qwen2_5OmniProcessor"
    assert sources.processor_for(CHECKPOINT_DIR / "no-such-folder") is None
