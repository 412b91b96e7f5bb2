"""The visual-reference recall study (interp.studies.recall).

Every number is checked against an independent reference: plain Hugging Face forwards (hidden
states, a brute-force greedy loop, the final norm and unembedding applied by hand), a brute-force
majority vote, scikit-learn pipelines fitted by hand on the same folds, sacrebleu, scipy and
numpy — never against values the study computed itself.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter

import numpy as np
import pandas as pd
import pytest
import sacrebleu
import torch
from scipy import stats
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import balanced_accuracy_score, roc_auc_score
from sklearn.model_selection import StratifiedGroupKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import interp
from interp.cli import main
from interp.datasets import demo_world
from interp.encoding import encode
from interp.errors import ProbeError, RecallError, UnknownFamilyError
from interp.studies import recall as rc
from interp.testing import make_samples, refused, shared_tiny_vlm
from interp.testing.tolerance import assert_close, logprob_scale
from probes.text import normalize_text

# -- the model runs, on a tiny random model ------------------------------------------------------


def tiny_items(n: int = 6) -> list[rc.RecallItem]:
    """Items over random images with two families; the tiny model answers at random."""
    images = [s.image for s in make_samples(n)]
    out = []
    for i in range(n):
        fam = "alpha" if i % 2 == 0 else "beta"
        out.append(
            rc.RecallItem(
                id=f"it{i}",
                image=images[i],
                textual=f"what is the thing number {i} known for?",
                visual="what is the object in the image known for?",
                answer=["wheels", "roofs", "rain"][i % 3],
                family=fam,
                entity=["circle", "triangle", "drop"][i % 3],
                identify="which object is in the image?",
            )
        )
    return out


def eos_ids(vlm: interp.VLM) -> set[int]:
    ids = set()
    for source in (vlm.tokenizer, vlm.hf.generation_config, vlm.hf.config):
        value = getattr(source, "eos_token_id", None)
        ids.update([value] if isinstance(value, int) else list(value or []))
    return ids


def hf_greedy(vlm: interp.VLM, sample: interp.Sample, steps: int) -> dict:
    """A brute-force greedy loop of plain HF forwards (no cache) on one unpadded row: the
    tokens, each chosen token's log-probability, the prompt's hidden states and logits."""
    enc = encode(vlm, [sample], "full")
    inputs = dict(enc.inputs)
    with torch.no_grad():
        first = vlm.hf(**inputs, output_hidden_states=True)
    hidden = [h[0, -1] for h in first.hidden_states]
    logits0 = first.logits[0, -1]
    tokens, logps = [], []
    logits = logits0
    for _ in range(steps):
        logp = logits.float().log_softmax(-1)
        tok = int(logp.argmax())
        logps.append(float(logp[tok]))
        if tok in eos_ids(vlm):
            break
        tokens.append(tok)
        inputs["input_ids"] = torch.cat([inputs["input_ids"], torch.tensor([[tok]])], 1)
        inputs["attention_mask"] = torch.cat(
            [inputs["attention_mask"], torch.ones(1, 1, dtype=inputs["attention_mask"].dtype)], 1
        )
        with torch.no_grad():
            logits = vlm.hf(**inputs).logits[0, -1]
    text = vlm.tokenizer.decode(tokens, skip_special_tokens=True).strip()
    return {"tokens": tokens, "logps": logps, "hidden": hidden, "logits0": logits0, "text": text}


def lens_logits(vlm: interp.VLM, h: torch.Tensor) -> torch.Tensor:
    """U · norm(h), with the decoder's final norm and the output embedding."""
    norm = vlm.hf.get_decoder().norm
    head = vlm.hf.get_output_embeddings()
    with torch.no_grad():
        return head(norm(h)).float()


def hand_lens(vlm: interp.VLM, h: torch.Tensor, token: int) -> float:
    """softmax(U · norm(h))[token]."""
    return float(lens_logits(vlm, h).softmax(-1)[token])


def assert_lens_close(got: float, vlm: interp.VLM, h: torch.Tensor, token: int) -> None:
    """A lens probability p = exp(log p) <= 1 rounds by at most log p's ε · logprob_scale."""
    z = lens_logits(vlm, h)
    assert_close(got, float(z.softmax(-1)[token]), scale=logprob_scale(z), dtype=torch.float32)


