"""``interp reproduce``: the recipes' data and settings, the paper's VIPs, the errors before any
compute, and the chain-of-embedding recipe end to end on the demo model."""

from __future__ import annotations

import pandas as pd
import pytest

from interp.cli import main
from interp.studies.reproduce import RECIPES, ReproduceError, reproduce
from interp.studies.reproduce.published import PUBLISHED, coe_vip, model_key
from interp.studies.reproduce.recipes import coe_args
from interp.studies.reproduce.run import run_data
from interp.testing.tolerance import EPS, approx_close


def test_the_command_is_registered_and_its_static_help_matches():
    import argparse

    from interp.help import declared_command
    from interp.study_registry import commands, load

    found = {c.name: c for c in commands()}  # the entry points of pyproject.toml
    assert found["reproduce"].register == "interp.studies.reproduce.cli:register"
    ref = found["reproduce"].register
    name, text, aliases = declared_command(ref)
    sub = argparse.ArgumentParser().add_subparsers()
    load(ref)(sub)
    assert name == "reproduce" and [a.help for a in sub._choices_actions] == [text]


def test_appendix_c_vips_by_checkpoint_name():
    # Appendix C: Qwen2.5-VL-7B (18), InternVL3-8B (16), Gemma-3-4B (20), LLaVA-v1.5-7B (9),
    # Llama-3.2-11B-Vision (12), LLaVA-NeXT-Vicuna-7B (12), LLaVA-OV-Qwen2-7B (15), SmolVLM (15)
    assert coe_vip("Qwen/Qwen2.5-VL-7B-Instruct") == 18
    assert coe_vip("OpenGVLab/InternVL3-8B-hf") == 16
    assert coe_vip("google/gemma-3-4b-it") == 20
    assert coe_vip("google/gemma-3-12b-it") == 26
    assert coe_vip("llava-hf/llava-1.5-7b-hf") == 9
    assert coe_vip("meta-llama/Llama-3.2-11B-Vision-Instruct") == 12
    assert coe_vip("llava-hf/llava-v1.6-vicuna-7b-hf") == 12
    assert coe_vip("llava-hf/llava-onevision-qwen2-7b-ov-hf") == 15
    assert coe_vip("HuggingFaceTB/SmolVLM-Instruct") == 15
    assert coe_vip("/models/my-finetune/") is None
    assert coe_vip("demo") is None


def test_coe_settings_use_the_papers_vip_else_eq9():
    args = coe_args("Qwen/Qwen2.5-VL-7B-Instruct")
    assert args[args.index("--vip") + 1] == "18"
    assert "--visual-attention" in args and args[args.index("--conditions") + 1] == "full,blind"
    demo = coe_args("demo")
    assert "--vip" not in demo
    assert demo[demo.index("--vip-rule") + 1] == "eq9" and demo[demo.index("--alpha") + 1] == "0"
    # the paper's read position (Appendix C: the last generated token) on a real checkpoint only
    assert args[args.index("--read-at") + 1] == "generated" and "--read-at" not in demo


def test_run_data_demo_standins_benchmarks_and_unpublished(tmp_path):
    coe = RECIPES["coe"]
    assert [run_data(coe, r, "demo", None, None) for r in coe.runs] == ["demo:exist", "demo:color"]
    real = "Qwen/Qwen2.5-VL-7B-Instruct"
    assert run_data(coe, coe.runs[0], real, None, None) == "vlind"
    assert run_data(coe, coe.runs[1], real, tmp_path, None) == f"vilp@{tmp_path / 'ViLP'}"
    assert run_data(coe, coe.runs[1], real, None, {"ViLP": "mine.jsonl"}) == "mine.jsonl"
    conflict = RECIPES["conflict"]
    with pytest.raises(ReproduceError, match="not published; give it with --data 'Tri-PvP'=FILE"):
        run_data(conflict, conflict.runs[0], real, None, None)
    assert run_data(conflict, conflict.runs[0], real, None, {"*": "items.jsonl"}) == "items.jsonl"


