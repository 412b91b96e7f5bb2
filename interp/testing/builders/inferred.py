"""A type of transformers' multimodal mapping built tiny from its default config (shrunk
generically) with a borrowed tiny processor of its pattern: the models of
:mod:`interp.testing.zoo_parity`'s checks and of the zoo's one-fix entries in
:data:`interp.testing.tiny.ZOO_ARCHITECTURES` (see :mod:`interp.testing.zoo_parity` for the
borrowing rules)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import torch

from .common import HEAD_DIM, INIT_STD, TEXT_HIDDEN, VISION_HIDDEN
from .llava import VIDEO_TOKEN

# above this many parameters a generic shrink left a tower at full size: too slow for the sweep
MAX_PARAMS = 8_000_000
from .zoo_images import IMAGE_SIZE  # noqa: E402

_TEXT = {
    "hidden_size": TEXT_HIDDEN,
    "intermediate_size": 2 * TEXT_HIDDEN,
    "intermediate_size_mlp": 2 * TEXT_HIDDEN,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": HEAD_DIM,
    "moe_intermediate_size": TEXT_HIDDEN // 2,
    "shared_expert_intermediate_size": TEXT_HIDDEN // 2,
    "num_experts": 4,
    "n_routed_experts": 4,
    "num_local_experts": 4,
    "num_experts_per_tok": 2,
    "n_shared_experts": 1,
    "mamba_num_heads": 4,  # state-space layers (Nemotron-H)
    "mamba_head_dim": HEAD_DIM,
    "ssm_state_size": 16,
    "n_groups": 1,
    "moe_shared_expert_intermediate_size": TEXT_HIDDEN // 2,
    "swa_num_attention_heads": 4,  # Inkling 2's sliding-window layers
    "swa_num_key_value_heads": 2,
    "swa_head_dim": HEAD_DIM,
    # multi-head latent attention (DeepSeek-style decoders: dots3, HY-V4): the rotary and plain
    # query-key parts sum to the head width
    "q_lora_rank": 2 * HEAD_DIM,
    "kv_lora_rank": HEAD_DIM,
    "qk_rope_head_dim": HEAD_DIM // 2,
    "qk_nope_head_dim": HEAD_DIM // 2,
    "qk_head_dim": HEAD_DIM,
    "v_head_dim": HEAD_DIM,
    "index_head_dim": HEAD_DIM,
    "index_n_heads": 2,
    "linear_head_dim": HEAD_DIM,  # linear-attention layers (GLM-5 Next)
    "linear_num_heads": 4,
    "initializer_range": INIT_STD,
}
_TOWER = {
    "hidden_size": VISION_HIDDEN,
    "embed_dim": VISION_HIDDEN,
    "intermediate_size": 2 * VISION_HIDDEN,
    "num_hidden_layers": 2,
    "depth": 2,
    "n_layers": 2,
    "num_attention_heads": 2,
    "num_heads": 2,
    "head_dim": VISION_HIDDEN // 2,
    "out_hidden_size": TEXT_HIDDEN,
    "vision_output_dim": TEXT_HIDDEN,
    "projector_input_dim": TEXT_HIDDEN,
    "projector_output_dim": TEXT_HIDDEN,
    "text_hidden_size": TEXT_HIDDEN,  # a tower projecting into the decoder (Inkling 2)
    "projection_hidden_dim": 2 * VISION_HIDDEN,
    "projection_dim": TEXT_HIDDEN,  # Janus's aligner width (the text width)
    "moe_intermediate_size": VISION_HIDDEN,  # a tower with experts (dots3)
    "num_local_experts": 4,
    "num_experts_per_tok": 2,
    "adapter_in_dim": VISION_HIDDEN,  # dots3's towers and their adapters
    "adapter_input_size": VISION_HIDDEN,
    "adapter_out_dim": TEXT_HIDDEN,
    # Whisper-style audio encoders (Qwen3-ASR)
    "encoder_layers": 2,
    "encoder_attention_heads": 2,
    "encoder_ffn_dim": 2 * VISION_HIDDEN,
    "d_model": VISION_HIDDEN,
    "mlp_dim": 2 * VISION_HIDDEN,  # SAM-style towers
    "max_img_size": 64,  # RADIO's position-embedding grid (Nemotron-H Omni)
    "insert_layer_id": 0,  # MiniCPM-V's merger inside the tower: after the first tiny layer
    # a staged tower (Muse Spark's audio encoder): per-stage widths and depths, cut below
    "hidden_sizes": VISION_HIDDEN,
    "depths": 1,
    "output_channels": VISION_HIDDEN,
    "downsample_channels": VISION_HIDDEN,  # SAM necks (DeepSeek-OCR 2, Unlimited-OCR)
    "downsample_hidden_size": VISION_HIDDEN,
    "vocab_size": 256,  # Ovis: the visual vocabulary
    "initializer_range": INIT_STD,
}
_VQ = {
    "num_embeddings": 64,
    "latent_channels": 8,
    "base_channels": 32,  # group norms of 32 groups
    "channel_multiplier": 1,  # every level, at the base width
    "num_res_blocks": 1,
    "projection_dim": TEXT_HIDDEN,
    "image_token_embed_dim": TEXT_HIDDEN,
    "initializer_range": INIT_STD,
}
# per-stage lists of a staged tower, cut with its stages (Muse Spark's audio encoder)
_PER_STAGE = ("patch_sizes", "hidden_sizes", "depths")
# a Qwen-VL-style tower's merge and frame sizes under Muse Glimmer's names
_MUSE_GRID = {"merge_size", "patch_temporal"}
# per-layer lists, cut with the decoder (Mistral Large 4's key-value sources and indexers too)
_PER_LAYER = (
    "layer_types",
    "mlp_layer_types",
    "block_types",
    "kv_source_layers",
    "indexer_types",
    "no_rope_layers",
)


def _sub_configs(d: dict[str, Any]) -> list[dict[str, Any]]:
    """The sub-config dicts of a config dict (those with a ``model_type``)."""
    return [v for v in d.values() if isinstance(v, dict) and "model_type" in v]


class ParityError(Exception):
    """A tiny model could not be built or a check failed; the message is the reason."""


def _shrink(d: dict[str, Any], sizes: dict[str, Any]) -> None:
    """Set each size ``d`` has (a list-valued one per entry); per-layer lists keep the first
    layer's kind and the first other kind (a hybrid decoder keeps both kinds, even one whose
    first and last layers are alike: LFM2's convolutions around its attention layers); M-RoPE sections keep their
    shares of the new rotary half; a decoder whose heads equal its key-value heads keeps that,
    and none keeps more key-value heads than heads."""
    n = d.get("num_hidden_layers")
    same_kv = d.get("num_key_value_heads") == d.get("num_attention_heads")
    # DeepSeek-V3-style configs whose head_dim is the rotary part's width keep it so
    rotary_head = d.get("head_dim") is not None and d.get("head_dim") == d.get("qk_rope_head_dim")
    for key, value in sizes.items():
        old = d.get(key)
        if isinstance(old, list) and all(isinstance(v, int) for v in old):
            d[key] = [value] * len(old)
        elif old is not None and old != 0:  # a part the default leaves out stays out
            d[key] = value
    if rotary_head:
        d["head_dim"] = d["qk_rope_head_dim"]
    if "qk_rope_head_dim" in sizes and isinstance(d.get("qk_nope_head_dim"), int):
        # the query-key head width is the plain part plus the rotary part (which may be 0: NoPE)
        d["qk_nope_head_dim"] = HEAD_DIM - (d.get("qk_rope_head_dim") or 0)
    kv, heads = d.get("num_key_value_heads"), d.get("num_attention_heads", d.get("num_heads"))
    if kv is not None and heads is not None and (same_kv or kv > heads):
        d["num_key_value_heads"] = (
            heads  # never more key-value heads than heads (EXAONE 4.5's tower)
        )
    for key in _PER_STAGE:  # one entry per stage: the first stages, as many as kept
        if isinstance(d.get(key), list) and n and len(d[key]) == n and n > 1:
            d[key] = d[key][: sizes["num_hidden_layers"]]
    for key in _PER_LAYER:
        if isinstance(d.get(key), list) and n and len(d[key]) == n and n > 1:
            first = d[key][0]  # and the first layer of another kind, else the last
            other = next((k for k in d[key] if k != first), d[key][-1])
            d[key] = [first, other][: sizes["num_hidden_layers"]]
    per_layer = d.get("per_layer_config")
    if isinstance(per_layer, dict):  # per-layer overrides, keyed by layer index (dots3)
        d["per_layer_config"] = {
            k: v for k, v in per_layer.items() if int(k) < sizes["num_hidden_layers"]
        }
    _feature_layers(d)
    for rope in _ropes(d):
        if not rope.get("mrope_section"):
            continue
        share = rope.get("partial_rotary_factor", d.get("partial_rotary_factor")) or 1.0
        rotary = d.get("qk_rope_head_dim")  # latent attention: only that part rotates
        total = rotary // 2 if rotary else int(HEAD_DIM * share) // 2
        old = list(rope["mrope_section"])
        new = [max(1, s * total // sum(old)) for s in old]
        # the remainder on the temporal share: h and w stay equal (ERNIE 4.5-VL stacks them)
        new[-1] += total - sum(new)
        rope["mrope_section"] = new


def _ropes(d: dict[str, Any]) -> list[dict[str, Any]]:
    """The rotary parameter dicts of a text config dict: one, or one per layer type (Cohere
    Compass keys them by layer type)."""
    rope = d.get("rope_parameters")
    if not isinstance(rope, dict):
        return []
    nested = [v for v in rope.values() if isinstance(v, dict)]
    return nested or [rope]


def _feature_layers(d: dict[str, Any]) -> None:
    """Tower layers read for features: the last one(s) of the 2-layer tiny tower."""
    for key in ("vision_feature_layer", "vision_feature_layers"):
        if isinstance(d.get(key), (list, tuple)):
            d[key] = [-2, -1][-len(d[key]) :] if len(d[key]) <= 2 else [-2, -1]
        elif isinstance(d.get(key), int):
            d[key] = -1


def _set_ids(d: dict[str, Any], ids: dict[str, int]) -> None:
    """Set every placeholder-id field the config (or its text config) has, by both spellings."""
    for kind, value in ids.items():
        for target in (d, d.get("text_config")):
            if not isinstance(target, dict):
                continue
            for key in (f"{kind}_token_id", f"{kind}_token_index"):
                if key in target and target[key] is not None:
                    target[key] = value


def _borrowed(pattern: str) -> tuple[Any, str]:
    """The tiny processor ``pattern``'s models are checked with, and its name for the table."""
    if pattern == "qwen-vl-like":
        from .qwen_vl import build_qwen3_vl

        return build_qwen3_vl()[1], "qwen3_vl"
    if pattern == "audio-lm":
        from .audio import build_qwen2_audio

        return build_qwen2_audio()[1], "qwen2_audio"
    from transformers import CLIPImageProcessorPil

    from ..tokenizer import chat_template
    from .llava import IMAGE_PLACEHOLDER, _tokenizer
    from .zoo_inputs import CountingProcessor

    size = IMAGE_SIZE
    processor = CountingProcessor(
        image_processor=CLIPImageProcessorPil(
            size={"shortest_edge": size}, crop_size={"height": size, "width": size}
        ),
        tokenizer=_tokenizer(with_video=True),
        chat_template=chat_template(IMAGE_PLACEHOLDER),
    )
    return processor, "llava"


