"""Temporal causal drives against independent references.

Every drive is recomputed by brute force: each (context, prefix) pair is re-run separately with a
plain Hugging Face forward of the prompt followed by a_<t (no nnsight, no batching, no teacher
forcing in one pass), and the drives are then formed from the probabilities with plain float64
sums and products (no log-sum-exp) — on tiny random models of three families. The forward count
is read from a torch hook on the output head. Statistics are checked against scikit-learn and by
hand.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import matplotlib
import numpy as np
import pandas as pd
import pytest
import torch
from PIL import Image

import interp
from interp.encoding import encode
from interp.studies import drives as dr
from interp.testing import make_samples, shared_tiny_vlm
from interp.testing.tolerance import approx_close, assert_close, logprob_scale

matplotlib.use("Agg")

FAMILIES = ("llava", "qwen2_vl", "idefics3")
TARGETS = ["yellow banana", "two", "a red circle", "blue"]
# the largest logprob_scale (interp.testing.tolerance) of the logits every reference forward
# met, per model: the S of the log-probabilities the drives are formed from
_SCALE: dict[int, float] = {}

# the drives as code, tables and figures name them (the paper's QCD, VCD, PCD)
NAMES = ("question_drive", "visual_drive", "prefix_drive")


# -- the brute-force reference -------------------------------------------------------------------


def _ids(vlm: interp.VLM, text: str) -> list[int]:
    return vlm.tokenizer(text, add_special_tokens=False)["input_ids"]


def hf_next_logprobs(
    vlm: interp.VLM, question: str, image: Image.Image | None, prefix: Sequence[int]
) -> torch.Tensor:
    """log p(· | prompt(question, image), prefix): one plain HF forward of one unpadded row."""
    sample = interp.Sample(question, image)
    enc = encode(vlm, [sample], "full")
    inputs = dict(enc.inputs)
    seq = inputs["input_ids"].shape[1]
    extra = torch.tensor([list(prefix)], dtype=torch.long)
    for key, value in list(inputs.items()):
        if not (
            isinstance(value, torch.Tensor) and value.dim() >= 2 and value.shape[:2] == (1, seq)
        ):
            continue
        if key == "input_ids":
            tail = extra.to(value.dtype)
        elif key == "attention_mask":
            tail = torch.ones((1, len(prefix), *value.shape[2:]), dtype=value.dtype)
        else:  # token-type fields: text
            tail = torch.zeros((1, len(prefix), *value.shape[2:]), dtype=value.dtype)
        inputs[key] = torch.cat([value, tail.to(value.device)], dim=1)
    with torch.no_grad():
        logits = vlm.hf(**inputs).logits[0, -1].double()
    _SCALE[id(vlm)] = max(_SCALE.get(id(vlm), 1.0), logprob_scale(logits))
    return logits.log_softmax(-1)


def logprob_bound_scale(vlm: interp.VLM) -> float:
    """S of one log-probability (nats) of ``vlm``, read from the reference forwards run so far."""
    assert id(vlm) in _SCALE, "run a reference forward of this model first"
    return _SCALE[id(vlm)]


def drive_scale(vlm: interp.VLM, targets: Sequence[Sequence[int]], name: str) -> float:
    """S of a drive in bits: each drive is a signed sum of log-probabilities (Eqs. 4, 6, 9-11;
    at most T of a T-token target for log P0, 2T for the question and visual drives, T + 1 for
    the prefix drive, 2 for a PMI), each rounded in proportion to its logits' S ``s``, so
    ``S = operands · s / ln 2`` (compared in fp32's ε: the forwards are fp32). With s ≈ 10 and
    T = 7 that is up to ~2e-3 bits, 20x the bare 1e-4 this file held: 1e-4 was one CPU's
    rounding on 2-layer models, the rule bounds another CPU's too."""
    longest = max(len(a) for a in targets)
    operands = {
        "p0": longest,
        "question_drive": 2 * longest,
        "visual_drive": 2 * longest,
        "prefix_drive": longest + 1,
        "pmi_q": 2,
        "pmi_p": 2,
    }[name]
    return operands * logprob_bound_scale(vlm) / math.log(2)


def token_probs(vlm, question, image, target, *, prefix: bool = True) -> list[float]:
    """P(a_t | a_<t, context) for every t (each prefix its own forward), or with ``prefix=False``
    P(a_t | context)."""
    out = []
    for t, tok in enumerate(target):
        lp = hf_next_logprobs(vlm, question, image, target[:t] if prefix else [])
        out.append(math.exp(float(lp[tok])))
    return out


def null_image_for(kind: str, sample: interp.Sample, partner: interp.Sample | None):
    if kind == "blind":
        return None
    if kind == "mismatched":
        return partner.load_image()
    w, h = sample.load_image().size
    return Image.new("RGB", (w, h), {"black": (0, 0, 0), "white": (255, 255, 255)}[kind])


def brute_drives(
    vlm: interp.VLM,
    samples: list[interp.Sample],
    support: list[interp.Sample],
    targets: list[list[int]],
    *,
    null_image: str = "blind",
    null_question: str = "",
    partners: list[int] | None = None,
) -> dict[str, list[list[float]]]:
    """Eqs. 4, 6, 9-11, 14, 24, 25 from per-prefix HF forwards, with float64 sums of products."""
    K = len(support)
    out: dict[str, list[list[float]]] = {k: [] for k in ("p0", *NAMES, "pmi_q", "pmi_p")}
    for i, (s, a) in enumerate(zip(samples, targets)):
        img = s.load_image()
        partner = samples[partners[i]] if partners else None
        p_prefix = [token_probs(vlm, c.question, c.load_image(), a) for c in support]
        p_question = [token_probs(vlm, s.question, c.load_image(), a) for c in support]
        p_visual = token_probs(vlm, null_question, img, a)
        p_p0 = token_probs(vlm, null_question, null_image_for(null_image, s, partner), a)
        p_full = token_probs(vlm, s.question, img, a)
        p_nopre = token_probs(vlm, s.question, img, a, prefix=False)
        rows: dict[str, list[float]] = {k: [] for k in out}
        for t in range(len(a)):
            log_p0 = sum(math.log2(p) for p in p_p0[: t + 1])
            rows["p0"].append(log_p0)
            rows["prefix_drive"].append(math.log2(sum(p[t] for p in p_prefix) / K) - log_p0)
            qsum = sum(math.prod(p[: t + 1]) for p in p_question) / K
            rows["question_drive"].append(math.log2(qsum) - log_p0)
            rows["visual_drive"].append(math.log2(math.prod(p_visual[: t + 1])) - log_p0)
            rows["pmi_q"].append(math.log2(p_full[t] / p_visual[t]))
            rows["pmi_p"].append(math.log2(p_full[t] / p_nopre[t]))
        for k in out:
            out[k].append(rows[k])
    return out


def assert_rows_equal(
    got: np.ndarray, mask: np.ndarray, want: list[list[float]], name: str, scale: float
):
    for i, row in enumerate(want):
        assert mask[i].sum() == len(row)
        assert_close(got[i, : len(row)], row, scale=scale, dtype=torch.float32, msg=name)
        assert np.isnan(got[i, len(row) :]).all()


@pytest.fixture(scope="module")
def small():
    samples = make_samples(4, seed=3)
    return samples, samples[1:3]  # the support: two observed (image, question) pairs


# -- equality with the brute force --------------------------------------------------------------


@pytest.mark.parametrize("arch", FAMILIES)
def test_drives_equal_a_per_prefix_brute_force(arch, small):
    vlm = shared_tiny_vlm(arch)
    samples, support = small
    samples = samples[:3]
    result = dr.causal_drives(
        vlm, samples, support=support, targets=TARGETS[:3], batch_size=5, progress_bar=False
    )
    ids = [_ids(vlm, t) for t in TARGETS[:3]]
    assert result.token_ids == ids
    want = brute_drives(vlm, samples, support, ids)
    for name in ("p0", *NAMES, "pmi_q", "pmi_p"):
        scale = drive_scale(vlm, ids, name)
        assert_rows_equal(getattr(result, name), result.mask, want[name], f"{arch} {name}", scale)
    assert result.support_ids == [str(s.id) for s in support]
    assert result.forwards_per_sample == 2 * 2 + 2 + 2


@pytest.mark.parametrize(
    "null_image, null_question",
    [("black", ""), ("mismatched", ""), ("blind", "Please provide a response.")],
)
def test_null_sources_equal_the_brute_force(null_image, null_question, small):
    vlm = shared_tiny_vlm("llava")
    samples, support = small
    result = dr.causal_drives(
        vlm,
        samples,
        support=support,
        targets=TARGETS,
        null_image=null_image,
        null_question=null_question,
        progress_bar=False,
    )
    ids = [_ids(vlm, t) for t in TARGETS]
    partners = [1, 2, 3, 0]  # every test image differs: the next sample's
    want = brute_drives(
        vlm,
        samples,
        support,
        ids,
        null_image=null_image,
        null_question=null_question,
        partners=partners,
    )
    for name in ("p0", *NAMES, "pmi_q"):
        assert_rows_equal(
            getattr(result, name), result.mask, want[name], name, drive_scale(vlm, ids, name)
        )


def test_sensitivity_variants_equal_the_brute_force(small):
    vlm = shared_tiny_vlm("llava")
    samples, support = small
    base = dr.causal_drives(vlm, samples, support=support, targets=TARGETS, progress_bar=False)
    sens = dr.drive_sensitivity(
        vlm,
        samples,
        base,
        null_images=("black",),
        null_questions=("describe it",),
        progress_bar=False,
    )
    assert list(sens.variants) == ["black | (empty)", "blind | describe it"]
    ids = [_ids(vlm, t) for t in TARGETS]
    for key, (nimg, nq) in zip(sens.variants, [("black", ""), ("blind", "describe it")]):
        want = brute_drives(vlm, samples, support, ids, null_image=nimg, null_question=nq)
        for name in ("p0", *NAMES, "pmi_q", "pmi_p"):
            scale = drive_scale(vlm, ids, name)
            assert_rows_equal(getattr(sens.variants[key], name), base.mask, want[name], name, scale)
    frame = sens.to_frame()
    assert list(frame["setting"]) == ["base", *sens.variants]
    base_row = frame.iloc[0]
    assert base_row["r_pooled_question_drive"] == pytest.approx(1.0) and base_row[
        "r_visual_drive"
    ] == pytest.approx(1.0)
    # pooled Pearson r by hand (numpy's corrcoef) for one variant
    v = sens.variants["black | (empty)"]
    m = base.mask
    r = np.corrcoef(v.visual_drive[m], base.visual_drive[m])[0, 1]
    assert frame.iloc[1]["r_pooled_visual_drive"] == pytest.approx(r)


# -- cost -----------------------------------------------------------------------------------------


class ForwardCounter:
    """Rows and calls through the output head (one call per model forward), and the positions
    each forward's decoder holds (its last layer's output: the head sees only the positions
    read)."""

    def __init__(self, vlm: interp.VLM):
        self.rows: list[int] = []
        self.positions: list[int] = []
        self.handles = [
            vlm.adapter.lm_head(vlm.hf).register_forward_hook(self.head),
            vlm.layers[-1]._module.register_forward_hook(self.layer),
        ]

    def head(self, module, args, output):
        self.rows.append(int(output.shape[0]))

    def layer(self, module, args, output):
        out = output[0] if isinstance(output, tuple) else output
        self.positions.append(int(out.shape[1]))

    def close(self):
        for handle in self.handles:
            handle.remove()


@pytest.mark.parametrize("pmi, extra", [(False, 0), (True, 2)])
def test_each_sample_costs_2k_plus_2_forwards(pmi, extra):
    """Counted on the path that runs every context in full (prefix sharing runs the shared part of
    several contexts once: tests/core/test_prefix_sharing.py)."""
    vlm = shared_tiny_vlm("llava")
    samples = make_samples(6, seed=1)
    k, batch = 3, 4
    counter = ForwardCounter(vlm)
    try:
        result = dr.causal_drives(
            vlm,
            samples,
            k=k,
            targets=TARGETS + TARGETS[:2],
            pmi=pmi,
            batch_size=batch,
            progress_bar=False,
            share_prefix=False,
        )
    finally:
        counter.close()
    per_sample = 2 * k + 2 + extra
    assert sum(counter.rows) == len(samples) * per_sample
    assert result.forwards_per_sample == per_sample
    assert max(counter.rows) <= batch
    # the rows are batched across samples and contexts: whole batches except one per condition
    # group and chunk (chunks of `batch` samples: 2 chunks here)
    n_conditions = 3 + (1 if pmi else 0)  # full, image + null question, P0 [, no prefix]
    assert len(counter.rows) <= math.ceil(len(samples) * per_sample / batch) + 2 * n_conditions
    # one forward scores every position: each forward holds prompt + the whole target
    assert min(counter.positions) > max(len(_ids(vlm, t)) for t in TARGETS)


def test_batch_size_does_not_change_the_drives(small):
    vlm = shared_tiny_vlm("qwen2_vl")
    samples, support = small
    one = dr.causal_drives(
        vlm, samples, support=support, targets=TARGETS, batch_size=1, progress_bar=False
    )
    eight = dr.causal_drives(
        vlm, samples, support=support, targets=TARGETS, batch_size=8, progress_bar=False
    )
    # S from the reference forwards of each sample's full and P0 contexts (its own logits)
    for s, a in zip(samples, one.token_ids):
        token_probs(vlm, s.question, s.load_image(), a)
        token_probs(vlm, "", None, a)
    for name in ("p0", *NAMES, "pmi_q", "pmi_p"):
        scale = drive_scale(vlm, one.token_ids, name)
        assert_close(
            getattr(one, name),
            getattr(eight, name),
            scale=scale,
            dtype=torch.float32,
            equal_nan=True,
            msg=name,
        )


def test_default_targets_are_the_greedy_answers_and_support_is_drawn_from_the_samples():
    vlm = shared_tiny_vlm("llava")
    samples = make_samples(5, seed=2)
    result = dr.causal_drives(vlm, samples, k=2, seed=4, max_new_tokens=3, progress_bar=False)
    gen = interp.generate(vlm, samples, max_new_tokens=3, progress_bar=False)
    assert result.token_ids == gen.token_ids
    rng = np.random.default_rng(4)
    drawn = sorted(rng.choice(5, size=2, replace=False).tolist())
    assert result.support_ids == [samples[i].id for i in drawn]
    again = dr.causal_drives(
        vlm,
        samples,
        support=[samples[i] for i in drawn],
        targets=gen.token_ids,
        progress_bar=False,
    )
    np.testing.assert_allclose(result.prefix_drive, again.prefix_drive, atol=0, rtol=0)


def test_a_store_resumes_without_recomputing(tmp_path, small):
    vlm = shared_tiny_vlm("llava")
    samples, support = small
    first = dr.causal_drives(
        vlm, samples[:2], support=support, targets=TARGETS[:2], store=tmp_path, progress_bar=False
    )
    counter = ForwardCounter(vlm)
    try:
        full = dr.causal_drives(
            vlm,
            samples,
            support=support,
            targets=TARGETS,
            store=tmp_path,
            progress_bar=False,
            share_prefix=False,  # every context one row through the head (no shared prefixes)
        )
    finally:
        counter.close()
    assert sum(counter.rows) == 2 * (2 * 2 + 4)  # only the two new samples ran
    np.testing.assert_allclose(
        full.question_drive[:2, : first.question_drive.shape[1]],
        first.question_drive,
        atol=0,
        rtol=0,
    )
    with pytest.raises(interp.StoreError):  # another support: another configuration
        dr.causal_drives(
            vlm, samples, support=samples[:2], targets=TARGETS, store=tmp_path, progress_bar=False
        )


def test_frames_hold_one_row_per_token_and_per_sample(small):
    vlm = shared_tiny_vlm("llava")
    samples, support = small
    result = dr.causal_drives(vlm, samples, support=support, targets=TARGETS, progress_bar=False)
    frame = result.to_frame()
    lengths = [len(_ids(vlm, t)) for t in TARGETS]
    assert len(frame) == sum(lengths)
    first = frame[frame["sample_id"] == samples[2].id]
    assert list(first["t"]) == list(range(1, lengths[2] + 1))
    np.testing.assert_allclose(first["prefix_drive"], result.prefix_drive[2, : lengths[2]])
    per = result.sample_frame()
    np.testing.assert_allclose(
        per["s_pv"],
        [
            np.mean(result.prefix_drive[i, :n]) - np.mean(result.visual_drive[i, :n])
            for i, n in enumerate(lengths)
        ],
    )
    np.testing.assert_allclose(
        per["answer_visual_drive"], [result.visual_drive[i, n - 1] for i, n in enumerate(lengths)]
    )
    sub = result.subset([2, 0])
    assert sub.sample_ids == [samples[2].id, samples[0].id]
    np.testing.assert_allclose(
        sub.visual_drive[0, : lengths[2]], result.visual_drive[2, : lengths[2]]
    )


# -- source removal and recovery ----------------------------------------------------------------


def test_source_removal_equals_the_brute_force_and_table_3_by_hand(small):
    vlm = shared_tiny_vlm("idefics3")
    samples, _ = small
    got = dr.source_removal(vlm, samples, targets=TARGETS, progress_bar=False)
    ids = [_ids(vlm, t) for t in TARGETS]
    want = {
        "full": [token_probs(vlm, s.question, s.load_image(), a) for s, a in zip(samples, ids)],
        "no_question": [token_probs(vlm, "", s.load_image(), a) for s, a in zip(samples, ids)],
        "no_image": [token_probs(vlm, s.question, None, a) for s, a in zip(samples, ids)],
        "no_prefix": [
            token_probs(vlm, s.question, s.load_image(), a, prefix=False)
            for s, a in zip(samples, ids)
        ],
    }
    # p = exp(log p) <= 1: its rounding is at most log p's, ε · logprob_scale
    s_p = logprob_bound_scale(vlm)
    for key, rows in want.items():
        for i, row in enumerate(rows):
            assert_close(got.probs[key][i, : len(row)], row, scale=s_p, dtype=torch.float32)
    table = got.to_frame().set_index("removed")
    mean = {k: [float(np.mean(r)) for r in rows] for k, rows in want.items()}
    p_full = np.mean(mean["full"])
    for source, key in (("Q", "no_question"), ("V", "no_image"), ("A<t", "no_prefix")):
        assert_close(table.loc[source, "p_full"], p_full, scale=s_p, dtype=torch.float32)
        assert_close(
            table.loc[source, "p_remove"], np.mean(mean[key]), scale=s_p, dtype=torch.float32
        )
        dropped = np.mean([r < f for r, f in zip(mean[key], mean["full"])])
        assert table.loc[source, "fraction_decreased"] == pytest.approx(dropped)


def test_recovery_error_equals_eq_15_on_a_brute_force_reference():
    vlm = shared_tiny_vlm("llava")
    samples = make_samples(6, seed=5)
    targets = TARGETS + TARGETS[:2]
    drives = dr.causal_drives(vlm, samples, k=2, targets=targets, seed=1, progress_bar=False)
    rec = dr.recovery_error(vlm, samples, drives, m=2, seed=3, progress_bar=False)
    held = [s for s in samples if s.id not in drives.support_ids]
    rng = np.random.default_rng(3)
    ctx = [held[i] for i in sorted(rng.choice(len(held), size=2, replace=False).tolist())]
    assert rec.context_ids == [c.id for c in ctx]
    ids = [_ids(vlm, t) for t in targets]
    errs: dict[str, list[float]] = {
        "question_drive": [],
        "pmi_q": [],
        "prefix_drive": [],
        "pmi_p": [],
    }
    for i, (s, a) in enumerate(zip(samples, ids)):
        pq = [token_probs(vlm, s.question, c.load_image(), a) for c in ctx]
        pp = [token_probs(vlm, c.question, c.load_image(), a) for c in ctx]
        log_p0 = drives.p0[i, : len(a)]
        g_q = [
            math.log2(np.mean([math.prod(p[: t + 1]) for p in pq])) - log_p0[t]
            for t in range(len(a))
        ]
        g_p = [math.log2(np.mean([p[t] for p in pp])) - log_p0[t] for t in range(len(a))]
        s_q, s_p = drive_scale(vlm, ids, "question_drive"), drive_scale(vlm, ids, "prefix_drive")
        assert_close(rec.g_q[i, : len(a)], g_q, scale=s_q, dtype=torch.float32)
        assert_close(rec.g_p[i, : len(a)], g_p, scale=s_p, dtype=torch.float32)
        for name, g in (
            ("question_drive", g_q),
            ("pmi_q", g_q),
            ("prefix_drive", g_p),
            ("pmi_p", g_p),
        ):
            d = getattr(drives, name)[i, : len(a)]
            errs[name].append(float(np.mean(np.abs(d - np.asarray(g)))))
    per = rec.per_target()
    # an error mean |d − g| moves by at most g's bound (d is the library's in both)
    # g_q is formed as the question drive is, g_p as the prefix drive is
    of_g = {"question": drive_scale(vlm, ids, "question_drive")}
    of_g["prefix"] = drive_scale(vlm, ids, "prefix_drive")
    f32 = torch.float32
    for name, values in errs.items():
        scale = of_g["question" if name in ("question_drive", "pmi_q") else "prefix"]
        assert_close(per[f"err_{name}"], values, scale=scale, dtype=f32)
    table = rec.to_frame().set_index("intervention")
    for source, drive, base in (
        ("question", "question_drive", "pmi_q"),
        ("prefix", "prefix_drive", "pmi_p"),
    ):
        d, p = np.asarray(errs[drive]), np.asarray(errs[base])
        scale = of_g[source]
        assert_close(table.loc[source, "err_drive"], d.mean(), scale=scale, dtype=f32)
        # a ratio d/p of errors each known to ± b moves by (1 + |d/p|) · b / |p|
        of_means = scale * (1 + abs(d.mean() / p.mean())) / abs(p.mean())
        assert_close(
            table.loc[source, "reduction_of_means"],
            1 - d.mean() / p.mean(),
            scale=of_means,
            dtype=f32,
        )
        per_item = scale * float(np.max((1 + np.abs(d / p)) / np.abs(p)))
        assert_close(
            table.loc[source, "mean_reduction"], np.mean(1 - d / p), scale=per_item, dtype=f32
        )
        assert table.loc[source, "share_drive_wins"] == pytest.approx(np.mean(d < p))


# -- trajectories, clusters, S_PV ----------------------------------------------------------------


def test_relative_bins_equal_a_dense_grid_average():
    from probes.trajectories import relative_bins

    rng = np.random.default_rng(0)
    values = rng.normal(size=(5, 23))
    mask = np.zeros((5, 23), dtype=bool)
    lengths = [1, 4, 10, 17, 23]
    for i, n in enumerate(lengths):
        mask[i, :n] = True
    got = relative_bins(values, mask, 10)
    grid = (np.arange(200_000) + 0.5) / 200_000  # midpoints of a fine grid over [0, 1)
    for i, n in enumerate(lengths):
        step = values[i, np.floor(grid * n).astype(int)]  # the piecewise-constant trajectory
        want = step.reshape(10, -1).mean(axis=1)
        # the grid puts each of the n − 1 token boundaries to within half a cell (0.5/M of
        # [0, 1)); a bin of width 1/B holds at most n/B + 1 of them, each misplacing at most
        # max|jump| · (0.5/M) · B of the bin's average: (n + B) · 0.5/M · max|jump| in all
        if n == 1:  # one token: the trajectory is constant, the grid exact
            assert_close(got[i], want)
            continue
        jump = float(np.abs(np.diff(values[i, :n])).max())
        bound = (n + 10) * 0.5 / len(grid) * jump
        approx_close(got[i], want, bound, why=f"a grid of {len(grid)} points over [0, 1)")
    assert np.allclose(got[2], values[2, :10])  # T = 10: one token per bin


def test_clusters_equal_a_scikit_learn_pipeline(small):
    from sklearn.cluster import KMeans
    from sklearn.preprocessing import StandardScaler

    vlm = shared_tiny_vlm("llava")
    samples = make_samples(9, seed=7)
    targets = ["yellow banana", "two", "a red circle", "blue", "a", "two two", "sky", "red", "x y"]
    result = dr.causal_drives(vlm, samples, k=2, targets=targets, progress_bar=False)
    clusters = dr.cluster_drives(result, k=3, seed=0)
    from probes.trajectories import relative_bins

    feats = np.concatenate(
        [
            relative_bins(getattr(result, d), result.mask, 10)
            for d in ("question_drive", "visual_drive", "prefix_drive")
        ],
        1,
    )
    np.testing.assert_allclose(clusters.features, feats)
    ref = KMeans(n_clusters=3, n_init=10, random_state=0).fit(StandardScaler().fit_transform(feats))
    # the same partition (the library numbers clusters by size)
    pairs = {(a, b) for a, b in zip(clusters.labels, ref.labels_)}
    assert len(pairs) == 3
    assert list(clusters.sizes) == sorted(np.bincount(ref.labels_), reverse=True)
    for c in range(3):
        np.testing.assert_allclose(
            clusters.profiles[c].reshape(-1), feats[clusters.labels == c].mean(0)
        )
    assert clusters.to_frame()["share"].sum() == pytest.approx(1.0)


def test_the_papers_symbols_still_name_the_drives_with_a_deprecation_warning():
    """``qcd``, ``vcd``, ``pcd`` (the paper's symbols; ``vcd`` also names visual contrastive
    decoding) are deprecated names of the question, visual and prefix drives."""
    rng = np.random.default_rng(2)
    n, t = 4, 3
    arrays = {name: rng.normal(size=(n, t)) for name in ("p0", *NAMES)}
    fake = dr.CausalDrives(
        sample_ids=[f"s{i}" for i in range(n)],
        token_ids=[[1] * t] * n,
        tokens=[["a"] * t] * n,
        answers=["a"] * n,
        mask=np.ones((n, t), dtype=bool),
        **arrays,
    )
    with pytest.warns(DeprecationWarning, match="'vcd' is now called 'visual_drive'"):
        old = fake.sample_mean("vcd")
    np.testing.assert_array_equal(old, arrays["visual_drive"].mean(axis=1))
    for symbol, name in (
        ("qcd", "question_drive"),
        ("vcd", "visual_drive"),
        ("pcd", "prefix_drive"),
    ):
        with pytest.warns(DeprecationWarning, match=name):
            assert getattr(fake, symbol) is arrays[name]
        with pytest.warns(DeprecationWarning, match=name):
            np.testing.assert_array_equal(fake.final(symbol), arrays[name][:, -1])
    with pytest.raises(interp.DriveError, match="no drive 'VCD'"):
        fake.drive("VCD")


def test_prefix_visual_imbalance_equals_sklearn_and_hand_effect_sizes():
    from sklearn.metrics import average_precision_score, roc_auc_score

    rng = np.random.default_rng(1)
    n, t = 30, 6
    mask = np.ones((n, t), dtype=bool)
    arr = lambda: rng.normal(size=(n, t))  # noqa: E731
    fake = dr.CausalDrives(
        sample_ids=[f"s{i}" for i in range(n)],
        token_ids=[[1] * t] * n,
        tokens=[["a"] * t] * n,
        answers=["a"] * n,
        p0=arr(),
        prefix_drive=arr() + 1.0,
        question_drive=arr(),
        visual_drive=arr(),
        mask=mask,
    )
    labels = ["prior_driven"] * 12 + ["grounded"] * 14 + ["other"] * 3 + [None]
    labels = [labels[i] for i in rng.permutation(n)]
    imb = dr.prefix_visual_imbalance(fake, labels, n_boot=200)
    keep = np.array([lab in ("prior_driven", "grounded") for lab in labels])
    y = np.array([lab == "prior_driven" for lab in labels])[keep]
    s_pv = (fake.prefix_drive.mean(1) - fake.visual_drive.mean(1))[keep]
    visual_t = fake.visual_drive[:, -1][keep]
    table = imb.table.set_index("score")
    assert table.loc["S_PV", "auroc"] == pytest.approx(roc_auc_score(y, s_pv))
    assert table.loc["S_PV", "auprc"] == pytest.approx(average_precision_score(y, s_pv))
    assert table.loc["answer-level visual drive (VCD)", "auroc"] == pytest.approx(
        roc_auc_score(y, -visual_t)
    )
    assert (
        table.loc["S_PV", "auroc_low"]
        <= table.loc["S_PV", "auroc"]
        <= table.loc["S_PV", "auroc_high"]
    )
    a, b = s_pv[y], s_pv[~y]
    pooled = ((len(a) - 1) * a.var(ddof=1) + (len(b) - 1) * b.var(ddof=1)) / (len(a) + len(b) - 2)
    effects = imb.effects.set_index("score")
    assert effects.loc["S_PV", "cohens_d"] == pytest.approx(
        (a.mean() - b.mean()) / math.sqrt(pooled)
    )
    delta = np.mean([np.sign(x - z) for x in a for z in b])
    assert effects.loc["S_PV", "cliffs_delta"] == pytest.approx(delta)
    assert len(imb.scores) == keep.sum()


def test_figures_are_returned(small):
    from matplotlib.figure import Figure

    vlm = shared_tiny_vlm("llava")
    samples = make_samples(6, seed=5)
    targets = TARGETS + TARGETS[:2]
    result = dr.causal_drives(vlm, samples, k=2, targets=targets, progress_bar=False)
    rec = dr.recovery_error(vlm, samples, result, m=2, progress_bar=False)
    removal = dr.source_removal(vlm, samples, targets=targets, progress_bar=False)
    labels = ["prior_driven", "grounded"] * 3
    imb = dr.prefix_visual_imbalance(result, labels, n_boot=50)
    figs = [
        dr.plot_trajectories(result),
        dr.plot_clusters(dr.cluster_drives(result, k=2)),
        dr.plot_recovery(rec),
        dr.plot_imbalance(imb),
        dr.plot_source_removal(removal),
    ]
    assert all(isinstance(f, Figure) for f in figs)
    import matplotlib.pyplot as plt

    plt.close("all")


# -- bad input ------------------------------------------------------------------------------------


def test_bad_input_is_refused_before_any_forward(small):
    vlm = shared_tiny_vlm("llava")
    samples, support = small
    counter = ForwardCounter(vlm)
    try:
        with pytest.raises(interp.SupportError, match=r"k=9 but only 4 .*lower k"):
            dr.causal_drives(vlm, samples, k=9, targets=TARGETS, progress_bar=False)
        with pytest.raises(interp.SupportError, match=r"k must be an integer >= 1"):
            dr.causal_drives(vlm, samples, k=0, targets=TARGETS, progress_bar=False)
        with pytest.raises(interp.EmptyTargetError, match="tokenises to no tokens"):
            dr.causal_drives(vlm, samples, k=2, targets=["a", "", "b", "c"], progress_bar=False)
        blind = [*samples[:3], interp.Sample("what is it?", None, id="noimg")]
        with pytest.raises(interp.ImageError, match="'noimg' has no image"):
            dr.causal_drives(vlm, blind, k=2, targets=TARGETS, progress_bar=False)
        with pytest.raises(interp.ImageError, match="support sample"):
            dr.causal_drives(vlm, samples, support=[blind[-1]], targets=TARGETS, progress_bar=False)
        with pytest.raises(interp.ConditionError, match="unknown null image 'grey'"):
            dr.causal_drives(
                vlm, samples, k=2, targets=TARGETS, null_image="grey", progress_bar=False
            )
        with pytest.raises(interp.DriveError, match="3 targets for 4 samples"):
            dr.causal_drives(vlm, samples, k=2, targets=TARGETS[:3], progress_bar=False)
        with pytest.raises(interp.SupportError, match="different images"):
            same = [interp.Sample(s.question, samples[0].image, id=s.id) for s in samples]
            dr.source_removal(
                vlm, same, targets=TARGETS, null_image="mismatched", progress_bar=False
            )
    finally:
        counter.close()
    assert counter.rows == []
    result = dr.causal_drives(
        vlm, samples, support=support, targets=TARGETS, pmi=False, progress_bar=False
    )
    with pytest.raises(interp.DriveError, match="pmi=True"):
        dr.recovery_error(vlm, samples, result, m=1, progress_bar=False)
    with_pmi = dr.causal_drives(vlm, samples, support=support, targets=TARGETS, progress_bar=False)
    with pytest.raises(interp.SupportError, match="m=5 held-out contexts .* only 2"):
        dr.recovery_error(vlm, samples, with_pmi, m=5, progress_bar=False)
    with pytest.raises(interp.DriveError, match="same samples"):
        dr.recovery_error(vlm, samples[::-1], with_pmi, m=1, progress_bar=False)
    with pytest.raises(interp.DriveError, match="2 labels for 4 samples"):
        dr.prefix_visual_imbalance(with_pmi, ["grounded", "prior_driven"])
    with pytest.raises(interp.TooFewSamplesError, match="prior_driven"):
        dr.prefix_visual_imbalance(with_pmi, ["grounded"] * 3 + ["prior_driven"])
    with pytest.raises(interp.TooFewSamplesError):
        dr.cluster_drives(with_pmi, k=5)
    assert issubclass(interp.SupportError, ValueError)


# -- the command ------------------------------------------------------------------------------------


def test_the_command_writes_its_outputs_and_resumes(tmp_path, capsys):
    from interp.cli import main

    out = tmp_path / "run"
    argv = [
        "drives",
        "--model",
        "demo",
        "--data",
        "demo",
        "--n",
        "12",
        "--k",
        "3",
        "--m",
        "2",
        "--out",
        str(out),
        "--no-progress",
    ]
    assert main(argv) == 0
    names = {p.name for p in out.iterdir()}
    for name in (
        "tokens.csv",
        "samples.csv",
        "source_removal.csv",
        "recovery.csv",
        "clusters.csv",
        "summary.txt",
        "trajectories.png",
        "store",
    ):
        assert name in names, name
    tokens = pd.read_csv(out / "tokens.csv")
    assert {*NAMES, "pmi_q", "pmi_p"} <= set(tokens.columns)
    assert {"answer_visual_drive", "mean_question_drive"} <= set(pd.read_csv(out / "samples.csv"))
    first = (out / "summary.txt").read_text()
    assert main(argv) == 0  # resumed from the store: the same summary
    assert (out / "summary.txt").read_text() == first
