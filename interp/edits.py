"""The extension protocols: how an edit (:class:`Intervention`) and a decoding rule
(:class:`Decoding`) plug into every measurement.

An intervention is a small object with two steps (see :class:`Intervention`):

- ``prepare(vlm, batch)`` — optional, once per batch, **outside** the trace: compute what the edit
  needs for these rows (e.g. encode a null image and read its visual tokens); its return value is
  the edit's *state* for the batch;
- ``apply(ctx)`` — **inside** the trace, at the prompt forward and, for ``steps = "all"``, at every
  generated step; ``ctx`` (:class:`EditContext`) holds the model, the batch, the state, the step
  and the positions of this forward (``ctx.positions("last")``, ``"image"``, ``"question"`` ...).

Every measurement (``residual_stream``, ``generate``, ``score``, each study) accepts ``edits=[...]``
and runs each edit in its own nnsight invoke over the whole batch, so edits compose in any order
with each other and with the measurement's reads (nnsight orders each invoke's accesses by itself;
two edits on the same site apply in list order). A user-written edit is a subclass::

    class Steer5(interp.Intervention):
        steps = "all"                       # prompt forward and every generated step

        def __init__(self, vector):
            self.vector = vector

        def apply(self, ctx):
            h = ctx.vlm.residual[5]                      # residual stream after decoder layer 5
            h[ctx.positions("all")] += self.vector       # in place: the model continues with it

    interp.generate(vlm, samples, edits=[Steer5(v)])

To run on NDIF an edit *lowers* itself to plain data instead of defining ``apply``:
``lower(ctx)`` returns the writes this forward makes (:mod:`interp.plain`: a site, a position
mask, ``x ← keep · x + value``), and each measurement's block applies them with lines of its own —
locally and remotely alike, since a remote block may name no library object. The built-in edits
that touch the residual stream or the modality features (``Steer``, ``Patch``, ``SwapFeatures``,
``AblateFeatures`` and their image and region forms) lower; an edit with only ``apply`` runs in this
process only. The same ``Steer5`` as writes::

    class Steer5(interp.Intervention):
        steps = "all"

        def __init__(self, vector):
            self.vector = vector

        def lower(self, ctx):
            site = interp.plain.residual_site(ctx.vlm, 5)
            return [interp.plain.write(site, ctx.positions("all"), keep=1.0, value=self.vector)]

Stores key their results on ``fingerprint()``, which by default hashes the edit's class and its
attributes (tensors by content): override it if an edit holds something it cannot hash.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
import torch
from jaxtyping import Bool, Float
from torch import Tensor

from .conditions import Condition
from .encoding.assemble import Encoding
from .encoding.select import (
    POSITION_NAMES,
    SLOT_KINDS,
    PositionSpec,
    check_position,
    prompt_mask,
    select,
)
from .errors import InterventionError
from .options import refuse_remote
from .plain import Write, run_writes
from .reprs import Summary
from .samples import Sample

if TYPE_CHECKING:
    from .model import VLM

Steps = Literal["prompt", "all"]
GENERATED = ("all", "answer")  # the position names that include a generated step's new token
# a contrastive rule as plain data: (log-probabilities?, α_t per generated token, log β)
Contrast = tuple[bool, list[float], float]
Kind = Literal["forward", "generate", "score"]


@dataclass(repr=False)
class Batch(Summary):
    """One batch of a measurement, as edits see it.

    Attributes:
        vlm: the model.
        encoding: the prompt encoding of the rows (under the measurement's condition).
        samples: the rows' samples as given (before the condition).
        condition: the measurement's condition.
        kind: ``"forward"`` (one forward of the prompts), ``"generate"`` (a prompt forward, then
            one forward per generated token) or ``"score"`` (one forward of prompt + target).
        all_samples: every sample of the measurement (``swap`` conditions draw from it).
        traced: what the prompt forward traces: ``encoding``, or for ``"score"`` the encoding
            extended with the target tokens.
        answer_mask: True at target positions of ``traced`` (teacher forcing), else all False.
        experts: with contrastive decoding, the number of rows that hold the measurement's own
            inputs; the rows after them are the same samples under the amateur conditions
            (``conditions`` gives each row's). None: every row is the measurement's.
        conditions: each row's condition (default: ``condition`` for every row).
        trace_options: the nnsight keywords of the measurement's traces
            (:meth:`~interp.options.RunOptions.trace_options`: ``remote``, ``backend`` ...): an
            edit whose ``prepare`` opens a trace of its own (a null image's features, a source
            run) passes them on, so it runs where the measurement runs.
    """

    vlm: VLM
    encoding: Encoding
    samples: list[Sample]
    condition: Condition
    kind: Kind = "forward"
    all_samples: list[Sample] = field(default_factory=list)
    traced: Encoding | None = None
    answer_mask: Tensor | None = None
    experts: int | None = None
    conditions: list[Condition] = field(default_factory=list)
    trace_options: dict[str, Any] = field(default_factory=dict)

    def _repr_head(self) -> dict[str, Any]:
        return {"n": len(self.samples), "kind": self.kind, "condition": str(self.condition)}

    def __post_init__(self) -> None:
        if not self.conditions:
            self.conditions = [self.condition] * len(self.samples)
        if self.traced is None:
            self.traced = self.encoding
        if self.answer_mask is None:
            self.answer_mask = torch.zeros_like(self.traced.image_mask)
        if not self.all_samples:
            self.all_samples = list(self.samples)
        self._question: Tensor | None = None

    def __len__(self) -> int:
        return len(self.encoding)

    @property
    def skipped_layers(self) -> frozenset[int]:
        """0-based decoder layers that do not run on this batch (Mllama's cross-attention layers
        in a text-only batch)."""
        return self.vlm.adapter.skipped_layers(self.vlm.hf, self.encoding.has_image)

    def prompt_mask(self) -> Bool[Tensor, "batch seq"]:
        """True at attended prompt positions of ``traced``."""
        assert self.traced is not None
        return prompt_mask(self.traced)

    def question_mask(self) -> Bool[Tensor, "batch seq"]:
        """``select(traced, "question")``, computed once per batch."""
        if self._question is None:
            assert self.traced is not None
            self._question = select(self.traced, "question")
        return self._question


@dataclass(repr=False)
class EditContext(Summary):
    """What :meth:`Intervention.apply` receives inside the trace.

    Attributes:
        vlm: the model (use its accessors: ``vlm.residual[l]``, ``vlm.layers``, ``vlm.lm_head``).
        batch: the batch being traced.
        state: what the edit's ``prepare`` returned for this batch.
        step: 0 for the prompt forward (or the teacher-forced forward), t ≥ 1 for the forward that
            reads generated token t.
    """

    vlm: VLM
    batch: Batch
    state: Any
    step: int = 0

    def _repr_head(self) -> dict[str, Any]:
        return {"step": self.step, "n": len(self.batch.samples)}

    @property
    def is_prompt(self) -> bool:
        return self.step == 0

    @property
    def seq_len(self) -> int:
        """Sequence length of this forward (1 at generated steps, which reuse the KV cache)."""
        assert self.batch.traced is not None
        return int(self.batch.traced.input_ids.shape[1]) if self.step == 0 else 1

    def reaches(self, spec: PositionSpec) -> bool:
        """Whether ``spec`` names positions of this forward: every spec at the prompt forward;
        at a generated step (one new token, the prompt in the KV cache) only ``"all"`` and
        ``"answer"``, which name the token being read. Ask it before :meth:`positions` in an edit
        that runs at every step (``steps = "all"``) with a prompt position."""
        return self.step == 0 or (isinstance(spec, str) and spec in GENERATED)

    def positions(self, spec: PositionSpec) -> Bool[Tensor, "batch seq"]:
        """A ``[batch, seq]`` boolean mask over this forward's positions: at the prompt forward,
        :func:`interp.encoding.select.select` of the traced encoding (names ``"all"``,
        ``"prompt"``, ``"last"``, ``"image"``, ``"image:k"``, ``"audio"``, ``"video"``,
        ``"text"``, ``"question"``, ``"answer"`` — the teacher-forced target tokens —, prompt
        offsets, or a bool mask). At a generated step (seq = 1) ``"all"`` and ``"answer"`` are
        the token being read; every other spec names prompt tokens, which that forward does not
        hold, and raises (see :meth:`reaches`).

        Raises:
            InterventionError: a prompt position asked for at a generated step.
        """
        batch = self.batch
        enc = batch.traced
        assert enc is not None and batch.answer_mask is not None
        if self.step > 0:
            if isinstance(spec, str):
                check_position(spec)
            if not self.reaches(spec):
                raise InterventionError(
                    f"positions({spec!r}) at generated step {self.step}: it names prompt "
                    "tokens, and a generated step's forward holds only the new token (the prompt "
                    "is in the KV cache). Use 'all' or 'answer' for the new token, or check "
                    "ctx.reaches(spec) / ctx.is_prompt first (or set steps = 'prompt')"
                )
            return torch.ones((len(batch), 1), dtype=torch.bool, device=enc.input_ids.device)
        if isinstance(spec, str) and spec == "question":
            return batch.question_mask()
        return select(enc, spec, answer_mask=batch.answer_mask)


class Intervention:
    """Base class of every intervention; see the module docstring for the protocol.

    Class attribute ``steps``: ``"prompt"`` (apply at the prompt forward only — right for edits of
    image positions, which only that forward holds) or ``"all"`` (also at every generated step).

    Class attribute ``needs_logits``: whether ``apply`` touches a module after the decoder layers
    (the final norm or ``lm_head``). A residual-stream read stops right after its last layer, with
    or without edits, since nothing later can change what it read; an edit that declares
    ``needs_logits = True`` keeps the run going to the head. One that touches the head without
    declaring it still works: the read is run again to the end (the cost of the head, twice).
    """

    steps: ClassVar[Steps] = "prompt"
    needs_logits: ClassVar[bool] = False

    def check(self, vlm: VLM) -> None:
        """Validate the edit against the model before any compute (layer ranges, widths...).
        Raise :class:`~interp.errors.InterventionError`; the default accepts everything."""

    def prepare(self, vlm: VLM, batch: Batch) -> Any:
        """Outside the trace, once per batch: return the state ``apply`` needs (default None).
        A trace opened here takes the measurement's options: ``vlm.trace_encoding(enc,
        **batch.trace_options)``."""
        return None

    def lower(self, ctx: EditContext) -> list[Write]:
        """Outside the trace: the edit as plain data, the writes (:func:`interp.plain.write`) of
        the forward ``ctx`` describes — the prompt forward (``ctx.step == 0``) or, for ``steps =
        "all"`` edits in generation, any generated step (``ctx.step == 1``: every generated step
        gets the same writes). An edit that defines it runs on NDIF as well as here, and needs no
        ``apply``; the default (not defined) keeps the edit in this process."""
        raise NotImplementedError(f"{type(self).__name__} does not lower to plain writes")

    def apply(self, ctx: EditContext) -> None:
        """Inside the trace: edit the model's tensors (``ctx.vlm.residual[l]`` ...). The default
        applies :meth:`lower`'s writes."""
        if not lowers(self):
            raise NotImplementedError(
                f"{type(self).__name__} must implement apply(ctx) or lower(ctx)"
            )
        run_writes(self.lower(ctx), ctx.step)

    def fingerprint(self) -> dict[str, Any]:
        """What identifies this edit in a result store (class and attributes, tensors by
        content)."""
        return {
            "type": f"{type(self).__module__}.{type(self).__qualname__}",
            "params": digest(vars(self)),
        }

    def __repr__(self) -> str:
        params = ", ".join(
            f"{k}={_short(v)}" for k, v in vars(self).items() if not k.startswith("_")
        )
        return f"{type(self).__name__}({params})"


class Decoding:
    """A decoding rule that combines the model's next-token logits on the input (the *expert*)
    with its logits on the same sample under other conditions (the *amateurs*) — the protocol of
    contrastive decoding (VCD, ICD, VDD, M3ID, PAI's guidance; see :mod:`interventions.decoding`
    for the methods).

    :func:`generate` runs the expert rows and one copy of them per amateur condition in one
    batch: one forward per step, each row with its own KV cache. At every step it calls
    :meth:`combine` on the last position's logits, chooses the token from the result (argmax or a
    seeded draw) and feeds the same token to the expert row and its amateur rows.

    Attributes:
        amateurs: the amateur conditions (at least one).
        edits: interventions the method needs besides the contrast (PAI's attention boost); they
            run with the measurement's own edits, on every row.
    """

    amateurs: tuple[Condition, ...] = ()
    edits: tuple[Intervention, ...] = ()

    def check(self, vlm: VLM) -> None:
        """Validate the method against the model before any compute (raise an InterpError)."""

    def combine(
        self,
        expert: Float[Tensor, "batch vocab"],
        amateurs: Float[Tensor, "amateurs batch vocab"],
        t: int,
    ) -> Float[Tensor, "batch vocab"]:
        """The scores the next token is chosen from, given the expert's and the amateurs'
        next-token logits (float32) at generated token ``t`` (1 for the first)."""
        raise NotImplementedError(f"{type(self).__name__} must implement combine()")

    def lower(self, max_new_tokens: int) -> Contrast | None:
        """The rule as plain data, for a generation block that may run remotely: ``(logprobs,
        weights, log_beta)`` stands for ``s = log_softmax`` (else the identity), ``scores =
        (1 + α_t)·s(z) − α_t·mean_k s(z'_k)`` with ``α_t = weights[t − 1]``, −inf where ``s(z) <
        log_beta + max s(z)``. None (the default): ``combine`` is library code and runs in this
        process only."""
        return None

    def fingerprint(self) -> dict[str, Any]:
        """What identifies the method in a result store (class and attributes)."""
        return {
            "type": f"{type(self).__module__}.{type(self).__qualname__}",
            "params": digest(vars(self)),
        }


def _short(value: Any) -> str:
    if isinstance(value, Tensor):
        return f"Tensor{tuple(value.shape)}"
    if isinstance(value, np.ndarray):
        return f"array{value.shape}"
    text = repr(value)
    return text if len(text) < 40 else text[:37] + "..."


def digest(value: Any) -> Any:
    """A JSON-able, content-based description of ``value``."""
    if isinstance(value, Tensor):
        data = value.detach().to("cpu").contiguous()
        h = hashlib.sha256(str((tuple(data.shape), str(data.dtype))).encode())
        h.update(data.view(torch.uint8).numpy().tobytes() if data.numel() else b"")
        return {"tensor": h.hexdigest()[:24]}
    if isinstance(value, np.ndarray):
        return {"array": hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()[:24]}
    if isinstance(value, dict):
        return {
            str(k): digest(v)
            for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))
            if not str(k).startswith("_")
        }
    if isinstance(value, (list, tuple)):
        return [digest(v) for v in value]
    if isinstance(value, Intervention):
        return value.fingerprint()
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if hasattr(value, "fingerprint") and callable(value.fingerprint):
        return value.fingerprint()
    return repr(value)


