"""The demo world generator: determinism, label schema, and labels checked against the pixels."""

from __future__ import annotations

import re

import numpy as np
import pytest

from interp import Sample
from interp.datasets import (
    CELLS,
    COLORS,
    META_KEYS,
    PRIOR_COLORS,
    QTYPES,
    SHAPE_KINDS,
    demo_world,
    linked_digit,
    linked_recall,
    text_corpus,
    world_vocabulary,
)

GREY = 60.0  # background level the images are drawn on


def _pixels(s: Sample) -> np.ndarray:
    return np.asarray(s.load_image(), dtype=np.float64)


def _same(a: list[Sample], b: list[Sample]) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if (x.id, x.question, x.answer, x.meta) != (y.id, y.question, y.answer, y.meta):
            return False
        if (x.image is None) != (y.image is None):
            return False
        if x.image is not None and not np.array_equal(_pixels(x), _pixels(y)):
            return False
    return True


@pytest.fixture(scope="module")
def test_items() -> list[Sample]:
    return demo_world("test", 850, seed=0)


def test_deterministic_for_a_seed() -> None:
    for split in ("train", "test"):
        assert _same(demo_world(split, 60, seed=3), demo_world(split, 60, seed=3))
    assert not _same(demo_world("test", 60, seed=3), demo_world("test", 60, seed=4))
    assert not _same(demo_world("val", 60, seed=3), demo_world("test", 60, seed=3))


def test_longer_requests_extend_shorter_ones() -> None:
    assert _same(demo_world("test", 30, seed=1), demo_world("test", 70, seed=1)[:30])
    # train yields one sample per draw, so ``start`` is an offset into the same stream
    assert _same(demo_world("train", 10, seed=1, start=5), demo_world("train", 15, seed=1)[5:])
    assert _same(text_corpus(10, seed=1, start=5), text_corpus(15, seed=1)[5:])


def test_meta_schema(test_items: list[Sample]) -> None:
    assert len(test_items) == 850
    assert len({s.id for s in test_items}) == len(test_items)
    for s in test_items:
        assert set(s.meta) == set(META_KEYS)
        assert s.meta["qtype"] in QTYPES
        assert s.meta["split"] == "test"
        assert s.image is not None and s.load_image().size == (32, 32)
        assert s.answer is not None
    assert {s.meta["qtype"] for s in test_items} == set(QTYPES)


def test_needs_image_labels(test_items: list[Sample]) -> None:
    for s in test_items:
        m = s.meta
        if m["qtype"] in (
            "color",
            "identify",
            "count",
            "position",
            "digit",
            "describe",
            "conflict",
        ):
            assert m["needs_image"] is True
        elif m["qtype"] in ("arith", "fact_color", "caption"):
            assert m["needs_image"] is False
        elif m["qtype"] in ("recall", "digit_arith"):
            assert m["needs_image"] is (m["setting"] == "visual")
            # a text-answerable question names its entity; a visual one does not
            prefix = "the digit" if m["qtype"] == "digit_arith" else "the"
            named = f"{prefix} {m['entity']} " in s.question
            assert named is (m["reference"] == "text")


def test_arithmetic_answers() -> None:
    items = demo_world("test", 400, seed=5, qtypes=["arith", "digit_arith"])
    for s in items:
        nums = [int(x) for x in re.findall(r"\b\d+\b", s.question)]
        if s.meta["setting"] == "visual":
            assert len(nums) == 1
            assert int(s.answer) == int(s.meta["entity"]) + nums[0]
        else:
            assert int(s.answer) == sum(nums)


def _deviation(arr: np.ndarray) -> np.ndarray:
    return np.linalg.norm(arr - GREY, axis=-1)


def test_color_answers_match_pixels(test_items: list[Sample]) -> None:
    """The drawn colour, estimated from strongly deviating pixels, is the answer's palette colour."""
    palette = {c: np.asarray(v, dtype=np.float64) - GREY for c, v in COLORS.items()}
    checked = 0
    for s in test_items:
        if s.meta["qtype"] != "color" or s.meta["opacity"] < 0.6:
            continue
        arr = _pixels(s)
        row, col = divmod(CELLS.index(s.meta["objects"][0]["cell"]), 2)
        cell = arr[row * 16 : row * 16 + 16, col * 16 : col * 16 + 16]
        ink = cell[_deviation(cell) > 70]
        assert len(ink) >= 10, s.id
        d = ink.mean(axis=0) - GREY
        cos = {c: d @ v / (np.linalg.norm(d) * np.linalg.norm(v)) for c, v in palette.items()}
        assert max(cos, key=cos.get) == s.answer, s.id
        checked += 1
    assert checked >= 20


def test_count_answers_match_pixels() -> None:
    items = demo_world("test", 300, seed=2, qtypes=["count"])
    checked = 0
    for s in items:
        if s.meta["opacity"] < 0.7:
            continue
        arr = _pixels(s)
        occupied = 0
        for cell in range(4):
            r, c = divmod(cell, 2)
            block = arr[r * 16 : r * 16 + 16, c * 16 : c * 16 + 16]
            occupied += int((_deviation(block) > 80).sum() >= 8)
        assert occupied == int(s.answer), s.id
        checked += 1
    assert checked >= 40


def test_trivial_images() -> None:
    items = demo_world("test", 200, seed=0, qtypes=["recall"])
    seen = set()
    for s in items:
        kind = s.meta["image_kind"]
        arr = _pixels(s)
        if kind == "black":
            assert arr.max() == 0
        elif kind == "white":
            assert arr.min() == 255
        elif kind == "noise":
            assert arr.std() > 60  # uniform 0..255 has std ~74
        seen.add(kind)
    assert {"black", "white", "noise", "scene"} <= seen


