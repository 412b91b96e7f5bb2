"""Named positions on every family with its real tokenizer, chat template and processor settings.

For ordinary questions (capitalised first words, punctuation, digits, one word, unicode, leading
and trailing spaces, image slots mid-sentence, two images where the family takes several), under
every kind of condition and with a teacher-forced answer, the positions an edit sees as
``"question"``, ``"answer"`` and ``"image"`` must select exactly the question's words, the answer
and the image tokens: checked by decoding the selected ids with the tokenizer itself. No forward
runs, so every question goes through every family.
"""

from __future__ import annotations

import pytest
import torch

from interp.conditions import Condition
from interp.encoding import encode
from interp.samples import Sample
from interp.testing.chat_reference import (
    CHAT_CONDITIONS,
    assert_same_inputs,
    hf_inputs,
    no_doubled_bos,
    paligemma_inputs,
)
from tools.conformance import (
    CONDITIONS,
    FAMILIES,
    MULTI_IMAGE,
    decoded_runs,
    edit_positions,
    expected_question,
    get_real,
    image_token_of,
    samples_for,
)


@pytest.mark.parametrize("condition", CONDITIONS)
@pytest.mark.parametrize("arch", FAMILIES)
def test_question_answer_and_image_positions_decode_to_their_text(arch, condition):
    vlm = get_real(arch)
    tok = vlm.tokenizer
    samples = samples_for(arch)
    ctx, ids = edit_positions(vlm, samples, condition, with_answers=True)
    question, answer, image = (ctx.positions(n) for n in ("question", "answer", "image"))
    image_id = tok.convert_tokens_to_ids(image_token_of(arch))
    uses_image = Condition.parse(condition).uses_image
    failures = []
    for row, s in enumerate(samples):
        row_ids = ids[row].tolist()
        want = expected_question(s.question, condition)
        got = decoded_runs(tok, row_ids, question[row])
        if got != want:
            failures.append(f"question {s.question!r}: selected {got!r}, want {want!r}")
        got_answer = decoded_runs(tok, row_ids, answer[row])
        if got_answer != " ".join(s.answer.split()):
            failures.append(f"answer of {s.question!r}: selected {got_answer!r}")
        selected = [row_ids[i] for i in image[row].nonzero()[:, 0].tolist()]
        n_image = sum(t == image_id for t in row_ids)
        if set(selected) - {image_id} or len(selected) != n_image or (n_image > 0) != uses_image:
            failures.append(f"image positions of {s.question!r}: {len(selected)} of {n_image}")
        if len(s.images) > 1 and uses_image:  # 'image:k': the k-th image's tokens, in order
            first, second = ctx.positions("image:0")[row], ctx.positions("image:1")[row]
            ordered = first.nonzero().max() < second.nonzero().min() if first.any() else False
            if not ordered or not torch.equal(first | second, image[row]) or (first & second).any():
                failures.append(f"'image:0' / 'image:1' of {s.question!r}")
        if (question[row] & answer[row]).any() or (question[row] & image[row]).any():
            failures.append(f"overlapping positions in {s.question!r}")
    assert not failures, f"{arch} under {condition!r}:\n" + "\n".join(failures)


def test_llava_1_5_has_its_published_576_image_tokens():
    """LLaVA-1.5 at its published 336 px / patch 14 with the CLS token dropped."""
    vlm = get_real("llava")
    ctx, ids = edit_positions(vlm, samples_for("llava", ["Describe the image."]), "full", False)
    assert int(ctx.positions("image").sum()) == 576
    assert vlm.image_token_id == 32000 and vlm.tokenizer.pad_token_id == 32001


def test_exact_tokenizers_keep_the_checkpoints_token_ids():
    """Where the tokenizer is the checkpoint's own, the VLM's tokens have its published ids."""
    mistral = get_real("llava_next_mistral")
    assert mistral.image_token_id == 32000 and mistral.tokenizer.pad_token_id == 32001
    assert get_real("mllama").image_token_id == 128256
    assert get_real("qwen2_vl").image_token_id == 151655
    assert get_real("qwen3_vl").tokenizer.convert_tokens_to_ids("<|vision_start|>") == 151652


def test_mistral_tokenizer_equals_its_sentencepiece_model():
    """The converted Mistral tokenizer gives SentencePiece's own ids, and a LLaVA-NeXT-Mistral
    prompt the ids of the original LLaVA (each text chunk around ``<image>`` encoded on its own,
    so the text after the image starts with a "▁" piece)."""
    spm = pytest.importorskip("sentencepiece")
    from tools.real import cache_dir

    tok = get_real("llava_next_mistral").tokenizer
    model = cache_dir() / "mistral_common" / "tokenizer.model"
    if not model.is_file():
        pytest.skip(f"{model} not fetched (`make real-tokenizers`)")
    sp = spm.SentencePieceProcessor(model_file=str(model))
    for text in [
        "Which color is the flag?",
        "What is 12 + 7?",
        "¿Qué color tiene el coche? 这是什么？ 🐱",
    ]:
        assert tok(text)["input_ids"] == [sp.bos_id(), *sp.encode(text)]
    before, after = "[INST] ", "\nWhat is shown in this image? [/INST]"
    want = [sp.bos_id(), *sp.encode(before), 32000, *sp.encode(after)]
    assert tok(before + "<image>" + after)["input_ids"] == want