def edits_fingerprint(edits: Sequence[Intervention]) -> str:
    """One hash of a list of edits (order matters)."""
    text = json.dumps([e.fingerprint() for e in edits], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def check_edits(vlm: VLM, edits: Sequence[Intervention] | None) -> list[Intervention]:
    """Validate a list of edits up front (types, then each edit's own ``check``)."""
    out = list(edits or [])
    for i, edit in enumerate(out):
        if not isinstance(edit, Intervention):
            raise InterventionError(
                f"edits[{i}] is a {type(edit).__name__}; an edit is an interp.Intervention "
                "(see interventions.* or subclass interp.Intervention)"
            )
        if edit.steps not in ("prompt", "all"):
            raise InterventionError(
                f"{type(edit).__name__}.steps must be 'prompt' or 'all', got {edit.steps!r}"
            )
        edit.check(vlm)
    return out


def prepare_edits(vlm: VLM, batch: Batch, edits: Sequence[Intervention]) -> list[Any]:
    """Outside the trace: each edit's state for ``batch``."""
    return [edit.prepare(vlm, batch) for edit in edits]


def apply_edits(
    tracer: Any,
    vlm: VLM,
    batch: Batch,
    edits: Sequence[Intervention],
    states: Sequence[Any],
    *,
    generating: bool = False,
) -> None:
    """Inside a trace opened in invoke mode (see :meth:`VLM.open_trace`): one empty invoke per
    edit over the whole batch, looping over the generated steps for ``steps = "all"`` edits."""
    for edit, state in zip(edits, states):
        with tracer.invoke():
            if generating and edit.steps == "all":
                for step in tracer.iter[:]:
                    edit.apply(EditContext(vlm, batch, state, int(step)))
                    # Every step waits for the model, also where the edit touched nothing (an
                    # open-ended step loop that never waits would spin); a repeated read of the
                    # same step's output is served the same value.
                    _ = vlm.lm_head.output
            else:
                edit.apply(EditContext(vlm, batch, state, 0))


def lowers(edit: Intervention) -> bool:
    """Whether ``edit`` lowers to plain writes (its class defines :meth:`Intervention.lower`),
    so it may run remotely."""
    return type(edit).lower is not Intervention.lower


# per edit, the writes of the prompt forward and those of every generated step
Lowered = list[tuple[list[Write], list[Write]]]


def edit_hook(
    vlm: VLM,
    batch: Batch,
    edits: Sequence[Intervention],
    *,
    generating: bool = False,
) -> tuple[Lowered, Callable[[Any], None] | None]:
    """Outside the trace: prepare ``edits`` for ``batch``, and return ``(writes, hook)``.

    Where every edit lowers, ``writes`` holds per edit ``(prompt writes, generated-step
    writes)`` — plain data the block applies in one empty invoke per edit — and ``hook`` is None:
    the block names no library object and may run remotely (:mod:`interp.plain`). Otherwise
    ``writes`` is empty and ``hook(tracer)`` applies the edits in this process
    (:func:`apply_edits`, list order kept). Without edits: ``([], None)``."""
    if not edits:
        return [], None
    states = prepare_edits(vlm, batch, edits)
    if not all(lowers(edit) for edit in edits):
        hook = partial(
            apply_edits, vlm=vlm, batch=batch, edits=edits, states=states, generating=generating
        )
        return [], hook
    lowered: Lowered = []
    for edit, state in zip(edits, states):
        prompt = _nonempty(edit.lower(EditContext(vlm, batch, state, 0)))
        steps: list[Write] = []
        if generating and edit.steps == "all":
            steps = _nonempty(edit.lower(EditContext(vlm, batch, state, 1)))
        lowered.append((prompt, steps))
    return lowered, None


def _nonempty(writes: Sequence[Write]) -> list[Write]:
    """The writes that select at least one position (a mask with none writes nothing)."""
    return [w for w in writes if bool(w[2].any())]


def local_only(
    vlm: VLM | None,
    trace_options: Mapping[str, Any],
    step: str,
    *,
    edits: Sequence[Any] = (),
    decoding: Any = None,
    attention: bool = False,
) -> None:
    """Refuse, before any request, a remote run of ``step`` (its options or ``vlm`` remote) that
    holds what is not lowered: interventions that do not lower to writes (a library object runs
    inside the trace) — ``edits`` and the ``decoding`` method's own —, a decoding method whose
    :meth:`Decoding.lower` gives None, or attention weights (they need eager attention, which the
    server's deployment decides)."""
    why = []
    if decoding is not None:
        edits = [*edits, *(e for e in decoding.edits if e not in edits)]
    kept = [type(e).__name__ for e in edits if isinstance(e, Intervention) and not lowers(e)]
    if kept:
        why.append(
            f"its edits {', '.join(kept)} do not lower to plain writes (they define apply, not "
            "lower; docs/remote.md)"
        )
    if decoding is not None and decoding.lower(1) is None:
        why.append(
            f"the decoding method {type(decoding).__name__} does not lower to plain data (its "
            "combine() is library code)"
        )
    if attention:
        why.append("attention weights need eager attention, which the server's model may not use")
    if why:
        refuse_remote(trace_options, step, "; ".join(why), vlm=vlm)


@contextmanager
def quiet_unreached() -> Iterator[None]:
    """Silence nnsight's notice that an open-ended step loop asked for a step the generation did
    not make: loops over generated steps end when generation ends, by design."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*was never reached.*")
        yield


__all__ = [
    "POSITION_NAMES",
    "SLOT_KINDS",
    "PositionSpec",
    "Batch",
    "Contrast",
    "Decoding",
    "EditContext",
    "Intervention",
    "apply_edits",
    "check_edits",
    "check_position",
    "digest",
    "edit_hook",
    "edits_fingerprint",
    "local_only",
    "lowers",
    "prepare_edits",
    "quiet_unreached",
]
