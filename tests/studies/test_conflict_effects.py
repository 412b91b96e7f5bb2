"""The conflict study's findings (``ConflictResponses.effects``) on response tables built by hand:
counts against the frame, intervals against scipy's Wilson intervals combined as Newcombe's method
10, and the planted trust rule's effects found while a control rule without the audio asymmetry
reports none."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest

from interp.datasets.world.trimodal import trimodal_answer
from interp.studies.conflict import TRIMODAL_SOURCES, ConflictResponses, bias_label, evidence_forms

EVIDENCE = ("PercI-PercA", "PercI-PropA", "PropI-PercA", "PropI-PropA")
ORDERS = [",".join(p) for p in itertools.permutations(("image", "audio", "text"))]
NAMES = ("leaf", "bell", "drop", "star", "cup", "key")


def table(rule, noise: float = 0.2) -> ConflictResponses:
    """Every label triple of NAMES (first 30) × evidence × order, answered by ``rule``, or, with
    probability ``noise``, by a random source's label or a word no source shows."""
    rng = np.random.default_rng(0)
    rows = []
    for t, triple in enumerate(list(itertools.permutations(NAMES, 3))[:30]):
        labels = dict(zip(("image", "audio", "text"), triple))
        for ev in EVIDENCE:
            forms = evidence_forms(ev)
            for order in ORDERS:
                answer = rule(labels, forms, order.split(","))
                if rng.random() < noise:
                    answer = str(rng.choice([*labels.values(), "nothing"]))
                label = bias_label(answer, labels)
                rows.append(
                    {
                        "sample_id": f"t{t}-{ev}-{order}",
                        "group": f"t{t}",
                        "configuration": "full",
                        "evidence": ev,
                        "decoding": "greedy",
                        "order": order,
                        "agreement": "all_differ",
                        "response": answer,
                        "label": label,
                    }
                )
    frame = pd.DataFrame(rows)
    # items are the label triples: an item's evidence forms and orders resample together
    frame["sample_id"] = frame["group"]
    return ConflictResponses(frame, TRIMODAL_SOURCES)


def control(labels, forms, order):
    return trimodal_answer(labels, {**forms, "audio": "propositional"}, order)


def newcombe_by_hand(k1, n1, k2, n2):
    l1, u1 = binomtest(k1, n1).proportion_ci(0.95, method="wilson")
    l2, u2 = binomtest(k2, n2).proportion_ci(0.95, method="wilson")
    p1, p2 = k1 / n1, k2 / n2
    return p1 - p2 - math.hypot(p1 - l1, u2 - p2), p1 - p2 + math.hypot(u1 - p1, p2 - l2)


def test_evidence_names_give_each_modalitys_form():
    assert evidence_forms("PercI-PropA") == {"image": "perceptual", "audio": "propositional"}
    assert evidence_forms("PropI") == {"image": "propositional"}
    assert evidence_forms("PercI+PropI") == {}
    assert evidence_forms("full") == {}


def test_form_and_order_effects_against_hand_counts_and_newcombe():
    resp = table(trimodal_answer)
    f = resp.frame
    eff = resp.effects().set_index(["effect", "source"])
    for name, kind in (("image", "I"), ("audio", "A")):
        row = eff.loc[("form", name)]
        perc = f[f["evidence"].str.contains(f"Perc{kind}")]
        prop = f[f["evidence"].str.contains(f"Prop{kind}")]
        bias = f"BIAS_{name.upper()}"
        k1, n1 = int((perc["label"] == bias).sum()), len(perc)
        k2, n2 = int((prop["label"] == bias).sum()), len(prop)
        assert (row["n_a"], row["n_b"]) == (n1, n2) == (360, 360)
        assert row["difference"] == pytest.approx(k1 / n1 - k2 / n2)
        assert (row["low"], row["high"]) == pytest.approx(newcombe_by_hand(k1, n1, k2, n2))
    for name in ("image", "audio", "text"):
        row = eff.loc[("order", name)]
        last = f[f["order"].str.endswith(name)]
        first = f[f["order"].str.startswith(name)]
        bias = f"BIAS_{name.upper()}"
        k1, k2 = int((last["label"] == bias).sum()), int((first["label"] == bias).sum())
        assert row["difference"] == pytest.approx(k1 / len(last) - k2 / len(first))
        assert (row["low"], row["high"]) == pytest.approx(
            newcombe_by_hand(k1, len(last), k2, len(first))
        )


