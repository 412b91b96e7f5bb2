"""Named positions from character spans (interp/positions.py, encoding.question_mask,
encoding.image_slot_mask).

The reference for every position is the tokenizer's own decode of the selected ids (and, for
images, the image-token count of each image encoded alone), never the code under test.
"""

from __future__ import annotations

import re

import pytest
import torch
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
from transformers import (
    CLIPImageProcessorPil,
    CLIPVisionConfig,
    LlamaConfig,
    LlavaConfig,
    LlavaForConditionalGeneration,
    LlavaProcessor,
    PreTrainedTokenizerFast,
)

import interp
from interp.encoding import encode, image_slot_mask, question_mask
from interp.errors import PositionError
from interp.positions import map_spans, prompt_spans, search_spans, special_token_pattern
from interp.testing import ARCHITECTURES, random_image
from interp.testing.tolerance import assert_close, logprob_scale, tolerance
from interventions import Steer

# LLaVA-1.5's published chat template (llava-hf/llava-1.5-7b-hf, chat_template.json): images first,
# then each text item followed by one space, then "ASSISTANT:".
LLAVA_15_TEMPLATE = (
    "{% for message in messages %}{% if message['role'] != 'system' %}"
    "{{ message['role'].upper() + ': '}}{% endif %}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'image') %}"
    "{{ '<image>\n' }}{% endfor %}"
    "{% if message['role'] != 'assistant' %}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'text') %}"
    "{{ content['text'] + ' '}}{% endfor %}"
    "{% else %}{% for content in message['content'] | selectattr('type', 'equalto', 'text') %}"
    "{{ content['text'] + ' '}}{% endfor %}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif %}"
)

QUESTIONS = [
    "Which color is the flag?",
    "Provide a caption.",
    "Describe the image.",
    "What is this?",
    "A",
    "How many cats are there? Answer with a number.",
    "  spaced out  ",
    "Wie heißt das? 日本",
    "3+4=?",
    "Compare {image} closely",
]


def sentencepiece_style_tokenizer() -> PreTrainedTokenizerFast:
    """A Llama-2-style (legacy SentencePiece) tokenizer trained in-process: a dummy-prefix
    normaliser and no pre-tokenizer, so a word after ``<image>\\n`` splits differently from the same
    word alone — the case that broke substring re-tokenization."""
    corpus = [
        "Which color is the flag? Describe the image. Provide a caption. What is this? "
        "USER: ASSISTANT: How many cats are there? Answer with a number. Compare closely "
        "spaced out Wie heißt das? 日本 3+4=? A"
    ] * 4
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True))
    tok.normalizer = normalizers.Sequence(
        [normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")]
    )
    tok.decoder = decoders.Sequence(
        [
            decoders.Replace("\u2581", " "),
            decoders.ByteFallback(),
            decoders.Fuse(),
            decoders.Strip(" ", 1, 0),
        ]
    )
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=["<unk>", "<s>", "</s>", "<pad>", "<image>"],
        initial_alphabet=["\u2581", "\n"],
        show_progress=False,
    )
    # SentencePiece never merges across a word boundary: train with a split at "\u2581", then
    # encode without a pre-tokenizer, as Llama-2's converted tokenizer does
    tok.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme="never", split=True)
    tok.train_from_iterator(corpus, trainer)
    tok.pre_tokenizer = None
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="<pad>",
        extra_special_tokens={"image_token": "<image>"},
        padding_side="left",
    )


@pytest.fixture(scope="module")
def llava_spm() -> interp.VLM:
    tok = sentencepiece_style_tokenizer()
    image_id = tok.convert_tokens_to_ids("<image>")
    vision = CLIPVisionConfig(
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        image_size=28,
        patch_size=14,
    )
    text = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    config = LlavaConfig(
        vision_config=vision,
        text_config=text,
        image_token_id=image_id,
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
    )
    torch.manual_seed(0)
    model = LlavaForConditionalGeneration(config).eval()
    processor = LlavaProcessor(
        image_processor=CLIPImageProcessorPil(
            size={"shortest_edge": 28}, crop_size={"height": 28, "width": 28}
        ),
        tokenizer=tok,
        patch_size=14,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=LLAVA_15_TEMPLATE,
    )
    return interp.load(model, processor)


