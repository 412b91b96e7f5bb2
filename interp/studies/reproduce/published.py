"""The papers' published numbers the recipes print beside a run, and the chain-of-embedding
paper's VIP per model (its Appendix C).

Every row names its table (or the sentence of the text it comes from) and the model; a number
not in our copy of a paper is not invented: the no-image ablation's copy has no table, so its
recipe has only the text's ranges.
"""

from __future__ import annotations

import re

COE_VIPS: dict[str, int] = {
    "qwen2.5-vl-7b": 18,
    "internvl3-8b": 16,
    "gemma-3-4b": 20,
    "gemma-3-12b": 26,
    "gemma-3-27b": 35,
    "llava-1.5-7b": 9,
    "eagle2.5-8b": 15,
    "llama-3.2-11b-vision": 12,
    "llava-v1.6-vicuna-7b": 12,
    "llava-onevision-qwen2-7b": 15,
    "smolvlm": 15,
}
"""Appendix C ("Metrics"): "The following VIPs are used: Qwen2.5-VL-7B (18), InternVL3-8B (16),
Gemma-3-4B (20), Gemma-3-12B (26), Gemma-3-27B (35), LLaVA-v1.5-7B (9), Eagle2.5-8B (15),
Llama-3.2-11B-Vision (12), LLaVA-NeXT-Vicuna-7B (12), LLaVA-OV-Qwen2-7B (15) and SmolVLM (15)",
keyed by a normalised fragment of the Hugging Face checkpoint name."""

_ALIASES = {
    "llava-v1.5-7b": "llava-1.5-7b",
    "llava-next-vicuna-7b": "llava-v1.6-vicuna-7b",
    "llava-ov-qwen2-7b": "llava-onevision-qwen2-7b",
    "qwen2.5-vl-7b": "qwen2.5-vl-7b",
}


def model_key(model: str) -> str | None:
    """The paper's name for a checkpoint id or folder (``Qwen/Qwen2.5-VL-7B-Instruct`` →
    ``qwen2.5-vl-7b``), or None when the papers list no such model."""
    name = re.sub(r"[\\/]+$", "", str(model)).split("/")[-1].lower()
    name = name.replace("_", "-")
    for alias, key in _ALIASES.items():
        if alias in name:
            return key
    # longest key first: gemma-3-12b before gemma-3-1...
    for key in sorted(COE_VIPS, key=len, reverse=True):
        if key in name:
            return key
    for key in ("qwen3-vl-8b", "internvl2-8b", "qwen2.5-omni", "gemma-4", "minicpm"):
        if key in name:
            return key
    return None


def coe_vip(model: str) -> int | None:
    """The paper's VIP for ``model`` (Appendix C), or None when it lists none."""
    key = model_key(model)
    return COE_VIPS.get(key) if key else None


