"""Loading and standardising a Hugging Face VLM: :func:`load` and :class:`VLM`.

A :class:`VLM` holds the transformers model (``.hf``), its processor (``.processor``), the nnsight
wrapper that every measurement traces through (``.nn``) and the architecture's
:class:`~interp.adapters.Adapter`. Whatever the architecture, it offers the same accessors:

- ``layers`` — the L decoder layers as nnsight envoys (``vlm.layers[i].output`` inside a trace is the
  residual stream after layer i+1 in the SPEC's 1-based numbering);
- ``final_norm``, ``lm_head`` — envoys of the decoder's final norm and the unembedding;
- ``image_features`` — envoy of the module whose output are the image features the decoder consumes;
- ``n_layers``, ``d_model``, ``image_token_id``, ``image_token_mask(input_ids)``.

Invariants (tested for every supported architecture): ``len(vlm.layers) == vlm.n_layers``;
``layers[i].output`` equals HF ``hidden_states[i + 1]`` for i < L−1; ``layers[0].input`` equals HF
``hidden_states[0]`` (the embeddings, after any image-feature scatter).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from jaxtyping import Bool, Int
from nnsight.modeling.transformers import TransformersModel
from torch import Tensor
from transformers import AutoConfig, AutoModelForImageTextToText, AutoProcessor, PreTrainedModel

from .adapters import Adapter, adapter_for, get_path, module_path
from .encoding import Encoding


class _TracedVLM(TransformersModel):
    """nnsight's transformers wrapper, taking a pre-collated encoding exactly as given.

    nnsight re-collates text-only encodings and adds mask-derived ``position_ids``; an image batch it
    passes through untouched. Measurements compare conditions with and without an image, so every
    encoding must reach the model the way a plain HF call would get it.
    """

    def _batch(self, invokes: list, fn: Any) -> tuple:
        if len(invokes) == 1 and getattr(fn, "__name__", None) != "pipe":
            args, kwargs = invokes[0]
            ids = kwargs.get("input_ids")
            if not args and isinstance(ids, Tensor) and ids.dim() == 2:
                return (), dict(kwargs)
        return super()._batch(invokes, fn)


class VLM:
    """A loaded vision-language model with standardised accessors; see the module docstring."""

    def __init__(
        self,
        hf: PreTrainedModel,
        processor: Any,
        *,
        adapter: Adapter | None = None,
        nn: TransformersModel | None = None,
        source: str | None = None,
    ) -> None:
        self.hf = hf
        self.processor = processor
        self.adapter = adapter if adapter is not None else adapter_for(hf)
        self.source = source
        self.nn = (
            nn if nn is not None else _TracedVLM(hf, task="image-text-to-text", processor=processor)
        )
        self._layers_path = module_path(hf, self.adapter.layers(hf))
        self._norm_path = module_path(hf, self.adapter.final_norm(hf))
        self._head_path = module_path(hf, self.adapter.lm_head(hf))
        tokenizer = getattr(processor, "tokenizer", processor)
        # The library's encodings are left padded so that position -1 is every row's last prompt token;
        # positions are nonetheless always derived from the attention mask.
        tokenizer.padding_side = "left"
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        self.tokenizer = tokenizer

    # -- standardised accessors (nnsight envoys, for use inside traces) ----------------------------

    @property
    def layers(self) -> Any:
        """Envoys of the L decoder layers."""
        return self.nn.get(self._layers_path)

    @property
    def final_norm(self) -> Any:
        return self.nn.get(self._norm_path)

    @property
    def lm_head(self) -> Any:
        return self.nn.get(self._head_path)

    @property
    def image_features(self) -> Any:
        """Envoy of the module producing the image features the decoder consumes."""
        return self.nn.get(self.adapter.image_features)

    # -- facts ------------------------------------------------------------------------------------

    @property
    def n_layers(self) -> int:
        return len(self.adapter.layers(self.hf))

    @property
    def d_model(self) -> int:
        return int(self.adapter.final_norm(self.hf).weight.shape[-1])

    @property
    def image_token_id(self) -> int:
        return self.adapter.image_token_id(self.hf)

    @property
    def device(self) -> torch.device:
        return next(self.hf.parameters()).device

    @property
    def dtype(self) -> torch.dtype:
        return next(self.hf.parameters()).dtype

    def image_token_mask(self, input_ids: Int[Tensor, "batch seq"]) -> Bool[Tensor, "batch seq"]:
        """True at image-token positions. For cross-attention fusion (Mllama) this is the single
        ``<|image|>`` marker token per image, not the image's feature positions."""
        return input_ids == self.image_token_id

    def trace(self, *args: Any, **kwargs: Any) -> Any:
        """``self.nn.trace``; nnsight options such as ``remote=True`` pass through untouched."""
        return self.nn.trace(*args, **kwargs)

    def trace_encoding(self, enc: Encoding, *, generate: bool = False, **kwargs: Any) -> Any:
        """Open the nnsight trace of one encoded batch: a forward, or greedy ``generate`` (kwargs
        such as ``max_new_tokens`` go to it). Adapter quirks are applied here, once for every
        measurement: input fix-ups, and the text-only module for image-less batches of families whose
        full forward needs an image."""
        inputs = dict(enc.inputs)
        if not generate and self.adapter.forward_inputs is not None:
            inputs = self.adapter.forward_inputs(inputs)
        if self.adapter.text_only_module is not None and not any(enc.has_image):
            lm = get_path(self.hf, self.adapter.text_only_module)
            text = {
                k: v
                for k, v in inputs.items()
                if k in ("input_ids", "attention_mask", "position_ids")
            }
            run = lm.generate if generate else lm
            return self.nn.trace(**text, **kwargs, fn=lambda **kw: run(**kw))
        if generate:
            # nnsight's generate only opens a trace when called in the `with` line itself; trace it
            # explicitly so this method can hand the context manager back.
            run_generate = type(self.nn).generate.__wrapped__.__get__(self.nn)
            return self.nn.trace(**inputs, **kwargs, fn=run_generate)
        return self.nn.trace(**inputs, **kwargs)

    def unembed(self, hidden: Tensor) -> Tensor:
        """Logit lens: ``lm_head(final_norm(h))`` on residual-stream states (plain torch, no trace)."""
        norm = self.adapter.final_norm(self.hf)
        head = self.adapter.lm_head(self.hf)
        with torch.no_grad():
            return head(norm(hidden.to(self.device, self.dtype)))

    def __repr__(self) -> str:
        name = self.source or type(self.hf).__name__
        notes = f", notes={self.adapter.notes!r}" if self.adapter.notes else ""
        return (
            f"VLM({name!r}, adapter={self.adapter.name!r}, n_layers={self.n_layers}, "
            f"d_model={self.d_model}, device={self.device}, dtype={self.dtype}{notes})"
        )


