"""``interp audit`` — one command, one report: is this model looking at the image?

Runs every study the data supports on one model and writes:

- ``report.html`` — self-contained (figures embedded as PNG data, no network, opens from disk): a
  summary of the verdicts in plain words with the numbers behind them, then one section per study
  (figures and tables), the model and data fingerprints, the versions and the exact command;
- ``summary.json`` — every headline number, for scripts;
- ``store/`` — one resumable result store per study: a killed audit re-run with the same command
  resumes and gives the same ``summary.json``.

The report and ``summary.json`` are always written. A study runs on the samples that carry what
it needs and is skipped with a line saying what is missing (:data:`STUDIES` lists them with their
requirements); a study that stops on the data while it runs (e.g. removing the image changes
every answer, so the chain of embedding has one group only) becomes a section saying why. The
studies that did not run are listed at the end of the report, in ``summary.json`` (``status``
``skipped`` or ``failed``, with the ``reason``) and on stdout; the exit status is 0 when at least
one study ran. ``--n`` is the number of samples *per question kind* (the ``qtype`` label): the
demo mix has 120 of each by default (descriptions a third as many), a data file is used whole
unless ``--n`` is given.

=============  ==========================================================================
study          needs
=============  ==========================================================================
coe            samples with an image (and answers, for the correlation with correctness);
               short-answer questions first
drives         samples with an image and a long answer (3 words or more; demo descriptions)
ablation       samples with an image, an answer and ``variant`` / ``category`` labels
recall         visual-reference items: ``group``, ``setting`` and ``family`` labels
decoding       yes/no questions (POPE-style), both answers present
conflict       conflict items: per-source labels, an ``order`` and a ``caption`` in ``meta``
=============  ==========================================================================

``--data`` takes ``demo`` (a mix of the demo world's colour, existence and conflict questions),
the project's JSONL, a VLMEvalKit TSV benchmark file (base64 images, options A–D) or a POPE
question file with ``--images`` (see :mod:`interp.datasets.formats`).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import logging
import platform
import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from interp.cli import load_data
from interp.command import Invocation, UsageError, add_command, int_list, split_list
from interp.errors import DataFormatError, EmptyGroupError, InterpError
from interp.samples import Sample, ensure_samples

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from interp.model import VLM

Number = int | float | str | None

logger = logging.getLogger(__name__)


def headline(value: Any) -> Number:
    """A headline number as it appears in ``summary.json`` and the page: ints as they are, floats
    to 3 significant digits, NaN as None."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    x = float(value)
    if not np.isfinite(x):
        return None
    return float(f"{x:.3g}")


def show(value: Number) -> str:
    """How the page writes a headline number (the same text ``summary.json`` holds)."""
    return "n/a" if value is None else str(value)


