"""World v3: v2 items unchanged, tri-modal conflicts, audio-only items and videos, checked by hand."""

from __future__ import annotations

import hashlib
import itertools
import json
from collections import Counter

import numpy as np
import pytest
import soundfile
from scipy import ndimage

from interp import Audio, Sample
from interp.datasets import (
    META_KEYS,
    QTYPES,
    SHAPE_KINDS,
    V3_META_KEYS,
    V3_QTYPES,
    demo_world,
    label_triple,
    text_corpus,
    world_vocabulary,
)
from interp.datasets.world.speech import CLIP_DIR, speech_manifest

# Fingerprints of v2 requests, computed by _fingerprint on main before world v3 was added.
V2_FINGERPRINTS = {
    "test-7": "09d0c11546f752dc",
    "val-3-conflict": "f7758ad252f6b517",
    "train-5": "429112b8177153c9",
    "train-6-conflict": "30f0659e10fbd599",
    "text-2": "b461ae9d5fe5d384",
}
CONDITIONS = ("PercI-PercA", "PercI-PropA", "PropI-PercA", "PropI-PropA")
SOURCES = ("image", "audio", "text")
ORDERS = {",".join(p) for p in itertools.permutations(SOURCES)}


def _fingerprint(samples: list[Sample]) -> str:
    h = hashlib.sha256()
    for s in samples:
        record = [s.id, s.question, s.answer, s.meta, list(s.meta)]
        h.update(json.dumps(record, sort_keys=True).encode())
        for im in s.image if isinstance(s.image, list) else [s.image]:
            h.update(b"none" if im is None else np.asarray(im).tobytes())
        h.update(b"\n")
    return h.hexdigest()[:16]


def test_v2_items_are_unchanged() -> None:
    requests = {
        "test-7": lambda: demo_world("test", 2 * len(QTYPES), seed=7),
        "val-3-conflict": lambda: demo_world(
            "val", 12, seed=3, qtypes=["conflict", "color"], start=2
        ),
        "train-5": lambda: demo_world("train", 30, seed=5),
        "train-6-conflict": lambda: demo_world("train", 10, seed=6, qtypes=["conflict"]),
        "text-2": lambda: text_corpus(20, seed=2),
    }
    for name, make in requests.items():
        assert _fingerprint(make()) == V2_FINGERPRINTS[name], name


def test_v2_items_among_v3_ones_are_the_v2_items() -> None:
    mixed = demo_world("test", 120, seed=2, qtypes=["color", "motion", "conflict", "trimodal"])
    v2 = [s for s in mixed if s.meta["qtype"] in QTYPES]
    alone = demo_world("test", 200, seed=2, qtypes=["color", "conflict"])
    alone = [s for s in alone if s.id in {x.id for x in v2}]
    assert len(v2) >= 20 and _fingerprint(v2) == _fingerprint(alone)
    assert {s.meta["qtype"] for s in demo_world("test", 400, seed=2)} == set(QTYPES)


@pytest.fixture(scope="module")
def tri() -> list[Sample]:
    return demo_world("test", 28 * 10, seed=3, qtypes=["trimodal"])


def _groups(items: list[Sample]) -> list[list[Sample]]:
    out: dict[str, list[Sample]] = {}
    for s in items:
        out.setdefault(s.meta["group"], []).append(s)
    return list(out.values())


