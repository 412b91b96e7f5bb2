"""The real-tokenizer conformance checks' references: the ordinary questions, the conditions, one
tiny model per family built around its real checkpoint's tokenizer, template and processor settings
(:func:`get_real`: the test is skipped, naming the make target, when the tokenizers are not
fetched), and what a measurement should see — the question's words as the tokenizer decodes them,
the positions a measurement's edits see, derived without a forward. A new family's adapter is
checked against these (the suite's ``tests/families/test_real_positions.py`` and
``test_real_parity.py``)."""

from __future__ import annotations

import numpy as np
import torch
from PIL import Image

from interp.conditions import Condition
from interp.edits import Batch, EditContext
from interp.encoding import append_targets, encode, target_ids
from interp.model import VLM
from interp.samples import IMAGE_SLOT, Sample

from .real import MAKE_TARGET, RealTokenizerMissing
from .real_models import REAL_FAMILIES, real_vlm

FAMILIES = tuple(REAL_FAMILIES)
# families whose processor takes several images in one prompt (slots placed mid-sentence)
MULTI_IMAGE = tuple(a for a in FAMILIES if a not in ("instructblip", "paligemma"))

QUESTIONS = [
    "Which color is the flag?",
    "Describe the image.",
    "Provide a caption.",
    "What is the man holding?",
    "How many dogs are there?",
    "Is the door open or closed?",
    "What time does the clock show?",
    "Where was this photo taken?",
    "Why is the road wet?",
    "Who is standing on the left?",
    "What's written on the sign?",
    "Count the apples: how many are red?",
    "Is it day (or night)?",
    "What is 12 + 7?",
    "How many 3s appear in 1,234,333?",
    "Cat?",
    "Yes",
    "  Describe the image in detail.  ",
    "\tWhat animal is this?\n",
    "WHAT IS THIS?",
    'He said "stop" - why?',
    "e.g. the red one, right?",
    "What's the total cost ($4.50 + $3.25)?",
    "¿Qué color tiene el coche?",
    "Ist das ein Hund?",
    "What does the café menu say?",
    "Is there a 🐱 in the picture?",
    "这是什么？",
    "Answer with one word: what colour is the sky?",
    "What is the object in {image} made of?",
    "{image} What is shown here?",
    "Look at this: {image} Which fruit is it?",
]
# two images each, for the families that take several
TWO_IMAGE_QUESTIONS = [
    "Compare {image} and {image}: which one is bigger?",
    "Is the first image {image} brighter than the second {image}?",
]
ANSWERS = ["Red.", "Two dogs.", "It is 3:45 pm.", "yes", "A café ☕", "Blue and white"]

ASK = "Please provide a response."
INSTRUCT = "Answer briefly."
CONDITIONS = ["full", "blind", "null:black", "no_question", f"ask:{ASK}", f"instruct:{INSTRUCT}"]


def image(seed: int, height: int = 40, width: int = 48) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (height, width, 3), dtype=np.uint8), "RGB")


def samples_for(arch: str, questions: list[str] | None = None) -> list[Sample]:
    """One sample per question (one image per slot, else one image), answers cycling."""
    qs = list(QUESTIONS if questions is None else questions)
    if questions is None and arch in MULTI_IMAGE:
        qs += TWO_IMAGE_QUESTIONS
    out = []
    for i, q in enumerate(qs):
        n = max(1, q.count(IMAGE_SLOT))
        images = [image(10 * i + k) for k in range(n)]
        out.append(
            Sample(
                question=q,
                image=images if n > 1 else images[0],
                answer=ANSWERS[i % len(ANSWERS)],
                id=f"q{i}",
            )
        )
    return out


def get_real(arch: str) -> VLM:
    """The family's real-tokenizer tiny model, one per process; skips the calling pytest test when
    the tokenizers are not fetched (``make real-tokenizers``)."""
    try:
        return real_vlm(arch)
    except RealTokenizerMissing as err:
        import pytest  # only a test calls this; pytest is a development dependency

        pytest.skip(str(err) if MAKE_TARGET in str(err) else f"{err} (`make {MAKE_TARGET}`)")


def question_seen(question: str, condition: str) -> str:
    """The question text as the model sees it under ``condition`` (its question part)."""
    part = Condition.parse(condition).question
    if part is None:
        return question
    if part.name == "no_question":
        return ""
    if part.name == "ask":
        return str(part.arg)
    if part.name == "instruct":
        return f"{str(part.arg).strip()} {question}".strip()
    raise ValueError(f"no expectation for the question part {part}")


def expected_question(question: str, condition: str) -> str:
    """The question's words: pieces around image slots joined by one space, whitespace runs
    collapsed."""
    text = question_seen(question, condition)
    return " ".join(" ".join(text.replace(IMAGE_SLOT, " ").split()).split())


def runs(mask: torch.Tensor) -> list[tuple[int, int]]:
    """Contiguous True runs ``[start, end)`` of a 1-D mask."""
    out, start = [], None
    for i, on in enumerate(mask.tolist() + [False]):
        if on and start is None:
            start = i
        elif not on and start is not None:
            out.append((start, i))
            start = None
    return out


def decoded_runs(tok, ids: list[int], mask: torch.Tensor) -> str:
    """Each selected run decoded by the tokenizer, joined by one space, whitespace runs collapsed
    to one space (templates separate the pieces of a question with a space or a newline)."""
    return " ".join(" ".join(tok.decode(ids[a:b]).split()) for a, b in runs(mask)).strip()


def image_token_of(arch: str) -> str:
    """The family's image placeholder token as a string (what the processor expands)."""
    named = REAL_FAMILIES[arch].named
    return named.get("image_token") or named.get("context_image_token") or "<image>"


def edit_positions(
    vlm: VLM, samples: list[Sample], condition: str, with_answers: bool
) -> tuple[EditContext, torch.Tensor]:
    """The prompt-forward :class:`EditContext` of a measurement over ``samples`` (a teacher-forced
    ``score`` batch with ``with_answers``), built as the measurements build it, without running
    the model; and the traced input ids."""
    cond = Condition.parse(condition)
    enc = encode(vlm, samples, cond)
    batch = Batch(vlm, enc, list(samples), cond, kind="score" if with_answers else "forward")
    if with_answers:
        traced, positions, valid = append_targets(
            vlm, enc, target_ids(vlm, [s.answer for s in samples])
        )
        answer = torch.zeros_like(traced.image_mask)
        rows = torch.arange(len(samples))[:, None].expand_as(positions)
        answer[rows[valid], positions[valid]] = True
        batch = Batch(
            vlm, enc, list(samples), cond, kind="score", traced=traced, answer_mask=answer
        )
    assert batch.traced is not None
    return EditContext(vlm, batch, state=None), batch.traced.input_ids


__all__ = [
    "ANSWERS",
    "CONDITIONS",
    "FAMILIES",
    "MULTI_IMAGE",
    "QUESTIONS",
    "TWO_IMAGE_QUESTIONS",
    "decoded_runs",
    "edit_positions",
    "expected_question",
    "get_real",
    "image_token_of",
    "image",
    "question_seen",
    "runs",
    "samples_for",
]