def test_published_rows_name_their_table_and_model():
    for paper, rows in PUBLISHED.items():
        assert paper in RECIPES
        assert all({"model", "table", "metric", "value"} <= set(r) for r in rows)
    assert model_key("Qwen/Qwen2.5-VL-7B-Instruct") == "qwen2.5-vl-7b"
    tvi = [r for r in PUBLISHED["coe"] if r["metric"] == "TVI" and r["model"] == "qwen2.5-vl-7b"]
    assert {r["dataset"]: r["value"] for r in tvi} == {"VLind": 0.7155, "ViLP": 0.6335}


def test_errors_before_any_model_loads(tmp_path, capsys):
    assert (
        main(
            [
                "reproduce",
                "coe",
                "--model",
                "demo",
                "--out",
                str(tmp_path / "o"),
                "--data-root",
                str(tmp_path / "missing"),
            ]
        )
        == 2
    )
    assert capsys.readouterr().err.strip().startswith("error: UsageError: --data-root")
    assert (
        main(["reproduce", "ablation", "--model", "someone/some-vlm", "--out", str(tmp_path / "o")])
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ReproduceError: ablation: the data of") and "\n" not in err
    with pytest.raises(ReproduceError, match="no recipe for 'tvi'"):
        reproduce("tvi", "demo", out=tmp_path)


def test_coe_recipe_end_to_end_on_the_demo(tmp_path):
    result = reproduce("coe", "demo", out=tmp_path, n=24)
    table = pd.read_csv(tmp_path / "table.csv")
    assert set(table["dataset"]) == {"VLind", "ViLP"}
    for label in ("VLind", "ViLP"):
        rows = table[table["dataset"] == label].set_index("metric")["value"]
        # Table 7's counts from the study's own per-sample file
        per = pd.read_csv(tmp_path / label / "per_sample.csv")
        assert rows["|D|"] == len(per) == 24
        assert rows["|D_VT|"] == (per["group"] == "D_VT").sum()
        assert rows["|D_T|"] == (per["group"] == "D_T").sum()
        corr = pd.read_csv(tmp_path / label / "correlations.csv").set_index("score")["rho"]
        # the table holds ρ rounded to 4 decimals: half a unit of the last, plus float64's ε
        # for the CSV round trip (S = 1)
        approx_close(
            [rows["TVI"], rows["Visual Attention"]],
            [corr["TVI (post-VIP)"], corr["visual attention"]],
            0.5e-4 + EPS["float64"],
            why="the reproduced table rounds ρ to 4 decimals",
        )
    md = (tmp_path / "table.md").read_text()
    assert "0.7155" in md and "the paper has no row for this model" in md
    assert result.model_key is None


def test_collectors_read_the_studies_tables(tmp_path):
    from interp.studies.reproduce.recipes import Run, conflict_collect, frame_rows, recall_collect

    run = Run("X", None, "demo")
    (tmp_path / "bias_by_evidence.csv").write_text(
        "evidence,label,rate,low,high,k,n\nPercI-PropA,BIAS_IMAGE,0.497,0.4,0.6,5,10\n"
    )
    assert conflict_collect(tmp_path, run) == [
        {
            "table": "Fig. 3",
            "dataset": "X",
            "condition": "PercI-PropA",
            "metric": "BIAS_IMAGE (%)",
            "value": 49.7,
            "n": 10,
        }
    ]
    (tmp_path / "gap.csv").write_text(
        "family,metric,text_only,visual,full_info,gap,gap_low,gap_high,relative_decline,n\n"
        "all,inclusion,0.9866,0.3128,1.0,0.67,0.5,0.8,0.683,11\nall,exact,0.5,0.1,1,0,0,0,0,11\n"
    )
    got = {r["metric"]: r["value"] for r in recall_collect(tmp_path, run)}
    assert got == {
        "Text Only accuracy (%)": 98.66,
        "Visual accuracy (%)": 31.28,
        "Visual: relative decline (%)": 68.3,
    }
    (tmp_path / "main.csv").write_text(
        'variant,n,with image,blind\nplain,12,"1.00 [1.00, 1.00]","0.58 [0.33, 0.83]"\n'
    )
    rows = frame_rows("main.csv", "main table")(tmp_path, run)
    assert [(r["metric"], r["value"]) for r in rows] == [
        ("n", 12.0),
        ("with image", 1.0),
        ("blind", 0.58),
    ]
