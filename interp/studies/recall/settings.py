"""The study's fixed vocabulary: the three settings, the trivial images of the Text-Only vote,
the metrics, the CV groupings and subsets, and the demo world's identification questions. Plain
constants, so the command can register its options without importing torch."""

SETTINGS: tuple[str, ...] = ("text_only", "visual", "full_info")
SETTING_NAMES: dict[str, str] = {
    "text_only": "Text-Only",
    "visual": "Visual",
    "full_info": "Full Info",
}
TRIVIAL: tuple[str, ...] = ("null:black", "null:white", "null:noise", "blind")
"""The trivial images of Appendix B: black, white, uniform noise, and none (``blind``: the prompt
without an image). The paper passes a mean image for "none" to VLMs that tuned their language
model; ``null:mean`` is that input here."""
METRICS: tuple[str, ...] = ("inclusion", "exact", "bleu")
GROUPINGS: tuple[str, ...] = ("pair", "item", "entity", "none")
SUBSETS: tuple[str, ...] = ("kept", "all")
DEMO_IDENTIFY: dict[str, str] = {
    "facts": "which object is in the image ?",
    "arithmetic": "what digit is in the image ?",
    "words": "which object is in the image ?",
}
"""The identification question of each demo-world family (the world's own anchored wordings of
its ``identify`` and ``digit`` questions), for the benchmark's identification filter."""
REFERENCE_QTYPES: tuple[str, ...] = ("recall", "digit_arith", "letters")