def _tekken_reference(vocab: dict[bytes, int], pattern: str, text: str) -> list[int]:
    """Tekken's encoding by hand: the text split by the file's pattern, each piece's bytes merged
    pairwise, always the adjacent pair whose join has the lowest rank; ids after 1000 controls."""
    import regex

    ids = []
    for piece in regex.findall(pattern, text):
        parts = [bytes([b]) for b in piece.encode("utf-8")]
        while len(parts) > 1:
            ranks = [vocab.get(a + b) for a, b in zip(parts, parts[1:])]
            best = (
                min((r, i) for i, r in enumerate(ranks) if r is not None)
                if any(r is not None for r in ranks)
                else None
            )
            if best is None:
                break
            i = best[1]
            parts[i : i + 2] = [parts[i] + parts[i + 1]]
        ids += [1000 + vocab[p] for p in parts]
    return ids


def test_pixtral_tokenizer_equals_its_tekken_file():
    """The converted Pixtral tokenizer gives the ids of a by-hand byte-pair encoding over the
    tekken file's ranks, and the control tokens Pixtral-12B's config names (``[IMG]`` = 10)."""
    import base64
    import json

    from tools.real import tekken_file

    tok = get_real("pixtral").tokenizer
    raw = json.loads(tekken_file("pixtral").read_text(encoding="utf-8"))
    n_inner = raw["config"]["default_vocab_size"] - raw["config"]["default_num_special_tokens"]
    vocab = {base64.b64decode(v["token_bytes"]): r for r, v in enumerate(raw["vocab"][:n_inner])}
    for text in [
        "Which color is the flag?",
        "What's the total cost ($4.50 + $3.25)?",
        "¿Qué color tiene el coche? 这是什么？ 🐱",
        "  Describe the image in detail.  \n",
    ]:
        want = _tekken_reference(vocab, raw["config"]["pattern"], text)
        assert tok(text, add_special_tokens=False)["input_ids"] == want, text
    assert len(tok) == 131072
    names = ["<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[IMG]", "<pad>", "[IMG_BREAK]"]
    assert tok.convert_tokens_to_ids([*names, "[IMG_END]"]) == [0, 1, 2, 3, 4, 10, 11, 12, 13]
    vlm = get_real("pixtral")
    assert vlm.image_token_id == 10 and tok.pad_token_id == 11 and tok.bos_token_id == 1


@pytest.mark.parametrize("arch", ["pixtral", "mistral3"])
def test_pixtral_image_rows_end_in_breaks_and_only_img_tokens_are_image(arch):
    """The stock processor lays a 40x48 image out as 5 rows of 6 ``[IMG]`` (8 px per token:
    patch 8, or patch 4 merged 2x2), an ``[IMG_BREAK]`` after each row but the last,
    ``[IMG_END]`` last; ``"image"`` selects the 30 ``[IMG]`` tokens, not the breaks."""
    vlm = get_real(arch)
    ctx, ids = edit_positions(vlm, samples_for(arch, ["Describe the image."]), "full", False)
    row = ids[0].tolist()
    start = row.index(10)
    want = ([10] * 6 + [12]) * 4 + [10] * 6 + [13]
    assert row[start : start + len(want)] == want
    image = ctx.positions("image")[0]
    assert image.nonzero()[:, 0].tolist() == [i for i, t in enumerate(row) if t == 10]
    assert int(image.sum()) == 30


def test_a_template_that_cannot_interleave_gets_the_pieces_joined_by_a_space():
    """LLaVA-NeXT-Mistral's template writes all images, then the text items back to back: a
    question's pieces around a slot are joined by one space, not glued together."""
    vlm = get_real("llava_next_mistral")
    prompt = vlm.adapter.build_prompt(vlm.processor, "What is the object in {image} made of?", 1)
    want = vlm.processor.apply_chat_template(
        [
            {
                "role": "user",
                "content": [
                    {"type": "image"},
                    {"type": "text", "text": "What is the object in made of?"},
                ],
            }
        ],
        add_generation_prompt=True,
        tokenize=False,
    )
    assert prompt == want == "[INST] <image>\nWhat is the object in made of? [/INST]"


# -- the ids: equal to Hugging Face's own chat pipeline -------------------------------------


def _samples(arch: str) -> list[Sample]:
    every = samples_for(arch)
    picked = every[:6] + [every[17], every[29], every[30], every[31]]  # spaces, slots
    if arch in MULTI_IMAGE:
        picked += every[-2:]  # two images
    return picked


