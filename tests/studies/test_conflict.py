"""The modality-conflict study: response labels on hand-made responses, the ``without:<source>``
inputs against hand-built ones, rates against hand counts and Wilson's formula, the probe against
a hand fit, typed errors on bad items, and the command."""

from __future__ import annotations

import math
import re
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

import interp
from interp.cli import main
from interp.datasets import demo_world
from interp.encoding import encode
from interp.errors import DataFormatError
from interp.studies.conflict import (
    HALLUCINATION,
    NO_BIAS,
    bias_label,
    bias_probe,
    check_items,
    conflict_responses,
    favouring,
    wilson,
)
from interp.testing import one_error_line
from interp.testing.tolerance import assert_close
from probes import LayerwiseProbe

LABELS = {"image": "leaf", "prop_image": "banana", "text": "drop"}


@pytest.mark.parametrize(
    "response, expected",
    [
        ("leaf", "BIAS_IMAGE"),
        ("It is a banana.", "BIAS_PROP_IMAGE"),
        ("DROP", "BIAS_TEXT"),
        ("a leaf or a banana", "BIAS_IMAGE_PROP_IMAGE"),
        ("banana, maybe a drop", "BIAS_PROP_IMAGE_TEXT"),
        ("leaf banana drop", NO_BIAS),  # reports all three
        ("the image and the caption conflict", NO_BIAS),  # acknowledges the conflict
        ("circle", HALLUCINATION),
        ("leafy", HALLUCINATION),  # whole words only
        ("", HALLUCINATION),
    ],
)
def test_every_label_on_hand_made_responses(response, expected):
    assert bias_label(response, LABELS) == expected


def test_shared_labels_synonyms_and_a_custom_matcher():
    # two sources showing the same label: answering it matches both (a dual bias)
    tie = {"image": "leaf", "prop_image": "leaf", "text": "drop"}
    assert bias_label("leaf", tie) == "BIAS_IMAGE_PROP_IMAGE"
    agree = dict.fromkeys(LABELS, "leaf")
    assert bias_label("leaf", agree) == NO_BIAS  # all agree and answered
    assert bias_label("a raindrop", LABELS) == HALLUCINATION
    assert bias_label("a raindrop", LABELS, synonyms={"drop": ["raindrop"]}) == "BIAS_TEXT"
    judge = lambda response, label: response.startswith(label[:2])  # noqa: E731
    assert bias_label("ban", LABELS, matcher=judge) == "BIAS_PROP_IMAGE"


@pytest.fixture(scope="module")
def demo():
    return interp.load("demo")


@pytest.fixture(scope="module")
def items():
    return demo_world("test", n=60, seed=3, qtypes=["conflict"])


@pytest.mark.parametrize("source", ["image", "prop_image", "text"])
def test_without_a_source_equals_the_hand_built_input(demo, items, source):
    item = items[1]
    order = item.meta["order"].split(",")
    names = {"perceptual": "image", "propositional": "prop_image", "text": "text"}
    images = item.load_images()
    slots = [names[o] for o in order if o != "text"]
    # by hand: the prompt without that source's slot or caption, the other images in order
    parts = [
        item.meta["caption"] if o == "text" else "{image}" for o in order if names[o] != source
    ]
    question = " ".join([*parts, "which object is it ?"])
    kept = [im for name, im in zip(slots, images) if name != source]
    hand = replace(item, question=question, image=kept)
    a = encode(demo, [item], f"without:{source}")
    b = encode(demo, [hand])
    assert a.prompts == b.prompts
    assert a.input_ids.tolist() == b.input_ids.tolist()
    if kept:
        assert np.array_equal(a.inputs["pixel_values"].numpy(), b.inputs["pixel_values"].numpy())


def test_wilson_interval_is_the_textbook_formula():
    z = 1.959963984540054
    for k, n in [(0, 10), (3, 10), (37, 114), (114, 114)]:
        p = k / n
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
        lo, hi = wilson(k, n)
        # float64 rounding, ε·S with S = 1 (a rate): 1e-10, tighter than the old bare 1e-9
        assert_close([lo, hi], [max(0.0, centre - half), min(1.0, centre + half)])


def test_responses_rates_and_positions_against_hand_counts(demo, items):
    resp = conflict_responses(demo, items, max_new_tokens=3, progress_bar=False)
    gen = interp.generate(demo, items, "without:prop_image", max_new_tokens=3, progress_bar=False)
    part = resp.frame[resp.frame["configuration"] == "PercI"]  # the drawn object and the caption
    for s, text, (_, row) in zip(items, gen.texts, part.iterrows()):
        labels = {"image": s.meta["image_label"], "text": s.meta["text_label"]}
        assert row["response"] == text
        assert row["label"] == bias_label(text, labels)
        kept = [o for o in s.meta["order"].split(",") if o != "propositional"]
        assert row["order"] == ",".join(kept)
    # rates of the full configuration on items where every source differs, by hand
    full = resp.frame[
        (resp.frame["configuration"] == "PercI+PropI") & (resp.frame["agreement"] == "all_differ")
    ]
    table = resp.table("configuration")
    for label in table.columns.drop("n"):
        count = sum(1 for lab in full["label"] if lab == label)
        assert table.loc["PercI+PropI", label] == pytest.approx(count / len(full))
    assert table.loc["PercI+PropI", "n"] == len(full)
    # the text source's bias by its position, by hand
    effect = resp.position_effect()
    for _, row in effect[effect["configuration"] == "PercI+PropI"].iterrows():
        name = {"image": "perceptual", "prop_image": "propositional", "text": "text"}[row["source"]]
        rows = [
            r
            for _, r in full.iterrows()
            if r["order"].split(",").index(name) + 1 == row["position"]
        ]
        bias = f"BIAS_{row['source'].upper()}"
        assert row["rate"] == pytest.approx(sum(r["label"] == bias for r in rows) / len(rows))
        assert row["n"] == len(rows)
    competence = resp.competence()
    agree = resp.frame[
        (resp.frame["agreement"] == "all_agree") & (resp.frame["configuration"] == "PercI")
    ]
    got = competence[competence["configuration"] == "PercI"]["accuracy"].item()
    assert got == pytest.approx((agree["label"] == NO_BIAS).mean())


