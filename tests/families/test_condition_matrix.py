"""Every supported image type × every kind of image condition: it runs at parity with plain Hugging
Face, or it is refused with the library's typed error before any forward (issue #45 item 2).

Types: the supported rows of ``docs/families.md`` that take images (read back by
:func:`tools.zoo.documented_rows`; ``tests/families/test_zoo.py`` keeps the file equal to
the sweep), each built tiny once, as the zoo builds it: the tiny builder of a family the tiny-model
tests check (a full omni checkpoint loads its thinker, so it runs the thinker's), else
:func:`~interp.testing.builders.inferred.tiny_inferred` (the default config shrunk, the borrowed
processor of its pattern, renamed outputs as its stock processor names them: Video-LLaVA's
``pixel_values_images``).

Kinds: ``full``, ``blind``, the four ``null:*``, ``swap:next``, ``swap:<id>``, ``distort:500``
(also as VCD's amateur), ``SwapImage("distort:500")`` and ``Patch("distort:500", 1)`` (edits whose
source edits pixels), and regions (``token_regions``, and the region edits ``SwapImageTokens`` and
``AblateImageTokens`` by token rank).

References: plain HF forwards of the same encoded inputs (``hf_last_states``); each condition's
input made by hand (black, white, mean-coloured and noise PIL images of each image's size, the
swapped sample's image, VCD's noise drawn by hand from its seed and schedule computed here in
numpy) encoded as ``full``; the row alone against the row in the batch. A refusal must be the typed
error the adapter's facts call for (``LayoutNotMappedError`` for an unverified layout,
``NoSpatialLayoutError`` for none, ``InterventionError`` for token edits under cross-attention),
and no module of the model may have run: a crash of any other type fails.
"""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import Iterator
from functools import cache
from typing import Any

import numpy as np
import pytest
import torch
from PIL import Image

import interp
from interp.adapters.base import get_path, module_path
from interp.encoding import Encoding, encode
from interp.testing import build_tiny
from interp.testing.builders.inferred import ParityError, tiny_inferred
from interp.testing.reference import hf_forward, hf_hidden_states, hf_last_states
from interp.testing.samples import make_samples
from interp.testing.tolerance import assert_close
from interventions import AblateImageTokens, Patch, SwapImage, SwapImageTokens
from interventions.decoding import vcd
from tools.zoo import documented_rows

ROWS = {
    r.model_type: r
    for r in documented_rows()
    if r.supported and "image" in r.modalities.split(", ")
}
TYPES = sorted(ROWS)
# a full omni checkpoint loads its thinker (tests/families/test_omni_checkpoints.py)
THINKERS = {"qwen2_5_omni": "qwen2_5_omni_thinker", "qwen3_omni_moe": "qwen3_omni_moe_thinker"}
SAMPLES = make_samples(2)  # s0: 32 x 32, s1: 48 x 40
PLAIN = (
    "full",
    "blind",
    "null:black",
    "null:white",
    "null:noise",
    "null:mean",
    "swap:next",
    "swap:s0",
)
STEP = 500


@cache
def _built(model_type: str) -> Any:
    """The type's tiny :class:`~interp.VLM`, or why the zoo cannot build it (a str)."""
    row = ROWS[model_type]
    if row.parity == "tested":
        model, processor = build_tiny(THINKERS.get(model_type, model_type))
    else:
        try:
            model, processor, _ = tiny_inferred(model_type)
        except ParityError as err:
            return f"the zoo's tiny {model_type} takes no image: {err} (docs/families.md)"
    return interp.load(model, processor)


def test_the_matrix_covers_every_supported_image_type():
    """Every supported image type runs here but those whose tiny model takes no image, which the
    zoo's table already marks as not forward tested (a borrowed processor's inputs its feature
    site does not take): a build that regresses fails here instead of skipping quietly."""
    assert len(TYPES) >= 70, len(TYPES)
    unbuilt = {t: _built(t) for t in TYPES if isinstance(_built(t), str)}
    for t in unbuilt:
        assert not ROWS[t].parity.startswith(("tested", "forward tested")), (t, unbuilt[t])
    assert len(TYPES) - len(unbuilt) >= 70, sorted(unbuilt)


def vlm_of(model_type: str) -> Any:
    built = _built(model_type)
    if isinstance(built, str):
        pytest.skip(built)
    return built