@pytest.fixture(scope="module")
def tiny_run() -> tuple[interp.VLM, list[rc.RecallItem], rc.RecallRun]:
    vlm = shared_tiny_vlm("llava")
    items = tiny_items()
    run = rc.run_recall(vlm, items, max_new_tokens=3, batch_size=4, progress_bar=False)
    return vlm, items, run


def test_visual_run_equals_a_brute_force_hf_loop(tiny_run):
    """Answers, last-token states (layers < L), perplexity and the logit lens of the Visual
    setting against plain HF forwards of each item alone; the final layer's lens against HF's
    own logits."""
    vlm, items, run = tiny_run
    L = vlm.n_layers
    for i, item in enumerate(items):
        ref = hf_greedy(vlm, item.sample("visual"), 3)
        assert run.answers["visual"][i] == ref["text"]
        assert run.first_token[i] == int(ref["logits0"].argmax())
        for layer in range(L):  # HF's hidden_states[L] is after the final norm
            assert_close(run.states["visual"][i, layer], ref["hidden"][layer])
        n = len(ref["tokens"])
        ppl = np.exp(-np.mean(ref["logps"][:n] if n else ref["logps"][:1]))
        assert run.perplexity[i] == pytest.approx(ppl, rel=1e-4)
        t = int(ref["logits0"].argmax())
        for layer in range(L):
            assert_lens_close(run.lens[i, layer], vlm, ref["hidden"][layer], t)
        z = ref["logits0"].float()
        final = float(z.softmax(-1)[t])
        assert_close(run.lens[i, L], final, scale=logprob_scale(z), dtype=torch.float32)


def test_full_info_and_cosine_equal_hf(tiny_run):
    vlm, items, run = tiny_run
    curves = rc.linking_curves(run, subset="all")
    for i, item in enumerate(items):
        ref_v = hf_greedy(vlm, item.sample("visual"), 3)
        ref_f = hf_greedy(vlm, item.sample("full_info"), 3)
        assert run.answers["full_info"][i] == ref_f["text"]
        for layer in range(vlm.n_layers):
            a, b = ref_v["hidden"][layer].double(), ref_f["hidden"][layer].double()
            cos = float(a @ b / (a.norm() * b.norm()))
            # a cosine is scale-free: fp32 states round it by ε relative to 1
            assert_close(curves.cosine[i, layer], cos, dtype=torch.float32)


def test_text_only_is_the_majority_vote_of_the_trivial_images(tiny_run):
    vlm, items, run = tiny_run
    textual = [item.sample("full_info") for item in items]
    per_cond = {
        c: interp.generate(vlm, textual, c, max_new_tokens=3, progress_bar=False).texts
        for c in rc.TRIVIAL
    }
    for i in range(len(items)):
        votes = [per_cond[c][i] for c in rc.TRIVIAL]
        assert [run.answers[f"text_only:{c}"][i] for c in rc.TRIVIAL] == votes
        counts = Counter(normalize_text(v) for v in votes)
        top = max(counts.values())
        winners = {a for a, c in counts.items() if c == top}
        assert normalize_text(run.answers["text_only"][i]) in winners
        if len(winners) == 1:
            assert normalize_text(run.answers["text_only"][i]) == winners.pop()


def test_filters_and_accuracy_by_hand(tiny_run):
    _, items, run = tiny_run
    f = run.frame
    for i, item in enumerate(items):
        full_ok = run.answers["full_info"][i] is not None and _incl(
            run.answers["full_info"][i], item.answer
        )
        guessed = _incl(run.answers["visual_trivial"][i], item.answer)
        identified = _incl(run.answers["identify"][i], item.entity)
        assert f.loc[i, "kept"] == (full_ok and not guessed and identified)
    acc = run.accuracy("all", n_boot=200)
    for (fam, setting, metric), row in acc.set_index(["family", "setting", "metric"]).iterrows():
        rows = [i for i, it in enumerate(items) if fam == "all" or it.family == fam]
        preds = [run.answers[setting][i] for i in rows]
        refs = [items[i].answer for i in rows]
        if metric == "bleu":
            ref = (
                np.mean(
                    [
                        sacrebleu.sentence_bleu(p, [r], lowercase=True).score
                        for p, r in zip(preds, refs)
                    ]
                )
                / 100
            )
        elif metric == "exact":
            ref = np.mean(
                [
                    bool(normalize_text(p)) and normalize_text(p) == normalize_text(r)
                    for p, r in zip(preds, refs)
                ]
            )
        else:
            ref = np.mean([_incl(p, r) for p, r in zip(preds, refs)])
        assert_close(row["value"], ref, msg=f"{fam} {setting} {metric}")
        assert row["n"] == len(rows)