def decoded_question(vlm: interp.VLM, enc, row: int, mask: torch.Tensor) -> str:
    return vlm.tokenizer.decode(enc.input_ids[row][mask[row]].tolist())


def squash(text: str) -> str:
    return "".join(text.replace("{image}", " ").split())


def test_the_case_is_real(llava_spm):
    """The tokenizer splits 'Which' differently inside the prompt than alone (else the test below
    proves nothing)."""
    tok = llava_spm.tokenizer
    alone = tok("Which color is the flag?", add_special_tokens=False)["input_ids"]
    prompt = tok("USER: <image>\nWhich color is the flag? ASSISTANT:", add_special_tokens=False)
    ids = prompt["input_ids"]
    assert not any(ids[i : i + len(alone)] == alone for i in range(len(ids)))


@pytest.mark.parametrize(
    "condition",
    ["full", "blind", "null:black", "no_question", "ask:Which one?", "instruct:Answer briefly."],
)
def test_question_positions_sentencepiece(llava_spm, condition):
    samples = [
        interp.Sample(image=random_image(30, 40, i), question=q, id=f"q{i}")
        for i, q in enumerate(QUESTIONS)
    ]
    enc = encode(llava_spm, samples, condition)
    mask = question_mask(llava_spm, enc)
    for row in range(len(samples)):
        got = decoded_question(llava_spm, enc, row, mask)
        assert squash(got) == squash(enc.questions[row]), (enc.prompts[row], got)
        assert not bool((mask[row] & enc.image_mask[row]).any())


def test_question_positions_every_family(arch):
    """Every tiny family: the question positions decode to the question under each condition."""
    from interp.testing import shared_tiny_vlm

    vlm = shared_tiny_vlm(arch)
    samples = [
        interp.Sample(image=random_image(32, 40, i), question=q, id=f"q{i}")
        for i, q in enumerate(["Which color is it?", "A", "  spaced  ", "3+4=?"])
    ]
    for condition in ("full", "null:black", "blind"):
        enc = encode(vlm, samples, condition)
        mask = question_mask(vlm, enc)
        for row in range(len(samples)):
            assert squash(decoded_question(vlm, enc, row, mask)) == squash(enc.questions[row])


def test_steer_on_question_equals_hand_edit(llava_spm):
    """Steer on 'question' adds the vector exactly at the tokens over the question's characters:
    teacher-forced scores equal a plain HF forward whose first decoder layer's output gets the
    vector at those positions by hand (positions picked from the tokenizer's offsets directly)."""
    question = "Describe the image."
    sample = interp.Sample(image=random_image(30, 40, 1), question=question, id="d")
    torch.manual_seed(1)
    vector = 3 * torch.randn(llava_spm.d_model)
    target = llava_spm.tokenizer("What is this", add_special_tokens=False)["input_ids"]
    got = interp.score(
        llava_spm, [sample], [target], edits=[Steer(1, vector, positions="question")]
    )
    plain = interp.score(llava_spm, [sample], [target])
    enc = encode(llava_spm, [sample], "full")
    start = enc.texts[0].index(question)
    end = start + len(question)
    offsets = enc.offsets[0]
    hand = (offsets[:, 0] < end) & (offsets[:, 1] > start) & (offsets[:, 1] > offsets[:, 0])
    assert llava_spm.tokenizer.decode(enc.input_ids[0][hand].tolist()).strip() == question
    ids = torch.cat([enc.input_ids, torch.tensor([target])], dim=1)
    inputs = {**enc.inputs, "input_ids": ids, "attention_mask": torch.ones_like(ids)}

    def hook(module, args, output):
        out = output[0] if isinstance(output, tuple) else output
        out[0, : hand.shape[0]][hand] += vector
        return output

    handle = llava_spm.layers[0].register_forward_hook(hook)
    try:
        with torch.no_grad():
            logits = llava_spm.hf(**inputs).logits[0]
    finally:
        handle.remove()
    n = enc.input_ids.shape[1]
    logp = torch.log_softmax(logits.float(), -1)
    ref = torch.stack([logp[n - 1 + t, tok] for t, tok in enumerate(target)])
    scale = logprob_scale(logits[n - 1 : n - 1 + len(target)].float())
    assert_close(got.logprobs[0, : len(target)], ref, scale=scale)
    # without the edit the scores differ far beyond rounding
    assert (plain.logprobs[0, : len(target)] - ref).abs().max() > 10 * tolerance(ref, scale)