def pixels_refused(vlm: Any, runs: list[Any]) -> bool:
    """Whether pixel-space conditions stay refused on ``vlm``'s verified layout (the check at load
    found no one image pixel tensor to edit: DeepSeek-VL hybrid's two); then each of ``runs``
    is refused, naming the tensors, before the text decoder runs (the zoo's borrowed processor
    runs the vision tower to count placeholders)."""
    if "pixel-space conditions stay refused" not in vlm.adapter.layout_checked:
        return False
    decoder = module_path(vlm.hf, vlm.adapter.layers(vlm.hf)[0]).rsplit(".", 2)[0]
    for run in runs:
        error = interp.LayoutNotMappedError
        refused_before_compute(vlm, error, run, "several image pixel tensors", under=decoder)
    return True


@cache
def _full(model_type: str) -> tuple[torch.Tensor, Encoding]:
    vlm = vlm_of(model_type)
    return interp.residual_stream(vlm, SAMPLES, progress_bar=False), encode(vlm, SAMPLES, "full")


@contextlib.contextmanager
def forwards(vlm: Any, under: str = "") -> Iterator[list[str]]:
    """The names of the model's modules (those under ``under``) that ran inside the block."""
    ran: list[str] = []
    hooks = [
        m.register_forward_pre_hook(lambda *_a, n=name: ran.append(n))
        for name, m in vlm.hf.named_modules()
        if name.startswith(under)
    ]
    try:
        yield ran
    finally:
        for h in hooks:
            h.remove()


def refused_before_compute(
    vlm: Any, error: type[Exception], fn: Any, match: str, under: str = ""
) -> None:
    with forwards(vlm, under) as ran, pytest.raises(error, match=match):
        fn()
    assert not ran, f"refused after {ran[:3]} ran"


def reference(vlm: Any, enc: Encoding) -> torch.Tensor:
    """A plain HF forward's ``[rows, L, d]`` last-token states of ``enc``; a batch without images
    of a family whose HF forward needs one (InstructBLIP) runs its HF language model alone, and
    where HF skips a layer without images (Mllama's cross-attention layers: no hidden state) the
    state below stands at its index (docs/conventions.md)."""
    skipped = vlm.adapter.skipped_layers(vlm.hf, enc.has_image)
    if skipped:
        hidden = list(hf_hidden_states(hf_forward(vlm, enc, output_hidden_states=True)))
        states = [hidden.pop(0)]
        for layer in range(vlm.n_layers - 1):
            states.append(states[-1] if layer in skipped else hidden.pop(0))
        rows = torch.arange(len(enc))
        return torch.stack([h[rows, enc.last_index] for h in states], 1)
    if vlm.adapter.text_only_module is None or any(enc.has_image):
        return hf_last_states(vlm, enc)
    lm = get_path(vlm.hf, vlm.adapter.text_only_module)
    with torch.no_grad():
        out = lm(
            input_ids=enc.input_ids, attention_mask=enc.attention_mask, output_hidden_states=True
        )
    rows = torch.arange(len(enc))
    return torch.stack([h[rows, enc.last_index] for h in out.hidden_states[: vlm.n_layers]], 1)


def reference_of(vlm: Any, condition: str) -> torch.Tensor:
    """:func:`reference` of :data:`SAMPLES` under ``condition`` in one batch, or row by row where
    the family's forward depends on the batch and the library runs each row alone (HunYuan-VL)."""
    if not vlm.adapter.batch_dependent:
        return reference(vlm, encode(vlm, SAMPLES, condition))
    return torch.cat(
        [reference(vlm, encode(vlm, [s], condition, all_samples=SAMPLES)) for s in SAMPLES]
    )


def _mean_colour(vlm: Any) -> tuple[int, ...]:
    ip = getattr(vlm.processor, "image_processor", vlm.processor)
    mean = getattr(ip, "image_mean", None) or (0.5, 0.5, 0.5)
    mean = (mean,) * 3 if isinstance(mean, (int, float)) else mean
    return tuple(int(round(255 * float(m))) for m in mean)


