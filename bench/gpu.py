"""The library at full size on a GPU, with no download: LLaVA-1.5-7B's and Qwen2.5-VL-7B's published
configurations (``tests/fixtures/configs/``, sources in ``SOURCES.md`` there) built with random
weights directly on the device in bf16.

For each model, on the same encoded batches of demo items, the library against bare Hugging Face:

- **residual reads** — ``interp.residual_stream`` (every layer, last token) vs a forward with
  ``output_hidden_states=True`` and the same gather; tokens/s = prompt tokens / s;
- **generate** — ``interp.generate`` vs HF ``generate`` (greedy); tokens/s = new tokens / s;
- **VCD decoding** — ``interp.generate(decoding=vcd())`` vs HF ``generate`` over the expert and
  amateur rows with a logits processor doing VCD's contrast and cut (``bench/real_width.py``);
- **flow** — ``information_flow`` (edge image → last, windows of 4 layers, the given answers) vs the
  same number of bare teacher-forced forwards (one per window, plus the unedited one);
- **occlusion** — ``occlusion`` (a 2 x 2 grid, the given answers) vs the same number of bare
  forwards (one per region, plus the unedited one);
- **drives, shared/full** and **contexts, shared/full** — prefix sharing: ``causal_drives``
  (K = 2, the given answers) and ``score_contexts`` (each answer under four text conditions of its
  image) with ``share_prefix`` on, against the same calls with every context in full (the "HF"
  columns of these two rows hold the library's full-forward path, not bare HF);
- **ablation, shared/full** — ``no_image_ablation`` (demo items in their four wordings, with the
  image and under each default condition without it, greedy) with prefix sharing in generation
  against every prompt in full;
- **flow, resume/full** — the flow row's sweep with layer resume (``resume_layers``) against every
  knockout forward in full (the "HF" columns of these last four rows hold the library's full
  path, not bare HF).

Each row: median seconds of both sides, the ratio, tokens/s and the peak device memory of each
side (``torch.cuda.max_memory_allocated`` after a reset; on the CPU none is measured). The
tokenizer is the tiny offline stand-in of ``interp.testing`` (its ids fall inside the real
vocabularies): speed depends on shapes, not on what the tokens mean. Residual reads and greedy
tokens are also checked equal to HF's (``max_abs_diff``, ``same_tokens``).

    python bench/gpu.py                      # both models, cuda, bf16
    python bench/gpu.py --arch qwen2_5_vl --n 16 --batch-size 8 --max-new-tokens 32
    python bench/gpu.py --cpu-smoke          # shrunk configs on the CPU in fp32 (the test suite)
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
from transformers import (
    CLIPImageProcessorPil,
    LlavaConfig,
    LlavaForConditionalGeneration,
    LlavaProcessor,
    Qwen2_5_VLConfig,
    Qwen2_5_VLForConditionalGeneration,
    Qwen2_5_VLProcessor,
    Qwen2VLImageProcessorPil,
)

sys.path.insert(0, str(Path(__file__).parent))
from _common import hf_last_states  # noqa: E402
from real_width import hf_vcd  # noqa: E402

import interp  # noqa: E402
from interp.datasets import WORDED_QTYPES, demo_world  # noqa: E402
from interp.encoding import batches, encode  # noqa: E402
from interp.studies.ablation import no_image_ablation  # noqa: E402
from interp.studies.attribute import occlusion  # noqa: E402
from interp.studies.drives import causal_drives  # noqa: E402
from interp.studies.flow import information_flow  # noqa: E402
from interp.testing import chat_template, tiny_tokenizer  # noqa: E402
from interp.testing.builders.common import processor_without_video  # noqa: E402
from interp.testing.builders.qwen_vl import (  # noqa: E402
    IMAGE_PLACEHOLDER,
    qwen_vl_tokenizer,
)
from interventions.decoding import vcd  # noqa: E402

CONFIGS = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "configs"
FILES = {
    "llava": CONFIGS / "llava-hf--llava-1.5-7b-hf.json",
    "qwen2_5_vl": CONFIGS / "Qwen--Qwen2.5-VL-7B-Instruct.json",
}
# the shrunk decoder of --cpu-smoke: every other value stays the published one
SMOKE_TEXT = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
}
FLOW_WINDOW, GRID = 4, (2, 2)
DRIVES_K = 2
CONTEXTS = ["full", "no_question", "instruct:Answer in one word.", "full+no_prefix"]


def llava_tokenizer():
    return tiny_tokenizer(
        extra_special_tokens={"image_token": "<image>"}, image_placeholder="<image>\n"
    )


def llava_config(smoke: bool, image_size: int, tok) -> LlavaConfig:
    """The published LLaVA-1.5-7B configuration with the stand-in tokenizer's ids (shrunk with
    ``smoke``)."""
    raw = json.loads(FILES["llava"].read_text())
    assert len(tok) <= raw["text_config"]["vocab_size"]
    text = raw["text_config"]
    text.update(
        pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id
    )
    if smoke:
        text.update(SMOKE_TEXT, num_key_value_heads=4)
        raw["vision_config"].update(
            hidden_size=32,
            intermediate_size=64,
            num_attention_heads=2,
            num_hidden_layers=2,
            projection_dim=32,
        )
    raw["vision_config"]["image_size"] = image_size
    raw.update(
        image_token_index=tok.convert_tokens_to_ids("<image>"), pad_token_id=tok.pad_token_id
    )
    return LlavaConfig.from_dict(raw)


def build_llava(smoke: bool, dtype: torch.dtype, device: str, image_size: int) -> interp.VLM:
    """LLaVA-1.5-7B (32 layers, d = 4096, CLIP ViT-L/14 at 336 px: 576 image tokens)."""
    tok = llava_tokenizer()
    config = llava_config(smoke, image_size, tok)
    torch.manual_seed(0)
    with torch.device(device):
        model = LlavaForConditionalGeneration._from_config(
            config, dtype=dtype, attn_implementation="eager"
        ).eval()
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = None  # every run generates max_new_tokens
    processor = LlavaProcessor(
        image_processor=CLIPImageProcessorPil(
            size={"shortest_edge": image_size},
            crop_size={"height": image_size, "width": image_size},
        ),
        tokenizer=tok,
        patch_size=config.vision_config.patch_size,
        vision_feature_select_strategy=config.vision_feature_select_strategy,
        num_additional_image_tokens=1,
        chat_template=chat_template("<image>\n"),
    )
    return interp.load(model, processor)


def qwen_config(smoke: bool, tok) -> Qwen2_5_VLConfig:
    """The published Qwen2.5-VL-7B configuration with the stand-in tokenizer's ids (shrunk with
    ``smoke``)."""
    raw = json.loads(FILES["qwen2_5_vl"].read_text())
    assert len(tok) <= raw["vocab_size"]
    ids = {
        k: tok.convert_tokens_to_ids(v)
        for k, v in (
            ("image_token_id", "<|image_pad|>"),
            ("video_token_id", "<|video_pad|>"),
            ("vision_start_token_id", "<|vision_start|>"),
            ("vision_end_token_id", "<|vision_end|>"),
        )
    }
    raw.update(
        ids,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    if smoke:
        raw.update(SMOKE_TEXT, num_key_value_heads=2)
        raw["rope_scaling"]["mrope_section"] = [2, 3, 3]  # sums to head_dim / 2 = 8
        raw["vision_config"].update(
            depth=2,
            hidden_size=32,
            intermediate_size=64,
            num_heads=2,
            out_hidden_size=64,
            fullatt_block_indexes=[1],
        )
    return Qwen2_5_VLConfig.from_dict(raw)


def build_qwen2_5_vl(smoke: bool, dtype: torch.dtype, device: str, image_size: int) -> interp.VLM:
    """Qwen2.5-VL-7B (28 layers, d = 3584, GQA 28/4, windowed ViT of 32 blocks; a square
    ``image_size`` image: (image_size / 28)² image tokens)."""
    tok = qwen_vl_tokenizer()
    config = qwen_config(smoke, tok)
    torch.manual_seed(0)
    with torch.device(device):
        model = Qwen2_5_VLForConditionalGeneration._from_config(
            config, dtype=dtype, attn_implementation="eager"
        ).eval()
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = None
    vc = config.vision_config
    area = image_size * image_size  # a square image of this size keeps its size
    image_processor = Qwen2VLImageProcessorPil(
        patch_size=vc.patch_size,
        merge_size=vc.spatial_merge_size,
        temporal_patch_size=2,
        size={"shortest_edge": area, "longest_edge": area},
        image_mean=[0.48145466, 0.4578275, 0.40821073],
        image_std=[0.26862954, 0.26130258, 0.27577711],
    )
    processor = processor_without_video(
        Qwen2_5_VLProcessor,
        image_processor=image_processor,
        tokenizer=tok,
        chat_template=chat_template(IMAGE_PLACEHOLDER),
    )
    return interp.load(model, processor)


BUILDERS = {"llava": build_llava, "qwen2_5_vl": build_qwen2_5_vl}


# -- measuring ----------------------------------------------------------------------------------------


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def measure(
    fn: Callable[[], object], device: str, repeats: int, warmup: bool = True
) -> tuple[float, float | None]:
    """Median seconds over ``repeats`` runs after a warm-up, and the peak device memory (GiB) of
    one run (None on the CPU)."""
    if warmup:
        fn()
        _sync(device)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        _sync(device)
        times.append(time.perf_counter() - start)
    peak = None
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        fn()
        _sync(device)
        peak = torch.cuda.max_memory_allocated() / 2**30
    return statistics.median(times), peak


def bare_forwards(vlm: interp.VLM, samples, batch_size: int, times: int) -> None:
    """``times`` plain teacher-forced forwards of every batch (prompt + answer): the HF work flow
    and occlusion do, without their edits."""
    for _, enc in batches(vlm, samples, "full", batch_size):
        ids = vlm.tokenizer(
            [" " + str(s.answer) for s in samples[: len(enc)]],
            add_special_tokens=False,
            return_tensors="pt",
            padding=True,
        )
        inputs = dict(enc.inputs)
        dev = inputs["input_ids"].device
        inputs["input_ids"] = torch.cat([inputs["input_ids"], ids.input_ids.to(dev)], 1)
        inputs["attention_mask"] = torch.cat(
            [inputs["attention_mask"], ids.attention_mask.to(dev)], 1
        )
        if "mm_token_type_ids" in inputs:
            pad = torch.zeros_like(ids.input_ids).to(dev)
            inputs["mm_token_type_ids"] = torch.cat([inputs["mm_token_type_ids"], pad], 1)
        with torch.no_grad():
            for _ in range(times):
                vlm.hf(**inputs)


def hf_greedy(vlm: interp.VLM, samples, batch_size: int, m: int) -> list[list[int]]:
    out = []
    for _, enc in batches(vlm, samples, "full", batch_size):
        with torch.no_grad():
            ids = vlm.hf.generate(
                **enc.inputs,
                max_new_tokens=m,
                do_sample=False,
                pad_token_id=vlm.tokenizer.pad_token_id,
            )
        out += ids[:, enc.input_ids.shape[1] :].tolist()
    return out


def run_arch(arch: str, args: argparse.Namespace) -> dict:
    dtype = torch.float32 if args.cpu_smoke else getattr(torch, args.dtype)
    vlm = BUILDERS[arch](args.cpu_smoke, dtype, args.device, args.image_size)
    samples = demo_world(split="test", n=args.n, seed=0, qtypes=["color"])
    b, m, r = args.batch_size, args.max_new_tokens, args.repeats
    prompt_tokens = sum(
        int(enc.inputs["attention_mask"].sum()) for _, enc in batches(vlm, samples, "full", b)
    )
    enc0 = encode(vlm, samples[:1])
    info = {
        "arch": arch,
        "params_b": round(sum(p.numel() for p in vlm.hf.parameters()) / 1e9, 3),
        "layers": vlm.n_layers,
        "d_model": vlm.d_model,
        "dtype": str(dtype).removeprefix("torch."),
        "device": args.device,
        "image_tokens": int(enc0.image_mask.sum()),
        "prompt_tokens": prompt_tokens,
    }
    # correctness first: the reads and the greedy tokens equal HF's
    ours = interp.residual_stream(vlm, samples, batch_size=b, progress_bar=False)
    ref = hf_last_states(vlm, samples, b).float().cpu()
    got = ours.float().cpu()
    # HF's last entry is after the final norm; compare the layers before it
    info["max_abs_diff"] = float((got[:, :-1] - ref[:, :-1]).abs().max())
    gen = interp.generate(vlm, samples, max_new_tokens=m, batch_size=b, progress_bar=False)
    eos = vlm.tokenizer.eos_token_id
    hf_ids = [ids[: ids.index(eos)] if eos in ids else ids for ids in hf_greedy(vlm, samples, b, m)]
    info["same_tokens"] = gen.token_ids == hf_ids

    answers = [s.answer for s in samples]

    def drives(share: bool) -> object:
        return causal_drives(
            vlm,
            samples,
            k=DRIVES_K,
            targets=answers,
            batch_size=b,
            progress_bar=False,
            share_prefix=share,
        )

    def contexts(share: bool) -> object:
        return interp.score_contexts(
            vlm,
            samples,
            answers,
            lambda i, s: [(s, c) for c in CONTEXTS],
            batch_size=b,
            progress_bar=False,
            share_prefix=share,
        )

    # the ablation shows each item its group's next picture: at least two groups
    items = demo_world(split="test", n=4 * args.n, seed=0, qtypes=WORDED_QTYPES)

    def ablation(share: bool) -> object:
        return no_image_ablation(
            vlm,
            items,
            max_new_tokens=m,
            n_boot=10,
            batch_size=b,
            progress_bar=False,
            share_prefix=share,
        )

    def flow(resume: bool) -> object:
        return information_flow(
            vlm,
            samples,
            edges=["image>last"],
            window=FLOW_WINDOW,
            stride=FLOW_WINDOW,
            split=None,
            batch_size=b,
            progress_bar=False,
            resume_layers=resume,
        )

    shared, full = contexts(True), contexts(False)
    info["shared_max_diff"] = max(float((a - c).abs().max()) for a, c in zip(shared, full))

    n_windows = math.ceil(vlm.n_layers / FLOW_WINDOW)
    regions = GRID[0] * GRID[1]
    new_tokens = len(samples) * m
    rows = {
        "residual reads": (
            lambda: interp.residual_stream(vlm, samples, batch_size=b, progress_bar=False),
            lambda: hf_last_states(vlm, samples, b),
            prompt_tokens,
        ),
        "generate": (
            lambda: interp.generate(
                vlm, samples, max_new_tokens=m, batch_size=b, progress_bar=False
            ),
            lambda: hf_greedy(vlm, samples, b, m),
            new_tokens,
        ),
        "VCD decoding": (
            lambda: interp.generate(
                vlm, samples, decoding=vcd(), max_new_tokens=m, batch_size=b, progress_bar=False
            ),
            lambda: hf_vcd(vlm, samples, b, m),
            new_tokens,
        ),
        "flow (image>last)": (
            lambda: flow(True),
            lambda: bare_forwards(vlm, samples, b, n_windows + 1),
            prompt_tokens * (n_windows + 1),
        ),
        "occlusion (2x2)": (
            lambda: occlusion(vlm, samples, grid=GRID, batch_size=b, progress_bar=False),
            lambda: bare_forwards(vlm, samples, b, regions + 1),
            prompt_tokens * (regions + 1),
        ),
        "drives, shared/full": (
            lambda: drives(True),
            lambda: drives(False),
            prompt_tokens * (2 * DRIVES_K + 2),
        ),
        "contexts, shared/full": (
            lambda: contexts(True),
            lambda: contexts(False),
            prompt_tokens * len(CONTEXTS),
        ),
        "ablation, shared/full": (
            lambda: ablation(True),
            lambda: ablation(False),
            len(items) * 5 * m,
        ),
        "flow, resume/full": (
            lambda: flow(True),
            lambda: flow(False),
            prompt_tokens * (n_windows + 1),
        ),
    }
    results = []
    for name, (lib, hf, tokens) in rows.items():
        t_lib, mem_lib = measure(lib, args.device, r, warmup=not args.cpu_smoke)
        t_hf, mem_hf = measure(hf, args.device, r, warmup=not args.cpu_smoke)
        results.append(
            {
                "measure": name,
                "interp_s": round(t_lib, 4),
                "hf_s": round(t_hf, 4),
                "ratio": round(t_lib / t_hf, 3),
                "interp_tok_s": round(tokens / t_lib, 1),
                "hf_tok_s": round(tokens / t_hf, 1),
                "interp_peak_gib": None if mem_lib is None else round(mem_lib, 2),
                "hf_peak_gib": None if mem_hf is None else round(mem_hf, 2),
            }
        )
    if args.device.startswith("cuda"):
        torch.cuda.empty_cache()
    return {**info, "rows": results}


def print_table(result: dict) -> None:
    print(
        f"{result['arch']}: {result['params_b']} B parameters, {result['layers']} layers, "
        f"d = {result['d_model']}, {result['dtype']} on {result['device']}, "
        f"{result['image_tokens']} image tokens; reads max |diff| {result['max_abs_diff']:.2e}, "
        f"greedy tokens equal HF: {result['same_tokens']}; shared-prefix scores max |diff| "
        f"{result['shared_max_diff']:.2e}"
    )
    head = f"  {'measure':<20}{'interp s':>10}{'HF s':>10}{'ratio':>7}{'interp tok/s':>14}"
    print(head + f"{'HF tok/s':>11}{'interp GiB':>12}{'HF GiB':>9}")
    for row in result["rows"]:
        mem = [
            ("-" if row[k] is None else f"{row[k]:.2f}") for k in ("interp_peak_gib", "hf_peak_gib")
        ]
        print(
            f"  {row['measure']:<20}{row['interp_s']:>10.3f}{row['hf_s']:>10.3f}"
            f"{row['ratio']:>7.2f}{row['interp_tok_s']:>14.1f}{row['hf_tok_s']:>11.1f}"
            f"{mem[0]:>12}{mem[1]:>9}"
        )


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--arch", nargs="+", default=list(BUILDERS), choices=list(BUILDERS))
    parser.add_argument("--n", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--image-size",
        type=int,
        default=None,
        help="px (default: 336 for LLaVA's CLIP, 448 for Qwen; smoke: 56)",
    )
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    parser.add_argument(
        "--cpu-smoke",
        action="store_true",
        help="shrunk configs (4 layers, d = 64), CPU, fp32, 2 items, 1 run, no warm-up",
    )
    parser.add_argument("--json", default=None, help="also write the results here")
    args = parser.parse_args(argv)
    if args.cpu_smoke:
        args.device, args.n, args.batch_size, args.repeats = "cpu", 2, 2, 1
        args.max_new_tokens = min(args.max_new_tokens, 3)
    elif args.device.startswith("cuda") and not torch.cuda.is_available():
        parser.error("no CUDA device: run with --cpu-smoke, or on a machine with a GPU")
    results = []
    for arch in args.arch:
        if args.image_size is None:
            args.image_size = 56 if args.cpu_smoke else (336 if arch == "llava" else 448)
            result = run_arch(arch, args)
            args.image_size = None
        else:
            result = run_arch(arch, args)
        print_table(result)
        results.append(result)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
