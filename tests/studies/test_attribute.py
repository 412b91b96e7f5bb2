"""The attribute study: occlusion scores equal plain HF forwards whose region's image-token
embeddings are zeroed or swapped by a hand-written pre-hook; batches agree with single rows; maps
paint onto the image; families without a spatial layout are refused."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
import pytest
import torch

import interp
from interp.encoding import encode
from interp.studies.attribute import attention, gradient, occlusion
from interp.studies.audit.report import show
from interp.testing.checks import one_error_line
from interp.testing.reference import hf_answer_gradient, hf_target_logprobs
from interp.testing.samples import make_samples
from interp.testing.tiny import shared_tiny_vlm, tiny_vlm
from interp.testing.tolerance import assert_close, logprob_scale
from interventions import AblateImageTokens, SwapImageTokens

ARCHS = ("llava", "qwen2_vl")
KW: dict[str, Any] = {"progress_bar": False}
# the largest logprob_scale of the logits the reference forwards met: S of one log-probability
_LOGPROB_S = {"s": 1.0}


def _first_layer(vlm: interp.VLM) -> torch.nn.Module:
    return vlm.adapter.layers(vlm.hf)[0]


def _hf_logp(vlm: interp.VLM, sample: interp.Sample, answer: str, edit: Any = None) -> float:
    """log p(answer | prompt) by a plain HF forward of the sample alone; ``edit(hidden)`` rewrites
    the first decoder layer's input in place (a torch forward pre-hook)."""
    enc = encode(vlm, [sample])
    ids = vlm.tokenizer(answer, add_special_tokens=False)["input_ids"]

    def hook(module: Any, args: tuple, kwargs: dict) -> Any:
        if args:
            hidden = args[0].clone()
            edit(hidden)
            return (hidden, *args[1:]), kwargs
        hidden = kwargs["hidden_states"].clone()
        edit(hidden)
        return args, {**kwargs, "hidden_states": hidden}

    def keep_scale(module: Any, args: tuple, logits: torch.Tensor) -> None:
        used = logits[0, enc.input_ids.shape[1] - 1 :][: len(ids)]
        _LOGPROB_S["s"] = max(_LOGPROB_S["s"], logprob_scale(used.detach().float()))

    handle = (
        None
        if edit is None
        else _first_layer(vlm).register_forward_pre_hook(hook, with_kwargs=True)
    )
    head = vlm.hf.get_output_embeddings().register_forward_hook(keep_scale)
    try:
        return float(hf_target_logprobs(vlm, enc, ids).sum())
    finally:
        head.remove()
        if handle is not None:
            handle.remove()