def figure_data(fig: Figure) -> str:
    """A figure as a ``data:image/png;base64,...`` URI (closed afterwards)."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


@dataclass
class Section:
    """One study's part of the report.

    Attributes:
        key, title: the study's name and heading.
        ran: whether it ran; ``reason`` says why not (or what it left out).
        verdict: the finding in plain words (with the numbers it rests on).
        numbers: headline numbers (:func:`headline`-rounded), also in ``summary.json``.
        figures: (caption, data URI); tables: (caption, HTML).
        n: samples used.
    """

    key: str
    title: str
    ran: bool = True
    reason: str = ""
    verdict: str = ""
    numbers: dict[str, Number] = field(default_factory=dict)
    figures: list[tuple[str, str]] = field(default_factory=list)
    tables: list[tuple[str, str]] = field(default_factory=list)
    n: int = 0
    failed: bool = False

    def add_table(self, caption: str, frame: pd.DataFrame, index: bool = True) -> None:
        """Add a table; its snake_case headers are written in words, and an index name joins
        the header row (no row of its own)."""
        frame = frame.rename(columns=lambda c: label(c) if isinstance(c, str) else c)
        if index and frame.index.name and frame.columns.nlevels == 1:
            frame = frame.rename_axis(index=None, columns=label(str(frame.index.name)))
        elif index and frame.index.name:  # the column levels' names head the index column
            frame = frame.rename_axis(index=None)
        html = frame.to_html(
            index=index,
            float_format=lambda x: f"{x:.3g}",
            na_rep="–",
            border=0,
            classes="table",
        )
        self.tables.append((caption, html))

    @property
    def status(self) -> str:
        return "ran" if self.ran else ("failed" if self.failed else "skipped")

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ran": self.ran, "status": self.status, "n": self.n}
        if self.reason:
            out["reason"] = self.reason
        if self.ran:
            out["numbers"] = self.numbers
        return out


# Headline numbers and table headers in words (the raw key stays in summary.json and in the
# page's tooltip).
LABELS = {
    "vip": "Visual Integration Point (layer)",
    "n_layers": "decoder layers",
    "vip_statistic": "two-sample statistic at the VIP",
    "share_answers_changed_without_image": "share of answers that change without the image",
    "accuracy_with_image": "accuracy with the image",
    "accuracy_without_image": "accuracy without the image",
    "accuracy_blind": "accuracy without the image (blind)",
    "rho_tvi_correct": "Spearman ρ, post-VIP TVI vs correct",
    "p_tvi_correct": "p-value of that ρ",
    "rho_pre_vip_tvi_correct": "Spearman ρ, pre-VIP TVI vs correct",
    "plain_yes_ratio": "yes-ratio, plain decoding",
    "plain_accuracy": "accuracy, plain decoding",
    "plain_f1": "F1, plain decoding",
    "best_accuracy": "best accuracy",
    "yes_ratio": "yes-ratio",
    "f1": "F1",
    "p_full": "mean token probability, full input",
    "p_remove": "mean token probability, source removed",
    "s_pv_auroc": "S_PV AUROC (prior-driven vs grounded)",
    "answer_vcd_auroc": "answer-level VCD AUROC",
    "mean_qcd_bits": "mean QCD (bits)",
    "mean_vcd_bits": "mean VCD (bits)",
    "mean_pcd_bits": "mean PCD (bits)",
    "k": "support size K",
    "drop_blind": "accuracy the image adds (blind)",
    "agreement_blind": "same answer without the image",
    "text_only_accuracy": "accuracy, Text-Only",
    "visual_accuracy": "accuracy, Visual reference",
    "full_info_accuracy": "accuracy, Full Info",
    "relative_decline": "relative decline, Visual vs Text-Only",
    "items": "items",
    "follows_drawn_object": "follows the drawn object",
    "follows_written_label": "follows the written label",
    "follows_caption": "follows the caption",
    "caption_after_contrast": "follows the caption, contrastive decoding",
    "agreeing_accuracy_greedy": "accuracy where sources agree, greedy",
    "agreeing_accuracy_contrast": "accuracy where sources agree, contrastive",
    "probe_best_balanced_accuracy": "probe: best balanced accuracy",
    "probe_above_chance_from_layer": "probe: above chance from layer",
    "with_image": "with image",
    "p_value": "p-value",
    "auroc": "AUROC",
    "auprc": "AUPRC",
}
_SNAKE = re.compile(r"^[a-z0-9]+(?:_[a-z0-9]+)+$|^[a-z]+$")
_PREFIXES = {
    "gap_": "visual-reference gap, ",
    "drop_": "accuracy the image adds, ",
    "p_without_": "mean token probability without the ",
}
_SUFFIXES = {"_f1": ", F1", "_yes_ratio": ", yes-ratio"}


def label(key: str) -> str:
    """A key in words: :data:`LABELS`, else snake_case with spaces (other text unchanged)."""
    if key in LABELS:
        return LABELS[key]
    if not _SNAKE.match(key):
        return key
    for prefix, words in _PREFIXES.items():
        if key.startswith(prefix):
            return words + key[len(prefix) :].replace("_", " ")
    for suffix, words in _SUFFIXES.items():
        if key.endswith(suffix):
            return key[: -len(suffix)].replace("_", " ") + words
    return key.replace("_", " ")


@dataclass
class AuditOptions:
    """Settings every section receives."""

    batch_size: int = 16
    max_new_tokens: int = 8
    seeds: tuple[int, ...] = (0,)
    store: Path | None = None
    overwrite: bool = False


# -- sample selection ----------------------------------------------------------------------------


def _is_conflict(s: Sample) -> bool:
    return isinstance(s.meta.get("order"), str) and "caption" in s.meta


def _is_yes_no(s: Sample) -> bool:
    return str(s.answer or "").strip().lower() in ("yes", "no")


def select_coe(samples: Sequence[Sample]) -> tuple[list[Sample], str]:
    """Short-answer questions with an image (the language-prior benchmark's kind), leaving out
    the items other studies are built for — yes/no questions, visual-reference items, long
    answers — unless too few remain (then any sample with an image that is not a conflict)."""

    def short(s: Sample) -> bool:
        return len(str(s.answer or "").split()) <= 2 and s.meta.get("qtype") != "describe"

    base = [s for s in samples if s.has_image and not _is_conflict(s)]
    chosen = [s for s in base if not _is_yes_no(s) and not s.meta.get("setting") and short(s)]
    if len(chosen) < 4:
        chosen = [s for s in base if not _is_yes_no(s)]
    if len(chosen) < 4:
        chosen = base
    if len(chosen) < 4:
        return [], f"needs at least 4 samples with an image (the data has {len(chosen)})"
    return chosen, ""


def select_decoding(samples: Sequence[Sample]) -> tuple[list[Sample], str]:
    chosen = [s for s in samples if _is_yes_no(s) and s.has_image and not _is_conflict(s)]
    answers = {str(s.answer).strip().lower() for s in chosen}
    if answers != {"yes", "no"}:
        return [], "needs yes/no questions with both answers (POPE-style existence questions)"
    return chosen, ""


def select_conflict(samples: Sequence[Sample]) -> tuple[list[Sample], str]:
    from .conflict import check_items

    chosen = [s for s in samples if _is_conflict(s)]
    if not chosen:
        return [], (
            "needs conflict items (meta: image_label, propositional_label, text_label, order, "
            "caption)"
        )
    try:
        check_items(chosen)
    except DataFormatError as err:
        return [], f"conflict items are malformed: {err}"
    return chosen, ""


# -- sections ------------------------------------------------------------------------------------


def run_coe(vlm: VLM, samples: list[Sample], opts: AuditOptions) -> Section:
    from interp.errors import NoVIPError

    from .coe import chain_of_embedding, diagnose, plot_distance_curves, plot_tvi_distributions

    sec = Section("coe", "Where is the image integrated? (chain of embedding)", n=len(samples))
    coe = chain_of_embedding(
        vlm,
        samples,
        max_new_tokens=opts.max_new_tokens,
        batch_size=opts.batch_size,
        store=_store(opts, "coe"),
        overwrite=opts.overwrite,
        progress_bar=False,
    )
    try:
        diag = diagnose(coe)
    except NoVIPError as err:
        diag = diagnose(coe, fallback_vip=vlm.n_layers)
        sec.reason = f"no automatic VIP ({err}); TVI uses the last layer"
    res = diag.detector.result_
    full, blind = coe.answers["full"], coe.answers["blind"]
    answers = [str(s.answer) if s.answer is not None else None for s in samples]
    has_ref = all(a is not None for a in answers)
    sec.numbers = {
        "vip": headline(diag.vip),
        "n_layers": headline(diag.n_layers),
        "vip_statistic": headline(res.statistic[diag.vip]),
        "share_answers_changed_without_image": headline(float(np.mean(diag.in_vt))),
    }
    frame = diag.to_frame()
    if has_ref:
        from probes.split import is_correct

        acc_full = np.mean([is_correct(p, r) for p, r in zip(full, answers)])
        acc_blind = np.mean([is_correct(p, r) for p, r in zip(blind, answers)])
        corr = diag.correlations()
        post = corr[corr["score"] == "TVI (post-VIP)"].iloc[0]
        pre = corr[corr["score"] == "TVI (pre-VIP)"].iloc[0]
        sec.numbers.update(
            accuracy_with_image=headline(acc_full),
            accuracy_without_image=headline(acc_blind),
            rho_tvi_correct=headline(post["rho"]),
            p_tvi_correct=headline(post["p_value"]),
            rho_pre_vip_tvi_correct=headline(pre["rho"]),
        )
        sec.add_table("Spearman ρ of each score with correctness", corr, index=False)
        if "variant" in frame.columns and frame["variant"].notna().any():
            per = (
                pd.DataFrame(
                    {
                        "variant": [s.meta.get("variant") for s in samples],
                        "with image": [is_correct(p, r) for p, r in zip(full, answers)],
                        "without image": [is_correct(p, r) for p, r in zip(blind, answers)],
                    }
                )
                .groupby("variant", sort=False)
                .mean()
            )
            per["image adds"] = per["with image"] - per["without image"]
            sec.add_table("Accuracy with and without the image, per wording", per)
    n_l = diag.n_layers
    words = (
        f"The image is integrated from layer {show(sec.numbers['vip'])} of {n_l} on (the Visual "
        f"Integration Point; t = {show(sec.numbers['vip_statistic'])}). Removing the image changes "
        f"{show(sec.numbers['share_answers_changed_without_image'])} of the answers."
    )
    if has_ref:
        words += (
            f" Accuracy is {show(sec.numbers['accuracy_with_image'])} with the image and "
            f"{show(sec.numbers['accuracy_without_image'])} without; how much the image is "
            f"integrated after the VIP (TVI) tracks correctness with Spearman ρ = "
            f"{show(sec.numbers['rho_tvi_correct'])} (p = {show(sec.numbers['p_tvi_correct'])})."
        )
    sec.verdict = words
    sec.figures.append(
        (
            "Distance per layer with vs without the image",
            figure_data(plot_distance_curves(diag, title="D_VT vs D_T")),
        )
    )
    groups = {"D_VT": diag.tvi[diag.in_vt], "D_T": diag.tvi[~diag.in_vt]}
    sec.figures.append(("TVI per group", figure_data(plot_tvi_distributions(groups))))
    sec.add_table("Per layer: group means and the two-sample statistic", diag.layer_frame())
    return sec


def run_decoding(vlm: VLM, samples: list[Sample], opts: AuditOptions) -> Section:
    from .decoding import evaluate_decoding, plot_methods

    sec = Section(
        "decoding", "Does contrastive decoding reduce hallucination? (POPE)", n=len(samples)
    )
    eager = getattr(vlm.hf.config, "_attn_implementation", None) == "eager"
    methods = ["greedy", "vcd", "icd", "vdd", "m3id"] + (["pai"] if eager else [])
    if not eager:
        sec.reason = "pai left out: it needs eager attention"
    runs = evaluate_decoding(
        vlm,
        samples,
        methods,
        seeds=opts.seeds,
        max_new_tokens=min(opts.max_new_tokens, 4),
        batch_size=opts.batch_size,
        store=_store(opts, "decoding"),
        overwrite=opts.overwrite,
        progress_bar=False,
    )
    summary = runs.summary()
    greedy = summary[summary["mode"] == "greedy"]
    setting = "adversarial" if "adversarial" in runs.settings else next(iter(runs.settings))
    part = greedy[greedy["setting"] == setting].set_index("method")
    base = part.loc["plain"]
    best = part["accuracy"].idxmax()
    sec.numbers = {
        "setting": setting,
        "plain_yes_ratio": headline(base["yes_ratio"]),
        "plain_accuracy": headline(base["accuracy"]),
        "plain_f1": headline(base["f1"]),
        "best_method": best,
        "best_accuracy": headline(part.loc[best, "accuracy"]),
    }
    for m in part.index:
        sec.numbers[f"{m}_f1"] = headline(part.loc[m, "f1"])
        sec.numbers[f"{m}_yes_ratio"] = headline(part.loc[m, "yes_ratio"])
    gain = (part.loc[best, "accuracy"] - base["accuracy"]) * 100
    sec.verdict = (
        f"On the {setting} questions plain greedy decoding answers yes {show(sec.numbers['plain_yes_ratio'])} "
        f"of the time (half the questions are about absent objects) with accuracy "
        f"{show(sec.numbers['plain_accuracy'])}. The best method by accuracy is {best} "
        f"({show(sec.numbers['best_accuracy'])}, {gain:+.1f} points); read the yes-ratio beside "
        "F1: a method can raise F1 by answering yes more often."
    )
    for metric in ("accuracy", "f1", "yes_ratio"):
        table = runs.table(metric)
        if len(opts.seeds) >= 3:
            caption = f"{label(metric)} (greedy; sampled: mean ± std over {len(opts.seeds)} seeds)"
        else:  # a spread over one or two seeds says nothing
            table = table.map(lambda c: c.split(" ± ")[0] if isinstance(c, str) else c)
            seeds = ", ".join(map(str, opts.seeds))
            caption = f"{label(metric)} (greedy; sampled with seed {seeds}, no spread shown)"
        sec.add_table(caption, table)
    sec.figures.append(("Methods per setting", figure_data(plot_methods(runs))))
    return sec


def run_conflict(vlm: VLM, samples: list[Sample], opts: AuditOptions) -> Section:
    from interp.errors import EmptyInputError, ProbeError

    from .conflict import bias_probe, conflict_responses, favouring, plot_bias

    sec = Section("conflict", "Which source wins when image and text disagree?", n=len(samples))
    kw = dict(
        max_new_tokens=min(opts.max_new_tokens, 4),
        batch_size=opts.batch_size,
        store=_store(opts, "conflict"),
        overwrite=opts.overwrite,
        progress_bar=False,
    )
    resp = conflict_responses(vlm, samples, **kw)
    cd = conflict_responses(
        vlm, samples, configurations={"PercI+PropI": "full"}, decodings=favouring(("text",)), **kw
    )
    full = resp.frame[resp.frame["configuration"] == "PercI+PropI"]
    differ = bool((full["agreement"] == "all_differ").any())
    agreement = "all_differ" if differ else None
    if not differ:
        sec.reason = "no item where every source differs: rates are over all items"
    table = resp.table("configuration", agreement)
    row = table.loc["PercI+PropI"]
    shares = {c: float(row[c]) for c in ("BIAS_IMAGE", "BIAS_PROP_IMAGE", "BIAS_TEXT") if c in row}
    winner = max(shares, key=shares.get) if shares else "none"
    dec = cd.table("decoding", agreement)
    text_after = float(dec.loc["favour text", "BIAS_TEXT"]) if "BIAS_TEXT" in dec else 0.0
    comp = cd.competence().set_index("decoding")["accuracy"]
    sec.numbers = {
        "follows_drawn_object": headline(shares.get("BIAS_IMAGE", 0.0)),
        "follows_written_label": headline(shares.get("BIAS_PROP_IMAGE", 0.0)),
        "follows_caption": headline(shares.get("BIAS_TEXT", 0.0)),
        "winner": winner,
        "caption_after_contrast": headline(text_after),
        "agreeing_accuracy_greedy": headline(comp.get("greedy")),
        "agreeing_accuracy_contrast": headline(comp.get("favour text")),
    }
    sec.verdict = (
        f"When all sources disagree the answer follows the drawn object "
        f"{show(sec.numbers['follows_drawn_object'])}, the written label "
        f"{show(sec.numbers['follows_written_label'])} and the caption "
        f"{show(sec.numbers['follows_caption'])} of the time. Contrastive decoding that favours "
        f"the caption (α = 0.5, β = 0.1) moves the caption's share to "
        f"{show(sec.numbers['caption_after_contrast'])}, with accuracy on agreeing items "
        f"{show(sec.numbers['agreeing_accuracy_contrast'])} (greedy "
        f"{show(sec.numbers['agreeing_accuracy_greedy'])})."
    )
    sec.add_table("Bias labels per evidence-form configuration (all sources differ)", table)
    sec.add_table("Bias labels per input order", resp.table("order", agreement))
    sec.add_table("Contrastive decoding favouring the caption", dec)
    sec.figures.append(("Bias per configuration", figure_data(plot_bias(table, "all differ"))))
    try:
        probe = bias_probe(
            vlm,
            samples,
            resp,
            agreement=agreement,
            batch_size=opts.batch_size,
            progress_bar=False,
        )
        first = probe.decodable_from()
        sec.numbers["probe_best_balanced_accuracy"] = headline(
            probe.probe.scores_["balanced_accuracy_mean"].max()
        )
        sec.numbers["probe_above_chance_from_layer"] = first
        sec.verdict += (
            f" A linear probe on the last prompt token predicts the winner with balanced accuracy "
            f"up to {show(sec.numbers['probe_best_balanced_accuracy'])} (chance "
            f"{probe.chance:.2f}); "
            + (
                "at no layer is it significantly above chance."
                if first is None
                else f"above chance from layer {first}."
            )
        )
        sec.figures.append(("Layer-wise probe of the bias label", figure_data(probe.plot())))
    except (EmptyInputError, ProbeError) as err:
        sec.reason = "; ".join(r for r in (sec.reason, f"probe skipped: {err}") if r)
    return sec


def select_drives(samples: Sequence[Sample]) -> tuple[list[Sample], str]:
    def long(s: Sample) -> bool:
        return s.meta.get("qtype") == "describe" or len(str(s.answer or "").split()) >= 3

    chosen = [s for s in samples if s.has_image and not _is_conflict(s) and long(s)]
    if len(chosen) < 4:
        return [], (
            "needs at least 4 samples with an image and a long answer (3 words or more, or "
            "demo 'describe' questions)"
        )
    return chosen, ""


def run_drives(vlm: VLM, samples: list[Sample], opts: AuditOptions) -> Section:
    from interp.errors import EmptyGroupError, TooFewSamplesError

    from .drives import (
        _labels,
        causal_drives,
        plot_trajectories,
        prefix_visual_imbalance,
        source_removal,
    )

    sec = Section(
        "drives", "What drives each generated token? (temporal causal drives)", n=len(samples)
    )
    k = min(10, len(samples))
    kw = dict(batch_size=opts.batch_size, overwrite=opts.overwrite, progress_bar=False)
    drives = causal_drives(vlm, samples, k=k, pmi=False, store=_store(opts, "drives"), **kw)
    removal = source_removal(vlm, samples, store=_store(opts, "drives-removal"), **kw)
    table = removal.to_frame().set_index("removed")
    means = {name: float(np.nanmean(drives.sample_mean(name))) for name in ("qcd", "vcd", "pcd")}
    sec.numbers = {
        "k": k,
        "mean_qcd_bits": headline(means["qcd"]),
        "mean_vcd_bits": headline(means["vcd"]),
        "mean_pcd_bits": headline(means["pcd"]),
        "p_full": headline(table["p_full"].iloc[0]),
    }
    for source, row in table.iterrows():
        sec.numbers[f"p_without_{_key(source)}"] = headline(row["p_remove"])
    drop = {s: float(table.loc[s, "p_full"] - table.loc[s, "p_remove"]) for s in table.index}
    top = max(drop, key=drop.get)
    sec.verdict = (
        f"Removing the {_key(top)} costs the answers most (mean token probability "
        f"{show(sec.numbers['p_full'])} → {show(sec.numbers['p_without_' + _key(top)])}); "
        f"over the answer, the prefix drive averages {show(sec.numbers['mean_pcd_bits'])} bits, "
        f"the question's {show(sec.numbers['mean_qcd_bits'])} and the image's "
        f"{show(sec.numbers['mean_vcd_bits'])} (K = {k})."
    )
    labels = _labels(samples, drives.answers, None)
    if labels is not None:
        try:
            imb = prefix_visual_imbalance(drives, labels)
            auc = imb.table.set_index("score")
            sec.numbers["s_pv_auroc"] = headline(auc.loc["S_PV", "auroc"])
            sec.numbers["answer_vcd_auroc"] = headline(auc.loc["answer-level VCD", "auroc"])
            sec.verdict += (
                f" Separating prior-driven from grounded answers: S_PV AUROC "
                f"{show(sec.numbers['s_pv_auroc'])}, answer-level VCD AUROC "
                f"{show(sec.numbers['answer_vcd_auroc'])}."
            )
            sec.add_table("S_PV and VCD: prior-driven vs grounded", imb.to_frame(), index=False)
        except (EmptyGroupError, TooFewSamplesError) as err:
            sec.reason = f"S_PV skipped: {err}"
    sec.add_table("Source removal (mean token probability)", table)
    sec.figures.append(("Mean drives over the answer", figure_data(plot_trajectories(drives))))
    return sec


def select_ablation(samples: Sequence[Sample]) -> tuple[list[Sample], str]:
    chosen = [
        s
        for s in samples
        if s.has_image
        and s.answer
        and s.meta.get("variant")
        and s.meta.get("category")
        and not _is_conflict(s)
    ]
    if len(chosen) < 4:
        return [], (
            "needs at least 4 samples with an image, an answer and 'variant' and 'category' "
            "labels (the wording and the question category)"
        )
    return chosen, ""


def run_ablation(vlm: VLM, samples: list[Sample], opts: AuditOptions) -> Section:
    from .ablation import ALL, no_image_ablation, plot_ablation, plot_categories

    sec = Section(
        "ablation", "How much does the image add, per wording? (no-image ablation)", n=len(samples)
    )
    abl = no_image_ablation(
        vlm,
        samples,
        ("blind", "null:black"),
        max_new_tokens=opts.max_new_tokens,
        batch_size=opts.batch_size,
        n_boot=200,
        store=_store(opts, "ablation"),
        overwrite=opts.overwrite,
        progress_bar=False,
    )
    frame = abl.to_frame()
    part = frame[(frame["category"] == ALL) & (frame["condition"] == "blind")]
    overall = part[part["variant"] == ALL].iloc[0]
    sec.numbers = {
        "accuracy_with_image": headline(overall["with_image"]),
        "accuracy_blind": headline(overall["without"]),
        "drop_blind": headline(overall["drop"]),
        "agreement_blind": headline(overall["agreement"]),
    }
    per = part[part["variant"] != ALL]
    for _, row in per.iterrows():
        sec.numbers[f"drop_{row['variant']}"] = headline(row["drop"])
    most = per.loc[per["drop"].idxmax()] if len(per) else overall
    least = per.loc[per["drop"].idxmin()] if len(per) else overall
    sec.verdict = (
        f"The image adds {show(sec.numbers['drop_blind'])} accuracy (with it "
        f"{show(sec.numbers['accuracy_with_image'])}, without "
        f"{show(sec.numbers['accuracy_blind'])}); the most for the '{most['variant']}' wording "
        f"({show(headline(most['drop']))}), the least for '{least['variant']}' "
        f"({show(headline(least['drop']))}); where the drop is small, the wording gives the "
        f"answer away or the model does not use the image. Without the image it repeats its answer "
        f"{show(sec.numbers['agreement_blind'])} of the time."
    )
    sec.add_table("Accuracy with and without the image, per wording", abl.main_table())
    sec.add_table(
        "Drop without the image (blind), per category and wording",
        abl.category_table("blind", "drop"),
    )
    sec.figures.append(("With vs without the image", figure_data(plot_ablation(abl))))
    sec.figures.append(("Per category", figure_data(plot_categories(abl))))
    return sec


def select_recall(samples: Sequence[Sample]) -> tuple[list[Sample], str]:
    from .recall import recall_items

    chosen = [s for s in samples if s.meta.get("setting") and s.meta.get("family")]
    why = (
        "needs visual-reference items: samples grouped by 'group' with 'setting' (visual, "
        "full_info, text_only) and 'family' labels"
    )
    if not chosen:
        return [], why
    try:
        items = recall_items(chosen)
    except InterpError as err:
        return [], f"{why} ({err})"
    if len(items) < 4:
        return [], f"{why}; found {len(items)} item(s), at least 4 are needed"
    return chosen, ""


def run_recall(vlm: VLM, samples: list[Sample], opts: AuditOptions) -> Section:
    from .recall import plot_accuracy
    from .recall import run_recall as recall_run

    sec = Section(
        "recall",
        "Does the model link an image to what it knows? (visual reference)",
        n=len(samples),
    )
    run = recall_run(
        vlm,
        samples,
        batch_size=opts.batch_size,
        store=_store(opts, "recall"),
        overwrite=opts.overwrite,
        progress_bar=False,
    )
    gap = run.gap(n_boot=200).set_index("family")
    overall = gap.loc["all"]
    sec.numbers = {
        "text_only_accuracy": headline(overall["text_only"]),
        "visual_accuracy": headline(overall["visual"]),
        "full_info_accuracy": headline(overall["full_info"]),
        "relative_decline": headline(overall["relative_decline"]),
        "items": headline(overall["n"]),
    }
    for family, row in gap.drop(index="all").iterrows():
        sec.numbers[f"gap_{family}"] = headline(row["gap"])
    sec.verdict = (
        f"Asked about the entity by name (Text-Only) the model is right "
        f"{show(sec.numbers['text_only_accuracy'])} of the time; asked about 'the object in the "
        f"image' it is right {show(sec.numbers['visual_accuracy'])} — a relative decline of "
        f"{show(sec.numbers['relative_decline'])} (with both the image and the name: "
        f"{show(sec.numbers['full_info_accuracy'])})."
    )
    sec.add_table("The visual-reference gap per family (inclusion match)", gap)
    sec.figures.append(("Accuracy per setting and family", figure_data(plot_accuracy(run))))
    return sec


def failure_reason(key: str, err: Exception, n: int) -> str:
    """Why a study stopped on these data, in the user's terms (what the data lack, which
    option or label would help), with the library's own message after it."""
    if key == "coe" and isinstance(err, EmptyGroupError):
        which = f"all {n}" if "D_T empty" in str(err) else f"none of the {n}"
        return (
            f"it stopped: removing the image changed {which} answers, so of the two groups the "
            "chain of embedding compares (answers that change without the image, answers that "
            "do not) one is empty. It needs data where the image decides some answers and not "
            "others: add questions the text alone answers, or more kinds of question "
            f"({type(err).__name__})."
        )
    if isinstance(err, InterpError):
        return f"it stopped on these data: {type(err).__name__}: {err}"
    return (
        f"it stopped on an internal error ({type(err).__name__}: {err}); the other studies "
        "are unaffected — please report this with the command below"
    )


