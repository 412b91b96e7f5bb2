"""Overhead of the library at a real model width: LLaVA-1.5's published configuration
(``tests/fixtures/configs/llava-hf--llava-1.5-7b-hf.json``) cut to a few decoder layers.

The decoder keeps the checkpoint's width and shapes (d = 4096, 32 heads, MLP 11008, vocabulary
32064, separate unembedding) with ``--layers`` decoder layers instead of 32: about 1 B parameters
at 3 layers. The CLIP tower keeps its width (1024, so the projector is the real 1024 → 4096 → 4096
one) but has ``--vision-layers`` layers and sees ``--image-size`` px (112 px: 64 image tokens
instead of 576), so a CPU run stays short. Weights are random; the tokenizer is the tiny offline
stand-in of ``interp.testing`` (its ids fall inside the real 32064-entry vocabulary, the rest of
which is never used): the published tokenizer is not available offline. Timing depends on shapes,
not on what the weights or tokens mean.

In fp32 and in bf16 (built with ``dtype=``, as ``from_pretrained`` would), on the same encoded
batches of demo items, timed in ``--repeats`` alternating pairs after a warm-up (median times and the
median of the per-pair ratios, so load from other processes falls on both sides alike):

- residual reads: ``interp.residual_stream`` (every layer, last token) vs a bare HF forward with
  ``output_hidden_states=True`` and the same gather;
- steered generation: ``interp.generate(edits=[Steer(...)])`` vs HF ``generate`` with a torch
  forward hook adding the same vector to the same layer's output;
- VCD decoding: ``interp.generate(decoding=vcd())`` vs HF ``generate`` over the same batch of
  expert and amateur rows (the image and its diffusion-noised copy) with a logits processor that
  applies VCD's contrast and cut in fp32 and writes the chosen token into both rows — the same
  work, one batched forward per step.

Ratios are printed, never asserted.

    python bench/real_width.py [--layers 3] [--n 2] [--batch-size 2] [--max-new-tokens 4]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

import torch
from transformers import (
    CLIPImageProcessorPil,
    LlavaConfig,
    LlavaForConditionalGeneration,
    LlavaProcessor,
    LogitsProcessor,
    LogitsProcessorList,
)

sys.path.insert(0, str(Path(__file__).parent))
from _common import bench_parser, hf_generate, hf_last_states, paired, parse  # noqa: E402

import interp  # noqa: E402
from interp.datasets import demo_world  # noqa: E402
from interp.encoding import batches, encode  # noqa: E402
from interp.testing import chat_template, tiny_tokenizer  # noqa: E402
from interventions import Steer  # noqa: E402
from interventions.decoding import vcd  # noqa: E402

CONFIG = (
    Path(__file__).resolve().parent.parent
    / "tests"
    / "fixtures"
    / "configs"
    / "llava-hf--llava-1.5-7b-hf.json"
)
IMAGE_TOKEN = "<image>"
PLACEHOLDER = IMAGE_TOKEN + "\n"
# VCD's defaults in the library (interventions.decoding.vcd): noise step 500, α = 1, β = 0.1
ALPHA, BETA, NOISE = 1.0, 0.1, 500


def build(layers: int, vision_layers: int, image_size: int, dtype: torch.dtype) -> interp.VLM:
    """The cut LLaVA-1.5 with random weights in ``dtype`` and an offline processor."""
    raw = json.loads(CONFIG.read_text())
    tok = tiny_tokenizer(
        extra_special_tokens={"image_token": IMAGE_TOKEN}, image_placeholder=PLACEHOLDER
    )
    vocab = raw["text_config"]["vocab_size"]
    assert len(tok) <= vocab, "the stand-in tokenizer must fit in the real vocabulary"
    raw["text_config"].update(
        num_hidden_layers=layers,
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    raw["vision_config"].update(num_hidden_layers=vision_layers, image_size=image_size)
    raw.update(
        image_token_index=tok.convert_tokens_to_ids(IMAGE_TOKEN), pad_token_id=tok.pad_token_id
    )
    config = LlavaConfig.from_dict(raw)
    torch.manual_seed(0)
    model = LlavaForConditionalGeneration._from_config(config, dtype=dtype).eval()
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = tok.eos_token_id
    processor = LlavaProcessor(
        image_processor=CLIPImageProcessorPil(
            size={"shortest_edge": image_size},
            crop_size={"height": image_size, "width": image_size},
        ),
        tokenizer=tok,
        patch_size=config.vision_config.patch_size,
        vision_feature_select_strategy=config.vision_feature_select_strategy,
        num_additional_image_tokens=1,
        chat_template=chat_template(PLACEHOLDER),
    )
    return interp.load(model, processor)


class VCDByHand(LogitsProcessor):
    """VCD on a batch whose first half are expert rows and second half their amateur rows: the
    contrast ``(1+α)z − αz'`` in fp32, the cut ``z < log β + max z`` on the expert's logits, the
    argmax written as a one-hot (0 / −inf) into both rows so both continue with that token."""

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        half = scores.shape[0] // 2
        z, zp = scores[:half].float(), scores[half:].float()
        contrast = (1 + ALPHA) * z - ALPHA * zp
        cut = z < math.log(BETA) + z.max(-1, keepdim=True).values
        token = contrast.masked_fill(cut, -math.inf).argmax(-1).repeat(2)
        out = torch.full_like(scores, -math.inf)
        out[torch.arange(scores.shape[0]), token] = 0.0
        return out


def hf_vcd(vlm: interp.VLM, samples, batch_size: int, max_new_tokens: int) -> list[list[int]]:
    """New token ids of the expert rows (checked equal to ``interp.generate(decoding=vcd())``
    on a tiny model)."""
    processors = LogitsProcessorList([VCDByHand()])
    new = []
    for i in range(0, len(samples), batch_size):
        chunk = samples[i : i + batch_size]
        conds = ["full"] * len(chunk) + [f"distort:{NOISE}"] * len(chunk)
        enc = encode(vlm, chunk + chunk, conds)
        with torch.no_grad():
            out = vlm.hf.generate(
                **enc.inputs,
                max_new_tokens=max_new_tokens,
                do_sample=False,
                logits_processor=processors,
                pad_token_id=vlm.tokenizer.pad_token_id,
            )
        new += out[: len(chunk), enc.input_ids.shape[1] :].tolist()
    return new


def hf_steered(vlm: interp.VLM, samples, batch_size: int, layer: int, vector, steps: int) -> None:
    module = vlm.adapter.layers(vlm.hf)[layer - 1]

    def add(_module, _args, out):  # every position, as Steer(..., "all") at unpadded rows
        h = out[0] if isinstance(out, tuple) else out
        h = h + vector.to(h.dtype)
        return (h, *out[1:]) if isinstance(out, tuple) else h

    for _, enc in batches(vlm, samples, "full", batch_size):
        hf_generate(vlm, enc, steps, hooks=[(module, "forward", add)])


def n_params(vlm: interp.VLM) -> float:
    return sum(p.numel() for p in vlm.hf.parameters()) / 1e9


def run(dtype: torch.dtype, args: argparse.Namespace, samples) -> list[tuple[str, tuple]]:
    vlm = build(args.layers, args.vision_layers, args.image_size, dtype)
    b, m, r = args.batch_size, args.max_new_tokens, args.repeats
    enc = encode(vlm, samples[:1])
    print(
        f"  {str(dtype).removeprefix('torch.')}: {n_params(vlm):.2f} B parameters, "
        f"{vlm.n_layers} layers, d = {vlm.d_model}, "
        f"{int(enc.image_mask.sum())} image tokens, prompt {enc.input_ids.shape[1]} tokens"
    )
    layer = max(1, vlm.n_layers // 2)
    vector = torch.randn(vlm.d_model, generator=torch.Generator().manual_seed(1))
    steer = [Steer(layer, vector)]
    common = {"max_new_tokens": m, "batch_size": b, "progress_bar": False}
    return [
        (
            "residual reads",
            paired(
                lambda: interp.residual_stream(vlm, samples, batch_size=b, progress_bar=False),
                lambda: hf_last_states(vlm, samples, b).float(),
                r,
            ),
        ),
        (
            f"generate + Steer ({m} tokens)",
            paired(
                lambda: interp.generate(vlm, samples, edits=steer, **common),
                lambda: hf_steered(vlm, samples, b, layer, vector, m),
                r,
            ),
        ),
        (
            f"VCD decoding ({m} tokens)",
            paired(
                lambda: interp.generate(vlm, samples, decoding=vcd(), **common),
                lambda: hf_vcd(vlm, samples, b, m),
                r,
            ),
        ),
    ]


def main() -> None:
    parser = bench_parser(__doc__, n=2, batch_size=2, max_new_tokens=4, model=False)
    parser.add_argument("--layers", type=int, default=3)
    parser.add_argument("--vision-layers", type=int, default=2)
    parser.add_argument("--image-size", type=int, default=112)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16"])
    args = parse(parser)
    samples = demo_world("test", n=args.n, qtypes=["describe"])
    print(
        f"LLaVA-1.5 at full width, {args.layers} decoder layers, random weights: N={args.n}, "
        f"batch {args.batch_size}, {args.threads} threads, load average "
        f"{os.getloadavg()[0]:.1f} at start"
    )
    for name in args.dtypes:
        rows = run(getattr(torch, name), args, samples)
        print(f"    {'':30s} {'interp s':>9s} {'HF s':>9s} {'ratio':>7s}")
        for what, (ours, bare, ratio) in rows:
            print(f"    {what:30s} {ours:9.2f} {bare:9.2f} {ratio:7.2f}x")
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