def _count(out: Any, width: int) -> int:
    """Feature vectors of width ``width`` in a feature site's (or get_*_features') output."""
    pooled = getattr(out, "pooler_output", None)
    if pooled is not None:
        out = pooled
    elif hasattr(out, "last_hidden_state"):
        out = out.last_hidden_state
    parts = out if isinstance(out, (tuple, list)) else (out,)
    return sum(int(p.numel()) for p in parts if isinstance(p, torch.Tensor)) // width


def tiny_inferred(
    model_type: str,
    seed: int = 0,
    attn_implementation: str = "eager",
    probe_images: bool = True,
    without: tuple[str, ...] = (),
) -> tuple[torch.nn.Module, Any, str]:
    """``(model, processor, processor name)``: ``model_type`` built tiny on CPU (``seed``) from its
    default config, shrunk, with the borrowed processor of its pattern (see the module docstring);
    ``probe_images``: first check the processor's image inputs reach the feature site (off for
    text-only use); ``without``: tower configs left None, as a checkpoint without that tower
    publishes them (Gemma 4 Unified's ``audio_config``).

    Raises:
        ParityError: the config does not shrink or build, or the model stays too large.
    """
    from transformers import AutoConfig, AutoModelForMultimodalLM

    from ...adapters.infer import pattern_of
    from .zoo_configs import CONFIG_FIXES, set_unbuilt_defaults, set_unset_ids
    from .zoo_images import IMAGE_PROCESSORS
    from .zoo_inputs import GRID_COUNTED, RENAMED, STOCK_PROCESSORS

    config = AutoConfig.for_model(model_type)
    set_unset_ids(config)  # as a checkpoint sets them (Voxtral's audio_token_id)
    set_unbuilt_defaults(config)  # fields a default leaves unusable (Aya Vision's tower heads)
    for tower in without:
        setattr(config, tower, None)
    pattern, why = pattern_of(config)
    if pattern is None:
        raise ParityError(why)
    d = config.to_dict()
    vision = d.get("vision_config")
    # a llava-like config with a Qwen-VL-style tower (a spatial merge, patches flattened with
    # their grid): the Qwen-VL processor's inputs
    grid = pattern == "qwen-vl-like" or (
        isinstance(vision, dict)
        and bool(vision.get("spatial_merge_size") or _MUSE_GRID <= vision.keys())
    )
    processor, name = _borrowed("qwen-vl-like" if grid else pattern)
    if model_type in STOCK_PROCESSORS:
        processor = STOCK_PROCESSORS[model_type](processor)
    tok = processor.tokenizer
    text = d.get("text_config") if isinstance(d.get("text_config"), dict) else d
    _shrink(text, _TEXT)
    text.update(
        vocab_size=len(tok),
        **({"unpadded_vocab_size": len(tok)} if "unpadded_vocab_size" in text else {}),
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    for key in ("vision_config", "audio_config"):
        if isinstance(d.get(key), dict):
            _shrink(d[key], _TOWER)
            for sub in _sub_configs(d[key]):  # a tower made of towers (Unlimited-OCR's SAM + CLIP)
                _shrink(sub, _TOWER)
    for key, sub in d.items():  # a second tower (DeepSeek-VL hybrid's high-resolution SAM)
        if key.endswith("vision_config") and key != "vision_config" and isinstance(sub, dict):
            _shrink(sub, _TOWER)
    if isinstance(d.get("vq_config"), dict):  # an image generator's VQ model (Janus)
        _shrink(d["vq_config"], _VQ)
    adapter = d.get("adapter_config")
    if isinstance(adapter, dict):  # Molmo2's vision-to-text adapter
        _shrink(adapter, _TOWER)
        _feature_layers(adapter)
        if "text_hidden_size" in adapter:
            adapter["text_hidden_size"] = TEXT_HIDDEN
    _feature_layers(d)
    if "insert_layer_id" in d and isinstance(vision, dict):  # named twice (MiniCPM-V)
        d["insert_layer_id"] = vision.get("insert_layer_id", 0)
    if isinstance(vision, dict):  # tower layers indexed by the default: the tiny tower's first
        for key in ("deepstack_visual_indexes", "fullatt_block_indexes"):
            if vision.get(key):
                vision[key] = [0]
    if grid and isinstance(vision, dict):
        ip = processor.image_processor
        if vision.get("temporal_patch_size", 1) == 1:  # a 2-D patch embedding (Ovis2.5)
            ip.temporal_patch_size = 1
        vision.update(
            patch_size=ip.patch_size,
            spatial_merge_size=ip.merge_size,
            temporal_patch_size=ip.temporal_patch_size,
        )
        if _MUSE_GRID <= vision.keys():  # the same sizes under Muse's names
            vision.update(merge_size=ip.merge_size, patch_temporal=ip.temporal_patch_size)
        if "in_channels" in vision:
            vision["in_channels"] = 3
        text.setdefault("rope_parameters", {})
        unset = [r for r in _ropes(text) if not r.get("mrope_section")]
        for rope in unset:  # the code's default
            rope["mrope_section"] = [1, 1, 1]  # sized by _shrink below
        if unset:
            _shrink(text, _TEXT)
        ids = {
            "image": processor.image_token_id,
            "video": processor.video_token_id,
            "vision_start": tok.convert_tokens_to_ids("<|vision_start|>"),
            "vision_end": tok.convert_tokens_to_ids("<|vision_end|>"),
        }
        # the processor's image markers, under the names Ovis2.5 reads
        ids["image_start"], ids["image_end"] = ids["vision_start"], ids["vision_end"]
    elif pattern == "llava-like" and isinstance(vision, dict):
        for key, value in (("image_size", IMAGE_SIZE), ("patch_size", 8), ("num_channels", 3)):
            if isinstance(vision.get(key), list):  # per side (Molmo2's [height, width])
                vision[key] = [value] * len(vision[key])
            elif key in vision:
                vision[key] = value
        ratio = vision.get("pixel_shuffle_ratio")
        if ratio:  # Llama 4: the shuffled width feeds the vision adapter's MLP
            vision["intermediate_size"] = int(VISION_HIDDEN / ratio**2)
        ids = {"image": tok.convert_tokens_to_ids(processor.image_token)}
        if "video_token_id" in d or "video_token_index" in d:
            ids["video"] = tok.convert_tokens_to_ids(VIDEO_TOKEN)  # no video inputs here
    else:
        audio = d.get("audio_config")
        if isinstance(audio, dict):
            for key in ("num_mel_bins", "input_dim", "feature_size"):
                if key in audio:
                    audio[key] = processor.feature_extractor.feature_size
        ids = {"audio": tok.convert_tokens_to_ids(processor.audio_token)}
    if model_type in CONFIG_FIXES:  # image-size-dependent fields, for the tiny tower
        CONFIG_FIXES[model_type](d)
    if model_type in IMAGE_PROCESSORS and isinstance(vision, dict):  # its own, tiny-sized
        processor.image_processor = IMAGE_PROCESSORS[model_type](d["vision_config"])
    _set_ids(d, ids)
    try:
        config = type(config).from_dict(d)
        with torch.device("meta"):  # its size first, without memory
            n = sum(p.numel() for p in AutoModelForMultimodalLM.from_config(config).parameters())
        if n > MAX_PARAMS:
            raise ParityError(f"a tower does not shrink generically ({n / 1e6:.0f}M parameters)")
        torch.manual_seed(seed)
        model = AutoModelForMultimodalLM.from_config(config)
    except ParityError:
        raise
    except Exception as err:  # noqa: BLE001 - the reason is the row
        raise ParityError(f"the shrunk default config does not build ({_reason(err)})") from None
    forwards = [model.forward, getattr(getattr(model, "model", None), "forward", None)]
    takes = any(
        f is not None and "mm_token_type_ids" in inspect.signature(f).parameters for f in forwards
    )
    marks = "mm_token_type_ids" in RENAMED.get(model_type, {})  # returned under another name
    if not takes and not marks:
        processor.return_mm_token_type_ids = False  # a field the borrowed processor adds
    elif takes and name == "llava":  # the llava one leaves it out unless asked
        processor.return_mm_token_type_ids = True
    with torch.no_grad():  # a weight matrix HF initialises to zero (Gemma 3's image
        for param in model.parameters():  # projection) is drawn, so the image reaches the output
            if param.dim() == 2 and not param.any():
                param.normal_(0.0, INIT_STD)
    model = model.float().eval()
    model.config.architectures = [type(model).__name__]
    model.set_attn_implementation(attn_implementation)
    gen = model.generation_config
    gen.pad_token_id, gen.bos_token_id, gen.eos_token_id = (
        tok.pad_token_id,
        tok.bos_token_id,
        tok.eos_token_id,
    )
    if name == "qwen2_audio" and model_type not in STOCK_PROCESSORS:
        # expand each <|AUDIO|> to the model's feature count for that clip
        from .zoo_inputs import CountingAudioProcessor

        processor = CountingAudioProcessor(
            feature_extractor=processor.feature_extractor,
            tokenizer=processor.tokenizer,
            chat_template=processor.chat_template,
        )
        processor.count_for(model_type, _counter(model, "get_audio_features"))
    if name == "qwen3_vl" and model_type in GRID_COUNTED:  # its own count per image
        from .common import processor_without_video
        from .zoo_inputs import CountingGridProcessor

        video, marks = processor.video_processor, processor.return_mm_token_type_ids
        processor = processor_without_video(
            CountingGridProcessor,
            image_processor=processor.image_processor,
            tokenizer=processor.tokenizer,
            chat_template=processor.chat_template,
        )
        processor.video_processor, processor.return_mm_token_type_ids = video, marks
        processor.count_for(model_type, _counter(model, "get_image_features"))
    if name == "llava":  # expand each <image> to the model's feature count for that image
        processor.count_for(model_type, _counter(model, "get_image_features"))
        if "mm_token_type_ids" in processor.renamed:  # the stock one returns the marks it renames
            processor.return_mm_token_type_ids = True
    if name == "llava" and probe_images:
        try:
            processor(text=[processor.image_token], images=[_image()])
        except Exception as err:  # noqa: BLE001
            raise ParityError(
                f"its feature site does not take its image processor's inputs ({_reason(err)})"
            ) from None
    return model, processor, name


def _counter(model: torch.nn.Module, method: str) -> Callable[[dict[str, Any]], int]:
    """Feature vectors ``model``'s ``method`` (``get_image_features`` / ``get_audio_features``)
    gives for one item's processor outputs, passed by the names it takes."""
    width = _n_text(model)

    def count(inputs: dict[str, Any]) -> int:
        # the base model's (it names its inputs; DeepSeek-VL's head model has none)
        base = getattr(model, "model", None)
        get = getattr(base, method, None) or getattr(model, method)
        wanted = inspect.signature(get).parameters
        with torch.no_grad():
            out = get(**{k: v for k, v in inputs.items() if k in wanted})
        return _count(out, width)

    return count


def _n_text(model: torch.nn.Module) -> int:
    return int(model.config.get_text_config().hidden_size)


def _image() -> Any:
    from ..samples import random_image

    return random_image(IMAGE_SIZE, IMAGE_SIZE, 0)


def _reason(err: BaseException) -> str:
    text = " ".join(str(err).split()).replace("|", "/")
    return f"{type(err).__name__}: {text[:100]}"
