"""The extension points check themselves: every exported intervention and every decoding method
keeps the contract of :mod:`interp.edits` and :mod:`interp.generation`.

Members are discovered, not listed: every :class:`interp.Intervention` subclass that
``interventions`` exports, and every name of ``interventions.decoding.METHODS`` (plus plain
decoding). A new member without an entry in the tables below fails the suite, so adding one means
saying here how to build it for a tiny model and which of its arguments are bad.

For each member: bad arguments are refused with a typed error (:class:`interp.InterpError`)
before any forward runs; ``fingerprint()`` is equal for equal constructions and changes with
every constructor parameter (result stores key on it); it runs in ``residual_stream``, ``score``
and ``generate`` and changes their output; prompt-only edits act at the prompt forward only, as
documented; decoding methods run through ``generate(decoding=...)`` with answers independent of
the batch size. The in-depth comparisons against hand-written references live in
``test_edits.py`` and ``test_decoding_methods.py``.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
import torch

import interp
import interventions
from interp.edits import check_position, edits_fingerprint
from interp.errors import (
    ConditionError,
    DecodingError,
    InterpError,
    InterventionError,
    ModalityError,
)
from interp.testing import make_samples, shared_tiny_vlm
from interp.testing.tiny import ZOO_ARCHITECTURES
from interp.testing.tolerance import assert_close
from interventions import decoding as dec

ARCH = "llava"  # tiny, eager attention (the attention edits need it), mixed batches
STEPS = 3


def vector(vlm: interp.VLM, seed: int) -> torch.Tensor:
    return 0.5 * torch.randn(vlm.d_model, generator=torch.Generator().manual_seed(seed))


@dataclass(frozen=True)
class Factory:
    """How to build an intervention for a tiny model.

    Attributes:
        args: valid keyword arguments (fresh objects on every call: equal, not identical).
        variants: per constructor parameter, another valid value (the fingerprint must change).
        refused: ``(keyword overrides, error type, message pattern)`` of bad constructions,
            refused by the constructor or by ``check(vlm)``.
    """

    args: Callable[[interp.VLM], dict[str, Any]]
    variants: dict[str, Callable[[interp.VLM], Any]]
    refused: list[tuple[Callable[[interp.VLM], dict[str, Any]], type[InterpError], str]] = field(
        default_factory=list
    )


FACTORIES: dict[str, Factory] = {
    "Steer": Factory(
        lambda vlm: {"layers": 1, "vector": vector(vlm, 0), "positions": "all", "scale": 0.5},
        {
            "layers": lambda vlm: 2,
            "vector": lambda vlm: vector(vlm, 1),
            "positions": lambda vlm: "last",
            "scale": lambda vlm: 2.0,
        },
        [
            (lambda vlm: {"layers": 99}, InterventionError, r"valid indices are 0\.\."),
            (lambda vlm: {"vector": torch.zeros(3)}, InterventionError, "d_model"),
            (lambda vlm: {"positions": "middle"}, InterventionError, "unknown position"),
        ],
    ),
    "Patch": Factory(
        lambda vlm: {"source": "blind", "layers": 2, "positions": "last"},
        {
            "source": lambda vlm: "null:black",
            "layers": lambda vlm: 1,
            "positions": lambda vlm: "question",
        },
        [
            (lambda vlm: {"layers": 99}, InterventionError, r"valid indices are 0\.\."),
            (lambda vlm: {"source": "nowhere"}, ConditionError, "nowhere"),
            (lambda vlm: {"positions": "answer"}, InterventionError, "generated/target"),
            (
                lambda vlm: {"source": torch.zeros(3, 1, 5), "layers": 2},
                InterventionError,
                "must have shape",
            ),
        ],
    ),
    "Knockout": Factory(
        lambda vlm: {"keys": "image", "queries": "last", "layers": [1, 2]},
        {
            "keys": lambda vlm: "question",
            "queries": lambda vlm: "text",
            "layers": lambda vlm: [1],
        },
        [
            (lambda vlm: {"layers": [99]}, InterventionError, r"outside 1\.\."),
            (lambda vlm: {"layers": []}, InterventionError, "at least one layer"),
            (lambda vlm: {"keys": "middle"}, InterventionError, "unknown position"),
            (lambda vlm: {"keys": "audio"}, ModalityError, "llava.* not audio"),
        ],
    ),
    "AttentionBoost": Factory(
        lambda vlm: {"alpha": 0.5, "layers": None, "queries": "last", "keys": "image"},
        {
            "alpha": lambda vlm: 0.2,
            "layers": lambda vlm: [3],
            "queries": lambda vlm: "all",
            "keys": lambda vlm: "question",
        },
        [
            (lambda vlm: {"layers": [0]}, InterventionError, r"outside 1\.\."),
            (lambda vlm: {"queries": "middle"}, InterventionError, "unknown position"),
        ],
    ),
    "SwapImage": Factory(
        lambda vlm: {"source": "null:black"},
        {"source": lambda vlm: "null:white"},
        [
            (lambda vlm: {"source": "blind"}, ConditionError, "carries no image"),
            (lambda vlm: {"source": "nowhere"}, ConditionError, "nowhere"),
        ],
    ),
    "SwapFeatures": Factory(
        lambda vlm: {"kind": "image", "source": "null:black"},
        {"kind": lambda vlm: "audio", "source": lambda vlm: "null:white"},
        [
            (lambda vlm: {"kind": "audio"}, ModalityError, "llava.* not audio"),
            (lambda vlm: {"kind": "smell"}, InterventionError, "unknown modality"),
            (lambda vlm: {"source": "blind"}, ConditionError, "carries no image"),
        ],
    ),
    "AblateFeatures": Factory(
        lambda vlm: {"kind": "image", "mode": "zero"},
        {"kind": lambda vlm: "video", "mode": lambda vlm: "mean"},
        [
            (lambda vlm: {"kind": "video"}, ModalityError, "llava.* not video"),
            (lambda vlm: {"mode": "median"}, InterventionError, "unknown ablation mode"),
        ],
    ),
    "AblateImage": Factory(
        lambda vlm: {"mode": "zero"},
        {"mode": lambda vlm: "mean"},
        [(lambda vlm: {"mode": "median"}, InterventionError, "unknown ablation mode")],
    ),
    # the image tokens of one region per sample (make_samples ids s0, s1, s2), by rank
    "AblateImageTokens": Factory(
        lambda vlm: {"tokens": {"s0": [0, 1, 2], "s1": [3], "s2": [0, 5]}, "mode": "zero"},
        {"tokens": lambda vlm: {"s0": [1], "s1": [0], "s2": [2]}, "mode": lambda vlm: "mean"},
        [
            (lambda vlm: {"mode": "median"}, InterventionError, "unknown ablation mode"),
            (lambda vlm: {"tokens": {}}, InterventionError, "non-empty mapping"),
            (lambda vlm: {"tokens": {"s0": [-1]}}, InterventionError, "negative"),
        ],
    ),
    "SwapImageTokens": Factory(
        lambda vlm: {"tokens": {"s0": [0, 1, 2], "s1": [3], "s2": [0, 5]}, "source": "null:black"},
        {
            "tokens": lambda vlm: {"s0": [1], "s1": [0], "s2": [2]},
            "source": lambda vlm: "null:white",
        },
        [
            (lambda vlm: {"source": "blind"}, ConditionError, "carries no image"),
            (lambda vlm: {"tokens": {}}, InterventionError, "non-empty mapping"),
        ],
    ),
}


def exported_interventions() -> list[type[interp.Intervention]]:
    """Every Intervention subclass the ``interventions`` package exports."""
    out = []
    for name in interventions.__all__:
        obj = getattr(interventions, name)
        if inspect.isclass(obj) and issubclass(obj, interp.Intervention):
            out.append(obj)
    return out


INTERVENTIONS = exported_interventions()
IDS = [cls.__name__ for cls in INTERVENTIONS]


def build(cls: type[interp.Intervention], vlm: interp.VLM, **override: Any) -> Any:
    return cls(**{**FACTORIES[cls.__name__].args(vlm), **override})


def build_unchecked(cls: type[interp.Intervention], vlm: interp.VLM, **override: Any) -> Any:
    """``build`` without the suite's run-time annotation checker (conftest), so a bad argument
    meets the library's own validation, as it does for a user."""
    edit = cls.__new__(cls)
    inspect.unwrap(cls.__init__)(edit, **{**FACTORIES[cls.__name__].args(vlm), **override})
    return edit


