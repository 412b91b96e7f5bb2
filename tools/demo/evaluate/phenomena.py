"""One table per planted phenomenon of the demo world (what was planted, how it is measured, the
number), condensed from the detailed tables of :func:`~tools.demo.evaluate.summarize`."""

from __future__ import annotations

import numpy as np
import pandas as pd

from interp.datasets.world import (
    CATEGORIES,
    CO_OCCURRENCE_STRENGTH,
    FAMILIES,
    POSITION_TRUST,
    PRIOR_COLORS,
    PRIOR_STRENGTH,
    SOURCE_TRUST,
    WORDED_QTYPES,
)


def _get(table: pd.DataFrame, group: str, col: str, key: str = "group") -> float:
    rows = table[table[key] == group]
    return float(rows[col].iloc[0]) if len(rows) else float("nan")


def phenomenon_tables(tables: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """One table per planted phenomenon: what was planted, how it is measured, the number.

    The numbers come from the detailed tables of :func:`summarize` (held-out test items).
    """
    acc, prior, wording = tables["accuracy"], tables["prior"], tables["wording"]
    pope, con, ref, gen = (
        tables["pope"],
        tables["conflict"],
        tables["reference"],
        tables["generation"],
    )

    def table(rows: list[tuple[str, str, float]]) -> pd.DataFrame:
        return pd.DataFrame(rows, columns=["planted", "measured", "value"])

    cf_rows = prior[prior["group"].str.endswith(": counterfactual")]
    can_rows = prior[prior["group"].str.endswith(": canonical")]

    def weighted(rows: pd.DataFrame, col: str) -> float:
        return float((rows[col] * rows["n"]).sum() / rows["n"].sum()) if len(rows) else np.nan

    faint = "counterfactual, opacity 0.00-0.25"
    out = {
        "vision use": table(
            [
                (
                    "vision questions need the image",
                    "accuracy with the image, vision-dependent",
                    _get(acc, "ALL vision-dependent", "with_image"),
                ),
                (
                    "",
                    "accuracy without the image (blind prompt)",
                    _get(acc, "ALL vision-dependent", "without_image"),
                ),
                (
                    "text questions do not",
                    "accuracy with / without, vision-independent",
                    _get(acc, "ALL vision-independent", "with_image"),
                ),
                ("", "", _get(acc, "ALL vision-independent", "without_image")),
            ]
        ),
        "colour prior": table(
            [
                (
                    f"{len(PRIOR_COLORS)} kinds in a canonical colour in {PRIOR_STRENGTH:.0%} of "
                    "training images; text states it",
                    "colour accuracy, prior kinds, canonical",
                    weighted(can_rows, "with_image"),
                ),
                (
                    "test: half of them counterfactual",
                    "colour accuracy, counterfactual",
                    weighted(cf_rows, "with_image"),
                ),
                (
                    "",
                    "gap (canonical - counterfactual), naming wordings",
                    _get(prior, "color plain: gap (canonical - counterfactual)", "with_image"),
                ),
                (
                    "",
                    "share of counterfactual errors that are the canonical colour",
                    float(
                        np.nansum(
                            cf_rows["prior_of_errors"] * cf_rows["n"] * (1 - cf_rows["with_image"])
                        )
                        / np.nansum(cf_rows["n"] * (1 - cf_rows["with_image"]))
                    ),
                ),
                (
                    "weak evidence: opacity < 0.25",
                    "counterfactual accuracy at opacity < 0.25",
                    _get(prior, faint, "with_image"),
                ),
                (
                    "",
                    "control (kinds without a prior) at opacity < 0.25",
                    _get(prior, faint, "control_with_image"),
                ),
            ]
        ),
        "object co-occurrence (POPE)": table(
            [
                (
                    f"a kind brings its partner into {CO_OCCURRENCE_STRENGTH:.0%} of training "
                    "existence scenes",
                    "yes on absent kinds, random negatives",
                    _get(pope, "random", "negatives_yes", "setting"),
                ),
                (
                    "circle and triangle the most frequent kinds",
                    "yes on absent kinds, popular",
                    _get(pope, "popular", "negatives_yes", "setting"),
                ),
                (
                    "",
                    "yes on absent kinds, adversarial (absent partner of a present kind)",
                    _get(pope, "adversarial", "negatives_yes", "setting"),
                ),
                ("", "F1 random / adversarial", _get(pope, "random", "f1", "setting")),
                ("", "", _get(pope, "adversarial", "f1", "setting")),
            ]
        ),
        "modality trust (conflicts)": table(
            [
                (
                    "trust = form (drawn {perceptual}, written {propositional}, caption {text}) + "
                    "place {places}, scaled by visibility".format(
                        **SOURCE_TRUST, places=POSITION_TRUST
                    ),
                    "all differ: answer = drawn object",
                    _get(con, "all_differ", "perceptual"),
                ),
                (
                    "",
                    "all differ: answer = written label",
                    _get(con, "all_differ", "propositional"),
                ),
                ("", "all differ: answer = caption", _get(con, "all_differ", "text")),
                (
                    "",
                    "written label followed when it comes last / first",
                    _get(con, "all_differ, propositional last", "propositional"),
                ),
                ("", "", _get(con, "all_differ, propositional first", "propositional")),
                (
                    "",
                    "drawn object followed when it comes last / first",
                    _get(con, "all_differ, perceptual last", "perceptual"),
                ),
                ("", "", _get(con, "all_differ, perceptual first", "perceptual")),
                (
                    "",
                    "agreement with the world's rule, all differ",
                    _get(con, "all_differ", "world_rule"),
                ),
            ]
        ),
        "wordings (no-image ablation)": table(
            [
                (
                    "naming wordings leak (the named kind's prior, two options, the objects)",
                    "drop without the image, naming wordings",
                    _get(wording, "all categories, naming wordings (plain, polite)", "drop"),
                ),
                (
                    "",
                    "drop without the image, non-naming wordings",
                    _get(wording, "all categories, non-naming wordings (anchored, terse)", "drop"),
                ),
                *(
                    (
                        "",
                        f"drop, {CATEGORIES[q]} ({q}), {kind}",
                        _get(wording, f"{CATEGORIES[q]} ({q}), {kind}", "drop"),
                    )
                    for q in WORDED_QTYPES
                    for kind in ("naming", "non-naming")
                ),
            ]
        ),
        "textual vs visual reference": table(
            [
                (
                    f"visual reference trained for half the combinations ({family})",
                    f"accuracy {setting}",
                    _get(ref, f"{family} ({qtype}): {setting}", "with_image"),
                )
                for qtype, family in FAMILIES.items()
                for setting in ("text_only", "visual")
            ]
        ),
        "long answers": table(
            [
                (
                    "descriptions of 1-2 objects (4-9 tokens) under the colour prior",
                    "counterfactual descriptions labelled prior-driven",
                    _get(gen, "describe, all wordings", "prior_driven"),
                ),
                ("", "labelled grounded", _get(gen, "describe, all wordings", "grounded")),
                (
                    "",
                    "labelled other (wrong objects or colours)",
                    _get(gen, "describe, all wordings", "other"),
                ),
                (
                    "",
                    "counterfactual objects given the canonical colour",
                    _get(
                        gen,
                        "describe, counterfactual objects given the canonical colour",
                        "prior_driven",
                    ),
                ),
            ]
        ),
    }
    return out
