"""Image edits restricted to some image tokens per row: the occlusion of one region of the picture.

Why: occlusion maps ablate (or null-swap) the image tokens of one region at a time and measure the
change of the answer's log-probability. :class:`AblateImageTokens` and :class:`SwapImageTokens` are
:class:`~interventions.AblateImage` and :class:`~interventions.SwapImage` whose edit touches, in each
row, only the image tokens named for that row's sample; rows whose sample is not named are left
alone. So one batch can hold the unedited row of a sample and one row per region (copies of the
sample under distinct ids), scored in one forward.

Tokens are named by their **rank among the row's image tokens** (0 = the row's first image token,
in prompt order), which does not depend on padding or batching: ``np.searchsorted(image_positions,
region_positions)`` converts prompt positions of a sample encoded alone (e.g.
:meth:`interp.TokenRegions.grid`) into ranks. Token fusion only (the image enters at the decoder
input; Qwen3-VL's DeepStack features are edited at the same tokens); cross-attention fusion (Mllama)
has no image tokens in the prompt and is refused.

Usage::

    edit = AblateImageTokens({"s1#r0": [0, 1, 2], "s1#r1": [3, 4]})
    interp.score(vlm, rows, targets, edits=[edit])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from jaxtyping import Bool
from torch import Tensor

from interp.edits import EditContext, digest
from interp.encoding import Encoding
from interp.errors import InterventionError
from interp.plain import Write

from .features import AblateImage, SwapImage
from .image import ABLATION_MODES, ImageInputs, image_position_mask, image_writes

if TYPE_CHECKING:
    from interp.edits import Batch
    from interp.model import VLM

TokenMap = Mapping[str, Sequence[int]]


def _check_tokens(tokens: Any, what: str) -> dict[str, tuple[int, ...]]:
    if not isinstance(tokens, Mapping) or not tokens:
        raise InterventionError(
            f"{what} needs a non-empty mapping sample id -> image-token ranks, got {tokens!r}"
        )
    out: dict[str, tuple[int, ...]] = {}
    for key, ranks in tokens.items():
        arr = np.asarray(ranks, dtype=np.int64).ravel()
        if arr.size and arr.min() < 0:
            raise InterventionError(f"{what}: sample {key!r} has a negative image-token rank")
        out[str(key)] = tuple(int(r) for r in np.unique(arr))
    return out


def selected_tokens(
    enc: Encoding, samples: Sequence[Any], tokens: Mapping[str, Sequence[int]], what: str
) -> Bool[Tensor, " n"]:
    """Over the batch's image positions (row, then position order), True at those named for the
    row's sample.

    Raises:
        InterventionError: a rank beyond the row's image tokens.
    """
    counts = enc.image_mask.sum(dim=1).tolist()
    parts = []
    for row, count in enumerate(counts):
        mine = torch.zeros(int(count), dtype=torch.bool)
        ranks = tokens.get(str(samples[row].id), ())
        if ranks and max(ranks) >= count:
            raise InterventionError(
                f"{what}: sample {samples[row].id!r} names image token {max(ranks)}, but its row "
                f"has {int(count)} image tokens"
            )
        mine[list(ranks)] = True
        parts.append(mine)
    return torch.cat(parts) if parts else torch.zeros(0, dtype=torch.bool)


def _check_fusion(vlm: VLM, what: str) -> None:
    if vlm.adapter.fusion == "cross_attention":
        raise InterventionError(
            f"{what}: {vlm.adapter.name} feeds the image through cross-attention, so its prompt "
            "has no image tokens to select; use AblateImage / SwapImage on the whole image"
        )


class AblateImageTokens(AblateImage):
    """:class:`~interventions.AblateImage` on the named image tokens of each row only.

    Args:
        tokens: sample id → ranks of the image tokens to ablate (see the module docstring); rows
            of other samples are left alone.
        mode: ``"zero"`` (the tokens' vectors set to 0) or ``"mean"`` (each replaced by the mean
            over all of its row's image tokens).
    """

    def __init__(self, tokens: TokenMap, mode: str = "zero") -> None:
        if mode not in ABLATION_MODES:  # before the parent's typed signature sees it
            raise InterventionError(f"unknown ablation mode {mode!r}; use one of {ABLATION_MODES}")
        super().__init__(mode)  # type: ignore[arg-type]
        self.tokens = _check_tokens(tokens, "AblateImageTokens")

    def check(self, vlm: VLM) -> None:
        super().check(vlm)
        _check_fusion(vlm, "AblateImageTokens")

    def fingerprint(self) -> dict[str, Any]:
        return {
            "type": "interventions.regions.AblateImageTokens",
            "params": digest({"mode": self.mode, "tokens": self.tokens}),
        }

    def lower(self, ctx: EditContext) -> list[Write]:
        enc = ctx.batch.traced
        assert enc is not None
        sel = selected_tokens(enc, ctx.batch.samples, self.tokens, "AblateImageTokens")
        if not bool(sel.any()):
            return []
        chosen = sel.float()[:, None]  # the chosen tokens take 0 or their row's mean; others kept
        mean = chosen if self.mode == "mean" else None
        return image_writes(ctx.vlm, enc, keep=1.0 - chosen, mean=mean)


class SwapImageTokens(SwapImage):
    """:class:`~interventions.SwapImage` on the named image tokens of each row only: those take
    the source image's vectors at the same ranks (by default a black image's), the rest keep
    their own.

    Args:
        tokens: sample id → ranks of the image tokens to swap; rows of other samples are left
            alone.
        source: an image condition with the same layout as the traced images.
    """

    def __init__(self, tokens: TokenMap, source: str = "null:black") -> None:
        super().__init__(source)
        self.tokens = _check_tokens(tokens, "SwapImageTokens")

    def check(self, vlm: VLM) -> None:
        super().check(vlm)
        _check_fusion(vlm, "SwapImageTokens")

    def fingerprint(self) -> dict[str, Any]:
        return {
            "type": "interventions.regions.SwapImageTokens",
            "params": digest({"source": self.source, "tokens": self.tokens}),
        }

    def prepare(self, vlm: VLM, batch: Batch) -> Any:
        named = [str(s.id) in self.tokens for s in batch.samples]
        if not any(named):
            return None
        return super().prepare(vlm, batch)

    def lower(self, ctx: EditContext) -> list[Write]:
        state: ImageInputs | None = ctx.state
        if state is None:
            return []
        enc = ctx.batch.traced
        assert enc is not None
        sel = selected_tokens(enc, ctx.batch.samples, self.tokens, "SwapImageTokens")
        if not bool(sel.any()):
            return []
        n = int(image_position_mask(ctx.vlm, enc).sum())
        if len(state) != n:
            raise InterventionError(
                f"SwapImageTokens: the source has {len(state)} image vectors for {n} positions"
            )
        chosen = sel[:, None]  # the chosen tokens take the source's vectors, the others their own

        def pick(src: Tensor) -> Tensor:
            return torch.where(chosen.to(src.device), src, torch.zeros((), dtype=src.dtype))

        return image_writes(
            ctx.vlm,
            enc,
            keep=1.0 - chosen.float(),
            value=pick(state.embeddings),
            deep=[pick(f) for f in state.deepstack],
        )


__all__ = ["AblateImageTokens", "SwapImageTokens", "selected_tokens"]
