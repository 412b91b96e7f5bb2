"""Hugging Face's own chat pipeline as the reference for what a family is fed.

The conversations are built by hand, as a model card writes them (the images, with slots where
they stand in the question, then the question; no text item for an empty question beside images),
and run through ``processor.apply_chat_template(conversations, tokenize=True, return_dict=True,
add_generation_prompt=True, padding=True)``; the library's encoded batch must equal that output in
``input_ids``, ``attention_mask`` and every other processor output. Documented differences:
LLaVA-NeXT-Mistral's template writes a turn's text items back to back, so a question with image
slots has its images first and its pieces joined by one space (``interp.prompts.chat_prompt``);
PaliGemma has no chat template (the reference is its processor called on the question, as its
model card does), and its blind prompt is the image prompt with the image tokens removed (the
stock processor needs an image). A null image is the library's (the condition's substitute is
not what this checks).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ..conditions import Condition
from ..conditions.apply import prepare
from ..samples import IMAGE_SLOT, Sample

CHAT_CONDITIONS = [
    "full",
    "blind",
    "no_question",
    "null:black",
    "ask:Please provide a response.",
    "instruct:Be brief.",
]
# templates that write a turn's text items with nothing between them
GLUES_TEXT = {"llava_next_mistral"}


def text_seen(question: str, condition: str) -> str:
    """The question text under ``condition``'s question part, as a user would write it."""
    part = Condition.parse(condition).question
    if part is None:
        return question
    if part.name == "no_question":
        return ""
    if part.name == "ask":
        return str(part.arg)
    return f"{part.arg} {question.strip()}"  # the instruction, one space, the question


def conversation(arch: str, question: str, images: list, condition: str) -> list[dict]:
    """One user turn as a model card writes it: the images (with slots, where they stand in the
    question), then the question; no text item for an empty question beside images."""
    text = text_seen(question, condition)
    pieces = [p.strip() for p in text.split(IMAGE_SLOT)]
    content: list[dict] = []
    if images and len(pieces) - 1 == len(images) and arch not in GLUES_TEXT:
        for k, piece in enumerate(pieces):
            if piece:
                content.append({"type": "text", "text": piece})
            if k < len(images):
                content.append({"type": "image", "image": images[k]})
    else:
        content = [{"type": "image", "image": im} for im in images]
        joined = " ".join(p for p in pieces if p)
        if joined or not content:
            content.append({"type": "text", "text": joined})
    return [{"role": "user", "content": content}]


def hf_inputs(vlm: Any, arch: str, samples: list[Sample], condition: str) -> dict:
    """Hugging Face's own pipeline on the hand-built conversations (the condition's images are
    the library's: a null image is a documented substitute, not part of this check)."""
    cond = Condition.parse(condition)
    rows = prepare(samples, cond, vlm.processor, all_samples=samples)
    convs = [
        conversation(arch, s.question, list(p.images), condition) for s, p in zip(samples, rows)
    ]
    return dict(
        vlm.processor.apply_chat_template(
            convs,
            add_generation_prompt=True,
            tokenize=True,
            return_dict=True,
            padding=True,
            return_tensors="pt",
        )
    )


def paligemma_inputs(vlm: Any, samples: list[Sample], condition: str) -> dict:
    """PaliGemma's model-card call: the processor on the question and the image; blind: the same
    with the image tokens and pixels removed, re-padded on the left."""
    cond = Condition.parse(condition)
    rows = prepare(samples, cond, vlm.processor, all_samples=samples)
    blind = not cond.uses_image
    texts = [
        " ".join(text_seen(s.question, condition).replace(IMAGE_SLOT, " ").split()) for s in samples
    ]
    images = [list(p.images) for p in rows]
    if blind:
        images = [[np.zeros((32, 32, 3), np.uint8)] for _ in samples]
    out = dict(vlm.processor(text=texts, images=images, padding=True, return_tensors="pt"))
    out.pop("labels", None)  # training labels, which no measurement passes
    if blind:
        ids, mask = out["input_ids"], out["attention_mask"]
        keep = (ids != vlm.image_token_id) & mask.bool()
        width = int(keep.sum(1).max())
        new = {}
        for key in ("input_ids", "attention_mask", "token_type_ids"):
            if key not in out:
                continue
            fill = vlm.tokenizer.pad_token_id if key == "input_ids" else 0
            value = torch.full((len(samples), width), fill, dtype=out[key].dtype)
            for r in range(len(samples)):
                kept = out[key][r][keep[r]]
                value[r, width - len(kept) :] = kept
            new[key] = value
        out = new
    return out


def assert_same_inputs(vlm: Any, got: dict, want: dict, where: str) -> None:
    got = {k: v.cpu() if isinstance(v, torch.Tensor) else v for k, v in got.items()}
    tensors = {k for k, v in want.items() if isinstance(v, torch.Tensor)}
    missing = tensors - set(got)
    assert not missing, f"{where}: the library's batch lacks {sorted(missing)}"
    extra = {k for k, v in got.items() if isinstance(v, torch.Tensor)} - tensors
    assert not extra, f"{where}: the library's batch adds {sorted(extra)}"
    ids, ref = got["input_ids"], want["input_ids"]
    if ids.shape != ref.shape or not torch.equal(ids, ref):
        tok = vlm.tokenizer
        for r in range(ref.shape[0]):
            a = [t for t, m in zip(ids[r].tolist(), got["attention_mask"][r].tolist()) if m]
            b = [t for t, m in zip(ref[r].tolist(), want["attention_mask"][r].tolist()) if m]
            if a != b:
                raise AssertionError(
                    f"{where}, row {r}: input_ids differ from Hugging Face's chat pipeline\n"
                    f"  library: {tok.decode(a)!r}\n  HF:      {tok.decode(b)!r}"
                )
        raise AssertionError(f"{where}: input_ids differ in padding ({ids.shape} vs {ref.shape})")
    for key in sorted(tensors - {"input_ids"}):
        a, b = got[key], want[key]
        assert a.shape == b.shape, f"{where}: {key} has shape {tuple(a.shape)}, HF {tuple(b.shape)}"
        # ids, masks and grids exactly; pixels too (they pass through the model dtype, fp32 here)
        assert torch.equal(a.to(b.dtype), b), f"{where}: {key} differs from Hugging Face's"


def no_doubled_bos(vlm: Any, ids: torch.Tensor, mask: torch.Tensor, where: str) -> None:
    """No two BOS tokens in a row among the attended tokens (padding may be the BOS token)."""
    bos = vlm.tokenizer.bos_token_id
    if bos is None:
        return
    for r, (row, keep) in enumerate(zip(ids.tolist(), mask.tolist())):
        seen = [t for t, m in zip(row, keep) if m]
        pairs = sum(a == b == bos for a, b in zip(seen, seen[1:]))
        assert pairs == 0, f"{where}, row {r}: two BOS tokens in a row"


__all__ = [
    "CHAT_CONDITIONS",
    "GLUES_TEXT",
    "assert_same_inputs",
    "conversation",
    "hf_inputs",
    "no_doubled_bos",
    "paligemma_inputs",
    "text_seen",
]
