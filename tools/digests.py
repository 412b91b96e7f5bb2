"""Digests of what :func:`interp.encode` gives on every tiny architecture under every condition
the test-suite uses: each tensor of each batch (sha256 of its bytes, with its dtype and shape),
the text fields, and every named position's index list.

A stored copy (``tests/fixtures/encoding_digests.json``) was taken before the encoding path was
split into stages; ``tests/core/test_encoding_digests.py`` recomputes and compares it, so any
change of what the model sees, or where a named position falls, shows up as a named difference.

Run ``python -m tools.digests [--arch A ...] [--out PATH]`` to (re)write the fixture.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
import transformers
from PIL import Image

from interp.samples import Sample
from interp.testing.tiny import ARCHITECTURES, MEDIA_ARCHITECTURES, shared_tiny_vlm

from .conformance import ASK, CONDITIONS, INSTRUCT, samples_for

MADE_UNDER = "_transformers"  # the fixture's key for the transformers version it was made under
FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "encoding_digests.json"

# image and question parts (every architecture), on the conformance samples
IMAGE_CONDITIONS: tuple[str, ...] = (
    *CONDITIONS,
    "null:white",
    "null:noise",
    "null:mean",
    "swap:next",
    "swap:q1+no_question",
    "distort:500",
    "blind+no_question",
    f"null:black+ask:{ASK}",
    f"blind+instruct:{INSTRUCT}",
)
AUDIO_CONDITIONS: tuple[str, ...] = (
    "full",
    "no_audio",
    "null_audio:silence",
    "null_audio:noise",
    "null_audio:mean",
    "swap_audio:next",
    "distort_audio:10",
    "blind+no_audio+no_question",
)
VIDEO_CONDITIONS: tuple[str, ...] = (
    "full",
    "no_video",
    "null_video:black",
    "null_video:mean",
    "frames:2",
    "shuffle_frames",
    "still:0",
    "swap_video:next",
    "no_video+no_question",
)
POSITIONS: tuple[Any, ...] = (
    "all",
    "prompt",
    "last",
    "image",
    "audio",
    "video",
    "text",
    "question",
    "image:0",
    "image:1",
    "audio:0",
    "audio:1",
    "video:0",
    0,
    -1,
    -2,
)
# parts that need an input of their kind: also run on the rows that carry one
NEEDS_AUDIO: tuple[str, ...] = ("distort_audio:10",)
NEEDS_VIDEO: tuple[str, ...] = ("frames:2", "shuffle_frames", "still:0")
RATE = 16000


def _wave(seconds: float, seed: int, rate: int = RATE) -> np.ndarray:
    return np.random.default_rng(seed).normal(0, 0.1, int(seconds * rate)).astype(np.float32)


def _clip(frames: int, h: int, w: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (frames, h, w, 3), dtype=np.uint8)


def media_samples(modalities: Sequence[str]) -> list[Sample]:
    """Rows with audio and/or video (in slots and not), an image, and text alone."""
    rng = np.random.default_rng(5)
    image = Image.fromarray(rng.integers(0, 256, (32, 48, 3), dtype=np.uint8), "RGB")
    rows = [
        Sample("what is it ?", image=image, id="i0"),
        Sample("what color is the sky ?", id="t0"),
    ]
    if "audio" in modalities:
        rows += [
            Sample("what is this sound ?", audio=(_wave(0.4, 0), RATE), id="a0"),
            Sample(
                "is {audio} the same as {audio} ?",
                audio=[(_wave(0.3, 1), RATE), (_wave(0.6, 2), RATE)],
                id="a1",
            ),
            Sample("describe it", audio=(_wave(0.5, 3, 8000), 8000), id="a2"),
        ]
    if "video" in modalities:
        rows += [
            Sample("what happens {video} here ?", video=_clip(4, 32, 32, 0), id="v0"),
            Sample("describe the video", video=_clip(4, 32, 48, 1), id="v1"),
            Sample("which way ?", video=_clip(2, 32, 32, 2), id="v2"),
        ]
    return rows


def _tensor(value: torch.Tensor) -> str:
    t = value.detach().to("cpu").contiguous()
    raw = t.view(torch.uint8) if t.dtype == torch.bfloat16 else t
    data = raw.numpy().tobytes()
    return f"{t.dtype}:{tuple(t.shape)}:{hashlib.sha256(data).hexdigest()[:32]}"


def _value(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return _tensor(value)
    if isinstance(value, (list, tuple)):
        return [_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _value(v) for k, v in sorted(value.items())}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if hasattr(value, "__dataclass_fields__"):
        return {k: _value(getattr(value, k)) for k in sorted(value.__dataclass_fields__)}
    return repr(value)


def _positions(vlm: Any, enc: Any, samples: list[Sample], condition: str) -> dict[str, Any]:
    from interp.conditions import Condition
    from interp.edits import Batch, EditContext
    from interp.encoding import image_slot_mask, question_mask
    from interp.tracing import resolve_positions

    batch = Batch(vlm, enc, samples, Condition.parse(condition))
    ctx = EditContext(vlm, batch, None)
    out: dict[str, Any] = {}
    for spec in POSITIONS:
        try:
            mask = ctx.positions(spec)
            out[str(spec)] = [row.nonzero().flatten().tolist() for row in mask.cpu()]
        except Exception as err:  # the failure and its message are part of the behaviour
            out[str(spec)] = f"{type(err).__name__}: {err}"
    for name, fn in (
        ("question_mask", lambda: question_mask(vlm, enc)),
        ("image_slot_mask:0", lambda: image_slot_mask(enc, 0)),
    ):
        try:
            out[name] = [row.nonzero().flatten().tolist() for row in fn().cpu()]
        except Exception as err:
            out[name] = f"{type(err).__name__}: {err}"
    for spec in ("last", -2):
        try:
            out[f"resolve_positions:{spec}"] = resolve_positions(enc, spec).tolist()
        except Exception as err:
            out[f"resolve_positions:{spec}"] = f"{type(err).__name__}: {err}"
    return out


def encoding_dump(vlm: Any, samples: list[Sample], condition: str) -> Any:
    """Every batch :func:`interp.encoding.batches` forms (batch size 4): its row indices, each
    field of its :class:`~interp.Encoding` (tensors as digests) and its named positions; or the
    error the condition raises on these samples."""
    from interp.encoding import batches

    try:
        out = []
        for idx, enc in batches(vlm, samples, condition, 4):
            fields = {
                k: _value(getattr(enc, k))
                for k in sorted(enc.__dataclass_fields__)
                if k != "inputs"
            }
            fields["inputs"] = _value(enc.inputs)
            rows = [samples[i] for i in idx]
            out.append(
                {
                    "rows": idx,
                    "encoding": fields,
                    "positions": _positions(vlm, enc, rows, condition),
                }
            )
        return out
    except Exception as err:
        return f"{type(err).__name__}: {err}"


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def fold(dump: Any) -> Any:
    """An :func:`encoding_dump` folded to one short digest per field and per named position (over
    all batches), with the batches' row indices kept as they are; an error stays its text."""
    if isinstance(dump, str):
        return dump
    out: dict[str, Any] = {"rows": [b["rows"] for b in dump]}
    for key in dump[0]["encoding"]:
        out[f"encoding.{key}"] = _short([b["encoding"][key] for b in dump])
    for key in dump[0]["positions"]:
        out[f"positions.{key}"] = _short([b["positions"][key] for b in dump])
    return out