def _incl(pred: str | None, ref: str | None, whole_words: bool = True) -> bool:
    """Two-way inclusion by hand on normalised text (on word boundaries by default)."""
    p, r = normalize_text(pred or ""), normalize_text(ref or "")
    if not p or not r:
        return False
    if whole_words:
        p, r = f" {p} ", f" {r} "
    return p in r or r in p


def test_a_store_resumes_without_recomputing(tmp_path, monkeypatch):
    vlm = shared_tiny_vlm("llava")
    items = tiny_items(4)
    kw = dict(max_new_tokens=2, batch_size=4, progress_bar=False, store=tmp_path / "s")
    first = rc.run_recall(vlm, items, **kw)
    import interp.generation

    def fail(*args, **kwargs):
        raise AssertionError("a stored result was recomputed")

    monkeypatch.setattr(interp.generation, "generate_batch", fail)
    second = rc.run_recall(vlm, items, **kw)
    assert second.answers == first.answers
    assert torch.equal(second.states["visual"], first.states["visual"])  # stored: bit for bit
    np.testing.assert_array_equal(second.perplexity, first.perplexity)


@pytest.mark.parametrize("arch", ["llava", "qwen2_vl"])
def test_logit_lens_equals_the_unembedding_applied_by_hand(arch):
    vlm = shared_tiny_vlm(arch)
    samples = make_samples(3)
    states = interp.residual_stream(vlm, samples, progress_bar=False)
    tokens = torch.tensor([3, 7, 11])
    lens = rc.logit_lens(vlm, states, tokens)
    for i, s in enumerate(samples):
        enc = encode(vlm, [s], "full")
        with torch.no_grad():
            out = vlm.hf(**enc.inputs, output_hidden_states=True)
        for layer in range(vlm.n_layers):
            h = out.hidden_states[layer][0, -1]
            assert_lens_close(lens[i, layer], vlm, h, int(tokens[i]))
        z = out.logits[0, -1].float()
        final = float(z.softmax(-1)[int(tokens[i])])
        assert_close(lens[i, -1], final, scale=logprob_scale(z), dtype=torch.float32)


# -- the majority vote ------------------------------------------------------------------------------


def test_majority_vote_equals_a_brute_force_count():
    rng = np.random.default_rng(0)
    words = ["Yes.", "yes", "no", "blue", "the blue", "Red"]
    ties = Counter()
    for k in range(300):
        answers = list(rng.choice(words, size=int(rng.integers(1, 6))))
        got = rc.majority_vote(answers, key=f"k{k}", seed=3)
        counts = Counter(normalize_text(a) for a in answers)
        top = max(counts.values())
        winners = sorted(a for a, c in counts.items() if c == top)
        assert got in answers and normalize_text(got) in winners
        assert got == next(a for a in answers if normalize_text(a) == normalize_text(got))
        # the draw depends on the item and the seed, not on the order of the answers
        assert normalize_text(
            rc.majority_vote(answers[::-1], key=f"k{k}", seed=3)
        ) == normalize_text(got)
        if len(winners) == 2:
            ties[normalize_text(got) == winners[0]] += 1
    assert ties[True] > 10 and ties[False] > 10  # ties are broken both ways


# -- metrics --------------------------------------------------------------------------------------