def test_the_planted_rule_shows_bias_asymmetry_and_recency():
    eff = table(trimodal_answer).effects().set_index(["effect", "source"])
    bias = eff.loc["bias"]
    assert list(bias.index) == ["image", "image"]  # the image dominates both others
    assert bias["reported"].all() and (bias["difference"] > 0).all()
    assert eff.loc[("form", "image"), "direction"] == "perceptual"
    assert eff.loc[("form", "audio"), "direction"] == "propositional"
    assert eff.loc[("order", "audio"), "direction"] == "recency"
    assert eff.loc[("order", "text"), "direction"] == "recency"


def test_the_control_rule_reports_no_audio_asymmetry():
    eff = table(control).effects().set_index(["effect", "source"])
    audio = eff.loc[("form", "audio")]
    assert not audio["reported"] and audio["direction"] == "none"
    assert abs(audio["difference"]) < 0.05
    noiseless = table(control, noise=0.0).effects().set_index(["effect", "source"])
    assert noiseless.loc[("form", "audio"), "difference"] == 0
    assert eff.loc[("form", "image"), "direction"] == "perceptual"  # the visual side stays


def test_the_bias_interval_resamples_whole_items():
    resp = table(trimodal_answer)
    eff = resp.effects().set_index(["effect", "contrast"])
    row = eff.loc[("bias", "image − audio")]
    f = resp.frame
    per_item = (
        ((f["label"] == "BIAS_IMAGE").astype(float) - (f["label"] == "BIAS_AUDIO"))
        .groupby(f["sample_id"])
        .mean()
    )
    assert row["difference"] == pytest.approx(per_item.mean())
    # 30 items: a normal-approximation interval over item means is close to the bootstrap's
    half = 1.96 * per_item.std(ddof=1) / math.sqrt(len(per_item))
    assert row["low"] == pytest.approx(per_item.mean() - half, abs=0.02)
    assert row["high"] == pytest.approx(per_item.mean() + half, abs=0.02)


def test_no_rows_under_the_decoding_is_a_typed_error():
    from interp.errors import EmptyInputError

    with pytest.raises(EmptyInputError, match="no responses under decoding 'favour image'"):
        table(trimodal_answer).effects(decoding="favour image")


def test_the_demo_sets_configurations_give_no_form_finding_and_one_configuration_is_read():
    from interp.studies.conflict import DEMO_SOURCES

    rng = np.random.default_rng(1)
    names = ("perceptual", "propositional", "text")
    labels = ("BIAS_IMAGE", "BIAS_PROP_IMAGE", "BIAS_TEXT")
    rows = []
    for i in range(40):
        for config, evidence in (("PercI+PropI", "PercI+PropI"), ("PropI", "PropI")):
            shown = names if config == "PercI+PropI" else names[1:]
            order = ",".join(rng.permutation(shown))
            rows.append(
                {"sample_id": f"s{i}", "configuration": config, "evidence": evidence}
                | {"decoding": "greedy", "order": order, "agreement": "all_differ"}
                | {
                    "label": str(rng.choice(labels)),
                    "response": "",
                }
            )
    resp = ConflictResponses(pd.DataFrame(rows), DEMO_SOURCES)
    eff = resp.effects()
    assert set(eff["effect"]) == {"bias", "order"}
    full = resp.frame[resp.frame["configuration"] == "PercI+PropI"]
    top = full["label"].value_counts().idxmax()
    assert (
        eff[eff["effect"] == "bias"]["source"].iloc[0]
        == {"BIAS_IMAGE": "image", "BIAS_PROP_IMAGE": "prop_image", "BIAS_TEXT": "text"}[top]
    )
    prop = resp.effects(configuration="PropI")
    assert "image" not in set(prop["source"][prop["effect"] == "order"])  # not shown there


def test_a_bias_row_names_no_direction_when_its_interval_contains_zero():
    def coin(labels, forms, order):  # no source is followed more than another
        return labels[order[len(labels) % 3]]

    eff = table(coin, noise=1.0).effects()
    bias = eff[eff["effect"] == "bias"]
    assert not bias["reported"].all()
    for _, row in eff.iterrows():  # every effect: a direction only where the interval excludes 0
        assert (row["direction"] == "none") == (not row["reported"]), row.to_dict()


def test_the_effects_frame_leads_with_what_a_reader_needs():
    eff = table(trimodal_answer).effects()
    assert list(eff.columns[:7]) == [
        "effect",
        "source",
        "direction",
        "difference",
        "low",
        "high",
        "reported",
    ]
