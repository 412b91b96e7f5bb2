"""One recipe per paper: which study command, on which data, with which of the paper's settings,
and which of its output files make the paper's table.

A recipe drives the study through its own command (``interp <study> ...``), so every check, the
resumable store and the output folder work as they do by hand; it never imports another study.
Every run is greedy (temperature 0: the studies decode greedily), with the benchmark's own prompt
and answer format (set by its reader in :mod:`interp.datasets.benchmarks`).

Settings per paper:

- ``coe`` — Table 3 (Spearman's rho of TVI, visual attention and output divergence with
  correctness) and Table 7 (``|D|``, ``|D_VT|``, ``|D_T|``) on VLind-Bench and ViLP; conditions ``full`` vs
  ``blind``, cosine distance, exact answer match, at most 8 new tokens; the VIP is the paper's for
  the model (Appendix C, :data:`~.published.COE_VIPS`), else Eq. 9 with beta = 2 and no
  significance floor (Appendix B.2). **Read position**: :data:`COE_READ_AT` — the paper's, the
  last *generated* token (Appendix C), on a real checkpoint; on the demo models the last prompt
  token, ``interp coe``'s default (their one-token answers put D_VT's two states on different
  tokens, so the generated reading differs most at the embeddings; ``docs/papers.md``).
- ``recall`` — the Text Only vs Visual accuracy of Sec. 4 (two-way inclusion) on MNIST (the
  set whose questions the paper makes by rule; the others need its unreleased QA pairs).
- ``drives`` — the source-removal check of Table 3 (MAVIS: the first 500 samples, reference
  ``verifiable_facts[0]``).
- ``ablation`` — accuracy with and without the image per wording and category.
- ``conflict`` — response labels per evidence condition (Tri-PvP's Fig. 3).

On the demo models every run uses the demo world's stand-in named in :data:`RECIPES`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from interp.study_registry import studies

from .published import coe_vip

COE_READ_AT = "generated"
"""The read position of the coe recipe on a real checkpoint (``--read-at``; the paper's Appendix C:
the last generated token). The demo models keep the command's default, the last prompt token."""

DEMO_MODELS = ("demo", "demo-smol", "demo-omni")


@dataclass(frozen=True)
class Run:
    """One study run of a recipe: ``label`` (the paper's dataset name), the registered
    ``benchmark`` for a real checkpoint (None: not published, the user gives ``--data``) and the
    demo world's stand-in for the demo models."""

    label: str
    benchmark: str | None
    demo: str
    demo_omni: str | None = None


@dataclass(frozen=True)
class Recipe:
    paper: str
    study: str
    title: str
    runs: tuple[Run, ...]
    args: Callable[[str], list[str]]
    collect: Callable[[Path, Run], list[dict]]
    notes: tuple[str, ...] = field(default_factory=tuple)


def is_demo(model: str) -> bool:
    return model in DEMO_MODELS


# -- coe ----------------------------------------------------------------------------------------------


def coe_args(model: str) -> list[str]:
    args = ["--conditions", "full,blind", "--metric", "cosine", "--match", "exact"]
    args += ["--max-new-tokens", "8", "--visual-attention"]
    vip = coe_vip(model)
    args += ["--vip", str(vip)] if vip is not None else ["--vip-rule", "eq9", "--alpha", "0"]
    if not is_demo(model):
        args += ["--read-at", COE_READ_AT]
    return args


_COE_SCORES = {
    "TVI (post-VIP)": "TVI",
    "visual attention": "Visual Attention",
    "output divergence": "Output Divergence",
}


def coe_collect(out: Path, run: Run) -> list[dict]:
    rows = []
    corr = pd.read_csv(out / "correlations.csv")
    corr = corr[corr["subset"] == "all"]
    for _, r in corr.iterrows():
        if r["score"] in _COE_SCORES:
            rows.append(
                {
                    "table": "Table 3",
                    "dataset": run.label,
                    "metric": _COE_SCORES[r["score"]],
                    "value": round(float(r["rho"]), 4),
                    "p": float(r["p_value"]),
                }
            )
    per = pd.read_csv(out / "per_sample.csv")
    counts = {"|D|": len(per), "|D_VT|": int((per["group"] == "D_VT").sum())}
    counts["|D_T|"] = counts["|D|"] - counts["|D_VT|"]
    rows += [
        {"table": "Table 7", "dataset": run.label, "metric": k, "value": v}
        for k, v in counts.items()
    ]
    for line in (out / "summary.txt").read_text().splitlines():
        if line.startswith("VIP: layer"):
            rows.append(
                {
                    "table": "Appendix C",
                    "dataset": run.label,
                    "metric": "VIP",
                    "value": int(line.split()[2]),
                }
            )
            break
    return rows


# -- the other papers: the study's main table file, one row per cell -----------------------------------


_ESTIMATE = re.compile(r"^\s*(-?\d+(?:\.\d+)?(?:e-?\d+)?)\s*\[")


def _number(value: object) -> float | None:
    """A table cell as a number: numbers as they are, ``"0.58 [0.33, 0.83]"`` (an estimate with
    its interval, as the studies print them) as its estimate, anything else None."""
    if isinstance(value, (int, float)) and not pd.isna(value):
        return float(value)
    if isinstance(value, str):
        m = _ESTIMATE.match(value)
        return float(m.group(1)) if m else None
    return None