def test_inclusion_on_words_and_on_characters():
    run = synthetic_run(12, seed=0)
    run.items[0] = rc.RecallItem("x0", None, "t", "v", "15", "alpha", "e0")
    run.answers["visual"][0] = "1"
    assert not run.correct("visual")[0]  # "1" is not a word of "15"
    chars = rc.RecallRun(
        run.items, run.answers, run.states, run.lens, run.perplexity, run.first_token,
        whole_words=False,
    )  # fmt: skip
    assert chars.correct("visual")[0]  # the paper's character-level rule


# -- synthetic runs for the analyses ----------------------------------------------------------------

FAMILIES = ("alpha", "beta", "gamma")


def synthetic_run(n: int = 90, layers: int = 4, d: int = 6, seed: int = 0) -> rc.RecallRun:
    """A RecallRun without a model: the Visual answer is right for ~half the items, layer 2 of
    the states carries that (layer 3 a weaker copy), and the perplexity is noisy."""
    rng = np.random.default_rng(seed)
    correct = rng.random(n) < 0.5
    items, visual = [], []
    for i in range(n):
        fam = FAMILIES[i % 3]
        entity = f"e{i % 9}"
        items.append(
            rc.RecallItem(f"i{i}", None, f"what about {entity}?", f"q{i % 2}", "ans", fam, entity)
        )
        visual.append("ans" if correct[i] else "other")
    X = rng.normal(size=(n, layers, d))
    X[:, 2, 0] += 2.0 * correct
    X[:, 3, 1] += 0.8 * correct
    answers = {"visual": visual, "full_info": ["ans"] * n, "text_only": ["ans"] * n}
    lens = rng.uniform(size=(n, layers))
    ppl = np.exp(rng.normal(0.5 - 0.4 * correct, 0.3))
    return rc.RecallRun(
        items,
        answers,
        {
            "visual": torch.tensor(X, dtype=torch.float32),
            "full_info": torch.tensor(rng.normal(size=(n, layers, d)), dtype=torch.float32),
        },
        lens,
        ppl,
        np.zeros(n, dtype=np.int64),
    )


def hand_pipe():
    return make_pipeline(
        StandardScaler(), LogisticRegression(class_weight="balanced", max_iter=1000)
    )


def hand_best_layer(X, y, groups, cv, seed):
    """The layer with the highest mean balanced accuracy over StratifiedGroupKFold folds."""
    folds = list(
        StratifiedGroupKFold(cv, shuffle=True, random_state=seed).split(X[:, 0], y, groups)
    )
    means = []
    oof = {}
    for layer in range(X.shape[1]):
        scores, p = [], np.full(len(y), np.nan)
        for tr, te in folds:
            pipe = hand_pipe().fit(X[tr, layer], y[tr])
            scores.append(balanced_accuracy_score(y[te], pipe.predict(X[te, layer])))
            p[te] = pipe.predict_proba(X[te, layer])[:, 1]
        means.append(np.mean(scores))
        oof[layer] = p
    best = int(np.argmax(means))
    return best, oof[best]


def balanced_cut(s_train, y_train):
    """Brute force: the rule 's <= u' with the best balanced accuracy on the training values (the
    smallest u on ties), cut half-way to the next value; returns the cut."""
    values = np.unique(s_train)
    best, best_ba = None, -1.0
    for j, u in enumerate(values):
        pred = s_train <= u
        ba = (pred[y_train].mean() + (~pred[~y_train]).mean()) / 2
        if ba > best_ba + 1e-15:
            best, best_ba = j, ba
    return (values[best] + values[best + 1]) / 2 if best + 1 < len(values) else values[best]


def calibrate(s_train, y_train, s_test):
    pipe = make_pipeline(StandardScaler(), LogisticRegression()).fit(s_train[:, None], y_train)
    return pipe.predict_proba(s_train[:, None])[:, 1], pipe.predict_proba(s_test[:, None])[:, 1]