def _hf_image_vectors(vlm: interp.VLM, sample: interp.Sample, condition: str) -> torch.Tensor:
    """The first decoder layer's input at the image tokens of ``sample`` under ``condition``."""
    enc = encode(vlm, [sample], condition)
    seen: dict[str, torch.Tensor] = {}

    def hook(module: Any, args: tuple, kwargs: dict) -> None:
        seen["h"] = (args[0] if args else kwargs["hidden_states"]).detach().clone()

    handle = _first_layer(vlm).register_forward_pre_hook(hook, with_kwargs=True)
    try:
        with torch.no_grad():
            vlm.hf(**enc.inputs)
    finally:
        handle.remove()
    return seen["h"][0, enc.image_mask[0]]


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("hide", ["ablate", "swap"])
def test_occlusion_equals_hf_with_the_regions_embeddings_hidden_by_hand(arch, hide):
    vlm = shared_tiny_vlm(arch)
    samples = make_samples(2)
    got = occlusion(vlm, samples, grid=(2, 2), hide=hide, batch_size=8, **KW)
    assert got.scores.shape == (2, 4)
    for i, s in enumerate(samples):
        base = _hf_logp(vlm, s, str(s.answer))
        # log p(a) sums T log-probabilities, a score is the difference of two such sums: fp32
        # rounding ε·S with S = T (or 2T) · logprob_scale. 2e-4 to 6e-4 here, 20-60x the bare
        # 1e-5 this held, which was one CPU's rounding on 2-layer models (docs/conventions.md)
        n_tokens = len(vlm.tokenizer(str(s.answer), add_special_tokens=False)["input_ids"])
        assert_close(got.base[i], base, scale=n_tokens * _LOGPROB_S["s"], dtype=torch.float32)
        mask = encode(vlm, [s]).image_mask[0]
        null = _hf_image_vectors(vlm, s, "null:black") if hide == "swap" else None
        image_positions = torch.nonzero(mask)[:, 0].numpy()
        for k, group in enumerate(got.groups[i]):
            assert len(group) > 0

            def edit(hidden: torch.Tensor, group=group, null=null, where=image_positions) -> None:
                if null is None:
                    hidden[0, group] = 0
                else:
                    ranks = np.searchsorted(where, group)
                    hidden[0, group] = null[ranks].to(hidden.dtype)

            want = base - _hf_logp(vlm, s, str(s.answer), edit)
            scale = 2 * n_tokens * _LOGPROB_S["s"]
            assert_close(got.scores[i, k], want, scale=scale, dtype=torch.float32, msg=f"{i}, {k}")
        # the regions partition the image tokens and decode as image tokens
        together = np.sort(np.concatenate(got.groups[i]))
        assert np.array_equal(together, image_positions)


@pytest.mark.parametrize("arch", ARCHS)
def test_batch_of_one_equals_batch_of_many(arch):
    vlm = shared_tiny_vlm(arch)
    samples = make_samples(4)  # varied image sizes: rows of a batch are padded differently
    one = occlusion(vlm, samples, grid=(2, 3), batch_size=1, **KW)
    many = occlusion(vlm, samples, grid=(2, 3), batch_size=8, **KW)
    assert_close(one.scores, many.scores, dtype=torch.float32)
    assert_close(one.base, many.base, dtype=torch.float32)
    for a, b in zip(one.groups, many.groups):
        assert all(np.array_equal(x, y) for x, y in zip(a, b))


def test_boxes_hide_the_tokens_they_overlap_and_maps_paint_onto_the_image():
    vlm = shared_tiny_vlm("llava")
    samples = make_samples(2)
    w, h = samples[0].image.size
    boxes = [(0, 0, w / 2, h), (w / 2, 0, w, h), (0, 0, w, h)]
    got = occlusion(vlm, samples[:1], boxes=boxes, **KW)
    reg = interp.token_regions(vlm, samples[0])
    for k, box in enumerate(boxes):
        assert np.array_equal(np.sort(got.groups[0][k]), np.sort(reg.in_box(box)))
    frame = got.to_frame()
    assert len(frame) == 3 and list(frame["tokens"]) == [len(g) for g in got.groups[0]]
    # the heatmap: each pixel the mean score of the regions whose tokens cover it
    values = got.token_values(0)
    heat = got.heatmap(0)
    assert heat.shape == (h, w)
    np.testing.assert_allclose(heat, reg.to_pixels(values), equal_nan=True)
    left = np.mean([got.scores[0, 0], got.scores[0, 2]])
    inside = reg.positions[reg.spatial & (reg.boxes[:, 2] <= w / 2)]
    assert np.allclose(values[np.isin(reg.positions, inside)], left)


def test_greedy_answers_are_the_models_own():
    vlm = shared_tiny_vlm("qwen2_vl")
    samples = make_samples(2)
    got = occlusion(vlm, samples, grid=(1, 2), answers="greedy", max_new_tokens=3, **KW)
    gen = interp.generate(vlm, samples, max_new_tokens=3, progress_bar=False)
    assert got.answers == gen.texts


@pytest.mark.parametrize("arch", ["instructblip", "mllama"])
def test_families_without_a_spatial_layout_are_refused(arch):
    vlm = shared_tiny_vlm(arch)
    with pytest.raises(interp.NoSpatialLayoutError, match=arch):
        occlusion(vlm, make_samples(1), **KW)