def dumps(arch: str) -> dict[str, Any]:
    """``{"<rows>/<condition>": encoding_dump}`` of one architecture: the image conditions on the
    conformance samples; the audio and video conditions on rows with and without audio and
    video, and the parts that need an input on the rows that carry one."""
    vlm = shared_tiny_vlm(arch)
    found: dict[str, Any] = {}
    if "image" in vlm.adapter.modalities:
        images = samples_for(arch)
        for cond in IMAGE_CONDITIONS:
            found[f"images/{cond}"] = encoding_dump(vlm, images, cond)
    media = [m for m in ("audio", "video") if m in vlm.adapter.modalities]
    if not media:
        return found
    rows = media_samples(media)
    if "image" not in vlm.adapter.modalities:
        rows = [r for r in rows if not r.has_image]
    conds = [
        *(AUDIO_CONDITIONS if "audio" in media else ()),
        *(VIDEO_CONDITIONS if "video" in media else ()),
    ]
    for cond in dict.fromkeys(conds):
        found[f"media/{cond}"] = encoding_dump(vlm, rows, cond)
    for kind, conds in (("audio", NEEDS_AUDIO), ("video", NEEDS_VIDEO)):
        carriers = [r for r in rows if (r.has_audio if kind == "audio" else r.has_video)]
        if kind in media:
            for cond in conds:
                found[f"{kind}-rows/{cond}"] = encoding_dump(vlm, carriers, cond)
    return found


def digests(archs: Sequence[str] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """``({arch: {key: digest}}, {arch: {key: dump}})`` for ``archs`` (default: every tiny
    one)."""
    folded: dict[str, Any] = {}
    full: dict[str, Any] = {}
    for arch in archs or (*ARCHITECTURES, *MEDIA_ARCHITECTURES):
        full[arch] = dumps(arch)
        folded[arch] = {key: fold(dump) for key, dump in full[arch].items()}
    return folded, full


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", action="append", help="only these architectures")
    parser.add_argument("--out", type=Path, default=FIXTURE)
    parser.add_argument("--dump", type=Path, help="also write every field here (not folded)")
    args = parser.parse_args(argv)
    found, full = digests(args.arch)
    if args.dump:
        args.dump.write_text(json.dumps(full, indent=1, sort_keys=True) + "\n")
    if args.out.exists() and args.arch:
        found = {**json.loads(args.out.read_text()), **found}
    found[MADE_UNDER] = transformers.__version__
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
    print(f"wrote {args.out} ({len(found)} architectures)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