@contextmanager
def counting_forwards(vlm: interp.VLM) -> Iterator[dict[str, int]]:
    """Counts the model's forwards (a hook on the token embeddings, which every forward runs)."""
    calls = {"n": 0}

    def hook(module: Any, args: Any) -> None:
        calls["n"] += 1

    handle = vlm.hf.get_input_embeddings().register_forward_pre_hook(hook)
    try:
        yield calls
    finally:
        handle.remove()


class Spy(interp.Intervention):
    """Delegates to an edit and records the generation steps at which it is applied."""

    def __init__(self, inner: interp.Intervention) -> None:
        self.inner = inner
        self.seen: list[int] = []

    @property
    def steps(self) -> Any:  # type: ignore[override]
        return self.inner.steps

    def check(self, vlm: interp.VLM) -> None:
        self.inner.check(vlm)

    def prepare(self, vlm: interp.VLM, batch: Any) -> Any:
        return self.inner.prepare(vlm, batch)

    def apply(self, ctx: interp.EditContext) -> None:
        self.seen.append(ctx.step)
        self.inner.apply(ctx)

    def fingerprint(self) -> dict[str, Any]:
        return self.inner.fingerprint()


@pytest.fixture(scope="module")
def vlm() -> interp.VLM:
    return shared_tiny_vlm(ARCH)