PUBLISHED: dict[str, list[dict]] = {
    # Table 3: Spearman's rho between each metric and answer correctness (all p < 0.001 unless
    # given); Table 7: dataset statistics with Qwen2.5-VL-7B.
    "coe": [
        {
            "model": "qwen2.5-vl-7b",
            "table": "Table 3",
            "dataset": "VLind",
            "metric": "TVI",
            "value": 0.7155,
            "p": "<0.001",
        },
        {
            "model": "qwen2.5-vl-7b",
            "table": "Table 3",
            "dataset": "ViLP",
            "metric": "TVI",
            "value": 0.6335,
            "p": "<0.001",
        },
        {
            "model": "qwen2.5-vl-7b",
            "table": "Table 3",
            "dataset": "VLind",
            "metric": "Visual Attention",
            "value": 0.0871,
            "p": "0.075",
        },
        {
            "model": "qwen2.5-vl-7b",
            "table": "Table 3",
            "dataset": "ViLP",
            "metric": "Visual Attention",
            "value": -0.0364,
            "p": "0.530",
        },
        {
            "model": "qwen2.5-vl-7b",
            "table": "Table 3",
            "dataset": "VLind",
            "metric": "Output Divergence",
            "value": 0.2978,
            "p": "<0.001",
        },
        {
            "model": "qwen2.5-vl-7b",
            "table": "Table 3",
            "dataset": "ViLP",
            "metric": "Output Divergence",
            "value": 0.5084,
            "p": "<0.001",
        },
        {
            "model": "internvl3-8b",
            "table": "Table 3",
            "dataset": "VLind",
            "metric": "TVI",
            "value": 0.6727,
            "p": "<0.001",
        },
        {
            "model": "internvl3-8b",
            "table": "Table 3",
            "dataset": "ViLP",
            "metric": "TVI",
            "value": 0.5709,
            "p": "<0.001",
        },
        {
            "model": "internvl3-8b",
            "table": "Table 3",
            "dataset": "VLind",
            "metric": "Visual Attention",
            "value": 0.4967,
            "p": "<0.001",
        },
        {
            "model": "internvl3-8b",
            "table": "Table 3",
            "dataset": "ViLP",
            "metric": "Visual Attention",
            "value": 0.0746,
            "p": "0.197",
        },
        {
            "model": "internvl3-8b",
            "table": "Table 3",
            "dataset": "VLind",
            "metric": "Output Divergence",
            "value": 0.1627,
            "p": "<0.001",
        },
        {
            "model": "internvl3-8b",
            "table": "Table 3",
            "dataset": "ViLP",
            "metric": "Output Divergence",
            "value": 0.5615,
            "p": "<0.001",
        },
        {
            "model": "qwen2.5-vl-7b",
            "table": "Table 7",
            "dataset": "VLind",
            "metric": "|D|",
            "value": 418,
        },
        {
            "model": "qwen2.5-vl-7b",
            "table": "Table 7",
            "dataset": "VLind",
            "metric": "|D_VT|",
            "value": 144,
        },
        {
            "model": "qwen2.5-vl-7b",
            "table": "Table 7",
            "dataset": "VLind",
            "metric": "|D_T|",
            "value": 274,
        },
        {
            "model": "qwen2.5-vl-7b",
            "table": "Table 7",
            "dataset": "ViLP",
            "metric": "|D|",
            "value": 300,
        },
        {
            "model": "qwen2.5-vl-7b",
            "table": "Table 7",
            "dataset": "ViLP",
            "metric": "|D_VT|",
            "value": 177,
        },
        {
            "model": "qwen2.5-vl-7b",
            "table": "Table 7",
            "dataset": "ViLP",
            "metric": "|D_T|",
            "value": 123,
        },
    ],
    # Table 3 (source removal; Qwen3-VL-8B-Instruct on MAVIS, Sec. 5.4)
    "drives": [
        {
            "model": "qwen3-vl-8b",
            "table": "Table 3",
            "removed": "Q",
            "metric": "P_full",
            "value": 0.7167,
        },
        {
            "model": "qwen3-vl-8b",
            "table": "Table 3",
            "removed": "Q",
            "metric": "P_remove",
            "value": 0.4384,
        },
        {
            "model": "qwen3-vl-8b",
            "table": "Table 3",
            "removed": "Q",
            "metric": "fraction decreased",
            "value": 0.99,
        },
        {
            "model": "qwen3-vl-8b",
            "table": "Table 3",
            "removed": "V",
            "metric": "P_remove",
            "value": 0.6541,
        },
        {
            "model": "qwen3-vl-8b",
            "table": "Table 3",
            "removed": "V",
            "metric": "fraction decreased",
            "value": 0.73,
        },
        {
            "model": "qwen3-vl-8b",
            "table": "Table 3",
            "removed": "A<t",
            "metric": "P_remove",
            "value": 0.0323,
        },
        {
            "model": "qwen3-vl-8b",
            "table": "Table 3",
            "removed": "A<t",
            "metric": "fraction decreased",
            "value": 1.00,
        },
    ],
    # Sec. 4 text and Fig. 3 (two-way inclusion), averaged over the paper's seven VLMs
    "recall": [
        {
            "model": "seven VLMs (mean)",
            "table": "Sec. 4 text",
            "dataset": "all",
            "metric": "Text Only accuracy (%)",
            "value": 84.70,
        },
        {
            "model": "seven VLMs (mean)",
            "table": "Sec. 4 text",
            "dataset": "all",
            "metric": "Visual: relative decline (%)",
            "value": 58.95,
        },
        {
            "model": "seven VLMs (mean)",
            "table": "Sec. 4 text",
            "dataset": "MNIST",
            "metric": "Text Only accuracy (%)",
            "value": 98.66,
        },
        {
            "model": "seven VLMs (mean)",
            "table": "Sec. 4 text",
            "dataset": "MNIST",
            "metric": "Visual accuracy (%)",
            "value": 31.28,
        },
    ],
    # the copy of the paper has no table; the abstract's range of text-only accuracy
    "ablation": [
        {
            "model": "open models",
            "table": "abstract",
            "metric": "accuracy without the image (%)",
            "value": "1-9",
        },
    ],
    # Sec. 5.2 text (Fig. 3): response labels per evidence condition
    "conflict": [
        {
            "model": "qwen2.5-omni",
            "table": "Sec. 5.2 / Fig. 3",
            "condition": "PercI-PropA",
            "metric": "BIAS_IMAGE (%)",
            "value": 49.7,
        },
        {
            "model": "qwen2.5-omni",
            "table": "Sec. 5.2 / Fig. 3",
            "condition": "PropI-PropA",
            "metric": "BIAS_IMAGE (%)",
            "value": 12.7,
        },
        {
            "model": "qwen2.5-omni",
            "table": "Sec. 5.2 / Fig. 3",
            "condition": "PropI-PropA",
            "metric": "NO_BIAS (%)",
            "value": 60.1,
        },
        {
            "model": "gemma-4",
            "table": "Sec. 5.2 / Fig. 3",
            "condition": "PropI-PropA",
            "metric": "NO_BIAS (%)",
            "value": 7.2,
        },
        {
            "model": "gemma-4",
            "table": "Sec. 5.2 / Fig. 3",
            "condition": "PercI-PercA",
            "metric": "BIAS_AUDIO (%)",
            "value": 0.9,
        },
        {
            "model": "gemma-4",
            "table": "Sec. 5.2 / Fig. 3",
            "condition": "PercI-PropA",
            "metric": "BIAS_AUDIO (%)",
            "value": 25.4,
        },
    ],
}
