"""Layer resume: a sweep of edits confined to windows of decoder layers runs the clean forward once
and each window's forward from the residual stream at the window's first layer.

An edit that touches only decoder layers ``a..b`` (0-based; the information-flow study's
knockouts, :mod:`interp.studies.flow`) leaves layers ``0..a-1`` computing exactly what the clean
forward computes: with ``h^l`` the output of decoder layer ``l - 1`` (``h^0`` the decoder's input),

    h^l(edited) = h^l(clean)     for l <= a,

so the clean forward of a batch keeps ``h^a`` (the full sequence, ``[batch, seq, d]``: the output
of layer ``a - 1``) for every window start ``a`` of the sweep, and each window's forward skips
layers ``0..a-1`` (nnsight's ``envoy.skip``: the module's body does not run and its output is the
given value), giving each of them the kept ``h^a``. The earlier skipped layers' outputs only feed
skipped layers, which ignore their input, so only layer ``a - 1``'s value matters. The results are
the full forwards' within float tolerance (``tests/studies/test_flow_resume.py``).

A resumed forward also leaves out the media inputs (:data:`MEDIA_INPUTS`: pixels, audio
features and their masks, the inputs HF's ``generate`` drops after the prompt's forward), so the
vision and audio towers do not run: their features would only replace placeholder embeddings that
feed the skipped layers. The token embeddings, the positions (M-RoPE's from the grids, which stay)
and every layer from the window on still run.

Where it applies (:func:`why_not`): the family's decoder does nothing between its layer modules but
pass each output on (the adapter's ``layer_resume``, set on the verified entries: not Qwen3-VL's or
Qwen3-Omni's DeepStack, which adds image features after early layers outside the layer modules,
nor Gemma 4's per-layer inputs and shared keys and values, nor Mllama's cross-attention layers that
a text-only batch skips); and ``RunOptions.resume_layers`` on. A remote run resumes on the
server: each batch's sweep is one nnsight session whose clean trace keeps the states in the
server's memory (:func:`interp.windows.remote_totals`); the states never cross the wire. A stored or sharded sweep resumes too: each chunk of samples keeps its clean and every window's
totals together as one resumable run (:func:`interp.windows.score_windows`), in a store of its own
beside the full path's per-window stores.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from transformers.generation.utils import MULTIMODAL_INPUTS_TO_DROP_OUTSIDE_PREFILL

from .options import RunOptions

if TYPE_CHECKING:
    from .model import VLM


MEDIA_INPUTS = frozenset(MULTIMODAL_INPUTS_TO_DROP_OUTSIDE_PREFILL)
"""The forward inputs a resumed forward leaves out: those HF's ``generate`` drops once the prompt
has run (the models' forwards take the placeholder tokens without them), unless the forward
requires them (:func:`resumed_inputs`)."""


def resumed_inputs(vlm: VLM, inputs: dict[str, Any]) -> dict[str, Any]:
    """``inputs`` without the media inputs (:data:`MEDIA_INPUTS`) the model's forward can do
    without (InstructBLIP's requires its pixels: its Q-Former's queries are the placeholders)."""
    params = inspect.signature(vlm.hf.forward).parameters
    required = {k for k, p in params.items() if p.default is inspect.Parameter.empty}
    return {k: v for k, v in inputs.items() if k not in MEDIA_INPUTS or k in required}


@dataclass
class Resume:
    """What one forward keeps or resumes from.

    Attributes:
        keep: 0-based decoder layers whose outputs the (clean) forward keeps into ``states``.
        start: decoder layers ``0..start-1`` do not run; each outputs ``states[start - 1]``
            (0: nothing is skipped).
        states: decoder layer → its kept output (``[batch, seq, d]``, as the layer returns it).
    """

    keep: tuple[int, ...] = ()
    start: int = 0
    states: dict[int, Any] = field(default_factory=dict)

    def at(self, start: int) -> Resume:
        """A forward that resumes at decoder layer ``start`` (0-based) from these states (the same
        dict: a forward that keeps them may run after this is made, before it is used)."""
        return Resume(start=start, states=self.states)


def why_not(vlm: VLM, opts: RunOptions) -> str | None:
    """Why a sweep on ``vlm`` under ``opts`` runs every forward in full; None: it may resume."""
    if not opts.resume_layers:
        return "resume_layers=False"
    if not vlm.adapter.layer_resume:
        return f"{vlm.adapter.name}: its decoder is not verified for layer resume (layer_resume)"
    return None


__all__ = ["MEDIA_INPUTS", "Resume", "resumed_inputs", "why_not"]