_SOURCE_WORDS = {"Q": "question", "V": "image", "A<t": "prefix"}


def _key(source: str) -> str:
    """The removed source in words (``Q`` → ``question``, ``V`` → ``image``, ``A<t`` →
    ``prefix``)."""
    return _SOURCE_WORDS.get(str(source), str(source).lower())


def _store(opts: AuditOptions, key: str) -> Path | None:
    return None if opts.store is None else opts.store / key


@dataclass(frozen=True)
class Study:
    """A study the audit can run: how it picks its samples and how it runs."""

    key: str
    title: str
    select: Callable[[Sequence[Sample]], tuple[list[Sample], str]]
    run: Callable[[VLM, list[Sample], AuditOptions], Section]


STUDIES: list[Study] = [
    Study("coe", "Chain of embedding", select_coe, run_coe),
    Study("recall", "Visual-reference recall", select_recall, run_recall),
    Study("drives", "Temporal causal drives", select_drives, run_drives),
    Study("ablation", "No-image ablation", select_ablation, run_ablation),
    Study("decoding", "Contrastive decoding", select_decoding, run_decoding),
    Study("conflict", "Modality conflict", select_conflict, run_conflict),
]


def plan(
    samples: Sequence[Sample], only: Sequence[str] | None = None
) -> list[tuple[Study, list[Sample], str]]:
    """Each study with the samples it would run on and, if none, why it is skipped."""
    out = []
    for study in STUDIES:
        if only is not None and study.key not in only:
            out.append((study, [], "not asked for (--studies)"))
            continue
        chosen, reason = study.select(samples)
        out.append((study, chosen, reason))
    return out