def hand_methods(X, y, ppl, groups, train, test, layer, cv, seed):
    """Every method fitted by hand on ``train`` and applied to ``test``."""
    best, p_oof = hand_best_layer(X[train], y[train], groups[train], cv, seed)
    if layer is not None:
        best = layer
    pipe = hand_pipe().fit(X[train][:, best], y[train])
    p_test = pipe.predict_proba(X[test][:, best])[:, 1]
    s_tr, s_te = np.log(ppl[train]), np.log(ppl[test])
    cut = balanced_cut(s_tr, y[train])
    ans_ppl = s_te <= cut
    conf_tr, conf_te = cut - s_tr, cut - s_te
    a_tr, a_te = calibrate(p_oof, y[train], p_test)
    b_tr, b_te = calibrate(conf_tr, y[train], conf_te)
    ens_tr, ens_te = (a_tr + b_tr) / 2, (a_te + b_te) / 2
    ens_cut = balanced_cut(1 - ens_tr, y[train])
    majority = y[train].mean() > 0.5  # the more frequent class; a tie goes to the first, False
    return {
        "layer": best,
        "p_probe": p_test,
        "answer_probe": pipe.predict(X[test][:, best]),
        "answer_perplexity": ans_ppl,
        "p_ensemble": ens_te,
        "answer_ensemble": 1 - ens_te <= ens_cut,
        "answer_majority": np.full(len(test), majority),
    }


def test_failure_probes_equal_a_nested_cv_by_hand():
    run = synthetic_run()
    res = rc.failure_probes(run, cv=3, inner_cv=3, groups="pair", subset="all", seed=1)
    X = run.states["visual"].numpy().astype(np.float64)
    y = run.correct("visual")
    groups = np.array([it.pair for it in run.items])
    pred = res.predictions.set_index("item_id")
    for k, (train, test) in enumerate(
        StratifiedGroupKFold(3, shuffle=True, random_state=1).split(X[:, 0], y, groups)
    ):
        ref = hand_methods(X, y, run.perplexity, groups, train, test, None, 3, 1)
        ids = [run.items[i].id for i in test]
        got = pred.loc[ids]
        assert (got["fold"] == k).all() and (got["layer"] == ref["layer"]).all()
        assert_close(got["p_probe"], ref["p_probe"])
        assert_close(got["p_ensemble"], ref["p_ensemble"])
        for m in ("probe", "perplexity", "ensemble", "majority"):
            np.testing.assert_array_equal(got[f"answer_{m}"].to_numpy(bool), ref[f"answer_{m}"])
    # the validation curve: one probe per layer on all items, the same folds as a hand CV
    best, _ = hand_best_layer(X, y, groups, 3, 1)
    assert res.layer == best == 2
    # Table 2 and the selective table from the predictions, by hand
    y_p = pred["correct"].to_numpy(bool)
    table = res.table(n_boot=200).set_index("method")
    for m in ("majority", "perplexity", "probe", "ensemble"):
        a = pred[f"answer_{m}"].to_numpy(bool)
        assert table.loc[m, "accuracy"] == pytest.approx(np.mean(a == y_p))
        assert table.loc[m, "balanced_accuracy"] == pytest.approx(balanced_accuracy_score(y_p, a))
        assert table.loc[m, "low"] <= table.loc[m, "accuracy"] <= table.loc[m, "high"]
    assert table.loc["probe", "auroc"] == pytest.approx(roc_auc_score(y_p, pred["p_probe"]))
    sel = res.selective(n_boot=200).set_index("method")
    for m in ("perplexity", "probe", "ensemble"):
        a = pred[f"answer_{m}"].to_numpy(bool)
        assert sel.loc[m, "coverage"] == pytest.approx(a.mean())
        assert sel.loc[m, "risk"] == pytest.approx((a & ~y_p).sum() / a.sum())
    assert sel.loc["all", "risk"] == pytest.approx(1 - y_p.mean())


def test_a_fixed_layer_and_one_family():
    run = synthetic_run(seed=2)
    res = rc.failure_probes(run, "beta", layer=3, cv=2, inner_cv=2, groups="item", subset="all")
    assert (res.predictions["layer"] == 3).all()
    assert set(res.predictions["family"]) == {"beta"} and res.family == "beta"
    rows = [i for i, it in enumerate(run.items) if it.family == "beta"]
    X = run.states["visual"].numpy().astype(np.float64)[rows]
    y = run.correct("visual")[rows]
    groups = np.array([run.items[i].id for i in rows])
    pred = res.predictions.set_index("item_id")
    for train, test in StratifiedGroupKFold(2, shuffle=True, random_state=0).split(
        X[:, 0], y, groups
    ):
        pipe = hand_pipe().fit(X[train, 3], y[train])
        ids = [run.items[rows[i]].id for i in test]
        assert_close(pred.loc[ids, "p_probe"], pipe.predict_proba(X[test, 3])[:, 1])


