"""The audit on demo-omni: its demo mix carries the tri-modal conflict items (image + audio +
caption), and the conflict section reports each of the three sources, the audio among them.

The shares are checked against plain HF ``generate`` of the trained checkpoint through its own
processor (the training pipeline's encoder), the labels read off the decoded words by hand.
"""

from __future__ import annotations

import math

import pytest
import torch

import interp
from interp.cli import build_parser, model_modalities
from interp.studies.audit import audit
from interp.studies.audit.data import demo_data
from interp.studies.audit.registry import AuditOptions, plan
from interp.testing.tolerance import EPS, approx_close
from tools.demo.omni.train import encode


@pytest.fixture(scope="module")
def vlm() -> interp.VLM:
    return interp.load("demo-omni")


def _follows(words: list[str], labels: dict[str, str]) -> str | None:
    """The one source whose label the answer names (None: none or several)."""
    named = [src for src, label in labels.items() if label in words]
    return named[0] if len(named) == 1 else None


@pytest.mark.parametrize("sources", ["auto", "demo"])
def test_conflict_data_demo_on_a_model_that_takes_audio_is_the_trimodal_set(sources, tmp_path):
    assert "audio" in model_modalities("demo-omni") and "audio" not in model_modalities("demo")
    argv = ["conflict", "--model", "demo-omni", "--data", "demo", "--n", "6"]
    args = build_parser(argv).parse_args(
        [*argv, "--sources", sources, "--out", str(tmp_path / "out")]
    )
    samples = args.func.check(args).samples
    if sources == "demo":  # asked for explicitly: the two-image set
        assert not any(s.has_audio for s in samples)
    else:
        assert samples and all(s.meta["qtype"] == "trimodal" and s.has_audio for s in samples)


@pytest.mark.slow
def test_the_audit_conflict_section_on_demo_omni_reports_the_audio(vlm, tmp_path):
    samples = demo_data(28, seed=0, audio=True)  # one draw: 4 evidence types x 6 orders + 4
    chosen = {st.key: picked for st, picked, _ in plan(samples, ["conflict"])}["conflict"]
    assert chosen and all(s.has_audio and s.has_image for s in chosen)
    summary = audit(
        vlm,
        samples,
        tmp_path,
        studies=["conflict"],
        options=AuditOptions(batch_size=16),
        progress_bar=False,
    )
    part = summary["studies"]["conflict"]
    assert part["ran"], part
    numbers = part["numbers"]
    assert {"follows_image", "follows_audio", "follows_caption"} <= numbers.keys()
    page = (tmp_path / "report.html").read_text()
    assert "audio" in page and all(e in page for e in ("PercI-PropA", "PropI-PercA", "PropI-PropA"))

    # plain HF greedy answers of the items where the three labels differ
    differ = [s for s in chosen if s.meta["agreement"] == "all_differ"]
    inputs = encode(vlm.processor, differ, with_answer=False)
    with torch.no_grad():
        out = vlm.hf.generate(**inputs, max_new_tokens=4, do_sample=False)
    texts = vlm.tokenizer.batch_decode(out[:, inputs["input_ids"].shape[1] :], True)
    counts = {"image": 0, "audio": 0, "text": 0}
    for s, text in zip(differ, texts, strict=True):
        labels = {k: s.meta[f"{k}_label"] for k in counts}
        who = _follows(text.lower().split(), labels)
        if who is not None:
            counts[who] += 1
    # a headline number is printed to 3 significant digits: half a unit of the third (5e-4 for a
    # share in [0.1, 1)), plus float64's ε
    for key, source in (
        ("follows_image", "image"),
        ("follows_audio", "audio"),
        ("follows_caption", "text"),
    ):
        share = counts[source] / len(differ)
        third = 0.5 * 10 ** (math.floor(math.log10(share)) - 2) if share else 0.0
        approx_close(
            numbers[key],
            share,
            third + EPS["float64"],
            why="headline numbers keep 3 significant digits",
            msg=key,
        )
