"""Tiny BLIP-2, Fuyu and Ovis2 (issue #45 item 4): written entries, built around their stock
processors (``Blip2Processor``, ...) offline, at parity with plain Hugging Face.

References: a plain HF forward's ``output_hidden_states`` of the same encoded inputs (the causal LM
alone for a text-only batch of a family whose full forward needs pixels), ``model.generate``, a
teacher-forced forward's log-softmax, a forward hook on the feature site and on the decoder's
input, and the processor's own token ids; then the zoo's eight checks (Steer against a torch hook,
SwapImage against the black image's forward, batch invariance and contrastive decoding) on the
same builders.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from transformers import AutoConfig, Blip2Config, T5Config

import interp
from interp.adapters import ADAPTERS
from interp.adapters.base import get_path
from interp.encoding import encode
from interp.testing import build_tiny
from interp.testing.reference import hf_forward, hf_last_states, hf_target_logprobs
from interp.testing.samples import make_samples
from interp.testing.tiny import FAMILY_ARCHITECTURES
from interp.testing.tolerance import assert_close
from interp.testing.zoo_parity import check_built, text_check_built

PROCESSORS = {"blip-2": "Blip2Processor", "fuyu": "FuyuProcessor", "ovis2": "Ovis2Processor"}
TEXT_ROWS = [
    interp.Sample("what colour is a banana ?", id="t0"),
    interp.Sample("how many legs ?", id="t1"),
]
TARGETS = ["yellow banana", "two"]


@pytest.fixture(scope="module", params=FAMILY_ARCHITECTURES)
def vlm(request: pytest.FixtureRequest) -> interp.VLM:
    torch.set_num_threads(1)
    return interp.load(*build_tiny(request.param))


def _rows(kind: str) -> list[interp.Sample]:
    return make_samples(2) if kind == "image" else TEXT_ROWS


def test_each_family_is_a_written_entry_around_its_stock_processor():
    for arch in FAMILY_ARCHITECTURES:
        model, processor = build_tiny(arch)
        assert type(processor).__name__ == PROCESSORS[arch]
        entry = interp.adapter_for(model)
        assert entry is ADAPTERS[model.config.model_type] and not entry.inferred


@pytest.mark.parametrize("kind", ["image", "text"])
def test_reads_equal_hf_hidden_states(vlm, kind):
    rows = _rows(kind)
    states = interp.residual_stream(vlm, rows, progress_bar=False)
    enc = encode(vlm, rows, "full")
    assert list(enc.has_image) == [kind == "image"] * len(rows)
    want = hf_last_states(vlm, enc)
    assert_close(states[:, : vlm.n_layers], want, dtype=torch.float32)
    if kind == "image":  # the image reaches the last token
        black = interp.residual_stream(vlm, rows, "null:black", progress_bar=False)
        assert (black - states).abs().max() > 1e-3


@pytest.mark.parametrize("kind", ["image", "text"])
def test_generate_equals_model_generate(vlm, kind):
    rows = _rows(kind)
    got = interp.generate(vlm, rows, max_new_tokens=4, progress_bar=False)
    enc = encode(vlm, rows, "full")
    inputs = dict(enc.inputs)  # no forward_inputs fix-up: generate derives positions itself
    model = vlm.hf
    if kind == "text" and vlm.adapter.text_only_module is not None:
        model = get_path(vlm.hf, vlm.adapter.text_only_module)
        inputs = {k: inputs[k] for k in ("input_ids", "attention_mask")}
    with torch.no_grad():
        ids = model.generate(**inputs, max_new_tokens=4, do_sample=False)
    n = inputs["input_ids"].shape[1]
    want = [row[n:].tolist()[: len(g)] for row, g in zip(ids, got.token_ids)]
    assert got.token_ids == want
    assert all(len(g) > 0 for g in got.token_ids)


@pytest.mark.parametrize("kind", ["image", "text"])
def test_score_equals_a_teacher_forced_forward(vlm, kind):
    rows = _rows(kind)
    scores = interp.score(vlm, rows, TARGETS, progress_bar=False)
    for i, (row, target) in enumerate(zip(rows, TARGETS)):
        tgt = vlm.tokenizer(target, add_special_tokens=False)["input_ids"]
        want = hf_target_logprobs(vlm, encode(vlm, [row], "full"), tgt)
        assert_close(scores.logprobs[i, : len(tgt)], want, dtype=torch.float32)


def test_rows_with_and_without_an_image_share_a_forward_where_the_entry_allows(vlm):
    """Ovis2 batches an image row with a text row (HF's forward of the batch, and each row
    alone, give the same reads); BLIP-2 and Fuyu run them apart, as their entries declare."""
    rows = [make_samples(1)[0], TEXT_ROWS[1]]
    both = interp.residual_stream(vlm, rows, batch_size=2, progress_bar=False)
    alone = torch.cat([interp.residual_stream(vlm, [r], progress_bar=False) for r in rows])
    assert_close(both, alone, dtype=torch.float32)
    if vlm.adapter.mixed_batches:  # else one encoding of both rows is refused
        enc = encode(vlm, rows, "full")
        assert list(enc.has_image) == [True, False]
        assert_close(both[:, : vlm.n_layers], hf_last_states(vlm, enc), dtype=torch.float32)
    assert vlm.adapter.mixed_batches == (vlm.hf.config.model_type == "ovis2")


def test_the_feature_site_fills_every_image_token(vlm):
    """The feature site's vectors, in order, are the decoder's input at the image tokens."""
    rows = make_samples(2)
    enc = encode(vlm, rows, "full")
    seen: dict[str, Any] = {}
    site = get_path(vlm.hf, vlm.adapter.image_features)
    decoder = vlm.adapter.decoder(vlm.hf)

    def keep_site(_m: Any, _a: Any, out: Any) -> None:
        seen.setdefault("site", out)

    def keep_embeds(_m: Any, _a: Any, kw: dict[str, Any]) -> None:
        seen.setdefault("embeds", kw["inputs_embeds"])

    hooks = [
        site.register_forward_hook(keep_site),
        decoder.register_forward_pre_hook(keep_embeds, with_kwargs=True),
    ]
    try:
        hf_forward(vlm, enc)
    finally:
        for h in hooks:
            h.remove()
    out = seen["site"]
    out = getattr(out, "last_hidden_state", out)
    feats = out.reshape(-1, vlm.d_model)
    mask = enc.mask("image")
    assert int(mask.sum()) == feats.shape[0] > 0
    assert_close(seen["embeds"][mask], feats, dtype=torch.float32)


def test_the_zoo_checks_pass_on_the_stock_processor_builders():
    """Reads, features, generate, batch, score, Steer, SwapImage and batch invariance with
    contrastive decoding (interp.testing.zoo_parity), then text-only reads and score."""
    for arch in FAMILY_ARCHITECTURES:
        assert check_built(*build_tiny(arch)) == "", arch
        assert text_check_built(*build_tiny(arch)) == "", arch


# -- BLIP-2 --------------------------------------------------------------------------------------


def test_blip2_prepends_its_query_tokens_before_the_padding():
    """The processor writes the 8 query tokens first, then the left-padded text: the image
    tokens of a short row sit before its pads (InstructBLIP's layout)."""
    vlm = interp.load(*build_tiny("blip-2"))
    enc = encode(vlm, make_samples(2), "full")
    image_id = vlm.hf.config.image_token_id
    n = vlm.hf.config.num_query_tokens
    ids, mask = enc.inputs["input_ids"], enc.inputs["attention_mask"]
    assert (ids[:, :n] == image_id).all() and int((ids == image_id).sum()) == 2 * n
    short = int(mask.sum(1).argmin())
    assert mask[short, n] == 0  # a pad right after the query tokens


def test_blip2_with_an_encoder_decoder_language_model_is_refused():
    """BLIP-2's Flan-T5 checkpoints are encoder-decoders: refused by name, not misread."""
    with pytest.raises(interp.UnsupportedArchitectureError, match="encoder-decoder"):
        interp.adapter_for(Blip2Config(text_config=T5Config().to_dict()))
    assert interp.adapter_for(AutoConfig.for_model("blip-2")).name == "blip2"  # OPT: served


# -- Fuyu ----------------------------------------------------------------------------------------


def test_fuyu_writes_each_image_as_a_grid_of_patch_tokens_closed_by_newlines():
    """Each image row of the 32 px image (4 x 4 patches of 8 px) is 4 patch tokens and a
    ``|NEWLINE|``, then ``<s>``; the processor's ``image_patches`` (the projection's input, one
    per patch token: the feature-site test) are the image's patches in row-major order."""
    vlm = interp.load(*build_tiny("fuyu"))
    processor = vlm.processor
    enc = encode(vlm, make_samples(1), "full")
    ids = enc.inputs["input_ids"][0][enc.inputs["attention_mask"][0].bool()].tolist()
    grid = ([processor.image_token_id] * 4 + [processor.image_newline_id]) * 4
    assert ids[: len(grid) + 1] == [*grid, vlm.tokenizer.bos_token_id]
    # the patches cut by hand from the image: rescaled, normalized, 8 x 8 x RGB, row-major
    ip = processor.image_processor
    image = np.asarray(make_samples(1)[0].load_images()[0].convert("RGB"), dtype=np.float64)
    pixels = (image * ip.rescale_factor - np.asarray(ip.image_mean)) / np.asarray(ip.image_std)
    by_hand = pixels.reshape(4, 8, 4, 8, 3).transpose(0, 2, 1, 3, 4).reshape(16, 8 * 8 * 3)
    assert_close(enc.inputs["image_patches"], torch.from_numpy(by_hand), dtype=torch.float32)


# -- Ovis2 ---------------------------------------------------------------------------------------


def test_ovis2_features_are_the_visual_tokenizers_probabilities_weighting_the_table():
    """The decoder's input at the ``<IMG_ATOM>`` tokens is the visual tokenizer's probabilities
    (a softmax over the visual vocabulary) times the embedding table's rows, by hand; at the five
    indicator tokens it is the table's last five rows, in the config's order."""
    vlm = interp.load(*build_tiny("ovis2"))
    model = vlm.hf.model
    enc = encode(vlm, make_samples(2), "full")
    seen: dict[str, Any] = {}

    def keep_embeds(_m: Any, _a: Any, kw: dict[str, Any]) -> None:
        seen.setdefault("embeds", kw["inputs_embeds"])

    hook = vlm.adapter.decoder(vlm.hf).register_forward_pre_hook(keep_embeds, with_kwargs=True)
    try:
        hf_forward(vlm, enc)
    finally:
        hook.remove()
    embeds, ids = seen["embeds"], enc.inputs["input_ids"]
    table = model.visual_embeddings_table.weight
    n_ind = len(vlm.hf.config.visual_indicator_token_ids)
    with torch.no_grad():
        probs = model.vision_tower(enc.inputs["pixel_values"]).pooler_output
    assert_close(probs.sum(-1), torch.ones(probs.shape[:2]), dtype=torch.float32)
    by_hand = (probs.double() @ table[:-n_ind].double()).reshape(-1, vlm.d_model)
    assert_close(embeds[ids == vlm.hf.config.image_token_id], by_hand, dtype=torch.float32)
    for i, token in enumerate(vlm.hf.config.visual_indicator_token_ids):
        rows = embeds[ids == token]
        want = table[len(table) - n_ind + i].expand_as(rows)
        assert_close(rows, want, dtype=torch.float32)