def test_transfer_equals_training_on_the_other_families_by_hand():
    run = synthetic_run(seed=3)
    tr = rc.transfer(run, cv=3, groups="entity", subset="all", seed=0)
    X = run.states["visual"].numpy().astype(np.float64)
    y = run.correct("visual")
    fam = np.array([it.family for it in run.items])
    groups = np.array([f"{it.family}|{it.entity}" for it in run.items])
    assert tr.held_out == list(FAMILIES)
    for f in FAMILIES:
        train, test = np.flatnonzero(fam != f), np.flatnonzero(fam == f)
        ref = hand_methods(X, y, run.perplexity, groups, train, test, None, 3, 0)
        got = tr.predictions[tr.predictions["held_out"] == f]
        assert got["item_id"].tolist() == [run.items[i].id for i in test]
        assert (got["layer"] == ref["layer"]).all()
        assert_close(got["p_probe"], ref["p_probe"])
        for m in ("probe", "perplexity", "ensemble", "majority"):
            np.testing.assert_array_equal(
                got[f"answer_{m}"].to_numpy(bool), ref[f"answer_{m}"], err_msg=m
            )
        ls = tr.layer_scores[tr.layer_scores["held_out"] == f].set_index("layer")
        assert ls["chosen"].sum() == 1 and ls.index[ls["chosen"]][0] == ref["layer"]
    t1 = tr.table1().set_index("held_out")
    for f in FAMILIES:
        got = tr.predictions[tr.predictions["held_out"] == f]
        yy = got["correct"].to_numpy(bool)
        for m in ("perplexity", "probe", "ensemble"):
            a = got[f"answer_{m}"].to_numpy(bool)
            assert t1.loc[f, f"{m}_coverage"] == pytest.approx(100 * a.mean())
            if a.any():
                assert t1.loc[f, f"{m}_risk"] == pytest.approx(100 * (a & ~yy).sum() / a.sum())
        assert t1.loc[f, "delta_coverage"] == pytest.approx(
            t1.loc[f, "ensemble_coverage"] - t1.loc[f, "perplexity_coverage"]
        )


def test_linking_curves_by_hand():
    run = synthetic_run(seed=4)
    curves = rc.linking_curves(run, subset="all")
    y = run.correct("visual")
    a, b = (
        run.states["visual"].numpy().astype(np.float64),
        run.states["full_info"].numpy().astype(np.float64),
    )
    cos = (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))
    assert_close(curves.cosine, cos)
    frame = curves.to_frame().set_index(["measure", "group", "layer"])
    for measure, values in (("lens", run.lens), ("cosine", cos)):
        for group, m in (("success", y), ("failure", ~y)):
            v = values[m]
            half = stats.t.ppf(0.975, len(v) - 1) * stats.sem(v, axis=0)
            for layer in range(values.shape[1]):
                row = frame.loc[(measure, group, layer)]
                assert row["mean"] == pytest.approx(v[:, layer].mean())
                assert row["high"] - row["mean"] == pytest.approx(half[layer])
    sep = curves.separation().set_index(["measure", "layer"])
    for layer in range(run.n_layers):
        assert sep.loc[("lens", layer), "auroc"] == pytest.approx(
            roc_auc_score(y, run.lens[:, layer])
        )
    rise = [next(k for k in range(run.n_layers) if p[k] >= 0.5 * p[-1]) for p in run.lens]
    np.testing.assert_array_equal(curves.rise_layer(), rise)
    summ = curves.table(n_boot=200).set_index("statistic")
    last = summ.loc["p(output) at last layer"]
    assert last["difference"] == pytest.approx(run.lens[y, -1].mean() - run.lens[~y, -1].mean())