@pytest.fixture(scope="module")
def samples() -> list[interp.Sample]:
    return make_samples(3)


@pytest.fixture(scope="module")
def plain(vlm, samples) -> dict[str, Any]:
    """The unedited measurements the edited ones are compared with."""
    kw = {"batch_size": 3, "progress_bar": False}
    return {
        "residual": interp.residual_stream(vlm, samples, **kw),
        "score": interp.score(vlm, samples, **kw),
        "generate": interp.generate(vlm, samples, max_new_tokens=STEPS, output_scores=True, **kw),
    }


# -- discovery -----------------------------------------------------------------------------------


def test_every_exported_intervention_has_a_factory():
    assert len(INTERVENTIONS) >= 6, IDS
    missing = [name for name in IDS if name not in FACTORIES]
    assert not missing, (
        f"exported interventions without an entry in FACTORIES of {__file__}: {missing}; add "
        "valid arguments for a tiny model, a variant per parameter and bad arguments"
    )
    stale = [name for name in FACTORIES if name not in IDS]
    assert not stale, f"FACTORIES names classes that interventions no longer exports: {stale}"


def test_every_public_intervention_class_is_exported():
    """An Intervention defined in any module of the package is exported (so this suite sees it)."""
    defined = set()
    for info in pkgutil.iter_modules(interventions.__path__):
        module = importlib.import_module(f"interventions.{info.name}")
        for name, obj in vars(module).items():
            if (
                inspect.isclass(obj)
                and issubclass(obj, interp.Intervention)
                and obj.__module__ == module.__name__
                and not name.startswith("_")
            ):
                defined.add(name)
    assert defined, "no Intervention subclass found in the interventions package"
    assert defined <= set(IDS), f"not exported by interventions: {sorted(defined - set(IDS))}"


# -- (a) bad arguments ---------------------------------------------------------------------------


@pytest.mark.parametrize("cls", INTERVENTIONS, ids=IDS)
def test_bad_arguments_are_refused_before_compute(cls, vlm, samples):
    factory = FACTORIES[cls.__name__]
    assert factory.refused, f"{cls.__name__}: give at least one bad construction"
    for override, error, match in factory.refused:
        with counting_forwards(vlm) as calls:
            try:
                edit = build_unchecked(cls, vlm, **override(vlm))
            except InterpError as err:
                assert isinstance(err, error), f"{cls.__name__}: {type(err).__name__}: {err}"
                continue
            with pytest.raises(error, match=match):
                edit.check(vlm)
            with pytest.raises(error, match=match):
                interp.residual_stream(vlm, samples, edits=[edit], progress_bar=False)
            with pytest.raises(error, match=match):
                interp.score(vlm, samples, edits=[edit], progress_bar=False)
            with pytest.raises(error, match=match):
                interp.generate(vlm, samples, edits=[edit], max_new_tokens=2, progress_bar=False)
        assert calls["n"] == 0, f"{cls.__name__}{override(vlm)}: refused only after a forward"
    # a valid construction passes check and does run forwards (the counter counts)
    edit = build(cls, vlm)
    edit.check(vlm)
    with counting_forwards(vlm) as calls:
        interp.residual_stream(vlm, samples[:1], edits=[edit], progress_bar=False)
    assert calls["n"] > 0


