"""Contrastive decoding's side of :func:`interp.generate`: :func:`check_decoding` validates a
decoding method against the model, the condition and the samples before any compute, and
:func:`contrast_batch` encodes a batch's expert rows followed by one block of the same samples
per amateur condition, which :func:`interp.generation.generate_batch` runs in one forward per
step."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .conditions import Condition
from .conditions.apply import carries, video_frames
from .edits import Batch, Decoding
from .encoding import encode
from .errors import DecodingError
from .samples import Sample

if TYPE_CHECKING:
    from .model import VLM


def check_decoding(
    vlm: VLM, condition: Condition, decoding: Decoding, samples: Sequence[Sample]
) -> None:
    """Validate a decoding method against the model, the condition and the samples, before any
    compute.

    Raises:
        DecodingError: no amateur, an amateur equal to the expert's condition, or a family that
            cannot run a sample's expert and amateur inputs in one forward (one with an image,
            audio or video, the other without, where the adapter's ``mixed_batches`` /
            ``mixed_audio`` / ``mixed_video`` is False), or, where the adapter stacks a forward's
            videos, expert and amateur videos of different frame counts.
    """
    if not isinstance(decoding, Decoding):
        raise DecodingError(
            f"decoding must be an interp.Decoding (e.g. interventions.decoding.vcd()), got "
            f"{type(decoding).__name__}"
        )
    if not decoding.amateurs:
        raise DecodingError(f"{decoding!r} has no amateur condition")
    for amateur in decoding.amateurs:
        if amateur == condition:
            raise DecodingError(
                f"the amateur condition {str(amateur)!r} equals the expert's condition: the "
                "contrast would be zero; give an amateur that removes or degrades something "
                "(e.g. 'blind', 'distort:500')"
            )
        kinds = (("image", "an image"), ("audio", "audio"), ("video", "a video"))
        for kind, noun in kinds:
            if vlm.adapter.mixed(kind):
                continue
            for s in samples:
                expert_has, amateur_has = carries(s, condition, kind), carries(s, amateur, kind)
                if expert_has != amateur_has:

                    def says(flag: bool, noun: str = noun) -> str:
                        return f"carries {noun}" if flag else "carries none"

                    keep = (
                        "e.g. 'null:black' or 'distort:500'"
                        if kind == "image"
                        else f"e.g. 'null_{kind}:{'silence' if kind == 'audio' else 'black'}'"
                    )
                    raise DecodingError(
                        f"{vlm.adapter.name} cannot run rows with and without {noun} in one "
                        "forward, and contrastive decoding runs the expert and amateur inputs in "
                        f"one batch (sample {s.id!r}: its input under {str(condition)!r} "
                        f"{says(expert_has)}, under the amateur {str(amateur)!r} "
                        f"{says(amateur_has)}). Use an amateur that keeps the {kind}, {keep}."
                    )
        if vlm.adapter.stacked_videos:
            for s in samples:
                expert, other = (
                    video_frames(s, c, vlm.processor, all_samples=samples)
                    for c in (condition, amateur)
                )
                if expert and other and expert != other:
                    raise DecodingError(
                        f"{vlm.adapter.name} stacks a forward's videos, so they need one frame "
                        f"count, and contrastive decoding runs the expert and amateur inputs in one "
                        f"batch (sample {s.id!r}: {list(expert)} frames under {str(condition)!r}, "
                        f"{list(other)} under the amateur {str(amateur)!r}). Use an amateur that "
                        "keeps the frame count, e.g. 'shuffle_frames', 'still:0' or "
                        "'null_video:black'."
                    )
    decoding.check(vlm)


def contrast_batch(
    vlm: VLM,
    samples: Sequence[Sample],
    condition: Condition,
    decoding: Decoding,
    all_samples: Sequence[Sample],
    *,
    trace_options: Mapping[str, Any] | None = None,
) -> Batch:
    """One batch of contrastive decoding: the samples under ``condition`` (the expert rows),
    then the same samples under each amateur condition, encoded together (``trace_options``: the
    measurement's nnsight keywords, see :attr:`Batch.trace_options`)."""
    rows = list(samples) * (1 + len(decoding.amateurs))
    conds = [condition] * len(samples)
    for amateur in decoding.amateurs:
        conds += [amateur] * len(samples)
    enc = encode(vlm, rows, conds, all_samples=all_samples)
    return Batch(
        vlm,
        enc,
        rows,
        condition,
        "generate",
        list(all_samples),
        experts=len(samples),
        conditions=conds,
        trace_options=dict(trace_options or {}),
    )


__all__ = ["check_decoding", "contrast_batch"]
