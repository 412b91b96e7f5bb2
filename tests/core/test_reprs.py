"""Printed results stay short (:mod:`interp.reprs`): the real results of the core's measurements and
of the studies, the model and the store print at most 20 lines naming their class, sizes and
shapes, and render an HTML table in Jupyter; every public result type of the API has the summary, so
a new one cannot print its tensors whole."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from html.parser import HTMLParser
from typing import Any

import matplotlib
import numpy as np
import pandas as pd
import pytest
import torch

import interp
import interp.studies
from interp.datasets import demo_world
from interp.reprs import MAX_LINES, WIDTH, Summary, describe
from interp.store import ResultStore
from interp.testing import make_samples, shared_tiny_vlm
from interp.testing.tolerance import approx_close

matplotlib.use("Agg")

MAX_CHARS = 2000

# Public dataclasses that are inputs, settings or registry entries, not results: a few short
# fields each (text, numbers, names), so the generated repr is the right one.
VALUES = {
    "Adapter",  # a model family's entry: module paths, token ids, notes
    "Audio",  # a waveform: numpy prints a long one shortened
    "Condition",
    "RunOptions",
    "Sample",
    "Sampling",
    "Source",
    "PaperVariant",
    "Labels",
    "AuditOptions",
    "Study",
    "Recipe",
    "Edge",
    "RecallItem",
}


def _shape(t: Any) -> str:
    """A tensor's or an array's shape as the summary writes it, read from the object."""
    return "[" + ", ".join(str(int(s)) for s in t.shape) + "]"


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _html_tags(obj: Any) -> _Tags:
    parser = _Tags()
    parser.feed(obj._repr_html_())
    parser.close()
    return parser


def _check_summary(obj: Any, facts: list[str]) -> str:
    """The checks every summary passes; returns the repr."""
    text = repr(obj)
    lines = text.splitlines()
    assert len(lines) <= MAX_LINES, text
    assert len(text) <= MAX_CHARS, text
    assert all(len(line) <= WIDTH for line in lines), text
    assert lines[0].startswith(type(obj).__name__ + "("), lines[0]
    for fact in facts:
        assert fact in text, f"{fact!r} not in\n{text}"
    parsed = _html_tags(obj)
    assert parsed.tags[0] == "table" and "td" in parsed.tags, parsed.tags
    assert set(parsed.tags) <= {"table", "caption", "b", "tr", "th", "td", "code"}, parsed.tags
    assert type(obj).__name__ in "".join(parsed.text)
    return text


# -- the real results --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo() -> interp.VLM:
    return interp.load("demo")


@pytest.fixture(scope="module")
def colour() -> list[interp.Sample]:
    return demo_world("test", n=12, qtypes=["color"])


@pytest.fixture(scope="module")
def core(demo, colour) -> dict[str, Any]:
    from interp.studies.coe import chain_of_embedding, diagnose

    four = colour[:4]
    coe = chain_of_embedding(demo, colour, max_new_tokens=3, progress_bar=False)
    return {
        "generation": interp.generate(demo, colour, max_new_tokens=3, progress_bar=False),
        "scores": interp.score(demo, colour, [s.answer for s in colour], progress_bar=False),
        "states": interp.generate_states(
            demo, colour, ["full", "blind"], max_new_tokens=3, progress_bar=False
        ),
        "encoding": interp.encode(demo, four, "full"),
        "regions": interp.token_regions(demo, four[0]),
        "attention": interp.attention_weights(demo, four, progress_bar=False),
        "gradients": interp.image_gradients(
            demo, four, [s.answer for s in four], layer=2, progress_bar=False
        ),
        "coe": coe,
        "diagnosis": diagnose(coe),
    }


def test_the_model_prints_one_line_and_a_table(demo):
    text = _check_summary(demo, ["'demo'", f"n_layers={demo.n_layers}", f"d_model={demo.d_model}"])
    assert text.count("\n") == 0
    assert f"{demo.n_layers}" in "".join(_html_tags(demo).text)


def test_measurements_print_their_sizes_and_shapes(core, colour):
    gen = core["generation"]
    _check_summary(gen, [f"n={len(colour)}", "condition='full'", repr(gen.texts[0])])
    scores = core["scores"]
    mean = float(scores.total.mean())
    text = _check_summary(scores, [_shape(scores.logprobs), f"{mean:.4g}"])
    shown = float(text.split("mean_logprob=")[1].split(")")[0])
    approx_close(shown, mean, abs(mean) * 1e-3, why="printed to four significant digits")
    states = core["states"]
    _check_summary(
        states,
        [
            f"Tensor{_shape(states.states['full'])} float32",
            "'blind'",
            f"layers={len(states.layers)}",
        ],
    )
    enc = core["encoding"]
    _check_summary(
        enc,
        [
            f"seq={enc.image_mask.shape[1]}",
            f"image_tokens={int(enc.image_mask.sum())}",
            f"input_ids: Tensor{_shape(enc.inputs['input_ids'])} int64",
        ],
    )
    regions = core["regions"]
    _check_summary(regions, [f"tokens={len(regions)}", f"ndarray{_shape(regions.boxes)} float64"])
    att = core["attention"]
    _check_summary(att, ["n=4", f"Tensor{_shape(att.weights[0])} float32"])
    grads = core["gradients"]
    _check_summary(grads, ["layer=2", f"Tensor{_shape(grads.grads[0])} float32"])


def test_the_prompts_markup_is_escaped_in_the_html(core):
    enc = core["encoding"]
    assert enc.prompts[0].startswith("<|im_start|>")  # the demo's chat markup
    html = enc._repr_html_()
    assert "&lt;|im_start|&gt;" in html and "<|im_start|>" not in html


def test_chain_of_embedding_and_its_diagnosis_print_the_headline(core, colour):
    coe, diag = core["coe"], core["diagnosis"]
    _check_summary(coe, ["model='demo'", f"Tensor{_shape(coe.states['full'])} float32"])
    text = _check_summary(
        diag,
        [
            f"vip={diag.vip}",
            f"D_VT={int(diag.in_vt.sum())}",
            f"ndarray{_shape(diag.distances)} float64",
            "ChainOfEmbedding(n=12",  # the nested result: its head line
        ],
    )
    assert text.count("ChainOfEmbedding") == 1


def test_study_results_on_a_tiny_model_print_short():
    import interp.studies.drives as dr
    from interp.studies.attribute import occlusion
    from interp.studies.flow import information_flow

    vlm = shared_tiny_vlm("llava")
    samples = make_samples(4, seed=3)
    flow = information_flow(vlm, samples, answer="greedy", progress_bar=False)
    _check_summary(flow, [f"n_layers={vlm.n_layers}", f"ndarray{_shape(flow.base)} float64"])
    layer = flow.integration_layer()
    _check_summary(layer, [f"DataFrame {layer.tests.shape[0]}×{layer.tests.shape[1]}"])
    drives = dr.causal_drives(
        vlm, samples[:3], support=samples[1:3], targets=["a b", "c", "d e f"], progress_bar=False
    )
    _check_summary(drives, ["n=3", "support=2", f"ndarray{_shape(drives.p0)} float64"])
    attribution = occlusion(vlm, samples[:2], grid=(2, 2), progress_bar=False)
    _check_summary(
        attribution,
        ["method='occlusion'", f"ndarray{_shape(attribution.scores)}", "TokenRegions(tokens="],
    )


def test_study_results_on_the_demo_print_short(demo):
    from interp.studies.ablation import exact_judge, no_image_ablation
    from interp.studies.decoding import evaluate_decoding

    pope = demo_world("test", n=8, seed=5, qtypes=["exist"])
    runs = evaluate_decoding(demo, pope, ["greedy"], max_new_tokens=2, progress_bar=False)
    _check_summary(runs, [f"DataFrame {len(runs.answers)}×{runs.answers.shape[1]}"])
    worded = demo_world("test", n=8, seed=3, qtypes=["color", "identify"])
    ablation = no_image_ablation(
        demo, worded, ("blind",), judge=exact_judge, n_boot=20, max_new_tokens=3, progress_bar=False
    )
    _check_summary(ablation, [f"items={len(ablation.baseline)}", "judge='exact_match'"])


def test_an_audit_section_prints_captions_not_its_figures():
    from matplotlib.figure import Figure

    from interp.studies.audit import Section

    section = Section(key="coe", title="Chain of embedding", n=40, numbers={"vip": 8})
    fig = Figure()
    fig.add_subplot().plot(np.random.default_rng(0).normal(size=(200, 8)))
    section.add_figure("distance curves", fig)
    section.add_table("layers", pd.DataFrame({"layer": range(30), "gap": np.linspace(0, 1, 30)}))
    assert len(section.figures[0][1]) > 10 * MAX_CHARS  # the embedded PNG
    _check_summary(section, ["key='coe'", "status='ran'", "n=40", "'distance curves'", "'layers'"])


def test_the_store_prints_its_path_and_count(tmp_path):
    with ResultStore(tmp_path / "store", {"measure": "residual", "layers": list(range(40))}) as st:
        st.write(["k1", "k2"], ["s1", "s2"], {"h": torch.zeros(2, 3)}, [{}, {}])
        _check_summary(st, ["samples=2", "writer='main'", "store", "measure: 'residual'"])


# -- the summary itself ------------------------------------------------------------------------


@dataclasses.dataclass(repr=False)
class _Wide(Summary):
    table: pd.DataFrame
    big: np.ndarray
    words: list[str]
    by_name: dict[str, torch.Tensor]
    text: str


def test_any_field_is_one_short_line():
    wide = _Wide(
        table=pd.DataFrame(np.zeros((10_000, 30))),
        big=np.zeros((1000, 1000)),
        words=["x" * 1000] * 10_000,
        by_name={f"layer {i}": torch.zeros(5, 7) for i in range(100)},
        text="line\n" * 10_000,
    )
    text = repr(wide)
    assert len(text.splitlines()) == 6 and len(text) <= MAX_CHARS
    assert "DataFrame 10000×30" in text and "ndarray[1000, 1000] float64" in text
    assert "list[10000] of str" in text and "dict[100] {layer 0: Tensor[5, 7] float32" in text
    for value in (wide.table, wide.big, wide.words, wide.by_name, wide.text, wide):
        line = describe(value)
        assert "\n" not in line and len(line) <= WIDTH


def test_a_few_numbers_are_shown():
    assert describe(torch.tensor([1.5, -2.0])) == "Tensor[2] float32 [1.5, -2]"
    assert describe(np.arange(3)) == "ndarray[3] int64 [0, 1, 2]"
    assert describe(list(range(40))) == "list[40] of int: 0, 1, 2, …, 39"


def test_more_fields_than_lines_are_named_on_the_last_line():
    cls = dataclasses.make_dataclass(
        "Many", [(f"f{i}", int) for i in range(30)], bases=(Summary,), repr=False
    )
    lines = repr(cls(*range(30))).splitlines()
    assert len(lines) == MAX_LINES
    assert lines[-1].strip().startswith("… 12 more: f18, f19")


class _Broken(Summary):
    def __len__(self) -> int:
        raise RuntimeError("no length")

    def _repr_rows(self) -> list[tuple[str, Any]]:
        return [("value", _Unprintable())]


class _Unprintable:
    def __repr__(self) -> str:
        raise RuntimeError("cannot print")


def test_a_summary_never_raises():
    assert repr(_Broken()).splitlines() == ["_Broken()", "  value  <_Unprintable>"]


def test_texts_are_escaped_in_the_html():
    gen = interp.Generation(
        texts=["<script>alert(1)</script>"], token_ids=[[1]], sample_ids=["a&b"], condition="full"
    )
    parsed = _html_tags(gen)
    assert "script" not in parsed.tags
    assert "<script>" in "".join(parsed.text)  # shown as text
    assert "a&amp;b" in gen._repr_html_()


# -- every public result ---------------------------------------------------------------------------


def _public_dataclasses() -> dict[str, type]:
    modules = [interp] + [
        importlib.import_module(f"interp.studies.{m.name}")
        for m in pkgutil.iter_modules(interp.studies.__path__)
        if m.ispkg
    ]
    found = {}
    for module in modules:
        for name in module.__all__:
            value = getattr(module, name)
            if isinstance(value, type) and dataclasses.is_dataclass(value):
                found[f"{module.__name__}.{name}"] = value
    return found


def test_every_public_result_type_prints_a_summary():
    found = _public_dataclasses()
    assert len(found) > 40  # the walk reached the studies
    names = {cls.__name__ for cls in found.values()}
    assert VALUES <= names, f"not public dataclasses any more: {VALUES - names}"
    for where, cls in sorted(found.items()):
        if cls.__name__ in VALUES:
            continue
        assert issubclass(cls, Summary), f"{where}: a result without interp.reprs.Summary"
        # a dataclass without repr=False generates a repr that prints every field whole
        assert cls.__repr__ is Summary.__repr__, f"{where}: declare @dataclass(repr=False)"
        assert cls._repr_html_ is Summary._repr_html_, where
    for cls in (interp.VLM, ResultStore):
        assert issubclass(cls, Summary) and cls._repr_html_ is Summary._repr_html_
