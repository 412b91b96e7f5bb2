"""Independent references for tests of measurements and edits: what a plain Hugging Face forward,
a plain torch hook or a hand-written attention function gives, without the library's tracing.

A measurement of :mod:`interp` is checked against these: the residual stream against
:func:`hf_hidden_states` of :func:`hf_forward`, teacher-forced scores against
:func:`hf_target_logprobs`, a steering edit against :class:`add_to_layer`, an attention edit against
a model running :func:`reference_attention` (:func:`tiny_vlm_with_attention`).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from transformers import AttentionInterface
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, eager_mask

from ..adapters.base import get_path
from ..edits import EditContext, Intervention
from ..encoding import Encoding
from ..model import VLM, load
from .tiny import build_tiny


def plain_model(vlm: VLM, enc: Encoding, inputs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The HF module a plain forward of ``enc`` runs, and its inputs: the model itself, or, for
    a batch without images of a family whose full forward needs one (``text_only_module``:
    InstructBLIP's, BLIP-2's ``language_model``), that causal LM alone on the token inputs."""
    path = vlm.adapter.text_only_module
    if path is None or any(enc.has_image):
        return vlm.hf, inputs
    keep = ("input_ids", "attention_mask", "position_ids")
    return get_path(vlm.hf, path), {k: v for k, v in inputs.items() if k in keep}


def hf_forward(vlm: VLM, enc: Encoding, **kwargs: Any) -> Any:
    """A plain HF forward of ``enc``'s inputs. Families whose processor breaks positions under
    padding (InstructBLIP) declare a fix-up (``adapter.forward_inputs``), applied here too; a
    batch without images of a family whose full forward needs one runs its causal LM alone
    (:func:`plain_model`)."""
    inputs = dict(enc.inputs)
    if vlm.adapter.forward_inputs is not None:
        inputs = vlm.adapter.forward_inputs(inputs)
    module, inputs = plain_model(vlm, enc, inputs)
    with torch.no_grad():
        return module(**inputs, **kwargs)


def hf_hidden_states(out: Any) -> tuple[torch.Tensor, ...]:
    """HF hidden states of a forward's output, whichever field the family puts them in."""
    if getattr(out, "hidden_states", None) is not None:
        return out.hidden_states
    return out.language_model_outputs.hidden_states  # Q-Former families


def hf_last_states(vlm: VLM, enc: Encoding) -> torch.Tensor:
    """``[rows, L, d]``: a plain HF forward's ``output_hidden_states`` at each row's last token,
    layers 0..L-1 (the residual stream's indices before the final norm)."""
    hidden = hf_hidden_states(hf_forward(vlm, enc, output_hidden_states=True))
    rows = torch.arange(enc.inputs["input_ids"].shape[0])
    return torch.stack([h[rows, enc.last_index] for h in hidden[: vlm.n_layers]], 1)


def last_layer_raw(vlm: VLM, enc: Encoding) -> torch.Tensor:
    """Raw output of the last decoder layer (before the final norm), via a plain torch hook."""
    seen = {}

    def keep(_module: Any, _args: Any, out: Any) -> None:  # returns None: the output stays
        seen.setdefault("out", out[0] if isinstance(out, tuple) else out)

    handle = vlm.adapter.layers(vlm.hf)[-1].register_forward_hook(keep)
    try:
        hf_forward(vlm, enc)
    finally:
        handle.remove()
    return seen["out"]


def hf_target_logprobs(vlm: VLM, enc: Encoding, tgt: list[int]) -> torch.Tensor:
    """log p of each target token after the one-row prompt ``enc``, by a plain HF forward over
    prompt + target (every per-token field extended as teacher forcing extends it)."""
    inputs = dict(enc.inputs)
    for key, value in enc.inputs.items():  # extend every per-token field by the target
        if (
            isinstance(value, torch.Tensor)
            and value.dim() >= 2
            and value.shape[:2] == enc.input_ids.shape
        ):
            tail = (
                torch.tensor([tgt])
                if key == "input_ids"
                else value[:, -1:].expand(1, len(tgt), *value.shape[2:])
            )
            if key in vlm.adapter.target_fields:  # e.g. PaliGemma marks the answer as suffix
                tail = torch.full_like(tail, vlm.adapter.target_fields[key])
            inputs[key] = torch.cat([value, tail.to(value.dtype)], dim=1)
    module, inputs = plain_model(vlm, enc, inputs)
    with torch.no_grad():
        logits = module(**inputs).logits[0].float().log_softmax(-1)
    n = enc.input_ids.shape[1]
    return torch.stack([logits[n - 1 + j, t] for j, t in enumerate(tgt)])


def grow_inputs(vlm: VLM, inputs: dict[str, Any], token: torch.Tensor) -> dict[str, Any]:
    """Brute-force decoding references: append one generated token to every per-token field, as generation does: the token id, an
    attended mask entry, and for other per-token fields (token types, Mllama's cross-attention
    mask) the value the adapter fixes for answer tokens, else the last position's."""
    batch, seq = inputs["input_ids"].shape
    out = dict(inputs)
    for key, value in inputs.items():
        if not (isinstance(value, torch.Tensor) and value.dim() >= 2):
            continue
        if tuple(value.shape[:2]) != (batch, seq):
            continue
        if key == "input_ids":
            new = token[:, None].to(value.dtype)
        elif key == "attention_mask":
            new = torch.ones_like(value[:, :1])
        elif key in vlm.adapter.target_fields:
            new = torch.full_like(value[:, :1], vlm.adapter.target_fields[key])
        else:
            new = value[:, -1:]
        out[key] = torch.cat([value, new], 1)
    return out


