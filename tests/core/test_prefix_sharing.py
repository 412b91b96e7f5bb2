"""Prefix sharing (:mod:`interp.prefix`): contexts with equal media run their common prefix once.

The reference is the path that shares nothing (every row's full forward, already checked against
plain HF elsewhere) and, for two families, a plain HF forward of each row written out here. Each
family of the tiny suite scores the same rows both ways: values equal within fp32 rounding, and on
the families whose adapter declares ``prefix_sharing`` the prefixes do run (a spy counts them);
PaliGemma (its prompt attends both ways) and InstructBLIP (no cache) share nothing.
"""

from __future__ import annotations

import pytest
import torch

import interp
from interp import prefix
from interp.encoding import append_targets, encode, target_ids
from interp.samples import Sample
from interp.scoring import score_rows
from interp.testing.tiny import ARCHITECTURES, build_tiny, shared_tiny_vlm
from interp.testing.tolerance import assert_close
from interventions import Steer
from tools.conformance import image

QUESTIONS = ["What color is the car?", "How many dogs are there in the picture?", "Is it day?"]
# fp32 log-probabilities of about -7, through every layer: rounding of a few ε·64 (≤ 7.6e-6, under
# the 1e-5 the sharing promises)
SCALE = 64.0
TARGETS = ["Red car.", "Two dogs here.", "yes", "Red.", "Two.", "no", "two", "Black.", "Blue."]


def _rows(arch: str) -> list[tuple[Sample, str]]:
    """One image under three questions (and no question, and the prefix removed), two blind rows,
    a null image, and a second image: groups of several sizes, lengths that left-pad."""
    img, other = image(3), image(4)
    ss = [Sample(question=q, image=img, answer="Red.", id=f"s{i}") for i, q in enumerate(QUESTIONS)]
    ss.append(Sample(question=QUESTIONS[0], image=other, answer="Blue.", id="s3"))
    return [
        (ss[0], "full"),
        (ss[1], "full"),
        (ss[2], "full"),
        (ss[0], "no_question"),
        (ss[1], "full+no_prefix"),
        (ss[0], "blind"),
        (ss[1], "blind"),
        (ss[2], "null:black"),
        (ss[3], "full"),
    ]


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The prefix lengths run (one entry per shared prefix)."""
    calls: list[int] = []
    real = prefix.run_prefix

    def counted(vlm, shared, p):  # type: ignore[no-untyped-def]
        calls.append(p)
        return real(vlm, shared, p)

    monkeypatch.setattr(prefix, "run_prefix", counted)
    return calls


@pytest.mark.parametrize("arch", ARCHITECTURES)
@pytest.mark.parametrize("batch_size", [2, 8])
def test_shared_equals_full_forwards(arch: str, batch_size: int, spy: list[int]) -> None:
    vlm = shared_tiny_vlm(arch)
    rows = _rows(arch)
    targets = target_ids(vlm, TARGETS)
    shared = score_rows(vlm, rows, targets, batch_size=batch_size, share_prefix=True)
    ran = list(spy)
    naive = score_rows(vlm, rows, targets, batch_size=batch_size, share_prefix=False)
    assert spy == ran  # share_prefix=False runs no prefix
    for j, (got, want) in enumerate(zip(shared, naive)):
        assert got.shape == (len(targets[j]),)
        assert_close(
            got, want, scale=SCALE, dtype=torch.float32, msg=f"{arch} row {j} ({rows[j][1]})"
        )
    if vlm.adapter.prefix_sharing:
        # the image's three rows (and the blind pair) share; the image prefix holds the image
        assert len(ran) >= 2  # the image's rows and the blind rows
        image_rows = encode(vlm, [rows[0][0]], "full")
        assert max(ran) > int(image_rows.media_mask[0].nonzero().max())
    else:
        assert ran == []


@pytest.mark.parametrize("arch", ["llava", "qwen2_vl"])
def test_shared_equals_plain_hf(arch: str) -> None:
    """Each row's log-probabilities against a plain HF forward of that row alone, written out
    here (M-RoPE: Qwen2-VL's positions continue the image grid's)."""
    vlm = shared_tiny_vlm(arch)
    rows = [r for r in _rows(arch) if "no_prefix" not in r[1]]
    targets = target_ids(vlm, TARGETS[: len(rows)])
    got = score_rows(vlm, rows, targets, batch_size=4)
    for j, ((sample, cond), tgt) in enumerate(zip(rows, targets)):
        enc = encode(vlm, [sample], cond)
        traced, positions, _ = append_targets(vlm, enc, [tgt])
        with torch.no_grad():
            logits = vlm.hf(**traced.inputs).logits[0].float()
        want = logits[positions[0] - 1].log_softmax(-1)[torch.arange(len(tgt)), torch.tensor(tgt)]
        assert_close(
            got[j], want.double(), scale=SCALE, dtype=torch.float32, msg=f"{arch} row {j} ({cond})"
        )


def test_edits_and_pixel_conditions_fall_back(spy: list[int]) -> None:
    """An edit runs every row in full (it may write into the shared part); a row whose pixels a
    condition edits (``distort``) shares nothing; the values are the full forwards' either way."""
    vlm = shared_tiny_vlm("llava")
    rows = _rows("llava")
    targets = target_ids(vlm, TARGETS)
    steer = [Steer(1, torch.ones(vlm.d_model) * 0.5, positions="all")]
    edited = score_rows(vlm, rows, targets, batch_size=4, edits=steer)
    assert spy == []
    naive = score_rows(vlm, rows, targets, batch_size=4, edits=steer, share_prefix=False)
    plain = score_rows(vlm, rows, targets, batch_size=4, share_prefix=False)
    for got, want, clean in zip(edited, naive, plain):
        assert_close(got, want, scale=SCALE, dtype=torch.float32)
        assert not torch.allclose(got, clean)  # the edit did act
    distorted = [(s, "distort:500") for s, c in rows if c == "full"]
    tgts = targets[: len(distorted)]
    got = score_rows(vlm, distorted, tgts, batch_size=4)
    assert spy == []
    want = score_rows(vlm, distorted, tgts, batch_size=4, share_prefix=False)
    for g, w in zip(got, want):
        assert_close(g, w, scale=SCALE, dtype=torch.float32)