def test_counterfactual_shares() -> None:
    """Train keeps the planted prior (~95% canonical); test has the requested counterfactual share."""
    train = [
        s
        for s in demo_world("train", 4000, seed=0, qtypes=["color"])
        if s.meta["entity"] in PRIOR_COLORS
    ]
    canonical = np.mean([s.answer == PRIOR_COLORS[s.meta["entity"]] for s in train])
    assert len(train) > 1500
    assert 0.93 < canonical < 0.97
    for share in (0.5, 0.2):
        test = [
            s
            for s in demo_world("test", 2000, seed=0, qtypes=["color"], counterfactual_share=share)
            if s.meta["entity"] in PRIOR_COLORS and s.meta["variant"] == "plain"
        ]
        cf = np.array([s.answer != PRIOR_COLORS[s.meta["entity"]] for s in test])
        assert np.array_equal(cf, [s.meta["counterfactual"] for s in test])
        assert abs(cf.mean() - share) < 4 * np.sqrt(share * (1 - share) / len(cf))
        assert all(s.meta["prior_answer"] == PRIOR_COLORS[s.meta["entity"]] for s in test)


def test_wording_variants_share_image(test_items: list[Sample]) -> None:
    groups: dict[str, list[Sample]] = {}
    for s in test_items:
        if s.meta["qtype"] == "color":
            groups.setdefault(s.meta["group"], []).append(s)
    pairs = [g for g in groups.values() if len(g) == 2]
    assert len(pairs) >= 20
    for plain, anchored in pairs:
        assert (plain.meta["variant"], anchored.meta["variant"]) == ("plain", "anchored")
        assert plain.answer == anchored.answer
        assert np.array_equal(_pixels(plain), _pixels(anchored))
        assert plain.meta["entity"] in plain.question
        assert plain.meta["entity"] not in anchored.question


def test_reference_settings(test_items: list[Sample]) -> None:
    groups: dict[str, dict[str, Sample]] = {}
    for s in test_items:
        if s.meta["qtype"] in ("recall", "digit_arith"):
            groups.setdefault(s.meta["group"], {})[s.meta["setting"]] = s
    full = [g for g in groups.values() if len(g) == 3]
    assert len(full) >= 20
    for g in full:
        assert g["text_only"].meta["image_kind"] in ("black", "white", "noise")
        assert g["text_only"].question == g["full_info"].question
        assert np.array_equal(_pixels(g["full_info"]), _pixels(g["visual"]))
        assert len({s.answer for s in g.values()}) == 1


def test_conflict_items() -> None:
    items = demo_world("test", 200, seed=0, qtypes=["conflict"])
    forms = set()
    for s in items:
        m = s.meta
        assert m["image_label"] != m["text_label"]
        assert s.answer == m["image_label"]  # the question asks what the image shows
        assert m["image_label"] in SHAPE_KINDS and m["text_label"] in SHAPE_KINDS
        assert f"says {m['text_label']} ." in s.question
        assert m["image_kind"] == ("word" if m["evidence_form"] == "propositional" else "scene")
        forms.add(m["evidence_form"])
    assert forms == {"perceptual", "propositional"}


def test_descriptions_list_objects_in_reading_order() -> None:
    for s in demo_world("test", 100, seed=0, qtypes=["describe"]):
        pairs = re.findall(r"the (\w+) is (\w+)", s.answer)
        objs = sorted(s.meta["objects"], key=lambda o: CELLS.index(o["cell"]))
        assert pairs == [(o["kind"], o["color"]) for o in objs]


def test_linked_combinations_are_half() -> None:
    recall = [linked_recall(e, r) for e in SHAPE_KINDS for r in ("known_for", "found_in")]
    digits = np.array([[linked_digit(d, b) for b in range(10)] for d in range(10)])
    assert sum(recall) == len(recall) // 2
    assert (digits.sum(axis=0) == 5).all() and (digits.sum(axis=1) == 5).all()
    # training shows visual-reference items only for linked combinations
    for s in demo_world("train", 3000, seed=0, qtypes=["recall", "digit_arith"]):
        if s.meta["setting"] == "visual":
            assert s.meta["linked"] is True


def test_vocabulary_covers_every_text() -> None:
    vocab = set(world_vocabulary())
    items = demo_world("train", 600, seed=0) + demo_world("test", 400, seed=0) + text_corpus(300)
    for s in items:
        words = s.question.split() + (s.answer.split() if s.answer else [])
        assert set(words) <= vocab, set(words) - vocab


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="split"):
        demo_world("dev", 3)
    with pytest.raises(ValueError, match="question types"):
        demo_world("test", 3, qtypes=["colour"])
    with pytest.raises(ValueError, match="counterfactual_share"):
        demo_world("test", 3, counterfactual_share=1.5)


def test_opacity_override_samples_the_weak_evidence_band() -> None:
    items = demo_world("test", 300, seed=0, opacity=(0.05, 0.25))
    seen = [s.meta["opacity"] for s in items if s.meta["opacity"] is not None]
    assert len(seen) > 150
    assert all(0.05 <= o <= 0.25 for o in seen)
    for s in items:
        for o in s.meta["objects"] or []:
            if s.meta["qtype"] not in ("arith", "fact_color"):  # those show unrelated scenes
                assert 0.05 <= o["opacity"] <= 0.25
    # the same draws as without the override, only fainter
    plain = demo_world("test", 300, seed=0)
    assert [s.answer for s in items] == [s.answer for s in plain]