@pytest.mark.parametrize("cls", INTERVENTIONS, ids=IDS)
def test_constructor_errors_are_typed(cls, vlm):
    """Refusals are the project's errors, never a bare ValueError/TypeError."""
    for override, error, match in FACTORIES[cls.__name__].refused:
        try:
            build_unchecked(cls, vlm, **override(vlm))
        except Exception as err:  # noqa: BLE001 - the type is what is tested
            assert isinstance(err, InterpError), f"{cls.__name__}: untyped {type(err).__name__}"
            assert isinstance(err, error) and err.args and re.search(match, str(err))


@pytest.mark.parametrize(
    "spec",
    ["all", "image:1", -1, [0, -1], (1, 2), [np.int64(3)], torch.ones(2, 5, dtype=torch.bool)],
)
def test_position_specs_accepted_by_check(spec):
    check_position(spec)


@pytest.mark.parametrize(
    "spec", ["middle", "image:x", 1.5, [], [True], None, torch.ones(5, dtype=torch.bool)]
)
def test_position_specs_refused_by_check(spec):
    with pytest.raises(InterventionError, match="position"):
        check_position(spec)


# -- (b) fingerprints ----------------------------------------------------------------------------


@pytest.mark.parametrize("cls", INTERVENTIONS, ids=IDS)
def test_fingerprint_is_stable_and_follows_every_parameter(cls, vlm):
    factory = FACTORIES[cls.__name__]
    a, b = build(cls, vlm), build(cls, vlm)
    assert a is not b
    json.dumps(a.fingerprint(), sort_keys=True)  # a store writes it as JSON
    assert a.fingerprint() == b.fingerprint()
    assert edits_fingerprint([a]) == edits_fingerprint([b])
    params = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
    missing = [p for p in params if p not in factory.variants]
    assert not missing, f"{cls.__name__}: no variant for parameter(s) {missing} in FACTORIES"
    for name in params:
        other = build(cls, vlm, **{name: factory.variants[name](vlm)})
        assert other.fingerprint() != a.fingerprint(), f"{cls.__name__}: {name} not fingerprinted"
        assert edits_fingerprint([other]) != edits_fingerprint([a])


# -- (c) every measurement -----------------------------------------------------------------------


def differs(a: torch.Tensor, b: torch.Tensor) -> bool:
    finite = torch.isfinite(a) & torch.isfinite(b)
    return bool((a[finite] - b[finite]).abs().max() > 1e-5)


@pytest.mark.parametrize("cls", INTERVENTIONS, ids=IDS)
def test_applies_in_residual_stream_score_and_generate(cls, vlm, samples, plain):
    kw = {"batch_size": 3, "progress_bar": False}
    states = interp.residual_stream(vlm, samples, edits=[build(cls, vlm)], **kw)
    assert states.shape == plain["residual"].shape and torch.isfinite(states).all()
    assert differs(states, plain["residual"]), f"{cls.__name__} left residual_stream unchanged"

    scored = interp.score(vlm, samples, edits=[build(cls, vlm)], **kw)
    assert scored.token_ids == plain["score"].token_ids
    assert torch.isfinite(scored.logprobs).all()
    assert differs(scored.logprobs, plain["score"].logprobs), f"{cls.__name__}: score unchanged"

    spy = Spy(build(cls, vlm))
    gen = interp.generate(vlm, samples, edits=[spy], max_new_tokens=STEPS, output_scores=True, **kw)
    assert len(gen.token_ids) == len(samples)
    first = torch.stack([s[0] for s in gen.scores])
    before = torch.stack([s[0] for s in plain["generate"].scores])
    assert differs(first, before), f"{cls.__name__}: the first generated token's scores unchanged"
    longest = max(len(ids) for ids in gen.token_ids)
    if spy.steps == "prompt":
        # documented: prompt-only edits act at the prompt forward; generated tokens see their
        # effect through the cached keys and values only
        assert spy.seen == [0], f"{cls.__name__} (steps='prompt') applied at steps {spy.seen}"
    else:
        assert spy.steps == "all"
        assert spy.seen == list(range(len(spy.seen)))
        # every generated step's forward (STEPS at most; fewer when every row ended early); the
        # open-ended step loop also enters the step after the last, which never runs
        assert min(longest + 1, STEPS) <= len(spy.seen) <= STEPS + 1, spy.seen


# -- decoding methods ----------------------------------------------------------------------------

