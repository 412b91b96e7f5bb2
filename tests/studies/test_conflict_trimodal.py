"""The conflict study on tri-modal items (image, audio, caption) on a tiny Qwen2.5-Omni thinker:
``without:<source>`` against prompts built by hand and run in plain HF, the paper's eight labels,
rates against hand counts and scipy's Wilson interval, the probe against a scikit-learn fit, its
permutation p-values against the hypergeometric tail and a full enumeration, contrastive decoding
against a brute-force loop, the decoding and batching checks, and the command's checks."""

from __future__ import annotations

import copy
import itertools
import math
import zlib
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import soundfile
import torch
from scipy.stats import binomtest, hypergeom
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import balanced_accuracy_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import interp
from interp.cli import main
from interp.encoding import batch_indices, encode
from interp.errors import DataFormatError, DecodingError
from interp.studies.conflict import (
    HALLUCINATION,
    NO_BIAS,
    TRIMODAL_SOURCES,
    VIDEO_SOURCE,
    ConflictResponses,
    Source,
    all_labels,
    bias_label,
    bias_probe,
    check_items,
    conflict_responses,
    favouring,
    infer_sources,
    permutation_test,
)
from interp.testing import one_error_line, shared_tiny_vlm
from interp.testing.reference import grow_inputs, hf_hidden_states
from interp.testing.tolerance import EPS, approx_close, assert_close
from interventions.decoding import contrast

RATE = 16000
CAPTION = "the caption says {} ."
EVIDENCE = ("PercI-PercA", "PercI-PropA", "PropI-PercA", "PropI-PropA")
NAMES = ("leaf", "bell", "drop", "star", "cup")


def tri_item(labels: tuple[str, str, str], order: str, evidence: str, k: int, group: str):
    """One tri-modal item of the shape the demo world's v3 items take: ``{image}`` / ``{audio}``
    slots and the caption in ``order``, random pixels and waveform."""
    rng = np.random.default_rng(k)
    image = rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)
    wave = rng.normal(0, 0.1, int(RATE * (0.3 + 0.1 * (k % 3)))).astype(np.float32)
    caption = CAPTION.format(labels[2])
    parts = {"image": "{image}", "audio": "{audio}", "text": caption}
    question = " ".join([parts[o] for o in order.split(",")] + ["which object is it ?"])
    agree = len(set(labels)) == 1
    meta = {
        "image_label": labels[0],
        "audio_label": labels[1],
        "text_label": labels[2],
        "image_form": "perceptual" if evidence.startswith("PercI") else "propositional",
        "audio_form": "perceptual" if evidence.endswith("PercA") else "propositional",
        "order": order,
        "caption": caption,
        "evidence": evidence,
        "agreement": "all_agree" if agree else "all_differ",
        "group": group,
    }
    return interp.Sample(question, image=image, audio=(wave, RATE), id=f"i{k}", meta=meta)


def tri_items(triples: int, orders: list[str], agreeing: int = 0) -> list[interp.Sample]:
    out = []
    combos = list(itertools.permutations(NAMES, 3))[:triples]
    for t, labels in enumerate(combos):
        for ev in EVIDENCE:
            for order in orders:
                out.append(tri_item(labels, order, ev, len(out), f"t{t}"))
    for a in range(agreeing):
        same = (NAMES[a % len(NAMES)],) * 3
        out.append(tri_item(same, orders[a % len(orders)], EVIDENCE[a % 4], len(out), f"a{a}"))
    return out


@pytest.fixture(scope="module")
def omni():
    return shared_tiny_vlm("qwen2_5_omni_thinker")


# -- labels -----------------------------------------------------------------------------------


