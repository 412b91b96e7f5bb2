"""The conflict study's paper-fidelity pieces on a tiny Qwen2.5-Omni thinker: the ``only:<source>``
amateur against prompts built by hand in plain HF, contrastive decoding against the source alone
against a brute-force loop, the decoding table against hand counts, the free-form judges against
hand labels, and the within-cell permutation null against a full enumeration."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.metrics import balanced_accuracy_score

import interp
from interp.encoding import encode
from interp.errors import DataFormatError
from interp.studies.conflict import (
    HALLUCINATION,
    NO_BIAS,
    TRIMODAL_SOURCES,
    ConflictResponses,
    LLMJudge,
    allowed_labels,
    conflict_responses,
    contrastive_decodings,
    only_source,
    permutation_test,
    rule_judge,
)
from interp.testing import shared_tiny_vlm
from interp.testing.reference import grow_inputs, hf_hidden_states
from interp.testing.tolerance import assert_close

RATE = 16000
QUESTION = "which object is it ?"


def item(order: str = "audio,image,text", k: int = 7) -> interp.Sample:
    rng = np.random.default_rng(k)
    image = rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)
    wave = rng.normal(0, 0.1, 6000).astype(np.float32)
    caption = "the caption says drop ."
    parts = {"image": "{image}", "audio": "{audio}", "text": caption}
    meta = {
        "image_label": "leaf",
        "audio_label": "bell",
        "text_label": "drop",
        "order": order,
        "caption": caption,
        "evidence": "PercI-PropA",
        "group": "g",
    }
    question = " ".join([parts[o] for o in order.split(",")] + [QUESTION])
    return interp.Sample(question, image=image, audio=(wave, RATE), id=f"i{k}", meta=meta)


@pytest.fixture(scope="module")
def omni():
    return shared_tiny_vlm("qwen2_5_omni_thinker")


def hand_inputs(vlm, content, images, audios):
    text = vlm.processor.apply_chat_template(
        [{"role": "user", "content": content}], add_generation_prompt=True, tokenize=False
    )
    kw = {}
    if images:
        kw["images"] = images
    if audios:
        kw |= {"audio": audios, "sampling_rate": RATE}
    return text, dict(vlm.processor(text=[text], return_tensors="pt", **kw))


def alone_content(source: str, s: interp.Sample):
    """The message of ``s`` with ``source`` alone, written by hand."""
    if source == "text":
        return [{"type": "text", "text": f"the caption says drop . {QUESTION}"}], [], []
    if source == "image":
        return [{"type": "image"}, {"type": "text", "text": QUESTION}], s.load_images(), []
    wave = s.load_audios()[0].waveform
    return [{"type": "audio"}, {"type": "text", "text": QUESTION}], [], [wave]


@pytest.mark.parametrize("source", ["image", "audio", "text"])
def test_a_source_alone_equals_plain_hf_on_a_hand_built_prompt(omni, source):
    s = item()
    alone = only_source(s, source)
    assert alone.meta["order"] == source
    text, inputs = hand_inputs(omni, *alone_content(source, s))
    enc = encode(omni, [s], f"only:{source}")
    assert enc.prompts == [text]
    assert enc.input_ids.tolist() == inputs["input_ids"].tolist()
    states = interp.residual_stream(omni, [s], f"only:{source}", progress_bar=False).numpy()
    with torch.no_grad():
        hidden = hf_hidden_states(omni.hf(**inputs, output_hidden_states=True))
    n = len(hidden) - 1  # the last is after the final norm
    ref = np.stack([h[0, -1].numpy() for h in hidden[:n]])
    assert_close(states[0, :n], ref, dtype=torch.float32)


def test_a_missing_source_cannot_be_kept_alone():
    s = item("image,text")
    s = interp.Sample(s.question.replace("{audio} ", ""), image=s.images, meta=s.meta, id="x")
    with pytest.raises(DataFormatError, match="no 'audio' source"):
        only_source(s, "audio")


def test_contrast_against_the_image_alone_equals_a_brute_force_loop(omni):
    alpha, beta, steps = 0.5, 0.1, 3
    s = item("image,audio,text", 11)
    decoding = contrastive_decodings(("image",), ("alone",))["against image alone"]
    got = interp.generate(omni, [s], decoding=decoding, max_new_tokens=steps, progress_bar=False)
    wave = s.load_audios()[0].waveform
    caption = {"type": "text", "text": f"the caption says drop . {QUESTION}"}
    full = [{"type": "image"}, {"type": "audio"}, caption]
    _, expert = hand_inputs(omni, full, s.load_images(), [wave])
    _, amateur = hand_inputs(omni, *alone_content("image", s))
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


def test_the_decodings_name_both_kinds_of_amateur():
    d = contrastive_decodings()
    assert d["greedy"] is None
    assert [str(m.amateurs[0]) for k, m in d.items() if k.startswith("against")] == [
        "only:image",
        "only:audio",
        "only:text",
    ]
    assert str(d["favour image"].amateurs[0]) == "without:image"
    with pytest.raises(ValueError, match="unknown amateur kind"):
        contrastive_decodings(amateurs=("beside",))


def test_the_decoding_table_against_hand_counts():
    # 3 groups x 2 conflicting items + 2 agreeing items, greedy vs one contrast
    rows = []
    greedy = ["BIAS_IMAGE"] * 4 + ["BIAS_TEXT", "HALLUCINATION"] + [NO_BIAS, NO_BIAS]
    other = ["BIAS_TEXT", "BIAS_IMAGE", "BIAS_TEXT", "BIAS_TEXT", "BIAS_TEXT", "BIAS_IMAGE"]
    other += [NO_BIAS, "BIAS_IMAGE"]
    for dec, labels in (("greedy", greedy), ("c", other)):
        for i, lab in enumerate(labels):
            rows.append(
                {
                    "sample_id": f"s{i}",
                    "group": f"g{i // 2}",
                    "configuration": "full",
                    "decoding": dec,
                    "agreement": "all_differ" if i < 6 else "all_agree",
                    "label": lab,
                }
            )
    resp = ConflictResponses(pd.DataFrame(rows), TRIMODAL_SOURCES)
    t = resp.decoding_effects().set_index("measure")
    assert t.loc["BIAS_IMAGE", "rate"] == pytest.approx(2 / 6)
    assert t.loc["BIAS_IMAGE", "baseline"] == pytest.approx(4 / 6)
    assert t.loc["BIAS_TEXT", "change"] == pytest.approx(4 / 6 - 1 / 6)
    assert t.loc["accuracy where all agree", "rate"] == pytest.approx(0.5)
    # per-group changes in text bias: g0 0 -> 1 of 2, g1 0 -> 2 of 2, g2 1 -> 1 of 2, i.e.
    # +0.5, +1, 0: a resample of the groups averages within [0, 1]
    lo, hi = t.loc["BIAS_TEXT", ["change_low", "change_high"]]
    assert 0 <= lo <= 0.5 <= hi <= 1
    assert t.loc["BIAS_TEXT", "changed"] == (lo > 0)
    # every group changing alike (image on every conflicting item -> text): no spread
    flip = {"greedy": "BIAS_IMAGE", "c": "BIAS_TEXT"}
    alike = [
        r | {"label": flip[r["decoding"]]} if r["agreement"] == "all_differ" else r for r in rows
    ]
    u = ConflictResponses(pd.DataFrame(alike), TRIMODAL_SOURCES).decoding_effects()
    u = u.set_index("measure").loc["BIAS_IMAGE"]
    assert (u["change"], u["change_low"], u["change_high"]) == (-1.0, -1.0, -1.0)
    assert u["changed"]
    same = ConflictResponses(pd.DataFrame([r | {"decoding": "x"} for r in rows[:8]] + rows[:8]))
    assert (same.decoding_effects()["change"] == 0).all()


RESPONSES = {
    "It is a leaf.": "BIAS_IMAGE",
    "a leaf, not a bell": "BIAS_IMAGE",
    "It's a drop rather than a leaf": "BIAS_TEXT",
    "The picture shows a leaf and the caption says drop": "BIAS_IMAGE_TEXT",
    "I see a leaf, hear a bell and read drop": NO_BIAS,  # reports all three, no conclusion
    "The inputs contradict each other.": NO_BIAS,
    "The image and the sound disagree, so I cannot tell": NO_BIAS,
    "a cup": HALLUCINATION,
}


@pytest.mark.parametrize("response, expected", RESPONSES.items())
def test_the_rule_judge_on_hand_labelled_free_form_answers(response, expected):
    labels = {"image": "leaf", "audio": "bell", "text": "drop"}
    assert rule_judge(response, labels) == expected


def test_the_llm_judge_hook_sees_the_question_and_labels_and_parses_its_reply():
    s = item()
    labels = {"image": "leaf", "audio": "bell", "text": "drop"}
    prompts = []

    def complete(prompt: str) -> str:
        prompts.append(prompt)
        return "Label: no_bias (the answer says the inputs differ)"

    judge = LLMJudge(complete)
    assert judge("they differ", labels, s) == NO_BIAS
    assert s.question in prompts[0] and "they differ" in prompts[0]
    assert "image: leaf; audio: bell; text: drop" in prompts[0]
    assert all(lab in prompts[0] for lab in allowed_labels(labels))
    with pytest.raises(DataFormatError, match="names none of the labels"):
        LLMJudge(lambda p: "maybe")("x", labels, s)


def test_a_judge_labels_the_responses_and_a_bad_label_is_a_typed_error(omni):
    s = item()
    resp = conflict_responses(
        omni, [s], judge=lambda r, labels, smp: "BIAS_AUDIO", max_new_tokens=2, progress_bar=False
    )
    assert resp.frame["label"].tolist() == ["BIAS_AUDIO"]
    with pytest.raises(DataFormatError, match="returned 'BIAS_SMELL'"):
        conflict_responses(
            omni, [s], judge=lambda r, lab, smp: "BIAS_SMELL", max_new_tokens=1, progress_bar=False
        )


def exact_cell_p(y, pred, cells) -> float:
    """The within-cell permutation p-value by enumerating every within-cell permutation."""
    observed = balanced_accuracy_score(y, pred)
    idx = [np.flatnonzero(cells == c) for c in dict.fromkeys(cells)]
    hits = []
    for perms in itertools.product(*(itertools.permutations(i) for i in idx)):
        permuted = y.copy()
        for i, p in zip(idx, perms):
            permuted[i] = y[list(p)]
        hits.append(balanced_accuracy_score(permuted, pred) >= observed - 1e-12)
    return float(np.mean(hits))


def test_the_within_cell_null_equals_full_enumeration():
    rng = np.random.default_rng(4)
    cells = np.repeat(["c0", "c1", "c2", "c3"], 3)  # 6**4 within-cell permutations
    y = np.array(["a", "a", "b", "a", "b", "b", "b", "a", "b", "a", "b", "b"])
    for signal in (0.0, 0.8):
        pred = np.where(rng.random(12) < signal, y, rng.choice(["a", "b"], 12))
        _, p = permutation_test(y, pred, n_permutations=10000, seed=1, strata=cells)
        assert p == pytest.approx(exact_cell_p(y, pred, cells), abs=0.015)


def test_a_design_only_predictor_is_significant_against_rows_not_within_cells():
    # the label is set by the cell; the prediction is each cell's majority label
    cells = np.repeat([f"c{i}" for i in range(6)], 8)
    y = np.where(np.isin(cells, ["c0", "c1", "c2"]), "a", "b")
    y[::8] = np.where(y[::8] == "a", "b", "a")  # one exception per cell
    pred = np.where(np.isin(cells, ["c0", "c1", "c2"]), "a", "b")
    assert permutation_test(y, pred, 2000, 0)[1] < 0.01
    assert permutation_test(y, pred, 2000, 0, strata=cells)[1] == 1.0
    with pytest.raises(ValueError, match="not both"):
        permutation_test(y, pred, 10, 0, groups=cells, strata=cells)