# -- the report ----------------------------------------------------------------------------------


def data_fingerprint(samples: Sequence[Sample]) -> str:
    h = hashlib.sha256()
    for s in samples:
        h.update(s.fingerprint().encode())
    return h.hexdigest()[:16]


def versions() -> dict[str, str]:
    import nnsight
    import torch
    import transformers

    import interp

    return {
        "vlm-interp": interp.__version__,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "nnsight": getattr(nnsight, "__version__", "unknown"),
        "python": platform.python_version(),
    }


TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>Audit of {{ model }}</title>
<style>
body { font-family: system-ui, sans-serif; max-width: 1100px; margin: 2em auto; padding: 0 1em;
       color: #222; line-height: 1.45; }
h1 { font-size: 1.6em; } h2 { margin-top: 2em; border-bottom: 1px solid #ccc; }
.verdict { background: #f4f7fb; border-left: 4px solid #3a6ea5; padding: .6em 1em; }
.skipped { color: #777; } .failed { color: #8a3b12; }
.table-box { max-width: 100%; overflow-x: auto; margin: .5em 0 1.2em; }
table.table { border-collapse: collapse; font-size: .85em; }
table.table td, table.table th { border: 1px solid #ddd; padding: 2px 6px; text-align: right; }
figure { margin: 1em 0; } figure img { max-width: 100%; } figcaption { font-size: .85em; color: #555; }
dl.numbers { display: grid; grid-template-columns: max-content auto; gap: 2px 1em; font-size: .9em; }
dl.numbers dt { color: #555; } code { background: #f3f3f3; padding: 0 3px; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; }
</style></head><body>
<h1>Is {{ model }} looking at the image?</h1>
<p>Data: <code>{{ data }}</code>, {{ n_samples }} samples{% if n_per_kind %} (--n {{ n_per_kind }}: up to {{ n_per_kind }} per question kind){% endif %}. Studies run: {{ ran|join(", ") or "none" }}{% if not_run %}; not run: {{ not_run|join(", ") }} (see <a href="#not-run">the end</a>){% endif %}.</p>
<h2 id="summary">Summary</h2>
{% for s in sections if s.ran %}
<p class="verdict"><strong>{{ s.title }}</strong> — {{ s.verdict }}</p>
{% endfor %}
{% for s in sections if not s.ran %}
<p class="{{ s.status }}">{{ "Failed" if s.failed else "Skipped" }} <strong>{{ s.key }}</strong>: {{ s.reason }}</p>
{% endfor %}
{% for s in sections if s.ran %}
<section id="{{ s.key }}">
<h2>{{ s.title }}</h2>
<p class="verdict">{{ s.verdict }}</p>
{% if s.reason %}<p class="skipped">Note: {{ s.reason }}</p>{% endif %}
<p>{{ s.n }} samples.</p>
<dl class="numbers">
{% for k, v in s.numbers.items() %}<dt title="{{ k }}">{{ label(k) }}</dt><dd>{{ show(v) }}</dd>
{% endfor %}</dl>
{% for caption, uri in s.figures %}
<figure><img alt="{{ caption }}" src="{{ uri }}"><figcaption>{{ caption }}</figcaption></figure>
{% endfor %}
{% for caption, html in s.tables %}
<h3>{{ caption }}</h3>
<div class="table-box">{{ html|safe }}</div>
{% endfor %}
</section>
{% endfor %}
{% if not_run %}
<section id="not-run">
<h2>Studies that did not run</h2>
<ul>
{% for s in sections if not s.ran %}
<li class="{{ s.status }}"><strong>{{ s.title }}</strong> ({{ s.key }}, {{ s.status }}{% if s.n %}, {{ s.n }} samples{% endif %}): {{ s.reason }}</li>
{% endfor %}
</ul>
</section>
{% endif %}
<h2 id="provenance">Provenance</h2>
<dl class="numbers">
<dt>model</dt><dd>{{ model }}</dd>
<dt>model fingerprint</dt><dd><code>{{ fingerprints.model }}</code></dd>
<dt>data fingerprint</dt><dd><code>{{ fingerprints.data }}</code></dd>
{% for k, v in versions.items() %}<dt>{{ k }}</dt><dd>{{ v }}</dd>
{% endfor %}</dl>
<p>Reproduce with:</p>
<pre><code>{{ command }}</code></pre>
</body></html>
"""


def render(summary: dict[str, Any], sections: Sequence[Section]) -> str:
    """The report page (Jinja2, autoescaped; tables are pandas' HTML)."""
    from jinja2 import Environment

    env = Environment(autoescape=True)
    template = env.from_string(TEMPLATE)
    return template.render(
        model=summary["model"],
        data=summary["data"],
        n_samples=summary["n_samples"],
        ran=[s.key for s in sections if s.ran],
        not_run=[s.key for s in sections if not s.ran],
        n_per_kind=summary.get("n_per_kind"),
        sections=sections,
        label=label,
        fingerprints=summary["fingerprints"],
        versions=summary["versions"],
        command=summary["command"],
        show=show,
    )


def audit(
    vlm: VLM,
    samples: Sequence[Sample],
    out: str | Path,
    *,
    model: str = "",
    data: str = "",
    command: str = "",
    studies: Sequence[str] | None = None,
    options: AuditOptions | None = None,
    progress_bar: bool = True,
    n_per_kind: int | None = None,
) -> dict[str, Any]:
    """Run every study the samples support; write ``report.html`` and ``summary.json`` into
    ``out``; return the summary.

    A study the samples cannot serve is skipped, and one that fails while it runs (e.g. the
    agreement split leaves a group empty) becomes a section saying why: the report and the
    summary are written whatever happens to the studies (``summary["studies"][key]["status"]``
    is ``ran``, ``skipped`` or ``failed``). ``n_per_kind`` is the ``--n`` the data was drawn
    with, for the page's header."""
    from interp.runner import weights_fingerprint
    from interp.tracing import progress

    samples = ensure_samples(samples)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    opts = options or AuditOptions()
    if opts.store is None:
        opts.store = out / "store"
    planned = plan(samples, studies)
    todo = [(st, chosen) for st, chosen, _ in planned if chosen]
    results: dict[str, Section] = {}
    for study, chosen in progress(
        todo, total=len(todo), desc="audit", enabled=progress_bar, unit="study"
    ):
        try:
            results[study.key] = study.run(vlm, chosen, opts)
        except Exception as err:  # one study's failure must not cost the whole report
            if not isinstance(err, InterpError):
                logger.debug("the %s study failed", study.key, exc_info=True)
            results[study.key] = Section(
                study.key,
                study.title,
                ran=False,
                failed=True,
                n=len(chosen),
                reason=failure_reason(study.key, err, len(chosen)),
            )
    sections = [
        results.get(st.key) or Section(st.key, st.title, ran=False, reason=reason)
        for st, _, reason in planned
    ]
    summary = {
        "model": model or str(vlm.source or type(vlm.hf).__name__),
        "data": data,
        "n_samples": len(samples),
        "n_per_kind": n_per_kind,
        "fingerprints": {"model": weights_fingerprint(vlm), "data": data_fingerprint(samples)},
        "versions": versions(),
        "command": command,
        "studies": {s.key: s.summary() for s in sections},
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    (out / "report.html").write_text(render(summary, sections))
    return summary


# -- data and the command ------------------------------------------------------------------------


def demo_data(n: int, seed: int = 0) -> list[Sample]:
    """The demo world's audit mix, ``n`` per question kind: colour questions (the language-prior
    benchmark), visual-reference recall items (whole items of three questions: ``n`` rounded
    down to a multiple of 3, at least 12), POPE-style existence questions and conflict items;
    descriptions, which cost the most, a third as many (at least 8)."""
    from interp.datasets import demo_world

    recall = max(3 * (n // 3), 12)
    return [
        *demo_world("test", n=n, seed=seed, qtypes=["color"]),
        *demo_world("test", n=max(n // 3, 8), seed=seed + 3, qtypes=["describe"]),
        *demo_world("test", n=recall, seed=seed + 4, qtypes=["recall", "digit_arith", "letters"]),
        *demo_world("test", n=n, seed=seed + 1, qtypes=["exist"]),
        *demo_world("test", n=n, seed=seed + 2, qtypes=["conflict"]),
    ]


DEMO_N = 120


def per_kind(samples: Sequence[Sample], n: int | None) -> list[Sample]:
    """The first ``n`` samples of each question kind (the ``qtype`` label; samples without one
    are one kind), in their order; all of them when ``n`` is None."""
    if n is None:
        return list(samples)
    seen: dict[str, int] = {}
    kept = []
    for s in samples:
        kind = str(s.meta.get("qtype"))
        seen[kind] = seen.get(kind, 0) + 1
        if seen[kind] <= n:
            kept.append(s)
    return kept


def read_data(
    spec: str,
    n: int | None,
    seed: int,
    images: str | None = None,
    columns: str | None = None,
) -> list[Sample]:
    """``demo``, a JSONL file, a VLMEvalKit ``.tsv``, a POPE question file (``.json`` /
    ``.jsonl`` whose rows hold ``text`` and ``label``), or parquet / Hugging Face datasets data
    read through ``columns``; every image is opened up front. ``n`` is the number of samples
    per question kind (:func:`demo_data`, :func:`per_kind`; default: 120 for the demo, every
    sample of a file)."""
    from interp.datasets.formats import read_pope, read_vlmevalkit_tsv

    path = Path(spec)
    if columns is not None and (spec == "demo" or path.suffix.lower() in (".tsv", ".json")):
        raise UsageError("--columns applies to parquet and Hugging Face datasets data")
    if spec == "demo":
        return ensure_samples(demo_data(n or DEMO_N, seed))
    if path.suffix.lower() == ".tsv":
        samples = read_vlmevalkit_tsv(path)
    elif (
        path.is_file() and path.suffix.lower() not in (".parquet", ".pq") and _looks_like_pope(path)
    ):
        samples = read_pope(path, images)
    else:
        if images is not None:
            raise UsageError("--images is for POPE question files (rows with text and label)")
        if spec.startswith("demo:"):
            return load_data(spec, n, seed, default_qtypes=("color",), columns=columns)
        return load_data(
            spec,
            None,
            seed,
            default_qtypes=("color",),
            columns=columns,
            keep=lambda samples: per_kind(samples, n),
        )
    samples = per_kind(samples, n)
    for s in samples:
        s.load_images()
    return ensure_samples(samples)


def _looks_like_pope(path: Path) -> bool:
    head = path.read_text(errors="replace").lstrip()[:2000]
    first = head.splitlines()[0] if head else ""
    try:
        obj = json.loads(first)
    except json.JSONDecodeError:
        try:
            obj = json.loads(head if head.startswith("[") else "null")
        except json.JSONDecodeError:
            return head.startswith("[") and '"label"' in head
        obj = obj[0] if isinstance(obj, list) and obj else obj
    return isinstance(obj, dict) and "text" in obj and "label" in obj and "question" not in obj


def check_options(inv: Invocation) -> dict[str, Any]:
    """``--studies`` names known studies; ``--seeds`` is a list of integers."""
    args = inv.args
    only = None
    if args.studies:
        only = split_list(args.studies)
        known = [st.key for st in STUDIES]
        bad = [s for s in only if s not in known]
        if bad:
            raise UsageError(f"--studies: unknown {bad}; choose from {', '.join(known)}")
    inv.attn_implementation = "eager"
    return {"only": only, "seeds": tuple(int_list(args.seeds, "--seeds"))}


def load_samples(inv: Invocation) -> list[Sample]:
    """The samples, of which at least one study can run."""
    args, only = inv.args, inv.plan["only"]
    samples = read_data(args.data, args.n, args.seed, args.images, args.columns)
    if not any(chosen for _, chosen, _ in plan(samples, only)):
        reasons = "; ".join(f"{st.key}: {why}" for st, _, why in plan(samples, only))
        raise UsageError(f"no study can run on --data {args.data!r} ({reasons})")
    return samples


def reproduce_command(args: argparse.Namespace) -> str:
    """The command line that reproduces this audit (every option that shapes the results)."""
    parts = ["interp", "audit", "--model", args.model, "--data", args.data, "--out", args.out]
    if args.images:
        parts += ["--images", args.images]
    if args.columns:
        parts += ["--columns", args.columns]
    if args.n is not None:
        parts += ["--n", str(args.n)]
    if args.studies:
        parts += ["--studies", args.studies]
    parts += ["--seed", str(args.seed), "--seeds", args.seeds, "--batch-size", str(args.batch_size)]
    parts += ["--max-new-tokens", str(args.max_new_tokens)]
    return " ".join(shlex.quote(p) for p in parts)


def run_command(inv: Invocation) -> None:
    """The audit on ``inv.vlm``: the plan, the report, the headline numbers on stdout."""
    args, samples, only, out = inv.args, inv.samples, inv.plan["only"], inv.out
    assert out is not None and inv.vlm is not None
    for study, chosen, reason in plan(samples, only):
        print(f"  {study.key}: " + (f"{len(chosen)} samples" if chosen else f"skipped — {reason}"))
    opts = AuditOptions(
        batch_size=args.batch_size,
        max_new_tokens=args.max_new_tokens,
        seeds=inv.plan["seeds"],
        store=out.store,
        overwrite=args.overwrite,
    )
    summary = audit(
        inv.vlm,
        samples,
        out.folder,
        model=args.model,
        data=args.data,
        command=reproduce_command(args),
        studies=only,
        options=opts,
        progress_bar=not args.no_progress,
        n_per_kind=args.n if args.n is not None else (DEMO_N if args.data == "demo" else None),
    )
    parts = summary["studies"]
    for key, part in parts.items():
        if part["ran"]:
            print(f"{key}: " + ", ".join(f"{k} {show(v)}" for k, v in part["numbers"].items()))
    not_run = {k: v for k, v in parts.items() if not v["ran"]}
    if not_run:
        print("\nnot run:")
        for key, part in not_run.items():
            print(f"  {key} ({part['status']}): {part.get('reason', '')}")
    real = out.finish()
    if not any(part["ran"] for part in parts.values()):
        raise NoStudyRanError(
            f"no study could run on --data {args.data!r}; {real / 'report.html'} says why for each"
        )


class NoStudyRanError(InterpError):
    """Every study the audit planned stopped on the data (the report says why)."""


HELP = "every study the data supports, one self-contained HTML report"
DESCRIPTION = __doc__
DATA_HELP = (
    "'demo', a JSONL file, a VLMEvalKit .tsv benchmark file, or a POPE question file (with "
    "--images)"
)
N_HELP = (
    "samples per question kind (the 'qtype' label; a file's rows without one are one kind): the "
    f"first N of each (default: every sample of a file; demo {DEMO_N}, i.e. {DEMO_N} colour, "
    f"recall, existence and conflict questions and {DEMO_N // 3} descriptions, 520 in all)"
)
NOUN = None  # the run prints its own plan
RUN = "interp.studies.audit:run_command"


def register(sub: Any) -> None:
    """Add ``audit`` to the ``interp`` command."""
    d = add_command(sub, "audit", __name__)
    d.add_argument("--images", default=None, help="image folder of a POPE question file")
    d.add_argument("--studies", default=None, help="comma-separated subset of the studies")
    d.add_argument(
        "--seeds",
        default="0",
        help="sampling seeds of the decoding study (with fewer than 3 the report shows no "
        "spread over seeds)",
    )
    d.add_argument("--max-new-tokens", type=int, default=8)


__all__ = [
    "STUDIES",
    "AuditOptions",
    "Section",
    "Study",
    "audit",
    "data_fingerprint",
    "demo_data",
    "headline",
    "plan",
    "read_data",
    "register",
    "render",
    "show",
]