def test_one_word_question_is_not_the_template_text():
    """'A' is located where the template put the question, not in 'ASSISTANT'."""

    def build(question: str) -> str:
        return f"USER: <image>\n{question} ASSISTANT:"

    prompt = build("A")
    spans, texts = prompt_spans(build, "A", prompt)
    assert texts == ["A"] and prompt[spans[0][0] : spans[0][1]] == "A"
    assert spans[0][0] == prompt.index("\n") + 1


def test_builder_that_rewrites_text_falls_back_to_search():
    def build(question: str) -> str:
        return f"<s>[INST] {question.upper()} [/INST]"

    prompt = build("what is this?")
    assert prompt_spans(build, "what is this?", prompt) is None
    assert search_spans("WHAT IS THIS?", prompt) is not None
    assert search_spans("what is this?", prompt) is None


def test_spans_move_through_replacement_offsets_and_skip_special_tokens():
    prompt = "<image>\nimage? ASSISTANT:"
    tokenized = "<image><image><image>\nimage? ASSISTANT:"
    replacements = [{"type": "image", "span": (0, 7), "new_span": (0, 21)}]
    special = re.compile(re.escape("<image>"))
    [moved] = map_spans([(8, 14)], ["image?"], prompt, tokenized, replacements, special)
    assert tokenized[moved[0] : moved[1]] == "image?" and moved[0] == 22
    # without replacement offsets the occurrence counted from the end, outside special tokens
    shifted = "<bos><image><image><image>\nimage? ASSISTANT:\n"
    [moved] = map_spans([(8, 13)], ["image"], prompt, shifted, None, special)
    assert moved == (shifted.index("\nimage") + 1, shifted.index("\nimage") + 6)


def test_special_token_pattern_lists_added_tokens(llava_spm):
    pattern = special_token_pattern(llava_spm.tokenizer)
    assert pattern is not None and pattern.fullmatch("<image>")


def test_unlocatable_question_names_the_row(llava_spm, monkeypatch):
    """A prompt builder that rewrites the question: the typed error names the row and the fix."""
    sample = interp.Sample(image=random_image(30, 40, 2), question="what is this?", id="odd")
    adapter = llava_spm.adapter

    def shouting(processor, question, n_images):
        return f"USER: <image>\n{question.upper()} ASSISTANT:"

    import dataclasses

    monkeypatch.setattr(llava_spm, "adapter", dataclasses.replace(adapter, build_prompt=shouting))
    enc = encode(llava_spm, [sample], "full")
    with pytest.raises(PositionError, match=r"row 0 \(odd\).*verbatim"):
        question_mask(llava_spm, enc)


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_image_slots(arch):
    """'image:k' selects the k-th image's tokens: as many as that image has when encoded alone
    (OneVision: as many as its processor gives an image of a multi-image row), disjoint, together
    all image tokens."""
    from interp.testing import shared_tiny_vlm

    vlm = shared_tiny_vlm(arch)
    first, second = random_image(30, 40, 3), random_image(40, 30, 4)
    if arch == "instructblip":
        pytest.skip("InstructBLIP takes one image per prompt (its query tokens are prepended once)")
    both = interp.Sample(image=[first, second], question="Compare {image} with {image}", id="b")
    enc = encode(vlm, [both], "full")
    slots = [image_slot_mask(enc, k)[0] for k in (0, 1, 2)]
    for k, image in enumerate((first, second)):
        alone = encode(vlm, [interp.Sample(image=image, question="What?", id="a")], "full")
        want = int(alone.image_mask.sum())
        if arch == "llava_onevision":  # an image of a multi-image row: its base view + a newline
            want = vlm.processor.num_image_tokens + 1
        assert int(slots[k].sum()) == want
    assert not bool((slots[0] & slots[1]).any())
    assert torch.equal(slots[0] | slots[1], enc.image_mask[0])
    assert not bool(slots[2].any())
