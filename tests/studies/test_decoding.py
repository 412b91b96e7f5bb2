"""The decoding study (``interp decoding``, alias ``interp decode``): POPE metrics against scikit-learn, the settings as POPE
builds them, the runs against plain ``interp.generate`` calls, and the command's outputs and
one-line errors."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import accuracy_score, f1_score, precision_score, recall_score

import interp
from interp.cli import main
from interp.datasets import demo_world
from interp.errors import DecodingError, EmptyInputError
from interp.studies.decoding import (
    evaluate_decoding,
    parameter_sweep,
    plot_methods,
    plot_sweep,
    pope_metrics,
    pope_settings,
    yes_no,
)
from interp.testing import one_error_line
from interventions.decoding import vcd


@pytest.fixture(scope="module")
def demo():
    return interp.load("demo")


@pytest.fixture(scope="module")
def pope():
    return demo_world("test", n=24, seed=5, qtypes=["exist"])


def test_pope_metrics_equal_scikit_learn():
    rng = np.random.default_rng(0)
    for _ in range(20):
        truth = rng.choice(["yes", "no"], 30).tolist()
        pred = rng.choice(["yes", "no"], 30).tolist()
        m = pope_metrics(pred, truth)
        t, p = np.array(truth) == "yes", np.array(pred) == "yes"
        assert m["accuracy"] == pytest.approx(accuracy_score(t, p))
        assert m["precision"] == pytest.approx(precision_score(t, p))
        assert m["recall"] == pytest.approx(recall_score(t, p))
        assert m["f1"] == pytest.approx(f1_score(t, p))
        assert m["yes_ratio"] == pytest.approx(p.mean())
    assert np.isnan(pope_metrics(["no", "no"], ["yes", "no"])["precision"])


@pytest.mark.parametrize(
    "answer, expected",
    [
        ("yes", "yes"),
        ("Yes, there is a cat.", "yes"),
        ("no", "no"),
        ("No.", "no"),
        ("There is not a cat", "no"),
        ("there isn't one", "no"),
        ("nothing", "yes"),  # POPE's rule reads words, not prefixes
    ],
)
def test_answers_are_read_as_pope_does(answer, expected):
    assert yes_no(answer) == expected


def test_settings_hold_every_positive_and_their_own_negatives(pope):
    settings = pope_settings(pope)
    assert list(settings) == ["random", "popular", "adversarial"]
    positives = {i for i, s in enumerate(pope) if s.answer == "yes"}
    for name, idx in settings.items():
        negatives = {i for i in idx if pope[i].answer == "no"}
        assert positives <= set(idx)
        assert all(pope[i].meta["pope_negative"] == name for i in negatives)
        assert len(negatives) == len(positives)  # POPE's balance: one of each per scene
    with pytest.raises(EmptyInputError, match="'yes' or 'no'"):
        pope_settings(demo_world("test", n=4, qtypes=["color"]))


def test_runs_are_the_generations_of_each_method(demo, pope):
    runs = evaluate_decoding(
        demo, pope, ["greedy", "vcd"], seeds=(1,), max_new_tokens=3, progress_bar=False
    )
    direct = {
        # plain decoding is labelled by the name it was asked by
        ("greedy", "greedy"): interp.generate(demo, pope, max_new_tokens=3, progress_bar=False),
        ("vcd", "sampled"): interp.generate(
            demo,
            pope,
            decoding=vcd(),
            do_sample=True,
            seed=1,
            max_new_tokens=3,
            progress_bar=False,
        ),
    }
    for (method, mode), gen in direct.items():
        got = runs.answers[(runs.answers["method"] == method) & (runs.answers["mode"] == mode)]
        assert got["answer"].tolist() == gen.texts
    # metrics per setting, recomputed with scikit-learn from the answers
    metrics = runs.metrics()
    for _, row in metrics.iterrows():
        part = runs.answers[
            (runs.answers["method"] == row["method"])
            & (runs.answers["mode"] == row["mode"])
            & (runs.answers["seed"] == row["seed"])
        ].reset_index(drop=True)
        part = part.iloc[runs.settings[row["setting"]]]
        t, p = part["truth"] == "yes", part["predicted"] == "yes"
        assert row["accuracy"] == pytest.approx(accuracy_score(t, p))
        assert row["f1"] == pytest.approx(f1_score(t, p, zero_division=np.nan), nan_ok=True)
    assert len(metrics) == 2 * 2 * 3  # methods x (greedy, one seed) x settings


def test_summary_is_the_mean_and_std_over_seeds(demo, pope):
    runs = evaluate_decoding(
        demo, pope, ["vdd"], greedy=False, seeds=(0, 1, 2), max_new_tokens=3, progress_bar=False
    )
    metrics, summary = runs.metrics(), runs.to_frame()
    for setting in runs.settings:
        values = metrics[metrics["setting"] == setting]["yes_ratio"].to_numpy()
        row = summary[summary["setting"] == setting].iloc[0]
        assert row["yes_ratio"] == pytest.approx(values.mean())
        assert row["yes_ratio_std"] == pytest.approx(values.std())
        assert row["runs"] == 3
    table = runs.table("yes_ratio")
    assert "±" in table.iloc[0, 0]
    import matplotlib

    matplotlib.use("Agg")
    assert plot_methods(runs).axes


def test_sweep_rows_equal_single_runs(demo, pope):
    frame = parameter_sweep(demo, pope, "vcd", alphas=(0.0, 2.0), betas=(0.5,), max_new_tokens=3)
    assert set(frame["parameter"]) == {"alpha", "beta"}
    one = evaluate_decoding(
        demo,
        pope,
        ["vcd"],
        params={"vcd": {"alpha": 2.0, "beta": 0.1}},
        seeds=(),
        max_new_tokens=3,
        progress_bar=False,
    ).metrics()
    got = frame[(frame["parameter"] == "alpha") & (frame["value"] == 2.0)]
    pd.testing.assert_series_equal(
        got["f1"].reset_index(drop=True), one["f1"].reset_index(drop=True), check_names=False
    )
    assert plot_sweep(frame).axes


def test_bad_methods_are_refused_before_any_generation(demo, pope, monkeypatch):
    def no_generate(*a, **k):
        raise AssertionError("generated before the check")

    monkeypatch.setattr(interp, "generate", no_generate)
    with pytest.raises(DecodingError, match="unknown decoding method 'beam'"):
        evaluate_decoding(demo, pope, ["greedy", "beam"])
    with pytest.raises(DecodingError, match="listed twice"):
        evaluate_decoding(demo, pope, ["vcd", "VCD"])
    with pytest.raises(DecodingError, match="listed twice"):  # two names of plain decoding
        evaluate_decoding(demo, pope, ["greedy", "plain"])
    flash = interp.load("demo", attn_implementation="sdpa")
    flash.hf.config._attn_implementation = "flash_attention_2"  # no 4-D mask: PAI cannot run
    with pytest.raises(interp.InterventionError, match="attn_implementation='sdpa'"):
        evaluate_decoding(flash, pope, ["greedy", "pai"])


def test_the_command_writes_its_tables(tmp_path, capsys):
    out = tmp_path / "run"
    code = main(
        [
            "decoding",
            "--model",
            "demo",
            "--data",
            "pope",
            "--n",
            "16",
            "--methods",
            "greedy,vcd",
            "--seeds",
            "0,1",
            "--out",
            str(out),
            "--no-progress",
        ]
    )
    assert code == 0
    for name in ("answers.csv", "metrics.csv", "summary.csv", "summary.txt", "methods.png"):
        assert (out / name).exists(), name
    # the ranking with paired intervals, per setting, in a table and in the summary
    ranked = pd.read_csv(out / "comparisons.csv")
    assert set(ranked["setting"]) == {"random", "popular", "adversarial"}
    assert set(ranked["verdict"]) <= {"baseline", "higher", "lower", "no difference"}
    assert "accuracy ranked, adversarial (greedy;" in (out / "summary.txt").read_text()
    summary = pd.read_csv(out / "summary.csv")
    assert set(summary["method"]) == {"greedy", "vcd"}  # the names asked for
    assert set(summary["mode"]) == {"greedy", "sampled"}
    assert "adversarial" in (out / "summary.txt").read_text()


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--methods", "greedy,beam"], "unknown decoding method 'beam'"),
        (["--beta", "0"], r"beta must be in \(0, 1\]"),
        (["--alpha", "-1", "--methods", "vcd"], "alpha must be"),
        (["--seeds", "a,b"], "--seeds takes comma-separated integers"),
        (["--temperature", "0"], "--temperature must be > 0"),
        (["--data", "demo:color"], "answer is 'yes' or 'no'"),
        (["--methods", "contrast", "--amateur", "full"], "equals the expert"),
        (["--methods", "contrast", "--amateur", "nowhere"], "bad amateur condition"),
        (["--shard", "0/2"], "one process"),
    ],
)
def test_bad_options_are_one_line_before_the_model_loads(
    extra,
    message,
    tmp_path,
    capsys,
    no_model,
):
    out = tmp_path / "out"
    args = ["decoding", "--model", "demo", "--data", "pope", "--n", "8", "--out", str(out)]
    code = main(args + extra)
    err = capsys.readouterr().err
    assert code == 2
    assert re.search(message, one_error_line(err)), err
    assert not out.exists()


def test_decode_is_an_alias_of_decoding(tmp_path, capsys):
    """``interp decode``, the command's earlier name, runs the same command as ``interp decoding``:
    the same answers and the same summary."""
    outs = {}
    for name in ("decoding", "decode"):
        outs[name] = tmp_path / name
        argv = [name, "--model", "demo", "--data", "pope", "--n", "8", "--methods", "greedy"]
        argv += ["--seeds", "", "--max-new-tokens", "2", "--out", str(outs[name]), "--no-progress"]
        assert main(argv) == 0
    for file in ("answers.csv", "summary.csv", "summary.txt"):
        assert (outs["decode"] / file).read_text() == (outs["decoding"] / file).read_text(), file
    assert len(pd.read_csv(outs["decode"] / "answers.csv")) == 8


def test_the_alias_refuses_bad_options_as_the_command_does(
    tmp_path,
    capsys,
    no_model,
):
    out = tmp_path / "out"
    code = main(
        ["decode", "--model", "demo", "--data", "pope", "--out", str(out), "--shard", "0/2"]
    )
    assert code == 2
    line = one_error_line(capsys.readouterr().err)
    assert line == "error: UsageError: interp decoding runs in one process; drop --shard"
    assert not out.exists()


def test_the_alias_records_the_command_name():
    """`interp decode` and `interp decoding` are one command: outputs written by one are the
    other's (the run record names 'decoding' whichever was typed)."""
    from interp.cli import build_parser

    argv = ["--model", "demo", "--data", "demo", "--out", "unused"]
    for typed in ("decode", "decoding"):
        args = build_parser([typed]).parse_args([typed, *argv])
        assert args.command == "decoding"


