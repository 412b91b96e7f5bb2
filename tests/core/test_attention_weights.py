"""interp.attention_weights: the last prompt position's attention weights per layer and head equal
HF ``output_attentions`` of each sample run alone, whatever the batch and its padding."""

from __future__ import annotations

import pytest
import torch

import interp
from interp.encoding import encode
from interp.testing.samples import make_samples
from interp.testing.tiny import shared_tiny_vlm, tiny_vlm
from interp.testing.tolerance import assert_close


@pytest.mark.parametrize("arch", ["llava", "qwen2_vl"])
@pytest.mark.parametrize("batch_size", [1, 3])
def test_weights_equal_hf_output_attentions_of_each_sample_alone(arch, batch_size):
    vlm = shared_tiny_vlm(arch)
    samples = make_samples(3)  # different image sizes: rows of a batch are padded
    got = interp.attention_weights(vlm, samples, batch_size=batch_size, progress_bar=False)
    assert got.sample_ids == ["s0", "s1", "s2"] and got.condition == "full"
    for i, s in enumerate(samples):
        enc = encode(vlm, [s])
        with torch.no_grad():
            out = vlm.hf(**enc.inputs, output_attentions=True)
        want = torch.stack([a[0, :, -1] for a in out.attentions]).float()
        assert got.weights[i].shape == want.shape
        assert_close(got.weights[i], want)
        image = torch.nonzero(enc.image_mask[0])[:, 0]
        torch.testing.assert_close(got.mass(i, image.numpy()), want[:, :, image].sum(-1))


def test_sdpa_gives_eager_weights_and_flash_and_cross_attention_are_refused():
    """Under SDPA the weights are recomputed from the attention call's inputs
    (interp.plain.attention_kind): equal to HF output_attentions of the eager model."""
    eager = shared_tiny_vlm("llava")
    sdpa = tiny_vlm("llava", attn_implementation="sdpa")
    samples = make_samples(3)
    got = interp.attention_weights(sdpa, samples, batch_size=3, progress_bar=False)
    for i, s in enumerate(samples):
        with torch.no_grad():
            out = eager.hf(**encode(eager, [s]).inputs, output_attentions=True)
        assert_close(got.weights[i], torch.stack([a[0, :, -1] for a in out.attentions]).float())
    sdpa.hf.config._attn_implementation = "flash_attention_2"
    with pytest.raises(interp.InterpError, match="attn_implementation='sdpa'"):
        interp.attention_weights(sdpa, samples)
    with pytest.raises(interp.InterpError, match="cross-attention"):
        interp.attention_weights(shared_tiny_vlm("mllama"), make_samples(1))
