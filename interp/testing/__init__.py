"""The conformance kit, for checking your own adapter, intervention or study as the project's tests
check its own: tiny random VLMs with working offline processors (:mod:`~interp.testing.tiny`), small
sample sets (:mod:`~interp.testing.samples`), independent references of measurements and edits
(:mod:`~interp.testing.reference`), the tolerances they are compared under
(:mod:`~interp.testing.tolerance`), the error contract (:mod:`~interp.testing.checks`), a family's
parity with plain Hugging Face (:mod:`~interp.testing.zoo_parity`), the chat-pipeline reference
(:mod:`~interp.testing.chat_reference`), a loopback NDIF (:mod:`~interp.testing.loopback`) and the
run-time annotation checker (:mod:`~interp.testing.typechecking`). Nothing here reads the
repository: its own tooling (the zoo sweep, the real-tokenizer fetcher and fixtures, the pins,
digests and import-layer checks) is in ``tools/`` of the source tree, outside the package.

The names below are imported on first use (PEP 562): importing :mod:`interp.testing.typechecking`
before installing its hook loads nothing else of the project.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

_LAZY: dict[str, str] = {
    "ARCHITECTURES": "tiny",
    "MEDIA_ARCHITECTURES": "tiny",
    "INTERP": "checks",
    "OFFLINE_ENV": "checks",
    "Recorder": "reference",
    "add_to_layer": "reference",
    "build_tiny": "tiny",
    "check_seeded": "builds",
    "check_tiny_build": "builds",
    "chat_template": "tokenizer",
    "grow_inputs": "reference",
    "hf_forward": "reference",
    "hf_hidden_states": "reference",
    "hf_last_states": "reference",
    "hf_target_logprobs": "reference",
    "last_layer_raw": "reference",
    "make_samples": "samples",
    "one_error_line": "checks",
    "random_image": "samples",
    "reference_attention": "reference",
    "refused": "checks",
    "shared_tiny_vlm": "tiny",
    "steering_vector": "reference",
    "tiny_tokenizer": "tokenizer",
    "tiny_vlm": "tiny",
    "tiny_vlm_with_attention": "reference",
}

if TYPE_CHECKING:  # for type checkers and IDEs: the same names, eagerly
    from .builds import check_seeded, check_tiny_build
    from .checks import INTERP, OFFLINE_ENV, one_error_line, refused
    from .reference import (
        Recorder,
        add_to_layer,
        grow_inputs,
        hf_forward,
        hf_hidden_states,
        hf_last_states,
        hf_target_logprobs,
        last_layer_raw,
        reference_attention,
        steering_vector,
        tiny_vlm_with_attention,
    )
    from .samples import make_samples, random_image
    from .tiny import ARCHITECTURES, MEDIA_ARCHITECTURES, build_tiny, shared_tiny_vlm, tiny_vlm
    from .tokenizer import chat_template, tiny_tokenizer

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

__all__ = [
    "ARCHITECTURES",
    "INTERP",
    "MEDIA_ARCHITECTURES",
    "OFFLINE_ENV",
    "Recorder",
    "add_to_layer",
    "build_tiny",
    "chat_template",
    "check_seeded",
    "check_tiny_build",
    "grow_inputs",
    "hf_forward",
    "hf_hidden_states",
    "hf_last_states",
    "hf_target_logprobs",
    "last_layer_raw",
    "make_samples",
    "one_error_line",
    "random_image",
    "reference_attention",
    "refused",
    "shared_tiny_vlm",
    "steering_vector",
    "tiny_tokenizer",
    "tiny_vlm",
    "tiny_vlm_with_attention",
]
