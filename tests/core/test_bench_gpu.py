"""``bench/gpu.py``: the full-size configurations are the published ones, and ``--cpu-smoke`` runs
every measurement on the shrunk configurations (so the GPU script cannot rot unnoticed)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
import torch
from transformers import LlavaForConditionalGeneration, Qwen2_5_VLForConditionalGeneration

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def gpu():
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location("bench_gpu", BENCH / "gpu.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(str(BENCH))


def test_full_size_configs_are_the_published_sizes(gpu):
    """On the meta device (no memory): the parameter counts the checkpoints' model cards give,
    LLaVA-1.5-7B 7.06 B and Qwen2.5-VL-7B 8.29 B."""
    with torch.device("meta"):
        llava = LlavaForConditionalGeneration._from_config(
            gpu.llava_config(False, 336, gpu.llava_tokenizer())
        )
        qwen = Qwen2_5_VLForConditionalGeneration._from_config(
            gpu.qwen_config(False, gpu.qwen_vl_tokenizer())
        )
    count = lambda m: sum(p.numel() for p in m.parameters()) / 1e9  # noqa: E731
    assert count(llava) == pytest.approx(7.06, abs=0.01)
    assert count(qwen) == pytest.approx(8.29, abs=0.01)
    assert llava.config.text_config.num_hidden_layers == 32
    assert qwen.config.text_config.hidden_size == 3584


def test_cpu_smoke_runs_every_measurement(gpu, tmp_path):
    out = tmp_path / "smoke.json"
    results = gpu.main(["--cpu-smoke", "--json", str(out)])
    assert json.loads(out.read_text()) == results
    assert [r["arch"] for r in results] == ["llava", "qwen2_5_vl"]
    for r in results:
        assert r["max_abs_diff"] < 1e-4  # the reads equal HF's hidden states
        assert r["same_tokens"] is True  # greedy tokens equal HF generate's
        assert [row["measure"] for row in r["rows"]] == [
            "residual reads",
            "generate",
            "VCD decoding",
            "flow (image>last)",
            "occlusion (2x2)",
            "drives, shared/full",
            "contexts, shared/full",
            "ablation, shared/full",
            "flow, resume/full",
        ]
        assert r["shared_max_diff"] < 1e-4  # prefix sharing gives the full forwards' scores
        assert all(row["interp_s"] > 0 and row["hf_s"] > 0 for row in r["rows"])
