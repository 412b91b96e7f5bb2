"""An offline byte-level BPE tokenizer for tiny test models.

Trained in-process on a fixed English corpus, so it is deterministic and needs no network. Each
architecture's tiny processor adds its own special tokens (image placeholders, turn markers).
"""

from __future__ import annotations

from functools import lru_cache

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

_CORPUS = """
what color is the banana in the image ? the banana is yellow . what shape is the object ?
a red circle , a blue square , a green triangle and a white star . how many objects are there ?
there are two objects . where is the object ? it is on the left , right , top or bottom .
which digit is drawn ? the digit seven . what is two plus three ? five . the capital of france is
paris . describe the image in detail . the object in the image is known for its colour .
yes no zero one two three four five six seven eight nine ten apple lemon tomato sky grass snow
please answer with one word . answer the question using a single word or phrase .
user assistant system image picture photo question answer the a an of in on is are
"""

# Markup shared by the tiny chat templates; individual architectures add their own tokens.
BASE_SPECIAL_TOKENS = ["<unk>", "<pad>", "<s>", "</s>", "<|im_start|>", "<|im_end|>"]


@lru_cache(maxsize=32)
def _trained(vocab_size: int, specials: tuple[str, ...]) -> Tokenizer:
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(specials),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator([_CORPUS] * 4, trainer)
    return tok


# ChatML-style template: {"type": "image"} renders as the processor's image placeholder.
CHATML_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}"
    "{% for c in m['content'] %}{% if c['type'] == 'image' %}{{ image_placeholder }}"
    "{% else %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def chat_template(
    image_placeholder: str,
    video_placeholder: str | None = None,
    audio_placeholder: str | None = None,
) -> str:
    """The ChatML template with ``image_placeholder`` where an image item appears (and, when
    given, ``video_placeholder`` / ``audio_placeholder`` for video / audio items)."""
    template = CHATML_TEMPLATE.replace("{{ image_placeholder }}", image_placeholder)
    for kind, placeholder in (("video", video_placeholder), ("audio", audio_placeholder)):
        if placeholder is not None:
            template = template.replace(
                "{% else %}{{ c['text'] }}",
                f"{{% elif c['type'] == '{kind}' %}}{placeholder}{{% else %}}{{{{ c['text'] }}}}",
            )
    return template


def tiny_tokenizer(
    extra_special_tokens: dict[str, str] | None = None,
    additional_special_tokens: list[str] | None = None,
    vocab_size: int = 400,
    bos_token: str | None = "<s>",
    eos_token: str = "<|im_end|>",
    image_placeholder: str = "<image>",
    video_placeholder: str | None = None,
    audio_placeholder: str | None = None,
) -> PreTrainedTokenizerFast:
    """Build a tiny fast tokenizer.

    Args:
        extra_special_tokens: named special tokens, e.g. ``{"image_token": "<image>"}``; they become
            attributes (``tok.image_token``, ``tok.image_token_id``) as processors expect.
        additional_special_tokens: further unnamed special tokens (e.g. ``<row_1_col_1>``).
        vocab_size: BPE vocabulary size before special tokens are appended.
        image_placeholder: what the chat template writes for an image item.
        video_placeholder / audio_placeholder: what it writes for a video / audio item (none:
            such items render as nothing).
    """
    extra_special_tokens = dict(extra_special_tokens or {})
    additional = list(additional_special_tokens or [])
    specials = list(BASE_SPECIAL_TOKENS)
    for t in [*extra_special_tokens.values(), *additional]:
        if t not in specials:
            specials.append(t)
    tok = PreTrainedTokenizerFast(
        # a fresh copy: the cached trained tokenizer must not be mutated by callers
        tokenizer_object=Tokenizer.from_str(_trained(vocab_size, tuple(specials)).to_str()),
        unk_token="<unk>",
        pad_token="<pad>",
        bos_token=bos_token,
        eos_token=eos_token,
        extra_special_tokens=extra_special_tokens,
        padding_side="left",
    )
    tok.chat_template = chat_template(image_placeholder, video_placeholder, audio_placeholder)
    return tok


__all__ = ["BASE_SPECIAL_TOKENS", "CHATML_TEMPLATE", "chat_template", "tiny_tokenizer"]