def test_the_papers_eight_labels():
    assert all_labels(TRIMODAL_SOURCES) == [
        "BIAS_IMAGE",
        "BIAS_AUDIO",
        "BIAS_TEXT",
        "BIAS_IMAGE_AUDIO",
        "BIAS_IMAGE_TEXT",
        "BIAS_AUDIO_TEXT",
        NO_BIAS,
        HALLUCINATION,
    ]
    labels = {"image": "leaf", "audio": "bell", "text": "drop"}
    cases = {
        "a leaf": "BIAS_IMAGE",
        "bell": "BIAS_AUDIO",
        "Drop.": "BIAS_TEXT",
        "leaf and bell": "BIAS_IMAGE_AUDIO",
        "drop or leaf": "BIAS_IMAGE_TEXT",
        "bell, drop": "BIAS_AUDIO_TEXT",
        "leaf bell drop": NO_BIAS,
        "the sound and the picture disagree": NO_BIAS,
        "a cup": HALLUCINATION,
    }
    for response, expected in cases.items():
        assert bias_label(response, labels) == expected, response


# -- without:<source> against hand-built prompts in plain HF ------------------------------------


def hand_inputs(vlm, content, images, audios):
    """The processor's own chat template and call on a message written by hand."""
    text = vlm.processor.apply_chat_template(
        [{"role": "user", "content": content}], add_generation_prompt=True, tokenize=False
    )
    kw = {}
    if images:
        kw["images"] = images
    if audios:
        kw["audio"] = audios
        kw["sampling_rate"] = RATE
    return text, dict(vlm.processor(text=[text], return_tensors="pt", **kw))


ITEM = ("leaf", "bell", "drop")


@pytest.mark.parametrize(
    "condition",
    ["without:image", "without:audio", "without:text", "without:image+null_audio:silence"],
)
def test_without_a_source_equals_plain_hf_on_a_hand_built_prompt(omni, condition):
    item = tri_item(ITEM, "audio,image,text", "PercI-PropA", 7, "g")
    image = item.load_images()[0]
    wave = item.load_audios()[0].waveform
    if condition.endswith("silence"):
        wave = np.zeros_like(wave)
    gone = condition.split("+")[0].split(":")[1]
    content = [
        {"type": "audio"},
        {"type": "image"},
        {"type": "text", "text": "the caption says drop . which object is it ?"},
    ]
    kept = {"audio": 0, "image": 1, "text": 2}
    content = [c for k, c in enumerate(content) if k != kept[gone]]
    if gone == "text":
        content.append({"type": "text", "text": "which object is it ?"})
    images = [image] if gone != "image" else []
    audios = [wave] if gone != "audio" else []
    text, inputs = hand_inputs(omni, content, images, audios)
    enc = encode(omni, [item], condition)
    assert enc.prompts == [text]
    assert enc.input_ids.tolist() == inputs["input_ids"].tolist()
    # the residual stream at the last prompt token against HF's hidden states
    states = interp.residual_stream(omni, [item], condition, progress_bar=False).numpy()
    with torch.no_grad():
        out = omni.hf(**inputs, output_hidden_states=True)
    hidden = hf_hidden_states(out)
    n = len(hidden) - 1  # hidden[-1] is after the final norm
    ref = np.stack([h[0, -1].numpy() for h in hidden[:n]])
    assert_close(states[0, :n], ref, dtype=torch.float32)


def test_without_a_video_source_drops_its_slot_and_frames(omni):
    item = tri_item(ITEM, "image,audio,text", "PercI-PercA", 3, "g")
    frames = np.random.default_rng(5).integers(0, 256, (4, 32, 32, 3), dtype=np.uint8)
    question = item.question.replace("{audio}", "{video} {audio}")
    meta = {**item.meta, "order": "image,video,audio,text", "video_label": "cup"}
    with_video = replace(item, question=question, video=frames, meta=meta)
    sources = (*TRIMODAL_SOURCES, VIDEO_SOURCE)
    check_items([with_video], sources)
    a = encode(omni, [with_video], "without:video")
    b = encode(omni, [item])
    assert a.prompts == b.prompts
    assert a.input_ids.tolist() == b.input_ids.tolist()