DECODING = [dec.PLAIN[0], *dec.METHODS]
# arguments a method needs (no default)
REQUIRED: dict[str, dict[str, Any]] = {"contrast": {"amateur": "blind"}}
# per parameter name, other valid values (the first that differs from the default is used)
VALUES: dict[str, list[Any]] = {
    "noise_step": [200, 700],
    "alpha": [0.3, 0.7],
    "beta": [0.2, 0.3],
    "instruction": ["Answer as if you could not see the image."],
    "amateur": ["null:black", "blind"],
    "lam": [0.05, 0.1],
    "gamma": [1.5, 2.0],
    "layers": [[3], [2, 3]],
}


def make_method(name: str, **params: Any) -> Any:
    return dec.method(name, **{**REQUIRED.get(name, {}), **params})


def method_params(name: str) -> dict[str, inspect.Parameter]:
    return dict(inspect.signature(dec.METHODS[name]).parameters)


def test_every_method_is_covered():
    assert len(dec.METHODS) >= 6
    for name in dec.METHODS:
        for p in method_params(name).values():
            if p.default is inspect.Parameter.empty:
                assert p.name in REQUIRED.get(name, {}), f"{name}: give {p.name} in REQUIRED"
            assert p.name in VALUES, f"{name}: add values for parameter {p.name!r} to VALUES"


@pytest.mark.parametrize("name", list(dec.METHODS))
def test_method_fingerprint_is_stable_and_follows_every_parameter(name):
    a, b = make_method(name), make_method(name)
    assert a is not b and isinstance(a, interp.Decoding)
    json.dumps(a.fingerprint(), sort_keys=True)
    assert a.fingerprint() == b.fingerprint()
    for pname, param in method_params(name).items():
        default = REQUIRED.get(name, {}).get(pname, param.default)
        value = next(v for v in VALUES[pname] if v != default)
        other = make_method(name, **{pname: value})
        assert other.fingerprint() != a.fingerprint(), f"{name}: {pname} not fingerprinted"


@pytest.mark.parametrize("name", list(dec.METHODS))
def test_method_bad_arguments_are_refused_before_compute(name, vlm, samples):
    for bad in ({"beta": 0.0}, {"beta": 1.5}, {"no_such_parameter": 1}):
        with pytest.raises(DecodingError):
            make_method(name, **bad)
    good = make_method(name)
    with counting_forwards(vlm) as calls:
        # an expert under the amateur's own condition: the contrast would be zero
        with pytest.raises(DecodingError, match="equals the expert"):
            interp.generate(
                vlm, samples, good.amateurs[0], decoding=good, max_new_tokens=2, progress_bar=False
            )
        if "layers" in method_params(name):  # edits the method brings are checked too
            with pytest.raises(InterventionError, match=r"outside 1\.\."):
                interp.generate(
                    vlm,
                    samples,
                    decoding=make_method(name, layers=[99]),
                    max_new_tokens=2,
                    progress_bar=False,
                )
    assert calls["n"] == 0


@pytest.mark.parametrize("sampled", [False, True], ids=["greedy", "sampled"])
@pytest.mark.parametrize("name", DECODING)
def test_method_generates_independently_of_the_batch_size(name, sampled, vlm, samples, plain):
    decoding = make_method(name)
    kw = {"max_new_tokens": STEPS, "do_sample": sampled, "seed": 3, "progress_bar": False}
    together = interp.generate(vlm, samples, decoding=decoding, batch_size=3, **kw)
    alone = [interp.generate(vlm, [s], decoding=decoding, batch_size=1, **kw) for s in samples]
    assert together.token_ids == [g.token_ids[0] for g in alone]
    assert together.decoding == (None if decoding is None else repr(decoding))
    if decoding is None or sampled:
        return
    # the method is in effect: the first token's scores are not the plain logits
    got = interp.generate(vlm, samples, decoding=decoding, batch_size=3, output_scores=True, **kw)
    first = torch.stack([s[0] for s in got.scores])
    before = torch.stack([s[0] for s in plain["generate"].scores])
    assert differs(first, before) or got.token_ids != plain["generate"].token_ids


# -- every adapter has a tiny builder ------------------------------------------------------------


