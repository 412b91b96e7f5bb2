"""Coverage of the reports' intervals on the demo world's own structure (issue #46, item 6).

The earlier coverage tests (tests/probes/test_paired_inference.py, test_vip_clustered.py) draw
synthetic clusters. Here the clusters, and what the planted effect depends on, are the demo
world's: its held-out colour questions (``demo_world("test", qtypes=["color"])``: one image, four
wordings sharing ``meta["group"]``), each image's drawn visibility (``meta["opacity"]``) and
whether its object is drawn against its prior colour (``meta["counterfactual"]``). Running the demo
model itself for hundreds of seeded repetitions would take minutes, so the model's answers are
replaced by planted ones: a question about image g is answered correctly with the image with
probability ``p_with(g)`` and without it with probability ``p_without(g)`` — functions of that
image's opacity and prior flag (the shape the demo-world notes report: the model follows the prior
where the evidence is faint) — shared by the image's four wordings. The estimand, the mean of
``p_with − p_without`` over the pool's images, is computed here from those functions, never from
the code under test; each repetition draws 40 whole images of a 400-image pool.

Checked: the 95% interval of the paired difference (:func:`probes.inference.paired_comparison`,
the audit's ablation and decoding headlines) and of the accuracy
(:func:`probes.inference.clustered_mean`) cover the planted value in at least 90% of the seeded
repetitions; under a planted null (the image helps the clearly drawn images exactly as much as it
hurts the faint ones, pool mean 0) resampling whole images keeps the false-positive rate at most
10% while resampling questions as if independent exceeds it.

Measured (one core, seeds as below): the paired gain's interval covers in 95% of the 150
repetitions, the accuracy's in 91%; a separate 600-repetition run put the accuracy's coverage at
90.2%: the percentile interval over 40 images of an accuracy near its ceiling covers at about the
issue's 90% floor, not at its nominal 95%.
"""

from __future__ import annotations

import numpy as np
import pytest

from interp.datasets import demo_world
from probes.inference import clustered_mean, paired_comparison

REPS, IMAGES, N_BOOT = 150, 40, 1000


@pytest.fixture(scope="module")
def pool() -> dict[str, np.ndarray]:
    """The world's images: per question its image (index), and per image its opacity and flag."""
    samples = demo_world("test", n=1600, qtypes=["color"])
    groups = [s.meta["group"] for s in samples]
    names = list(dict.fromkeys(groups))
    image = np.array([names.index(g) for g in groups])
    first = {g: s for g, s in zip(reversed(groups), reversed(samples))}
    opacity = np.array([float(first[g].meta["opacity"]) for g in names])
    flipped = np.array([bool(first[g].meta["counterfactual"]) for g in names])
    assert len(names) == 400 and np.bincount(image).tolist() == [4] * 400  # four wordings each
    assert 0.1 < flipped.mean() < 0.5 and opacity.std() > 0.2  # the world's own spread
    return {"image": image, "opacity": opacity, "flipped": flipped}


def _planted(opacity: np.ndarray, flipped: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per image: P(correct) with the image (rises with visibility, saturating by 0.25 as the
    demo notes report; a counterfactual drawing seen faintly is answered by the prior) and
    without it (the prior: right for a canonical drawing, wrong for a counterfactual one)."""
    seen = np.clip(opacity / 0.25, 0.0, 1.0)
    with_image = np.where(flipped, 0.2 + 0.75 * seen, 0.85 + 0.1 * seen)
    without = np.where(flipped, 0.05, 0.85)
    return with_image, without


def _null(opacity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per image: the image helps (clear drawings) or hurts (faint ones) by ``0.88·s`` with ``s``
    a step in opacity centred on the pool, so that the pool's mean effect is exactly 0."""
    s = np.tanh(8.0 * (opacity - np.median(opacity)))
    s = s - s.mean()
    p_with, p_without = 0.5 + 0.44 * s, 0.5 - 0.44 * s
    assert p_with.min() > 0 and p_with.max() < 1
    return p_with, p_without


def _answers(rng: np.random.Generator, pool, p_with: np.ndarray, p_without: np.ndarray):
    """40 whole images drawn from the pool; each wording answered with the image's P(correct)."""
    chosen = rng.choice(len(pool["opacity"]), size=IMAGES, replace=False)
    rows = np.flatnonzero(np.isin(pool["image"], chosen))
    g = pool["image"][rows]
    with_image = (rng.random(len(rows)) < p_with[g]).astype(float)
    without = (rng.random(len(rows)) < p_without[g]).astype(float)
    return with_image, without, g.tolist()


def test_the_intervals_cover_an_effect_planted_on_the_worlds_images(pool) -> None:
    p_with, p_without = _planted(pool["opacity"], pool["flipped"])
    gain, accuracy = float(np.mean(p_with - p_without)), float(np.mean(p_with))
    assert 0.1 < gain < 0.3  # a real, moderate effect of the image
    rng = np.random.default_rng(46)
    covered = {"gain": 0, "accuracy": 0}
    found = 0
    for rep in range(REPS):
        a, b, g = _answers(rng, pool, p_with, p_without)
        diff = paired_comparison(a, b, g, n_boot=N_BOOT, seed=rep)
        acc = clustered_mean(a, g, n_boot=N_BOOT, seed=rep)
        assert diff.n == 4 * IMAGES and diff.n_clusters == IMAGES
        covered["gain"] += diff.low <= gain <= diff.high
        covered["accuracy"] += acc.low <= accuracy <= acc.high
        found += diff.conclusive
    rates = {k: v / REPS for k, v in covered.items()}
    print(rates, "found", found / REPS)
    assert rates["gain"] >= 0.90 and rates["accuracy"] >= 0.90, rates
    assert found / REPS >= 0.5  # and the planted gain is usually detected


def test_a_null_on_the_worlds_images_keeps_its_level_only_resampling_whole_images(pool) -> None:
    p_with, p_without = _null(pool["opacity"])
    assert abs(float(np.mean(p_with - p_without))) < 1e-12  # the pool's effect: exactly none
    assert np.ptp(p_with - p_without) > 0.6  # but large and opposite on clear and faint images
    rng = np.random.default_rng(64)
    clustered = items = covered = 0
    for rep in range(REPS):
        a, b, g = _answers(rng, pool, p_with, p_without)
        by_image = paired_comparison(a, b, g, n_boot=N_BOOT, seed=rep)
        by_item = paired_comparison(a, b, None, n_boot=N_BOOT, seed=rep)
        clustered += by_image.conclusive
        items += by_item.conclusive
        covered += by_image.low <= 0.0 <= by_image.high
    rates = {"whole images": clustered / REPS, "questions as independent": items / REPS}
    print(rates)
    assert rates["whole images"] <= 0.10, rates
    assert rates["questions as independent"] > 0.10, rates
    assert covered == REPS - clustered  # a false positive is exactly a miss of the null
