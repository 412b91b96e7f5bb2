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
  chosen layers (PAI's code: every layer from the third on), ``a`` the pre-softmax scores
  (``[batch, heads, query, key]``, after the scaling and the mask). It lowers to plain data
  (:func:`interp.plain.boost`): the block recomputes each chosen layer's attention from the
  inputs of its attention call (nnsight's ``.source``, the call the adapter's
  ``attention_scores_site`` names) as eager attention computes it, with the boost, and replaces
  the call's output — so it runs with eager or SDPA attention and on NDIF.

Positions follow :meth:`interp.EditContext.positions`. At generated steps the query is the new
token (``"all"``/``"answer"``); keys are every cached position, of which the prompt's keep their
roles (``"image"``, ``"question"`` ...) and the generated ones count as ``"answer"``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from torch import Tensor

from interp.edits import SLOT_KINDS, EditContext, Intervention, PositionSpec, check_position
from interp.errors import InterventionError
from interp.plain import Write, boost, cut

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

    def check(self, vlm: VLM) -> None:
        check_masked(vlm, type(self).__name__)
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

    def _queries(self, ctx: EditContext) -> Tensor | None:
        return ctx.positions(self.queries) if ctx.reaches(self.queries) else None

    def _sites(self, ctx: EditContext) -> tuple[Tensor, Tensor, bool, list[Any]] | None:
        """What a lowering needs: the query rows of this forward (None: none reached), the
        prompt's key positions, whether generated keys count (``"all"``/``"answer"``), and the
        attention module of every chosen layer that runs."""
        queries = self._queries(ctx)
        if queries is None:
            return None
        keys = EditContext(ctx.vlm, ctx.batch, ctx.state, 0).positions(self.keys)
        generated = isinstance(self.keys, str) and self.keys in ("all", "answer")
        skipped = ctx.batch.skipped_layers
        module = ctx.vlm.adapter.attention_module
        modules = [
            getattr(ctx.vlm.layers[layer - 1], module)
            for layer in self._layers(ctx.vlm)
            if layer - 1 not in skipped
        ]
        return queries, keys, generated, modules


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
        found = self._sites(ctx)
        if found is None:
            return []
        queries, keys, generated, modules = found
        return [cut(module, queries, keys, generated) for module in modules]


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

    def _queries(self, ctx: EditContext) -> Tensor | None:
        if ctx.step > 0 and self.queries == "last":
            return ctx.positions("all")  # PAI boosts the token being generated at every step
        return super()._queries(ctx)

    def lower(self, ctx: EditContext) -> list[Write]:
        """One boost (:func:`interp.plain.boost`) per chosen layer that runs: the query rows of
        this forward, the prompt's key columns, α."""
        found = self._sites(ctx)
        if found is None:
            return []
        queries, keys, generated, modules = found
        call = ctx.vlm.adapter.attention_scores_site[0]
        return [boost(m, call, queries, keys, self.alpha, generated) for m in modules]


__all__ = ["AttentionBoost", "Knockout", "attention_scores", "check_eager", "check_masked"]