def test_plain_decoding_keeps_its_label_and_an_earlier_plain_output_still_plots():
    """``plain`` is labelled ``plain``, ``greedy`` ``greedy``; a summary written when plain
    decoding was always labelled ``plain`` still draws its baseline line (the dashed line at the
    plain run's greedy value, read back from the axis)."""
    from interp.studies.decoding.measure import resolve_methods

    assert list(resolve_methods(["plain", "vcd"])) == ["plain", "vcd"]
    assert list(resolve_methods(["Greedy"])) == ["greedy"]
    assert list(resolve_methods(["none"])) == ["plain"]
    from interp.studies.decoding.measure import DecodingRuns

    truth = ["yes", "no", "yes", "no"]
    answers = pd.DataFrame(
        [
            {"method": m, "mode": "greedy", "seed": -1, "sample_id": f"s{i}", "truth": t,
             "answer": p, "predicted": p}
            for m, said in (("plain", ["yes"] * 4), ("vcd", truth))
            for i, (t, p) in enumerate(zip(truth, said))
        ]
    )  # fmt: skip
    old = DecodingRuns(answers, {"adversarial": [0, 1, 2, 3]}, {})
    import matplotlib

    matplotlib.use("Agg")
    fig = plot_methods(old, metrics=("accuracy",))
    dashed = [ln for ln in fig.axes[0].lines if ln.get_linestyle() == "--"]
    assert [ln.get_ydata()[0] for ln in dashed] == [0.5]  # plain says yes to all: 2 of 4