def test_items_lacking_a_label_or_slot_are_typed_errors():
    item = tri_item(ITEM, "image,audio,text", "PercI-PercA", 1, "g")
    assert infer_sources([item])[1] == TRIMODAL_SOURCES
    with pytest.raises(DataFormatError, match="'audio' source has no label"):
        check_items([replace(item, meta={**item.meta, "audio_label": None})], TRIMODAL_SOURCES)
    no_slot = replace(item, question=item.question.replace("{audio} ", ""))
    with pytest.raises(DataFormatError, match="1 audio source"):
        check_items([no_slot], TRIMODAL_SOURCES)
    with pytest.raises(DataFormatError, match="no source set holds"):
        infer_sources([replace(item, meta={**item.meta, "order": "image,smell,text"})])


# -- decoding and batching checks -----------------------------------------------------------


def test_amateurs_that_drop_a_modality_are_grouped_or_refused(omni):
    tri = tri_item(ITEM, "image,audio,text", "PercI-PercA", 1, "g")
    two_images = interp.Sample(
        "{image} {image} the caption says drop . which object is it ?",
        image=[np.zeros((32, 32, 3), np.uint8)] * 2,
        id="d",
        meta={
            "image_label": "leaf",
            "propositional_label": "bell",
            "text_label": "drop",
            "order": "perceptual,propositional,text",
            "caption": "the caption says drop .",
        },
    )
    strict = copy.copy(omni)
    strict.adapter = replace(omni.adapter, mixed_batches=False, mixed_audio=False)
    # without:image leaves the tri-modal item no image, the two-image item one: apart
    assert list(batch_indices(strict, [tri, two_images], "without:image", 8)) == [[1], [0]]
    assert list(batch_indices(omni, [tri, two_images], "without:image", 8)) == [[0, 1]]
    for amateur, noun in (("without:image", "an image"), ("without:audio", "audio")):
        with pytest.raises(DecodingError, match=f"rows with and without {noun}"):
            interp.generate(strict, [tri], decoding=contrast(amateur), max_new_tokens=1)
    # the omni family mixes both: the same decoding runs
    interp.generate(omni, [tri], decoding=contrast("without:audio"), max_new_tokens=1)


def test_contrast_without_the_image_equals_a_brute_force_loop(omni):
    alpha, beta, steps = 0.5, 0.1, 3
    item = tri_item(ITEM, "image,audio,text", "PropI-PercA", 11, "g")
    got = interp.generate(
        omni,
        [item],
        decoding=favouring(("image",))["favour image"],
        max_new_tokens=steps,
        progress_bar=False,
    )
    wave = item.load_audios()[0].waveform
    caption = {"type": "text", "text": "the caption says drop . which object is it ?"}
    _, expert = hand_inputs(
        omni, [{"type": "image"}, {"type": "audio"}, caption], item.load_images(), [wave]
    )
    _, amateur = hand_inputs(omni, [{"type": "audio"}, caption], [], [wave])
    tokens = []
    for _ in range(steps):
        with torch.no_grad():
            z = omni.hf(**expert).logits[0, -1]
            za = omni.hf(**amateur).logits[0, -1]
        mixed = (1 + alpha) * z - alpha * za
        mixed[z < np.log(beta) + z.max()] = -float("inf")
        token = mixed.argmax()[None]
        if token.item() == omni.processor.tokenizer.eos_token_id:
            break
        tokens.append(int(token))
        expert, amateur = grow_inputs(omni, expert, token), grow_inputs(omni, amateur, token)
    assert got.token_ids[0] == tokens


# -- responses, rates and the diagnostic end to end -------------------------------------------


def hashed(response: str, label: str) -> bool:
    """A replaceable matcher with varied verdicts on a random model's answers."""
    return zlib.crc32(f"{response}|{label}".encode()) % 3 == 0


def by_hand(response: str, labels: dict[str, str]) -> str:
    hits = [n.upper() for n, lab in labels.items() if hashed(response, lab)]
    if len(hits) == len(labels):
        return NO_BIAS
    return "BIAS_" + "_".join(hits) if hits else HALLUCINATION