def by_hand(vlm: Any, condition: str) -> list[interp.Sample] | None:
    """The samples as ``condition`` should present them, made here (None: nothing to make)."""
    images = [s.load_images()[0] for s in SAMPLES]

    def plain(colour: tuple[int, ...]) -> list[Image.Image]:
        return [Image.new("RGB", im.size, colour) for im in images]

    def noise(sample: interp.Sample, im: Image.Image) -> Image.Image:
        rng = np.random.default_rng(zlib.crc32(str(sample.id).encode()))
        pixels = rng.integers(0, 256, size=(im.size[1], im.size[0], 3), dtype=np.uint8)
        return Image.fromarray(pixels, "RGB")

    new = {
        "null:black": lambda: plain((0, 0, 0)),
        "null:white": lambda: plain((255, 255, 255)),
        "null:mean": lambda: plain(_mean_colour(vlm)),
        "null:noise": lambda: [noise(s, im) for s, im in zip(SAMPLES, images)],
        "swap:next": lambda: images[1:] + images[:1],
        "swap:s0": lambda: [images[0]] * len(images),
    }.get(condition)
    if new is None:
        return None
    return [
        interp.Sample(s.question, image=im, answer=s.answer, id=s.id)
        for s, im in zip(SAMPLES, new())
    ]


def same_inputs(got: Encoding, want: Encoding) -> None:
    assert sorted(got.inputs) == sorted(want.inputs)
    for key, value in want.inputs.items():
        if isinstance(value, torch.Tensor):
            assert torch.equal(got.inputs[key], value), key


def floating(enc: Encoding) -> dict[str, torch.Tensor]:
    return {
        k: v for k, v in enc.inputs.items() if isinstance(v, torch.Tensor) and v.is_floating_point()
    }


@pytest.mark.parametrize("condition", PLAIN)
@pytest.mark.parametrize("model_type", TYPES)
def test_an_image_condition_runs_at_parity(model_type, condition):
    """No layout needed: every supported type runs these, reading what a plain HF forward of the
    condition's inputs reads, and those inputs are the ones made by hand."""
    vlm = vlm_of(model_type)
    full_states, full = _full(model_type)
    with forwards(vlm) as ran:
        states = interp.residual_stream(vlm, SAMPLES, condition, progress_bar=False)
    assert ran  # the hooks see a forward (so an empty list after a refusal means none ran)
    assert torch.isfinite(states).all()
    enc = encode(vlm, SAMPLES, condition)
    L = vlm.n_layers
    assert_close(states[:, :L], reference_of(vlm, condition), msg=f"{model_type} {condition}")
    if condition == "blind":
        assert not enc.image_mask.any() and not any(enc.has_image)
        return
    assert enc.image_mask.any(1).all()
    hand = by_hand(vlm, condition)
    if hand is not None:
        same_inputs(enc, encode(vlm, hand, "full"))
    if condition.startswith("null:"):  # the image's pixels changed, the prompt did not
        old, new = floating(full), floating(enc)
        assert any(not torch.equal(old[k], new[k]) for k in old), "null image encodes as full"
        assert torch.equal(enc.input_ids, full.input_ids)
        assert not torch.equal(states, full_states)


def _abar(step: int) -> float:
    """VCD's ᾱ_t: betas = sigmoid(linspace(-6, 6, 1000)) · (5e-3 − 1e-5) + 1e-5 (in numpy)."""
    x = np.linspace(-6, 6, 1000)
    betas = 1 / (1 + np.exp(-x)) * (5e-3 - 1e-5) + 1e-5
    return float(np.cumprod(1 - betas)[step])


def distorted_by_hand(clean: torch.Tensor, sample_id: str) -> torch.Tensor:
    """VCD's forward diffusion of a one-image row's pixels: every sub-tensor over the leading
    dims (an image, tile, patch or padding slot) that is not all zero (padding) takes
    ``sqrt(ᾱ)·x + sqrt(1 − ᾱ)·ε``, ε drawn in memory order from the seed of the sample's first
    image (CRC-32 of ``"<id>:distort:0"``)."""
    lead = max(1, clean.dim() - 3)
    real = (clean.flatten(lead) != 0).any(-1)
    gen = torch.Generator().manual_seed(zlib.crc32(f"{sample_id}:distort:0".encode()))
    chosen = clean[real]
    eps = torch.randn(chosen.numel(), generator=gen).reshape(chosen.shape)
    abar = _abar(STEP)
    out = clean.clone()
    out[real] = float(np.sqrt(abar)) * chosen + float(np.sqrt(1 - abar)) * eps
    return out