def steering_vector(vlm: VLM, seed: int = 0, scale: float = 1.0) -> torch.Tensor:
    """A random ``[d_model]`` vector, reproducible from ``seed``, times ``scale``."""
    gen = torch.Generator().manual_seed(seed)
    return scale * torch.randn(vlm.d_model, generator=gen)


class add_to_layer:  # noqa: N801 - used as a context manager
    """A plain torch forward hook adding ``vector`` to decoder layer ``layer``'s output (residual
    index ``layer``, 1..L) where ``mask`` ([batch, seq], or a function of the layer output giving
    it) is True — the hand-made reference of a steering edit."""

    def __init__(self, vlm: VLM, layer: int, vector: torch.Tensor, mask: Any) -> None:
        self.module = vlm.adapter.layers(vlm.hf)[layer - 1]
        self.vector, self.mask = vector, mask

    def hook(self, module: Any, args: Any, out: Any) -> Any:
        """The forward hook: the layer output plus ``vector`` where the mask is True."""
        h = out[0] if isinstance(out, tuple) else out
        mask = self.mask(h) if callable(self.mask) else self.mask
        h = h + mask[..., None].to(h.dtype) * self.vector.to(h.dtype)
        return (h, *out[1:]) if isinstance(out, tuple) else h

    def __enter__(self) -> None:
        # prepend: before transformers' own hidden-state capturing hooks
        self.handle = self.module.register_forward_hook(self.hook, prepend=True)

    def __exit__(self, *exc: Any) -> None:
        self.handle.remove()


class Recorder(Intervention):
    """Saves the next-token logits of every step: a user-written edit that changes nothing."""

    steps = "all"

    def __init__(self) -> None:
        self.logits: list[torch.Tensor] = []

    def fingerprint(self) -> dict[str, Any]:
        return {"type": "Recorder"}

    def apply(self, ctx: EditContext) -> None:
        self.logits.append(
            ctx.vlm.final_logits(ctx.vlm.lm_head.output[:, -1]).detach().clone().cpu()
        )


def reference_attention(edit: Any) -> Any:
    """A hand-written eager attention (q·kᵀ·scale + mask → edit → softmax → ·v) that applies
    ``edit(scores, layer_idx)`` to the scores of the decoder layers: the independent reference of
    the attention edits. Register it with transformers' ``AttentionInterface`` (as
    :func:`tiny_vlm_with_attention` does)."""

    def attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kw):
        groups = query.shape[1] // key.shape[1]
        key = key.repeat_interleave(groups, dim=1)
        value = value.repeat_interleave(groups, dim=1)
        scale = scaling if scaling is not None else 1.0 / math.sqrt(query.shape[-1])
        scores = torch.matmul(query, key.transpose(2, 3)) * scale
        if attention_mask is not None:
            scores = scores + attention_mask[:, :, :, : key.shape[-2]]
        if getattr(module, "layer_idx", None) is not None:  # decoder layers (not the tower)
            scores = edit(scores, module.layer_idx)
        weights = torch.softmax(scores.float(), dim=-1).to(query.dtype)
        return torch.matmul(weights, value).transpose(1, 2).contiguous(), weights

    return attention


def tiny_vlm_with_attention(arch: str, edit: Any) -> VLM:
    """The tiny model of ``arch`` (seed 0) whose attention is :func:`reference_attention` with
    ``edit``, registered under a name of its own."""
    name = f"interp_ref_{id(edit)}"
    AttentionInterface.register(name, reference_attention(edit))
    ALL_MASK_ATTENTION_FUNCTIONS.register(name, eager_mask)
    model, processor = build_tiny(arch, attn_implementation="eager")
    model.set_attn_implementation(name)
    return load(model, processor)


def hf_answer_gradient(
    vlm: VLM, sample: Any, layer: int
) -> tuple[torch.Tensor, torch.Tensor, float]:
    """A plain HF forward of prompt + ``sample.answer`` (every per-token input extended by the
    answer's ids, the others' last value repeated) and ``torch.autograd.grad`` of the answer's
    summed log-probability: ``(h_layer, ∂ log p / ∂ h_layer, log p)``, the first two over the
    prompt's positions ``[prompt, d]``."""
    from ..encoding import encode

    enc = encode(vlm, [sample])
    ids = vlm.tokenizer(sample.answer, add_special_tokens=False)["input_ids"]
    n = enc.input_ids.shape[1]
    inputs = dict(enc.inputs)
    for key, value in enc.inputs.items():
        if isinstance(value, torch.Tensor) and value.dim() >= 2 and value.shape[:2] == (1, n):
            tail = (
                torch.tensor([ids])
                if key == "input_ids"
                else value[:, -1:].expand(1, len(ids), *value.shape[2:])
            )
            inputs[key] = torch.cat([value, tail.to(value.dtype)], dim=1)
    out = vlm.hf(**inputs, output_hidden_states=True)
    hidden = out.hidden_states[layer]
    logp = out.logits[0].float().log_softmax(-1)
    total = sum(logp[n - 1 + j, t] for j, t in enumerate(ids))
    (grad,) = torch.autograd.grad(total, hidden)
    return hidden[0, :n].detach(), grad[0, :n], float(total.detach())


__all__ = [
    "Recorder",
    "add_to_layer",
    "hf_answer_gradient",
    "hf_forward",
    "hf_hidden_states",
    "hf_last_states",
    "hf_target_logprobs",
    "last_layer_raw",
    "reference_attention",
    "steering_vector",
    "tiny_vlm_with_attention",
]