def test_probe_equals_a_hand_fit_on_the_same_states(demo):
    items = demo_world("test", n=240, seed=4, qtypes=["conflict"])
    resp = conflict_responses(
        demo,
        items,
        configurations={"PercI+PropI": "full"},
        max_new_tokens=3,
        progress_bar=False,
    )
    probe = bias_probe(demo, items, resp, cv=3, layers=[0, 6, 12], progress_bar=False)
    part = resp.frame[resp.frame["agreement"] == "all_differ"]
    counts = part["label"].value_counts()
    part = part[part["label"].isin(counts[counts >= 3].index)]
    by_id = {str(s.id): s for s in items}
    states = interp.residual_stream(demo, [by_id[i] for i in part["sample_id"]], progress_bar=False)
    hand = LayerwiseProbe(layers=[0, 6, 12], cv=3).fit(
        states.numpy(), part["label"].to_numpy(), groups=part["group"].astype(str).to_numpy()
    )
    pd.testing.assert_frame_equal(probe.to_frame(), hand.to_frame())
    assert probe.dropped == {k: int(v) for k, v in counts.items() if v < 3}
    table = probe.above_chance()
    assert list(table.index) == [0, 6, 12]
    assert (table["p_adjusted"] >= table["p"]).all()


def test_favouring_uses_the_input_without_the_source():
    methods = favouring(("image", "text"))
    assert methods["greedy"] is None
    assert [str(a) for a in methods["favour text"].amateurs] == ["without:text"]
    assert methods["favour text"].alpha == 0.5 and methods["favour text"].beta == 0.1


def _broken(items, **meta):
    s = items[0]
    return [replace(s, meta={**s.meta, **meta})]


def test_bad_items_are_typed_errors_before_compute(items):
    with pytest.raises(DataFormatError, match="has no label"):
        check_items(_broken(items, text_label=None))
    with pytest.raises(DataFormatError, match="repeats a source"):
        check_items(_broken(items, order="text,text,perceptual"))
    with pytest.raises(DataFormatError, match="unknown source 'audio'"):
        check_items(_broken(items, order="audio,text,perceptual"))
    with pytest.raises(DataFormatError, match="needs meta 'order'"):
        check_items(_broken(items, order=None))
    with pytest.raises(DataFormatError, match="caption"):
        check_items(_broken(items, caption="the caption says nothing ."))
    with pytest.raises(DataFormatError, match="slot"):
        check_items(_broken(items, order="perceptual,text"))  # two images, one image source
    with pytest.raises(interp.ConditionError, match="unknown source"):
        interp.Condition.parse("without:smell")
    assert str(interp.Condition.parse("without:audio+no_audio")) == "without:audio+no_audio"


def test_the_command_writes_its_tables(tmp_path):
    out = tmp_path / "run"
    code = main(
        [
            "conflict",
            "--model",
            "demo",
            "--data",
            "demo",
            "--n",
            "60",
            "--cv",
            "2",
            "--out",
            str(out),
            "--no-progress",
        ]
    )
    assert code == 0
    for name in (
        "responses.csv",
        "bias_by_configuration.csv",
        "bias_by_order.csv",
        "position_effect.csv",
        "decoding.csv",
        "competence.csv",
        "summary.txt",
        "bias.png",
        "positions.png",
    ):
        assert (out / name).exists(), name
    responses = pd.read_csv(out / "responses.csv")
    assert set(responses["decoding"]) == {"greedy", "favour image", "favour text"}
    assert "contrastive decoding" in (out / "summary.txt").read_text()


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--favour", "audio"], "--favour: unknown source 'audio'"),
        (["--cv", "1"], "--cv must be >= 2"),
        (["--amateurs", "beside"], "--amateurs: unknown kind 'beside'; use alone, without"),
        (["--data", "demo:color"], "needs meta 'order'"),
    ],
)
def test_bad_options_are_one_line_before_the_model_loads(
    extra,
    message,
    tmp_path,
    capsys,
    no_model,
):
    out = tmp_path / "out"
    code = main(
        ["conflict", "--model", "demo", "--data", "demo", "--n", "12", "--out", str(out), *extra]
    )
    assert code == 2
    assert re.search(message, one_error_line(capsys.readouterr().err))
    assert not out.exists()