def wilson_ci(k: int, n: int) -> tuple[float, float]:
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    return ci.low, ci.high


@pytest.fixture(scope="module")
def run(omni):
    orders = ["image,audio,text", "text,audio,image", "audio,text,image"]
    items = tri_items(2, orders, agreeing=4)
    resp = conflict_responses(
        omni,
        items,
        decodings=favouring(("image",)),
        matcher=hashed,
        max_new_tokens=2,
        batch_size=8,
        progress_bar=False,
    )
    return items, resp


def test_responses_are_the_models_answers_labelled(omni, run):
    items, resp = run
    assert resp.sources == TRIMODAL_SOURCES
    greedy = interp.generate(omni, items, max_new_tokens=2, progress_bar=False)
    cd = interp.generate(
        omni, items, decoding=contrast("without:image"), max_new_tokens=2, progress_bar=False
    )
    for dname, gen in (("greedy", greedy), ("favour image", cd)):
        part = resp.frame[resp.frame["decoding"] == dname]
        assert part["response"].tolist() == gen.texts
        for s, (_, row) in zip(items, part.iterrows()):
            labels = {"image": s.meta["image_label"], "audio": s.meta["audio_label"]}
            labels["text"] = s.meta["text_label"]
            assert row["label"] == by_hand(row["response"], labels)
            assert row["evidence"] == s.meta["evidence"]
            assert row["order"] == s.meta["order"]
            assert row["agreement"] == s.meta["agreement"]


def test_rates_per_evidence_type_and_order_against_hand_counts_and_scipy(run):
    _, resp = run
    frame = resp.frame[(resp.frame["decoding"] == "greedy")]
    differ = frame[frame["agreement"] == "all_differ"]
    fig3 = resp.evidence_rates().to_frame()
    assert set(fig3["evidence"]) == set(EVIDENCE)
    assert set(fig3["label"]) == set(all_labels(TRIMODAL_SOURCES))
    for _, row in fig3.iterrows():
        cell = differ[differ["evidence"] == row["evidence"]]
        k = int((cell["label"] == row["label"]).sum())
        assert (row["k"], row["n"]) == (k, len(cell))
        # float64 rounding of a rate (S = 1): ε·S = 1e-10, tighter than the bare 1e-9 it replaces
        assert_close([row["low"], row["high"]], list(wilson_ci(k, len(cell))))
    table1 = resp.order_rates().to_frame()
    assert len(set(table1["order"])) == 3
    for _, row in table1.iterrows():
        cell = differ[(differ["evidence"] == row["evidence"]) & (differ["order"] == row["order"])]
        assert row["rate"] == pytest.approx((cell["label"] == row["label"]).mean())
    positions = resp.position_effect()
    for _, row in positions.iterrows():
        name = row["source"]
        cell = differ[
            (differ["evidence"] == row["evidence"])
            & (differ["order"].map(lambda o, n=name: o.split(",").index(n) + 1) == row["position"])
        ]
        k = int((cell["label"] == f"BIAS_{name.upper()}").sum())
        assert (row["k"], row["n"]) == (k, len(cell))
    fig = resp.evidence_rates().plot("Fig. 3")
    assert len(fig.axes[0].patches) >= 4


def test_the_contrast_diagnostic_against_hand_counts(run):
    _, resp = run
    effect = resp.contrast_effect("favour image").set_index(["decoding", "measure"])
    for dname in ("greedy", "favour image"):
        part = resp.frame[resp.frame["decoding"] == dname]
        differ = part[part["agreement"] == "all_differ"]
        agree = part[part["agreement"] == "all_agree"]
        for label in ("BIAS_IMAGE", "BIAS_AUDIO", "BIAS_TEXT"):
            k = int((differ["label"] == label).sum())
            row = effect.loc[(dname, label)]
            assert (row["k"], row["n"]) == (k, len(differ))
            assert (row["low"], row["high"]) == pytest.approx(wilson_ci(k, len(differ)))
        row = effect.loc[(dname, "accuracy where all agree")]
        assert (row["k"], row["n"]) == (int((agree["label"] == NO_BIAS).sum()), 4)


