"""One run-options object in every measurement and study (:class:`interp.RunOptions`).

(a) :meth:`RunOptions.resolve` folds keywords into ``run=``; (b) every public measurement and
study entry point takes ``run=`` (and keywords), and none keeps ``batch_size`` / ``store`` /
``progress_bar`` as a parameter of its own; (c) ``run=`` and the keywords give the same result;
(d) the trace options reach every trace a measurement opens, the edits' preparation included,
and every study that cannot run remotely refuses before any compute, naming itself; (e) the
command line's ``--remote``.
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

import interp
import interp.model
from interp.cli import main
from interp.options import RunOptions
from interp.testing import one_error_line
from interp.testing.samples import make_samples
from interp.testing.tiny import shared_tiny_vlm, tiny_vlm

STUDIES = (
    "ablation",
    "attribute",
    "audit",
    "coe",
    "conflict",
    "decoding",
    "drives",
    "flow",
    "recall",
    "reproduce",
)
RUN_FIELDS = ("batch_size", "store", "overwrite", "shard", "progress_bar")

# public functions that take a model but are no measurement: they take no run options
NOT_MEASUREMENTS = {
    "interp.encode": "builds the inputs; runs no model",
    "interp.token_regions": "maps image regions to token positions; runs no model",
    "interp.studies.flow.check_flow": "checks edges and windows against the model's shape",
}

# the entry points as they are today: the discovery below must find every one of them
ENTRY_POINTS = {
    "interp.attention_weights",
    "interp.generate",
    "interp.generate_states",
    "interp.image_gradients",
    "interp.residual_stream",
    "interp.score",
    "interp.score_contexts",
    "interp.studies.ablation.grpo_lora",
    "interp.studies.ablation.in_context",
    "interp.studies.ablation.no_image_ablation",
    "interp.studies.attribute.answers_for",
    "interp.studies.attribute.attention",
    "interp.studies.attribute.gradient",
    "interp.studies.attribute.occlusion",
    "interp.studies.audit.audit",
    "interp.studies.coe.chain_of_embedding",
    "interp.studies.conflict.bias_probe",
    "interp.studies.conflict.conflict_responses",
    "interp.studies.decoding.evaluate_decoding",
    "interp.studies.decoding.parameter_sweep",
    "interp.studies.drives.causal_drives",
    "interp.studies.drives.drive_sensitivity",
    "interp.studies.drives.recovery_error",
    "interp.studies.drives.source_removal",
    "interp.studies.drives.support_stability",
    "interp.studies.flow.information_flow",
    "interp.studies.recall.run_recall",
    "interp.studies.reproduce.reproduce",
}


def public_functions() -> Iterator[tuple[str, Callable[..., Any]]]:
    """Every public function of ``interp`` and of each study package that takes a model, a run
    option or ``run: RunOptions``."""
    for module in ("interp", *(f"interp.studies.{s}" for s in STUDIES)):
        mod = importlib.import_module(module)
        for name in mod.__all__:
            obj = getattr(mod, name)
            if not inspect.isfunction(obj):
                continue
            params = inspect.signature(obj).parameters
            run = params.get("run")
            takes_run = run is not None and "RunOptions" in str(run.annotation)
            if takes_run or set(params) & {"vlm", "batch_size", "store", "progress_bar"}:
                yield f"{module}.{name}", obj


# -- (a) resolve ----------------------------------------------------------------------------------


def test_keywords_override_the_run_and_keep_the_rest():
    base = RunOptions(batch_size=4, store="somewhere", progress_bar=False)
    got = RunOptions.resolve(base, batch_size=2, overwrite=True)
    assert (got.batch_size, got.store, got.overwrite, got.progress_bar) == (
        2,
        "somewhere",
        True,
        False,
    )
    assert base.batch_size == 4  # the given object is not changed
    assert RunOptions.resolve(None) == RunOptions()
    assert RunOptions.resolve(base) is base


def test_unknown_keywords_are_nnsight_trace_options():
    got = RunOptions.resolve(None, scan=False, trace={"validate": True}, remote=True)
    assert got.trace == {"scan": False, "validate": True}
    assert got.is_remote and got.trace_options() == {
        "scan": False,
        "validate": True,
        "remote": True,
    }
    assert not RunOptions.resolve(None, scan=False).is_remote
    backend = object()
    assert RunOptions.resolve(None, backend=backend).trace_options() == {"backend": backend}
    assert RunOptions().trace_options() == {}


def test_run_of_a_wrong_type_is_a_type_error():
    with pytest.raises(TypeError, match="RunOptions"):
        RunOptions.resolve({"batch_size": 2})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="RunOptions"):
        interp.residual_stream(shared_tiny_vlm("llava"), make_samples(1), run={"batch_size": 2})


# -- (b) every entry point takes run= --------------------------------------------------------------


def test_every_measurement_and_study_entry_point_takes_run():
    found = dict(public_functions())
    assert ENTRY_POINTS <= set(found), f"not found: {sorted(ENTRY_POINTS - set(found))}"
    assert set(NOT_MEASUREMENTS) <= set(found), "an exemption names no public function"
    for name, fn in sorted(found.items()):
        if name in NOT_MEASUREMENTS:
            continue
        params = inspect.signature(fn).parameters
        assert "run" in params and params["run"].default is None, f"{name}: no run=None"
        assert params["run"].kind is inspect.Parameter.KEYWORD_ONLY, f"{name}: run= positional"
        kinds = [p.kind for p in params.values()]
        assert inspect.Parameter.VAR_KEYWORD in kinds, f"{name}: run options as keywords"
        own = [f for f in RUN_FIELDS if f in params]
        assert not own, f"{name} still lists {own} itself: take them through run="


# -- (c) run= equals the keywords -----------------------------------------------------------------


def test_run_options_equal_the_keywords():
    vlm = tiny_vlm("llava")
    samples = interp.testing.make_samples()
    by_keywords = interp.residual_stream(vlm, samples, batch_size=2, progress_bar=False)
    by_run = interp.residual_stream(vlm, samples, run=RunOptions(batch_size=2, progress_bar=False))
    torch.testing.assert_close(by_run, by_keywords, rtol=0, atol=0)
    mixed = interp.residual_stream(vlm, samples, run=RunOptions(batch_size=2), progress_bar=False)
    torch.testing.assert_close(mixed, by_keywords, rtol=0, atol=0)


def test_a_store_and_its_resume_through_run(tmp_path):
    vlm = shared_tiny_vlm("llava")
    samples = make_samples(4)
    run = RunOptions(batch_size=2, store=tmp_path / "s", progress_bar=False)
    first = interp.score(vlm, samples, ["yes"] * 4, run=run)
    again = interp.score(vlm, samples, ["yes"] * 4, store=tmp_path / "s", progress_bar=False)
    torch.testing.assert_close(again.logprobs, first.logprobs, rtol=0, atol=0)
    assert (tmp_path / "s").is_dir()


def test_the_row_scorer_and_the_lens_take_run_and_refuse_a_store(tmp_path):
    from interp.encoding import target_ids
    from interp.scoring import score_rows
    from interp.studies.recall import logit_lens

    vlm = shared_tiny_vlm("llava")
    samples = make_samples(3)
    rows, targets = [(s, "full") for s in samples], target_ids(vlm, ["Yes it is."] * 3)
    by_keywords = score_rows(vlm, rows, targets, batch_size=2, share_prefix=False)
    by_run = score_rows(vlm, rows, targets, run=RunOptions(batch_size=2, share_prefix=False))
    for a, b in zip(by_run, by_keywords, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    with pytest.raises(ValueError, match="score_contexts"):
        score_rows(vlm, rows, targets, store=tmp_path / "s")
    states = torch.randn(3, vlm.n_layers + 1, vlm.d_model)
    tokens = torch.tensor([1, 2, 3])
    lens = logit_lens(vlm, states, tokens, run=RunOptions(batch_size=2))
    torch.testing.assert_close(lens, logit_lens(vlm, states, tokens, batch_size=3))


# -- (d) trace options reach every trace ----------------------------------------------------------


@pytest.fixture
def recorded(monkeypatch) -> list[dict[str, Any]]:
    """Every nnsight trace opened (its keywords); the ``sentinel`` keyword is taken off before
    nnsight sees it."""
    seen: list[dict[str, Any]] = []
    vlm = shared_tiny_vlm("llava")
    original = type(vlm.nn).trace

    def recording(self: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append({k: v for k, v in kwargs.items() if k == "sentinel"})
        kwargs.pop("sentinel", None)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(type(vlm.nn), "trace", recording)
    return seen


def test_trace_options_reach_every_trace_edits_preparation_included(recorded):
    from interventions import Patch, SwapImage

    vlm = shared_tiny_vlm("llava")
    samples = make_samples(3)
    quiet = {"progress_bar": False, "trace": {"sentinel": 1}}
    calls = [
        lambda: interp.residual_stream(
            vlm, samples, edits=[SwapImage(), Patch("blind", 1)], **quiet
        ),
        lambda: interp.generate(vlm, samples, max_new_tokens=2, edits=[SwapImage()], **quiet),
        lambda: interp.score(vlm, samples, ["yes"] * 3, edits=[SwapImage()], **quiet),
        lambda: interp.generate_states(
            vlm, samples, layers=[1], max_new_tokens=2, read_at="generated", **quiet
        ),
        lambda: interp.score_contexts(
            vlm, samples, ["yes"] * 3, lambda i, s: [(s, "full"), (s, "blind")], **quiet
        ),
        lambda: interp.attention_weights(vlm, samples, edits=[SwapImage()], **quiet),
        lambda: interp.image_gradients(vlm, samples, ["yes"] * 3, layer=1, **quiet),
        lambda: interp.image_gradients(vlm, samples, layer=1, gradients=False, **quiet),
    ]
    for call in calls:
        before = len(recorded)
        call()
        opened = recorded[before:]
        assert opened, "no trace was opened"
        assert all(kw == {"sentinel": 1} for kw in opened), f"a trace without the options: {opened}"
    # a swap reads the null image's features in a trace of its own: 2 traces a batch
    before = len(recorded)
    interp.residual_stream(vlm, samples, edits=[SwapImage()], batch_size=8, **quiet)
    assert len(recorded) - before == 2


def test_a_study_passes_its_run_options_to_the_measurement(monkeypatch):
    from interp.studies.attribute import answers_for

    got: dict[str, Any] = {}

    def generate(vlm: Any, samples: Any, condition: Any, **kw: Any) -> Any:
        got.update(kw)
        return interp.Generation(["a"] * len(samples), [[1]] * len(samples), [], "full")

    monkeypatch.setattr(interp, "generate", generate)
    answers_for(shared_tiny_vlm("llava"), make_samples(2), "greedy", "full", remote=True)
    run = got["run"]
    assert run.remote is True and run.progress_bar is False  # answers_for's default kept
    answers_for(shared_tiny_vlm("llava"), make_samples(2), "greedy", "full", run=RunOptions())
    assert got["run"].progress_bar is True  # a given run= keeps its own


def _conflict_with_decoding(vlm: Any, samples: Any, **kw: Any) -> Any:
    from interp.studies.conflict import conflict_responses
    from interventions.decoding import ContrastiveDecoding

    class Mine(ContrastiveDecoding):  # its own rule: combine() is library code
        def lower(self, max_new_tokens: int) -> None:
            return None

    return conflict_responses(vlm, samples, decodings={"mine": Mine("blind", 1.0, 0.1)}, **kw)


def _study(module: str, name: str, *args: Any, **fixed: Any) -> Callable[..., Any]:
    def call(vlm: Any, samples: Any, **kw: Any) -> Any:
        fn = getattr(importlib.import_module(f"interp.studies.{module}"), name)
        return fn(vlm, samples, *args, **fixed, **kw)

    return call


# (the step the error names, the call): every entry point that refuses a remote run
REFUSING = [
    ("grpo_lora", _study("ablation", "grpo_lora")),
    ("conflict_responses (mine)", _conflict_with_decoding),
]


@pytest.mark.parametrize(
    "where", [{"remote": True}, {"backend": object()}], ids=["remote", "backend"]
)
@pytest.mark.parametrize("step,call", REFUSING, ids=[s for s, _ in REFUSING])
def test_a_study_that_cannot_run_remotely_refuses_before_any_compute(step, call, where, recorded):
    vlm = shared_tiny_vlm("llava")
    samples = make_samples(3)
    named = rf"^{re.escape(step)}.* cannot run remotely"
    with pytest.raises(interp.RemoteError, match=named):
        call(vlm, samples, **where)
    with pytest.raises(interp.RemoteError, match=named):
        call(vlm, samples, run=RunOptions(**where))
    assert recorded == [], "a trace was opened before the refusal"


def test_the_audit_and_reproduce_refuse_before_writing_anything(tmp_path, recorded):
    from interp.studies.audit import audit
    from interp.studies.reproduce import reproduce

    with pytest.raises(interp.RemoteError, match="^audit cannot run remotely"):
        audit(shared_tiny_vlm("llava"), make_samples(3), tmp_path / "audit", remote=True)
    with pytest.raises(interp.RemoteError, match="^reproduce with a backend cannot run remotely"):
        reproduce("coe", "demo", out=tmp_path / "reproduce", backend=object())
    assert not list(tmp_path.iterdir()) and recorded == []


def test_reproduce_refuses_a_keyword_no_command_takes(tmp_path):
    from interp.studies.reproduce import reproduce

    with pytest.raises(TypeError, match="batch_szie"):
        reproduce("coe", "demo", out=tmp_path / "o", batch_szie=4)
    # its former keywords still read (the refusal shows they got past the check)
    with pytest.raises(interp.RemoteError):
        reproduce(
            "coe", "demo", out=tmp_path / "o", progress=True, batch_size=None, backend=object()
        )
    assert not (tmp_path / "o").exists()


# -- (e) the command line -------------------------------------------------------------------------


def _demo_argv(command: str, out: Path) -> list[str]:
    return [command, "--model", "demo", "--data", "demo", "--n", "8", "--out", str(out)]


def test_remote_on_a_command_not_lowered_is_one_error_line(tmp_path, capsys, no_model, monkeypatch):
    """A study command whose module does not declare REMOTE (every shipped one does: a new
    study's default) refuses --remote before anything is loaded."""
    import interp.studies.decoding.cli as decoding_cli

    monkeypatch.delattr(decoding_cli, "REMOTE")
    out = tmp_path / "out"
    capsys.readouterr()
    assert main([*_demo_argv("decoding", out), "--remote"]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert line.startswith("error: RemoteError: interp decoding cannot run remotely")
    assert not out.exists(), "a refused command created its output folder"


@pytest.fixture
def loaded(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The keywords a command loads its model with (the load itself stops the command)."""
    seen: dict[str, Any] = {}

    def load(*args: Any, **kwargs: Any) -> None:
        seen.update(kwargs)
        raise interp.InterpError("stop here")

    monkeypatch.setattr(interp.model, "load", load)
    return seen


@pytest.mark.parametrize("command", ["ablation", "flow"])
def test_remote_on_a_command_that_can_run_remotely_loads_the_model_remote(
    command, tmp_path, capsys, loaded
):
    capsys.readouterr()
    assert main([*_demo_argv(command, tmp_path / "out"), "--remote"]) == 2
    assert one_error_line(capsys.readouterr().err) == "error: InterpError: stop here"
    assert loaded.get("remote") is True
    assert loaded.get("attn_implementation") is None  # the server's deployment decides


@pytest.mark.parametrize("command", [*STUDIES, "doctor"])
def test_every_study_command_documents_remote(command, capsys):
    with pytest.raises(SystemExit) as stop:
        main([command, "--help"])
    assert stop.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--remote" in text
    assert "run every trace on NDIF (the API key from nnsight's config or NDIF_API_KEY)" in text


def test_doctor_remote_loads_no_weights(capsys, loaded):
    capsys.readouterr()
    assert main(["doctor", "--model", "demo", "--remote"]) == 2
    assert one_error_line(capsys.readouterr().err) == "error: InterpError: stop here"
    assert loaded.get("remote") is True and loaded.get("dispatch") is False


def test_the_audit_hands_given_run_options_to_its_sections(tmp_path):
    from interp.studies.audit import (
        AuditOptions,
        Section,
        Selection,
        Study,
        add_study,
        audit,
        remove_study,
    )

    seen: list[AuditOptions] = []

    def section(vlm: Any, samples: list[interp.Sample], opts: AuditOptions) -> Section:
        seen.append(opts)
        return Section("run_options_probe", "probe", n=len(samples))

    add_study(Study("run_options_probe", "probe", 99, lambda s: Selection(list(s)), section))
    try:
        vlm, samples, only = shared_tiny_vlm("llava"), make_samples(2), ["run_options_probe"]
        audit(vlm, samples, tmp_path / "a", studies=only, batch_size=3, progress_bar=False)
        given = AuditOptions(batch_size=5, max_new_tokens=2)
        audit(vlm, samples, tmp_path / "b", studies=only, options=given, progress_bar=False)
        audit(vlm, samples, tmp_path / "c", studies=only, options=given, run=RunOptions(store="s"))
    finally:
        remove_study("run_options_probe")
    assert seen[0].batch_size == 3 and seen[0].store == tmp_path / "a" / "store"
    assert (seen[1].batch_size, seen[1].max_new_tokens) == (5, 2)  # options kept
    assert seen[2].batch_size == 8 and seen[2].store == Path("s")  # a given run= replaces them
    assert given.batch_size == 5 and given.store is None  # the caller's options unchanged
