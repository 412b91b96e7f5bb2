"""Edits inside attention: :class:`Knockout` and PAI's image-attention boost :class:`AttentionBoost`.

- **Knockout** (attention knockout, as in studies of information flow): chosen query positions may
  not attend to chosen key positions. It lowers to plain data (:func:`interp.plain.cut`): in the
  chosen decoder layers the attention module's mask gets the dtype's most negative value at
  ``[q, k]``, so the softmax gives those keys weight 0. Eager and SDPA attention both take that
  mask, so it runs with either and on NDIF. Equal to a plain forward whose eager attention sets
  the scores there to the minimum (tested, eager and SDPA).
- **Boost** (PAI, "Paying More Attention to Image", Liu et al., ECCV 2024, arXiv:2407.21771): on the
  chosen query rows (PAI: the last position, i.e. the token being generated), image-token columns
  get ``a ← a + α·|a|`` before the softmax (α = 0.2 by default), at every decoding step, in the
  chosen layers (PAI's code: every layer from the third on). It edits the pre-softmax scores
  ``a`` (``[batch, heads, query, key]``, after the scaling and the mask), reached through
  nnsight's ``.source`` at the site the adapter names (``Adapter.attention_scores_site``: the
  input of the softmax inside transformers' eager attention), so it needs the model loaded with
  ``attn_implementation="eager"`` and runs in this process only.

Positions follow :meth:`interp.EditContext.positions`. At generated steps the query is the new
token (``"all"``/``"answer"``); keys are every cached position, of which the prompt's keep their
roles (``"image"``, ``"question"`` ...) and the generated ones count as ``"answer"``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import torch
from jaxtyping import Bool
from torch import Tensor

from interp.edits import SLOT_KINDS, EditContext, Intervention, PositionSpec, check_position
from interp.errors import InterventionError
from interp.plain import Write, cut

from .common import decoder_layers

if TYPE_CHECKING:
    from interp.model import VLM


MASKED = ("eager", "sdpa")  # attention implementations that take a 4-D additive mask


def check_masked(vlm: VLM, what: str) -> None:
    """Refuse an attention implementation that takes no 4-D mask (flash attention's is 2-D,
    flex attention's a block mask) for an edit of the attention mask."""
    impl = getattr(vlm.hf.config, "_attn_implementation", None)
    if impl is not None and impl not in MASKED:
        raise InterventionError(
            f"{what} edits the attention mask, which eager and SDPA attention take as a 4-D "
            f"tensor; the model uses {impl!r}: load it with interp.load(..., "
            "attn_implementation='sdpa') or 'eager'"
        )


def check_eager(vlm: VLM, what: str) -> None:
    impl = getattr(vlm.hf.config, "_attn_implementation", None)
    if impl != "eager":
        raise InterventionError(
            f"{what} edits the attention scores, which only eager attention computes; the model "
            f"uses {impl!r}: load it with interp.load(..., attn_implementation='eager')"
        )


def attention_scores(vlm: VLM, layer: int) -> Any:
    """Inside a trace: the pre-softmax attention scores of decoder layer ``layer`` (1..L),
    ``[batch, heads, query, key]``, editable in place. Raises for a layer without the adapter's
    self-attention module (Mllama's cross-attention layers)."""
    block = vlm.layers[layer - 1]
    site = getattr(block, vlm.adapter.attention_module)
    for name in vlm.adapter.attention_scores_site:
        site = getattr(site.source, name)
    return site.input


def has_attention(vlm: VLM, layer: int) -> bool:
    """Whether decoder layer ``layer`` (1..L) has the adapter's self-attention module."""
    return hasattr(vlm.adapter.layers(vlm.hf)[layer - 1], vlm.adapter.attention_module)


def key_mask(ctx: EditContext, spec: PositionSpec, keys: int) -> Bool[Tensor, "batch key"]:
    """The ``[batch, keys]`` mask over this forward's keys: at the prompt forward the positions
    themselves; at generated step t the prompt positions followed by t generated tokens (they count
    as ``"answer"``/``"all"``), of which the last ``keys`` are attended (a sliding-window cache
    keeps only the most recent)."""
    prompt = EditContext(ctx.vlm, ctx.batch, ctx.state, 0).positions(spec)
    if ctx.step == 0:
        full = prompt
    else:
        generated = isinstance(spec, str) and spec in ("all", "answer")
        tail = torch.full(
            (prompt.shape[0], ctx.step), generated, dtype=torch.bool, device=prompt.device
        )
        full = torch.cat([prompt, tail], dim=1)
    if full.shape[1] < keys:
        raise InterventionError(
            f"the attention scores have {keys} keys but the positions cover {full.shape[1]}"
        )
    return full[:, full.shape[1] - keys :]


class _AttentionEdit(Intervention):
    steps = "all"
    keys: PositionSpec

    def __init__(self, layers: Iterable[int] | int | None, queries: PositionSpec) -> None:
        self.layers = layers if layers is None or isinstance(layers, int) else list(layers)
        self.queries = queries

    def _layers(self, vlm: VLM) -> list[int]:
        return [
            layer
            for layer in decoder_layers(vlm, self.layers, first=self._first)
            if has_attention(vlm, layer)
        ]

    _first = 1

    def _check_attention(self, vlm: VLM) -> None:
        check_eager(vlm, type(self).__name__)

    def check(self, vlm: VLM) -> None:
        self._check_attention(vlm)
        check_position(self.queries)
        check_position(self.keys)
        for spec in (self.queries, self.keys):
            kind = spec.partition(":")[0] if isinstance(spec, str) else None
            if kind in SLOT_KINDS:
                vlm.adapter.require(kind)  # ModalityError naming the family and the modality
        if not self._layers(vlm):
            raise InterventionError(
                f"{type(self).__name__}: none of the chosen layers has a "
                f"'{vlm.adapter.attention_module}' module"
            )

    def _edit(self, scores: Tensor, queries: Tensor, keys: Tensor) -> None:
        raise NotImplementedError

    def _queries(self, ctx: EditContext) -> Tensor | None:
        return ctx.positions(self.queries) if ctx.reaches(self.queries) else None

    def apply(self, ctx: EditContext) -> None:
        queries = self._queries(ctx)
        if queries is None or not bool(queries.any()):
            return
        skipped = ctx.batch.skipped_layers
        for layer in self._layers(ctx.vlm):
            if layer - 1 in skipped:
                continue
            scores = attention_scores(ctx.vlm, layer)
            keys = self._keys(ctx, scores.shape[-1])
            self._edit(scores, queries.to(scores.device), keys.to(scores.device))

    def _keys(self, ctx: EditContext, n_keys: int) -> Tensor:
        raise NotImplementedError


class Knockout(_AttentionEdit):
    """Block ``queries`` from attending to ``keys`` in ``layers``.

    Keyed by modality: ``keys="audio"`` (``"video"``, ``"image"``, ``"audio:k"`` ...) cuts the
    queries off from that modality's feature positions; ``queries="audio"`` stops those positions
    from reading anything in ``keys``. A family that does not take the modality is refused before
    compute (:class:`~interp.errors.ModalityError`).

    Args:
        keys: positions that may not be attended to: ``"image"`` (default), ``"audio"``,
            ``"video"``, ``"question"``, ``"text"``, prompt offsets, ...
        queries: positions whose attention is cut: ``"last"`` (the last prompt token; default),
            ``"all"`` (every position, generated tokens included), ``"answer"``, ``"text"``,
            ``"audio"``, ``"video"`` ...
        layers: decoder layers 1..L (default all). Layers without self-attention (Mllama's
            cross-attention layers) are skipped.
    """

    def __init__(
        self,
        keys: PositionSpec = "image",
        queries: PositionSpec = "last",
        layers: Iterable[int] | int | None = None,
    ) -> None:
        super().__init__(layers, queries)
        self.keys = keys

    # the base protocol's apply: run the lowered cuts (interp.plain.run_writes)
    apply = Intervention.apply

    def _check_attention(self, vlm: VLM) -> None:
        check_masked(vlm, "Knockout")

    def check(self, vlm: VLM) -> None:
        super().check(vlm)
        if vlm.adapter.fusion == "cross_attention" and self.keys == "image":
            raise InterventionError(
                f"{vlm.adapter.name}: the image enters through cross-attention, not through image "
                "tokens the text attends to; ablate it with interventions.AblateImage instead"
            )

    def lower(self, ctx: EditContext) -> list[Write]:
        """One cut (:func:`interp.plain.cut`) per chosen layer that runs: the query rows of this
        forward, the key positions of the prompt, and whether generated keys are cut too
        (``keys`` = ``"all"`` or ``"answer"``)."""
        queries = self._queries(ctx)
        if queries is None:
            return []
        keys = EditContext(ctx.vlm, ctx.batch, ctx.state, 0).positions(self.keys)
        generated = isinstance(self.keys, str) and self.keys in ("all", "answer")
        skipped = ctx.batch.skipped_layers
        module = ctx.vlm.adapter.attention_module
        return [
            cut(getattr(ctx.vlm.layers[layer - 1], module), queries, keys, generated)
            for layer in self._layers(ctx.vlm)
            if layer - 1 not in skipped
        ]


class AttentionBoost(_AttentionEdit):
    """PAI's image-attention boost: ``a ← a + α·|a|`` on image-token columns of the ``queries``
    rows, before the softmax, in ``layers``.

    Args:
        alpha: the boost α (PAI: 0.2).
        layers: decoder layers 1..L (default: PAI's, every layer from the third on).
        queries: the rows to boost (default ``"last"`` at the prompt forward — the position that
            predicts the first answer token — and the new token at every generated step, as PAI
            does; ``"all"`` boosts every row).
        keys: the columns to boost (default ``"image"``).
    """

    _first = 3

    def __init__(
        self,
        alpha: float = 0.2,
        layers: Iterable[int] | int | None = None,
        queries: PositionSpec = "last",
        keys: PositionSpec = "image",
    ) -> None:
        super().__init__(layers, queries)
        self.alpha = float(alpha)
        self.keys = keys

    def _keys(self, ctx: EditContext, n_keys: int) -> Tensor:
        return key_mask(ctx, self.keys, n_keys)

    def _queries(self, ctx: EditContext) -> Tensor | None:
        if ctx.step > 0 and self.queries == "last":
            return ctx.positions("all")  # PAI boosts the token being generated at every step
        return super()._queries(ctx)

    def _edit(self, scores: Tensor, queries: Tensor, keys: Tensor) -> None:
        where = queries[:, None, :, None] & keys[:, None, None, :]
        scores.add_(torch.where(where, self.alpha * scores.abs(), torch.zeros_like(scores)))


__all__ = ["AttentionBoost", "Knockout", "attention_scores", "check_eager", "key_mask"]
