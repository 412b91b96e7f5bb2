"""The standalone summaries of ``interp drives`` and ``interp attribute`` state each headline with
its n and a 95% interval (the functions the audit's sections use), and call one whose interval
holds "no effect" inconclusive; the S_PV table is drawn with every row and every value, in
columns that fit the report (issue #46, items 2 and 4)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from interp.samples import Sample
from interp.studies.audit.report import Section, holds
from interp.studies.drives.analysis import Imbalance
from interp.studies.drives.headlines import imbalance_headlines, interval_table

NUMBER = r"(-?[\d.]+(?:e-?\d+)?|n/a)"
BRACKET = rf"{NUMBER} \[{NUMBER}, {NUMBER}\]"


def _g3(x: float) -> str:
    """x as the report writes it (3 significant digits), by Python's own formatting."""
    return str(float(f"{x:.3g}"))


def _parse(pattern: str, text: str) -> tuple[float, float, float]:
    found = re.search(pattern, text)
    assert found, (pattern, text)
    return tuple(float(v) for v in found.groups())  # type: ignore[return-value]


def test_the_drives_summary_states_n_and_intervals(tmp_path: Path) -> None:
    from interp.cli import main
    from interp.data_spec import load_data
    from interp.studies.drives.contexts import DEFAULT_QTYPES

    out = tmp_path / "run"
    argv = ["drives", "--model", "demo", "--data", "demo", "--n", "12", "--k", "3", "--m", "0"]
    assert main([*argv, "--out", str(out), "--no-progress"]) == 0
    text = (out / "summary.txt").read_text()
    per = pd.read_csv(out / "samples.csv")
    samples = load_data("demo", 12, 0, default_qtypes=DEFAULT_QTYPES, columns=None)
    images = len({s.meta["group"] for s in samples})
    assert images < len(samples) == len(per)  # several wordings of one image
    assert f"95% intervals over {len(per)} answers on {images} images, resampling whole" in text
    for name, pattern in (
        ("prefix", rf"the prefix drive averages {BRACKET} bits"),
        ("question", rf"the question's {BRACKET}"),
        ("visual", rf"the image's {BRACKET}"),
    ):
        value, low, high = _parse(pattern, text)
        assert low <= value <= high
        assert str(value) == _g3(per[f"mean_{name}_drive"].mean())  # the mean by hand
    value, low, high = _parse(rf"a drop of {BRACKET}", text)
    assert low <= value <= high
    assert ("inconclusive, the interval holds 0" in text) == holds(low, high, 0.0)


def _imbalance(scores: np.ndarray, positive: np.ndarray) -> Imbalance:
    """An Imbalance whose table holds sklearn's AUROC (the intervals are the function's own)."""
    frame = pd.DataFrame(
        {
            "sample_id": [f"s{i}" for i in range(len(scores))],
            "positive": positive,
            "s_pv": scores,
            "answer_visual_drive": -scores[::-1],
        }
    )
    rows = []
    for title, column, sign in (
        ("S_PV", "s_pv", 1.0),
        ("answer-level visual drive (VCD)", "answer_visual_drive", -1.0),
    ):
        auc = roc_auc_score(positive, sign * frame[column])
        rows.append(
            {
                "score": title,
                "auroc": auc,
                "auroc_low": 0.0,
                "auroc_high": 1.0,
                "n_positive": int(positive.sum()),
                "n_negative": int((~positive).sum()),
            }
        )
    return Imbalance(frame, pd.DataFrame(rows), pd.DataFrame())