@pytest.mark.parametrize("condition", CHAT_CONDITIONS)
@pytest.mark.parametrize("arch", FAMILIES)
def test_batches_equal_the_processors_chat_pipeline(arch, condition):
    vlm = get_real(arch)
    samples = _samples(arch)
    if vlm.adapter.fusion == "cross_attention" and condition == "blind":
        samples = samples[:6]  # one-image rows only: the text-only batch is HF's too
    enc = encode(vlm, samples, condition)
    where = f"{arch} under {condition!r}"
    no_doubled_bos(vlm, enc.inputs["input_ids"].cpu(), enc.inputs["attention_mask"].cpu(), where)
    if arch == "paligemma":
        want = paligemma_inputs(vlm, samples, condition)
        got = {k: enc.inputs[k] for k in want}
    else:
        want = hf_inputs(vlm, arch, samples, condition)
        got = dict(enc.inputs)
    assert_same_inputs(vlm, got, want, where)
    # one row alone is the same prompt as in the batch
    alone = encode(vlm, samples[:1], condition)
    if arch != "paligemma":
        assert_same_inputs(
            vlm, dict(alone.inputs), hf_inputs(vlm, arch, samples[:1], condition), where
        )


def test_a_prompt_the_template_begins_with_bos_gets_no_second_one():
    """Llama 3.2 Vision's template writes ``bos_token`` and its tokenizer adds one by default:
    the first prompt token is the one BOS, as in HF's pipeline and the model card's
    ``add_special_tokens=False``."""
    vlm = get_real("mllama")
    tok = vlm.tokenizer
    assert tok("x")["input_ids"][0] == tok.bos_token_id  # the tokenizer does add one
    enc = encode(vlm, samples_for("mllama", ["Describe the image."]), "full")
    ids = enc.inputs["input_ids"][0].tolist()
    assert ids[0] == tok.bos_token_id and ids.count(tok.bos_token_id) == 1


def test_the_image_alone_has_no_text_item():
    """LLaVA's template writes each text item followed by a space: the image-only prompt is
    ``USER: <image>\\nASSISTANT:``, with no space token before ASSISTANT."""
    vlm = get_real("llava_next")
    enc = encode(vlm, samples_for("llava_next", ["Describe the image."]), "no_question")
    text = vlm.tokenizer.decode(enc.inputs["input_ids"][0], skip_special_tokens=False)
    assert text.endswith("<image>\nASSISTANT:"), text[-40:]


def test_mixed_bos_prompts_are_refused():
    from interp.encoding.process import special_tokens_kwargs
    from interp.errors import PromptError

    tok = get_real("mllama").tokenizer
    assert special_tokens_kwargs(tok, ["x", "y"]) == {}
    bos = tok.bos_token
    assert special_tokens_kwargs(tok, [bos + "x", bos + "y"]) == {"add_special_tokens": False}
    with pytest.raises(PromptError, match="BOS"):
        special_tokens_kwargs(tok, [bos + "x", "y"])


def test_gemma4_whose_tokenizer_adds_bos_gets_one():
    """The published Gemma 4 vocabulary says ``add_bos_token = true`` (the GGUF-built tokenizer
    here does not add it): with a tokenizer that adds it and a template that writes it, the prompt
    still begins with one BOS, as in HF's chat pipeline."""
    import interp
    from tools.real_models import build_real

    get_real("gemma4")  # skips without the real tokenizers
    model, processor = build_real("gemma4")
    processor.tokenizer.add_bos_token = True
    tok = processor.tokenizer
    assert tok("x")["input_ids"][0] == tok.bos_token_id
    vlm = interp.load(model, processor)
    samples = samples_for("gemma4", ["Describe the image.", "Which color is the flag?"])
    enc = encode(vlm, samples, "full")
    no_doubled_bos(vlm, enc.inputs["input_ids"], enc.inputs["attention_mask"], "gemma4")
    assert_same_inputs(vlm, dict(enc.inputs), hf_inputs(vlm, "gemma4", samples, "full"), "gemma4")


def test_pixtral_whose_tokenizer_adds_bos_gets_one():
    """The converted tekken adds no BOS and Pixtral's template writes ``<s>``; with a tokenizer
    that adds one too (as a SentencePiece-style conversion does), the prompt still begins with
    one BOS, as in HF's chat pipeline."""
    import interp
    from tools.real_models import build_real

    get_real("pixtral")  # skips without the real tokenizers
    model, processor = build_real("pixtral")
    processor.tokenizer.add_bos_token = True
    tok = processor.tokenizer
    assert tok("x")["input_ids"][0] == tok.bos_token_id
    vlm = interp.load(model, processor)
    samples = samples_for("pixtral", ["Describe the image.", "Which color is the flag?"])
    enc = encode(vlm, samples, "full")
    no_doubled_bos(vlm, enc.inputs["input_ids"], enc.inputs["attention_mask"], "pixtral")
    want = hf_inputs(vlm, "pixtral", samples, "full")
    assert_same_inputs(vlm, dict(enc.inputs), want, "pixtral")
    assert [row.tolist().count(tok.bos_token_id) for row in want["input_ids"]] == [1, 1]
