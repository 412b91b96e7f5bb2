"""Interventions on the image's input to the decoder: read, overwrite, swap and ablate visual tokens.

Why: the papers compare a run with the real image against one whose image carries no information —
trivial images (black, white, noise) in the visual-reference paper's Text-Only setting, the null or
black image of the temporal-causal-drives reference P0 and its mismatched-image sensitivity check,
the distorted image x' of contrastive decoding. Swapping only the visual tokens inside one trace
keeps everything else (prompt, positions, masks) fixed, and composes with reads and other edits.
Overwriting the decoder's ``inputs_embeds`` at image-token positions (for Mllama the
``multi_modal_projector`` output) with a null image's gives exactly the logits of a real null-image
run (tested on every supported architecture).

Where the image enters the language model depends on the fusion family (``Adapter.fusion``):

- ``"tokens"`` (Llava, Qwen-VL, Idefics3/SmolVLM, Gemma3, PaliGemma, InternVL, InstructBLIP ...):
  image features replace the embeddings at image-token positions. The *image embeddings* are the
  decoder's input vectors there, ``vlm.layers[0].input[enc.image_mask]`` — the embeddings after the
  image-feature scatter, so for Llava-NeXT/OneVision they are the unpadded features with their
  ``image_newline`` vectors, not the projector output itself.
- ``"cross_attention"`` (Mllama): the text attends to cross-attention states, the output of
  ``vlm.image_features`` (the ``multi_modal_projector``, ``[batch, images, tiles, vectors, d]``). The
  image embeddings are all of those states, padding tiles included: HF's forward lets text tokens
  that see no tile (those before ``<|image|>``) attend uniformly to every state, so padding tiles do
  reach the output and must be swapped too for a swap to be exact.
- DeepStack (Qwen3-VL) also adds per-layer image features to the residual stream at image positions
  after the first decoder layers, outside the layer modules. They are read and written at the output
  of ``vlm.image_features`` (``deepstack_features``), so an :class:`ImageInputs` swap is exact; a bare
  tensor swap replaces the input embeddings only and leaves the DeepStack features of the real image.

Invariants (tested on every supported architecture against plain HF forwards):

- Swapping a batch's image inputs for those of ``null:black`` inside a trace of the ``full`` encoding
  gives the logits and residual stream of a real ``null:black`` run (≤ 1e-5). Null images take the
  sample's own image size, so they have as many image positions as the real image.
- ``ablate_image_tokens(mode="zero")`` equals a plain HF forward whose image positions hold zero
  vectors (and, with DeepStack, zero DeepStack features).

Usage, as an edit of any measurement (the intervention objects :class:`~interventions.SwapImage`
and :class:`~interventions.AblateImage`, the image case of :mod:`interventions.features`)::

    interp.residual_stream(vlm, samples, edits=[SwapImage("null:black")])
    interp.generate(vlm, samples, edits=[AblateImage("mean")])

or by hand inside a trace (the functions)::

    swap = swap_image(vlm, samples, "null:black")
    with torch.no_grad(), vlm.trace_encoding(swap.encoding):
        swap()
        logits = nnsight.save(vlm.lm_head.output[:, -1])

In a ``generate`` trace the edits apply to the prompt's forward (the first step), the only step
whose inputs hold image positions; later steps reuse the cached keys and values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import nnsight
import torch
from einops import reduce
from jaxtyping import Bool, Float, Int
from torch import Tensor

from interp.conditions import Condition
from interp.encoding import Encoding, encode
from interp.errors import ConditionError, ImageTokenMismatchError, InterventionError
from interp.plain import Write, mean_groups, residual_site, run_writes, write
from interp.samples import Sample, ensure_samples

if TYPE_CHECKING:
    from interp.model import VLM

AblationMode = Literal["zero", "mean"]
ABLATION_MODES: tuple[str, ...] = ("zero", "mean")


@dataclass(frozen=True, eq=False)
class ImageInputs:
    """Everything the images of one encoded batch feed to the decoder.

    Attributes:
        embeddings: ``[n, d]`` image-position vectors in batch-row, then position order (for
            cross-attention fusion: row, image, tile, vector).
        counts: image positions per row; ``sum(counts) == n``.
        deepstack: one ``[n, d]`` tensor per DeepStack layer (Qwen3-VL), same order as
            ``embeddings``; empty for families without DeepStack.
    """

    embeddings: Float[Tensor, "n d"]
    counts: tuple[int, ...]
    deepstack: tuple[Float[Tensor, "n d"], ...] = ()

    def __len__(self) -> int:
        return int(self.embeddings.shape[0])


# -- per-family facts (from the adapter) ---------------------------------------------------------


def _cross_attention_tiles(vlm: VLM, enc: Encoding) -> tuple[Bool[Tensor, "batch img tile"], int]:
    """Cross-attention fusion (Mllama): the real-tile mask (the processor's ``aspect_ratio_mask``)
    and the vectors per tile slot (``Adapter.vectors_per_tile``)."""
    tiles = enc.inputs.get("aspect_ratio_mask")
    if tiles is None:
        raise ImageTokenMismatchError(
            f"{vlm.adapter.name}: the encoding has no 'aspect_ratio_mask', so its image tiles are "
            "unknown; encode the batch with interp.encode"
        )
    return tiles.bool(), vlm.adapter.vectors_per_tile(vlm.hf)


def _deepstack_layers(vlm: VLM) -> int:
    return vlm.adapter.deepstack_layers(vlm.hf)


# -- where the image enters ----------------------------------------------------------------------


def _cross_attention(vlm: VLM) -> bool:
    return vlm.adapter.fusion == "cross_attention"


def image_position_mask(vlm: VLM, enc: Encoding) -> Bool[Tensor, "batch ..."]:
    """True at image positions of the tensor the image enters through.

    Token fusion: ``enc.image_mask`` (``[batch, seq]`` over the decoder input). Cross-attention
    fusion: ``[batch, images, tiles, vectors]`` over the projector output, True everywhere (padding
    tiles included, see the module docstring).
    """
    if _cross_attention(vlm):
        if not any(enc.has_image):
            return torch.zeros(len(enc), 0, dtype=torch.bool, device=enc.input_ids.device)
        tiles, per_tile = _cross_attention_tiles(vlm, enc)
        return torch.ones(*tiles.shape, per_tile, dtype=torch.bool, device=tiles.device)
    return enc.image_mask


def image_counts(vlm: VLM, enc: Encoding) -> tuple[int, ...]:
    """Image positions per row of ``enc`` (see :func:`image_position_mask`)."""
    mask = image_position_mask(vlm, enc)
    return tuple(int(c) for c in reduce(mask.long(), "batch ... -> batch", "sum").tolist())


def _site(vlm: VLM) -> tuple[Any, tuple]:
    """The tensor the image enters through, as ``(envoy, path)`` (:mod:`interp.plain`): the
    projector's output for cross-attention fusion, else the decoder's input embeddings."""
    if _cross_attention(vlm):
        return vlm.image_features, ("output",)
    return residual_site(vlm, 0)


def _deepstack_site(vlm: VLM, k: int) -> tuple[Any, tuple]:
    """DeepStack feature set ``k`` (``[n, d]``, image-position order), as ``(envoy, path)``: read
    at the vision model's output, before the model splits it per image, so in-place edits reach
    the decoder."""
    return vlm.image_features, ("output", "deepstack_features", k)


def _rows(mask: Tensor) -> Int[Tensor, " n"]:
    """The batch row of every selected position, in selection order."""
    return mask.nonzero()[:, 0]


# -- reading -------------------------------------------------------------------------------------


def read_image_inputs(vlm: VLM, enc: Encoding, **trace_kwargs: Any) -> ImageInputs:
    """One forward of ``enc`` (stopped once the image has entered): all its image inputs.

    Outside a trace. Values keep the model's device and dtype, so writing them back is exact.
    """
    counts = image_counts(vlm, enc)
    d = vlm.d_model
    if not any(enc.has_image):
        empty = torch.empty(0, d, device=vlm.device, dtype=vlm.dtype)
        return ImageInputs(empty, counts, tuple(empty for _ in range(_deepstack_layers(vlm))))
    mask = image_position_mask(vlm, enc)
    # plain data only inside the block (interp.plain): it runs here or on NDIF
    (site, path), features = _site(vlm), vlm.image_features
    stacked = _deepstack_layers(vlm) > 0
    with torch.no_grad(), vlm.trace_encoding(enc, plain=True, **trace_kwargs) as tracer:
        deep = nnsight.save([])
        if stacked:  # the vision model runs first
            for feat in features.output["deepstack_features"]:
                deep.append(feat.detach().clone())
        v = getattr(site, path[0])
        for key in path[1:]:
            v = v[key]
        v = v[0] if isinstance(v, tuple) else v
        embeddings = v[mask.to(v.device)].detach().clone().save()
        tracer.stop()
    moved = tuple(f.to(vlm.device) for f in deep)
    return ImageInputs(embeddings.reshape(-1, d).to(vlm.device), counts, moved)


def image_embeddings(vlm: VLM, enc: Encoding, **trace_kwargs: Any) -> Float[Tensor, "n d"]:
    """The decoder's input vectors at the image positions of ``enc`` (one forward, outside a trace).

    ``[n_image_positions_total, d_model]`` in batch-row, then position order; for cross-attention
    fusion (Mllama) the cross-attention states of every tile slot. DeepStack features (Qwen3-VL) are
    not included: use :func:`read_image_inputs` for them.
    """
    return read_image_inputs(vlm, enc, **trace_kwargs).embeddings


# -- editing inside a trace ----------------------------------------------------------------------


def image_writes(
    vlm: VLM,
    enc: Encoding,
    *,
    keep: float | Tensor = 0.0,
    value: float | Tensor = 0.0,
    deep: Sequence[Tensor] | None = None,
    mean: float | Tensor | None = None,
    deepstack: bool = True,
) -> list[Write]:
    """The image edit ``x ← keep · x + value [+ mean · the row's mean]`` at every image position
    of ``enc``, lowered to writes (:mod:`interp.plain`), DeepStack features first (execution
    order). ``keep``, ``value`` and ``mean`` are scalars or per-position (``[n, 1]``, ``[n, d]``);
    ``deep`` gives DeepStack set k its own ``value`` (None: the same edit as the image
    positions; ``deepstack=False`` leaves them alone). No writes for a batch without images."""
    if not any(enc.has_image):
        return []
    mask = image_position_mask(vlm, enc)
    rows = _rows(mask)
    groups = None if mean is None else mean_groups(rows, mean)
    out = [
        write(
            _deepstack_site(vlm, k),
            torch.ones(len(rows), dtype=torch.bool),
            keep=keep,
            value=value if deep is None else deep[k],
            groups=groups,
        )
        for k in range(_deepstack_layers(vlm) if deepstack else 0)
    ]
    out.append(write(_site(vlm), mask, keep=keep, value=value, groups=groups))
    return out


def _check_values(vlm: VLM, enc: Encoding, values: Tensor | ImageInputs) -> None:
    counts = image_counts(vlm, enc)
    n, d = sum(counts), vlm.d_model
    tensor = values.embeddings if isinstance(values, ImageInputs) else values
    if not isinstance(tensor, Tensor):
        raise TypeError(f"values must be a Tensor or ImageInputs, got {type(values).__name__}")
    if tuple(tensor.shape) != (n, d):
        where = (
            "cross-attention state vectors" if _cross_attention(vlm) else "image-token positions"
        )
        raise ImageTokenMismatchError(
            f"replacement image embeddings have shape {tuple(tensor.shape)}, but the batch has "
            f"{n} {where} of width {d} (per row: {list(counts)}); expected ({n}, {d}). Read the "
            "values with image_embeddings() from an encoding whose images have the same sizes."
        )
    if not isinstance(values, ImageInputs):
        return
    if values.counts != counts:
        raise ImageTokenMismatchError(
            f"replacement image inputs have per-row counts {list(values.counts)}, but the batch has "
            f"{list(counts)}: each row's image must have as many positions as the image it replaces"
        )
    layers = _deepstack_layers(vlm)
    if len(values.deepstack) != layers or any(tuple(f.shape) != (n, d) for f in values.deepstack):
        raise ImageTokenMismatchError(
            f"replacement image inputs carry {len(values.deepstack)} DeepStack feature sets of "
            f"shapes {[tuple(f.shape) for f in values.deepstack]}; the model expects {layers} of "
            f"shape ({n}, {d})"
        )


def replace_image_embeddings(vlm: VLM, enc: Encoding, values: Tensor | ImageInputs) -> None:
    """Inside a trace of ``enc``: overwrite the image-position vectors with ``values``.

    ``values`` is what :func:`image_embeddings` returns (``[n, d]``, the image embeddings only) or
    what :func:`read_image_inputs` returns (also the DeepStack features of Qwen3-VL, and per-row
    counts, which must match). Overwriting the decoder's input embeddings at image positions (for
    Mllama the ``multi_modal_projector`` output) gives exactly the run of the image the values were
    read from, provided everything else (prompt, positions, attention masks) is the same.

    Raises:
        ImageTokenMismatchError: the shape or per-row counts of ``values`` do not match ``enc``.
    """
    _check_values(vlm, enc, values)
    if isinstance(values, ImageInputs):
        writes = image_writes(vlm, enc, value=values.embeddings, deep=values.deepstack)
    else:
        writes = image_writes(vlm, enc, value=values, deepstack=False)
    run_writes(writes)


def ablate_image_tokens(vlm: VLM, enc: Encoding, mode: AblationMode = "zero") -> None:
    """Inside a trace of ``enc``: ablate the image positions.

    ``"zero"`` sets every image-position vector to 0; ``"mean"`` replaces each by the mean over its
    row's image positions (the row keeps its average image vector, loses all spatial detail). The
    DeepStack features of Qwen3-VL are ablated the same way, so no image content enters later.
    For Mllama all cross-attention states are ablated (the mean is over the row's states, padding
    tiles included).
    """
    if mode not in ABLATION_MODES:
        raise InterventionError(f"unknown ablation mode {mode!r}; use one of {ABLATION_MODES}")
    run_writes(image_writes(vlm, enc, mean=1.0 if mode == "mean" else None))


# -- swapping ------------------------------------------------------------------------------------


def _swap_layout(vlm: VLM, enc: Encoding) -> list[str]:
    """Per row, what a swapped image must match, in words: its image positions and, for
    cross-attention fusion, its real tiles (every row has the same number of tile slots, so the
    counts alone would let a one-tile image replace a two-tile one)."""
    counts = image_counts(vlm, enc)
    if not _cross_attention(vlm) or not any(enc.has_image):
        return [f"{c} image positions" for c in counts]
    tiles, _ = _cross_attention_tiles(vlm, enc)
    real = reduce(tiles.long(), "batch image tile -> batch", "sum").tolist()
    return [f"{int(t)} image tiles" for t in real]


@dataclass
class ImageSwap:
    """Image inputs of a source condition, ready to be written into a trace of ``encoding``.

    Call it (no argument) inside ``with vlm.trace_encoding(swap.encoding):``; pass another encoding
    of the same samples (e.g. one with appended targets from ``append_targets``) to edit that one.

    Attributes:
        encoding: the encoding to trace (the samples under the target condition, default ``full``).
        inputs: the source condition's image inputs, per-row counts equal to ``encoding``'s.
        source: the source condition, e.g. ``"null:black"``.
    """

    vlm: VLM = field(repr=False)
    encoding: Encoding = field(repr=False)
    inputs: ImageInputs = field(repr=False)
    source: str

    def __call__(self, enc: Encoding | None = None) -> None:
        replace_image_embeddings(self.vlm, enc if enc is not None else self.encoding, self.inputs)


def swap_image(
    vlm: VLM,
    samples: Sequence[Sample] | Sample,
    source: str | Condition = "null:black",
    *,
    target: str | Condition = "full",
    all_samples: Sequence[Sample] | None = None,
    **trace_kwargs: Any,
) -> ImageSwap:
    """Swap the visual tokens of ``samples`` for those of another image, e.g. a null image.

    Encodes the samples under ``source`` and reads its image inputs (one forward), and encodes them
    under ``target``; the returned :class:`ImageSwap` writes the source inputs into a trace of the
    target encoding. With the default ``null:black`` the patched run equals a real null-image run:
    null images take each sample's own image size, so token counts match.

    Raises:
        ConditionError: ``source`` carries no image (``blind``).
        ImageTokenMismatchError: a row's source image has a different number of image positions
            than its target image (e.g. ``swap:<id>`` between images of different sizes on a
            dynamic-resolution model), or a target row has no image.
    """
    samples = ensure_samples(samples)
    src_cond = Condition.parse(source)
    if not src_cond.uses_image:
        raise ConditionError(
            f"swap source {str(src_cond)!r} carries no image; use an image condition such as "
            "'null:black' or 'swap:next' (to compare with no image at all, run 'blind')"
        )
    src = encode(vlm, samples, src_cond, all_samples=all_samples)
    tgt = encode(vlm, samples, target, all_samples=all_samples)
    src_counts, tgt_counts = _swap_layout(vlm, src), _swap_layout(vlm, tgt)
    bad = [(s.id, a, b) for s, a, b in zip(samples, src_counts, tgt_counts) if a != b]
    if bad:
        detail = "; ".join(f"{sid!r}: {a} vs {b}" for sid, a, b in bad[:5])
        raise ImageTokenMismatchError(
            f"swap {str(src_cond)!r} -> {str(Condition.parse(target))!r}: the source and target "
            f"images of {len(bad)} sample(s) differ in layout ({detail}). Null images take each "
            "sample's own size; a swapped image must have the size of the one it replaces."
        )
    inputs = read_image_inputs(vlm, src, **trace_kwargs)
    return ImageSwap(vlm=vlm, encoding=tgt, inputs=inputs, source=str(src_cond))


__all__ = [
    "ABLATION_MODES",
    "AblationMode",
    "ImageInputs",
    "ImageSwap",
    "ablate_image_tokens",
    "image_counts",
    "image_embeddings",
    "image_position_mask",
    "image_writes",
    "read_image_inputs",
    "replace_image_embeddings",
    "swap_image",
]