# -- the probe and its test against chance -------------------------------------------------


def close_to_the_exact_p(p: float, exact: float, n: int) -> None:
    """A permutation p-value ``(1 + hits) / (1 + n)`` from ``n`` random permutations against the
    exact one: ``hits / n`` has Monte Carlo standard error ``sqrt(p(1 − p) / n)``; 5 of them, plus
    the ``+ 1``'s ``1 / (n + 1)``."""
    bound = 5 * math.sqrt(exact * (1 - exact) / n) + 1 / (n + 1)
    why = f"a permutation p-value from {n} random permutations: 5 Monte Carlo standard errors"
    approx_close(p, exact, bound, why=why)


def test_permutation_p_value_equals_the_hypergeometric_tail():
    rng = np.random.default_rng(0)
    for signal in (0.0, 0.3, 0.8):
        y = rng.permutation(np.array(["a"] * 14 + ["b"] * 10))
        pred = np.where(rng.random(24) < signal, y, rng.choice(["a", "b"], 24))
        ba, p = permutation_test(y, pred, n_permutations=20000, seed=1)
        assert ba == pytest.approx(balanced_accuracy_score(y, pred))
        tp, pos, k = int(((y == "b") & (pred == "b")).sum()), int((y == "b").sum()), (pred == "b")
        # with the predictions fixed, true positives under permuted labels are hypergeometric
        # and balanced accuracy grows with them: Fisher's exact one-sided test
        exact = hypergeom.sf(tp - 1, len(y), pos, int(k.sum()))
        close_to_the_exact_p(p, exact, 20000)


def exact_block_p(y: np.ndarray, pred: np.ndarray, groups: np.ndarray) -> float:
    """The share of all permutations of equally sized groups' label blocks whose balanced
    accuracy reaches the observed one (full enumeration, scikit-learn's metric)."""
    names = list(dict.fromkeys(groups.tolist()))
    blocks = [np.flatnonzero(groups == g) for g in names]
    observed = balanced_accuracy_score(y, pred)
    hits = []
    for order in itertools.permutations(range(len(blocks))):
        permuted = y.copy()
        for target, k in zip(blocks, order):
            permuted[target] = y[blocks[k]]
        hits.append(balanced_accuracy_score(permuted, pred) >= observed - 1e-12)
    return float(np.mean(hits))


def test_group_permutation_p_value_equals_full_enumeration():
    rng = np.random.default_rng(2)
    groups = np.repeat([f"g{i}" for i in range(5)], 3)
    y = np.array(["a", "b", "c"] * 5)
    rng.shuffle(y)
    for signal in (0.0, 0.7):
        pred = np.where(rng.random(15) < signal, y, rng.choice(["a", "b", "c"], 15))
        _, p = permutation_test(y, pred, n_permutations=10000, seed=3, groups=groups)
        close_to_the_exact_p(p, exact_block_p(y, pred, groups), 10000)


