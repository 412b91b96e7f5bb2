"""The demo world generator: determinism, label schema, and labels checked against the pixels."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

from interp import Sample
from interp.datasets import (
    CELLS,
    CO_OCCURRENCE,
    COLORS,
    META_KEYS,
    POPULAR_KINDS,
    PRIOR_COLORS,
    QTYPES,
    SHAPE_KINDS,
    conflict_answer,
    demo_world,
    generation_label,
    linked_digit,
    linked_recall,
    linked_word,
    text_corpus,
    world_vocabulary,
)

GREY = 60.0  # background level the images are drawn on
SLOT = "{image}"
WORDED = ("color", "identify", "count", "position", "digit", "describe")


def _images(s: Sample) -> list[np.ndarray]:
    items = s.image if isinstance(s.image, list) else [s.image]
    return [np.asarray(Sample("", im).load_image(), dtype=np.float64) for im in items]


def _pixels(s: Sample) -> np.ndarray:
    return _images(s)[0]


def _same(a: list[Sample], b: list[Sample]) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if (x.id, x.question, x.answer, x.meta) != (y.id, y.question, y.answer, y.meta):
            return False
        if (x.image is None) != (y.image is None):
            return False
        if x.image is not None:
            ix, iy = _images(x), _images(y)
            if len(ix) != len(iy) or not all(np.array_equal(p, q) for p, q in zip(ix, iy)):
                return False
    return True


def _groups(items: list[Sample], qtype: str) -> list[list[Sample]]:
    groups: dict[str, list[Sample]] = {}
    for s in items:
        if s.meta["qtype"] == qtype:
            groups.setdefault(s.meta["group"], []).append(s)
    return list(groups.values())


@pytest.fixture(scope="module")
def test_items() -> list[Sample]:
    return demo_world("test", 1350, seed=0)


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
    assert len(test_items) == 1350
    assert len({s.id for s in test_items}) == len(test_items)
    for s in test_items:
        assert set(s.meta) == set(META_KEYS)
        assert s.meta["qtype"] in QTYPES
        assert s.meta["split"] == "test"
        images = _images(s)
        assert all(im.shape == (32, 32, 3) for im in images)
        # conflicts hold two images placed by slots; everything else one image, no slot
        assert len(images) == (2 if s.meta["qtype"] == "conflict" else 1)
        assert s.question.count(SLOT) == (2 if s.meta["qtype"] == "conflict" else 0)
        assert s.answer is not None
    assert {s.meta["qtype"] for s in test_items} == set(QTYPES)


def test_needs_image_labels(test_items: list[Sample]) -> None:
    for s in test_items:
        m = s.meta
        if m["qtype"] in (*WORDED, "exist"):
            assert m["needs_image"] is True
        elif m["qtype"] in ("arith", "fact_color"):
            assert m["needs_image"] is False
        elif m["qtype"] == "conflict":
            assert m["needs_image"] is (s.answer != m["text_label"])
        else:  # reference families
            assert m["needs_image"] is (m["setting"] == "visual")
            # a text-answerable question names its entity; a visual one does not
            prefix = {"recall": "the", "digit_arith": "the digit", "letters": "the word"}
            named = f"{prefix[m['qtype']]} {m['entity']} " in s.question
            assert named is (m["reference"] == "text")


def test_arithmetic_and_letter_answers() -> None:
    items = demo_world("test", 600, seed=5, qtypes=["arith", "digit_arith", "letters"])
    for s in items:
        if s.meta["qtype"] == "letters":
            word = s.meta["entity"] if s.meta["setting"] == "visual" else s.question.split()[-2]
            assert int(s.answer) == len(word) and word == s.meta["entity"]
            assert s.meta["family"] == "words"
            continue
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


def _occupied_cells(arr: np.ndarray) -> set[str]:
    out = set()
    for cell in range(4):
        r, c = divmod(cell, 2)
        block = arr[r * 16 : r * 16 + 16, c * 16 : c * 16 + 16]
        if (_deviation(block) > 80).sum() >= 8:
            out.add(CELLS[cell])
    return out


def test_count_and_position_answers_match_pixels() -> None:
    checked = 0
    for s in demo_world("test", 600, seed=2, qtypes=["count", "position"]):
        if s.meta["opacity"] < 0.7:
            continue
        cells = _occupied_cells(_pixels(s))
        if s.meta["qtype"] == "count":
            assert len(cells) == int(s.answer), s.id
        else:
            assert cells == {s.answer}, s.id
        checked += 1
    assert checked >= 80


def test_trivial_images() -> None:
    items = demo_world("test", 300, seed=0, qtypes=["recall", "letters"])
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
    assert {"black", "white", "noise", "scene", "word"} <= seen


def test_counterfactual_shares() -> None:
    """Train keeps the planted prior (~95% canonical); test has the requested cf share."""
    train = [
        s
        for s in demo_world("train", 6000, seed=0, qtypes=["color"])
        if s.meta["entity"] in PRIOR_COLORS
    ]
    canonical = np.mean([s.answer == PRIOR_COLORS[s.meta["entity"]] for s in train])
    assert len(train) > 2000
    assert 0.93 < canonical < 0.97
    for share in (0.5, 0.2):
        test = [
            s
            for s in demo_world("test", 3000, seed=0, qtypes=["color"], counterfactual_share=share)
            if s.meta["entity"] in PRIOR_COLORS and s.meta["variant"] == "plain"
        ]
        cf = np.array([s.answer != PRIOR_COLORS[s.meta["entity"]] for s in test])
        assert np.array_equal(cf, [s.meta["counterfactual"] for s in test])
        assert abs(cf.mean() - share) < 4 * np.sqrt(share * (1 - share) / len(cf))
        assert all(s.meta["prior_answer"] == PRIOR_COLORS[s.meta["entity"]] for s in test)


def test_four_wordings_share_the_image(test_items: list[Sample]) -> None:
    words_that_answer = set(SHAPE_KINDS) | set(COLORS) | {w for c in CELLS for w in c.split()}
    for qtype in WORDED:
        groups = _groups(test_items, qtype)
        assert len(groups) >= 20
        for g in groups:
            assert [s.meta["variant"] for s in g] == ["plain", "polite", "anchored", "terse"]
            assert len({s.answer for s in g}) == 1
            assert all(np.array_equal(_pixels(g[0]), _pixels(s)) for s in g)
            assert len({s.meta["category"] for s in g}) == 1 and g[0].meta["category"]
            plain, polite, anchored, terse = g
            assert polite.question.startswith("please ")
            assert len([w for w in terse.question.split() if w.isalpha()]) <= 2
            for s in (anchored, terse):  # refer to the image only: no kind, colour, place, number
                assert not set(s.question.split()) & words_that_answer, s.question
                assert not re.search(r"\d", s.question) and s.meta["options"] is None
                assert s.meta["leaks"] is False
            for s in (plain, polite):
                if s.meta["options"] is not None:  # two options, the answer one of them
                    assert s.answer in s.meta["options"] and len(set(s.meta["options"])) == 2
                    assert all(f" {o} " in s.question for o in s.meta["options"])
                    assert s.meta["leaks"] is True
                elif qtype == "color":  # names the kind; leaks where the kind has a prior
                    assert f" {s.meta['entity']} " in s.question
                    assert s.meta["leaks"] is (s.meta["entity"] in PRIOR_COLORS)
                else:  # describe: names every object
                    assert all(f"the {o['kind']}" in s.question for o in s.meta["objects"])
                    assert s.meta["leaks"] is True


def test_both_spellings_of_colour() -> None:
    questions = [s.question for s in demo_world("train", 800, seed=0, qtypes=["color"])]
    british = np.mean(["colour" in q for q in questions])
    assert 0.35 < british < 0.65
    assert all(("colour" in q) != ("color" in q.split()) for q in questions)


def test_reference_settings(test_items: list[Sample]) -> None:
    for qtype, family in (("recall", "facts"), ("digit_arith", "arithmetic"), ("letters", "words")):
        groups = [{s.meta["setting"]: s for s in g} for g in _groups(test_items, qtype)]
        full = [g for g in groups if len(g) == 3]
        assert len(full) >= 20
        for g in full:
            assert {s.meta["family"] for s in g.values()} == {family}
            assert g["text_only"].meta["image_kind"] in ("black", "white", "noise")
            assert g["text_only"].question == g["full_info"].question
            assert np.array_equal(_pixels(g["full_info"]), _pixels(g["visual"]))
            assert len({s.answer for s in g.values()}) == 1
            assert g["visual"].meta["linked"] in (True, False)


def test_pope_questions_against_the_scene(test_items: list[Sample]) -> None:
    groups = _groups(test_items, "exist")
    assert len(groups) >= 20
    for g in groups:
        assert [s.meta["pope_negative"] for s in g] == [None, "random", "popular", "adversarial"]
        assert all(np.array_equal(_pixels(g[0]), _pixels(s)) for s in g)
        present = {o["kind"] for o in g[0].meta["objects"]}
        assert _occupied_cells(_pixels(g[0])) <= {o["cell"] for o in g[0].meta["objects"]}
        partners = {CO_OCCURRENCE[k] for k in present if k in CO_OCCURRENCE}
        for s in g:
            kind = s.meta["entity"]
            assert s.question == f"is there a {kind} in the image ?"
            assert s.answer == ("yes" if kind in present else "no")
            assert s.meta["counterfactual"] is (kind in partners and kind not in present)
        positive, rand, popular, adversarial = (s.meta["entity"] for s in g)
        assert positive in present
        assert rand not in partners and rand not in POPULAR_KINDS
        assert popular == next(k for k in POPULAR_KINDS if k not in present)
        assert adversarial in partners and adversarial not in present


def test_cooccurrence_and_popularity_are_planted_in_training() -> None:
    items = demo_world("train", 6000, seed=0, qtypes=["exist"])
    scenes = [{o["kind"] for o in s.meta["objects"]} for s in items]
    # a partner that came along is often faint: where the prior can act
    opacities = [o["opacity"] for s in items for o in s.meta["objects"]]
    assert 0.05 < np.mean(np.array(opacities) < 0.1) < 0.3
    for kind, partner in (("banana", "leaf"), ("carrot", "heart"), ("square", "diamond")):
        with_kind = [sc for sc in scenes if kind in sc]
        assert np.mean([partner in sc for sc in with_kind]) > 0.8
    frequency = {k: np.mean([k in sc for sc in scenes]) for k in SHAPE_KINDS}
    others = [frequency[k] for k in SHAPE_KINDS if k not in POPULAR_KINDS]
    assert frequency["circle"] > 1.5 * max(others)
    assert frequency["triangle"] > 1.2 * max(others)


def test_conflict_items_in_every_order(test_items: list[Sample]) -> None:
    groups = _groups(test_items, "conflict")
    assert len(groups) >= 20
    seen = set()
    for g in groups:
        assert {s.meta["order"] for s in g} == {
            ",".join(p) for p in itertools.permutations(("perceptual", "propositional", "text"))
        }
        m = g[0].meta
        labels = [m["image_label"], m["propositional_label"], m["text_label"]]
        distinct = len(set(labels))
        assert distinct == {"all_agree": 1, "one_disagrees": 2, "all_differ": 3}[m["agreement"]]
        if m["agreement"] == "one_disagrees":
            odd = dict(zip(("perceptual", "propositional", "text"), labels))[m["odd_source"]]
            assert labels.count(odd) == 1
        seen.add(m["agreement"])
        by_source: dict[str, list[np.ndarray]] = {"perceptual": [], "propositional": []}
        for s in g:
            order = s.meta["order"].split(",")
            assert f"the caption says {m['text_label']} ." in s.question
            assert s.question.endswith("which object is it ?")
            # the caption sits where the order puts it among the two image slots
            pieces = [p.strip() for p in s.question.split(SLOT)]
            assert pieces[order.index("text")].startswith("the caption says")
            for src, arr in zip([o for o in order if o != "text"], _images(s), strict=True):
                by_source[src].append(arr)
        # each source's image is the same in every order, and the two images differ
        for arrs in by_source.values():
            assert all(np.array_equal(arrs[0], a) for a in arrs)
        assert not np.array_equal(by_source["perceptual"][0], by_source["propositional"][0])
    assert seen == {"all_agree", "one_disagrees", "all_differ"}


def test_conflict_answers_follow_the_trust_rule(test_items: list[Sample]) -> None:
    """Worked by hand from the rule (trust = form + place, scaled by visibility below 0.3)."""
    checked = 0
    for g in _groups(test_items, "conflict"):
        for s in g:
            m = s.meta
            visible = min(m["source_opacity"].values()) >= 0.3
            if m["agreement"] == "all_agree":
                assert s.answer == m["text_label"]
            elif m["agreement"] == "one_disagrees" and visible:  # two agreeing sources win
                labels = [m["image_label"], m["propositional_label"], m["text_label"]]
                assert s.answer == max(set(labels), key=labels.count)
            elif m["agreement"] == "all_differ" and visible:
                # perceptual 1.0 + place; propositional 0.8 + place; caption 0.6 + place
                drawn_first_written_last = m["order"] == "perceptual,text,propositional"
                label = "propositional_label" if drawn_first_written_last else "image_label"
                assert s.answer == m[label], m["order"]
                checked += 1
    assert checked >= 30
    labels = {"perceptual": "a", "propositional": "b", "text": "c"}
    # a faint drawn object (opacity 0.15: trust halved) loses to the written label...
    assert (
        conflict_answer(
            labels,
            ("perceptual", "propositional", "text"),
            {"perceptual": 0.15, "propositional": 1.0},
        )
        == "b"
    )
    # ...and to the caption when the caption comes last and the written label first
    assert (
        conflict_answer(
            labels,
            ("propositional", "perceptual", "text"),
            {"perceptual": 0.0, "propositional": 1.0},
        )
        == "c"
    )
    # an invisible written label leaves the drawn object against the caption: the drawn one wins
    assert (
        conflict_answer(
            labels,
            ("perceptual", "propositional", "text"),
            {"perceptual": 1.0, "propositional": 0.0},
        )
        == "a"
    )


def test_descriptions_are_long_answers_with_a_prior() -> None:
    items = demo_world("test", 400, seed=0, qtypes=["describe"])
    for s in items:
        n_tokens = len(s.answer.split())
        assert 4 <= n_tokens <= 12
        pairs = re.findall(r"the (\w+) is (\w+)", s.answer)
        objs = sorted(s.meta["objects"], key=lambda o: CELLS.index(o["cell"]))
        assert pairs == [(o["kind"], o["color"]) for o in objs]
        cf = [
            o for o in objs if o["kind"] in PRIOR_COLORS and o["color"] != PRIOR_COLORS[o["kind"]]
        ]
        assert s.meta["counterfactual"] is bool(cf)
        if any(o["kind"] in PRIOR_COLORS for o in objs):
            said = [f"the {o['kind']} is {PRIOR_COLORS.get(o['kind'], o['color'])}" for o in objs]
            assert s.meta["prior_answer"] == " and ".join(said)
        else:
            assert s.meta["prior_answer"] is None
    assert any(s.meta["counterfactual"] for s in items)


def test_generation_labels_by_hand() -> None:
    objects = [
        {"kind": "banana", "color": "purple", "cell": "top left", "opacity": 0.2},
        {"kind": "circle", "color": "red", "cell": "top right", "opacity": 0.9},
    ]
    meta = {
        "qtype": "describe",
        "counterfactual": True,
        "prior_answer": "the banana is yellow and the circle is red",
        "objects": objects,
        "entity": None,
    }
    assert generation_label("the banana is yellow and the circle is red", meta) == "prior_driven"
    assert generation_label("the banana is purple and the circle is blue", meta) == "grounded"
    assert generation_label("the banana is pink and the circle is red", meta) == "other"
    assert generation_label("the banana is purple", meta) == "other"  # an object left out
    colour = {**meta, "qtype": "color", "entity": "banana", "prior_answer": "yellow"}
    assert generation_label("yellow", colour) == "prior_driven"
    assert generation_label("purple", colour) == "grounded"
    assert generation_label("green", colour) == "other"
    exist = {"qtype": "exist", "counterfactual": True, "prior_answer": "yes", "objects": []}
    assert generation_label("yes", exist) == "prior_driven"
    assert generation_label("no", exist) == "grounded"
    assert generation_label("yes", {**exist, "counterfactual": False}) is None


def test_linked_combinations_are_half() -> None:
    recall = [linked_recall(e, r) for e in SHAPE_KINDS for r in ("known_for", "found_in")]
    digits = np.array([[linked_digit(d, b) for b in range(10)] for d in range(10)])
    assert sum(recall) == len(recall) // 2
    assert (digits.sum(axis=0) == 5).all() and (digits.sum(axis=1) == 5).all()
    assert sum(linked_word(w) for w in SHAPE_KINDS) == len(SHAPE_KINDS) // 2
    # training shows visual-reference items only for linked combinations
    train = demo_world("train", 3000, seed=0, qtypes=["recall", "digit_arith", "letters"])
    visual = [s for s in train if s.meta["setting"] == "visual"]
    assert len(visual) > 300 and all(s.meta["linked"] is True for s in visual)


def test_vocabulary_covers_every_text() -> None:
    vocab = set(world_vocabulary())
    items = demo_world("train", 1000, seed=0) + demo_world("test", 900, seed=0) + text_corpus(500)
    for s in items:
        words = s.question.replace(SLOT, " ").split() + (s.answer.split() if s.answer else [])
        assert set(words) <= vocab, set(words) - vocab


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="split"):
        demo_world("dev", 3)
    with pytest.raises(ValueError, match="question types"):
        demo_world("test", 3, qtypes=["colour"])
    with pytest.raises(ValueError, match="counterfactual_share"):
        demo_world("test", 3, counterfactual_share=1.5)


def test_opacity_override_samples_the_weak_evidence_band() -> None:
    items = demo_world("test", 450, seed=0, opacity=(0.05, 0.25))
    seen = [s.meta["opacity"] for s in items if s.meta["opacity"] is not None]
    assert len(seen) > 250
    assert all(0.05 <= o <= 0.25 for o in seen)
    for s in items:
        for o in s.meta["objects"] or []:
            if s.meta["qtype"] not in ("arith", "fact_color"):  # those show unrelated scenes
                assert 0.05 <= o["opacity"] <= 0.25
        for o in (s.meta["source_opacity"] or {}).values():
            assert 0.05 <= o <= 0.25
    # the same draws as without the override, only fainter
    plain = demo_world("test", 450, seed=0)
    assert [s.answer for s in items if s.meta["qtype"] != "conflict"] == [
        s.answer for s in plain if s.meta["qtype"] != "conflict"
    ]
