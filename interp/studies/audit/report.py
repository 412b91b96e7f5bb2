"""The audit's report: a study's :class:`Section`, headline numbers as the page and
``summary.json`` write them, keys in words (:class:`Labels`), and the self-contained HTML page.

Nothing here knows a study: each study's ``audit`` module builds its section with these pieces
(see :mod:`interp.studies.audit.registry`).
"""

from __future__ import annotations

import base64
import hashlib
import io
import platform
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd

from interp.headlines import (
    Headlines,
    Number,
    bracket,
    clusters,
    headline,
    holds,
    mean_interval,
    show,
    with_interval,
)
from interp.reprs import Summary
from interp.samples import Sample

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def figure_data(fig: Figure) -> str:
    """A figure as a ``data:image/png;base64,...`` URI (closed afterwards)."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


# Words every section shares; a study adds its own (the raw key stays in summary.json and in the
# page's tooltip).
COMMON_WORDS: dict[str, str] = {
    "with_image": "with image",
    "p_value": "p-value",
    "auroc": "AUROC",
    "auprc": "AUPRC",
}
_SNAKE = re.compile(r"^[a-z0-9]+(?:_[a-z0-9]+)+$|^[a-z]+$")


@dataclass(frozen=True)
class Labels:
    """A study's headline-number keys and table headers in words.

    Attributes:
        words: exact keys (over :data:`COMMON_WORDS`).
        prefixes, suffixes: words for families of keys, e.g. ``{"gap_": "visual-reference gap,
            "}`` writes ``gap_facts`` as "visual-reference gap, facts".
    """

    words: Mapping[str, str] = field(default_factory=dict)
    prefixes: Mapping[str, str] = field(default_factory=dict)
    suffixes: Mapping[str, str] = field(default_factory=dict)

    def __call__(self, key: str) -> str:
        """``key`` in words: an exact word, else snake_case with spaces and the prefix or suffix
        in words (other text unchanged)."""
        if key in self.words:
            return self.words[key]
        if key in COMMON_WORDS:
            return COMMON_WORDS[key]
        if not _SNAKE.match(key):
            return key
        for prefix, words in self.prefixes.items():
            if key.startswith(prefix):
                return words + key[len(prefix) :].replace("_", " ")
        for suffix, words in self.suffixes.items():
            if key.endswith(suffix):
                return key[: -len(suffix)].replace("_", " ") + words
        return key.replace("_", " ")


def label(key: str) -> str:
    """A key in words with the shared words only (:data:`COMMON_WORDS`, else snake_case with
    spaces)."""
    return Labels()(key)


@dataclass(repr=False)
class Section(Summary):
    """One study's part of the report.

    Attributes:
        key, title: the study's name and heading.
        ran: whether it ran; ``reason`` says why not (or what it left out).
        verdict: the finding in plain words (with the numbers it rests on).
        numbers: headline numbers (:func:`headline`-rounded), also in ``summary.json``.
        figures: (caption, data URI); tables: (caption, HTML).
        n: samples used.
        labels: the study's keys in words (numbers and table headers).
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
    labels: Labels = field(default_factory=Labels)

    def _repr_head(self) -> dict[str, Any]:
        return {"key": self.key, "status": self.status, "n": self.n, "numbers": len(self.numbers)}

    def label(self, key: str) -> str:
        """``key`` in this section's words."""
        return self.labels(key)

    def add_table(self, caption: str, frame: pd.DataFrame, index: bool = True) -> None:
        """Add a table; its snake_case headers are written in words, and an index name joins
        the header row (no row of its own)."""
        frame = frame.rename(columns=lambda c: self.label(c) if isinstance(c, str) else c)
        if index and frame.index.name and frame.columns.nlevels == 1:
            frame = frame.rename_axis(index=None, columns=self.label(str(frame.index.name)))
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

    def add_figure(self, caption: str, fig: Figure) -> None:
        """Add a figure, embedded as PNG data (the figure is closed)."""
        self.figures.append((caption, figure_data(fig)))

    @property
    def status(self) -> str:
        return "ran" if self.ran else ("failed" if self.failed else "skipped")

    def summary(self) -> dict[str, Any]:
        """The section as ``summary.json`` records it: status, sample count, the reason or the numbers."""
        out: dict[str, Any] = {"ran": self.ran, "status": self.status, "n": self.n}
        if self.reason:
            out["reason"] = self.reason
        if self.ran:
            out["numbers"] = self.numbers
        return out


# -- provenance and the page ---------------------------------------------------------------------


def data_fingerprint(samples: Sequence[Sample]) -> str:
    """A 16-hex-digit digest of the samples' content fingerprints, in order (the report's data id)."""
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
{% for k, v in s.numbers.items() %}<dt title="{{ k }}">{{ s.label(k) }}</dt><dd>{{ show(v) }}</dd>
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
        fingerprints=summary["fingerprints"],
        versions=summary["versions"],
        command=summary["command"],
        show=show,
    )


__all__ = [
    "COMMON_WORDS",
    "Headlines",
    "Labels",
    "Number",
    "Section",
    "bracket",
    "clusters",
    "data_fingerprint",
    "figure_data",
    "headline",
    "holds",
    "label",
    "mean_interval",
    "render",
    "show",
    "versions",
    "with_interval",
]