def test_trimodal_schema_and_prompt(tri: list[Sample]) -> None:
    assert len(tri) == 280 and len({s.id for s in tri}) == 280
    for s in tri:
        m = s.meta
        assert set(m) == set(META_KEYS) | set(V3_META_KEYS)
        assert m["image_form"] in ("perceptual", "propositional")
        assert m["audio_form"] in ("perceptual", "propositional")
        assert m["evidence"] == f"{m['image_form'][:4].title()}I-{m['audio_form'][:4].title()}A"
        assert s.answer == m["answer"] and s.answer in SHAPE_KINDS
        order = m["order"].split(",")
        # the three inputs stand in the question in the order of meta["order"], question last
        where = {"image": "{image}", "audio": "{audio}", "text": m["caption"]}
        positions = [s.question.index(where[src]) for src in order]
        assert positions == sorted(positions)
        assert m["caption"] == f"the caption says {m['text_label']} ."
        assert s.question.endswith("which object is it ?")
        assert len(s.images) == 1 and s.n_audio == 1
        image = np.asarray(s.load_image())
        assert image.shape == (32, 32, 3) and image.dtype == np.uint8
        (audio,) = s.load_audios()
        assert isinstance(audio, Audio) and audio.sampling_rate == 16000
        assert audio.waveform.dtype == np.float32 and 0.5 < audio.duration < 2.5
        assert np.abs(audio.waveform).max() <= 1.0


def test_trimodal_conditions_share_one_triple_in_every_order(tri: list[Sample]) -> None:
    for g in _groups(tri):
        differ = [s for s in g if s.meta["agreement"] == "all_differ"]
        agree = [s for s in g if s.meta["agreement"] == "all_agree"]
        assert len(differ) == 24 and len(agree) == 4
        triples = {
            (s.meta["image_label"], s.meta["audio_label"], s.meta["text_label"]) for s in differ
        }
        assert len(triples) == 1 and len(set(next(iter(triples)))) == 3
        pairs = Counter((s.meta["evidence"], s.meta["order"]) for s in differ)
        assert set(pairs) == set(itertools.product(CONDITIONS, ORDERS)) and max(pairs.values()) == 1
        assert {s.meta["evidence"] for s in agree} == set(CONDITIONS)
        for s in agree:
            assert len({s.meta["image_label"], s.meta["audio_label"], s.meta["text_label"]}) == 1
            assert s.answer == s.meta["image_label"] == next(iter(triples))[0]
        # one render per form: the same pixels and samples in every item that shows that form
        for key, load in (("image_form", lambda s: np.asarray(s.load_image())),):
            by_form: dict[str, list[np.ndarray]] = {}
            for s in g:
                by_form.setdefault(s.meta[key], []).append(load(s))
            assert all(np.array_equal(v[0], x) for v in by_form.values() for x in v)
            assert not np.array_equal(by_form["perceptual"][0], by_form["propositional"][0])
        audio = {
            s.meta["audio_form"]: s.load_audios()[0].waveform
            for s in differ
            if s.meta["order"] == "image,audio,text"
        }
        assert len(audio) == 2 and all(
            np.array_equal(audio[s.meta["audio_form"]], s.load_audios()[0].waveform) for s in differ
        )


def test_trimodal_labels_are_balanced(tri: list[Sample]) -> None:
    firsts = [g[0].meta for g in _groups(tri)]
    assert len(firsts) == 10
    for key in ("image_label", "audio_label", "text_label"):
        assert Counter(m[key] for m in firsts) == Counter(SHAPE_KINDS)
    triples = {label_triple(5, k) for k in range(720)}
    assert len(triples) == 720 and all(len(set(t)) == 3 for t in triples)


def _hand_answer(m: dict) -> str:
    """The trust rule worked out by hand for three different labels (see trimodal_answer)."""
    order = m["order"].split(",")
    if m["image_form"] == "perceptual":
        return m["image_label"]
    if m["audio_form"] == "perceptual":  # propositional image 0.8 + place beats sound <= 0.75
        return m["text_label"] if order == ["image", "audio", "text"] else m["image_label"]
    if order[-1] == "image":
        return m["image_label"]
    if order[-1] == "audio":  # spoken 0.7 + 0.25 beats the written 0.8 (+ 0.12 at most)
        return m["audio_label"]
    # caption last (0.85): beats the written label placed first (0.8), not placed second (0.92)
    return m["text_label"] if order[0] == "image" else m["image_label"]