def test_media_key_tells_images_apart() -> None:
    vlm = shared_tiny_vlm("llava")
    from interp.encoding.resolve import resolve

    a, b = image(3), image(4)
    same = [Sample(question=q, image=a, id=f"a{i}") for i, q in enumerate(QUESTIONS[:2])]
    rows = resolve([*same, Sample(question="x", image=b, id="b")], "full", vlm.processor)
    keys = [prefix.media_key(r.seen) for r in rows]
    assert keys[0] == keys[1] != keys[2]
    blind = resolve(same, "blind", vlm.processor)
    assert prefix.media_key(blind[0].seen) == prefix.media_key(blind[1].seen) != keys[0]


@pytest.mark.parametrize("arch", ["llava", "qwen2_vl", "idefics3"])
@pytest.mark.parametrize("condition", ["full", "null:black", "swap:next"])
def test_score_shares_an_image_across_samples(arch: str, condition: str, spy: list[int]) -> None:
    """:func:`interp.score` over samples of which several ask about one image: their common
    prefix runs once (``null:black`` puts one image in every row), the values equal the full
    forwards' (``share_prefix=False``), and a ``swap`` part still draws from all the samples."""
    import interp

    vlm = shared_tiny_vlm(arch)
    img, other = image(3), image(4)
    samples = [
        Sample(question=q, image=img, answer=a, id=f"s{i}")
        for i, (q, a) in enumerate(zip(QUESTIONS, ["Red car.", "Two dogs here.", "yes"]))
    ]
    samples.append(Sample(question=QUESTIONS[0], image=other, answer="Blue.", id="s3"))
    got = interp.score(vlm, samples, condition=condition, batch_size=3, progress_bar=False)
    ran = list(spy)
    want = interp.score(
        vlm, samples, condition=condition, batch_size=3, share_prefix=False, progress_bar=False
    )
    assert spy == ran
    assert torch.equal(got.mask, want.mask) and got.token_ids == want.token_ids
    assert_close(got.logprobs, want.logprobs, scale=SCALE, dtype=torch.float32, msg=condition)
    assert ran  # the rows sharing an image ran their prefix once


@pytest.mark.parametrize("arch", ["llava_next", "qwen2_vl", "internvl", "mllama"])
def test_bf16_sharing_differs_by_no_more_than_bf16_itself(arch: str) -> None:
    """The declared bf16 bound (docs/performance.md): in bf16 the cached and the full attention
    round differently, so the shared path's largest difference from the full forwards is held to
    twice bf16's own (the full forward in bf16 against fp32, the same weights and rows).
    ``bench/prefix_sharing_bf16.py`` measures every family and the demo model."""
    scored = {}
    for dtype in (torch.float32, torch.bfloat16):
        model, processor = build_tiny(arch)
        vlm = interp.load(model.to(dtype), processor)
        rows, targets = _rows(arch), target_ids(vlm, TARGETS)
        for share in (True, False):
            lps = score_rows(vlm, rows, targets, batch_size=4, share_prefix=share)
            scored[dtype, share] = torch.cat(lps).double()
    bf = torch.bfloat16
    sharing = (scored[bf, True] - scored[bf, False]).abs().max().item()
    rounding = (scored[bf, False] - scored[torch.float32, False]).abs().max().item()
    assert rounding > 0  # the yardstick is bf16's real error
    assert sharing <= 2 * rounding, (
        f"{arch}: shared vs full {sharing:.3g}, bf16 vs fp32 {rounding:.3g}"
    )