def test_gap_is_a_paired_difference():
    run = synthetic_run(seed=5)
    run.answers["text_only"] = ["ans" if i % 4 else "x" for i in range(len(run))]
    gap = run.gap(subset="all", n_boot=200).set_index("family")
    to, v = run.correct("text_only"), run.correct("visual")
    assert gap.loc["all", "gap"] == pytest.approx(to.mean() - v.mean())
    assert gap.loc["all", "relative_decline"] == pytest.approx((to.mean() - v.mean()) / to.mean())
    assert gap.loc["all", "gap_low"] <= gap.loc["all", "gap"] <= gap.loc["all", "gap_high"]


# -- figures ----------------------------------------------------------------------------------------


def test_figures():
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    run = synthetic_run(seed=6)
    probes_ = {"all": rc.failure_probes(run, cv=2, inner_cv=2, groups="item", subset="all")}
    tr = rc.transfer(run, cv=2, groups="item", subset="all")
    figs = [
        rc.plot_accuracy(run, subset="all"),
        rc.plot_linking(rc.linking_curves(run, subset="all"), title="t"),
        rc.plot_probe_curves(probes_),
        rc.plot_risk_coverage(probes_["all"]),
        rc.plot_risk_coverage(tr, "beta"),
    ]
    assert all(isinstance(f, Figure) for f in figs)


# -- bad input ----------------------------------------------------------------------------------------


def test_items_from_demo_samples():
    samples = demo_world("test", n=9, qtypes=["recall", "digit_arith", "letters"])
    items = rc.recall_items(samples)
    assert [it.family for it in items] == ["facts", "arithmetic", "words"]
    facts = items[0]
    assert facts.visual == samples[2].question and facts.textual == samples[1].question
    assert facts.answer == samples[2].answer and facts.entity == samples[2].meta["entity"]
    assert facts.identify == rc.DEMO_IDENTIFY["facts"]
    assert facts.meta["linked"] == samples[2].meta["linked"]
    assert [it.family for it in rc.recall_items(samples, families=["words"])] == ["words"]
    assert all(it.identify is None for it in rc.recall_items(samples, identify=None))
    samples[2].meta["identify"] = "what is this ?"  # a sample's own question wins
    assert rc.recall_items(samples)[0].identify == "what is this ?"


def test_bad_data_is_refused():
    samples = demo_world("test", n=9, qtypes=["recall", "digit_arith", "letters"])
    with pytest.raises(
        UnknownFamilyError, match=r"unknown family 'nope'; the data holds: facts, arithmetic, words"
    ):
        rc.recall_items(samples, families=["nope"])
    with pytest.raises(RecallError, match=r"has no 'setting' label"):
        rc.recall_items(demo_world("test", n=2, qtypes=["color"]))
    with pytest.raises(RecallError, match=r"has no visual sample.*multiple of 3"):
        rc.recall_items(demo_world("test", n=8, qtypes=["recall", "digit_arith", "letters"]))
    with pytest.raises(interp.EmptyInputError):
        rc.recall_items([])


@pytest.mark.parametrize(
    ("trivial", "error", "match"),
    [
        (["full"], RecallError, r"'full' is not a trivial image"),
        (["null:black+no_question"], RecallError, r"the question must stay"),
        (["null:black", "null:black"], RecallError, "twice"),
        ([], RecallError, "non-empty list"),
        (["nope"], interp.ConditionError, "unknown condition part"),
    ],
)
def test_bad_trivial_conditions(trivial, error, match):
    with pytest.raises(error, match=match):
        rc.check_trivial(trivial)