def test_token_edits_refuse_bad_input():
    vlm = shared_tiny_vlm("llava")
    with pytest.raises(interp.InterventionError, match="non-empty mapping"):
        AblateImageTokens({})
    with pytest.raises(interp.InterventionError, match="negative"):
        SwapImageTokens({"s0": [-1]})
    with pytest.raises(interp.InterventionError, match="image tokens"):
        interp.score(vlm, make_samples(1), edits=[AblateImageTokens({"s0": [10**6]})], **KW)
    with pytest.raises(interp.InterventionError, match="cross-attention"):
        AblateImageTokens({"s0": [0]}).check(shared_tiny_vlm("mllama"))
    with pytest.raises(interp.RegionError, match="x1 > x0"):
        occlusion(vlm, make_samples(1), boxes=[(5, 0, 1, 4)], **KW)


# -- the command (its entry point exists once installed: registered here by hand) ---------------


@pytest.fixture
def attribute_command(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib.metadata import EntryPoint

    import interp.cli

    ep = EntryPoint(
        "attribute", "interp.studies.attribute.cli:register", interp.cli.ENTRY_POINT_GROUP
    )
    studies = [e for e in interp.cli._studies() if e.name != "attribute"]
    monkeypatch.setattr(interp.cli, "_studies", lambda: [*studies, ep])


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    from interp.cli import main

    code = main(["attribute", *argv])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--grid", "4"], "--grid takes <rows>x<cols>"),
        (["--grid", "0x3"], "rows and cols >= 1"),
        (["--method", "shap"], "not available yet; available: occlusion, gradient, attention"),
        (["--method", "gradient", "--layer", "99"], "--layer 99 is outside"),
        (["--hide", "swap", "--source", "blind"], "carries no image"),
    ],
)
def test_command_refuses_bad_options_before_compute(
    attribute_command, no_model, tmp_path, capsys, options, message
):
    code, err = _run(
        ["--model", "demo", "--data", "demo", "--out", str(tmp_path / "o"), *options], capsys
    )
    assert code == 2 and message in one_error_line(err)
    assert not (tmp_path / "o").exists()


def test_command_refuses_a_family_without_a_spatial_layout(
    attribute_command, request, tmp_path, capsys
):
    folder = tmp_path / "model"
    shared_tiny_vlm("instructblip").hf.config.save_pretrained(folder)
    request.getfixturevalue("no_model")  # from here on, loading the model fails the test
    code, err = _run(
        ["--model", str(folder), "--data", "demo", "--out", str(tmp_path / "o")], capsys
    )
    assert code == 2 and "NoSpatialLayoutError" in one_error_line(err)


def test_command_writes_maps_and_the_object_mass_table(attribute_command, tmp_path, capsys):
    out = tmp_path / "o"
    argv = ["--model", "demo", "--data", "demo", "--n", "8", "--grid", "2x2", "--out", str(out)]
    code, err = _run([*argv, "--no-progress", "--plots", "1"], capsys)
    assert code == 0, err
    frame = pd.read_csv(out / "occlusion.csv")
    assert len(frame) == 8 * 4 and set(frame["region"]) == {0, 1, 2, 3}
    assert (out / "maps.png").exists() and (out / "map_0.png").exists()
    shares = pd.read_csv(out / "object_shares.csv")
    assert shares["inside"].between(0, 1).all()