def test_probe_against_a_scikit_learn_fit_on_hf_states(omni):
    items = tri_items(4, ["image,audio,text", "audio,text,image"])
    labels = ["BIAS_IMAGE" if s.meta["order"].startswith("image") else "BIAS_AUDIO" for s in items]
    frame = pd.DataFrame(
        {
            "sample_id": [s.id for s in items],
            "group": [s.meta["group"] for s in items],
            "configuration": "full",
            "condition": "full",
            "evidence": [s.meta["evidence"] for s in items],
            "decoding": "greedy",
            "order": [s.meta["order"] for s in items],
            "agreement": "all_differ",
            "response": "",
            "label": labels,
        }
    )
    resp = ConflictResponses(frame, TRIMODAL_SOURCES)
    n_layers = omni.n_layers
    layers = list(range(n_layers))  # the last residual index is compared below the final norm
    probe = bias_probe(omni, items, resp, cv=3, layers=layers, progress_bar=False)
    table = probe.above_chance(n_permutations=4000)
    enc = encode(omni, items)
    with torch.no_grad():
        hidden = hf_hidden_states(omni.hf(**enc.inputs, output_hidden_states=True))
    y = np.array(labels)
    groups = np.array([s.meta["group"] for s in items])
    base = make_pipeline(
        StandardScaler(), LogisticRegression(class_weight="balanced", max_iter=1000)
    )
    for layer in layers:
        X = hidden[layer][:, -1].numpy()
        pred = np.empty(len(y), dtype=object)
        for train, test in probe.probe.folds_:
            pred[test] = clone(base).fit(X[train], y[train]).predict(X[test])
        # the same predictions' balanced accuracy in float64 (S = 1): ε·S = 1e-10
        assert_close(
            table.loc[layer, "balanced_accuracy"], balanced_accuracy_score(y, pred.astype(str))
        )
        # the items' label blocks permuted among the four label triples: 24 permutations
        exact = exact_block_p(y, pred.astype(str), groups)
        close_to_the_exact_p(table.loc[layer, "p"], exact, 4000)
    assert (table["p_adjusted"] == np.minimum(1, table["p"] * len(layers))).all()


def test_sources_name_their_modality():
    with pytest.raises((ValueError, TypeError)):  # TypeError: the tests' runtime type checks
        Source("smell", "smell_label", "smell", "smell")  # type: ignore[arg-type]
    assert [s.kind for s in TRIMODAL_SOURCES] == ["image", "audio", "text"]


# -- the command ------------------------------------------------------------------------------


def _table(tmp_path, items, drop: str | None = None) -> str:
    """The items as a parquet table with image and audio files, as a user's data."""
    rows = []
    for s in items:
        image, audio = tmp_path / f"{s.id}.png", tmp_path / f"{s.id}.wav"
        s.load_images()[0].save(image)
        a = s.load_audios()[0]
        soundfile.write(audio, a.waveform, a.sampling_rate)
        meta = {k: v for k, v in s.meta.items() if k != drop}
        rows.append({"question": s.question, "img": image.name, "clip": audio.name, **meta})
    pd.DataFrame(rows).to_parquet(tmp_path / "items.parquet")
    return str(tmp_path / "items.parquet")


def test_the_command_end_to_end_on_an_omni_model(omni, tmp_path, monkeypatch):
    folder = tmp_path / "model"
    omni.hf.config.save_pretrained(folder)  # the configuration the checks read
    monkeypatch.setattr(interp.model, "load", lambda *a, **k: omni)
    items = tri_items(2, ["image,audio,text", "text,audio,image"], agreeing=2)
    data = _table(tmp_path, items)
    out = tmp_path / "run"
    argv = ["conflict", "--model", str(folder), "--data", data, "--columns", "image=img,audio=clip"]
    opts = ["--favour", "image", "--cv", "2", "--max-new-tokens", "2", "--no-progress"]
    assert main([*argv, *opts, "--sources", "trimodal", "--out", str(out)]) == 0
    for name in ("bias_by_evidence.csv", "bias_by_order.csv", "contrast_effect.csv", "bias.png"):
        assert (out / name).exists(), name
    assert "bias_by_evidence.png" in {p.name for p in out.iterdir()}
    responses = pd.read_csv(out / "responses.csv")
    gen = interp.generate(omni, items, max_new_tokens=2, progress_bar=False)
    greedy = responses[responses["decoding"] == "greedy"]
    assert greedy["response"].fillna("").tolist() == gen.texts
    assert set(responses["decoding"]) == {"greedy", "favour image"}
    fig3 = pd.read_csv(out / "bias_by_evidence.csv")
    assert set(fig3["evidence"]) == set(EVIDENCE) and fig3["n"].eq(4).all()
    assert "sources: image (image), audio (audio), text (text)" in (out / "summary.txt").read_text()