def test_probe_errors_come_before_any_fitting(monkeypatch):
    import probes.layerwise

    def fit(*args, **kwargs):
        raise AssertionError("a probe was fitted before the input was checked")

    monkeypatch.setattr(probes.layerwise.LayerwiseProbe, "fit", fit)
    run = synthetic_run(12)
    with pytest.raises(UnknownFamilyError, match="unknown family 'delta'"):
        rc.failure_probes(run, "delta", subset="all")
    with pytest.raises(UnknownFamilyError, match="unknown family 'delta'"):
        rc.transfer(run, "delta", subset="all")
    with pytest.raises(ProbeError, match=r"fewer than cv=5 folds"):
        rc.failure_probes(run, "alpha", subset="all", groups="item")
    with pytest.raises(ProbeError, match=r"out of range"):
        rc.failure_probes(run, layers=[9], cv=2, inner_cv=2, groups="item", subset="all")
    with pytest.raises(ProbeError, match=r"outer fold 0: .*fewer than inner_cv=10 folds"):
        rc.failure_probes(synthetic_run(30), cv=2, inner_cv=10, groups="item", subset="all")
    one_class = synthetic_run(12)
    one_class.answers["visual"] = ["ans"] * 12
    one_class.__dict__.pop("frame", None)
    with pytest.raises(ProbeError, match=r"all correct, so there is a single class"):
        rc.failure_probes(one_class, subset="all")
    with pytest.raises(ProbeError, match="needs both"):
        rc.linking_curves(one_class, subset="all").table()
    single = synthetic_run(12)
    single.items = [
        rc.RecallItem(it.id, None, "t", "v", "ans", "alpha", "e") for it in single.items
    ]
    single.__dict__.pop("frame", None)
    with pytest.raises(RecallError, match="transfer trains on some families"):
        rc.transfer(single, subset="all")
    with pytest.raises(RecallError, match="subset must be one of"):
        rc.failure_probes(run, subset="none")


def test_wrong_shapes_are_refused():
    with refused(RecallError, match=r"\[N, L\+1, d\]"):
        rc.layerwise_cosine(np.zeros((3, 4)), np.zeros((3, 4)))
    with refused(RecallError, match="one shape"):
        rc.layerwise_cosine(np.zeros((3, 4, 5)), np.zeros((3, 4, 6)))
    vlm = shared_tiny_vlm("llava")
    with refused(RecallError, match="one token per row"):
        rc.logit_lens(vlm, torch.zeros(3, vlm.d_model), torch.zeros(3, dtype=torch.long))
    with refused(RecallError, match="one token per row"):
        rc.logit_lens(vlm, torch.zeros(3, 2, vlm.d_model), torch.zeros(4, dtype=torch.long))


# -- the command ---------------------------------------------------------------------------------------


def test_cli_on_the_demo_model(tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["recall", "--model", "demo", "--data", "demo", "--n", "88", "--out", str(out)]
    argv += ["--no-progress", "--cv", "2", "--inner-cv", "2", "--groups", "item"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "30 recall items" in printed  # --n 88 rounds up to whole items (3 samples each)
    for name in ("answers.csv", "accuracy.csv", "gap.csv", "summary.txt", "fig3_accuracy.png"):
        assert (out / name).stat().st_size > 0, name
    answers = pd.read_csv(out / "answers.csv", dtype=str, keep_default_na=False)
    assert len(answers) == 30 and set(answers["family"]) == {"facts", "arithmetic", "words"}
    acc = pd.read_csv(out / "accuracy.csv").set_index(["subset", "family", "setting", "metric"])
    for fam in ("facts", "arithmetic", "words"):
        part = answers[answers["family"] == fam]
        for setting in rc.SETTINGS:
            ref = np.mean([_incl(p, r) for p, r in zip(part[f"answer_{setting}"], part["answer"])])
            assert acc.loc[("all", fam, setting, "inclusion"), "value"] == pytest.approx(ref)
    summary = (out / "summary.txt").read_text()
    assert re.search(r"30 items, \d+ kept", summary)
    assert "visual-reference gap" in summary


# -- the package ---------------------------------------------------------------------------------------


def test_public_names_are_not_shadowed_by_submodules():
    """Loading a submodule binds its name on the package: no public name may be a submodule's, or
    ``from interp.studies.recall import X`` would return a module after some other import."""
    code = (
        "import pkgutil, types, importlib\n"
        "import interp.studies.recall as rc\n"
        "for m in pkgutil.iter_modules(rc.__path__):\n"
        "    importlib.import_module(f'interp.studies.recall.{m.name}')\n"
        "bad = [n for n in rc.__all__ if isinstance(getattr(rc, n), types.ModuleType)]\n"
        "assert not bad, bad\n"
        "from interp.studies.recall import transfer, failure_probes\n"
        "assert callable(transfer) and callable(failure_probes)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