def test_audit_section_reports_the_object_mass():
    import interp.studies.attribute.audit as audit
    from interp.data_spec import load_data
    from interp.studies.audit.registry import AuditOptions

    vlm = interp.load("demo")
    samples = load_data("demo", 40, 0, default_qtypes=("color",), columns=None)
    chosen = audit.STUDY.select(samples)
    assert 4 <= len(chosen.samples) <= audit.LIMIT
    assert audit.STUDY.select(make_samples(3)).reason  # no object boxes: skipped, with a reason
    picked = list(chosen.samples)
    assert sum(bool(s.meta["counterfactual"]) for s in picked) >= len(picked) // 2 - 1
    sec = audit.STUDY.section(vlm, picked, AuditOptions())
    assert 0 <= sec.numbers["inside"] <= 1 and 0 <= sec.numbers["random"] <= 1
    # the groups, from the model's own greedy answers compared with the world's labels by hand
    said = interp.generate(vlm, picked, max_new_tokens=8, progress_bar=False).texts
    words = [t.strip().lower().split()[0] if t.strip() else "" for t in said]
    grounded = [w == s.answer for w, s in zip(words, picked)]
    prior = [
        bool(s.meta["counterfactual"]) and w == s.meta["prior_answer"]
        for w, s in zip(words, picked)
    ]
    assert sec.numbers["n_grounded"] == sum(grounded) > 0
    assert sec.numbers["n_prior"] == sum(prior) > 0  # the interleaved selection finds some
    for key in ("inside_grounded", "inside_prior"):
        assert 0 <= sec.numbers[key] <= 1 and show(sec.numbers[key]) in sec.verdict
    assert -1 <= sec.numbers["gradient_agreement"] <= 1  # the demo runs SDPA: weights recomputed
    assert -1 <= sec.numbers["attention_agreement"] <= 1
    captions = [c for c, _ in sec.figures]
    assert sum(c.startswith("Grounded answer") for c in captions) == min(2, sum(grounded))
    assert sum(c.startswith("Prior-driven answer") for c in captions) == min(2, sum(prior))
    (caption, html) = sec.tables[0]
    assert "gradient" in html and "occlusion" in html and "prior" in html
    # samples without the world's labels: no groups, and the section says why
    blind = [
        replace(s, meta={k: v for k, v in s.meta.items() if k != "counterfactual"})
        for s in picked[:4]
    ]
    bare = audit.STUDY.section(vlm, blind, AuditOptions())
    assert "no labels" in bare.reason and bare.numbers["n_prior"] == 0
    assert not any(c.startswith(("Grounded", "Prior")) for c, _ in bare.figures)


# -- attention ---------------------------------------------------------------------------------


@pytest.mark.parametrize("arch", ARCHS)
def test_attention_equals_hf_output_attentions_summed_over_the_region(arch):
    vlm = shared_tiny_vlm(arch)
    samples = make_samples(3)  # batched with padding
    got = attention(vlm, samples, grid=(2, 2), batch_size=3, **KW)
    assert got.per_head is not None and got.per_head.shape[:2] == (3, 4)
    for i, s in enumerate(samples):
        enc = encode(vlm, [s])
        with torch.no_grad():
            out = vlm.hf(**enc.inputs, output_attentions=True)
        last = torch.stack([a[0, :, -1] for a in out.attentions]).double()  # [L, H, seq]
        for k, group in enumerate(got.groups[i]):
            want = last[:, :, torch.as_tensor(group)].sum(-1).numpy()
            assert_close(got.per_head[i, k], want, dtype=torch.float32)
            assert_close(got.scores[i, k], want.mean(), dtype=torch.float32)  # S = 1: mass <= 1


def test_attention_refuses_flash_attention_before_compute():
    vlm = tiny_vlm("llava", attn_implementation="sdpa")  # SDPA: eager's weights recomputed
    vlm.hf.config._attn_implementation = "flash_attention_2"
    with pytest.raises(interp.InterpError, match="attn_implementation='sdpa'"):
        attention(vlm, make_samples(1), **KW)


@pytest.mark.parametrize("method", ["attention", "gradient"])
def test_command_other_methods_write_their_table(attribute_command, tmp_path, capsys, method):
    out = tmp_path / "o"
    argv = ["--model", "demo", "--data", "demo", "--n", "4", "--grid", "2x2", "--out", str(out)]
    code, err = _run([*argv, "--method", method, "--no-progress", "--plots", "0"], capsys)
    assert code == 0, err
    frame = pd.read_csv(out / f"{method}.csv")
    assert len(frame) == 16 and frame["score"].notna().all()
    if method == "attention":
        assert frame["score"].between(0, 1).all()