@pytest.mark.parametrize("model_type", TYPES)
def test_distort_runs_at_parity_or_is_refused_before_compute(model_type):
    vlm = vlm_of(model_type)
    cond = f"distort:{STEP}"
    runs = [
        lambda: interp.residual_stream(vlm, SAMPLES, cond, progress_bar=False),
        lambda: interp.generate(
            vlm, SAMPLES, max_new_tokens=1, decoding=vcd(STEP), progress_bar=False
        ),
        lambda: encode(vlm, SAMPLES, cond),
    ]
    if not vlm.adapter.layout_verified:
        name = vlm.adapter.name.split(" ")[0]
        for run in runs:
            refused_before_compute(vlm, interp.LayoutNotMappedError, run, f"{name}.*{cond}")
        return
    if pixels_refused(vlm, runs):
        return
    states = interp.residual_stream(vlm, SAMPLES, cond, progress_bar=False)
    assert torch.isfinite(states).all()
    enc = encode(vlm, SAMPLES, cond)
    assert_close(states[:, : vlm.n_layers], reference_of(vlm, cond))
    full_states, full = _full(model_type)
    key = vlm.adapter.pixel_key(enc.inputs)
    for k, value in full.inputs.items():  # the image pixels alone change
        assert torch.equal(enc.inputs[k], value) is (k != key), k
    for s in SAMPLES:  # each row alone: the noise by hand
        clean = encode(vlm, [s], "full").inputs[key]
        got = encode(vlm, [s], cond).inputs[key]
        assert_close(got, distorted_by_hand(clean, str(s.id)), msg=f"{model_type} {s.id}")
    alone = torch.cat([interp.residual_stream(vlm, [s], cond, progress_bar=False) for s in SAMPLES])
    assert_close(states, alone, msg="distorted rows alone against the batch's")
    assert not torch.equal(states, full_states)


@pytest.mark.parametrize("model_type", TYPES)
def test_edits_from_distorted_pixels_run_or_are_refused_before_compute(model_type):
    """``SwapImage`` and ``Patch`` encode their source condition inside the run: a pixel-space
    source is checked with the edit, before the first batch. Where it runs, the swap equals the
    distorted input's reads and the patched layer holds the distorted run's state."""
    vlm = vlm_of(model_type)
    cond = f"distort:{STEP}"
    swap, patch = SwapImage(cond), Patch(cond, layers=1)

    def run(edit: Any) -> torch.Tensor:
        return interp.residual_stream(vlm, SAMPLES, edits=[edit], progress_bar=False)

    if not vlm.adapter.layout_verified:
        for edit, name in ((swap, "SwapImage"), (patch, "Patch")):
            match = f"{name}'s source \\({cond}\\)"
            refused_before_compute(vlm, interp.LayoutNotMappedError, lambda e=edit: run(e), match)
        return
    if pixels_refused(vlm, [lambda: run(swap), lambda: run(patch)]):
        return
    want = interp.residual_stream(vlm, SAMPLES, cond, progress_bar=False)
    L = vlm.n_layers
    assert_close(run(swap)[:, :L], want[:, :L], msg=f"{model_type}: swap against distorted input")
    assert_close(run(patch)[:, 1], want[:, 1], msg=f"{model_type}: the patched layer")


