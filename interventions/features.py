"""Interventions on any modality's input to the decoder: swap or ablate the image, audio or video
feature positions with one protocol.

Why: the papers compare a run with the real input against one whose image, audio or video carries
no information — a black image, a silent waveform, a black video — and the drives and conflict
studies do so per modality on omni inputs. :class:`SwapFeatures` and :class:`AblateFeatures` take
the modality (``"image"``, ``"audio"``, ``"video"``) and edit exactly its positions, everything
else (prompt, other modalities, positions, masks) unchanged; :class:`SwapImage` and
:class:`AblateImage` are their image case, with the behaviour and store fingerprints they always had.

Where the features enter:

- images: as :mod:`interventions.image` describes (token fusion at the decoder input, Mllama's
  cross-attention states, Qwen3-VL's DeepStack features);
- audio and video: the processor expands one placeholder token per feature vector and the model
  scatters the encoder's features into the decoder's input embeddings there
  (``Encoding.mask(kind)``), so the edit is on ``vlm.residual[0]`` at those positions. A swapped
  audio or video therefore equals a real run with the source input, provided the source has as many
  feature positions per row (a null audio takes the sample's own length, a null video its own size
  and frame count). Families that add per-layer video features to the residual (DeepStack) are
  refused for video until their per-layer features are split by modality.

Usage::

    interp.residual_stream(vlm, samples, edits=[SwapFeatures("audio", "null_audio:silence")])
    interp.generate(vlm, samples, edits=[AblateFeatures("video", "mean")])
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import torch
from jaxtyping import Float
from torch import Tensor

from interp.adapters import MODALITIES, Modality
from interp.conditions import Condition
from interp.edits import Batch, EditContext, Intervention, digest
from interp.encoding import Encoding, check_pixel_conditions, encode
from interp.errors import ConditionError, ImageTokenMismatchError, InterventionError
from interp.plain import Write, mean_groups, residual_site, run_writes, write

from .image import (
    ABLATION_MODES,
    AblationMode,
    ImageInputs,
    _check_values,
    _swap_layout,
    image_writes,
    read_image_inputs,
)

if TYPE_CHECKING:
    from interp.model import VLM

# The source each modality is swapped for when none is given: an input that carries nothing.
NULL_SOURCES: dict[str, str] = {
    "image": "null:black",
    "audio": "null_audio:silence",
    "video": "null_video:black",
}
_NOUNS = {"image": "an image", "audio": "audio", "video": "a video"}


def check_modality(kind: Any) -> Modality:
    """``kind`` as a modality name, or a typed error listing the names."""
    if kind not in MODALITIES:
        raise InterventionError(f"unknown modality {kind!r}; use one of {', '.join(MODALITIES)}")
    return cast(Modality, kind)


def require_modality(vlm: VLM, kind: Modality, what: str) -> None:
    """Before compute: the family takes ``kind`` and the edit can reach its features.

    Raises:
        ModalityError: the family does not take ``kind`` (names the family and the modality).
        InterventionError: video on a family with DeepStack features (not split per modality).
    """
    vlm.adapter.require(kind)
    if kind == "video" and vlm.adapter.deepstack_layers(vlm.hf):
        raise InterventionError(
            f"{what}: {vlm.adapter.name} adds per-layer DeepStack features to the residual at "
            "image and video positions together, so a video-only edit is not exact; edit the video "
            "with a condition (null_video:black, no_video) instead"
        )


def _carries(cond: Condition, kind: str) -> bool:
    return {"image": cond.uses_image, "audio": cond.uses_audio, "video": cond.uses_video}[kind]


def _rows_with(enc: Encoding, kind: str) -> list[bool]:
    """Per row, whether it holds feature positions of ``kind``."""
    if kind == "image":
        return list(enc.has_image)
    return [bool(r) for r in enc.mask(kind).any(dim=1).tolist()]


# -- audio and video: the decoder's input embeddings at the placeholder positions ----------------


def feature_counts(enc: Encoding, kind: str) -> tuple[int, ...]:
    """Feature positions of ``kind`` per row of ``enc`` (token positions; see
    :func:`interventions.image_counts` for the image's own, which covers cross-attention)."""
    return tuple(int(c) for c in enc.mask(kind).sum(dim=1).tolist())


def read_media_features(
    vlm: VLM, enc: Encoding, kind: str, **trace_kwargs: Any
) -> Float[Tensor, "n d"]:
    """One forward of ``enc`` (stopped at the first decoder layer): the decoder's input vectors at
    the ``kind`` (``"audio"``/``"video"``) positions, ``[n, d]`` in row, then position order."""
    mask = enc.mask(kind)
    if not bool(mask.any()):
        return torch.empty(0, vlm.d_model, device=vlm.device, dtype=vlm.dtype)
    site, path = residual_site(vlm, 0)  # plain data only inside the block (interp.plain)
    with torch.no_grad(), vlm.trace_encoding(enc, plain=True, **trace_kwargs) as tracer:
        v = getattr(site, path[0])
        for key in path[1:]:
            v = v[key]
        v = v[0] if isinstance(v, tuple) else v
        values = v[mask.to(v.device)].detach().clone().save()
        tracer.stop()
    return values.reshape(-1, vlm.d_model).to(vlm.device)


def media_writes(
    vlm: VLM,
    enc: Encoding,
    kind: str,
    *,
    value: float | Tensor = 0.0,
    mean: float | None = None,
) -> list[Write]:
    """``x ← value [+ mean · the row's mean of x]`` at the ``kind`` positions of the decoder input,
    lowered to writes (:mod:`interp.plain`); none where the batch has no such position."""
    mask = enc.mask(kind)
    if not bool(mask.any()):
        return []
    groups = None if mean is None else mean_groups(mask.nonzero()[:, 0], mean)
    return [write(residual_site(vlm, 0), mask, value=value, groups=groups)]


def replace_media_features(vlm: VLM, enc: Encoding, kind: str, values: Tensor) -> None:
    """Inside a trace of ``enc``: overwrite the ``kind`` positions with ``values`` (``[n, d]``, as
    :func:`read_media_features` returns them).

    Raises:
        ImageTokenMismatchError: ``values`` does not have one vector per position.
    """
    _check_media(vlm, enc, kind, values)
    run_writes(media_writes(vlm, enc, kind, value=values))


def _check_media(vlm: VLM, enc: Encoding, kind: str, values: Tensor) -> None:
    n = int(enc.mask(kind).sum())
    if tuple(values.shape) != (n, vlm.d_model):
        raise ImageTokenMismatchError(
            f"replacement {kind} features have shape {tuple(values.shape)}, but the batch has {n} "
            f"{kind} positions of width {vlm.d_model}"
        )


def ablate_media_features(vlm: VLM, enc: Encoding, kind: str, mode: AblationMode = "zero") -> None:
    """Inside a trace of ``enc``: ``"zero"`` sets every ``kind`` position's vector to 0, ``"mean"``
    replaces each by the mean over its row's ``kind`` positions."""
    run_writes(_ablation_writes(vlm, enc, kind, mode))


def _ablation_writes(vlm: VLM, enc: Encoding, kind: str, mode: str) -> list[Write]:
    if mode not in ABLATION_MODES:
        raise InterventionError(f"unknown ablation mode {mode!r}; use one of {ABLATION_MODES}")
    mean = 1.0 if mode == "mean" else None
    if kind == "image":
        return image_writes(vlm, enc, mean=mean)
    return media_writes(vlm, enc, kind, mean=mean)


# -- the interventions -----------------------------------------------------------------------------


class SwapFeatures(Intervention):
    """Put another condition's ``kind`` features in place of the real ones, at the prompt forward
    of any measurement: the run then equals a real run with the source input (tested against
    plain HF runs), everything else unchanged.

    ``prepare`` encodes the rows that carry ``kind`` under ``source`` and reads their features
    (one forward, outside the trace); ``apply`` writes them at the ``kind`` positions. Rows without
    that modality (e.g. a contrastive amateur that dropped it) are left alone.

    Args:
        kind: ``"image"``, ``"audio"`` or ``"video"``.
        source: a condition that carries ``kind``; default the modality's null input
            (``null:black``, ``null_audio:silence``, ``null_video:black``). Its inputs must have
            as many feature positions per row as the traced ones.

    Raises:
        InterventionError: an unknown modality.
        ConditionError: a source that drops ``kind`` (``blind``, ``no_audio``, ``no_video``).
        ModalityError: (at ``check``) the family does not take ``kind``.
    """

    def __init__(self, kind: Modality = "image", source: str | None = None) -> None:
        self.kind = check_modality(kind)
        self.source = self._source(self.kind, source)

    def _source(self, kind: str, source: str | None) -> str:
        cond = Condition.parse(NULL_SOURCES[kind] if source is None else source)
        if not _carries(cond, kind):
            drop = "'blind'" if kind == "image" else f"the 'no_{kind}' condition"
            raise ConditionError(
                f"{self._name()} source {str(cond)!r} carries no {kind}; use a condition that "
                f"carries {_NOUNS[kind]}, such as {NULL_SOURCES[kind]!r} (to compare with no "
                f"{kind} at all, run {drop})"
            )
        return str(cond)

    def _name(self) -> str:
        if type(self) is SwapFeatures:
            return f"SwapFeatures({self.kind!r})"
        return type(self).__name__

    def check(self, vlm: VLM) -> None:
        require_modality(vlm, self.kind, self._name())
        check_pixel_conditions(vlm.adapter, [self.source], f"{self._name()}'s source")

    def prepare(self, vlm: VLM, batch: Batch) -> Any:
        has = _rows_with(batch.encoding, self.kind)
        if not any(has):
            return None
        rows = [i for i, h in enumerate(has) if h]
        picked = [batch.samples[i] for i in rows]
        src = encode(vlm, picked, self.source, all_samples=batch.all_samples)
        if self.kind == "image":
            tgt_layout, src_layout = _swap_layout(vlm, batch.encoding), _swap_layout(vlm, src)
        else:
            tgt_layout = [
                f"{c} {self.kind} positions" for c in feature_counts(batch.encoding, self.kind)
            ]
            src_layout = [f"{c} {self.kind} positions" for c in feature_counts(src, self.kind)]
        if src_layout != [tgt_layout[i] for i in rows]:
            bad = [
                f"{s.id!r}: {a} vs {tgt_layout[i]}"
                for s, a, i in zip(picked, src_layout, rows)
                if a != tgt_layout[i]
            ]
            noun = "images" if self.kind == "image" else f"{self.kind} inputs"
            raise ImageTokenMismatchError(
                f"{type(self).__name__}({self.source!r}): the source {noun} of {len(bad)} "
                f"sample(s) differ in layout from the traced ones ({'; '.join(bad[:5])})"
            )
        # the source's read runs where the measurement's traces run (remote=..., backend=...)
        if self.kind != "image":
            return read_media_features(vlm, src, self.kind, **batch.trace_options)
        inputs = read_image_inputs(vlm, src, **batch.trace_options)
        if len(rows) == len(has):
            return inputs
        counts = [0] * len(has)
        for i, c in zip(rows, inputs.counts):
            counts[i] = c
        return ImageInputs(inputs.embeddings, tuple(counts), inputs.deepstack)

    def lower(self, ctx: EditContext) -> list[Write]:
        enc = ctx.batch.traced
        assert enc is not None
        if ctx.state is None:
            return []
        if self.kind != "image":
            _check_media(ctx.vlm, enc, self.kind, ctx.state)
            return media_writes(ctx.vlm, enc, self.kind, value=ctx.state)
        _check_values(ctx.vlm, enc, ctx.state)
        return image_writes(ctx.vlm, enc, value=ctx.state.embeddings, deep=ctx.state.deepstack)


class AblateFeatures(Intervention):
    """Ablate the ``kind`` feature positions at the prompt forward: ``"zero"`` sets each vector to
    0, ``"mean"`` replaces each by the mean of its row's ``kind`` vectors (the row keeps its
    average, loses all detail). For images see :func:`interventions.ablate_image_tokens`
    (cross-attention states, DeepStack features).

    Args:
        kind: ``"image"``, ``"audio"`` or ``"video"``.
        mode: ``"zero"`` or ``"mean"``.

    Raises:
        InterventionError: an unknown modality or mode.
        ModalityError: (at ``check``) the family does not take ``kind``.
    """

    def __init__(self, kind: Modality = "image", mode: AblationMode = "zero") -> None:
        self.kind = check_modality(kind)
        if mode not in ABLATION_MODES:
            raise InterventionError(f"unknown ablation mode {mode!r}; use one of {ABLATION_MODES}")
        self.mode = mode

    def check(self, vlm: VLM) -> None:
        name = type(self).__name__
        require_modality(
            vlm, self.kind, name if name != "AblateFeatures" else f"{name}({self.kind!r})"
        )

    def lower(self, ctx: EditContext) -> list[Write]:
        assert ctx.batch.traced is not None
        return _ablation_writes(ctx.vlm, ctx.batch.traced, self.kind, self.mode)


class SwapImage(SwapFeatures):
    """:class:`SwapFeatures` for the image: another condition's visual tokens (by default a black
    image's) in place of the real ones. Use it with image-bearing conditions (``full``,
    ``distort:<t>`` ...): the source images must have the same layout as the traced ones.

    Args:
        source: an image condition: ``null:black|white|noise|mean``, ``swap:<id|next>``,
            ``distort:<t>`` or a registered one.
    """

    def __init__(self, source: str = "null:black") -> None:
        self.source = self._source("image", source)

    @property
    def kind(self) -> Modality:  # type: ignore[override]
        return "image"

    def fingerprint(self) -> dict[str, Any]:
        # the fingerprint this class had before the modality generalisation: stores stay valid
        return {"type": "interventions.image.SwapImage", "params": digest({"source": self.source})}


class AblateImage(AblateFeatures):
    """:class:`AblateFeatures` for the image: ``"zero"`` sets every image-position vector (and
    Qwen3-VL's DeepStack features) to 0; ``"mean"`` replaces each by the mean of its row's image
    vectors. See :func:`interventions.ablate_image_tokens`."""

    def __init__(self, mode: AblationMode = "zero") -> None:
        if mode not in ABLATION_MODES:
            raise InterventionError(f"unknown ablation mode {mode!r}; use one of {ABLATION_MODES}")
        self.mode = mode

    @property
    def kind(self) -> Modality:  # type: ignore[override]
        return "image"

    def fingerprint(self) -> dict[str, Any]:
        return {"type": "interventions.image.AblateImage", "params": digest({"mode": self.mode})}


__all__ = [
    "NULL_SOURCES",
    "AblateFeatures",
    "AblateImage",
    "SwapFeatures",
    "SwapImage",
    "ablate_media_features",
    "check_modality",
    "feature_counts",
    "media_writes",
    "read_media_features",
    "replace_media_features",
    "require_modality",
]