def test_trimodal_answers_follow_the_trust_rule(tri: list[Sample]) -> None:
    wins: Counter = Counter()
    for s in tri:
        m = s.meta
        if m["agreement"] == "all_agree":
            assert s.answer == m["text_label"] and not m["needs_image"] and not m["needs_audio"]
            continue
        assert s.answer == _hand_answer(m), (m["evidence"], m["order"])
        winner = next(src for src in SOURCES if m[f"{src}_label"] == s.answer)
        assert m["needs_image"] is (winner == "image") and m["needs_audio"] is (winner == "audio")
        wins[m["evidence"], winner] += 1
    per = 6 * 10  # orders x draws per condition
    assert wins["PercI-PercA", "image"] == wins["PercI-PropA", "image"] == per
    assert wins["PropI-PercA", "image"] == 5 * 10 and wins["PropI-PropA", "image"] == 3 * 10
    assert wins["PropI-PropA", "audio"] == 2 * 10 and wins["PropI-PercA", "audio"] == 0


def test_speech_comes_from_the_manifest(tri: list[Sample]) -> None:
    clips = {e["file"]: e for e in speech_manifest()}
    waves = {f: soundfile.read(str(CLIP_DIR / f), dtype="float64")[0] for f in clips}
    seen = set()
    for s in tri[:28] + tri[28 * 5 : 28 * 5 + 28]:
        if s.meta["audio_form"] != "propositional" or s.meta["order"] != "image,audio,text":
            continue
        w = s.load_audios()[0].waveform.astype(np.float64)
        same = [f for f, x in waves.items() if len(x) == len(w)]
        corr = {
            f: abs(np.dot(w, waves[f])) / np.linalg.norm(w) / np.linalg.norm(waves[f]) for f in same
        }
        best = max(corr, key=corr.get)
        assert corr[best] > 0.5
        assert clips[best]["kind"] == s.meta["audio_label"]
        assert clips[best]["text"] == s.meta["audio_text"]
        assert s.meta["audio_label"] in s.meta["audio_text"].split()
        seen.add(s.meta["agreement"])
    assert seen == {"all_agree", "all_differ"}


def test_training_items_and_determinism() -> None:
    train = demo_world("train", 40, seed=1, qtypes=list(V3_QTYPES))
    assert _fingerprint(train[:10]) == _fingerprint(
        demo_world("train", 10, seed=1, qtypes=list(V3_QTYPES))
    )
    assert set(Counter(s.meta["qtype"] for s in train)) == set(V3_QTYPES)
    for s in train:
        assert s.meta["split"] == "train" and s.answer == s.meta["answer"]
    tri = [s for s in demo_world("train", 80, seed=1, qtypes=["trimodal"])]
    agree = np.mean([s.meta["agreement"] == "all_agree" for s in tri])
    assert 0.1 < agree < 0.45
    a = demo_world("test", 40, seed=4, qtypes=["hear", "motion"])
    b = demo_world("test", 40, seed=4, qtypes=["hear", "motion"])
    for x, y in zip(a, b, strict=True):
        assert (x.id, x.question, x.answer) == (y.id, y.question, y.answer)
        assert all(
            np.array_equal(p.waveform, q.waveform) for p, q in zip(x.load_audios(), y.load_audios())
        )
        assert all(np.array_equal(p, q) for p, q in zip(x.load_videos(), y.load_videos()))


def test_hear_items() -> None:
    items = demo_world("test", 20, seed=0, qtypes=["hear"])
    assert Counter(s.meta["audio_form"] for s in items) == {"perceptual": 10, "propositional": 10}
    assert {s.answer for s in items} == set(SHAPE_KINDS)
    for s in items:
        assert s.image is None and s.n_audio == 1 and s.meta["needs_audio"]
        assert (s.meta["audio_text"] is None) is (s.meta["audio_form"] == "perceptual")


def _ink(frame: np.ndarray) -> np.ndarray:
    """Where an object is, independently of the renderer: the colour distance from the grey
    background, box-blurred over 3 x 3 pixels to average the pixel noise away."""
    dev = np.linalg.norm(frame.astype(np.float64) - 60.0, axis=-1)
    return ndimage.uniform_filter(dev, size=3) > 60.0


