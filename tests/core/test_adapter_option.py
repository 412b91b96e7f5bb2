"""Your own model: ``--adapter module:name`` on the command line, the ``vlm_interp.adapters`` entry
point group, ``Adapter`` parts read by their old flat names, and the refusal message.

References: the registry's contents before and after, the doctor's printed facts, configs by hand.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import sys

import pytest
from transformers import AutoConfig

import interp
from interp.adapters import ADAPTERS, FLAT, PARTS, Adapter, registry
from interp.cli import main
from interp.testing import build_tiny
from interp.testing.checks import one_error_line

MODULE = """
from interp import Adapter

MY_LLAVA = Adapter(
    name="my_llava", model_types=("llava",), image_features="model.multi_modal_projector"
)
NOT_AN_ADAPTER = 3
"""


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    (tmp_path / "my_adapters.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    saved = dict(ADAPTERS)
    yield "my_adapters"
    ADAPTERS.clear()
    ADAPTERS.update(saved)
    sys.modules.pop("my_adapters", None)


def test_the_adapter_option_registers_the_entry_the_doctor_then_uses(plugin, tmp_path, capsys):
    model, processor = build_tiny("llava")
    folder = tmp_path / "model"
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    code = main(["doctor", "--model", str(folder), "--adapter", f"{plugin}:MY_LLAVA", "--lazy"])
    out = capsys.readouterr().out
    assert "my_llava" in out and ADAPTERS["llava"].name == "my_llava"
    assert "adapter: layers" in out and "adapter: final norm feeds the head" in out
    assert "adapter: layout" in out  # the entry sets no verified layout
    assert code == 0


@pytest.mark.parametrize(
    "spec, message",
    [
        ("nocolon", "give module:name"),
        ("no_such_module_xyz:X", "No module named"),
        ("my_adapters:MISSING", "MISSING"),
        ("my_adapters:NOT_AN_ADAPTER", "is a int, not an interp.Adapter"),
    ],
)
def test_a_bad_adapter_option_is_one_line(plugin, spec, message, capsys):
    code = main(["doctor", "--model", "demo", "--adapter", spec, "--lazy"])
    assert code == 2
    assert message in one_error_line(capsys.readouterr().err)


def test_packages_register_adapters_through_the_entry_point_group(plugin, monkeypatch):
    point = importlib.metadata.EntryPoint(
        name="mine", value=f"{plugin}:MY_LLAVA", group=registry.ENTRY_POINT_GROUP
    )
    monkeypatch.setattr(
        importlib.metadata,
        "entry_points",
        lambda group=None: [point] if group == registry.ENTRY_POINT_GROUP else [],
    )
    monkeypatch.setattr(registry, "_PLUGINS", [])
    assert interp.adapter_for(AutoConfig.for_model("llava")).name == "my_llava"


def test_adapter_parts_and_their_flat_names_agree():
    entry = ADAPTERS["qwen2_vl"]
    for name, part in FLAT.items():
        assert getattr(entry, name) == getattr(getattr(entry, part), name)
    assert set(PARTS) == {"prompt", "features", "layout", "media", "modules"}
    changed = dataclasses.replace(entry, pixel_layout="images", name="x")
    assert changed.layout.pixel_layout == "images" and changed.features == entry.features
    with pytest.raises(TypeError, match="unknown fields"):
        Adapter(name="x", model_types=("x",), image_feature="typo")
    # blind_by_stripping implies separate batches, as before
    assert not ADAPTERS["paligemma"].mixed_batches


def test_the_refusal_names_the_nearest_pattern_and_the_escape_hatch():
    with pytest.raises(interp.UnsupportedArchitectureError) as err:
        interp.adapter_for(AutoConfig.for_model("blip"))
    message = str(err.value)
    assert message.startswith("Blip (config.model_type='blip') has no adapter")
    assert "?" not in message.split(" has no adapter")[0]
    assert "Nearest supported pattern: llava-like" in message
    assert "adapter=" in message and "--adapter module:name" in message