@pytest.mark.parametrize("model_type", TYPES)
def test_regions_run_or_are_refused_before_compute(model_type):
    """``token_regions`` needs a verified layout with a place in the image; the region edit by
    token rank needs image tokens in the prompt (token fusion), not the layout."""
    vlm = vlm_of(model_type)
    full_states, full = _full(model_type)
    adapter = vlm.adapter

    def regions() -> Any:
        return interp.token_regions(vlm, SAMPLES)

    name = adapter.name.split(" ")[0]
    if not adapter.layout_verified:
        refused_before_compute(vlm, interp.LayoutNotMappedError, regions, name)
    elif adapter.no_layout:
        refused_before_compute(vlm, interp.NoSpatialLayoutError, regions, name)
    else:
        for row, maps in enumerate(regions()):
            image = maps.positions[[v != "separator" for v in maps.views]]
            assert image.tolist() == full.image_mask[row].nonzero().flatten().tolist()
    counts = full.image_mask.sum(1).tolist()
    ranks = {"s0": range(max(1, counts[0] // 2))}
    edits = (SwapImageTokens(ranks), AblateImageTokens(ranks))
    for edit in edits:

        def run(e: Any = edit) -> torch.Tensor:
            return interp.residual_stream(vlm, SAMPLES, edits=[e], progress_bar=False)

        if adapter.fusion == "cross_attention":
            refused_before_compute(vlm, interp.InterventionError, run, "cross-attention")
            continue
        edited = run()
        assert torch.isfinite(edited).all()
        name = type(edit).__name__
        assert_close(edited[1], full_states[1], msg=f"{name}: the row of a sample not named")
    if adapter.fusion == "cross_attention":
        return
    every = SwapImageTokens({str(s.id): range(int(c)) for s, c in zip(SAMPLES, counts)})
    swapped = interp.residual_stream(vlm, SAMPLES, edits=[every], progress_bar=False)
    black = interp.residual_stream(vlm, SAMPLES, "null:black", progress_bar=False)
    L = vlm.n_layers
    assert_close(swapped[:, :L], black[:, :L], msg=f"{model_type}: every token swapped")


# --- the image pixels under another name, or under two --------------------------------------


def _declared(model_type: str) -> Any:
    """``model_type``'s tiny model (its own module) under its entry with the layout declared
    verified, as an entry checked by a layout test would declare it: the pixel path then runs."""
    model, processor, _ = tiny_inferred(model_type)
    adapter = interp.adapter_for(model.config)
    name = f"{model_type} (layout declared)"
    return interp.load(model, processor, adapter=adapter.replace(name=name, layout_verified=True))


def test_video_llavas_pixels_are_edited_under_their_own_name():
    """Video-LLaVA's image processor returns ``pixel_values_images`` (the crash of issue #45:
    ``KeyError: 'pixel_values'``). With its layout declared, ``distort`` edits that tensor: the
    reads equal a plain HF forward of the full inputs with those pixels distorted by hand."""
    vlm = _declared("video_llava")
    cond = f"distort:{STEP}"
    full = encode(vlm, SAMPLES, "full")
    assert "pixel_values_images" in full.inputs and "pixel_values" not in full.inputs
    assert vlm.adapter.pixel_key(full.inputs) == "pixel_values_images"
    clean = full.inputs["pixel_values_images"]  # one image per row, in row order
    hand = dict(full.inputs)
    hand["pixel_values_images"] = torch.cat(
        [distorted_by_hand(clean[i : i + 1], str(s.id)) for i, s in enumerate(SAMPLES)]
    )
    states = interp.residual_stream(vlm, SAMPLES, cond, progress_bar=False)
    by_hand_enc = Encoding(**{**full.__dict__, "inputs": hand})
    assert_close(states[:, : vlm.n_layers], hf_last_states(vlm, by_hand_enc))
    assert_close(
        encode(vlm, SAMPLES, cond).inputs["pixel_values_images"], hand["pixel_values_images"]
    )
    plain = interp.residual_stream(vlm, SAMPLES, progress_bar=False)
    assert not torch.equal(states, plain)


def test_two_image_pixel_tensors_are_refused_before_compute():
    """DeepSeek-VL-Hybrid's processor returns ``pixel_values`` and ``high_res_pixel_values``:
    distorting one alone would be a wrong input, so even with its layout declared the library
    refuses, naming both, once the processor has run and before the model's forward. (The
    outputs decide it, so the processor runs first; the zoo's borrowed processor counts each
    image's placeholders on the vision tower, a stock one runs no module: the decoder is
    watched here.)"""
    vlm = _declared("deepseek_vl_hybrid")
    decoder = module_path(vlm.hf, vlm.adapter.layers(vlm.hf)[0]).rsplit(".", 2)[0]

    def run() -> Any:
        return interp.residual_stream(vlm, SAMPLES, f"distort:{STEP}", progress_bar=False)

    match = r"several image pixel tensors \(\['pixel_values', 'high_res_pixel_values'\]\)"
    refused_before_compute(vlm, interp.LayoutNotMappedError, run, match, under=decoder)


def test_the_image_pixel_key_is_found_or_named():
    from interp.adapters.pixels import image_pixels_key

    pixels, mask = torch.zeros(1, 3, 2, 2), torch.ones(1, 2, 2, dtype=torch.bool)
    videos = torch.zeros(1, 2, 3, 2, 2)
    found = {"pixel_values_images": pixels, "pixel_values_videos": videos, "pixel_mask": mask}
    assert image_pixels_key(found, "x") == "pixel_values_images"
    assert image_pixels_key({"my_pixels": pixels}, "x", "my_pixels") == "my_pixels"
    with pytest.raises(interp.LayoutNotMappedError, match="x: its entry names 'nope'"):
        image_pixels_key(found, "x", "nope")
    with pytest.raises(interp.LayoutNotMappedError, match="hold no image pixel tensor"):
        image_pixels_key({"pixel_values_videos": videos, "pixel_values": [pixels]}, "x")