@pytest.mark.parametrize(
    "drop, extra, message",
    [
        ("audio_label", [], "the 'audio' source has no label"),
        (None, ["--sources", "demo"], "unknown source 'image'"),
        (None, ["--sources", "smell"], "--sources: unknown source set 'smell'"),
        (None, ["--favour", "prop_image"], "--favour: unknown source 'prop_image'"),
    ],
)
def test_bad_items_and_options_are_one_line_before_the_model_loads(
    drop, extra, message, tmp_path, capsys, no_model, omni
):
    folder = tmp_path / "model"
    omni.hf.config.save_pretrained(folder)
    data = _table(tmp_path, tri_items(1, ["image,audio,text"]), drop=drop)
    out = tmp_path / "out"
    argv = ["conflict", "--model", str(folder), "--data", data, "--columns", "image=img,audio=clip"]
    assert main([*argv, *extra, "--out", str(out)]) == 2
    assert message in one_error_line(capsys.readouterr().err)
    assert not out.exists()


def test_the_audit_section_handles_audio_sources(omni):
    from interp.studies.audit.registry import AuditOptions
    from interp.studies.conflict.audit import section, select

    items = tri_items(2, ["image,audio,text", "audio,text,image"], agreeing=2)
    chosen = select(items)
    assert len(chosen.samples) == len(items) and not chosen.reason
    broken = [replace(items[0], meta={**items[0].meta, "audio_label": ""})]
    assert "'audio' source has no label" in select(broken).reason
    sec = section(omni, chosen.samples, AuditOptions(batch_size=8, max_new_tokens=2))
    assert {"follows_image", "follows_audio", "follows_caption"} <= set(sec.numbers)
    assert "image_after_contrast" in sec.numbers and "the audio" in sec.verdict
    # its shares are the greedy answers' labels where all differ, by hand
    gen = interp.generate(omni, chosen.samples, max_new_tokens=2, progress_bar=False)
    differ = [
        (s, t) for s, t in zip(chosen.samples, gen.texts) if s.meta["agreement"] == "all_differ"
    ]
    labels = {"image": "image_label", "audio": "audio_label", "text": "text_label"}
    audio = sum(
        bias_label(t, {k: s.meta[v] for k, v in labels.items()}) == "BIAS_AUDIO" for s, t in differ
    )
    share = audio / len(differ)
    # a headline number is printed to 3 significant digits: half a unit of the third
    third = 0.5 * 10 ** (math.floor(math.log10(share)) - 2) if share else 0.0
    approx_close(
        sec.numbers["follows_audio"],
        share,
        third + EPS["float64"],
        why="headline numbers keep 3 significant digits",
    )


def test_the_command_on_the_demo_worlds_trimodal_items(omni, tmp_path, monkeypatch):
    from interp.datasets import demo_world

    folder = tmp_path / "model"
    omni.hf.config.save_pretrained(folder)
    monkeypatch.setattr(interp.model, "load", lambda *a, **k: omni)
    out = tmp_path / "run"
    argv = ["conflict", "--model", str(folder), "--data", "demo:trimodal", "--n", "24"]
    opts = ["--favour", "image", "--cv", "2", "--max-new-tokens", "1", "--no-progress"]
    assert main([*argv, *opts, "--out", str(out)]) == 0  # --sources auto: trimodal
    items = demo_world("test", n=24, seed=0, qtypes=["trimodal"])
    fig3 = pd.read_csv(out / "bias_by_evidence.csv")
    counts = pd.Series(
        [s.meta["evidence"] for s in items if s.meta["agreement"] == "all_differ"]
    ).value_counts()
    assert fig3.groupby("evidence")["n"].first().to_dict() == counts.to_dict()


def test_the_audit_picks_one_source_set_from_mixed_items():
    from interp.datasets import demo_world
    from interp.studies.conflict.audit import select

    tri = demo_world("test", n=12, seed=0, qtypes=["trimodal"])
    two = demo_world("test", n=6, seed=0, qtypes=["conflict"])
    assert [s.id for s in select([*two, *tri]).samples] == [s.id for s in tri]
    assert [s.id for s in select(two).samples] == [s.id for s in two]
