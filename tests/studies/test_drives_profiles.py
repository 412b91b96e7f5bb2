"""Fig. 2's normalised drive profiles, Fig. 5's block-bootstrap intervals and the stability over
the support size K, against brute-force recomputation: shares and bootstrap resamples by plain
loops, the drives of every support size by :func:`causal_drives` run on that support, Pearson's r
by numpy."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import interp
from interp.encoding.targets import target_ids
from interp.studies import drives as dr
from interp.studies.drives.recovery import Recovery
from interp.testing import make_samples, shared_tiny_vlm
from interp.testing.tolerance import assert_close, logprob_scale

TARGETS = ["yellow banana", "two", "a red circle", "blue"]


def hf_logprob_scale(vlm: interp.VLM, sample: interp.Sample, target: str) -> float:
    """``logprob_scale`` of the logits that predict ``target``'s tokens after ``sample``'s prompt,
    from one plain HF forward of one unpadded row: S of each of those log-probabilities."""
    ids = target_ids(vlm, [target])[0]
    inputs = dict(interp.encode(vlm, [sample]).inputs)
    n = inputs["input_ids"].shape[1]
    extra = torch.tensor([ids], dtype=inputs["input_ids"].dtype)
    inputs["input_ids"] = torch.cat([inputs["input_ids"], extra], 1)
    mask = inputs["attention_mask"]
    inputs["attention_mask"] = torch.cat([mask, torch.ones_like(extra, dtype=mask.dtype)], 1)
    with torch.no_grad():
        logits = vlm.hf(**inputs).logits[0, n - 1 : n - 1 + len(ids)]
    return logprob_scale(logits)


def hand_drives(lengths, seed=0) -> dr.CausalDrives:
    rng = np.random.default_rng(seed)
    n, width = len(lengths), max(lengths)
    mask = np.arange(width)[None, :] < np.asarray(lengths)[:, None]

    def arr(shift):
        a = rng.normal(shift, 1.0, (n, width))
        return np.where(mask, a, np.nan)

    return dr.CausalDrives(
        sample_ids=[f"s{i}" for i in range(n)],
        token_ids=[[1] * k for k in lengths],
        tokens=[["x"] * k for k in lengths],
        answers=["x"] * n,
        p0=arr(0),
        prefix_drive=arr(2.0),
        question_drive=arr(1.0),
        visual_drive=arr(0.3),
        mask=mask,
    )


def brute_shares(binned: np.ndarray, rows) -> np.ndarray:
    """Shares by loops: the positive part of each drive's mean over ``rows``, over their sum."""
    out = np.full(binned.shape[1:], np.nan)
    for j in range(binned.shape[2]):
        means = [sum(binned[r, d, j] for r in rows) / len(rows) for d in range(3)]
        pos = [max(m, 0.0) for m in means]
        if sum(pos) > 0:
            out[:, j] = [p / sum(pos) for p in pos]
    return out


def brute_bootstrap(stat, blocks, n_boot, seed):
    """The documented resampling, as a loop: each resample draws len(blocks) block indices."""
    order = list(dict.fromkeys(blocks))
    members = {b: [i for i, x in enumerate(blocks) if x == b] for b in order}
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(n_boot):
        pick = rng.integers(0, len(order), len(order))
        rows = [i for j in pick for i in members[order[j]]]
        draws.append(stat(rows))
    d = np.stack(draws)
    return np.nanquantile(d, 0.025, axis=0), np.nanquantile(d, 0.975, axis=0)


def test_shares_by_hand():
    means = np.array([[2.0, -1.0], [1.0, -2.0], [-1.0, -0.5]])
    s = dr.normalised_shares(means)
    np.testing.assert_allclose(s[:, 0], [2 / 3, 1 / 3, 0.0])
    assert np.isnan(s[:, 1]).all()  # every mean negative: no profile


@pytest.mark.parametrize("blocks", [None, [0, 0, 1, 1, 2, 2, 3, 3, 4]])
def test_profiles_equal_a_brute_force(blocks):
    drives = hand_drives([3, 5, 8, 2, 6, 4, 7, 9, 5], seed=1)
    prof = dr.drive_profiles(drives, bins=4, blocks=blocks, n_boot=300, seed=5)
    binned = drives.binned(4)
    every = list(range(len(binned)))
    want = brute_shares(binned, every)
    labels = blocks if blocks is not None else every
    low, high = brute_bootstrap(lambda r: brute_shares(binned, r), labels, 300, 5)
    f = prof.to_frame()
    # float64 statistics against loops: ε·S = 1e-10·S, 100x the old bare 1e-12 (both far below
    # the 1e-3 a wrong share, resample or bound would move them by)
    for d, name in enumerate(dr.DRIVES):
        part = f[f["drive"] == name].sort_values("bin")
        assert_close(part["share"], want[d], equal_nan=True)
        assert_close(part["low"], low[d])
        assert_close(part["high"], high[d])
    # the stacked profile fills the plot
    np.testing.assert_allclose(prof.wide().sum(axis=1), 1.0)


