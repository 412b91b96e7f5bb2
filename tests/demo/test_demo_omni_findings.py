"""The shipped demo-omni checkpoint and its control on a held-out world seed: the conflict study
recovers the effects the training rule planted (a visual bias, the perceptual-vision /
propositional-audio asymmetry, recency), the control trained without the audio asymmetry shows
none, and the model uses each modality (accuracy with vs without it on items that need it).

The planted truth is the world's trust rule (``interp.datasets.world.trimodal.trimodal_answer``),
independent of the study; the items come from world seed 1, whose items training never saw
(it drew seed 0's training split)."""

from __future__ import annotations

import pytest

import interp
from interp.datasets import demo_world
from interp.demo.omni import CHECKPOINT_DIR
from interp.studies.conflict import conflict_responses

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (CHECKPOINT_DIR / "config.json").is_file(), reason="no demo-omni checkpoint"
    ),
]

HELD_OUT_SEED = 1


@pytest.fixture(scope="module")
def items() -> list[interp.Sample]:
    return demo_world("test", 480, seed=HELD_OUT_SEED, qtypes=["trimodal"])


def _effects(name: str, items: list[interp.Sample]):
    vlm = interp.load(name)
    resp = conflict_responses(vlm, items, max_new_tokens=3, batch_size=48, progress_bar=False)
    return resp, resp.effects().set_index(["effect", "source"])


@pytest.fixture(scope="module")
def model(items):
    return _effects("demo-omni", items)


@pytest.fixture(scope="module")
def control(items):
    return _effects("demo-omni-control", items)


def test_the_planted_visual_bias_asymmetry_and_recency_are_recovered(model):
    resp, eff = model
    bias = eff.loc["bias"]
    assert set(bias.index) == {"image"} and bias["reported"].all()
    assert eff.loc[("form", "image"), "direction"] == "perceptual"
    assert eff.loc[("form", "audio"), "direction"] == "propositional"
    for source in ("audio", "text"):
        assert eff.loc[("order", source), "direction"] == "recency"
    assert resp.competence()["accuracy"].min() >= 0.9  # where all sources agree


def test_the_control_shows_no_audio_asymmetry_but_keeps_the_rest(control):
    _, eff = control
    audio = eff.loc[("form", "audio")]
    assert not audio["reported"], audio
    assert eff.loc[("form", "image"), "direction"] == "perceptual"
    assert set(eff.loc["bias"].index) == {"image"}


@pytest.mark.parametrize(
    ("qtype", "without"), [("hear", "no_audio"), ("motion", "no_video"), ("trimodal", "blind")]
)
def test_demo_omni_uses_each_modality(qtype, without):
    vlm = interp.load("demo-omni")
    items = demo_world("test", 96, seed=HELD_OUT_SEED, qtypes=[qtype])
    kw = {"max_new_tokens": 6, "batch_size": 48, "progress_bar": False}
    full = interp.generate(vlm, items, "full", **kw).texts
    cut = interp.generate(vlm, items, without, **kw).texts
    acc = sum(a.strip() == s.answer for a, s in zip(full, items)) / len(items)
    acc_cut = sum(a.strip() == s.answer for a, s in zip(cut, items)) / len(items)
    assert acc >= acc_cut + 0.3, (acc, acc_cut)