def test_plot_attribution_puts_methods_side_by_side_with_the_question_and_answer():
    import matplotlib

    matplotlib.use("Agg")
    from interp.studies.attribute import plot_attribution, plot_attribution_grid

    vlm = shared_tiny_vlm("llava")
    samples = make_samples(3)
    occ = occlusion(vlm, samples, grid=(2, 2), **KW)
    att = attention(vlm, samples, grid=(2, 2), **KW)
    fig = plot_attribution([occ, att], samples[1])
    panels = [ax for ax in fig.axes if ax.get_title() in ("occlusion", "attention")]
    assert len(panels) == 2
    title = fig._suptitle.get_text()
    assert samples[1].question in title and str(samples[1].answer) in title
    # one shared scale: every heatmap layer has the same limits
    limits = {ax.images[-1].get_clim() for ax in panels}
    assert len(limits) == 1
    grid = plot_attribution_grid(occ, samples, cols=2)
    assert sum(1 for ax in grid.axes if ax.images) == 3
    # one colour bar for the shared scale, in the method's unit; n in the caption
    bars = [ax for ax in grid.axes if ax.get_label() == "<colorbar>"]
    assert len(bars) == 1 and bars[0].get_ylabel() == "Δ log p(answer)"
    assert grid._suptitle.get_text() == "occlusion maps (n = 3 of 3 samples)"
    # a long question is wrapped to fit its panel, not cut mid-word
    long = replace(
        occ, questions=["Which colour is the small object to the left of the large red cube?"] * 3
    )
    wrapped = plot_attribution_grid(long, samples, cols=2)
    wrapped.canvas.draw()
    renderer = wrapped.canvas.get_renderer()
    panels = [ax for ax in wrapped.axes if ax.images]
    for ax in panels:
        title = ax.title.get_text()
        assert title.startswith("Which colour is the small\nobject to the left of the")
        assert ax.title.get_window_extent(renderer).width <= ax.get_window_extent(renderer).width


# -- gradient (attribution patching) -------------------------------------------------------------


@pytest.mark.parametrize("arch", ARCHS)
def test_gradient_scores_equal_a_hand_autograd_computation(arch):
    vlm = shared_tiny_vlm(arch)
    samples = make_samples(2)
    layer = 1
    got = gradient(vlm, samples, layer=layer, grid=(2, 2), **KW)
    for i, s in enumerate(samples):
        hidden, grad, _ = hf_answer_gradient(vlm, s, layer)
        null = encode(vlm, [s], "null:black")
        with torch.no_grad():
            h_null = vlm.hf(**null.inputs, output_hidden_states=True).hidden_states[layer][0]
        for k, group in enumerate(got.groups[i]):
            where = torch.as_tensor(group)
            want = (grad[where] * (hidden[where] - h_null[where])).sum()
            assert_close(got.scores[i, k], float(want), dtype=torch.float32)


def test_object_box_is_the_cell_holding_the_drawn_object():
    from interp.studies.attribute import box_mass, object_box

    image = make_samples(1)[0].image.resize((64, 64))
    meta = {"entity": "heart", "objects": [{"kind": "heart", "cell": "bottom right"}]}
    sample = interp.Sample(question="what colour is the heart?", image=image, meta=meta)
    assert object_box(sample) == (32.0, 32.0, 64.0, 64.0)  # demo images are 32 px: scaled x2
    two = interp.Sample(question="q", image=[image, image], meta=meta)
    assert object_box(two) is None  # several images: no single box
    heat = np.zeros((4, 4))
    heat[2:, 2:] = 1.0
    heat[0, 0] = -5.0  # negative mass is not counted
    heat[0, 1] = 1.0
    assert box_mass(heat, (2, 2, 4, 4)) == pytest.approx(4 / 5)