def test_motion_videos_show_what_the_answers_say() -> None:
    items = demo_world("test", 60, seed=6, qtypes=["motion"])
    kinds = Counter(s.meta["video_kind"] for s in items)
    assert set(kinds) == {"move", "appear"}
    checked = Counter()
    for s in items:
        m = s.meta
        (video,) = s.load_videos()
        assert video.dtype == np.uint8 and video.shape[1:] == (32, 32, 3)
        assert 4 <= video.shape[0] <= 8 and m["frames"] == video.shape[0]
        assert s.question.startswith("{video} ") and s.image is None and m["needs_video"]
        if m["video_kind"] == "move":
            ys, xs = zip(*(np.argwhere(_ink(f)).mean(axis=0) for f in video))
            dy, dx = ys[-1] - ys[0], xs[-1] - xs[0]
            seen = (
                ("right" if dx > 0 else "left")
                if abs(dx) > abs(dy)
                else ("down" if dy > 0 else "up")
            )
            assert seen == m["direction"] and max(abs(dx), abs(dy)) >= 10
            if m["video_question"] == "direction":
                assert s.answer == m["direction"] and m["entity"] in s.question
            else:
                assert s.answer == f"the {m['entity']} moves {m['direction']}"
        else:
            first, last = m["appear_order"].split(",")
            onsets = []
            for o in m["objects"]:
                row, col = divmod(
                    ("top left", "top right", "bottom left", "bottom right").index(o["cell"]), 2
                )
                cell = video[:, row * 16 : row * 16 + 16, col * 16 : col * 16 + 16]
                lit = [_ink(f).mean() > 0.05 for f in cell]
                onsets.append(lit.index(True))
                assert all(lit[lit.index(True) :])  # it stays once it appeared
            assert onsets[0] < onsets[1] and [o["kind"] for o in m["objects"]] == [first, last]
            answer = {
                "first": first,
                "last": last,
                "describe": f"the {first} appears before the {last}",
            }
            assert s.answer == answer[m["video_question"]]
        checked[m["video_kind"]] += 1
    assert checked["move"] >= 10 and checked["appear"] >= 10


def test_v3_vocabulary_covers_the_v3_texts() -> None:
    assert world_vocabulary(v3=False) == world_vocabulary()
    vocab = set(world_vocabulary(v3=True))
    items = demo_world("test", 90, seed=1, qtypes=list(V3_QTYPES))
    for s in items:
        text = s.question.replace("{image}", " ").replace("{audio}", " ").replace("{video}", " ")
        assert set(text.split()) | set(s.answer.split()) <= vocab, s.question


def test_data_specs_name_the_v3_types() -> None:
    from interp.cli import UsageError
    from interp.data_spec import load_data

    items = load_data("demo:v3", 40, 0, default_qtypes=("color",))
    assert {s.meta["qtype"] for s in items} == set(V3_QTYPES)
    items = load_data("demo:motion,color", 6, 0, default_qtypes=("color",))
    assert {s.meta["qtype"] for s in items} == {"motion", "color"}
    with pytest.raises(UsageError, match="choose from .*trimodal, hear, motion"):
        load_data("demo:sound", 6, 0, default_qtypes=("color",))


def test_every_statement_fits_a_propositional_image() -> None:
    from interp.datasets import SPEECH_PHRASINGS
    from interp.datasets.render import sentence_mask

    for kind, phrasing in itertools.product(SHAPE_KINDS, SPEECH_PHRASINGS):
        mask = sentence_mask(phrasing.format(kind=kind))
        assert mask.shape[0] <= 32 and mask.shape[1] <= 32
        # one 5-pixel line of letters per wrapped line, blank rows between the lines
        inked_rows = np.flatnonzero(mask.any(axis=1))
        assert len(inked_rows) % 5 == 0 and len(inked_rows) >= 10