def test_the_trend_reads_a_rising_prefix_share_and_falling_question_share():
    drives = hand_drives([10] * 12, seed=2)
    t = np.arange(10)[None, :] / 9
    drives.prefix_drive = 1 + 4 * t + 0.05 * drives.prefix_drive  # rises
    drives.question_drive = 3 - 2 * t + 0.05 * drives.question_drive  # falls
    drives.visual_drive = 1 + 0.05 * drives.visual_drive  # flat: its share falls too
    tr = dr.drive_profiles(drives, bins=5, n_boot=200).trend().set_index("drive")
    assert tr.loc["prefix_drive", "direction"] == "rises"
    assert tr.loc["question_drive", "direction"] == "falls"
    b = drives.binned(5).mean(axis=0)
    first, last = brute_shares(b[None], [0])[:, 0], brute_shares(b[None], [0])[:, -1]
    assert_close(tr["change"], last - first)


def test_recovery_intervals_equal_a_brute_force_block_bootstrap():
    rng = np.random.default_rng(3)
    lengths = [4, 6, 3, 5, 7, 4]
    width = max(lengths)
    mask = np.arange(width)[None, :] < np.asarray(lengths)[:, None]
    errs = {
        k: np.where(mask, np.abs(rng.normal(1, 1, (6, width))), np.nan)
        for k in ("question_drive", "pmi_q", "prefix_drive", "pmi_p")
    }
    rec = Recovery([f"s{i}" for i in range(6)], errs["pmi_q"], errs["pmi_p"], errs, mask)
    blocks = ["a", "a", "b", "b", "c", "c"]
    ci = rec.binned_ci(bins=3, blocks=blocks, n_boot=250, seed=2)
    for name, b in rec.binned(3).items():
        low, high = brute_bootstrap(lambda r, b=b: b[r].mean(axis=0), blocks, 250, 2)
        part = ci[ci["error"] == name].sort_values("bin")
        assert_close(part["mean"], b.mean(axis=0))
        assert_close(part["low"], low)
        assert_close(part["high"], high)


def test_stability_over_k_equals_drives_recomputed_on_each_support():
    vlm = shared_tiny_vlm("llava")
    samples = make_samples(4, seed=3)
    pool = make_samples(6, seed=8)
    got = dr.support_stability(
        vlm, samples, pool=pool, ks=(1, 3), draws=2, targets=TARGETS, progress_bar=False
    ).set_index(["draw", "k"])
    ref = None
    for d in (0, 1):
        sup = dr.draw_support(pool, 3, seed=d)
        for k in (3, 1) if d == 0 else (1, 3):
            res = dr.causal_drives(
                vlm, samples, support=sup[:k], targets=TARGETS, pmi=False, progress_bar=False
            )
            if ref is None:
                ref = res  # the largest K of the first draw
            for name in ("question_drive", "prefix_drive"):
                rs = []
                for i, n in enumerate(ref.mask.sum(axis=1)):
                    x, y = res.drive(name)[i, :n], ref.drive(name)[i, :n]
                    if n >= 2 and np.ptp(x) > 0 and np.ptp(y) > 0:
                        rs.append(np.corrcoef(x, y)[0, 1])
                # a correlation (S = 1) of the same drives, in float64: ε·S = 1e-10
                assert_close(got.loc[(d, k), f"r_{name}"], np.mean(rs))
    assert got.loc[(0, 3), "r_question_drive"] == pytest.approx(1.0)
    assert got.loc[(0, 3), "mean_abs_diff_prefix_drive"] == 0.0


def test_the_marginal_pmi_q_equals_eq_24_with_the_question_marginalised_by_hand():
    vlm = shared_tiny_vlm("llava")
    samples = make_samples(3, seed=4)
    support = make_samples(5, seed=9)[:2]
    res = dr.causal_drives(
        vlm, samples, support=support, targets=TARGETS[:3], pmi_marginal=True, progress_bar=False
    )
    assert res.forwards_per_sample == 2 * 2 + 2 + 2 + 2
    for i, s in enumerate(samples):
        target = TARGETS[i]
        full = interp.score(vlm, [s], [target], progress_bar=False).logprobs[0]
        per_q = [
            interp.score(
                vlm, [interp.Sample(c.question, s.image)], [target], progress_bar=False
            ).logprobs[0]
            for c in support
        ]
        # PMI_Q at t is a signed sum of at most 1 + (t + 1) + t <= 2T log-probabilities (a
        # log-sum-exp over the support rounds as its largest term), each rounded in proportion to
        # its logits' S: S = 2T · max S / ln 2 at fp32's ε (the forwards are fp32). 5e-4 to
        # 2e-3 bits here (S ≈ 9, T = 2..7), 5-20x the bare 1e-4 this held: one CPU's rounding
        contexts = [s] + [interp.Sample(c.question, s.image) for c in support]
        s_lp = max(hf_logprob_scale(vlm, x, target) for x in contexts)
        scale = 2 * len(full) * s_lp / math.log(2)
        for t in range(len(full)):
            upto = sum(math.exp(sum(float(x) for x in q[: t + 1])) for q in per_q)
            before = sum(math.exp(sum(float(x) for x in q[:t])) for q in per_q)
            want = (float(full[t]) - math.log(upto / before)) / math.log(2)
            assert_close(res.pmi_q_marginal[i, t], want, scale=scale, dtype=torch.float32)
    frame = res.sample_frame()  # the per-sample table carries it
    np.testing.assert_allclose(frame["mean_pmi_q_marginal"], res.sample_mean("pmi_q_marginal"))
    # the default PMI_Q (null question) is unchanged by the option
    base = dr.causal_drives(vlm, samples, support=support, targets=TARGETS[:3], progress_bar=False)
    assert_close(base.pmi_q, res.pmi_q, equal_nan=True)  # NaN past each answer
    assert base.pmi_q_marginal is None
