"""Every headline of the drives and attribute sections of ``interp audit`` carries its n and a
95% interval, and one whose interval holds "no effect" is worded as inconclusive; the shared
helpers (clusters, mean_interval) against plain numpy."""

from __future__ import annotations

import numpy as np
import pytest

import interp
from interp.samples import Sample
from interp.studies.audit.data import read_data
from interp.studies.audit.registry import AuditOptions
from interp.studies.audit.report import clusters, headline, holds, mean_interval
from interp.testing.tolerance import approx_close

COUNTS = ("k", "n_answers", "n_images", "n_prior_driven", "n_grounded", "n_labelled_images")
COUNTS += ("n_boxes", "n_prior")


def _check_intervals(numbers: dict) -> list[str]:
    keys = [k for k in numbers if not k.endswith(("_low", "_high")) and k not in COUNTS]
    for key in keys:
        low, high = numbers[f"{key}_low"], numbers[f"{key}_high"]
        if numbers[key] is not None:
            assert low <= numbers[key] <= high, (key, low, numbers[key], high)
    return keys


@pytest.fixture(scope="module")
def demo_sections():
    from interp.studies.attribute.audit import STUDY as ATTRIBUTE
    from interp.studies.drives.audit import STUDY as DRIVES

    vlm = interp.load("demo", attn_implementation="eager")
    samples = read_data("demo", 120, 0, None, None, False)
    out = {}
    for study in (DRIVES, ATTRIBUTE):
        chosen = list(study.select(samples).samples)
        out[study.key] = study.section(vlm, chosen, AuditOptions())
    return out


def test_drives_headlines_carry_n_and_intervals_and_auroc_at_chance_is_inconclusive(
    demo_sections,
):
    sec = demo_sections["drives"]
    n = sec.numbers
    assert n["n_answers"] == sec.n and n["n_images"] < n["n_answers"]  # wordings of one image
    assert {"mean_prefix_drive_bits", "p_full", "top_drop", "s_pv_auroc"} <= set(
        _check_intervals(n)
    )
    assert f"{n['n_prior_driven']} prior-driven, {n['n_grounded']} grounded answers" in sec.verdict
    for key in ("s_pv_auroc", "answer_visual_drive_auroc"):
        at_chance = holds(n[f"{key}_low"], n[f"{key}_high"], 0.5)
        text = f"[{n[f'{key}_low']}, {n[f'{key}_high']}]; inconclusive: it holds 0.5"
        assert (text in sec.verdict) == at_chance


def test_attribute_headlines_carry_n_and_intervals(demo_sections):
    sec = demo_sections["attribute"]
    n = sec.numbers
    keys = _check_intervals(n)
    assert {"inside", "random", "inside_minus_random", "inside_grounded"} <= set(keys)
    assert f"over {n['n_boxes']} answers on {n['n_images']} images" in sec.verdict
    assert f"n = {n['n_prior']}" in sec.verdict
    difference = n["inside_minus_random"]
    # three headline numbers, each rounded to 3 significant digits (at most 5e-4 apiece here)
    approx_close(
        difference, n["inside"] - n["random"], 2e-3, why="three numbers rounded to 3 digits"
    )


def test_clusters_and_mean_interval_against_numpy():
    def sample(i: int, group: str | None) -> Sample:
        return Sample(id=f"s{i}", question="q", meta={} if group is None else {"group": group})

    assert clusters([sample(0, "a"), sample(1, "a"), sample(2, "b")]) == ["a", "a", "b"]
    assert clusters([sample(0, "a"), sample(1, "b")]) is None  # no group shared: answers
    assert clusters([sample(0, "a"), sample(1, None)]) is None
    rng = np.random.default_rng(5)
    x = rng.normal(size=30)
    x[3] = np.nan
    est = mean_interval(x, None)
    assert est.value == pytest.approx(np.nanmean(x)) and est.n == 29
    picks = np.random.default_rng(1).integers(0, 29, size=(4000, 29))
    kept = x[~np.isnan(x)]
    brute = np.percentile(kept[picks].mean(axis=1), [2.5, 97.5])
    np.testing.assert_allclose([est.low, est.high], brute, atol=0.05)
    one = mean_interval([1.0], None)
    assert one.value == 1.0 and np.isnan(one.low) and np.isnan(one.high)


def test_coe_gap_at_the_vip_carries_its_interval_over_whole_images():
    from interp.studies.coe.audit import STUDY as COE

    vlm = interp.load("demo", attn_implementation="eager")
    samples = read_data("demo", 120, 0, None, None, False)
    chosen = list(COE.select(samples).samples)
    sec = COE.section(vlm, chosen, AuditOptions())
    n = sec.numbers
    assert n["vip_gap_low"] <= n["vip_gap"] <= n["vip_gap_high"]
    images = len({s.meta["group"] for s in chosen})
    assert n["vip_gap_n_clusters"] == images < len(chosen)  # wordings of one image
    assert f"(95% interval over {images} images, resampling whole images;" in sec.verdict
    assert "the paper's t = " in sec.verdict and "taking samples as independent" in sec.verdict


def test_ablation_headlines_carry_n_and_intervals_pooled_and_per_question_type():
    """The pooled drop, with the accuracies and the agreement, carries its interval over whole
    images; each question type gets its own drop and n (an interval where it spans 2+ images);
    the pooled drop and the per-type n equal hand counts from the section's own answers."""
    from interp.studies.ablation.audit import STUDY as ABLATION
    from interp.studies.ablation.measure import no_image_ablation

    vlm = interp.load("demo")
    samples = read_data("demo", 120, 0, None, None, False)
    chosen = list(ABLATION.select(samples).samples)
    sec = ABLATION.section(vlm, chosen, AuditOptions())
    n = sec.numbers
    assert n["n_questions"] == len(chosen) and n["n_images"] < n["n_questions"]
    for key in ("accuracy_with_image", "accuracy_blind", "drop_blind", "agreement_blind"):
        assert n[f"{key}_low"] <= n[key] <= n[f"{key}_high"], key
    tokens = AuditOptions().max_new_tokens
    abl = no_image_ablation(vlm, chosen, ("blind",), max_new_tokens=tokens, progress_bar=False)
    a = abl.answers
    full = a[a["condition"] == "full"]["correct"].to_numpy(float)
    blind = a[a["condition"] == "blind"]["correct"].to_numpy(float)
    assert n["drop_blind"] == headline(float(np.mean(full - blind)))
    kinds = {str(s.meta["category"]) for s in chosen}
    assert sum(n[f"n_{k}"] for k in kinds) == n["n_questions"]
    for k in kinds:
        assert f"drop_{k}" in n and k in sec.verdict
        if f"drop_{k}_low" in n:
            assert n[f"drop_{k}_low"] <= n[f"drop_{k}"] <= n[f"drop_{k}_high"]
    assert "Pooled over question types" in sec.verdict