@pytest.mark.parametrize("planted", [True, False])
def test_an_auroc_at_chance_is_inconclusive_over_whole_images(planted: bool) -> None:
    """Eight images with four answers each: a score that separates the labels (planted) gives an
    interval above 0.5; pure noise gives one that holds 0.5 and the words say inconclusive."""
    rng = np.random.default_rng(3)
    positive = np.repeat(rng.permutation([True, False] * 4), 4)  # one label per image
    scores = rng.normal(size=32) + (3.0 * positive if planted else 0.0)
    samples = [Sample(id=f"s{i}", question="q", meta={"group": i // 4}) for i in range(32)]
    head = imbalance_headlines(samples, _imbalance(scores, positive))
    n = head.numbers
    assert n["n_labelled_images"] == 8 and n["n_prior_driven"] == n["n_grounded"] == 16
    assert str(n["s_pv_auroc"]) == _g3(roc_auc_score(positive, scores))
    at_chance = holds(n["s_pv_auroc_low"], n["s_pv_auroc_high"], 0.5)
    assert at_chance is not planted
    text = f"S_PV AUROC {n['s_pv_auroc']} [{n['s_pv_auroc_low']}, {n['s_pv_auroc_high']}]"
    assert (text + "; inconclusive: it holds 0.5, chance" in head.text) == at_chance
    assert "16 prior-driven, 16 grounded answers on 8 images" in head.text


def test_the_s_pv_table_shows_every_row_and_value_in_columns_that_fit() -> None:
    """The wide S_PV frame (3 scores × 21 columns) becomes value [low, high] cells: as many rows,
    every value and both ends of every interval in them, 11 columns; the report's HTML table
    has a row for each score."""
    rng = np.random.default_rng(0)
    names = ["auroc", "auprc", "difference", "cohens_d", "cliffs_delta"]
    wide = pd.DataFrame({"score": ["S_PV", "answer-level VCD", "mean VCD"]})
    for name in names:
        mid = rng.normal(size=3)
        wide[name], wide[f"{name}_low"], wide[f"{name}_high"] = mid, mid - 0.1, mid + 0.2
    wide["positive_rate"], wide["n_positive"], wide["n_negative"] = 0.556, 80, 64
    wide["mean_prior_driven"], wide["mean_grounded"] = rng.normal(size=3), rng.normal(size=3)
    assert wide.shape == (3, 21)
    table = interval_table(wide)
    assert len(table) == len(wide) and table["score"].tolist() == wide["score"].tolist()
    assert len(table.columns) == 21 - 2 * len(names)
    for i in range(len(wide)):
        for name in names:
            cell = table.loc[i, name]
            row = wide.loc[i]
            want = f"{_g3(row[name])} [{_g3(row[name + '_low'])}, {_g3(row[name + '_high'])}]"
            assert cell == want
        for name in ("positive_rate", "n_positive", "n_negative", "mean_grounded"):
            assert table.loc[i, name] == wide.loc[i, name]
    sec = Section("drives", "t", n=144)
    sec.add_table("S_PV (80 vs 64 answers)", table, index=False)
    html = sec.tables[0][1]
    assert html.count("<tr") == 1 + len(wide)
    for i in range(len(wide)):
        assert wide.loc[i, "score"] in html and table.loc[i, "auroc"] in html


def test_the_attribute_summary_states_n_and_intervals(tmp_path: Path, monkeypatch) -> None:
    from importlib.metadata import EntryPoint

    import interp.cli

    ep = EntryPoint(
        "attribute", "interp.studies.attribute.cli:register", interp.cli.ENTRY_POINT_GROUP
    )
    studies = [e for e in interp.cli._studies() if e.name != "attribute"]
    monkeypatch.setattr(interp.cli, "_studies", lambda: [*studies, ep])
    out = tmp_path / "o"
    argv = ["attribute", "--model", "demo", "--data", "demo", "--n", "8", "--grid", "2x2"]
    assert interp.cli.main([*argv, "--out", str(out), "--no-progress", "--plots", "0"]) == 0
    text = (out / "summary.txt").read_text()
    shares = pd.read_csv(out / "object_shares.csv")
    value, low, high = _parse(rf"{BRACKET} of the positive occlusion mass", text)
    assert low <= value <= high and str(value) == _g3(shares["inside"].mean())
    value, low, high = _parse(rf"\(difference {BRACKET}", text)
    assert str(value) == _g3((shares["inside"] - shares["random"]).mean())
    assert ("inconclusive, it holds 0" in text) == holds(low, high, 0.0)
    assert f"over {len(shares)} answers on " in text
    n_grounded = int((shares["group"] == "grounded").sum())
    assert f"(the drawn colour, n = {n_grounded})" in text
    assert re.search(rf"mean log p\(answer\) {BRACKET}", text)
