"""The drives study's names and constants: the three drives, the null sources V = ∅ may take, the
neutral prompt. A leaf: every module of the study may import it."""

from __future__ import annotations

import math

LN2 = math.log(2.0)
NULL_IMAGES: tuple[str, ...] = ("blind", "black", "white", "noise", "mean", "mismatched")
# What V is: the sample's image(s) or its video(s).
VISUALS: tuple[str, ...] = ("image", "video")
# V = ∅ for a video: the null names that have a video counterpart (the video parts of interp.conditions).
NULL_VIDEOS: tuple[str, ...] = ("blind", "black", "mean", "mismatched")
NEUTRAL_PROMPT = "Please provide a response."
# The three drives, named so that none is mistaken for another method: the paper's QCD, VCD
# (Visual Causal Drive, Eq. 14 — not visual contrastive decoding) and PCD.
DRIVES: tuple[str, ...] = ("question_drive", "visual_drive", "prefix_drive")
# The paper's symbols, still taken (deprecated) where a drive is named.
DRIVE_ALIASES: dict[str, str] = {
    "qcd": "question_drive",
    "vcd": "visual_drive",
    "pcd": "prefix_drive",
}
DEFAULT_QTYPES: tuple[str, ...] = ("describe",)
# the figures' colour and legend of each drive and of the PMI baselines
COLORS = {
    "question_drive": "#1f77b4",
    "visual_drive": "#2ca02c",
    "prefix_drive": "#d62728",
    "pmi_q": "#7f7f7f",
    "pmi_p": "#7f7f7f",
}
# legends: the drive in words with the paper's symbol
NAMES = {
    "question_drive": "question drive (QCD)",
    "visual_drive": "visual drive (VCD)",
    "prefix_drive": "prefix drive (PCD)",
    "pmi_q": "PMI$_Q$",
    "pmi_p": "PMI$_P$",
}


__all__ = [
    "COLORS",
    "DEFAULT_QTYPES",
    "DRIVES",
    "DRIVE_ALIASES",
    "LN2",
    "NAMES",
    "NEUTRAL_PROMPT",
    "NULL_IMAGES",
    "NULL_VIDEOS",
    "VISUALS",
]