def _resolve_source(model: str | Path) -> str:
    if str(model) == "demo":
        from .demo import CHECKPOINT_DIR

        return str(CHECKPOINT_DIR)
    return str(model)


def load(
    model: str | Path | PreTrainedModel,
    processor: Any = None,
    *,
    dtype: torch.dtype | str | None = torch.float32,
    device_map: Any = None,
    attn_implementation: str | None = None,
    adapter: Adapter | None = None,
    **hf_kwargs: Any,
) -> VLM:
    """Load a VLM and standardise it.

    Args:
        model: ``"demo"`` (the embedded demo model), a hub id or local folder (loaded with
            ``AutoModelForImageTextToText`` / ``AutoProcessor``), or an already-built HF model.
        processor: the processor, required with a built model; loaded from ``model`` otherwise.
        dtype, device_map, attn_implementation: passed to ``from_pretrained``. Use
            ``attn_implementation="eager"`` for attention-based measures.
        adapter: use this entry instead of resolving one from ``config.model_type``.
        **hf_kwargs: further ``from_pretrained`` arguments (``revision``, ``trust_remote_code`` ...).

    Raises:
        UnsupportedArchitectureError: no adapter serves the model's architecture.
    """
    if isinstance(model, PreTrainedModel):
        if processor is None:
            raise TypeError("interp.load(model, processor): a built model needs its processor")
        if attn_implementation is not None:
            model.set_attn_implementation(attn_implementation)
        return VLM(model.eval(), processor, adapter=adapter)
    source = _resolve_source(model)
    kwargs: dict[str, Any] = dict(hf_kwargs)
    if dtype is not None:
        kwargs["dtype"] = dtype
    if device_map is not None:
        kwargs["device_map"] = device_map
    if attn_implementation is not None:
        kwargs["attn_implementation"] = attn_implementation
    if adapter is None:  # fail before loading weights, with the supported list
        config = AutoConfig.from_pretrained(
            source, **{k: v for k, v in hf_kwargs.items() if k in ("revision", "trust_remote_code")}
        )
        adapter_for(config)
    hf = AutoModelForImageTextToText.from_pretrained(source, **kwargs).eval()
    if processor is None:
        processor = AutoProcessor.from_pretrained(
            source, **{k: v for k, v in hf_kwargs.items() if k in ("revision", "trust_remote_code")}
        )
    return VLM(hf, processor, adapter=adapter, source=str(model))


__all__ = ["VLM", "load"]
