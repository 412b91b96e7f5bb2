"""Contrastive decoding in ``interp audit``: does it reduce hallucination on POPE-style
questions?

**Needs** yes/no questions with an image and both answers present (POPE-style existence
questions); conflict items are left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from interp.samples import Sample
from interp.studies.audit.kinds import is_conflict_item, is_yes_no
from interp.studies.audit.registry import AuditOptions, Selection, Study
from interp.studies.audit.report import Labels, Section, headline, show

from .analysis import baseline
from .figures import plot_methods
from .measure import evaluate_decoding

if TYPE_CHECKING:
    from interp.model import VLM

# methods whose name alone could be mistaken for something else in the report
METHOD_WORDS = {"vcd": "visual contrastive decoding (VCD)"}
LABELS = Labels(
    {
        "plain_yes_ratio": "yes-ratio, plain decoding",
        "plain_accuracy": "accuracy, plain decoding",
        "plain_f1": "F1, plain decoding",
        "best_accuracy": "best accuracy",
        "yes_ratio": "yes-ratio",
        "f1": "F1",
        **METHOD_WORDS,
        **{f"{m}_f1": f"{words}, F1" for m, words in METHOD_WORDS.items()},
        **{f"{m}_yes_ratio": f"{words}, yes-ratio" for m, words in METHOD_WORDS.items()},
    },
    suffixes={"_f1": ", F1", "_yes_ratio": ", yes-ratio"},
)


def select(samples: Sequence[Sample]) -> Selection:
    """Yes/no questions with an image, if both answers occur."""
    chosen = [s for s in samples if is_yes_no(s) and s.has_image and not is_conflict_item(s)]
    answers = {str(s.answer).strip().lower() for s in chosen}
    if answers != {"yes", "no"}:
        return Selection.skip(
            "needs yes/no questions with both answers (POPE-style existence questions)"
        )
    return Selection(chosen)


def section(vlm: VLM, samples: list[Sample], opts: AuditOptions) -> Section:
    """Greedy and sampled decoding with each method (PAI only under eager attention): the plain
    yes-ratio, accuracy and F1 on the hardest setting, the best method, each method's F1 and
    yes-ratio; the per-setting tables and figure."""
    sec = STUDY.new_section("Does contrastive decoding reduce hallucination? (POPE)", samples)
    eager = getattr(vlm.hf.config, "_attn_implementation", None) == "eager"
    methods = ["greedy", "vcd", "icd", "vdd", "m3id"] + (
        ["pai"] if eager and not vlm.remote else []
    )
    if vlm.remote:  # attention edits stay in this process (docs/remote.md)
        sec.reason = "on NDIF: pai left out (it edits eager attention's scores)"
    elif not eager:
        sec.reason = "pai left out: it needs eager attention"
    runs = evaluate_decoding(
        vlm,
        samples,
        methods,
        seeds=opts.seeds,
        max_new_tokens=min(opts.max_new_tokens, 4),
        batch_size=opts.batch_size,
        store=opts.store_for("decoding"),
        overwrite=opts.overwrite,
        progress_bar=False,
    )
    summary = runs.to_frame()
    greedy = summary[summary["mode"] == "greedy"]
    setting = "adversarial" if "adversarial" in runs.settings else next(iter(runs.settings))
    part = greedy[greedy["setting"] == setting].set_index("method")
    base = part.loc[baseline(part.index)]
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
        f"{show(sec.numbers['plain_accuracy'])}. The best method by accuracy is "
        f"{METHOD_WORDS.get(best, best)} ({show(sec.numbers['best_accuracy'])}, {gain:+.1f} "
        "points); read the yes-ratio beside F1: a method can raise F1 by answering yes more often."
    )
    for metric in ("accuracy", "f1", "yes_ratio"):
        table = runs.table(metric)
        if len(opts.seeds) >= 3:
            caption = (
                f"{sec.label(metric)} (greedy; sampled: mean ± std over {len(opts.seeds)} seeds)"
            )
        else:  # a spread over one or two seeds says nothing
            table = table.map(lambda c: c.split(" ± ")[0] if isinstance(c, str) else c)
            seeds = ", ".join(map(str, opts.seeds))
            caption = f"{sec.label(metric)} (greedy; sampled with seed {seeds}, no spread shown)"
        sec.add_table(caption, table)
    sec.add_figure("Methods per setting", plot_methods(runs))
    return sec


STUDY = Study("decoding", "Contrastive decoding", 50, select, section, LABELS)

__all__ = ["LABELS", "METHOD_WORDS", "STUDY", "section", "select"]