def frame_rows(file: str, table: str) -> Callable[[Path, Run], list[dict]]:
    """Rows of a study's CSV output, melted to (table, dataset, row, metric, value)."""

    def collect(out: Path, run: Run) -> list[dict]:
        frame = pd.read_csv(out / file)
        first = frame.columns[0]
        rows = []
        for _, r in frame.iterrows():
            for col in frame.columns[1:]:
                value = _number(r[col])
                if value is not None:
                    rows.append(
                        {
                            "table": table,
                            "dataset": run.label,
                            "row": str(r[first]),
                            "metric": str(col),
                            "value": round(float(value), 4),
                        }
                    )
        return rows

    return collect


def recall_collect(out: Path, run: Run) -> list[dict]:
    """Sec. 4's numbers from the study's ``gap.csv`` (two-way inclusion), in per cent."""
    gap = pd.read_csv(out / "gap.csv")
    gap = gap[gap["metric"] == "inclusion"]
    names = {
        "text_only": "Text Only accuracy (%)",
        "visual": "Visual accuracy (%)",
        "relative_decline": "Visual: relative decline (%)",
    }
    return [
        {
            "table": "Sec. 4",
            "dataset": str(r["family"]),
            "metric": label,
            "value": round(100 * float(r[col]), 2),
        }
        for _, r in gap.iterrows()
        for col, label in names.items()
    ]


def conflict_collect(out: Path, run: Run) -> list[dict]:
    """Fig. 3's response-label rates per evidence condition (``bias_by_evidence.csv``), in per
    cent, with the paper's condition names (``PercI-PropA``, ...)."""
    frame = pd.read_csv(out / "bias_by_evidence.csv")
    return [
        {
            "table": "Fig. 3",
            "dataset": run.label,
            "condition": str(r["evidence"]),
            "metric": f"{r['label']} (%)",
            "value": round(100 * float(r["rate"]), 1),
            "n": int(r["n"]),
        }
        for _, r in frame.iterrows()
    ]


COE = Recipe(
    "coe",
    "coe",
    "Table 3 (Spearman's rho with correctness) and Table 7 (the split)",
    (Run("VLind", "vlind", "demo:exist"), Run("ViLP", "vilp", "demo:color")),
    coe_args,
    coe_collect,
    notes=(
        "demo stand-ins: VLind → demo:color (counterfactual colours), ViLP → demo:exist "
        "(co-occurrence prior)",
        "read position: the last generated token as the paper's Appendix C (the last prompt "
        "token on the demo models; see COE_READ_AT)",
    ),
)

RECALL = Recipe(
    "recall",
    "recall",
    "Text Only vs Visual accuracy (Sec. 4, Fig. 3)",
    (Run("MNIST", "mnist", "demo"),),
    lambda model: [],
    recall_collect,
    notes=(
        "MNIST: the paper's rule-made arithmetic questions on the published images (seeded)",
        "CIFAR100 / Food101 / Landmarks need the paper's QA pairs, which are not released: "
        "interp recall --data cifar100@DIR with DIR/qa.jsonl (interp.read_benchmark)",
    ),
)

DRIVES = Recipe(
    "drives",
    "drives",
    "source removal (Table 3)",
    (Run("MAVIS", "mavis", "demo"),),
    lambda model: ["--k", "20", "--m", "0"],
    frame_rows("source_removal.csv", "Table 3"),
    notes=(
        "MAVIS is read from a local copy (--data-root DIR with DIR/MAVIS); on the demo "
        "models the demo world's descriptions stand in",
        "K = 20 support pairs (the paper's); the randomized-intervention recovery (M = "
        "100 held-out contexts) is another table and is skipped (--m 0)",
    ),
)

ABLATION = Recipe(
    "ablation",
    "ablation",
    "accuracy with and without the image per wording",
    (Run("540 images x 4 wordings", None, "demo"),),
    lambda model: [],
    frame_rows("main_table.csv", "main table"),
    notes=("the paper's benchmark is not published: give --data file.jsonl",),
)

CONFLICT = Recipe(
    "conflict",
    "conflict",
    "response labels per evidence condition (Fig. 3)",
    (Run("Tri-PvP", None, "demo", demo_omni="demo:trimodal"),),
    lambda model: [],
    conflict_collect,
    notes=(
        "Tri-PvP's 8,000 samples are not in a layout we know: give --data file.jsonl",
        "demo stand-ins: the demo world's image / caption conflicts (demo); on demo-omni "
        "its tri-modal items (demo:trimodal)",
    ),
)

RECIPES: dict[str, Recipe] = {r.paper: r for r in (COE, RECALL, DRIVES, ABLATION, CONFLICT)}
"""The project's recipes by paper. Each study names its own in its registry entry
(``StudyEntry.recipe``), and :func:`recipes` reads them from there."""


def recipes() -> dict[str, Recipe]:
    """The recipe of every registered study that declares one (:mod:`interp.study_registry`),
    by study name."""
    found = {}
    for entry in studies():
        recipe = entry.load("recipe")
        if recipe is not None:
            found[entry.name] = recipe
    return found