# One-fix entries of the zoo (a final norm or decoder path the inference rules cannot see), built
# tiny and checked structurally by the sweep (tests/families/test_zoo.py) but with no tiny builder
# of their own yet: this list may only shrink. lfm2_vl: its image processor needs torchvision
# (spatial_shapes and pixel_attention_mask come from it), and no other tiny processor gives them;
# lfm3_vl: shrunk to 2 layers its decoder keeps only short convolutions (the image never reaches
# the last token), and with an attention layer kept its eager attention fails on image batches.
ZOO_ONLY = {"lfm2_vl", "lfm3_vl"}


def test_every_adapter_is_served_by_a_tiny_architecture():
    """Each registered adapter entry (every ``config.model_type`` in ``interp.ADAPTERS``) is the
    model type of at least one tiny builder, so the tiny-model suites exercise it. Builds are
    the session's cached tiny VLMs; the architecture named like the model type is tried first."""
    from interp.testing import ARCHITECTURES, MEDIA_ARCHITECTURES
    from interp.testing.tiny import FAMILY_ARCHITECTURES, ZOO_ARCHITECTURES

    served: dict[str, str] = {}

    def model_type(arch: str) -> str:
        return str(shared_tiny_vlm(arch).hf.config.model_type)

    wanted = sorted(interp.ADAPTERS)
    # audio-language families, the family-tested stock-processor builders and the zoo's
    # one-fix entries too
    every = (*ARCHITECTURES, *MEDIA_ARCHITECTURES, *FAMILY_ARCHITECTURES, *ZOO_ARCHITECTURES)
    for mt in wanted:
        if mt in every and model_type(mt) == mt:
            served[mt] = mt
    for arch in every:
        if len(served) == len(wanted):
            break
        served.setdefault(model_type(arch), arch)
    missing = {
        mt: interp.ADAPTERS[mt].name for mt in wanted if mt not in served and mt not in ZOO_ONLY
    }
    assert not missing, (
        "adapter entries without a tiny builder in interp.testing (model_type: adapter): "
        f"{missing}; add a builder to interp/testing/builders and ARCHITECTURES"
    )
    # each tiny model is served by the adapter of its own model type
    for mt, arch in served.items():
        assert _served_by(shared_tiny_vlm(arch), interp.ADAPTERS[mt])


# -- the zoo's one-fix entries keep the protocols at HF parity -----------------------------------


@pytest.mark.parametrize("arch", ZOO_ARCHITECTURES)
def test_zoo_entry_keeps_the_protocols(arch):
    """A zoo entry's tiny model (its default config shrunk, the tiny processor of its pattern):
    reads, feature count, greedy generate, score and Steer against plain HF (zoo_parity.check);
    SwapImage equals the swapped condition; plain and method decoding and reads are independent of
    the batch size."""
    from interp.testing.zoo_parity import check

    _, why = check(arch)
    assert not why, why
    vlm = shared_tiny_vlm(arch)
    assert _served_by(vlm, interp.ADAPTERS[vlm.hf.config.model_type])
    batch = make_samples(3)
    kw = {"batch_size": 3, "progress_bar": False}
    swapped = interp.residual_stream(
        vlm, batch, edits=[interventions.SwapImage("null:black")], **kw
    )
    real = interp.residual_stream(vlm, batch, "null:black", **kw)
    assert_close(swapped, real)
    together = interp.residual_stream(vlm, batch, **kw)
    assert differs(swapped, together)  # the swap reached the model
    alone = torch.cat(
        [interp.residual_stream(vlm, [s], batch_size=1, progress_bar=False) for s in batch]
    )
    assert_close(together, alone)
    for decoding in (None, make_method("contrast")):
        g = {"max_new_tokens": STEPS, "decoding": decoding, "progress_bar": False}
        three = interp.generate(vlm, batch, batch_size=3, **g)
        one = [interp.generate(vlm, [s], batch_size=1, **g) for s in batch]
        assert three.token_ids == [o.token_ids[0] for o in one]


def _served_by(vlm: interp.VLM, entry: interp.Adapter) -> bool:
    """``vlm`` runs under ``entry``: the entry itself, or (a layout no test checks) the entry
    with the verdict of the layout check at load (interp.layout_check) in its layout part."""
    if vlm.adapter is entry:
        return True
    same = all(
        getattr(vlm.adapter, p) == getattr(entry, p)
        for p in ("prompt", "features", "media", "modules")
    )
    checked = bool(vlm.adapter.layout_checked or vlm.adapter.layout_refusal)
    return same and vlm.adapter.name == entry.name and checked and not entry.layout_verified
